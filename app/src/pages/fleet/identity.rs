//! `/identity` (platform operators): the fleet's link to Zitadel — the service-account key it
//! signs in with (id, user, expiry, days left, the last token exchange), banners 30, 7 and 1 days
//! before expiry and after a failed exchange, the two ways to rotate it, the reconcile pass and
//! its last result. Every control is a plain `<form method="post">` answered by the form layer
//! ([`crate::forms`]), so the page works the same before, after and without the wasm bundle; an
//! uploaded key is used and never shown again, not even when it is refused.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::{
    api::fleet::get_identity_overview,
    components::{
        feedback::{ErrorView, Notice},
        form::{Field, PostButton},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    forms::{self, Posted, PostedFields},
    model::fleet::identity::{
        IdentityOverview, ReconcileReport, RotationAction, RotationState, RotationView, Severity,
    },
};

/// The identity page.
#[component]
pub fn IdentityPage() -> impl IntoView {
    view! {
        <Title text="Identity" />
        <PageHeader
            title="Identity"
            description="The fleet's link to Zitadel: the service-account key it signs in with, its rotation, and the customers' sign-in organisations."
        />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match get_identity_overview().await {
                    Ok(overview) if !overview.configured => view! { <NotConfigured /> }.into_any(),
                    Ok(overview) => view! { <Configured overview /> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn NotConfigured() -> impl IntoView {
    view! {
        <EmptyState
            title="Zitadel is not configured"
            body="Customers sign in with the fleet's fallback client until you set ZITADEL_MGMT_API_URL and the service-account key (ZITADEL_MGMT_SA_KEY, from the Secret named by ZITADEL_MGMT_SECRET_NAME). The README says how to create the service account and which role it needs."
        />
    }
}

/// A one-button form posting `posted` (the page it answers is this one).
#[component]
fn ActionButton(
    form: &'static str,
    posted: Posted,
    label: &'static str,
    #[prop(optional)] primary: bool,
) -> impl IntoView {
    let class = if primary { "btn primary" } else { "btn" };
    view! { <PostButton form posted label class /> }
}

fn days(days: Option<i64>) -> String {
    match days {
        None => "never expires".into(),
        Some(d) if d < 0 => "expired".into(),
        Some(0) => "expires today".into(),
        Some(1) => "1 day left".into(),
        Some(d) => format!("{d} days left"),
    }
}

fn or_dash(value: Option<String>) -> String {
    value.unwrap_or_else(|| "–".into())
}

#[component]
fn Configured(overview: IdentityOverview) -> impl IntoView {
    let banners = overview
        .banners
        .clone()
        .into_iter()
        .map(|b| {
            let tone = match b.severity {
                Severity::Info => "info",
                Severity::Warning => "warn",
                Severity::Danger => "bad",
            };
            view! { <Notice tone>{b.message}</Notice> }
        })
        .collect_view();
    let exchange = match &overview.last_exchange {
        None => "none since the fleet started".to_owned(),
        Some(e) if e.ok => format!("succeeded {}", timestamp(e.at)),
        Some(e) => format!("failed {}", timestamp(e.at)),
    };
    let expires = overview.expires_at.map(timestamp).unwrap_or_else(|| "never".into());
    view! {
        {banners}
        <section class="card" aria-labelledby="key-in-use">
            <h2 id="key-in-use">"Key in use"</h2>
            <dl class="props">
                <dt>"Zitadel"</dt>
                <dd class="mono">{or_dash(overview.api_url.clone())}</dd>
                <dt>"Key id"</dt>
                <dd class="mono" id="key-id">{or_dash(overview.key_id.clone())}</dd>
                <dt>"Service account"</dt>
                <dd class="mono">{or_dash(overview.user_id.clone())}</dd>
                <dt>"Expires"</dt>
                <dd id="key-expiry">{format!("{expires} ({})", days(overview.days_left))}</dd>
                <dt>"Last token exchange"</dt>
                <dd id="last-exchange">{exchange}</dd>
                <dt>"Last success"</dt>
                <dd>{overview.last_success.map(timestamp).unwrap_or_else(|| "–".into())}</dd>
                <dt>"Persisted in"</dt>
                <dd>{overview.persisted_in.clone().unwrap_or_else(|| "nowhere: rotation is off (set ZITADEL_MGMT_SECRET_NAME)".into())}</dd>
            </dl>
        </section>
        <Rotation rotation=overview.rotation.clone() persisted=overview.persisted_in.is_some() />
        <Reconcile report=overview.last_reconcile.clone() />
        <History history=overview.history.clone() />
    }
}

#[component]
fn Rotation(rotation: Option<RotationView>, persisted: bool) -> impl IntoView {
    let two_phase = match rotation {
        None => view! {
            <p>"The fleet asks Zitadel for a new key, checks that it signs in, and keeps it beside the one in use. You activate it when you are ready; the old key is revoked after a grace period."</p>
            <ActionButton form="zitadel-prepare" posted=Posted::ZitadelRotation { action: RotationAction::Prepare } label="Mint a new key" primary=true />
        }
        .into_any(),
        Some(r) if r.state == RotationState::Prepared => view! {
            <p id="rotation-state">{format!("Key {} was minted and validated {}. It is not in use yet.", r.key_id, timestamp(r.prepared_at))}</p>
            <div class="form-actions">
                <ActionButton form="zitadel-activate" posted=Posted::ZitadelRotation { action: RotationAction::Activate } label="Activate the new key" primary=true />
                <ActionButton form="zitadel-cancel" posted=Posted::ZitadelRotation { action: RotationAction::Cancel } label="Cancel and delete it" />
            </div>
        }
        .into_any(),
        Some(r) => {
            let revoke_at = r.revoke_after.map(timestamp).unwrap_or_else(|| "–".into());
            let old = r.previous_key_id.clone().unwrap_or_default();
            view! {
                <p id="rotation-state">{format!("Key {} is in use. The old key {old} stays valid until {revoke_at}, then it is revoked.", r.key_id)}</p>
                <ActionButton form="zitadel-revoke" posted=Posted::ZitadelRotation { action: RotationAction::Revoke } label="Revoke the old key now" />
            }
            .into_any()
        }
    };
    let echo = forms::echo("zitadel-upload");
    let error = echo.as_ref().and_then(|e| e.errors.get("serviceAccountKey").map(str::to_owned).or(e.message.clone()));
    let open = error.is_some();
    view! {
        <section class="card" aria-labelledby="rotate">
            <h2 id="rotate">"Rotate the key"</h2>
            {if persisted {
                view! {
                    {two_phase}
                    <details open=open>
                        <summary>"Or upload a key made in Zitadel's console"</summary>
                        <form method="post" id="zitadel-upload" class="form">
                            <PostedFields form="zitadel-upload" posted=Posted::ZitadelKey />
                            <Field
                                id="zitadel-key"
                                label="Service-account key (JSON)"
                                hint="The key file's contents. It is checked against Zitadel first; a key that does not sign in is refused and the key in use stays."
                                error=Signal::derive(move || error.clone())
                            >
                                <textarea
                                    id="zitadel-key"
                                    name="serviceAccountKey"
                                    rows="6"
                                    autocomplete="off"
                                    spellcheck="false"
                                    aria-describedby="zitadel-key-hint zitadel-key-error"
                                ></textarea>
                            </Field>
                            <div class="form-actions">
                                <button type="submit" class="btn">"Validate and rotate"</button>
                            </div>
                        </form>
                    </details>
                }
                .into_any()
            } else {
                view! { <p class="muted">"Rotation needs the Secret the key is read from (ZITADEL_MGMT_SECRET_NAME): without it a rotated key would be lost at the next restart."</p> }.into_any()
            }}
        </section>
    }
}

#[component]
fn Reconcile(report: Option<ReconcileReport>) -> impl IntoView {
    let result = report.map(|r| {
        let list = |names: Vec<String>| if names.is_empty() { "none".to_owned() } else { names.join(", ") };
        let failed: Vec<String> = r.failed.iter().map(|f| format!("{} ({})", f.name, f.error)).collect();
        let adopted: i64 = r.member_adoption.iter().map(|a| a.adopted).sum();
        view! {
            <dl class="props" id="reconcile-result">
                <dt>"Finished"</dt>
                <dd>{r.finished_at.map(timestamp).unwrap_or_else(|| "–".into())}</dd>
                <dt>"Healed"</dt>
                <dd>{list(r.reconciled.clone())}</dd>
                <dt>"Already complete"</dt>
                <dd>{r.skipped.iter().filter(|s| s.reason == "already-provisioned").count()}</dd>
                <dt>"Failed"</dt>
                <dd>{list(failed)}</dd>
                <dt>"Members adopted"</dt>
                <dd>{adopted}</dd>
            </dl>
        }
    });
    view! {
        <section class="card" aria-labelledby="reconcile">
            <h2 id="reconcile">"Reconcile"</h2>
            <p>"Makes the sign-in organisation of every customer whose Zitadel ids are incomplete, and adds the users who joined an organisation in Zitadel as members (while seats are free). It also runs on its own every few hours."</p>
            <ActionButton form="zitadel-reconcile" posted=Posted::ZitadelReconcile label="Reconcile now" />
            {result}
        </section>
    }
}

#[component]
fn History(history: Vec<RotationView>) -> impl IntoView {
    if history.is_empty() {
        return view! { <p class="muted">"No rotation yet."</p> }.into_any();
    }
    let rows = history
        .into_iter()
        .map(|r| {
            view! {
                <tr>
                    <td>{timestamp(r.prepared_at)}</td>
                    <td>{if r.method == "upload" { "Upload" } else { "Minted" }}</td>
                    <td class="mono">{r.key_id}</td>
                    <td class="mono">{r.previous_key_id.unwrap_or_else(|| "–".into())}</td>
                    <td>{r.state.as_str()}</td>
                    <td class="mono">{r.actor}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card" aria-labelledby="rotations">
            <h2 id="rotations">"Recent rotations"</h2>
            <DataTable headers=&["When", "How", "New key", "Old key", "State", "By"]>{rows}</DataTable>
        </section>
    }
    .into_any()
}
