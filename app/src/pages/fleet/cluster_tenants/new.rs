//! `/cluster-tenants/new`: the create form.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    UiContext,
    authz::{Action, authorize},
    components::{feedback::ErrorView, layout::PageHeader},
    current_principal,
    islands::fleet::cluster_tenant_editor::ClusterTenantEditor,
    model::fleet::cluster_tenant::ClusterTenantForm,
};

/// The "new customer" page.
#[component]
pub fn NewClusterTenant() -> impl IntoView {
    let ui = expect_context::<UiContext>();
    // Anyone signed in may try; the server decides (operators, or people with a billing account).
    if let Err(error) = authorize(current_principal().as_ref(), Action::ListClusterTenants) {
        return view! { <ErrorView error /> }.into_any();
    }
    view! {
        <Title text="New customer" />
        <PageHeader
            title="New customer"
            description="Fields are checked as you type and again when you save. The name cannot be changed later."
        />
        <ClusterTenantEditor initial=ClusterTenantForm::new_defaults() validation=ui.validation editing=None />
    }
    .into_any()
}
