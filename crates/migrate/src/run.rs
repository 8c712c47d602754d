//! The phases, in order, each idempotent: what a phase finds done it skips, so a run after a
//! crash at any point resumes where the last one stopped, and a run after a finished one
//! changes nothing.
//!
//! 1. **Preflight**: read the source read-only, map it, check the target can take every customer
//!    ([`capacity`]: its name and vanity domain are free in the fleet, or already this
//!    migration's; its rows fit its silo database; its members fit its seat cap, else a note);
//!    changes nothing. A customer the target cannot take is not created.
//! 2. **Provision**: create each customer in the fleet (the provisioner gives it its silo) and
//!    wait, up to [`Options::wait`], for its silo database; one not ready yet is left for the
//!    next run.
//! 3. **Copy**: per customer, one transaction into its own silo database only — directly, or on
//!    a cluster through the silo's own manager ([`relay`]).
//! 4. **Verify**: per table, counts and checksums of source against silo; any difference stops
//!    that customer (not the others) with the rows that differ.
//! 5. **Cut over**: record the customer as migrated. The original's rows are never modified or
//!    deleted.
//!
//! A write freeze is the operator's to declare: the report lists the source tables whose rows
//! changed after a customer's copy began (counts and newest change, compared with what they were),
//! and a run with [`Options::delta`] copies again, before cut-over, the silo tables that then
//! differ from the source (with the tables whose rows point at theirs), in one transaction.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use futures_util::StreamExt as _;
use opencrane_fleet_db::shared_migrations;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;

use crate::{
    Error, Reach, Silos, fleet,
    map::{self, Unplaced},
    relay, silo,
    source::{Source, Watermark},
    verify::{self, TableCheck},
};

/// Customers migrated at once.
pub const CUSTOMERS_AT_ONCE: usize = 4;

/// A phase of the migration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Read, map and check; change nothing.
    Preflight,
    /// Create the customers and wait for their silo databases.
    Provision,
    /// Copy each customer's rows.
    Copy,
    /// Compare source and silo.
    Verify,
    /// Record the customers as migrated.
    CutOver,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Self; 5] = [Self::Preflight, Self::Provision, Self::Copy, Self::Verify, Self::CutOver];

    /// Its name on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Preflight => "preflight",
            Self::Provision => "provision",
            Self::Copy => "copy",
            Self::Verify => "verify",
            Self::CutOver => "cut-over",
        }
    }

    /// The phase named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == text)
    }

    /// The phase a customer's stored state has completed.
    fn done_by(state: &str) -> Option<Self> {
        match state {
            "provisioned" => Some(Self::Provision),
            "copied" => Some(Self::Copy),
            "verified" => Some(Self::Verify),
            "cut-over" => Some(Self::CutOver),
            _ => None,
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Only these customers (all when empty).
    pub customers: Vec<String>,
    /// The last phase to run.
    pub until: Phase,
    /// How long to wait for a customer's silo database before leaving it for the next run.
    pub wait: Duration,
    /// The delta copy: for a customer copied before and not yet cut over, copy again the tables
    /// whose rows differ from the source now (after the write freeze).
    pub delta: bool,
    /// The size of each silo's database volume, when the provisioner fixes one (bytes): a
    /// customer whose rows would need more than [`FILL_LIMIT_PERCENT`] of it is stopped at
    /// preflight.
    pub silo_storage: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            customers: Vec::new(),
            until: Phase::CutOver,
            wait: Duration::from_secs(300),
            delta: false,
            silo_storage: None,
        }
    }
}

/// How much of its silo's database volume a customer's migrated rows may need.
pub const FILL_LIMIT_PERCENT: u64 = 80;

/// On-disk bytes per byte of a row's canonical JSON, for the estimate (row headers, indexes,
/// the write-ahead log's share, rounded up).
pub const DISK_PER_ROW_BYTE: u64 = 3;

/// A customer's migrated rows' estimated size on disk.
pub fn estimated_bytes(customer: &map::CustomerPlan) -> u64 {
    let json: usize = customer.silo.values().flatten().map(|row| row.to_string().len()).sum();
    u64::try_from(json).unwrap_or(u64::MAX).saturating_mul(DISK_PER_ROW_BYTE)
}

/// The target's capacity for `customer`, pure: why its silo cannot take it (a blocking
/// problem), and what the operator should know (seats beyond its cap).
/// `needed` is its [`estimated_bytes`].
pub fn capacity(
    customer: &map::CustomerPlan,
    needed: u64,
    silo_storage: Option<u64>,
) -> (Option<String>, Option<String>) {
    let problem = silo_storage.filter(|size| needed.saturating_mul(100) > size.saturating_mul(FILL_LIMIT_PERCENT)).map(
        |size| {
            format!(
                "its rows need about {} on disk, more than {FILL_LIMIT_PERCENT}% of its silo database's {}: raise the silo database size first (nothing was created)",
                bytes(needed),
                bytes(size)
            )
        },
    );
    let active = customer.memberships.iter().filter(|m| m.status == "active").count();
    let seats = customer.fleet.seat_cap.and_then(|cap| usize::try_from(cap).ok()).filter(|cap| active > *cap).map(
        |cap| {
            format!(
                "{}: {active} active members for a seat cap of {cap}; they all keep their membership, but nobody new is admitted until the cap is raised or members are suspended",
                customer.name
            )
        },
    );
    (problem, seats)
}

/// A Kubernetes storage quantity (`10Gi`, `500M`, `1073741824`) in bytes.
pub fn parse_quantity(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let factor: u64 = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(factor)
}

/// `n` bytes for people.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n;
    let mut unit = 0;
    while value >= 1024 * 10 && unit < UNITS.len() - 1 {
        value /= 1024;
        unit += 1;
    }
    format!("{value} {}", UNITS[unit])
}

/// Progress, for a bar per phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The phase.
    pub phase: Phase,
    /// Customers done in it.
    pub done: usize,
    /// Customers it has.
    pub total: usize,
    /// What just happened.
    pub message: String,
}

/// One customer's outcome.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerReport {
    /// The customer.
    pub name: String,
    /// The phase it completed (`planned` when none).
    pub phase: String,
    /// Why it did not get further.
    pub problem: Option<String>,
    /// Rows mapped per silo table.
    pub rows: BTreeMap<String, usize>,
    /// Memberships.
    pub memberships: usize,
    /// Its rows' estimated size on disk in its silo database.
    #[serde(default)]
    pub estimated_bytes: u64,
    /// The last verification (tables that differ first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<TableCheck>,
    /// Source tables that changed after its copy began.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_since_copy: Vec<String>,
}

/// The whole outcome (the JSON report).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The source.
    pub source: String,
    /// The last phase asked for.
    pub until: Phase,
    /// Per customer.
    pub customers: Vec<CustomerReport>,
    /// Billing accounts added to the fleet by this run.
    pub billing_accounts_added: usize,
    /// Rows that cannot be placed.
    pub unplaced: Vec<Unplaced>,
    /// Defaults used for what this version of the original lacks.
    pub defaults: Vec<String>,
    /// What the operator should know.
    pub notes: Vec<String>,
}

impl Report {
    /// Whether every customer reached the asked-for phase without a problem.
    pub fn complete(&self) -> bool {
        self.customers.iter().all(|c| c.problem.is_none() && Phase::done_by(&c.phase).is_some_and(|p| p >= self.until))
            || (self.until == Phase::Preflight && self.customers.iter().all(|c| c.problem.is_none()))
    }
}

/// Runs the migration from `source_url` up to `options.until`.
pub async fn run(
    source_url: &str,
    fleet: &PgPool,
    silos: &dyn Silos,
    options: &Options,
    progress: &(dyn Fn(Event) + Sync),
) -> Result<Report, Error> {
    let mut source = Source::connect(source_url).await?;
    let label = source.label().to_owned();
    progress(Event { phase: Phase::Preflight, done: 0, total: 1, message: format!("reading {label}") });
    let snapshot = source.read().await?;
    let plan = map::plan(&snapshot, &options.customers);
    let unknown: Vec<&String> = options.customers.iter().filter(|c| plan.customer(c).is_none()).collect();
    if !unknown.is_empty() {
        return Err(Error::Source(format!(
            "--customer: {} {} not a customer of the source (or cannot be migrated; see preflight)",
            unknown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
            if unknown.len() == 1 { "is" } else { "are" }
        )));
    }
    let watermarks = source.watermarks(&snapshot.columns).await?;
    let mut report = Report {
        source: label.clone(),
        until: options.until,
        customers: Vec::new(),
        billing_accounts_added: 0,
        unplaced: plan.unplaced.clone(),
        defaults: plan.defaults.clone(),
        notes: plan.notes.clone(),
    };
    // Customers the target cannot take, stopped before anything is created for them.
    let mut blocked: BTreeMap<String, String> = BTreeMap::new();
    for c in &plan.customers {
        let state = shared_migrations::get(fleet, &c.name).await.map_err(|e| Error::Fleet(crate::chain(&e)))?;
        let needed = estimated_bytes(c);
        let (too_big, seats) = capacity(c, needed, options.silo_storage);
        report.notes.extend(seats);
        let vanity = match (&state, &c.fleet.vanity_domain) {
            (None, Some(domain)) => fleet::vanity_holder(fleet, &c.name, domain).await?.map(|holder| {
                format!("its vanity domain {domain} belongs to the fleet's customer {holder}; nothing was created")
            }),
            _ => None,
        };
        let problem = match &state {
            Some(s) => s.problem.clone(),
            None if fleet::name_taken(fleet, &c.name).await? => {
                Some(format!("the fleet already has a customer named {} that this migration did not create", c.name))
            }
            None => vanity.or(too_big),
        };
        if let (None, Some(problem)) = (&state, &problem) {
            blocked.insert(c.name.clone(), problem.clone());
        }
        report.customers.push(CustomerReport {
            name: c.name.clone(),
            phase: state.as_ref().map_or_else(|| "planned".to_owned(), |s| s.phase.clone()),
            problem,
            rows: c.counts().into_iter().map(|(t, n)| (t.to_owned(), n)).collect(),
            estimated_bytes: needed,
            memberships: c.memberships.len(),
            checks: state.as_ref().and_then(|s| serde_json::from_value(s.checks.clone()).ok()).unwrap_or_default(),
            changed_since_copy: state.as_ref().map(|s| changed(&s.watermarks, &watermarks)).unwrap_or_default(),
        });
    }
    progress(Event {
        phase: Phase::Preflight,
        done: 1,
        total: 1,
        message: format!("{} customers, {} rows not placed", plan.customers.len(), plan.unplaced.len()),
    });
    if options.until == Phase::Preflight {
        return Ok(report);
    }

    report.billing_accounts_added = fleet::ensure_accounts(fleet, &plan.billing_accounts).await?;
    let total = plan.customers.len();
    // A few customers at a time: most of a customer's time is waiting (for its silo to be
    // provisioned, for its manager to take a delivery), not working.
    let mut waiting = plan.customers.iter().enumerate();
    let mut running = futures_util::stream::FuturesUnordered::new();
    let mut outcomes: Vec<(usize, Result<(), Error>)> = Vec::with_capacity(total);
    loop {
        while running.len() < CUSTOMERS_AT_ONCE {
            let Some((i, customer)) = waiting.next() else { break };
            if let Some(problem) = blocked.get(&customer.name) {
                outcomes.push((i, Err(Error::Fleet(problem.clone()))));
                continue;
            }
            let at = (i + 1, total);
            running.push(numbered(i, migrate_one(fleet, silos, customer, &label, &watermarks, options, at, progress)));
        }
        let Some(outcome) = running.next().await else { break };
        outcomes.push(outcome);
    }
    outcomes.sort_by_key(|(i, _)| *i);
    for (i, outcome) in outcomes {
        let customer = &plan.customers[i];
        let r = &mut report.customers[i];
        let state = shared_migrations::get(fleet, &customer.name).await.map_err(|e| Error::Fleet(crate::chain(&e)))?;
        if let Some(state) = &state {
            r.phase.clone_from(&state.phase);
            r.checks = serde_json::from_value(state.checks.clone()).unwrap_or_default();
            r.changed_since_copy = changed(&state.watermarks, &watermarks);
        }
        r.problem = match outcome {
            Ok(()) => state.and_then(|s| s.problem),
            Err(e) => {
                let text = e.to_string();
                if state.is_some() {
                    shared_migrations::set_problem(fleet, &customer.name, &text)
                        .await
                        .map_err(|e| Error::Fleet(crate::chain(&e)))?;
                }
                Some(text)
            }
        };
        if let Some(problem) = &r.problem {
            progress(Event {
                phase: options.until,
                done: i + 1,
                total,
                message: format!("{}: {problem}", customer.name),
            });
        }
    }
    Ok(report)
}

/// `work`'s outcome, numbered `i`.
async fn numbered<T>(i: usize, work: impl Future<Output = T>) -> (usize, T) {
    (i, work.await)
}

/// The tables whose rows or newest change differ from when the copy began.
fn changed(at_copy: &serde_json::Value, now: &BTreeMap<String, Watermark>) -> Vec<String> {
    let Ok(then) = serde_json::from_value::<BTreeMap<String, Watermark>>(at_copy.clone()) else { return Vec::new() };
    if then.is_empty() {
        return Vec::new();
    }
    now.iter()
        .filter(|(table, mark)| then.get(*table) != Some(mark))
        .map(|(table, mark)| {
            let before = then.get(table).cloned().unwrap_or_default();
            format!(
                "{table}: {} rows then, {} now; newest change {:?} then, {:?} now",
                before.rows, mark.rows, before.newest, mark.newest
            )
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
async fn migrate_one(
    fleet: &PgPool,
    silos: &dyn Silos,
    customer: &map::CustomerPlan,
    label: &str,
    watermarks: &BTreeMap<String, Watermark>,
    options: &Options,
    (done_count, total): (usize, usize),
    progress: &(dyn Fn(Event) + Sync),
) -> Result<(), Error> {
    let name = &customer.name;
    let event = |phase, message: String| progress(Event { phase, done: done_count, total, message });
    let fleet_err = |e: opencrane_db::Error| Error::Fleet(crate::chain(&e));
    // Provision.
    if fleet::ensure_customer(fleet, customer, label).await? {
        event(Phase::Provision, format!("{name}: created in the fleet; waiting for its silo database"));
    }
    let state = shared_migrations::get(fleet, name).await.map_err(fleet_err)?;
    let mut done = state.as_ref().and_then(|s| Phase::done_by(&s.phase));
    if done == Some(Phase::CutOver) {
        // Nothing left to do; its silo may since have been suspended or deleted.
        return Ok(());
    }
    let Some(reach) = wait_for_silo(silos, name, options.wait).await? else {
        return Err(Error::Silo(format!(
            "its silo is not ready after {} s; the provisioner may still be working on it (run again to resume)",
            options.wait.as_secs()
        )));
    };
    if done.is_none() {
        shared_migrations::set_phase(fleet, name, "provisioned").await.map_err(fleet_err)?;
        done = Some(Phase::Provision);
    }
    event(Phase::Provision, format!("{name}: its silo is ready"));
    if options.until < Phase::Copy {
        return Ok(());
    }
    // Copy.
    let copied_now = done < Some(Phase::Copy);
    if copied_now {
        let marks = serde_json::to_value(watermarks).unwrap_or_default();
        shared_migrations::copy_started(fleet, name, &marks).await.map_err(fleet_err)?;
        let copied = match &reach {
            Reach::Database(pool) => silo::copy(pool, customer, silos.credentials_key(name), label).await?,
            Reach::Relay => relay::copy(fleet, customer, label, options.wait).await?,
        };
        shared_migrations::set_phase(fleet, name, "copied").await.map_err(fleet_err)?;
        done = Some(Phase::Copy);
        let what = if copied == silo::Copied::Now { "copied" } else { "found copied by an earlier run" };
        let rows: usize = customer.counts().values().sum();
        event(Phase::Copy, format!("{name}: {rows} rows {what}"));
    }
    // The delta copy of what changed in the source since an earlier run's copy.
    if options.delta && !copied_now {
        let now = checks(fleet, &reach, customer, silos, label, options.wait).await?;
        let differ: Vec<&'static str> =
            map::SILO_TABLES.iter().copied().filter(|t| now.iter().any(|c| c.table == *t && !c.agrees())).collect();
        if !differ.is_empty() {
            let tables = silo::with_dependents(&differ);
            match &reach {
                Reach::Database(pool) => silo::copy_again(pool, customer, &tables, silos.credentials_key(name)).await?,
                Reach::Relay => relay::copy_again(fleet, customer, &tables, label, options.wait).await?,
            }
            let marks = serde_json::to_value(watermarks).unwrap_or_default();
            shared_migrations::copied_again(fleet, name, &marks).await.map_err(fleet_err)?;
            done = Some(Phase::Copy);
            event(Phase::Copy, format!("{name}: copied again: {}", tables.join(", ")));
        }
    }
    if options.until < Phase::Verify {
        return Ok(());
    }
    // Verify (again on every run until it is cut over: cheap, and a later change to the silo shows).
    let started = Instant::now();
    let mut checks = checks(fleet, &reach, customer, silos, label, options.wait).await?;
    checks.sort_by_key(TableCheck::agrees);
    let value = serde_json::to_value(&checks).unwrap_or_default();
    shared_migrations::set_checks(fleet, name, &value).await.map_err(fleet_err)?;
    let differ: Vec<&str> = checks.iter().filter(|c| !c.agrees()).map(|c| c.table.as_str()).collect();
    if !differ.is_empty() {
        return Err(Error::Silo(format!(
            "verification found differences in {} (see the checks); not cut over",
            differ.join(", ")
        )));
    }
    if done < Some(Phase::Verify) {
        shared_migrations::set_phase(fleet, name, "verified").await.map_err(fleet_err)?;
    }
    event(Phase::Verify, format!("{name}: every table agrees ({} ms)", started.elapsed().as_millis()));
    if options.until < Phase::CutOver {
        return Ok(());
    }
    fleet::cut_over(fleet, name).await?;
    event(Phase::CutOver, format!("{name}: cut over"));
    Ok(())
}

/// Each silo table of `customer` compared with what its silo holds.
async fn checks(
    fleet: &PgPool,
    reach: &Reach,
    customer: &map::CustomerPlan,
    silos: &dyn Silos,
    label: &str,
    wait: Duration,
) -> Result<Vec<TableCheck>, Error> {
    let pool = match reach {
        Reach::Database(pool) => pool,
        Reach::Relay => return relay::checks(fleet, customer, label, wait).await,
    };
    let back = silo::read_back(pool, silos.credentials_key(&customer.name)).await?;
    Ok(map::SILO_TABLES
        .iter()
        .map(|t| {
            verify::compare(
                t,
                customer.silo.get(t).map(Vec::as_slice).unwrap_or_default(),
                back.get(t).map(Vec::as_slice).unwrap_or_default(),
            )
        })
        .collect())
}

/// Polls for the customer's silo until `wait` has passed.
async fn wait_for_silo(silos: &dyn Silos, name: &str, wait: Duration) -> Result<Option<Reach>, Error> {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(reach) = silos.reach(name).await? {
            return Ok(Some(reach));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn customer(rows: usize, seat_cap: Option<i32>, active: usize) -> map::CustomerPlan {
        let member =
            |i: usize| map::Membership { subject: format!("s{i}"), role: "member".into(), status: "active".into() };
        map::CustomerPlan {
            name: "acme".into(),
            fleet: map::FleetCustomer { seat_cap, ..map::FleetCustomer::default() },
            memberships: (0..active).map(member).collect(),
            silo: BTreeMap::from([("audit_log", (0..rows).map(|i| json!({ "i": i })).collect())]),
            plain_keys: BTreeMap::new(),
        }
    }

    /// A customer whose rows would fill more than 80% of its silo database is stopped; one that
    /// fits, or a silo without a fixed size, is not; members beyond the seat cap are a note.
    #[test]
    fn the_target_capacity_is_the_silo_volume_and_the_seat_cap() {
        let big = customer(1_000, None, 0);
        let needed = estimated_bytes(&big);
        // `{"i":N}`: 7 bytes for 10 rows, 8 for 90, 9 for 900; three times that on disk.
        assert_eq!(needed, (10 * 7 + 90 * 8 + 900 * 9) * DISK_PER_ROW_BYTE);
        assert!(capacity(&big, needed, Some(needed)).0.is_some_and(|p| p.contains("raise the silo database size")));
        assert!(capacity(&big, needed, Some(needed * 2)).0.is_none());
        assert!(capacity(&big, needed, None).0.is_none());
        assert!(
            capacity(&customer(0, Some(2), 3), 0, None)
                .1
                .is_some_and(|n| n.contains("3 active members for a seat cap of 2"))
        );
        assert!(capacity(&customer(0, Some(3), 3), 0, None).1.is_none());
        assert_eq!(parse_quantity("10Gi"), Some(10 << 30));
        assert_eq!(parse_quantity("500M"), Some(500_000_000));
        assert_eq!(parse_quantity("12"), Some(12));
        assert_eq!(parse_quantity("10 apples"), None);
    }
}
