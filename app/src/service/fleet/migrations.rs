//! The migration from the original's shared database, run from the `/migrations` page
//! (platform operators only): the same [`opencrane_migrate::run`] as `opencrane migrate-shared`,
//! started in the background by a posted form and followed on the page.
//!
//! The source's URL carries a password, so it is configuration (`OPENCRANE_SHARED_SOURCE_URL`,
//! from a Secret), never typed into or shown by a page: the page shows `host:port/database`.
//! One run at a time across replicas: the fleet-manager running one holds an advisory lock on a
//! connection of its own; a run whose process stopped is shown as interrupted, and the next run
//! resumes it (every phase is idempotent). Each start is audited (`shared_migration.run`).

use std::sync::Arc;

use opencrane_fleet_db::shared_migrations::{self, MigrationRow, RUN_LOCK, RunRow};
use opencrane_migrate::{Options, Phase, Report, Silos};
use serde_json::json;
use sqlx::Connection as _;

use crate::{
    error::AppError,
    model::fleet::migrations::{
        CustomerMigrationView, DifferenceView, MigrationsView, RunRequest, RunView, UnplacedView,
    },
    service::{OrFail as _, fleet::cluster_tenants, record},
    state::{AppState, Caller},
};

/// What a fleet-manager needs to run the migration: the source, and where each silo's database
/// is. Its `Debug` never shows the source's URL (it carries a password).
#[derive(Clone)]
pub struct MigrationRuntime {
    source_url: Arc<str>,
    label: String,
    /// The silos' databases, or why this fleet-manager cannot reach them.
    silos: Result<Arc<dyn Silos>, String>,
    /// The size of each silo's database volume, when the provisioner fixes one.
    silo_storage: Option<u64>,
}

impl std::fmt::Debug for MigrationRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MigrationRuntime").field("source", &self.label).finish_non_exhaustive()
    }
}

impl MigrationRuntime {
    /// The migration from `source_url` into the silos `silos` finds. A URL that is not a
    /// PostgreSQL URL is refused here, at start-up.
    pub fn new(source_url: &str, silos: Arc<dyn Silos>) -> Result<Self, String> {
        let label = label(source_url)?;
        Ok(Self { source_url: source_url.into(), label, silos: Ok(silos), silo_storage: None })
    }

    /// With every silo's database volume `bytes` large (the preflight checks each customer fits).
    #[must_use]
    pub fn with_silo_storage(mut self, bytes: Option<u64>) -> Self {
        self.silo_storage = bytes;
        self
    }

    /// A source this fleet-manager knows but cannot migrate from (it does not reach the silos'
    /// databases): the page says `why`.
    pub fn unavailable(source_url: &str, why: impl Into<String>) -> Result<Self, String> {
        let label = label(source_url)?;
        Ok(Self { source_url: source_url.into(), label, silos: Err(why.into()), silo_storage: None })
    }
}

/// No silo database is reachable from here (a preflight needs none).
struct NoSilos;

#[async_trait::async_trait]
impl Silos for NoSilos {
    async fn reach(&self, _customer: &str) -> Result<Option<opencrane_migrate::Reach>, opencrane_migrate::Error> {
        Ok(None)
    }

    fn credentials_key(&self, _customer: &str) -> Option<opencrane_portal::seal::SecretBox> {
        None
    }
}

fn label(source_url: &str) -> Result<String, String> {
    let options: sqlx::postgres::PgConnectOptions = source_url.parse().map_err(|_| {
        "OPENCRANE_SHARED_SOURCE_URL is not a PostgreSQL URL (postgres://user:password@host:port/database)".to_owned()
    })?;
    Ok(opencrane_migrate::source::label_of(&options))
}

/// Refuses anybody but a platform operator (recorded as denied).
async fn operator_only(state: &AppState, caller: &Caller, action: &str) -> Result<(), AppError> {
    let message = "Only platform operators may migrate from the shared installation.";
    cluster_tenants::require_operator(state, caller, action, "shared-migration", message).await
}

/// The page: the source, the run under way or the last one, every customer's phase.
pub async fn overview(state: &AppState, caller: &Caller) -> Result<MigrationsView, AppError> {
    operator_only(state, caller, "shared_migration.read").await?;
    let runtime = state.fleet()?.migration.clone();
    let rows = shared_migrations::list(&state.pool).await.or_fail(caller)?;
    let latest = shared_migrations::latest_run(&state.pool, false, false).await.or_fail(caller)?;
    let held = shared_migrations::run_lock_held(&state.pool).await.or_fail(caller)?;
    let report_of = |run: Option<&RunRow>| -> Option<Report> {
        run.and_then(|r| r.report.clone()).and_then(|r| serde_json::from_value(r).ok())
    };
    // The plan: the latest run over every customer; a later run for some customers has the
    // newer word on those (the latest run itself, when it got as far as a report).
    let whole = shared_migrations::latest_run(&state.pool, true, true).await.or_fail(caller)?;
    let recent = match latest.as_ref().filter(|r| r.report.is_some()) {
        Some(run) => Some(run.clone()),
        None => shared_migrations::latest_run(&state.pool, true, false).await.or_fail(caller)?,
    };
    let (report, recent) = (report_of(whole.as_ref()), report_of(recent.as_ref()));
    let mut view = MigrationsView {
        configured: runtime.as_ref().is_some_and(|r| r.silos.is_ok()),
        unavailable: match &runtime {
            None => Some(
                "No source is configured: set OPENCRANE_SHARED_SOURCE_URL on the fleet-manager (from a Secret; the chart's migration.sourceSecret)."
                    .to_owned(),
            ),
            Some(r) => r.silos.as_ref().err().cloned(),
        },
        source: runtime.as_ref().map(|r| r.label.clone()),
        run: latest.map(|run| run_view(run, held)),
        ..MigrationsView::default()
    };
    if let Some(report) = &report {
        view.unplaced = report
            .unplaced
            .iter()
            .map(|u| UnplacedView { table: u.table.clone(), row: u.row.clone(), reason: u.reason.clone() })
            .collect();
        view.defaults.clone_from(&report.defaults);
        view.notes.clone_from(&report.notes);
    }
    view.customers = customers(report.as_ref(), recent.as_ref(), &rows);
    Ok(view)
}

fn run_view(run: RunRow, lock_held: bool) -> RunView {
    let state = match (&run.finished_at, &run.error) {
        (None, _) if lock_held => "running",
        (None, _) => "interrupted",
        (Some(_), Some(_)) => "failed",
        (Some(_), None) => "finished",
    };
    RunView {
        id: run.id,
        state: state.to_owned(),
        until: run.until,
        customers: run.customers,
        started_by: run.started_by,
        started_at: run.started_at,
        finished_at: run.finished_at,
        progress: run.progress,
        error: run.error,
    }
}

/// The plan's customers with their stored phase (a stored one the plan lacks too); what the
/// `recent` report says of a customer wins over the plan's older word.
fn customers(report: Option<&Report>, recent: Option<&Report>, rows: &[MigrationRow]) -> Vec<CustomerMigrationView> {
    let named = |r: Option<&Report>| r.map(|r| r.customers.iter().map(|c| c.name.clone()).collect::<Vec<_>>());
    let mut out: Vec<CustomerMigrationView> = named(report)
        .unwrap_or_default()
        .into_iter()
        .chain(named(recent).unwrap_or_default())
        .chain(rows.iter().map(|r| r.cluster_tenant.clone()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|name| {
            let find = |r: Option<&Report>| r.and_then(|r| r.customers.iter().find(|c| c.name == name).cloned());
            let planned = find(recent).or_else(|| find(report));
            let planned = planned.as_ref();
            let stored = rows.iter().find(|r| r.cluster_tenant == name);
            let checks: Vec<opencrane_migrate::verify::TableCheck> =
                stored.and_then(|s| serde_json::from_value(s.checks.clone()).ok()).unwrap_or_default();
            let (agree, differ): (Vec<_>, Vec<_>) = checks.into_iter().partition(|c| c.agrees());
            CustomerMigrationView {
                phase: stored.map_or_else(|| "planned".to_owned(), |s| s.phase.clone()),
                problem: stored.and_then(|s| s.problem.clone()).or_else(|| planned.and_then(|p| p.problem.clone())),
                rows: planned.map(|p| p.rows.values().map(|n| *n as u64).sum()),
                memberships: planned.map(|p| p.memberships as u64),
                differences: differ
                    .into_iter()
                    .map(|c| DifferenceView {
                        table: c.table,
                        source_rows: c.source_rows as u64,
                        target_rows: c.target_rows as u64,
                        missing: c.missing,
                        unexpected: c.unexpected,
                    })
                    .collect(),
                agreeing_tables: agree.len(),
                changed_since_copy: planned.map(|p| p.changed_since_copy.clone()).unwrap_or_default(),
                updated_at: stored.map(|s| s.updated_at),
                name,
            }
        })
        .collect();
    // What needs the operator first: a problem, then anything not yet cut over.
    out.sort_by_key(|c| (c.problem.is_none(), c.done()));
    out
}

/// Starts a run up to `request.until` (for one customer, or all) in the background; returns
/// its id. Refused while another run is under way, and when this fleet-manager cannot run it.
pub async fn start(state: &AppState, caller: &Caller, request: RunRequest) -> Result<i64, AppError> {
    operator_only(state, caller, "shared_migration.run").await?;
    let until = Phase::parse(request.until.trim())
        .ok_or_else(|| AppError::field("until", "Choose the phase to run up to (preflight … cut-over)."))?;
    let customer = request.customer.map(|c| c.trim().to_owned()).filter(|c| !c.is_empty());
    let runtime = state.fleet()?.migration.clone();
    let Some(runtime) = runtime else {
        return Err(AppError::Unprocessable {
            code: "MIGRATION_NOT_CONFIGURED".into(),
            message: "No source is configured: set OPENCRANE_SHARED_SOURCE_URL on the fleet-manager.".into(),
            field: None,
        });
    };
    // A preflight only reads the source: it runs wherever the source is reachable.
    let silos: Arc<dyn Silos> = match &runtime.silos {
        Ok(silos) => silos.clone(),
        Err(_) if until == Phase::Preflight => Arc::new(NoSilos),
        Err(why) => {
            return Err(AppError::Unprocessable {
                code: "MIGRATION_UNAVAILABLE".into(),
                message: why.clone(),
                field: Some("until".into()),
            });
        }
    };
    // The lock is held by a connection of its own for the whole run; it goes when the run ends
    // or this process does.
    let mut lock = state.pool.acquire().await.or_fail(caller)?.detach();
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(RUN_LOCK)
        .fetch_one(&mut lock)
        .await
        .or_fail(caller)?;
    if !locked {
        let _ = lock.close().await;
        return Err(AppError::Conflict {
            code: "MIGRATION_RUNNING".into(),
            message: "A migration run is under way; wait for it to finish (this page follows it).".into(),
            field: None,
        });
    }
    let customers: Vec<String> = customer.iter().cloned().collect();
    let started = async {
        let mut tx = state.pool.begin().await.or_fail(caller)?;
        let id =
            shared_migrations::start_run(&mut *tx, until.as_str(), &customers, caller.actor()).await.or_fail(caller)?;
        let meta = json!({
            "runId": id, "until": until.as_str(), "customers": customers, "delta": request.delta, "source": runtime.label,
        });
        record(&mut *tx, caller, "shared_migration.run", "shared-migration", "success", meta).await?;
        tx.commit().await.or_fail(caller)?;
        Ok::<_, AppError>(id)
    }
    .await;
    let id = match started {
        Ok(id) => id,
        Err(e) => {
            let _ = lock.close().await;
            return Err(e);
        }
    };
    let pool = state.pool.clone();
    let options =
        Options { customers, until, delta: request.delta, silo_storage: runtime.silo_storage, ..Options::default() };
    tokio::spawn(async move {
        let (lines, mut next) = tokio::sync::mpsc::unbounded_channel::<String>();
        let writer_pool = pool.clone();
        let writer = tokio::spawn(async move {
            while let Some(line) = next.recv().await {
                if let Err(e) = shared_migrations::run_progress(&writer_pool, id, &line).await {
                    tracing::warn!(run = id, error = %e, "could not record the migration's progress");
                }
            }
        });
        let progress = move |e: opencrane_migrate::Event| {
            let _ = lines.send(format!("{}: {}", e.phase.as_str(), e.message));
        };
        let outcome =
            opencrane_migrate::run::run(&runtime.source_url, &pool, silos.as_ref(), &options, &progress).await;
        drop(progress);
        let _ = writer.await;
        let (report, error) = match outcome {
            Ok(report) => (serde_json::to_value(&report).ok(), None),
            Err(e) => (None, Some(e.to_string())),
        };
        if let Some(error) = &error {
            tracing::warn!(run = id, error = %error, "the shared-database migration stopped");
        }
        if let Err(e) = shared_migrations::finish_run(&pool, id, report.as_ref(), error.as_deref()).await {
            tracing::error!(run = id, error = %e, "could not record the end of a migration run");
        }
        let _ = sqlx::query("SELECT pg_advisory_unlock($1)").bind(RUN_LOCK).execute(&mut lock).await;
        let _ = lock.close().await;
    });
    Ok(id)
}

/// The relayed migration's side of the internal API is its silo's alone: its own credential,
/// for its own customer (another customer's answers exactly like a missing one). Not even a
/// platform operator's token: a parcel may carry a legacy plaintext provider key.
async fn own_silo_only(state: &AppState, caller: &Caller, name: &str) -> Result<(), AppError> {
    match caller.principal.as_ref().and_then(|p| p.silo.as_deref()) {
        Some(silo) if silo == name => cluster_tenants::for_silo(state, caller, name, "migration").await.map(drop),
        Some(_) => Err(cluster_tenants::not_found(name)),
        None => Err(AppError::Forbidden {
            code: "FORBIDDEN".into(),
            message: "Only the customer's silo (with its own credential) takes its migrated rows.".into(),
        }),
    }
}

/// The delivery staged for `name`'s silo that it has not reported yet
/// (`GET /api/internal/cluster-tenants/{name}/import`; `None`: 204).
pub async fn pending_import(
    state: &AppState,
    caller: &Caller,
    name: &str,
) -> Result<Option<opencrane_migrate::relay::Delivery>, AppError> {
    own_silo_only(state, caller, name).await?;
    let staged = shared_migrations::pending_delivery(&state.pool, name).await.or_fail(caller)?;
    // A manifest this version cannot read is a failure to see, not nothing to take.
    staged.map(serde_json::from_value).transpose().map_err(|e| crate::service::internal(caller, &e))
}

/// Parcel `seq` of `name`'s delivery `generation`
/// (`GET /api/internal/cluster-tenants/{name}/import/{generation}/{seq}`), as stored.
pub async fn import_parcel(
    state: &AppState,
    caller: &Caller,
    name: &str,
    generation: &str,
    seq: u32,
) -> Result<serde_json::Value, AppError> {
    own_silo_only(state, caller, name).await?;
    let seq = i32::try_from(seq).unwrap_or(i32::MAX);
    shared_migrations::parcel(&state.pool, name, generation, seq).await.or_fail(caller)?.ok_or_else(|| {
        AppError::NotFound {
            code: "PARCEL_NOT_FOUND".into(),
            message: format!("No parcel {seq} of delivery {generation} is staged (it was replaced or reported)."),
        }
    })
}

/// Records `name`'s silo's report on delivery `generation` and drops its parcels
/// (`PUT /api/internal/cluster-tenants/{name}/import/{generation}`); 409 when that is not the
/// delivery staged now.
pub async fn import_reported(
    state: &AppState,
    caller: &Caller,
    name: &str,
    generation: &str,
    digest: opencrane_migrate::relay::Digest,
) -> Result<(), AppError> {
    own_silo_only(state, caller, name).await?;
    if digest.generation != generation {
        return Err(AppError::field("generation", "The report names another delivery than its path."));
    }
    let value = serde_json::to_value(&digest).map_err(|e| crate::service::internal(caller, &e))?;
    let recorded = shared_migrations::record_delivered(&state.pool, name, generation, &value).await.or_fail(caller)?;
    if !recorded {
        return Err(AppError::Conflict {
            code: "DELIVERY_REPLACED".into(),
            message: format!("Delivery {generation} is not the one staged now; take the current one."),
            field: None,
        });
    }
    Ok(())
}
