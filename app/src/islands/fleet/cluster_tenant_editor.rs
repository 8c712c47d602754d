//! The create/edit form for a ClusterTenant. Validates as the admin types, using the same
//! function the server runs again on submit; shows the server's verdict per field when it
//! differs (a duplicate name, say). Works without wasm as a posted form ([`crate::forms`]), and
//! keeps what was typed before the island hydrated.

use std::collections::BTreeSet;

use leptos::{ev, prelude::*, task::spawn_local};

use crate::{
    components::form::{Field, described_by},
    error::FieldErrors,
    forms::{self, Posted, PostedFields},
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

#[derive(Clone, Copy)]
struct FormState {
    form: RwSignal<ClusterTenantForm>,
    touched: RwSignal<BTreeSet<&'static str>>,
    submitted: RwSignal<bool>,
    server: RwSignal<FieldErrors>,
    check: Memo<FieldErrors>,
}

impl FormState {
    /// The message to show under `field`: the server's if it has one for the current value,
    /// otherwise the local check's once the field was edited or a submit was attempted.
    fn error(self, field: &'static str) -> Signal<Option<String>> {
        Signal::derive(move || {
            if let Some(message) = self.server.with(|s| s.get(field).map(str::to_owned)) {
                return Some(message);
            }
            let show = self.submitted.get() || self.touched.with(|t| t.contains(field));
            show.then(|| self.check.with(|c| c.get(field).map(str::to_owned))).flatten()
        })
    }

    /// An input handler that writes the value and marks the field as edited.
    fn on_input(self, field: &'static str, set: fn(&mut ClusterTenantForm, String)) -> impl Fn(ev::Event) + Copy {
        move |ev| {
            let value = event_target_value(&ev);
            self.form.update(|f| set(f, value));
            self.touched.update(|t| {
                t.insert(field);
            });
            self.server.update(|s| {
                s.0.remove(field);
            });
        }
    }

    fn text(
        self,
        field: &'static str,
        id: &'static str,
        name: &'static str,
        get: fn(&ClusterTenantForm) -> String,
        set: fn(&mut ClusterTenantForm, String),
        has_hint: bool,
    ) -> impl IntoView {
        let error = self.error(field);
        view! {
            <input
                id=id
                name=name
                type="text"
                autocomplete="off"
                spellcheck="false"
                value=self.form.with_untracked(get)
                prop:value=move || self.form.with(get)
                on:input=self.on_input(field, set)
                aria-invalid=move || error.with(Option::is_some).then_some("true")
                aria-describedby=move || described_by(id, has_hint, error.with(Option::is_some))
            />
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

/// What the inputs hold while the island hydrates: what was typed before the wasm arrived.
fn adopt_typed(initial: &ClusterTenantForm) -> (ClusterTenantForm, BTreeSet<&'static str>) {
    let mut typed: Vec<(&str, String)> = FIELDS
        .iter()
        .filter(|(_, id, _)| *id != "ct-compute-shared")
        .filter_map(|(_, id, name)| Some((*name, forms::typed(id)?)))
        .collect();
    if let Some(dedicated) = forms::typed_checked("ct-compute-dedicated") {
        typed.push(("compute_mode", if dedicated { "dedicated" } else { "shared" }.to_owned()));
    }
    let adopted = initial.clone().with_pairs(typed);
    let (before, after) = (serde_json::to_value(initial).ok(), serde_json::to_value(&adopted).ok());
    let changed = FIELDS
        .iter()
        .filter(|(_, _, name)| before.as_ref().and_then(|b| b.get(name)) != after.as_ref().and_then(|a| a.get(name)))
        .map(|(key, _, _)| *key)
        .collect();
    (adopted, changed)
}

#[cfg_attr(any(feature = "ssr", feature = "fleet-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "fleet-islands")), component)]
fn CustomerForm(
    initial: ClusterTenantForm,
    validation: ValidationContext,
    editing: Option<String>,
    /// Messages from a post answered without wasm.
    server: FieldErrors,
    /// The sentence for it.
    banner: Option<String>,
) -> impl IntoView {
    let (initial, typed) = adopt_typed(&initial);
    let form = RwSignal::new(initial);
    // Messages for what was typed before hydration appear right after it: the first render must
    // match the server's HTML, which had none.
    let touched = RwSignal::new(BTreeSet::new());
    if !typed.is_empty() {
        Effect::new(move |_| touched.set(typed.clone()));
    }
    let validation = StoredValue::new(validation);
    let check = Memo::new(move |_| form.with(|f| f.check(&validation.read_value()).err().unwrap_or_default()));
    let state = FormState { form, touched, submitted: RwSignal::new(false), server: RwSignal::new(server), check };
    let pending = RwSignal::new(false);
    let banner = RwSignal::new(banner);
    let posted = Posted::ClusterTenant { editing: editing.clone() };
    let editing = StoredValue::new(editing);
    let is_edit = editing.with_value(Option::is_some);

    let submit = move |ev: ev::SubmitEvent| {
        ev.prevent_default();
        if pending.get_untracked() {
            return;
        }
        state.submitted.set(true);
        let local = check.get_untracked();
        if !local.is_empty() {
            banner.set(Some(format!("Fix the {} highlighted field(s) first.", local.0.len())));
            focus_first_invalid(&local);
            return;
        }
        banner.set(None);
        pending.set(true);
        let sent = crate::islands::post_form(FORM_ID);
        spawn_local(async move {
            match sent.await {
                Ok(href) => crate::islands::navigate(&href),
                Err(err) => {
                    let fields = err.field_errors();
                    banner.set(crate::islands::enhance::summary(&err, shows));
                    focus_first_invalid(&fields);
                    state.server.set(fields);
                    pending.set(false);
                }
            }
        });
    };

    let tier_options = IsolationTier::ALL
        .into_iter()
        .map(|tier| {
            let available = tier.is_available(validation.read_value().dedicated_cluster_available);
            let label = if available { tier.label().to_owned() } else { format!("{} (needs an external provisioner)", tier.label()) };
            view! {
                <option value=tier.as_str() disabled=!available selected=move || form.with(|f| f.isolation_tier == tier.as_str())>
                    {label}
                </option>
            }
        })
        .collect_view();
    let dedicated = move || form.with(|f| f.compute_mode == "dedicated");
    let base = validation.with_value(|v| v.base_domain.clone());
    let name_hint = match &base {
        Some(b) => "Lowercase letters, digits and hyphens; starts with a letter. Becomes the namespace opencrane-<name> and the host <name>.".to_owned() + b,
        None => "Lowercase letters, digits and hyphens; starts with a letter. Becomes the namespace opencrane-<name>.".to_owned(),
    };
    let cancel_href = editing.with_value(|e| match e {
        Some(name) => format!("/cluster-tenants/{name}"),
        None => "/cluster-tenants".into(),
    });
    let tier_error = state.error("isolationTier");
    let mode_error = state.error("compute.mode");

    view! {
        <form class="form customer-form" id=FORM_ID method="post" novalidate on:submit=submit>
            <PostedFields form=FORM_ID posted=posted />
            {move || banner.get().map(|b| view! { <div class="notice bad" role="alert">{b}</div> })}
            <fieldset>
                <legend>"Customer"</legend>
                <Field id="ct-name" label="Name" required=true hint=name_hint error=state.error("name")>
                    {if is_edit {
                        view! {
                            <input id="ct-name" name="name" type="text" readonly value=form.with_untracked(|f| f.name.clone()) />
                        }
                            .into_any()
                    } else {
                        state.text("name", "ct-name", "name", |f| f.name.clone(), |f, v| f.name = v, true).into_any()
                    }}
                </Field>
                <Field id="ct-display-name" label="Display name" required=true error=state.error("displayName")>
                    {state.text("displayName", "ct-display-name", "display_name", |f| f.display_name.clone(), |f, v| f.display_name = v, false)}
                </Field>
                <Field
                    id="ct-vanity"
                    label="Vanity domain"
                    hint="Optional host the customer owns, e.g. portal.acme.com. Leave empty for none."
                    error=state.error("vanityDomain")
                >
                    {state.text("vanityDomain", "ct-vanity", "vanity_domain", |f| f.vanity_domain.clone(), |f, v| f.vanity_domain = v, true)}
                </Field>
            </fieldset>
            <fieldset>
                <legend>"Isolation and compute"</legend>
                <Field id="ct-tier" label="Isolation tier" required=true error=tier_error>
                    <select
                        id="ct-tier"
                        name="isolation_tier"
                        on:change=state.on_input("isolationTier", |f, v| f.isolation_tier = v)
                        aria-invalid=move || tier_error.with(Option::is_some).then_some("true")
                    >
                        {tier_options}
                    </select>
                </Field>
                <div class="field" class:invalid=move || mode_error.with(Option::is_some)>
                    <span class="label" id="ct-compute-label">"Compute"</span>
                    <div class="radios" role="radiogroup" aria-labelledby="ct-compute-label">
                        <label>
                            <input
                                type="radio"
                                id="ct-compute-shared"
                                name="compute_mode"
                                value="shared"
                                checked=form.with_untracked(|f| f.compute_mode != "dedicated")
                                prop:checked=move || form.with(|f| f.compute_mode == "shared")
                                on:change=state.on_input("compute.mode", |f, v| f.compute_mode = v)
                            />
                            "Shared node pool"
                        </label>
                        <label>
                            <input
                                type="radio"
                                id="ct-compute-dedicated"
                                name="compute_mode"
                                value="dedicated"
                                checked=form.with_untracked(|f| f.compute_mode == "dedicated")
                                prop:checked=dedicated
                                on:change=state.on_input("compute.mode", |f, v| f.compute_mode = v)
                            />
                            "Dedicated node pool"
                        </label>
                    </div>
                    <p class="error" aria-live="polite">{move || mode_error.get()}</p>
                </div>
                // Always rendered, shown only while "Dedicated" is chosen (CSS), so that the form
                // also works before and without the wasm.
                <div class="node-pool">
                    <Field
                        id="ct-node-pool"
                        label="Node pool"
                        required=true
                        hint="Value of the opencrane.io/node-pool label on the customer's nodes."
                        error=state.error("compute.nodePool")
                    >
                        {state.text("compute.nodePool", "ct-node-pool", "node_pool", |f| f.node_pool.clone(), |f, v| f.node_pool = v, true)}
                    </Field>
                </div>
            </fieldset>
            <fieldset>
                <legend>"Quota and seats"</legend>
                <p class="muted small">"Leave a quota empty for no limit. CPU, memory and storage take Kubernetes quantities (500m, 8Gi)."</p>
                <div class="grid">
                    <Field id="ct-cpu" label="CPU" error=state.error("resources.quota.cpu")>
                        {state.text("resources.quota.cpu", "ct-cpu", "cpu", |f| f.cpu.clone(), |f, v| f.cpu = v, false)}
                    </Field>
                    <Field id="ct-memory" label="Memory" error=state.error("resources.quota.memory")>
                        {state.text("resources.quota.memory", "ct-memory", "memory", |f| f.memory.clone(), |f, v| f.memory = v, false)}
                    </Field>
                    <Field id="ct-storage" label="Storage" error=state.error("resources.quota.storage")>
                        {state.text("resources.quota.storage", "ct-storage", "storage", |f| f.storage.clone(), |f, v| f.storage = v, false)}
                    </Field>
                    <Field id="ct-pods" label="Pods" error=state.error("resources.quota.pods")>
                        {state.text("resources.quota.pods", "ct-pods", "pods", |f| f.pods.clone(), |f, v| f.pods = v, false)}
                    </Field>
                    <Field id="ct-gpu" label="GPUs" error=state.error("resources.quota.gpu")>
                        {state.text("resources.quota.gpu", "ct-gpu", "gpu", |f| f.gpu.clone(), |f, v| f.gpu = v, false)}
                    </Field>
                    <Field id="ct-seat-cap" label="Seat cap" hint="Empty = uncapped." error=state.error("seatCap")>
                        {state.text("seatCap", "ct-seat-cap", "seat_cap", |f| f.seat_cap.clone(), |f, v| f.seat_cap = v, true)}
                    </Field>
                </div>
            </fieldset>
            <fieldset>
                <legend>"Silo"</legend>
                <Field
                    id="ct-termination-policy"
                    label="When the customer is deleted"
                    hint="Retain keeps the database and its volumes so they can be re-attached; Delete removes all data."
                    error=state.error("terminationPolicy")
                >
                    <select
                        id="ct-termination-policy"
                        name="termination_policy"
                        on:change=state.on_input("terminationPolicy", |f, v| f.termination_policy = v)
                    >
                        {[TerminationPolicy::Retain, TerminationPolicy::Delete].map(|p| {
                            let value = p.as_str();
                            view! {
                                <option value=value selected=move || form.with(|f| f.termination_policy == value)>
                                    {p.label()}
                                </option>
                            }
                        })}
                    </select>
                </Field>
                <Field
                    id="ct-silo-version"
                    label="Silo version"
                    hint="Pin the silo chart and application version, e.g. 0.3.1. Empty follows the fleet's default."
                    error=state.error("siloVersion")
                >
                    {state.text("siloVersion", "ct-silo-version", "silo_version", |f| f.silo_version.clone(), |f, v| f.silo_version = v, true)}
                </Field>
            </fieldset>
            <div class="form-actions">
                <button type="submit" class="btn primary" disabled=move || pending.get()>
                    {move || match (pending.get(), is_edit) {
                        (true, _) => "Saving…",
                        (false, true) => "Save changes",
                        (false, false) => "Create customer",
                    }}
                </button>
                <a class="btn ghost" href=cancel_href>"Cancel"</a>
            </div>
        </form>
    }
}

fn focus_first_invalid(errors: &FieldErrors) {
    let Some(id) = FIELDS.iter().find(|(field, _, _)| errors.get(field).is_some()).map(|(_, id, _)| *id) else {
        return;
    };
    #[cfg(feature = "hydrate")]
    {
        use leptos::wasm_bindgen::JsCast;
        if let Some(el) =
            document().get_element_by_id(id).and_then(|e| e.dyn_into::<leptos::web_sys::HtmlElement>().ok())
        {
            let _ = el.focus();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = id;
}
