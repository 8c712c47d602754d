//! Wire types of the `/migrations` page: the migration from the original's shared database as
//! the fleet has it — where the source is (never its password), the run under way or the last
//! one, every customer's phase with what stopped it and what its verification found, and the
//! rows the plan could not place.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The phases a run can go up to, in order, with their names on the page.
pub const PHASES: &[(&str, &str)] = &[
    ("preflight", "Preflight: read and plan, change nothing"),
    ("provision", "Provision: create the customers and their silos"),
    ("copy", "Copy each customer's rows"),
    ("verify", "Verify: compare source and silo"),
    ("cut-over", "Cut over: mark them migrated"),
];

/// The page.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationsView {
    /// Whether this fleet-manager has a source (`OPENCRANE_SHARED_SOURCE_URL`) and reaches the
    /// silos' databases (without them only a preflight runs from here).
    pub configured: bool,
    /// Why it cannot run from here, when it cannot.
    pub unavailable: Option<String>,
    /// The source: `host:port/database`.
    pub source: Option<String>,
    /// The run under way, else the last one.
    pub run: Option<RunView>,
    /// Every customer the migration knows (the last plan's and those with a stored phase).
    pub customers: Vec<CustomerMigrationView>,
    /// Rows of the source that cannot be placed (the last plan's).
    pub unplaced: Vec<UnplacedView>,
    /// Defaults used for what this version of the original lacks.
    pub defaults: Vec<String>,
    /// What the operator should know.
    pub notes: Vec<String>,
}

/// A run started from the page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    /// Its id.
    pub id: i64,
    /// `running`, `finished`, `failed` (stopped as a whole) or `interrupted` (its fleet-manager
    /// stopped).
    pub state: String,
    /// The last phase asked for.
    pub until: String,
    /// Only these customers (every one when empty).
    pub customers: Vec<String>,
    /// Who started it.
    pub started_by: String,
    /// When.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// The last progress line.
    pub progress: Option<String>,
    /// Why it stopped as a whole.
    pub error: Option<String>,
}

/// One customer's migration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerMigrationView {
    /// The customer.
    pub name: String,
    /// `planned` (nothing done yet), `provisioned`, `copied`, `verified` or `cut-over`.
    pub phase: String,
    /// Why it did not get further.
    pub problem: Option<String>,
    /// Rows the plan maps into its silo.
    pub rows: Option<u64>,
    /// Memberships.
    pub memberships: Option<u64>,
    /// The tables that differed at the last verification, with the rows that differ.
    pub differences: Vec<DifferenceView>,
    /// Tables the last verification found equal.
    pub agreeing_tables: usize,
    /// Source tables that changed after its copy began.
    pub changed_since_copy: Vec<String>,
    /// Last change.
    pub updated_at: Option<DateTime<Utc>>,
}

impl CustomerMigrationView {
    /// Whether nothing is left to do for it.
    pub fn done(&self) -> bool {
        self.phase == "cut-over"
    }
}

/// A table that differed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DifferenceView {
    /// The silo table.
    pub table: String,
    /// Rows on each side.
    pub source_rows: u64,
    /// Rows in the silo.
    pub target_rows: u64,
    /// Rows only the source has (canonical JSON, a few).
    pub missing: Vec<String>,
    /// Rows only the silo has.
    pub unexpected: Vec<String>,
}

/// A row of the source that cannot be placed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnplacedView {
    /// The source table.
    pub table: String,
    /// Which row.
    pub row: String,
    /// Why.
    pub reason: String,
}

/// What the run form asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    /// The last phase (`preflight` … `cut-over`).
    pub until: String,
    /// One customer, or every one when empty.
    #[serde(default)]
    pub customer: Option<String>,
    /// The delta copy: copy again what changed in the source since the copy (before cut-over).
    #[serde(default)]
    pub delta: bool,
}
