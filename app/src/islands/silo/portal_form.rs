//! The silo portal's forms and row actions: a described form (fields, hints, per-field errors
//! from the server) whose post the form layer turns into the request body for the server function
//! its target names, optionally previewing what it would change (the evaluator's what-if); and
//! row actions (suspend, delete …) with an explicit confirmation.
//!
//! Both are server-rendered forms that work without the wasm; with it, the
//! [`EnhanceForm`] island takes each over where it stands (see [`crate::islands::enhance`]).
//! Pages describe their forms as data ([`FormField`]); validation is the server's, so the form
//! and the REST API give the same field-level messages.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use serde_json::{Map, Value, json};

#[cfg(feature = "ssr")]
use crate::{api::silo as api, error::AppError, model::silo::WhatIf};
use crate::{
    components::form::Field,
    error::FieldErrors,
    forms::{self, Posted, PostedFields},
    islands::enhance::{EnhanceForm, alert_id, field_id, impact_id},
};

/// How a field is edited and sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FieldKind {
    /// A line of text (sent as a string).
    Text,
    /// A secret (never pre-filled, sent as a string).
    Password,
    /// A whole number (sent as a number; empty is null).
    Number,
    /// One of (value, label).
    Select(Vec<(String, String)>),
    /// One of (value, label), in groups that depend on another field: with the wasm only the group
    /// whose `when` is that field's value is offered (the field hides when none is); without it,
    /// every group shows under its label, after an empty choice.
    Grouped {
        /// The key of the field that picks the group.
        follows: String,
        /// The groups, in order.
        groups: Vec<OptionGroup>,
    },
    /// Any of (value, label), as checkboxes (sent as a list).
    Multi(Vec<(String, String)>),
    /// One item per line or comma (sent as a list).
    Lines,
    /// Whole numbers, one per line or comma (sent as a list of numbers).
    Numbers,
    /// `key=value` per line (sent as an object).
    Pairs,
    /// `cidr port,port` per line (sent as `[{cidr, ports}]`).
    Egress,
}

/// Options offered when another field has the value `when` (`(when, label, [(value, label)])`).
pub type OptionGroup = (String, String, Vec<(String, String)>);

/// One described field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormField {
    /// The request's JSON key (dots nest: `resources.cpu`); also the key of its server errors.
    pub key: String,
    /// Label.
    pub label: String,
    /// Kind.
    pub kind: FieldKind,
    /// Help under the field.
    pub hint: Option<String>,
    /// Marked required.
    pub required: bool,
    /// Initial value (lists: one per line).
    pub value: String,
}

impl FormField {
    /// A field.
    pub fn new(key: &str, label: &str, kind: FieldKind) -> Self {
        Self { key: key.into(), label: label.into(), kind, hint: None, required: false, value: String::new() }
    }

    /// With a hint.
    #[must_use]
    pub fn hint(mut self, hint: &str) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Marked required.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// With an initial value.
    #[must_use]
    pub fn value(mut self, value: impl Into<String>) -> Self {
        self.value = value.into();
        self
    }
}

/// Options from plain values.
pub fn options(values: &[String]) -> Vec<(String, String)> {
    values.iter().map(|v| (v.clone(), v.clone())).collect()
}

/// Where a form goes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FormTarget {
    /// `users/create`.
    CreateUser,
    /// `users/update`.
    UpdateUser(String),
    /// `groups/create`.
    CreateGroup,
    /// `groups/update`.
    UpdateGroup(String),
    /// `policies/save` (create when true).
    SavePolicy(bool),
    /// `grants/create` (previewable).
    CreateGrant,
    /// `budgets/set`.
    SetLimit,
    /// `settings/update`.
    UpdateSettings,
    /// `credentials/create`.
    AddCredential,
    /// `credentials/rotate`.
    RotateCredential(String),
    /// `models/create`.
    AddDeployment,
    /// `models/fallbacks`.
    SetFallbacks,
    /// `models/default`.
    SetDefault,
    /// `byok/set`: one provider key, and that provider's default models (the quick set-up).
    QuickSetup,
}

impl FieldKind {
    /// The kind without its options (what a posted form needs to encode the value).
    fn bare(&self) -> Self {
        match self {
            Self::Select(_) => Self::Select(Vec::new()),
            Self::Grouped { follows, .. } => Self::Grouped { follows: follows.clone(), groups: Vec::new() },
            Self::Multi(_) => Self::Multi(Vec::new()),
            other => other.clone(),
        }
    }
}

impl FormTarget {
    fn previewable(&self) -> bool {
        matches!(self, Self::CreateGrant | Self::SavePolicy(_))
    }
}

/// The request of a form's target from the form's body (the fields' shapes are the form's own,
/// so a failure here is a form that does not match its target, not the user's input).
#[cfg(feature = "ssr")]
fn parse<T: serde::de::DeserializeOwned>(body: Value) -> Result<T, AppError> {
    serde_json::from_value(body).map_err(|e| AppError::BadRequest {
        code: "INVALID_REQUEST".into(),
        message: format!("The form could not be read: {e}"),
        field: None,
    })
}

/// Runs the server function `target` names with `body` (for the form layer, [`forms::submit`]:
/// a form posted without wasm, or by the island in the background).
#[cfg(feature = "ssr")]
pub(crate) async fn submit(target: FormTarget, body: Value) -> Result<(), AppError> {
    match target {
        FormTarget::CreateUser => api::create_user(parse(body)?).await.map(drop),
        FormTarget::UpdateUser(name) => api::update_user(name, parse(body)?).await.map(drop),
        FormTarget::CreateGroup => api::create_group(parse(body)?).await.map(drop),
        FormTarget::UpdateGroup(id) => api::update_group(id, parse(body)?).await.map(drop),
        FormTarget::SavePolicy(create) => api::save_policy(parse(body)?, create).await.map(drop),
        FormTarget::CreateGrant => api::create_grant(parse(body)?).await.map(drop),
        FormTarget::SetLimit => api::set_limit(parse(body)?).await.map(drop),
        FormTarget::UpdateSettings => api::update_settings(parse(body)?).await.map(drop),
        FormTarget::AddCredential => api::add_credential(parse(body)?).await.map(drop),
        FormTarget::RotateCredential(id) => api::rotate_credential(id, parse(body)?).await.map(drop),
        FormTarget::AddDeployment => api::add_deployment(parse(body)?).await.map(drop),
        FormTarget::SetFallbacks => api::set_fallbacks(parse(body)?).await.map(drop),
        FormTarget::SetDefault => api::set_default_model(parse(body)?).await.map(drop),
        FormTarget::QuickSetup => {
            let provider = body.get("provider").and_then(Value::as_str).unwrap_or_default().to_owned();
            api::set_byok(provider, parse(body)?).await.map(drop)
        }
    }
}

/// What the form `target` names would change (grants and policies), without changing it.
#[cfg(feature = "ssr")]
pub(crate) async fn preview(target: FormTarget, body: Value) -> Result<WhatIf, AppError> {
    match target {
        FormTarget::CreateGrant => api::preview_grant(parse(body)?).await,
        FormTarget::SavePolicy(_) => api::preview_policy(parse(body)?).await,
        _ => Err(AppError::BadRequest {
            code: "NOT_PREVIEWABLE".into(),
            message: "This form has no preview.".into(),
            field: None,
        }),
    }
}

fn items(text: &str) -> Vec<String> {
    text.split(['\n', ',']).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// The JSON value of one field, or the message for it.
#[cfg(feature = "ssr")]
fn encode(kind: &FieldKind, text: &str) -> Result<Value, String> {
    Ok(match kind {
        FieldKind::Text | FieldKind::Password | FieldKind::Select(_) | FieldKind::Grouped { .. } => {
            json!(text.trim())
        }
        FieldKind::Number if text.trim().is_empty() => Value::Null,
        FieldKind::Number => json!(text.trim().parse::<i64>().map_err(|_| "Enter a whole number.".to_owned())?),
        FieldKind::Lines | FieldKind::Multi(_) => json!(items(text)),
        FieldKind::Numbers => json!(
            items(text)
                .iter()
                .map(|n| n.parse::<i64>().map_err(|_| format!("“{n}” is not a whole number.")))
                .collect::<Result<Vec<i64>, String>>()?
        ),
        FieldKind::Pairs => {
            let mut map = Map::new();
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let (k, v) = line.split_once('=').ok_or_else(|| format!("“{line}”: write key=value, one per line."))?;
                map.insert(k.trim().to_owned(), json!(v.trim()));
            }
            Value::Object(map)
        }
        FieldKind::Egress => {
            let mut rules = Vec::new();
            for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let mut parts = line.split_whitespace();
                let cidr = parts.next().unwrap_or_default();
                let ports = parts
                    .flat_map(|p| p.split(','))
                    .filter(|p| !p.is_empty())
                    .map(|p| p.parse::<u16>().map_err(|_| format!("“{p}” is not a port (1–65535).")))
                    .collect::<Result<Vec<u16>, String>>()?;
                rules.push(json!({ "cidr": cidr, "ports": ports }));
            }
            json!(rules)
        }
    })
}

/// Sets `key` (dotted) in `body`.
#[cfg(feature = "ssr")]
fn put(body: &mut Map<String, Value>, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            body.insert(key.to_owned(), value);
        }
        Some((head, rest)) => {
            let inner = body.entry(head.to_owned()).or_insert_with(|| json!({}));
            if let Value::Object(map) = inner {
                put(map, rest, value);
            }
        }
    }
}

/// The request body of a described form: `value_of` gives each field's text (repeated checkbox
/// values joined by newlines), `fixed` adds constant keys: the form layer's, for the island's post
/// and the no-wasm post alike.
#[cfg(feature = "ssr")]
pub(crate) fn build_body(
    kinds: &[(String, FieldKind)],
    fixed: &[(String, String)],
    value_of: impl Fn(&str) -> String,
) -> Result<Value, FieldErrors> {
    let mut body = Map::new();
    let mut problems = FieldErrors::new();
    for (k, v) in fixed {
        put(&mut body, k, json!(v));
    }
    for (key, kind) in kinds {
        match encode(kind, &value_of(key)) {
            Ok(value) => put(&mut body, key, value),
            Err(message) => problems.add(key.clone(), message),
        }
    }
    problems.into_result(Value::Object(body))
}

/// The confirmation a page shows after the form `form` (its DOM id) succeeded.
pub fn confirmation(form: &str) -> Option<&'static str> {
    Some(match form {
        "new-user" => "User created.",
        "new-group" => "Group created.",
        "new-policy" => "Policy created.",
        "new-grant" => "Grant added.",
        "new-limit" => "Limit set.",
        "settings" => "Settings saved.",
        "new-credential" => "Key stored. It is sealed and never shown again.",
        "new-model" => "Model added.",
        "fallbacks" => "Fallback chain saved.",
        "defaults" => "Default model saved.",
        f if f.starts_with("rotate-") => "Key replaced. The old key is no longer used.",
        "zitadel-upload" => "Key rotated: the new key is in use. Delete the old key in Zitadel's console.",
        "zitadel-prepare" => "A new key was minted and validated. It is not in use until you activate it.",
        "zitadel-activate" => "The new key is in use. The old one is revoked when the grace period ends.",
        "zitadel-revoke" => "The old key was revoked.",
        "zitadel-cancel" => "The prepared key was deleted.",
        "zitadel-reconcile" => "Reconcile pass finished; its result is below.",
        f if f.starts_with("edit-") => "Changes saved.",
        _ => return None,
    })
}

/// A described form. Server-rendered as a working `<form method="post">` (see [`forms`]); when
/// this page answers its own failed post, the posted values and the messages are shown again.
#[component]
pub fn PortalForm(
    /// DOM id prefix (unique on the page).
    id: String,
    /// Fields.
    fields: Vec<FormField>,
    /// Where it goes.
    target: FormTarget,
    /// The submit button.
    submit_label: String,
    /// Where to go after success (reloads the page's data).
    done: String,
    /// Fixed keys sent with the form (e.g. `payloadType`).
    #[prop(optional)]
    fixed: Option<Vec<(String, String)>>,
) -> impl IntoView {
    let mut fields = fields;
    let (errors, message) = match forms::echo(&id) {
        Some(echo) => {
            for f in &mut fields {
                match (&f.kind, echo.value(&f.key)) {
                    // A secret is never sent back to the page.
                    (FieldKind::Password, _) => {}
                    (_, Some(value)) => f.value = value,
                    // No checkbox ticked: the browser posts nothing.
                    (FieldKind::Multi(_), None) => f.value = String::new(),
                    (_, None) => {}
                }
            }
            (echo.errors, echo.message)
        }
        None => (FieldErrors::new(), None),
    };
    view! {
        <DescribedForm id fields target submit_label done fixed=fixed.unwrap_or_default() errors message />
    }
}

/// The markup behind [`PortalForm`]: the form as the server posts it, taken over by
/// [`EnhanceForm`] when the wasm runs (sent in the background, messages in place, grouped
/// options following their field, the preview).
#[component]
fn DescribedForm(
    id: String,
    fields: Vec<FormField>,
    target: FormTarget,
    submit_label: String,
    done: String,
    fixed: Vec<(String, String)>,
    /// Messages from a post answered without wasm.
    errors: FieldErrors,
    /// The sentence for it.
    message: Option<String>,
) -> impl IntoView {
    let kinds: Vec<(String, FieldKind)> = fields.iter().map(|f| (f.key.clone(), f.kind.bare())).collect();
    let previewable = target.previewable();
    let posted = Posted::Portal { target, done, kinds, fixed };
    let rendered = fields
        .into_iter()
        .map(|f| {
            let input_id = field_id(&id, &f.key);
            let error = Signal::stored(errors.get(&f.key).map(str::to_owned));
            let (name, initial) = (f.key.clone(), f.value.clone());
            let option = |(v, label): (String, String)| {
                let selected = v == initial;
                view! { <option value=v selected=selected>{label}</option> }
            };
            let control = match f.kind {
                FieldKind::Grouped { follows, groups } => {
                    let none_selected = initial.is_empty();
                    let groups = groups
                        .into_iter()
                        .map(|(when, label, opts)| {
                            let options = opts.into_iter().map(option).collect_view();
                            view! { <optgroup label=label data-when=when>{options}</optgroup> }
                        })
                        .collect_view();
                    view! {
                        <select id=input_id.clone() name=name data-follows=follows>
                            <option value="" selected=none_selected>"(none)"</option>
                            {groups}
                        </select>
                    }
                    .into_any()
                }
                FieldKind::Select(opts) => {
                    let options = opts.into_iter().map(option).collect_view();
                    view! { <select id=input_id.clone() name=name>{options}</select> }.into_any()
                }
                FieldKind::Multi(opts) => {
                    let picked = items(&initial);
                    let boxes = opts
                        .into_iter()
                        .map(|(v, label)| {
                            let checked = picked.contains(&v);
                            let box_id = format!("{input_id}-{v}");
                            let box_for = box_id.clone();
                            view! {
                                <label class="check" for=box_for>
                                    <input type="checkbox" id=box_id name=name.clone() value=v checked=checked />
                                    {label}
                                </label>
                            }
                        })
                        .collect_view();
                    view! { <div class="checks" id=input_id.clone()>{boxes}</div> }.into_any()
                }
                FieldKind::Lines | FieldKind::Numbers | FieldKind::Pairs | FieldKind::Egress => {
                    view! { <textarea id=input_id.clone() name=name rows="3">{initial}</textarea> }.into_any()
                }
                FieldKind::Password => {
                    view! { <input id=input_id.clone() name=name type="password" autocomplete="off" /> }.into_any()
                }
                FieldKind::Number => {
                    view! { <input id=input_id.clone() name=name type="number" value=initial /> }.into_any()
                }
                FieldKind::Text => {
                    view! { <input id=input_id.clone() name=name type="text" value=initial /> }.into_any()
                }
            };
            view! {
                <div class="field-slot">
                    <Field id=input_id label=f.label required=f.required hint=f.hint.unwrap_or_default() error=error>
                        {control}
                    </Field>
                </div>
            }
        })
        .collect_view();
    let (alert, impact, alert_hidden) = (alert_id(&id), impact_id(&id), message.is_none());
    let (form_id, posted_id) = (id.clone(), id.clone());
    view! {
        <form class="form portal-form" id=form_id method="post" novalidate>
            <PostedFields form=posted_id posted=posted />
            <p class="error" role="alert" id=alert hidden=alert_hidden>{message}</p>
            {rendered}
            <div id=impact></div>
            <div class="form-actions">
                // Shown by the wasm: a preview needs it.
                {previewable.then(|| view! {
                    <button type="button" class="btn ghost" data-preview hidden>"Preview changes"</button>
                })}
                <button type="submit" class="btn primary">{submit_label}</button>
            </div>
            <EnhanceForm form=id />
        </form>
    }
}

/// A row action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowAction {
    /// Suspend (true) or resume a user.
    SuspendUser(String, bool),
    /// Delete a user (typed confirmation).
    DeleteUser(String),
    /// Revoke a user's LiteLLM key (a new one is issued).
    RevokeKey(String),
    /// Delete a group.
    DeleteGroup(String),
    /// Delete a policy.
    DeletePolicy(String),
    /// Delete a grant (shows what it would change first).
    DeleteGrant(String),
    /// Remove a limit.
    DeleteLimit(String),
    /// Dismiss a notice.
    DismissNotice(i64),
    /// Delete a credential.
    DeleteCredential(String),
    /// Remove a deployment.
    DeleteDeployment(String),
    /// Remove a default model.
    DeleteDefault(String),
    /// End every sign-in session of a subject.
    SignOutAll(String),
}

/// Runs a row action (for the form layer: the island's post and the no-wasm post alike).
#[cfg(feature = "ssr")]
pub async fn run(action: RowAction, confirmation: String) -> Result<(), AppError> {
    match action {
        RowAction::SuspendUser(name, on) => api::suspend_user(name, on).await.map(drop),
        RowAction::DeleteUser(name) => api::delete_user(name, confirmation).await,
        RowAction::RevokeKey(name) => api::revoke_user_key(name).await.map(drop),
        RowAction::DeleteGroup(id) => api::delete_group(id).await,
        RowAction::DeletePolicy(name) => api::delete_policy(name).await,
        RowAction::DeleteGrant(id) => api::delete_grant(id).await,
        RowAction::DeleteLimit(id) => api::delete_limit(id).await,
        RowAction::DismissNotice(id) => api::dismiss_notice(id).await,
        RowAction::DeleteCredential(id) => api::delete_credential(id).await,
        RowAction::DeleteDeployment(id) => api::delete_deployment(id).await,
        RowAction::DeleteDefault(id) => api::delete_default_model(id).await,
        RowAction::SignOutAll(subject) => {
            api::revoke_silo_sessions(crate::model::session::RevokeSessions::AllOf { subject }).await.map(drop)
        }
    }
}

/// The DOM id of a row action's form: from its accessible name, so each row's is its own.
fn row_form_id(aria: &str) -> String {
    format!("row-{}", forms::dom_id(aria))
}

/// A button that does one thing to one row, after a confirmation step for destructive actions
/// (typing the name for users), then reloads `done`. A real `<form method="post">`, so it works
/// before and without the wasm: the confirmation step is a `<details>` disclosure, and the
/// server's form layer runs the same action ([`run`]); with the wasm the island posts it itself
/// and, for a grant, shows first whose access would change.
#[component]
pub fn RowActionButton(
    /// What to do.
    action: RowAction,
    /// Button text.
    label: String,
    /// Where to go afterwards.
    done: String,
    /// The row's name for people, so each button's accessible name says which row it acts on
    /// ("Delete policy eng-default", not one "Delete" per row).
    #[prop(optional)]
    of: Option<String>,
) -> impl IntoView {
    let aria = match &of {
        Some(row) => format!("{label} {row}"),
        None => label.clone(),
    };
    // A refused post comes back open, with what was typed and why (the field's sentence first).
    let refused = forms::echo(&row_form_id(&aria)).map(|e| {
        let typed = e.value("confirmation").unwrap_or_default();
        (e.reason(), typed)
    });
    view! { <RowActionForm action label done aria refused /> }
}

/// The markup behind [`RowActionButton`], taken over by [`EnhanceForm`] when the wasm runs
/// (sent in the background, the button armed by the typed name, a grant's impact on opening).
#[component]
fn RowActionForm(
    action: RowAction,
    label: String,
    done: String,
    aria: String,
    /// The sentence and the typed confirmation of a refused post of this form.
    refused: Option<(String, String)>,
) -> impl IntoView {
    let destructive = !matches!(action, RowAction::SuspendUser(..) | RowAction::DismissNotice(_));
    let typed_name = match &action {
        RowAction::DeleteUser(name) => Some(name.clone()),
        _ => None,
    };
    let impact = match &action {
        RowAction::DeleteGrant(id) => Some(id.clone()),
        _ => None,
    };
    let form_id = row_form_id(&aria);
    let open = refused.is_some();
    let input_id = format!("{form_id}-confirmation");
    let (echoed, retyped) = match refused {
        Some((why, typed)) => (Some(why), typed),
        None => (None, String::new()),
    };
    let posted = Posted::RowAction { action, done };
    let hidden = view! { <PostedFields form=form_id.clone() posted=posted /> };
    let enhance = view! { <EnhanceForm form=form_id.clone() /> };
    let (alert, impact_slot, alert_hidden) = (alert_id(&form_id), impact_id(&form_id), echoed.is_none());
    let control = if destructive {
        let name_field = typed_name.map(move |name| {
            view! {
                <label for=input_id.clone()>{format!("Type “{name}” to confirm: ")}</label>
                // Until the wasm runs, the server checks the typed name; then the button waits for it.
                <input id=input_id class="confirm-name" type="text" name="confirmation" autocomplete="off" required
                    value=retyped data-expect=name />
            }
        });
        let confirm_label = format!("Yes, {}", label.to_lowercase());
        view! {
            <details class="confirm-details" open=open data-impact=impact>
                <summary class="btn danger small" aria-label=aria>{label}</summary>
                <form method="post" class="confirm" id=form_id.clone()>
                    {hidden}
                    {name_field}
                    <div id=impact_slot></div>
                    <button type="submit" class="btn danger small confirm-go">{confirm_label}</button>
                    {enhance}
                </form>
            </details>
        }
        .into_any()
    } else {
        view! {
            <form method="post" class="inline-form" id=form_id.clone()>
                {hidden}
                <button type="submit" class="btn small" aria-label=aria>{label}</button>
                {enhance}
            </form>
        }
        .into_any()
    };
    view! {
        <span class="row-action">
            {control}
            <span class="error" role="alert" id=alert hidden=alert_hidden>{echoed}</span>
        </span>
    }
}
