//! The live provisioning checklist on a customer's page (its Retry buttons are posted forms too),
//! and the Suspend/Resume button (a plain posted form).
//!
//! The checklist is rendered on the server with the current state (so it is complete without
//! JavaScript) and, once hydrated, polls the checklist server function every second while the
//! silo is settling; it stops polling when the silo is Ready or Suspended, and after ten minutes
//! of no change it stops and says so (no endless spinner). When a deletion finishes, it sends the
//! browser to the list.

use std::time::Duration;

use leptos::{prelude::*, task::spawn_local};

use crate::{
    api::fleet::get_provisioning,
    components::{feedback::PhaseBadge, form::PostButton},
    error::AppError,
    forms::{Posted, PostedFields},
    model::{
        fleet::cluster_tenant::Phase,
        fleet::provisioning::{ProvisioningView, StepState, StepView},
        href::url_encode,
    },
};

/// How often the checklist asks while the silo settles.
const POLL: Duration = Duration::from_secs(1);
/// Polls without any change before the checklist stops asking.
const PATIENCE: u32 = 600;

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

/// The checklist; `can_retry` shows the Retry buttons (owners, admins and operators).
#[cfg_attr(any(feature = "ssr", feature = "fleet-islands"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "fleet-islands")), component)]
pub fn ProvisioningChecklist(initial: ProvisioningView, can_retry: bool) -> impl IntoView {
    let view_state = RwSignal::new(initial);
    let error = RwSignal::new(None::<String>);
    let stalled = RwSignal::new(false);
    let busy = RwSignal::new(false);
    let unchanged = StoredValue::new(0u32);

    let refresh = move || {
        let name = view_state.with_untracked(|v| v.name.clone());
        spawn_local(async move {
            match get_provisioning(name.clone()).await {
                Ok(next) => {
                    let same = view_state.with_untracked(|v| v.steps == next.steps && v.phase == next.phase);
                    unchanged.update_value(|n| *n = if same { *n + 1 } else { 0 });
                    view_state.set(next);
                    error.set(None);
                }
                // Deleted: the teardown finished.
                Err(AppError::NotFound { .. }) if view_state.with_untracked(|v| v.phase == Phase::Deleting) => {
                    crate::islands::navigate(&format!("/cluster-tenants?deleted={}", url_encode(&name)));
                }
                Err(err) => error.set(Some(err.to_string())),
            }
        });
    };
    Effect::new(move |_| {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                let settling = view_state.with_untracked(ProvisioningView::is_settling);
                if !settling || stalled.get_untracked() {
                    return;
                }
                if unchanged.get_value() >= PATIENCE {
                    stalled.set(true);
                    return;
                }
                refresh();
            },
            POLL,
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    // Retry is a posted form (it works before the wasm); once hydrated, the island asks itself
    // and goes on following the checklist.
    let retry = move |ev: leptos::ev::SubmitEvent, form: &str| {
        ev.prevent_default();
        busy.set(true);
        let sent = crate::islands::post_form(form);
        spawn_local(async move {
            match sent.await {
                Ok(_) => {
                    stalled.set(false);
                    unchanged.set_value(0);
                    refresh();
                }
                Err(err) => error.set(Some(err.to_string())),
            }
            busy.set(false);
        });
    };

    let row = move |step: StepView, as_of| {
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
                    let name = view_state.with_untracked(|v| v.name.clone());
                    let form = format!("retry-{}", id.as_str());
                    let form_id = form.clone();
                    let submitted = form.clone();
                    view! {
                        <form method="post" class="inline-form" id=form_id on:submit=move |ev| retry(ev, &submitted)>
                            <PostedFields form posted=Posted::RetryProvisioning { cluster_tenant: name, step: Some(id) } />
                            <button type="submit" class="btn small retry-step" disabled=move || busy.get()>"Retry step"</button>
                        </form>
                    }
                })}
            </li>
        }
    };

    // The status is drawn from the same poll as the checklist, so both say the same thing.
    let status = view! {
        <section class="card status-card" aria-labelledby="status-h">
            <h2 id="status-h">"Status"</h2>
            <p>{move || view! { <PhaseBadge phase=view_state.with(|v| v.phase) /> }}</p>
            <p class="muted status-message">
                {move || view_state.with(|v| v.message.clone().unwrap_or_else(|| "Waiting for the provisioner.".into()))}
            </p>
            <dl class="props">
                <dt>"Silo"</dt>
                <dd class="mono">{move || view_state.with(|v| v.silo_url.clone().unwrap_or_else(|| "– (not serving)".into()))}</dd>
                <dt>"Bound to"</dt>
                <dd class="mono">{move || view_state.with(|v| v.bound_namespace.clone().unwrap_or_else(|| "–".into()))}</dd>
                <dt>"Generation"</dt>
                <dd>{move || view_state.with(|v| format!(
                    "{} · observed {}",
                    v.generation,
                    v.observed_generation.map_or_else(|| "–".to_owned(), |g| g.to_string())
                ))}</dd>
            </dl>
        </section>
    };
    view! {
        <div class="live-status">
        <section class="card checklist" aria-labelledby="provisioning-h" aria-live="polite">
            <h2 id="provisioning-h">
                {move || if view_state.with(|v| v.phase == Phase::Deleting) { "Deletion" } else { "Provisioning" }}
            </h2>
            <p class="muted small">
                {move || view_state.with(|v| format!(
                    "{} backend · {}",
                    v.provisioner.clone().unwrap_or_else(|| "no".into()),
                    if v.converged { "converged on the current settings" } else { "working towards the current settings" },
                ))}
            </p>
            <ol class="steps">
                {move || {
                    let v = view_state.get();
                    let as_of = v.as_of;
                    let mut steps = v.steps;
                    if v.phase == Phase::Deleting {
                        // The teardown runs the other way round.
                        steps.reverse();
                    }
                    steps.into_iter().map(|s| row(s, as_of)).collect_view()
                }}
            </ol>
            {move || {
                let retained = view_state.with(|v| v.retained.clone());
                (!retained.is_empty()).then(|| view! {
                    <p class="notice warn">"Kept: " {retained.join(" ")}</p>
                })
            }}
            <div class="form-actions">
                {move || {
                    view_state
                        .with(|v| v.silo_url.clone().filter(|_| v.phase == Phase::Ready && v.converged))
                        .map(|url| view! {
                            <a class="btn primary open-silo" href=url target="_blank" rel="noopener">"Open silo ↗"</a>
                        })
                }}
                {move || (can_retry && view_state.with(|v| v.steps.iter().any(|s| s.state == StepState::Failed)))
                    .then(|| {
                        let name = view_state.with_untracked(|v| v.name.clone());
                        view! {
                            <form method="post" class="inline-form" id="retry-all" on:submit=move |ev| retry(ev, "retry-all")>
                                <PostedFields form="retry-all" posted=Posted::RetryProvisioning { cluster_tenant: name, step: None } />
                                <button type="submit" class="btn retry-all" disabled=move || busy.get()>"Retry all"</button>
                            </form>
                        }
                    })}
            </div>
            {move || stalled.get().then(|| view! {
                <p class="notice warn" role="status">
                    "No progress for ten minutes; this page stopped checking. Reload to look again."
                </p>
            })}
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
        </section>
        {status}
        </div>
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
