//! `/billing`: the signed-in person's own billing account (which lets non-operators create
//! customers once sign-in exists).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::{
    UiContext,
    api::fleet::my_billing_account,
    components::{
        feedback::{ErrorView, Notice},
        format::timestamp,
        layout::PageHeader,
    },
    islands::fleet::billing_account::BillingAccountForm,
};

/// The billing page.
#[component]
pub fn BillingPage() -> impl IntoView {
    let enabled = expect_context::<UiContext>().billing_enabled;
    let saved = use_query_map().with_untracked(|q| q.get("saved").is_some());
    view! {
        <Title text="Billing" />
        <PageHeader title="Billing account" description="One account per person. It identifies who pays for the customers they create." />
        {saved.then(|| view! { <Notice tone="ok">"Billing account saved."</Notice> })}
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                if !enabled {
                    return view! { <crate::pages::shared::NotFound /> }.into_any();
                }
                match my_billing_account().await {
                    Ok(Some(account)) => {
                        view! {
                            <section class="card">
                                <dl class="props">
                                    <dt>"Account id"</dt>
                                    <dd class="mono">{account.id.clone()}</dd>
                                    <dt>"Owner"</dt>
                                    <dd class="mono">{account.subject.clone()}</dd>
                                    <dt>"Email"</dt>
                                    <dd>{account.email.clone().unwrap_or_else(|| "–".into())}</dd>
                                    <dt>"Created"</dt>
                                    <dd>{timestamp(account.created_at)}</dd>
                                </dl>
                            </section>
                            <BillingAccountForm display_name=account.display_name.clone().unwrap_or_default() exists=true />
                        }
                            .into_any()
                    }
                    Ok(None) => {
                        view! {
                            <p class="muted">"You have no billing account yet."</p>
                            <BillingAccountForm display_name=String::new() exists=false />
                        }
                            .into_any()
                    }
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
