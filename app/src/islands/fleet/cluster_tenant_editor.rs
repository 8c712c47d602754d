//! The create/edit form for a ClusterTenant: a posted form that works without wasm
//! ([`crate::forms`]). With the wasm it is validated as the admin types, using the same
//! function the server runs again on submit ([`CustomerChecks`]), sent in the background and
//! answered with the server's verdict per field when it differs (a duplicate name, say;
//! [`EnhanceForm`]); neither redraws the form, so what was typed before the wasm woke stays.

use leptos::prelude::*;

use crate::{
    components::form::{Field, described_by},
    error::FieldErrors,
    forms::{self, Posted, PostedFields},
    islands::enhance::{EnhanceForm, alert_id},
    model::fleet::cluster_tenant::{ClusterTenantForm, IsolationTier, TerminationPolicy, ValidationContext},
};

/// The form's DOM id (and the name its posts are echoed under).
pub const FORM_ID: &str = "ct-form";

/// Each field: its key in errors (the request's JSON path), its input's DOM id, and the input's
/// `name` (the [`ClusterTenantForm`] key a posted form carries).
const FIELDS: &[(&str, &str, &str)] = &[
    ("name", "ct-name", "name"),
    ("displayName", "ct-display-name", "display_name"),
    ("isolationTier", "ct-tier", "isolation_tier"),
    ("vanityDomain", "ct-vanity", "vanity_domain"),
    ("compute.mode", "ct-compute-shared", "compute_mode"),
    ("compute.nodePool", "ct-node-pool", "node_pool"),
    ("resources.quota.cpu", "ct-cpu", "cpu"),
    ("resources.quota.memory", "ct-memory", "memory"),
    ("resources.quota.pods", "ct-pods", "pods"),
    ("resources.quota.storage", "ct-storage", "storage"),
    ("resources.quota.gpu", "ct-gpu", "gpu"),
    ("seatCap", "ct-seat-cap", "seat_cap"),
    ("terminationPolicy", "ct-termination-policy", "termination_policy"),
    ("siloVersion", "ct-silo-version", "silo_version"),
];

/// Whether this form shows a message for the error key `field`.
pub fn shows(field: &str) -> bool {
    FIELDS.iter().any(|(key, _, _)| *key == field)
}

/// Creates (`editing` = `None`) or changes a customer from the form; the page to go to next.
/// The form layer's, for the island's post and the no-wasm post alike.
#[cfg(feature = "ssr")]
pub(crate) async fn save(
    mut form: ClusterTenantForm,
    editing: Option<String>,
    ctx: &ValidationContext,
) -> Result<String, crate::error::AppError> {
    use crate::error::AppError;
    match editing {
        None => {
            let req = form.check(ctx).map_err(|fields| AppError::Validation { fields })?;
            crate::api::fleet::create_cluster_tenant(req)
                .await
                .map(|ct| format!("/cluster-tenants/{}?created=1", ct.name))
        }
        Some(name) => {
            // The name is fixed; what the form posts for it does not matter.
            form.name.clone_from(&name);
            let req = form.to_update(ctx).map_err(|fields| AppError::Validation { fields })?;
            crate::api::fleet::update_cluster_tenant(name, req)
                .await
                .map(|ct| format!("/cluster-tenants/{}?saved=1", ct.name))
        }
    }
}

/// The ClusterTenant form. `editing` is the name of the customer being edited (`None` = create).
/// When this page answers the form's own failed post, the posted values and messages are shown.
#[component]
pub fn ClusterTenantEditor(
    initial: ClusterTenantForm,
    validation: ValidationContext,
    editing: Option<String>,
) -> impl IntoView {
    let (initial, server, banner) = match forms::echo(FORM_ID) {
        Some(echo) => {
            let posted = echo.values.iter().map(|(k, v)| (k.as_str(), v.clone()));
            (initial.with_pairs(posted), echo.errors, echo.message)
        }
        None => (initial, FieldErrors::new(), None),
    };
    view! { <CustomerForm initial validation editing server banner /> }
}

/// A text input of the form, holding `value`; `aria-invalid` when the server refused it.
fn text_input(id: &'static str, name: &'static str, value: String, has_hint: bool, invalid: bool) -> impl IntoView {
    view! {
        <input
            id=id
            name=name
            type="text"
            autocomplete="off"
            spellcheck="false"
            value=value
            aria-invalid=invalid.then_some("true")
            aria-describedby=described_by(id, has_hint, true)
        />
    }
}

/// The markup behind [`ClusterTenantEditor`]: the form as the server posts it, taken over when
/// the wasm runs by [`EnhanceForm`] (sent in the background, the server's messages in place)
/// and [`CustomerChecks`] (checked as the admin types).
#[component]
fn CustomerForm(
    initial: ClusterTenantForm,
    validation: ValidationContext,
    editing: Option<String>,
    /// Messages from a post answered without wasm.
    server: FieldErrors,
    /// The sentence for it.
    banner: Option<String>,
) -> impl IntoView {
    let f = initial;
    let posted = Posted::ClusterTenant { editing: editing.clone() };
    let is_edit = editing.is_some();
    let error = |key: &str| Signal::stored(server.get(key).map(str::to_owned));
    let invalid = |key: &str| server.get(key).is_some();
    let values = serde_json::to_value(&f).unwrap_or_default();
    let input = |key: &'static str, has_hint: bool| {
        let (_, id, name) = FIELDS.iter().find(|(k, _, _)| *k == key).copied().unwrap_or((key, key, key));
        let value = values.get(name).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
        text_input(id, name, value, has_hint, invalid(key))
    };
    let tier_options = IsolationTier::ALL
        .into_iter()
        .map(|tier| {
            let available = tier.is_available(validation.dedicated_cluster_available);
            let label = if available {
                tier.label().to_owned()
            } else {
                format!("{} (needs an external provisioner)", tier.label())
            };
            let selected = f.isolation_tier == tier.as_str();
            view! { <option value=tier.as_str() disabled=!available selected=selected>{label}</option> }
        })
        .collect_view();
    let dedicated = f.compute_mode == "dedicated";
    let name_hint = match &validation.base_domain {
        Some(b) => "Lowercase letters, digits and hyphens; starts with a letter. Becomes the namespace opencrane-<name> and the host <name>.".to_owned() + b,
        None => "Lowercase letters, digits and hyphens; starts with a letter. Becomes the namespace opencrane-<name>.".to_owned(),
    };
    let cancel_href = match &editing {
        Some(name) => format!("/cluster-tenants/{name}"),
        None => "/cluster-tenants".into(),
    };
    let mode_error = server.get("compute.mode").map(str::to_owned);
    let mode_invalid = mode_error.is_some();
    let policy = f.termination_policy.clone();
    let alert_hidden = banner.is_none();
    let name_control = if is_edit {
        view! { <input id="ct-name" name="name" type="text" readonly value=f.name.clone() /> }.into_any()
    } else {
        input("name", true).into_any()
    };
    let tier_invalid = invalid("isolationTier").then_some("true");
    let in_displayname = input("displayName", false);
    let in_vanitydomain = input("vanityDomain", true);
    let in_compute_nodepool = input("compute.nodePool", true);
    let in_cpu = input("resources.quota.cpu", false);
    let in_memory = input("resources.quota.memory", false);
    let in_storage = input("resources.quota.storage", false);
    let in_pods = input("resources.quota.pods", false);
    let in_gpu = input("resources.quota.gpu", false);
    let in_seatcap = input("seatCap", true);
    let in_siloversion = input("siloVersion", true);

    view! {
        <form class="form customer-form" id=FORM_ID method="post" novalidate>
            <PostedFields form=FORM_ID posted=posted />
            <div class="notice bad" role="alert" id=alert_id(FORM_ID) hidden=alert_hidden>{banner}</div>
            <fieldset>
                <legend>"Customer"</legend>
                <Field id="ct-name" label="Name" required=true hint=name_hint error=error("name")>
                    {name_control}
                </Field>
                <Field id="ct-display-name" label="Display name" required=true error=error("displayName")>
                    {in_displayname}
                </Field>
                <Field
                    id="ct-vanity"
                    label="Vanity domain"
                    hint="Optional host the customer owns, e.g. portal.acme.com. Leave empty for none."
                    error=error("vanityDomain")
                >
                    {in_vanitydomain}
                </Field>
            </fieldset>
            <fieldset>
                <legend>"Isolation and compute"</legend>
                <Field id="ct-tier" label="Isolation tier" required=true error=error("isolationTier")>
                    <select id="ct-tier" name="isolation_tier" aria-invalid=tier_invalid>
                        {tier_options}
                    </select>
                </Field>
                <div class="field" class:invalid=mode_invalid>
                    <span class="label" id="ct-compute-label">"Compute"</span>
                    <div class="radios" role="radiogroup" aria-labelledby="ct-compute-label">
                        <label>
                            <input type="radio" id="ct-compute-shared" name="compute_mode" value="shared" checked=!dedicated />
                            "Shared node pool"
                        </label>
                        <label>
                            <input type="radio" id="ct-compute-dedicated" name="compute_mode" value="dedicated" checked=dedicated />
                            "Dedicated node pool"
                        </label>
                    </div>
                    <p class="error" id="ct-compute-shared-error" aria-live="polite">{mode_error}</p>
                </div>
                // Always rendered, shown only while "Dedicated" is chosen (CSS), so that the form
                // also works before and without the wasm.
                <div class="node-pool">
                    <Field
                        id="ct-node-pool"
                        label="Node pool"
                        required=true
                        hint="Value of the opencrane.io/node-pool label on the customer's nodes."
                        error=error("compute.nodePool")
                    >
                        {in_compute_nodepool}
                    </Field>
                </div>
            </fieldset>
            <fieldset>
                <legend>"Quota and seats"</legend>
                <p class="muted small">"Leave a quota empty for no limit. CPU, memory and storage take Kubernetes quantities (500m, 8Gi)."</p>
                <div class="grid">
                    <Field id="ct-cpu" label="CPU" error=error("resources.quota.cpu")>
                        {in_cpu}
                    </Field>
                    <Field id="ct-memory" label="Memory" error=error("resources.quota.memory")>
                        {in_memory}
                    </Field>
                    <Field id="ct-storage" label="Storage" error=error("resources.quota.storage")>
                        {in_storage}
                    </Field>
                    <Field id="ct-pods" label="Pods" error=error("resources.quota.pods")>
                        {in_pods}
                    </Field>
                    <Field id="ct-gpu" label="GPUs" error=error("resources.quota.gpu")>
                        {in_gpu}
                    </Field>
                    <Field id="ct-seat-cap" label="Seat cap" hint="Empty = uncapped." error=error("seatCap")>
                        {in_seatcap}
                    </Field>
                </div>
            </fieldset>
            <fieldset>
                <legend>"Silo"</legend>
                <Field
                    id="ct-termination-policy"
                    label="When the customer is deleted"
                    hint="Retain keeps the database and its volumes so they can be re-attached; Delete removes all data."
                    error=error("terminationPolicy")
                >
                    <select id="ct-termination-policy" name="termination_policy">
                        {[TerminationPolicy::Retain, TerminationPolicy::Delete].map(|p| {
                            let value = p.as_str();
                            view! { <option value=value selected=policy == value>{p.label()}</option> }
                        })}
                    </select>
                </Field>
                <Field
                    id="ct-silo-version"
                    label="Silo version"
                    hint="Pin the silo chart and application version, e.g. 0.3.1. Empty follows the fleet's default."
                    error=error("siloVersion")
                >
                    {in_siloversion}
                </Field>
            </fieldset>
            <div class="form-actions">
                <button type="submit" class="btn primary">{if is_edit { "Save changes" } else { "Create customer" }}</button>
                <a class="btn ghost" href=cancel_href>"Cancel"</a>
            </div>
            <EnhanceForm form=FORM_ID.to_owned() />
            // After the form's own island: its messages for an edited field are the last word.
            <CustomerChecks validation />
        </form>
    }
}

/// Checks the form as the admin types, with the same function the server runs again on submit
/// (see the module's notes): a field's message appears once it is edited (or a submit was
/// tried), what was typed before the wasm woke is checked at once, and a submit with local
/// problems is stopped with a sentence and the first such field focused. Renders nothing.
#[cfg_attr(any(feature = "ssr", feature = "fleet-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "fleet-islands")), component)]
fn CustomerChecks(validation: ValidationContext) -> impl IntoView {
    #[cfg(feature = "fleet-islands")]
    checks::take_over(validation);
    #[cfg(not(feature = "fleet-islands"))]
    let _ = validation;
}

/// The browser side of [`CustomerChecks`].
#[cfg(feature = "fleet-islands")]
mod checks {
    use std::{cell::RefCell, collections::BTreeSet, rc::Rc};

    use leptos::{
        prelude::document,
        wasm_bindgen::{JsCast, closure::Closure},
        web_sys::{Element, Event, FormData, HtmlFormElement, HtmlInputElement},
    };

    use super::{FIELDS, FORM_ID};
    use crate::{
        error::FieldErrors,
        islands::enhance::live,
        model::fleet::cluster_tenant::{ClusterTenantForm, ValidationContext},
    };

    #[derive(Default)]
    struct Seen {
        /// Fields edited since the page loaded.
        touched: BTreeSet<&'static str>,
        /// A submit was tried: every field's message shows.
        submitted: bool,
    }

    pub(super) fn take_over(ctx: ValidationContext) {
        let Some(form) = document().get_element_by_id(FORM_ID) else { return };
        // What was typed before the wasm woke counts as edited.
        let typed = FIELDS.iter().filter(|(_, id, _)| typed_early(id)).map(|(key, _, _)| *key).collect();
        let seen = Rc::new(RefCell::new(Seen { touched: typed, submitted: false }));
        let ctx = Rc::new(ctx);
        render(&form, &ctx, &seen.borrow());
        for event in ["input", "change"] {
            let (at, ctx, seen) = (form.clone(), ctx.clone(), seen.clone());
            live::on(&form, event, move |ev| {
                let name = ev.target().and_then(|t| t.dyn_into::<Element>().ok()).and_then(|t| t.get_attribute("name"));
                let Some((key, _, _)) = FIELDS.iter().find(|(_, _, n)| Some(*n) == name.as_deref()) else { return };
                seen.borrow_mut().touched.insert(key);
                render(&at, &ctx, &seen.borrow());
            });
        }
        // In the capture phase, so that it runs before the form's own island sends anything.
        let at = form.clone();
        let submit = Closure::<dyn FnMut(Event)>::new(move |ev: Event| {
            seen.borrow_mut().submitted = true;
            let problems = render(&at, &ctx, &seen.borrow());
            if !problems.is_empty() {
                ev.prevent_default();
                ev.stop_immediate_propagation();
                live::say(FORM_ID, Some(&format!("Fix the {} highlighted field(s) first.", problems.0.len())));
                live::focus_first_invalid(&at);
            }
        });
        let _ = form.add_event_listener_with_callback_and_bool("submit", submit.as_ref().unchecked_ref(), true);
        submit.forget();
    }

    /// Whether the text input `id` holds something other than what the server rendered.
    fn typed_early(id: &str) -> bool {
        document()
            .get_element_by_id(id)
            .and_then(|el| el.dyn_into::<HtmlInputElement>().ok())
            .is_some_and(|input| input.type_() == "text" && input.value() != input.default_value())
    }

    /// Checks what the form holds and shows each seen field's message; every problem found.
    fn render(form: &Element, ctx: &ValidationContext, seen: &Seen) -> FieldErrors {
        let data = form.dyn_ref::<HtmlFormElement>().and_then(|f| FormData::new_with_form(f).ok());
        let pairs = FIELDS.iter().filter_map(|(_, _, name)| Some((*name, data.as_ref()?.get(name).as_string()?)));
        let problems = ClusterTenantForm::default().with_pairs(pairs).check(ctx).err().unwrap_or_default();
        for (key, id, _) in FIELDS {
            if seen.submitted || seen.touched.contains(key) {
                live::mark(id, problems.get(key));
            }
        }
        problems
    }
}
