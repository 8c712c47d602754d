//! `/migrations` (platform operators): the migration from the original's shared database, run
//! by the same code as `opencrane migrate-shared` — where the source is (never its password),
//! the run under way (the page reloads itself while one is) or the last one, every customer's
//! phase with what stopped it and the rows its verification found different, and the rows the
//! plan cannot place. Running, resuming and retrying are plain posted forms, so the page works
//! the same with and without the wasm bundle.

use leptos::prelude::*;
use leptos_meta::{Meta, Title};
use leptos_router::hooks::use_query_map;

use crate::{
    api::fleet::get_migrations,
    components::{
        feedback::{Badge, ErrorView, Notice},
        form::{Field, PostButton, described_by},
        format::timestamp,
        layout::PageHeader,
        table::{DataTable, EmptyState},
    },
    forms::{self, Posted, PostedFields},
    model::fleet::migrations::{CustomerMigrationView, MigrationsView, PHASES, RunView, UnplacedView},
};

/// The run form's DOM id.
const RUN_FORM: &str = "migration-run";

/// The page.
#[component]
pub fn MigrationsPage() -> impl IntoView {
    let started = use_query_map().with_untracked(|q| q.get("started"));
    view! {
        <Title text="Migration" />
        <PageHeader
            title="Migration from the shared installation"
            description="Moves each customer of the original's shared database into its own silo: preflight, provision, copy, verify, cut over. The source is only read, never changed."
        />
        {started.map(|id| view! { <Notice tone="ok">{format!("Run {id} started; this page follows it.")}</Notice> })}
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {Suspend::new(async move {
                match get_migrations().await {
                    Ok(view) => view! { <Migrations view /> }.into_any(),
                    Err(error) => view! { <ErrorView error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Migrations(view: MigrationsView) -> impl IntoView {
    let running = view.run.as_ref().is_some_and(|r| r.state == "running");
    let names: Vec<String> = view.customers.iter().map(|c| c.name.clone()).collect();
    let can_run = view.configured && !running;
    view! {
        {running.then(|| view! { <Meta http_equiv="refresh" content="3" /> })}
        <section class="card" aria-labelledby="migration-source">
            <h2 id="migration-source">"Source"</h2>
            <dl class="props">
                <dt>"Shared database"</dt>
                <dd class="mono" id="migration-source-label">{view.source.clone().unwrap_or_else(|| "–".into())}</dd>
            </dl>
            {view.unavailable.clone().map(|why| view! { <p class="muted" id="migration-unavailable">{why}</p> })}
        </section>
        {view.run.clone().map(|run| view! { <RunCard run /> })}
        {view.source.is_some().then(|| view! { <RunForm names running preflight_only=!view.configured /> })}
        <Customers customers=view.customers.clone() can_run />
        <Unplaced rows=view.unplaced.clone() />
        {(!view.defaults.is_empty() || !view.notes.is_empty()).then(|| {
            let items = view.defaults.iter().chain(view.notes.iter()).map(|n| view! { <li>{n.clone()}</li> }).collect_view();
            view! {
                <section class="card" aria-labelledby="migration-notes">
                    <h2 id="migration-notes">"Defaults and notes"</h2>
                    <ul>{items}</ul>
                </section>
            }
        })}
    }
}

fn phase_label(phase: &str) -> &'static str {
    match phase {
        "preflight" => "Preflight",
        "provision" | "provisioned" => "Provisioned",
        "copy" | "copied" => "Copied",
        "verify" | "verified" => "Verified",
        "cut-over" => "Cut over",
        _ => "Planned",
    }
}

#[component]
fn RunCard(run: RunView) -> impl IntoView {
    let (text, tone) = match run.state.as_str() {
        "running" => ("Running", "info"),
        "finished" => ("Finished", "ok"),
        "failed" => ("Stopped", "bad"),
        _ => ("Interrupted", "warn"),
    };
    let scope = if run.customers.is_empty() { "every customer".to_owned() } else { run.customers.join(", ") };
    let interrupted = (run.state == "interrupted").then(|| {
        view! { <p class="muted">"The fleet-manager running it stopped. Run again: every phase resumes where it stopped, without duplicates."</p> }
    });
    view! {
        <section class="card" aria-labelledby="migration-run-state" id="migration-run" data-state=run.state.clone()>
            <h2 id="migration-run-state">{format!("Run {}", run.id)}" "<Badge text=text tone=tone /></h2>
            <dl class="props">
                <dt>"Up to"</dt>
                <dd>{phase_label(&run.until)}" ("{scope}")"</dd>
                <dt>"Started"</dt>
                <dd>{timestamp(run.started_at)}" by "<span class="mono">{run.started_by.clone()}</span></dd>
                <dt>"Finished"</dt>
                <dd>{run.finished_at.map(timestamp).unwrap_or_else(|| "–".into())}</dd>
                <dt>"Last step"</dt>
                <dd id="migration-progress">{run.progress.clone().unwrap_or_else(|| "–".into())}</dd>
            </dl>
            {run.error.clone().map(|e| view! { <Notice tone="bad">{e}</Notice> })}
            {interrupted}
        </section>
    }
}

/// Runs the migration up to a phase, for every customer or one: a plain post.
#[component]
fn RunForm(names: Vec<String>, running: bool, preflight_only: bool) -> impl IntoView {
    let echo = forms::echo(RUN_FORM);
    let value = |key: &str| echo.as_ref().and_then(|e| e.value(key)).unwrap_or_default();
    let until_error = echo.as_ref().and_then(|e| e.errors.get("until").map(str::to_owned));
    let message = echo.as_ref().and_then(|e| e.message.clone()).map(|m| view! { <Notice tone="bad">{m}</Notice> });
    let chosen = Some(value("until")).filter(|v| !v.is_empty()).unwrap_or_else(|| "preflight".into());
    let phases = PHASES
        .iter()
        .take(if preflight_only { 1 } else { PHASES.len() })
        .map(|(key, label)| view! { <option value=*key selected=chosen == *key>{*label}</option> })
        .collect_view();
    let customer = value("customer");
    let customers = names
        .into_iter()
        .map(|n| view! { <option value=n.clone() selected=customer == n>{n.clone()}</option> })
        .collect_view();
    let until_describe = described_by("migration-until", true, until_error.is_some());
    view! {
        <section class="card" aria-labelledby="migration-run-form">
            <h2 id="migration-run-form">"Run"</h2>
            <form method="post" id=RUN_FORM class="form" novalidate>
                <PostedFields form=RUN_FORM posted=Posted::MigrationRun />
                {message}
                <Field id="migration-until" label="Up to" hint="Start with a preflight: it reads the source and shows the plan without changing anything. Each later phase includes the ones before it." required=true error=Signal::derive(move || until_error.clone())>
                    <select id="migration-until" name="until" aria-describedby=until_describe>{phases}</select>
                </Field>
                <Field id="migration-customer" label="Customers" error=Signal::derive(|| None::<String>)>
                    <select id="migration-customer" name="customer">
                        <option value="" selected=customer.is_empty()>"Every customer"</option>
                        {customers}
                    </select>
                </Field>
                <div class="form-actions">
                    <button type="submit" class="btn primary" disabled=running>"Run"</button>
                </div>
            </form>
        </section>
    }
}

#[component]
fn Customers(customers: Vec<CustomerMigrationView>, can_run: bool) -> impl IntoView {
    if customers.is_empty() {
        return view! {
            <EmptyState title="No plan yet" body="Run a preflight: it lists every customer of the source with its rows, and the rows that cannot be placed." />
        }
        .into_any();
    }
    let differences = customers
        .iter()
        .filter(|c| !c.differences.is_empty() || !c.changed_since_copy.is_empty())
        .map(|c| view! { <Differences customer=c.clone() can_run /> })
        .collect_view();
    let rows = customers
        .into_iter()
        .map(|c| {
            let tone = match (&c.problem, c.done()) {
                (Some(_), _) => "bad",
                (None, true) => "ok",
                (None, false) => "info",
            };
            let verification = if !c.differences.is_empty() {
                format!("{} differ", c.differences.iter().map(|d| d.table.as_str()).collect::<Vec<_>>().join(", "))
            } else if c.agreeing_tables > 0 {
                format!("{} tables agree", c.agreeing_tables)
            } else {
                "–".to_owned()
            };
            let action = (can_run && !c.done()).then(|| {
                let form = format!("migration-resume-{}", forms::dom_id(&c.name));
                let (label, aria) = if c.problem.is_some() {
                    ("Retry", format!("Retry the migration of {}", c.name))
                } else {
                    ("Resume", format!("Resume the migration of {} up to cut-over", c.name))
                };
                let fields = vec![("until", "cut-over".to_owned()), ("customer", c.name.clone())];
                view! { <PostButton form posted=Posted::MigrationRun label aria fields /> }
            });
            let href = format!("/cluster-tenants/{}", crate::model::href::url_encode(&c.name));
            view! {
                <tr data-customer=c.name.clone() data-phase=c.phase.clone()>
                    <td><a href=href class="mono">{c.name.clone()}</a></td>
                    <td><Badge text=phase_label(&c.phase) tone=tone /></td>
                    <td>{c.rows.map(|n| n.to_string()).unwrap_or_else(|| "–".into())}</td>
                    <td>{c.memberships.map(|n| n.to_string()).unwrap_or_else(|| "–".into())}</td>
                    <td>{verification}</td>
                    <td class="small">{c.problem.clone().unwrap_or_else(|| "–".into())}</td>
                    <td>{action}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card" aria-labelledby="migration-customers">
            <h2 id="migration-customers">"Customers"</h2>
            <DataTable headers=&["Customer", "Phase", "Rows", "Members", "Verification", "Problem", ""]>{rows}</DataTable>
        </section>
        {differences}
    }
    .into_any()
}

/// What the last verification found different, and what changed in the source since the copy;
/// before cut-over, *Copy the changes* (the delta copy, then a verification).
#[component]
fn Differences(customer: CustomerMigrationView, can_run: bool) -> impl IntoView {
    let copied = matches!(customer.phase.as_str(), "copied" | "verified");
    let delta = (can_run && copied).then(|| {
        let form = format!("migration-delta-{}", forms::dom_id(&customer.name));
        let aria = format!("Copy the changes of {} again and verify", customer.name);
        let fields = vec![("until", "verify".to_owned()), ("customer", customer.name.clone()), ("delta", "on".to_owned())];
        view! {
            <p class="muted">"After stopping writes to the original: copies again, in one transaction, the tables that differ from the source (and the tables that point at them), then verifies."</p>
            <PostButton form posted=Posted::MigrationRun label="Copy the changes" aria fields class="btn" />
        }
    });
    let tables = customer
        .differences
        .into_iter()
        .map(|d| {
            let lines = |rows: Vec<String>, sign: &'static str| {
                rows.into_iter()
                    .map(move |r| view! { <li class="mono small">{format!("{sign} {r}")}</li> })
                    .collect_view()
            };
            view! {
                <h3>{format!("{}: {} rows in the source, {} in the silo", d.table, d.source_rows, d.target_rows)}</h3>
                <ul>{lines(d.missing, "only in the source:")}{lines(d.unexpected, "only in the silo:")}</ul>
            }
        })
        .collect_view();
    let changed = (!customer.changed_since_copy.is_empty()).then(|| {
        let items = customer.changed_since_copy.iter().map(|c| view! { <li>{c.clone()}</li> }).collect_view();
        view! {
            <p>"The source changed after this customer's copy began. Stop writes to the original (a write freeze) before cutting over; these tables differ from when the copy began:"</p>
            <ul>{items}</ul>
        }
    });
    view! {
        <section class="card" aria-label=format!("Differences of {}", customer.name)>
            <h2>{format!("{}: differences", customer.name)}</h2>
            {tables}
            {changed}
            {delta}
        </section>
    }
}

#[component]
fn Unplaced(rows: Vec<UnplacedView>) -> impl IntoView {
    if rows.is_empty() {
        return ().into_any();
    }
    let count = rows.len();
    let rows = rows
        .into_iter()
        .map(|u| {
            view! {
                <tr>
                    <td class="mono">{u.table}</td>
                    <td class="mono">{u.row}</td>
                    <td>{u.reason}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card" aria-labelledby="migration-unplaced">
            <h2 id="migration-unplaced">{format!("Rows that cannot be placed ({count})")}</h2>
            <p class="muted">"They stay in the source and are not copied anywhere."</p>
            <DataTable headers=&["Table", "Row", "Why"]>{rows}</DataTable>
        </section>
    }
    .into_any()
}
