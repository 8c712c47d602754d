//! The live provisioning checklist on a customer's page (its Retry buttons are posted forms too),
//! and the Suspend/Resume button (a plain posted form).
//!
//! The checklist is rendered on the server with the current state (so it is complete without
//! JavaScript); once the wasm runs, its island asks every second while the silo is settling and
//! swaps in the server's newer rendering when something moved (one rendering of it, the
//! server's: the island draws nothing). It stops asking when the silo is Ready or Suspended, and
//! after ten minutes of no change it stops and says so (no endless spinner). When a deletion
//! finishes, it sends the browser to the list.

use leptos::prelude::*;

use crate::{
    components::{feedback::PhaseBadge, form::PostButton},
    forms::{Posted, PostedFields},
    model::{
        fleet::cluster_tenant::Phase,
        fleet::provisioning::{ProvisioningView, StepState, StepView},
    },
};

fn glyph(state: StepState) -> (&'static str, &'static str) {
    match state {
        StepState::Done => ("ok", "✓"),
        StepState::Skipped => ("idle", "–"),
        StepState::Running | StepState::Removing => ("busy", "◐"),
        StepState::Failed => ("bad", "✕"),
        StepState::Pending => ("idle", "○"),
        StepState::Removed => ("idle", "⌫"),
        StepState::Retained => ("warn", "▣"),
    }
}

fn seconds(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// What the checklist's island swaps in while the silo settles: the checklist and status as
/// [`Checklist`] renders them now, and what the island needs to know about them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChecklistUpdate {
    /// The inner HTML of the page's live status.
    pub html: String,
    /// Whether it is still settling (the island keeps asking).
    pub settling: bool,
    /// Whether the customer is being deleted (gone then means done).
    pub deleting: bool,
    /// The steps' and the phase's state, without times: equal while nothing moves.
    pub state: u64,
    /// How many steps there are, how many a teardown has finished (removed or kept), and
    /// whether one failed (the delete dialog's progress).
    pub steps: u32,
    pub finished: u32,
    pub failed: bool,
}

impl ChecklistUpdate {
    /// Renders `view` as the page does.
    #[cfg(feature = "ssr")]
    pub fn render(view: ProvisioningView, can_retry: bool) -> Self {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut hasher = DefaultHasher::new();
        serde_json::to_string(&(&view.phase, &view.steps, view.converged)).unwrap_or_default().hash(&mut hasher);
        let (settling, deleting) = (view.is_settling(), view.phase == Phase::Deleting);
        let count = |f: fn(StepState) -> bool| view.steps.iter().filter(|s| f(s.state)).count() as u32;
        let steps = view.steps.len() as u32;
        let finished = count(|s| matches!(s, StepState::Removed | StepState::Retained));
        let failed = count(|s| s == StepState::Failed) > 0;
        let html = Owner::new().with(|| view! { <Checklist view can_retry /> }.to_html());
        Self { html, settling, deleting, state: hasher.finish(), steps, finished, failed }
    }
}

/// The checklist; `can_retry` shows the Retry buttons (owners, admins and operators). Rendered on
/// the server with the current state, complete without JavaScript; while the silo settles its
/// island ([`FollowChecklist`]) swaps in the server's newer rendering when something moved.
#[component]
pub fn ProvisioningChecklist(initial: ProvisioningView, can_retry: bool) -> impl IntoView {
    let (name, settling, deleting) = (initial.name.clone(), initial.is_settling(), initial.phase == Phase::Deleting);
    view! {
        // The live region is this stable element: the island replaces what is inside it, and only
        // when something moved, so a screen reader hears each change once.
        <div class="live-status" id=LIVE_ID aria-live="polite">
            <Checklist view=initial can_retry />
        </div>
        <p class="notice warn" role="status" id=STALLED_ID hidden>
            "No progress for ten minutes; this page stopped checking. Reload to look again."
        </p>
        <p class="error" role="alert" id=ALERT_ID hidden></p>
        <FollowChecklist name settling deleting />
    }
}

/// The DOM ids of the live status, and of its two sentences (outside it: they outlive a swap).
const LIVE_ID: &str = "live-status";
const STALLED_ID: &str = "live-status-stalled";
const ALERT_ID: &str = "live-status-alert";

/// The checklist and status card, as they stand.
#[component]
fn Checklist(view: ProvisioningView, can_retry: bool) -> impl IntoView {
    let v = view;
    let deleting = v.phase == Phase::Deleting;
    let as_of = v.as_of;
    let failed_any = v.steps.iter().any(|s| s.state == StepState::Failed);
    let name = v.name.clone();
    let row = |step: StepView| {
        let (tone, mark) = glyph(step.state);
        let duration = step.duration_ms(as_of).filter(|_| step.state != StepState::Pending).map(seconds);
        let failed = step.state == StepState::Failed;
        let id = step.step;
        view! {
            <li class=format!("step {}", step.state.as_str()) data-step=id.as_str() data-state=step.state.as_str()>
                <span class=format!("badge {tone}") aria-hidden="true">{mark}</span>
                <span class="step-name">{id.label()}</span>
                <span class="step-state">{step.state.label()}</span>
                <span class="step-time muted">{duration.unwrap_or_default()}</span>
                <span class="step-message">{step.message.clone()}</span>
                {step.action.clone().filter(|_| failed).map(|action| view! {
                    <span class="step-action">"→ " {action}</span>
                })}
                {(failed && can_retry).then(|| {
                    let form = format!("retry-{}", id.as_str());
                    let form_id = form.clone();
                    let posted = Posted::RetryProvisioning { cluster_tenant: name.clone(), step: Some(id) };
                    view! {
                        <form method="post" class="inline-form" id=form_id>
                            <PostedFields form posted />
                            <button type="submit" class="btn small retry-step">"Retry step"</button>
                        </form>
                    }
                })}
            </li>
        }
    };
    let mut steps = v.steps.clone();
    if deleting {
        // The teardown runs the other way round.
        steps.reverse();
    }
    let rows = steps.into_iter().map(row).collect_view();
    let open = v.silo_url.clone().filter(|_| v.phase == Phase::Ready && v.converged);
    let retained = v.retained.clone();
    view! {
        <section class="card checklist" aria-labelledby="provisioning-h">
            <h2 id="provisioning-h">{if deleting { "Deletion" } else { "Provisioning" }}</h2>
            <p class="muted small">
                {format!(
                    "{} backend · {}",
                    v.provisioner.clone().unwrap_or_else(|| "no".into()),
                    if v.converged { "converged on the current settings" } else { "working towards the current settings" },
                )}
            </p>
            <ol class="steps">{rows}</ol>
            {(!retained.is_empty()).then(|| view! { <p class="notice warn">"Kept: " {retained.join(" ")}</p> })}
            <div class="form-actions">
                {open.map(|url| view! {
                    <a class="btn primary open-silo" href=url target="_blank" rel="noopener">"Open silo ↗"</a>
                })}
                {(can_retry && failed_any).then(|| view! {
                    <form method="post" class="inline-form" id="retry-all">
                        <PostedFields form="retry-all" posted=Posted::RetryProvisioning { cluster_tenant: v.name.clone(), step: None } />
                        <button type="submit" class="btn retry-all">"Retry all"</button>
                    </form>
                })}
            </div>
        </section>
        // The status is drawn from the same state as the checklist, so both say the same thing.
        <section class="card status-card" aria-labelledby="status-h">
            <h2 id="status-h">"Status"</h2>
            <p><PhaseBadge phase=v.phase /></p>
            <p class="muted status-message">{v.message.clone().unwrap_or_else(|| "Waiting for the provisioner.".into())}</p>
            <dl class="props">
                <dt>"Silo"</dt>
                <dd class="mono">{v.silo_url.clone().unwrap_or_else(|| "– (not serving)".into())}</dd>
                <dt>"Bound to"</dt>
                <dd class="mono">{v.bound_namespace.clone().unwrap_or_else(|| "–".into())}</dd>
                <dt>"Generation"</dt>
                <dd>{format!(
                    "{} · observed {}",
                    v.generation,
                    v.observed_generation.map_or_else(|| "–".to_owned(), |g| g.to_string())
                )}</dd>
            </dl>
        </section>
    }
}

/// Follows the checklist while the silo settles: every second it asks the server for the
/// checklist as rendered now ([`crate::api::fleet::provisioning_update`]) and swaps it in when
/// something moved (a running step's time is as of the last change); it stops when the silo is
/// Ready or Suspended, and after ten minutes without a change it stops and says so. When a deletion finishes it sends the browser to the list.
/// A Retry (a posted form without the wasm) is sent in the background, and the checklist
/// followed again at once. Renders nothing.
#[cfg_attr(any(feature = "ssr", feature = "fleet-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "fleet-islands")), component)]
fn FollowChecklist(name: String, settling: bool, deleting: bool) -> impl IntoView {
    #[cfg(feature = "fleet-islands")]
    follow::start(name, settling, deleting);
    #[cfg(not(feature = "fleet-islands"))]
    let _ = (name, settling, deleting);
}

/// The browser side of [`FollowChecklist`].
#[cfg(feature = "fleet-islands")]
mod follow {
    use std::{cell::RefCell, rc::Rc, time::Duration};

    use leptos::{
        prelude::{document, set_interval},
        task::spawn_local,
        wasm_bindgen::JsCast,
        web_sys::HtmlFormElement,
    };

    use super::{ALERT_ID, ChecklistUpdate, LIVE_ID, STALLED_ID};
    use crate::{api::fleet::provisioning_update, error::AppError, islands::enhance::live, model::href::url_encode};

    /// How often the checklist asks while the silo settles.
    const POLL: Duration = Duration::from_secs(1);
    /// Answers without any change before the checklist stops asking.
    const PATIENCE: u32 = 600;

    struct Following {
        name: String,
        settling: bool,
        deleting: bool,
        /// The last state seen, and how many answers in a row had it.
        state: Option<u64>,
        unchanged: u32,
        /// A question is under way (answers come back in order).
        asking: bool,
    }

    pub(super) fn start(name: String, settling: bool, deleting: bool) {
        let Some(live) = document().get_element_by_id(LIVE_ID) else { return };
        let following =
            Rc::new(RefCell::new(Following { name, settling, deleting, state: None, unchanged: 0, asking: false }));
        let tick = following.clone();
        set_interval(
            move || {
                let due = {
                    let f = tick.borrow();
                    f.settling && !f.asking && f.unchanged < PATIENCE
                };
                if due {
                    refresh(tick.clone());
                }
            },
            POLL,
        );
        // A Retry, sent in the background; then the checklist is followed again.
        live::on(&live, "submit", move |ev| {
            let Some(form) = ev.target().and_then(|t| t.dyn_into::<HtmlFormElement>().ok()) else { return };
            ev.prevent_default();
            let sent = crate::islands::post_form(&form.id());
            let following = following.clone();
            spawn_local(async move {
                match sent.await {
                    Ok(_) => {
                        {
                            let mut f = following.borrow_mut();
                            f.settling = true;
                            f.unchanged = 0;
                        }
                        say(STALLED_ID, None);
                        refresh(following);
                    }
                    Err(err) => say(ALERT_ID, Some(&err.to_string())),
                }
            });
        });
    }

    /// Shows the sentence `id` (with `sentence` as its text, unless empty: then its own), or
    /// hides it.
    fn say(id: &str, sentence: Option<&str>) {
        if let Some(el) = document().get_element_by_id(id) {
            if let Some(text) = sentence.filter(|s| !s.is_empty()) {
                el.set_text_content(Some(text));
            }
            let _ = el.toggle_attribute_with_force("hidden", sentence.is_none());
        }
    }

    fn refresh(following: Rc<RefCell<Following>>) {
        let name = {
            let mut f = following.borrow_mut();
            f.asking = true;
            f.name.clone()
        };
        spawn_local(async move {
            let answer = provisioning_update(name.clone()).await;
            let mut f = following.borrow_mut();
            f.asking = false;
            match answer {
                Ok(ChecklistUpdate { html, settling, deleting, state, .. }) => {
                    let moved = f.state != Some(state);
                    f.unchanged = if moved { 0 } else { f.unchanged + 1 };
                    (f.state, f.settling, f.deleting) = (Some(state), settling, deleting);
                    if let Some(live) = document().get_element_by_id(LIVE_ID).filter(|_| moved) {
                        live.set_inner_html(&html);
                    }
                    say(ALERT_ID, None);
                    if f.unchanged >= PATIENCE {
                        say(STALLED_ID, Some(""));
                    }
                }
                // Deleted: the teardown finished.
                Err(AppError::NotFound { .. }) if f.deleting => {
                    crate::islands::navigate(&format!("/cluster-tenants?deleted={}", url_encode(&name)));
                }
                Err(err) => say(ALERT_ID, Some(&err.to_string())),
            }
        });
    }
}

/// Suspend (scale to zero, block sign-ins) or Resume: a plain posted form (works with or without
/// wasm; a refusal comes back beside it).
#[component]
pub fn SuspendButton(name: String, suspended: bool) -> impl IntoView {
    let posted = Posted::SuspendClusterTenant { cluster_tenant: name, suspended: !suspended };
    let (label, title) = if suspended {
        ("Resume", "Start the silo again and allow sign-ins")
    } else {
        ("Suspend", "Scale the silo to zero and block its sign-ins")
    };
    view! { <PostButton form="suspend-form" posted label title class="btn suspend" /> }
}
