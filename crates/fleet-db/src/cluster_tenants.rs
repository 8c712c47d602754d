//! The `cluster_tenants` table: one row per customer, holding its desired state and the last
//! status mirrored from its custom resource.
//!
//! Values arrive here already validated by the service layer; the table's CHECK constraints are
//! the backstop, not the validator.

use chrono::{DateTime, Utc};
use opencrane_db::Result;
use sqlx::{PgConnection, PgExecutor};

/// A ClusterTenant as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterTenantRow {
    /// Primary key; also the CR name and the namespace suffix.
    pub name: String,
    /// Human-readable name.
    pub display_name: String,
    /// Optional customer-owned host name.
    pub vanity_domain: Option<String>,
    /// `shared`, `dedicatedNodes` or `dedicatedCluster`.
    pub isolation_tier: String,
    /// `shared` or `dedicated`.
    pub compute_mode: String,
    /// Node pool for dedicated compute.
    pub node_pool: Option<String>,
    /// `{cpu, memory, pods, storage, gpu}` (each optional).
    pub quota: serde_json::Value,
    /// Seat limit; `None` = uncapped.
    pub seat_cap: Option<i32>,
    /// Lifecycle phase.
    pub phase: String,
    /// Human-readable status message.
    pub message: Option<String>,
    /// Namespace the silo was bound to.
    pub bound_namespace: Option<String>,
    /// Which provisioner serves the tier.
    pub provisioner: Option<String>,
    /// Zitadel organisation id.
    pub zitadel_org_id: Option<String>,
    /// Zitadel project id.
    pub zitadel_project_id: Option<String>,
    /// Zitadel OIDC app id.
    pub zitadel_app_id: Option<String>,
    /// Zitadel OIDC client id.
    pub zitadel_client_id: Option<String>,
    /// Redirect URI registered with Zitadel.
    pub zitadel_redirect_uri: Option<String>,
    /// When the row was created.
    pub created_at: DateTime<Utc>,
    /// When the row last changed.
    pub updated_at: DateTime<Utc>,
    /// Workloads scaled to zero and sign-ins blocked.
    pub suspended: bool,
    /// `Retain` or `Delete`: what happens to the database on deletion.
    pub termination_policy: String,
    /// Pin of the silo chart/application version.
    pub silo_version: Option<String>,
    /// Bumped by every change of the desired state.
    pub generation: i64,
    /// The generation the last finished reconcile converged to.
    pub observed_generation: Option<i64>,
    /// Where the silo's console answers, once it does.
    pub silo_url: Option<String>,
    /// When deletion was asked for; the row stays until the teardown has finished.
    pub deletion_requested_at: Option<DateTime<Utc>>,
    /// What the teardown kept (a JSON array of sentences).
    pub retained: serde_json::Value,
    /// Consecutive failed reconciles (drives the backoff).
    pub failed_attempts: i32,
}

/// A row of the list page: the columns the page shows, the seats in use and the list's total.
/// The page reads only these (not the whole [`ClusterTenantRow`]): decoding the other columns,
/// two of them JSONB, was a quarter of the page's server time.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterTenantListRow {
    /// Primary key.
    pub name: String,
    /// Human-readable name.
    pub display_name: String,
    /// `shared`, `dedicatedNodes` or `dedicatedCluster`.
    pub isolation_tier: String,
    /// Lifecycle phase.
    pub phase: String,
    /// Human-readable status message.
    pub message: Option<String>,
    /// Seat limit; `None` = uncapped.
    pub seat_cap: Option<i32>,
    /// `Retain` or `Delete`.
    pub termination_policy: String,
    /// Workloads scaled to zero and sign-ins blocked.
    pub suspended: bool,
    /// When the row was created.
    pub created_at: DateTime<Utc>,
    /// Active memberships, i.e. seats in use.
    pub active_members: i64,
    /// How many rows the whole list has under the page's filter (the same on every row of a
    /// page: the page's one statement counts them, as [`count`] would).
    pub total: i64,
}

/// A whole stored row in a list (the REST API's, which returns every field), with its seats in
/// use and the list's total.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterTenantFullListRow {
    /// The stored row.
    pub row: ClusterTenantRow,
    /// Active memberships, i.e. seats in use.
    pub active_members: i64,
    /// As [`ClusterTenantListRow::total`].
    pub total: i64,
}

/// [`ClusterTenantFullListRow`] as the list statement returns it (`query_as!` fills a flat struct;
/// it cannot nest one). A column added to [`ClusterTenantRow`] fails to compile here until it is
/// added to this struct and to the full list statement too.
struct ListedRow {
    name: String,
    display_name: String,
    vanity_domain: Option<String>,
    isolation_tier: String,
    compute_mode: String,
    node_pool: Option<String>,
    quota: serde_json::Value,
    seat_cap: Option<i32>,
    phase: String,
    message: Option<String>,
    bound_namespace: Option<String>,
    provisioner: Option<String>,
    zitadel_org_id: Option<String>,
    zitadel_project_id: Option<String>,
    zitadel_app_id: Option<String>,
    zitadel_client_id: Option<String>,
    zitadel_redirect_uri: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    suspended: bool,
    termination_policy: String,
    silo_version: Option<String>,
    generation: i64,
    observed_generation: Option<i64>,
    silo_url: Option<String>,
    deletion_requested_at: Option<DateTime<Utc>>,
    retained: serde_json::Value,
    failed_attempts: i32,
    active_members: i64,
    total: i64,
}

impl From<ListedRow> for ClusterTenantFullListRow {
    fn from(r: ListedRow) -> Self {
        let row = ClusterTenantRow {
            name: r.name,
            display_name: r.display_name,
            vanity_domain: r.vanity_domain,
            isolation_tier: r.isolation_tier,
            compute_mode: r.compute_mode,
            node_pool: r.node_pool,
            quota: r.quota,
            seat_cap: r.seat_cap,
            phase: r.phase,
            message: r.message,
            bound_namespace: r.bound_namespace,
            provisioner: r.provisioner,
            zitadel_org_id: r.zitadel_org_id,
            zitadel_project_id: r.zitadel_project_id,
            zitadel_app_id: r.zitadel_app_id,
            zitadel_client_id: r.zitadel_client_id,
            zitadel_redirect_uri: r.zitadel_redirect_uri,
            created_at: r.created_at,
            updated_at: r.updated_at,
            suspended: r.suspended,
            termination_policy: r.termination_policy,
            silo_version: r.silo_version,
            generation: r.generation,
            observed_generation: r.observed_generation,
            silo_url: r.silo_url,
            deletion_requested_at: r.deletion_requested_at,
            retained: r.retained,
            failed_attempts: r.failed_attempts,
        };
        Self { row, active_members: r.active_members, total: r.total }
    }
}

/// The desired state written on create and update (already validated).
#[derive(Clone, Debug)]
pub struct DesiredState<'a> {
    /// Human-readable name.
    pub display_name: &'a str,
    /// Lower-case host name, or `None`.
    pub vanity_domain: Option<&'a str>,
    /// Tier as stored.
    pub isolation_tier: &'a str,
    /// Compute mode as stored.
    pub compute_mode: &'a str,
    /// Node pool, only with dedicated compute.
    pub node_pool: Option<&'a str>,
    /// Quota object.
    pub quota: &'a serde_json::Value,
    /// Seat limit.
    pub seat_cap: Option<i32>,
    /// Scale to zero and block sign-ins.
    pub suspended: bool,
    /// `Retain` or `Delete`.
    pub termination_policy: &'a str,
    /// Silo version pin.
    pub silo_version: Option<&'a str>,
}

impl<'a> DesiredState<'a> {
    /// A shared-tier customer on shared compute with `quota` and `termination_policy`, and no
    /// vanity domain, seat cap, suspension or version pin (the defaults of the migration; what
    /// callers then change with struct update syntax).
    pub fn shared(display_name: &'a str, quota: &'a serde_json::Value, termination_policy: &'a str) -> Self {
        Self {
            display_name,
            vanity_domain: None,
            isolation_tier: "shared",
            compute_mode: "shared",
            node_pool: None,
            quota,
            seat_cap: None,
            suspended: false,
            termination_policy,
            silo_version: None,
        }
    }
}

/// Inserts a new ClusterTenant in phase `pending`.
pub async fn insert(db: impl PgExecutor<'_>, name: &str, desired: &DesiredState<'_>) -> Result<ClusterTenantRow> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        ClusterTenantRow,
        r#"INSERT INTO cluster_tenants
               (name, display_name, vanity_domain, isolation_tier, compute_mode, node_pool, quota, seat_cap,
                suspended, termination_policy, silo_version)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
           RETURNING name, display_name, vanity_domain, isolation_tier, compute_mode, node_pool, quota,
                     seat_cap, phase, message, bound_namespace, provisioner, zitadel_org_id,
                     zitadel_project_id, zitadel_app_id, zitadel_client_id, zitadel_redirect_uri,
                     created_at, updated_at, suspended, termination_policy, silo_version, generation,
                     observed_generation, silo_url, deletion_requested_at, retained, failed_attempts"#,
        name,
        desired.display_name,
        desired.vanity_domain,
        desired.isolation_tier,
        desired.compute_mode,
        desired.node_pool,
        desired.quota,
        desired.seat_cap,
        desired.suspended,
        desired.termination_policy,
        desired.silo_version,
    )
    .fetch_one(db)
    .await?;
    Ok(row)
}

/// Replaces the desired state of `name`; status columns are untouched.
pub async fn update_desired(
    db: impl PgExecutor<'_>,
    name: &str,
    desired: &DesiredState<'_>,
) -> Result<ClusterTenantRow> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        ClusterTenantRow,
        r#"UPDATE cluster_tenants
           SET display_name = $2, vanity_domain = $3, isolation_tier = $4, compute_mode = $5,
               node_pool = $6, quota = $7, seat_cap = $8, suspended = $9, termination_policy = $10,
               silo_version = $11, updated_at = now(),
               -- Only a real change is a new generation (a no-op update must not wake the
               -- reconciler).
               generation = generation + CASE
                   WHEN (display_name, vanity_domain, isolation_tier, compute_mode, node_pool, quota,
                         seat_cap, suspended, termination_policy, silo_version)
                        IS DISTINCT FROM ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                   THEN 1 ELSE 0 END
           WHERE name = $1
           RETURNING name, display_name, vanity_domain, isolation_tier, compute_mode, node_pool, quota,
                     seat_cap, phase, message, bound_namespace, provisioner, zitadel_org_id,
                     zitadel_project_id, zitadel_app_id, zitadel_client_id, zitadel_redirect_uri,
                     created_at, updated_at, suspended, termination_policy, silo_version, generation,
                     observed_generation, silo_url, deletion_requested_at, retained, failed_attempts"#,
        name,
        desired.display_name,
        desired.vanity_domain,
        desired.isolation_tier,
        desired.compute_mode,
        desired.node_pool,
        desired.quota,
        desired.seat_cap,
        desired.suspended,
        desired.termination_policy,
        desired.silo_version,
    )
    .fetch_optional(db)
    .await?;
    row.ok_or(opencrane_db::Error::NotFound)
}

/// Reads one ClusterTenant.
pub async fn get(db: impl PgExecutor<'_>, name: &str) -> Result<ClusterTenantRow> {
    // language=PostgreSQL
    let row = sqlx::query_as!(
        ClusterTenantRow,
        r#"SELECT name, display_name, vanity_domain, isolation_tier, compute_mode, node_pool, quota,
                  seat_cap, phase, message, bound_namespace, provisioner, zitadel_org_id,
                  zitadel_project_id, zitadel_app_id, zitadel_client_id, zitadel_redirect_uri,
                  created_at, updated_at, suspended, termination_policy, silo_version, generation,
                  observed_generation, silo_url, deletion_requested_at, retained, failed_attempts
           FROM cluster_tenants WHERE name = $1"#,
        name,
    )
    .fetch_optional(db)
    .await?;
    row.ok_or(opencrane_db::Error::NotFound)
}

/// A customer's identifiers in Zitadel (all public ids; `None` = not made yet).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZitadelIds {
    /// The organisation.
    pub org_id: Option<String>,
    /// The project holding the roles and the login app.
    pub project_id: Option<String>,
    /// The login app.
    pub app_id: Option<String>,
    /// The login app's OIDC client id.
    pub client_id: Option<String>,
    /// The canonical callback URI registered on the login app.
    pub redirect_uri: Option<String>,
}

impl ZitadelIds {
    /// The ids stored on `row`.
    pub fn of(row: &ClusterTenantRow) -> Self {
        Self {
            org_id: row.zitadel_org_id.clone(),
            project_id: row.zitadel_project_id.clone(),
            app_id: row.zitadel_app_id.clone(),
            client_id: row.zitadel_client_id.clone(),
            redirect_uri: row.zitadel_redirect_uri.clone(),
        }
    }

    /// Every id is there.
    pub fn is_complete(&self) -> bool {
        self.org_id.is_some() && self.project_id.is_some() && self.app_id.is_some() && self.client_id.is_some()
    }
}

/// Stores the Zitadel ids of `name` (the identity step's bookkeeping: not a desired-state
/// change, so the generation stays).
pub async fn set_zitadel_ids(db: impl PgExecutor<'_>, name: &str, ids: &ZitadelIds) -> Result<()> {
    // language=PostgreSQL
    let done = sqlx::query!(
        "UPDATE cluster_tenants
         SET zitadel_org_id = $2, zitadel_project_id = $3, zitadel_app_id = $4, zitadel_client_id = $5,
             zitadel_redirect_uri = $6
         WHERE name = $1",
        name,
        ids.org_id,
        ids.project_id,
        ids.app_id,
        ids.client_id,
        ids.redirect_uri,
    )
    .execute(db)
    .await?;
    if done.rows_affected() == 0 {
        return Err(opencrane_db::Error::NotFound);
    }
    Ok(())
}

/// Reads one ClusterTenant and locks its row until the transaction ends (seat and owner checks
/// serialise on it).
pub async fn lock(db: impl PgExecutor<'_>, name: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query_scalar!("SELECT name FROM cluster_tenants WHERE name = $1 FOR UPDATE", name)
        .fetch_optional(db)
        .await?
        .map(|_| ())
        .ok_or(opencrane_db::Error::NotFound)
}

/// Deletes one ClusterTenant (memberships cascade).
pub async fn delete(db: impl PgExecutor<'_>, name: &str) -> Result<()> {
    // language=PostgreSQL
    let done = sqlx::query!("DELETE FROM cluster_tenants WHERE name = $1", name).execute(db).await?;
    if done.rows_affected() == 0 {
        return Err(opencrane_db::Error::NotFound);
    }
    Ok(())
}

/// Columns the list can be sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// By name.
    Name,
    /// By display name, case-insensitively.
    DisplayName,
    /// By isolation tier.
    Tier,
    /// By phase.
    Phase,
    /// By seat limit (uncapped last).
    SeatCap,
    /// By creation time.
    CreatedAt,
}

/// Which rows the list shows.
#[derive(Clone, Debug, Default)]
pub struct ListFilter {
    /// Case-insensitive substring of the name or display name.
    pub search: Option<String>,
    /// Exact phase.
    pub phase: Option<String>,
    /// Exact tier.
    pub isolation_tier: Option<String>,
    /// Only these names (the ClusterTenants a non-operator manages); `None` = no restriction.
    pub names: Option<Vec<String>>,
}

impl ListFilter {
    /// The search as an escaped `LIKE` pattern, matched against the stored lower-cased
    /// `search_text` (name, line break, display name) after the database lowers it too — so case
    /// folds by the database's rules on both sides. Control characters are dropped: no name or
    /// display name contains one, and a line break would otherwise match across the two.
    fn pattern(&self) -> Option<String> {
        let search: String = self.search.as_deref()?.chars().filter(|c| !c.is_control()).collect();
        if search.is_empty() {
            return None;
        }
        let escaped = search.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
        Some(format!("%{escaped}%"))
    }
}

/// Where a page of the list starts.
#[derive(Clone, Copy, Debug)]
pub enum Start<'a> {
    /// After skipping this many rows (a jump to a numbered page).
    Offset(i64),
    /// Right after this row (keyset paging: O(page) at any depth, and rows inserted or deleted
    /// before it do not shift the page).
    After(&'a Cursor),
}

/// A row's place in the list: its name and the value of the sort column, as text (`None` for
/// an uncapped seat limit, and for the name sort, whose value is the name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    /// The row's name (the tie-breaker of every sort).
    pub name: String,
    /// The sort column's value: the display name as stored (the database lowers it), the tier,
    /// the phase, the seat limit, or the creation time in RFC 3339 with microseconds.
    pub key: Option<String>,
}

impl Cursor {
    /// The cursor of `row` in a list sorted by `sort`.
    pub fn of(row: &ClusterTenantListRow, sort: SortKey) -> Self {
        let key = match sort {
            SortKey::Name => None,
            SortKey::DisplayName => Some(row.display_name.clone()),
            SortKey::Tier => Some(row.isolation_tier.clone()),
            SortKey::Phase => Some(row.phase.clone()),
            SortKey::SeatCap => row.seat_cap.map(|c| c.to_string()),
            SortKey::CreatedAt => Some(row.created_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        };
        Self { name: row.name.clone(), key }
    }

    /// Whether `key` is a value of the `sort` column (so a hand-made cursor fails with a clear
    /// error here, not as a database cast error).
    pub fn fits(&self, sort: SortKey) -> bool {
        match (sort, self.key.as_deref()) {
            (SortKey::Name, key) => key.is_none(),
            (SortKey::SeatCap, None) => true,
            (SortKey::SeatCap, Some(cap)) => cap.parse::<i32>().is_ok_and(|c| c >= 0),
            (SortKey::CreatedAt, Some(at)) => chrono::DateTime::parse_from_rfc3339(at).is_ok(),
            (_, key) => key.is_some(),
        }
    }
}

/// Runs the list query with one literal `ORDER BY` and the matching keyset condition `$after`
/// (each variant is its own prepared statement, checked at compile time, so the planner walks
/// the matching index from the cursor instead of sorting or skipping rows — a single statement
/// with `CASE` sort keys cannot use any index). `$7` is the cursor's sort value, `$8` its name,
/// `$9` whether there is a cursor.
///
/// One statement answers the whole page: each row's seats in use (a count per row through the
/// memberships' `(cluster_tenant, subject)` index) and the list's total under the filter (the
/// tally without a search or name restriction, else the matching rows counted — a planned-once
/// subquery, as [`count`]). Three statements took 1.75× the database time of this one.
///
/// A jump to a numbered page (an offset past 0) first reads the page's names alone — the sort's
/// index answers that by an index-only scan over the skipped rows — and then only those rows:
/// read in one pass, every skipped row was fetched from the table and had its seats counted
/// (page 150 of 10,000: 86 against 1,297 statements/s in `pgbench`). A first page and a keyset
/// page skip nothing and keep the one-pass statement, which costs less without a skip.
///
/// `page:` reads the page's columns ([`ClusterTenantListRow`]), `full:` every column.
macro_rules! list_ordered_by {
    // The page's columns (see `ClusterTenantListRow`).
    (page: $db:expr, $filter:expr, $limit:expr, $start:expr, $order:literal, $after:literal) => {
        list_ordered_by!(
            @shared ClusterTenantListRow, $db, $filter, $limit, $start, $order, $after,
            "SELECT ct.name, ct.display_name, ct.isolation_tier, ct.phase, ct.message, ct.seat_cap,
                    ct.termination_policy, ct.suspended, ct.created_at, "
        )
    };
    // Every column (the REST API's list).
    (full: $db:expr, $filter:expr, $limit:expr, $start:expr, $order:literal, $after:literal) => {
        list_ordered_by!(
            @shared ListedRow, $db, $filter, $limit, $start, $order, $after,
            "SELECT ct.name, ct.display_name, ct.vanity_domain, ct.isolation_tier, ct.compute_mode,
                    ct.node_pool, ct.quota, ct.seat_cap, ct.phase, ct.message, ct.bound_namespace,
                    ct.provisioner, ct.zitadel_org_id, ct.zitadel_project_id, ct.zitadel_app_id,
                    ct.zitadel_client_id, ct.zitadel_redirect_uri, ct.created_at, ct.updated_at,
                    ct.suspended, ct.termination_policy, ct.silo_version, ct.generation,
                    ct.observed_generation, ct.silo_url, ct.deletion_requested_at, ct.retained, ct.failed_attempts, "
        )
    };
    // The jump's statement or the one-pass statement, with the same arguments.
    (@fetch $row:ident, $db:expr, $jump:expr, [$($jump_sql:tt)+], [$($page_sql:tt)+], $($arg:expr),+) => {
        if $jump {
            // language=PostgreSQL
            sqlx::query_as!($row, $($jump_sql)+, $($arg),+).fetch_all($db).await?
        } else {
            // language=PostgreSQL
            sqlx::query_as!($row, $($page_sql)+, $($arg),+).fetch_all($db).await?
        }
    };
    // The seats in use and the total, and the filter: the same in every statement.
    (@shared $row:ident, $db:expr, $filter:expr, $limit:expr, $start:expr, $order:literal, $after:literal,
     $columns:literal) => {
        list_ordered_by!(
            @statement $row, $db, $filter, $limit, $start, $order, $after, $columns,
            r#"(SELECT count(*) FROM org_memberships m
                 WHERE m.cluster_tenant = ct.name AND m.status = 'active') AS "active_members!",
               CASE WHEN $1::text IS NULL AND $6::text[] IS NULL
                    THEN (SELECT coalesce(sum(t.n), 0)::int8 FROM cluster_tenant_tally t
                           WHERE ($2::text IS NULL OR t.phase = $2)
                             AND ($3::text IS NULL OR t.isolation_tier = $3))
                    ELSE (SELECT count(*) FROM cluster_tenants c
                           WHERE ($1::text IS NULL OR c.search_text LIKE lower($1))
                             AND ($2::text IS NULL OR c.phase = $2)
                             AND ($3::text IS NULL OR c.isolation_tier = $3)
                             AND ($6::text[] IS NULL OR c.name = ANY($6)))
               END AS "total!"
             FROM cluster_tenants ct "#,
            r#"WHERE ($1::text IS NULL OR ct.search_text LIKE lower($1))
               AND ($2::text IS NULL OR ct.phase = $2)
               AND ($3::text IS NULL OR ct.isolation_tier = $3)
               AND ($6::text[] IS NULL OR ct.name = ANY($6))
               AND (NOT $9::bool OR ("#
        )
    };
    (@statement $row:ident, $db:expr, $filter:expr, $limit:expr, $start:expr, $order:literal, $after:literal,
     $columns:literal, $counts:literal, $filtered:literal) => {{
        let (offset, cursor) = match $start {
            Start::Offset(offset) => (offset, None),
            Start::After(cursor) => (0, Some(cursor)),
        };
        let pattern = $filter.pattern();
        let names = $filter.names.as_deref();
        let cursor_key = cursor.and_then(|c: &Cursor| c.key.clone());
        let cursor_name = cursor.map(|c: &Cursor| c.name.clone());
        list_ordered_by!(
            @fetch $row, $db,
            offset > 0,
            [$columns
                + $counts
                + " WHERE ct.name = ANY(ARRAY(SELECT ct.name FROM cluster_tenants ct "
                + $filtered
                + $after
                + ")) ORDER BY "
                + $order
                + " LIMIT $4 OFFSET $5)) ORDER BY "
                + $order],
            [$columns + $counts + $filtered + $after + ")) ORDER BY " + $order + " LIMIT $4 OFFSET $5"],
            pattern,
            $filter.phase,
            $filter.isolation_tier,
            $limit,
            offset,
            names,
            cursor_key,
            cursor_name,
            cursor.is_some()
        )
    }};
}

/// One page of the list, sorted; ties broken by name so pages never overlap. Seats in use are
/// counted for the page's rows only; each row carries the list's total (an empty page carries
/// none: [`count`] answers then).
pub async fn list(
    db: &mut PgConnection,
    filter: &ListFilter,
    sort: SortKey,
    descending: bool,
    limit: i64,
    start: Start<'_>,
) -> Result<Vec<ClusterTenantListRow>> {
    let conn = &mut *db;
    let rows = match (sort, descending) {
        (SortKey::Name, false) => {
            list_ordered_by!(page: &mut *conn, filter, limit, start, "ct.name", "ct.name > coalesce($7::text, $8)")
        }
        (SortKey::Name, true) => {
            list_ordered_by!(page: &mut *conn, filter, limit, start, "ct.name DESC", "ct.name < coalesce($7::text, $8)")
        }
        (SortKey::DisplayName, false) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "lower(ct.display_name), ct.name",
            "(lower(ct.display_name), ct.name) > (lower($7::text), $8)"
        ),
        (SortKey::DisplayName, true) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "lower(ct.display_name) DESC, ct.name DESC",
            "(lower(ct.display_name), ct.name) < (lower($7::text), $8)"
        ),
        (SortKey::Tier, false) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "ct.isolation_tier, ct.name",
            "(ct.isolation_tier, ct.name) > ($7::text, $8)"
        ),
        (SortKey::Tier, true) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "ct.isolation_tier DESC, ct.name DESC",
            "(ct.isolation_tier, ct.name) < ($7::text, $8)"
        ),
        (SortKey::Phase, false) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "ct.phase, ct.name",
            "(ct.phase, ct.name) > ($7::text, $8)"
        ),
        (SortKey::Phase, true) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "ct.phase DESC, ct.name DESC",
            "(ct.phase, ct.name) < ($7::text, $8)"
        ),
        // Uncapped rows come last in both directions: after an uncapped row only uncapped rows.
        (SortKey::SeatCap, false) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "ct.seat_cap NULLS LAST, ct.name",
            "CASE WHEN $7::text IS NULL THEN ct.seat_cap IS NULL AND ct.name > $8
                  ELSE ct.seat_cap IS NULL OR (ct.seat_cap, ct.name) > ($7::text::int4, $8) END"
        ),
        (SortKey::SeatCap, true) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "ct.seat_cap DESC NULLS LAST, ct.name DESC",
            "CASE WHEN $7::text IS NULL THEN ct.seat_cap IS NULL AND ct.name < $8
                  ELSE ct.seat_cap IS NULL OR (ct.seat_cap, ct.name) < ($7::text::int4, $8) END"
        ),
        (SortKey::CreatedAt, false) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "ct.created_at, ct.name",
            "(ct.created_at, ct.name) > ($7::text::timestamptz, $8)"
        ),
        (SortKey::CreatedAt, true) => list_ordered_by!(
            page: &mut *conn,
            filter,
            limit,
            start,
            "ct.created_at DESC, ct.name DESC",
            "(ct.created_at, ct.name) < ($7::text::timestamptz, $8)"
        ),
    };
    Ok(rows)
}

/// Whole rows in creation order (the REST API's list), as [`list`] reads a page of its rows.
pub async fn list_full_by_creation(
    db: &mut PgConnection,
    filter: &ListFilter,
    limit: i64,
    offset: i64,
) -> Result<Vec<ClusterTenantFullListRow>> {
    let rows = list_ordered_by!(
        full: &mut *db,
        filter,
        limit,
        Start::Offset(offset),
        "ct.created_at, ct.name",
        "(ct.created_at, ct.name) > ($7::text::timestamptz, $8)"
    );
    Ok(rows.into_iter().map(ClusterTenantFullListRow::from).collect())
}

/// How many rows match `filter`. Without a search or a name restriction the database's own tally
/// answers (per phase and tier, kept by a trigger: a few rows, whatever the fleet's size);
/// otherwise the matching rows are counted.
pub async fn count(db: impl PgExecutor<'_>, filter: &ListFilter) -> Result<i64> {
    let pattern = filter.pattern();
    if pattern.is_none() && filter.names.is_none() {
        // language=PostgreSQL
        return Ok(sqlx::query_scalar!(
            r#"SELECT coalesce(sum(n), 0)::int8 AS "n!" FROM cluster_tenant_tally
               WHERE ($1::text IS NULL OR phase = $1) AND ($2::text IS NULL OR isolation_tier = $2)"#,
            filter.phase,
            filter.isolation_tier,
        )
        .fetch_one(db)
        .await?);
    }
    // language=PostgreSQL
    let n = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM cluster_tenants ct
           WHERE ($1::text IS NULL OR ct.search_text LIKE lower($1))
             AND ($2::text IS NULL OR ct.phase = $2)
             AND ($3::text IS NULL OR ct.isolation_tier = $3)
             AND ($4::text[] IS NULL OR ct.name = ANY($4))"#,
        pattern,
        filter.phase,
        filter.isolation_tier,
        filter.names.as_deref(),
    )
    .fetch_one(db)
    .await?;
    Ok(n)
}

/// The names of every ClusterTenant whose DNS and certificates the probes watch (all but those
/// being deleted), by name.
pub async fn names_to_probe(db: impl PgExecutor<'_>) -> Result<Vec<String>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!("SELECT name FROM cluster_tenants WHERE deletion_requested_at IS NULL ORDER BY name")
        .fetch_all(db)
        .await?)
}

/// Whether the customers list's substring search has its trigram index (the pg_trgm extension
/// could be made); without it the search scans the table.
pub async fn search_indexed(db: impl PgExecutor<'_>) -> Result<bool> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'cluster_tenants_search_trgm') AS "indexed!""#
    )
    .fetch_one(db)
    .await?)
}

/// `(name, display name)` of every ClusterTenant not being deleted, by name (the DNS page).
pub async fn names_and_display_names(db: impl PgExecutor<'_>) -> Result<Vec<(String, String)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        "SELECT name, display_name FROM cluster_tenants WHERE deletion_requested_at IS NULL ORDER BY name"
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.name, r.display_name)).collect())
}
