//! `/cluster-tenants/:name/edit`: the edit form, prefilled from the stored desired state.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::{
    UiContext,
    api::fleet::get_cluster_tenant,
    components::{feedback::ErrorView, layout::PageHeader},
    current_principal,
    islands::fleet::cluster_tenant_editor::ClusterTenantEditor,
    model::fleet::cluster_tenant::ClusterTenantForm,
};

/// The "edit customer" page.
#[component]
pub fn EditClusterTenant() -> impl IntoView {
    let ui = expect_context::<UiContext>();
    let name = use_params_map().with_untracked(|p| p.get("name").unwrap_or_default());
    view! {
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {{
                let validation = ui.validation.clone();
                let is_operator = current_principal().is_some_and(|p| p.is_platform_operator);
                Suspend::new(async move {
                    match get_cluster_tenant(name).await {
                        Ok(ct) => {
                            view! {
                                <Title text=format!("Edit {}", ct.display_name) />
                                <PageHeader
                                    title=format!("Edit {}", ct.display_name)
                                    description=format!("Customer {} · changes apply to its desired state.", ct.name)
                                />
                                {(!is_operator)
                                    .then(|| {
                                        view! {
                                            <p class="notice info" role="note">
                                                "You can change the display name and the vanity domain. Tier, compute, quota, seats, version, retention and suspension are set by the platform's operators."
                                            </p>
                                        }
                                    })}
                                <ClusterTenantEditor
                                    initial=ClusterTenantForm::from_spec(&ct.spec())
                                    validation
                                    editing=Some(ct.name.clone())
                                />
                            }
                                .into_any()
                        }
                        Err(error) => view! { <ErrorView error /> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}
