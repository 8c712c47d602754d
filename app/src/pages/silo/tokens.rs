//! Silo `/tokens`: access tokens for scripts and CI. Owners and admins create (shown once), list
//! and revoke them; the list never shows a secret, only its prefix, expiry and last use.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    api::silo::list_tokens,
    components::{
        feedback::{ErrorView, Notice},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    islands::silo::token_form::{RevokeTokenButton, TokenForm},
    model::session::AccessTokenView,
};

/// The tokens page.
#[component]
pub fn TokensPage() -> impl IntoView {
    let revoked =
        leptos_router::hooks::use_query_map().with_untracked(|q| q.get("saved").is_some_and(|s| s == "revoked"));
    view! {
        <Title text="Access tokens" />
        {revoked.then(|| view! { <Notice tone="ok">"Token revoked; whatever used it is refused from now on."</Notice> })}
        <PageHeader
            title="Access tokens"
            description="Bearer tokens (ocp_…) for scripts and CI. A token acts for you, with a role no higher than yours."
        />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match list_tokens().await {
                    // While a new token's secret is shown, the (older) list below is hidden: it
                    // is read again on "Done" (`.tokens:has(.secret)` in the stylesheet).
                    Ok(tokens) => view! { <div class="tokens"><TokenForm /> <div class="token-list"><TokenTable tokens /></div></div> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn TokenTable(tokens: Vec<AccessTokenView>) -> impl IntoView {
    if tokens.is_empty() {
        return view! { <EmptyState title="No tokens yet" body="Create one above; it is shown once." /> }.into_any();
    }
    let rows = tokens
        .into_iter()
        .map(|t| {
            let state = match (&t.revoked_at, &t.expires_at) {
                (Some(at), _) => format!("revoked {}", timestamp(*at)),
                (None, Some(at)) if *at <= chrono::Utc::now() => format!("expired {}", timestamp(*at)),
                (None, Some(at)) => format!("expires {}", timestamp(*at)),
                (None, None) => "never expires".to_owned(),
            };
            let live = t.revoked_at.is_none();
            view! {
                <tr>
                    <td>{t.name.clone()}</td>
                    <td class="mono">{format!("{}…", t.prefix)}</td>
                    <td>{t.role.clone()}</td>
                    <td class="mono small">{t.owner_subject.clone()}</td>
                    <td class="nowrap">{timestamp(t.created_at)}</td>
                    <td class="nowrap">{t.last_used_at.map(timestamp).unwrap_or_else(|| "never".into())}</td>
                    <td>{state}</td>
                    <td>{live.then(|| view! { <RevokeTokenButton id=t.id.clone() name=t.name.clone() /> })}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <DataTable headers=&["Name", "Token", "Role", "Acts for", "Created (UTC)", "Last used", "State", ""]>{rows}</DataTable>
    }
    .into_any()
}
