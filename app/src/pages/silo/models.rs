//! Silo `/models`: provider credentials (bring your own key; never shown again), deployments
//! behind public model names with weights, fallback chains, default models, and the test-route
//! tool.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use super::EnforcementBanner;
use crate::{
    api::silo::{load_models, test_route},
    components::{
        feedback::{Badge, ErrorView, Notice},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    error::AppError,
    forms,
    islands::{
        silo::portal_form::{FieldKind, FormField, FormTarget, PortalForm, RowAction, RowActionButton, options},
        silo::portal_tools::TestRouteTool,
    },
    model::silo::{ModelsOverview, PROVIDERS, RouteTest, RouteTestRequest, byok::BYOK_PROVIDERS},
};

fn quick_setup_fields() -> Vec<FormField> {
    let providers: Vec<String> = BYOK_PROVIDERS.iter().map(|p| (*p).to_owned()).collect();
    vec![
        FormField::new("provider", "Provider", FieldKind::Select(options(&providers))).value("openai"),
        FormField::new("apiKey", "API key", FieldKind::Password)
            .required()
            .hint("Stored encrypted; it is never shown again, only its last four characters."),
    ]
}

fn credential_fields() -> Vec<FormField> {
    let providers: Vec<String> = PROVIDERS.iter().map(|p| (*p).to_owned()).collect();
    vec![
        FormField::new("name", "Name", FieldKind::Text).required().hint("e.g. openai-main"),
        FormField::new("provider", "Provider", FieldKind::Select(options(&providers))).value("openai"),
        FormField::new("apiKey", "API key", FieldKind::Password)
            .hint("Stored encrypted; it is never shown again, only its last four characters. Or leave it empty and name the Secret holding it."),
        FormField::new("secretRef", "Or: Kubernetes Secret", FieldKind::Text).hint(
            "A Secret of this silo's namespace that you manage: name (key api-key) or name/key. Read at every pass, never stored here.",
        ),
        FormField::new("apiBase", "API base", FieldKind::Text).hint("Only for Azure or OpenAI-compatible endpoints."),
    ]
}

fn deployment_fields(o: &ModelsOverview) -> Vec<FormField> {
    let mut creds = vec![(String::new(), "(none)".to_owned())];
    creds.extend(o.credentials.iter().map(|c| (c.name.clone(), format!("{} ({})", c.name, c.provider))));
    vec![
        FormField::new("publicName", "Public name", FieldKind::Text)
            .required()
            .hint("What users ask for, e.g. smart. Several deployments of one name share its traffic."),
        FormField::new("upstreamModel", "Upstream model", FieldKind::Text)
            .required()
            .hint("The provider's model, e.g. openai/gpt-4o-mini."),
        FormField::new("credential", "Credential", FieldKind::Select(creds)),
        FormField::new("apiBase", "API base", FieldKind::Text),
        FormField::new("weight", "Weight", FieldKind::Number).value("1").hint("Relative share of this name's traffic."),
    ]
}

fn fallback_fields(o: &ModelsOverview) -> Vec<FormField> {
    vec![
        FormField::new("publicName", "When this model fails", FieldKind::Select(options(&o.public_names))),
        FormField::new("chain", "try these, in order", FieldKind::Lines)
            .hint("Public names, one per line; empty removes the chain."),
    ]
}

fn default_fields(o: &ModelsOverview) -> Vec<FormField> {
    let mut targets = vec![(String::new(), "(the whole silo)".to_owned())];
    targets.extend(o.groups.iter().map(|(id, name)| (id.clone(), format!("group {name}"))));
    targets.extend(o.users.iter().map(|u| (u.clone(), format!("user {u}"))));
    vec![
        FormField::new(
            "scope",
            "Default for",
            FieldKind::Select(vec![
                ("silo".into(), "the whole silo".into()),
                ("group".into(), "a group".into()),
                ("user".into(), "a user".into()),
            ]),
        )
        .value("silo"),
        FormField::new("target", "Which group or user", FieldKind::Select(targets)),
        FormField::new("model", "Model", FieldKind::Select(options(&o.public_names)))
            .value(o.public_names.first().cloned().unwrap_or_default()),
    ]
}

/// `/models`.
#[component]
pub fn ModelsPage() -> impl IntoView {
    // The test-route tool's question, when it was asked (`?route-user=&route-model=`).
    let asked = use_query_map().with_untracked(|q| {
        q.get("route-user").map(|user| RouteTestRequest { user, model: q.get("route-model").filter(|m| !m.is_empty()) })
    });
    view! {
        <Title text="Models" />
        <PageHeader title="Models" description="Provider keys, the models users can ask for, how requests are spread and where they fall back to." />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                let route = match asked {
                    Some(asked) => Some((asked.clone(), test_route(asked).await)),
                    None => None,
                };
                match load_models().await {
                    Ok(o) => view! { <Models o route /> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Models(o: ModelsOverview, route: Option<(RouteTestRequest, Result<RouteTest, AppError>)>) -> impl IntoView {
    let credentials = o
        .credentials
        .iter()
        .map(|c| view! {
            <tr>
                <td>{c.name.clone()}</td>
                <td>{c.provider.clone()}</td>
                <td>
                    {match &c.secret_ref {
                        Some(reference) => view! { <span class="mono">{format!("Secret {reference}")}</span> }.into_any(),
                        None => view! { <span class="mono">{c.hint.clone()}</span> }.into_any(),
                    }}
                    {c.secret_status.clone().map(|problem| view! { " " <Badge text=problem tone="bad" /> })}
                </td>
                <td>{c.api_base.clone().unwrap_or_default()}</td>
                <td>{c.used_by}</td>
                <td class="nowrap">{timestamp(c.updated_at)}</td>
                <td class="actions">
                    <details open=forms::echoed(&format!("rotate-{}", c.name))>
                        <summary class="btn small">"Rotate"</summary>
                        <PortalForm
                            id=format!("rotate-{}", c.name)
                            fields=vec![FormField::new("apiKey", "New API key", FieldKind::Password).required()]
                            target=FormTarget::RotateCredential(c.id.clone())
                            submit_label="Rotate key".to_owned()
                            done="/models".to_owned()
                        />
                    </details>
                    <RowActionButton action=RowAction::DeleteCredential(c.id.clone()) label="Delete".to_owned() done="/models".to_owned() of=format!("credential {}", c.name) />
                </td>
            </tr>
        })
        .collect_view();
    let deployments = o
        .deployments
        .iter()
        .map(|d| view! {
            <tr>
                <td class="mono">{d.public_name.clone()}</td>
                <td class="mono">{d.upstream_model.clone()}</td>
                <td>{d.credential.clone().unwrap_or_else(|| "—".into())}</td>
                <td>{format!("{} ({} %)", d.weight, d.share_percent)}</td>
                <td class="actions"><RowActionButton action=RowAction::DeleteDeployment(d.id.clone()) label="Remove".to_owned() done="/models".to_owned() of=format!("deployment {} → {}", d.public_name, d.upstream_model) /></td>
            </tr>
        })
        .collect_view();
    let (no_fallbacks, no_defaults) = (o.fallbacks.is_empty(), o.defaults.is_empty());
    let fallbacks = o
        .fallbacks
        .iter()
        .map(|(name, chain)| view! { <tr><td class="mono">{name.clone()}</td><td class="mono">{chain.join(" → ")}</td></tr> })
        .collect_view();
    let defaults = o
        .defaults
        .iter()
        .map(|d| view! {
            <tr>
                <td>{d.target.clone()}</td>
                <td class="mono">{d.model.clone()}</td>
                <td class="actions"><RowActionButton action=RowAction::DeleteDefault(d.id.clone()) label="Remove".to_owned() done="/models".to_owned() of=format!("default {} for {}", d.model, d.target) /></td>
            </tr>
        })
        .collect_view();
    let has_models = !o.public_names.is_empty();
    view! {
        <EnforcementBanner sync=o.enforcement.clone() />
        <section>
            <h2>"Provider credentials"</h2>
            {(!o.credentials_enabled).then(|| view! { <Notice tone="warn">"This silo has no credentials key (OPENCRANE_CREDENTIALS_KEY): provider keys cannot be stored."</Notice> })}
            {if o.credentials.is_empty() {
                view! { <EmptyState title="No provider keys" body="Add one to route models through your own provider account." /> }.into_any()
            } else {
                view! { <DataTable headers=&["Name", "Provider", "Key", "API base", "Used by", "Changed (UTC)", ""]>{credentials}</DataTable> }.into_any()
            }}
            <details class="card" open=forms::echoed("quick-setup") || (o.credentials.is_empty() && o.deployments.is_empty())>
                <summary>"Quick set-up: paste one provider key"</summary>
                <p class="muted">
                    "The key is stored encrypted in its own credential (byok-provider), and the provider's usual models are defined behind it, with the aliases auto (its cheapest chat model) and auto-embedding. A public name you already defined is left as it is."
                </p>
                <PortalForm id="quick-setup".to_owned() fields=quick_setup_fields() target=FormTarget::QuickSetup submit_label="Set up models".to_owned() done="/models".to_owned() />
            </details>
            <details class="card" open=forms::echoed("new-credential")>
                <summary>"Add a provider key"</summary>
                <PortalForm id="new-credential".to_owned() fields=credential_fields() target=FormTarget::AddCredential submit_label="Store key".to_owned() done="/models".to_owned() />
            </details>
        </section>
        <section>
            <h2>"Models"</h2>
            {if has_models {
                view! { <DataTable headers=&["Public name", "Upstream", "Credential", "Weight (share)", ""]>{deployments}</DataTable> }.into_any()
            } else {
                view! { <EmptyState title="No models defined" body="Users' keys are blocked until at least one model is defined and allowed." /> }.into_any()
            }}
            <details class="card" open=!has_models || forms::echoed("new-model")>
                <summary>"Add a model"</summary>
                <PortalForm id="new-model".to_owned() fields=deployment_fields(&o) target=FormTarget::AddDeployment submit_label="Add model".to_owned() done="/models".to_owned() />
            </details>
        </section>
        <section>
            <h2>"Fallbacks"</h2>
            {if no_fallbacks {
                view! { <EmptyState title="No fallback chains" body="When a model fails or is rate-limited, a chain tries the next model instead. Set one below once models are defined." /> }.into_any()
            } else {
                view! { <DataTable headers=&["Model", "Falls back to"]>{fallbacks}</DataTable> }.into_any()
            }}
            {has_models.then(|| view! {
                <details class="card" open=forms::echoed("fallbacks")>
                    <summary>"Set a fallback chain"</summary>
                    <PortalForm id="fallbacks".to_owned() fields=fallback_fields(&o) target=FormTarget::SetFallbacks submit_label="Save chain".to_owned() done="/models".to_owned() />
                </details>
            })}
        </section>
        <section>
            <h2>"Default models"</h2>
            <p class="muted">"A request that names no model uses the user's default, else their groups' (by group name), else the silo's."</p>
            {if no_defaults {
                view! { <EmptyState title="No default models" body="Requests that name no model need a default for the silo, a group or a user. Set one below once models are defined." /> }.into_any()
            } else {
                view! { <DataTable headers=&["For", "Model", ""]>{defaults}</DataTable> }.into_any()
            }}
            {has_models.then(|| view! {
                <details class="card" open=forms::echoed("defaults")>
                    <summary>"Set a default"</summary>
                    <PortalForm id="defaults".to_owned() fields=default_fields(&o) target=FormTarget::SetDefault submit_label="Save default".to_owned() done="/models".to_owned() />
                </details>
            })}
        </section>
        <section>
            <h2>"Test a route"</h2>
            <TestRouteTool users=o.users.clone() models=o.public_names.clone() answer=route />
        </section>
    }
}
