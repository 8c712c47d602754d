//! ClusterTenant use cases: list, read, create, update, delete.

use opencrane_db::Error as DbError;
use opencrane_fleet_db::{
    billing_accounts,
    cluster_tenants::{self as db, ClusterTenantRow, DesiredState, ListFilter, SortKey},
    memberships, provisioning, tombstones,
};
use serde_json::json;
use sqlx::PgConnection;

use crate::service::{OrFail as _, authorize_mutation, db_failure, internal, kept, record};
use crate::{
    authz::{Action, authorize, cluster_tenant_not_found},
    error::AppError,
    model::fleet::cluster_tenant::{
        ClusterTenant, ClusterTenantCreateRequest, ClusterTenantPage, ClusterTenantSpec, ClusterTenantStatus,
        ClusterTenantSummary, ClusterTenantUpdateRequest, Compute, ComputeMode, IsolationTier, ListQuery,
        MAX_PAGE_SIZE, Phase, Quota, ResourcesView, SortBy, TerminationPolicy, ZitadelIds, tier_unavailable_message,
        validate,
    },
    model::fleet::provisioning::{ProvisioningView, StepId, StepState, StepView},
    state::{AppState, Caller, FleetSettings},
};

fn settings(state: &AppState) -> Result<&FleetSettings, AppError> {
    let fleet = state.fleet()?;
    if fleet.cluster_tenants_enabled {
        Ok(fleet)
    } else {
        Err(AppError::NotFound {
            code: "NOT_FOUND".into(),
            message: "The ClusterTenant area is disabled on this fleet-manager.".into(),
        })
    }
}

pub(crate) fn not_found(name: &str) -> AppError {
    cluster_tenant_not_found(name)
}

/// Non-operators see only the ClusterTenants they manage.
fn visible_names(principal: &crate::model::principal::Principal) -> Option<Vec<String>> {
    (!principal.is_platform_operator).then(|| principal.managed())
}

/// Why a stored row could not be turned into its wire form.
#[derive(Debug, thiserror::Error)]
#[error("stored ClusterTenant `{name}` is malformed: {what}")]
struct MalformedRow {
    name: String,
    what: String,
}

fn to_wire(mut row: ClusterTenantRow, seats_used: Option<i64>) -> Result<ClusterTenant, MalformedRow> {
    let (quota, retained) = (row.quota.take(), row.retained.take());
    let malformed = |what: String| MalformedRow { name: row.name.clone(), what };
    let isolation_tier = IsolationTier::parse(&row.isolation_tier)
        .ok_or_else(|| malformed(format!("isolation tier {}", row.isolation_tier)))?;
    let mode =
        ComputeMode::parse(&row.compute_mode).ok_or_else(|| malformed(format!("compute mode {}", row.compute_mode)))?;
    let phase = Phase::parse(&row.phase).ok_or_else(|| malformed(format!("phase {}", row.phase)))?;
    let quota: Quota = serde_json::from_value(quota).map_err(|e| malformed(format!("quota: {e}")))?;
    let termination_policy = TerminationPolicy::parse(&row.termination_policy)
        .ok_or_else(|| malformed(format!("termination policy {}", row.termination_policy)))?;
    let retained: Vec<String> = serde_json::from_value(retained).map_err(|e| malformed(format!("retained: {e}")))?;
    let zitadel = (row.zitadel_client_id.is_some()
        || row.zitadel_org_id.is_some()
        || row.zitadel_redirect_uri.is_some())
    .then(|| ZitadelIds {
        client_id: row.zitadel_client_id.clone(),
        org_id: row.zitadel_org_id.clone(),
        redirect_uri: row.zitadel_redirect_uri.clone(),
        console_url: None,
    });
    Ok(ClusterTenant {
        name: row.name,
        display_name: row.display_name,
        vanity_domain: row.vanity_domain,
        isolation_tier,
        compute: Compute { mode, node_pool: row.node_pool },
        resources: ResourcesView { quota },
        seat_cap: row.seat_cap,
        seats_used,
        zitadel,
        suspended: row.suspended,
        termination_policy,
        silo_version: row.silo_version,
        status: ClusterTenantStatus {
            phase,
            message: row.message,
            bound_namespace: row.bound_namespace,
            provisioner: row.provisioner,
            silo_url: row.silo_url,
            generation: row.generation,
            observed_generation: row.observed_generation,
            retained,
        },
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

fn sort_key(sort: SortBy) -> SortKey {
    match sort {
        SortBy::Name => SortKey::Name,
        SortBy::DisplayName => SortKey::DisplayName,
        SortBy::Tier => SortKey::Tier,
        SortBy::Phase => SortKey::Phase,
        SortBy::SeatCap => SortKey::SeatCap,
        SortBy::CreatedAt => SortKey::CreatedAt,
    }
}

/// One page as the database returned it: its rows (in list order) and whether more rows lie
/// beyond its far end.
struct Fetched<R> {
    rows: Vec<R>,
    more: bool,
}

/// Cuts a read of one row more than `limit` (to learn whether more follow) to the page, with the
/// list's total: the page's statement counted it; an empty page (past the end, nothing
/// matches) asks.
async fn finish_page<R>(
    caller: &Caller,
    conn: &mut PgConnection,
    filter: &ListFilter,
    mut rows: Vec<R>,
    limit: i64,
    total_of: impl Fn(&R) -> i64,
) -> Result<(Fetched<R>, i64), AppError> {
    let total = match rows.first() {
        Some(row) => total_of(row),
        None => db::count(&mut *conn, filter).await.or_fail(caller)?,
    };
    let more = i64::try_from(rows.len()).unwrap_or(i64::MAX) > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok((Fetched { rows, more }, total))
}

/// A list row as the page shows it.
fn to_summary(row: db::ClusterTenantListRow) -> Result<ClusterTenantSummary, MalformedRow> {
    let malformed = |what: String| MalformedRow { name: row.name.clone(), what };
    let isolation_tier = IsolationTier::parse(&row.isolation_tier)
        .ok_or_else(|| malformed(format!("isolation tier {}", row.isolation_tier)))?;
    let phase = Phase::parse(&row.phase).ok_or_else(|| malformed(format!("phase {}", row.phase)))?;
    let termination_policy = TerminationPolicy::parse(&row.termination_policy)
        .ok_or_else(|| malformed(format!("termination policy {}", row.termination_policy)))?;
    Ok(ClusterTenantSummary {
        name: row.name,
        display_name: row.display_name,
        isolation_tier,
        phase,
        message: row.message,
        seat_cap: row.seat_cap,
        seats_used: row.active_members,
        termination_policy,
        suspended: row.suspended,
        created_at: row.created_at,
    })
}

/// A cursor as the URL carries it: the row's name, then `.` and its sort value when the sort has
/// one (names are DNS labels, so the first `.` separates).
fn cursor_text(cursor: &db::Cursor) -> String {
    match &cursor.key {
        Some(key) => format!("{}.{key}", cursor.name),
        None => cursor.name.clone(),
    }
}

/// Reads the `field` cursor for `sort`, or says it does not belong to this list.
fn parse_cursor(field: &str, text: Option<&str>, sort: SortKey) -> Result<Option<db::Cursor>, AppError> {
    let Some(text) = text else { return Ok(None) };
    let (name, key) = match text.split_once('.') {
        Some((name, key)) => (name, Some(key.to_owned())),
        None => (text, None),
    };
    let cursor = db::Cursor { name: name.to_owned(), key };
    if name.is_empty() || !cursor.fits(sort) {
        return Err(AppError::field(
            field,
            "Not a position in this list (sorted this way); use the Next and Prev links, or a page number.",
        ));
    }
    Ok(Some(cursor))
}

/// One page of ClusterTenants with the total count: by offset for a numbered page, by keyset
/// after `query.after` or before `query.before` (the list read the other way round from it).
/// A page of the whole fleet (what a platform admin sees) is a kept answer
/// ([`crate::service::kept`]): given again while the fleet's data generation, which follows the
/// customers and their memberships, is the same.
pub async fn list(state: &AppState, caller: &Caller, query: ListQuery) -> Result<ClusterTenantPage, AppError> {
    let fleet = settings(state)?;
    let principal = authorize(caller.principal.as_ref(), Action::ListClusterTenants)?;
    let names = visible_names(principal);
    let query = ListQuery { limit: query.limit.clamp(1, MAX_PAGE_SIZE), offset: query.offset.max(0), ..query };
    if names.is_some() {
        return read_page(state, caller, query, names).await;
    }
    let key = serde_json::to_string(&query).map_err(|e| internal(caller, &e))?;
    let page = kept::answer(
        &state.pool,
        caller,
        &fleet.kept_pages,
        &key,
        // Its rows' text, about; a page holds at most MAX_PAGE_SIZE rows.
        |page| {
            page.items
                .iter()
                .map(|r| 128 + r.name.len() + r.display_name.len() + r.message.as_ref().map_or(0, String::len))
                .sum()
        },
        read_page(state, caller, query, None),
    )
    .await?;
    Ok(ClusterTenantPage::clone(&page))
}

/// [`list`]'s page read from the database, of the customers `names` (all when `None`).
async fn read_page(
    state: &AppState,
    caller: &Caller,
    query: ListQuery,
    names: Option<Vec<String>>,
) -> Result<ClusterTenantPage, AppError> {
    let filter = ListFilter {
        search: query.search.clone(),
        phase: query.phase.map(|p| p.as_str().to_owned()),
        isolation_tier: query.tier.map(|t| t.as_str().to_owned()),
        names,
    };
    let (limit, offset) = (query.limit, query.offset);
    let sort = sort_key(query.sort);
    let after = parse_cursor("after", query.after.as_deref(), sort)?;
    let before = if after.is_some() { None } else { parse_cursor("before", query.before.as_deref(), sort)? };
    let (order, start) = match (&after, &before) {
        (Some(cursor), _) => (query.descending, db::Start::After(cursor)),
        (None, Some(cursor)) => (!query.descending, db::Start::After(cursor)),
        (None, None) => (query.descending, db::Start::Offset(offset)),
    };
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    let read = db::list(&mut conn, &filter, sort, order, limit.saturating_add(1), start).await.or_fail(caller)?;
    let (Fetched { mut rows, more }, total) = finish_page(caller, &mut conn, &filter, read, limit, |r| r.total).await?;
    drop(conn);
    // Read backwards from `before`: `more` means rows before this page.
    let (more_after, more_before) = if before.is_some() {
        rows.reverse();
        (true, more)
    } else {
        (more, offset > 0 || after.is_some())
    };
    let cursor = |row: Option<&db::ClusterTenantListRow>| row.map(|r| cursor_text(&db::Cursor::of(r, sort)));
    let next = if more_after { cursor(rows.last()) } else { None };
    let previous = if more_before { cursor(rows.first()) } else { None };
    let items = rows.into_iter().map(to_summary).collect::<Result<Vec<_>, _>>().map_err(|e| internal(caller, &e))?;
    let (after, before) = (after.as_ref().map(cursor_text), before.as_ref().map(cursor_text));
    Ok(ClusterTenantPage { items, total, query: ListQuery { limit, offset, after, before, ..query }, next, previous })
}

/// Every ClusterTenant, oldest first (the reference's `GET /cluster-tenants`), optionally paged.
pub async fn list_all(
    state: &AppState,
    caller: &Caller,
    limit: Option<i64>,
    offset: i64,
) -> Result<(Vec<ClusterTenant>, i64), AppError> {
    settings(state)?;
    let principal = authorize(caller.principal.as_ref(), Action::ListClusterTenants)?;
    let filter = ListFilter { names: visible_names(principal), ..ListFilter::default() };
    let limit = limit.unwrap_or(i64::MAX - 1).max(0);
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    let read =
        db::list_full_by_creation(&mut conn, &filter, limit.saturating_add(1), offset.max(0)).await.or_fail(caller)?;
    let (Fetched { rows, .. }, total) = finish_page(caller, &mut conn, &filter, read, limit, |r| r.total).await?;
    let items = rows
        .into_iter()
        .map(|r| to_wire(r.row, Some(r.active_members)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| internal(caller, &e))?;
    Ok((items, total))
}

/// One ClusterTenant.
pub async fn get(state: &AppState, caller: &Caller, name: &str) -> Result<ClusterTenant, AppError> {
    settings(state)?;
    authorize(caller.principal.as_ref(), Action::ReadClusterTenant(name))?;
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    read(state, caller, &mut conn, name).await
}

/// A ClusterTenant as `db` sees it (inside a transaction: as that transaction left it, so an
/// answer never depends on what a reconciler does right after the commit).
async fn read(state: &AppState, caller: &Caller, db: &mut PgConnection, name: &str) -> Result<ClusterTenant, AppError> {
    let row = db::get(&mut *db, name).await.map_err(|e| match e {
        DbError::NotFound => not_found(name),
        other => db_failure(caller, other),
    })?;
    let seats = memberships::list(&mut *db, name).await.or_fail(caller)?;
    let active = seats.iter().filter(|m| m.status == "active").count();
    let mut ct = to_wire(row, Some(i64::try_from(active).unwrap_or(i64::MAX))).map_err(|e| internal(caller, &e))?;
    // The organisation in Zitadel's console, for whoever may see the customer.
    if let (Some(identity), Some(ids)) = (settings(state)?.identity.as_ref(), ct.zitadel.as_mut())
        && let Some(org) = &ids.org_id
    {
        ids.console_url = Some(format!("{}/ui/console/orgs/{org}", identity.plane.client().api_url()));
    }
    Ok(ct)
}

/// Only the observed status (the onboarding poll).
pub async fn status(state: &AppState, caller: &Caller, name: &str) -> Result<ClusterTenantStatus, AppError> {
    Ok(get(state, caller, name).await?.status)
}

fn desired<'a>(spec: &'a ClusterTenantSpec, quota: &'a serde_json::Value) -> DesiredState<'a> {
    DesiredState {
        display_name: &spec.display_name,
        vanity_domain: spec.vanity_domain.as_deref(),
        isolation_tier: spec.isolation_tier.as_str(),
        compute_mode: spec.compute_mode.as_str(),
        node_pool: spec.node_pool.as_deref(),
        quota,
        seat_cap: spec.seat_cap,
        suspended: spec.suspended,
        termination_policy: spec.termination_policy.as_str(),
        silo_version: spec.silo_version.as_deref(),
    }
}

fn write_failure(caller: &Caller, spec: &ClusterTenantSpec, err: DbError) -> AppError {
    match err {
        DbError::UniqueViolation { constraint } if constraint == "cluster_tenants_pkey" => AppError::Conflict {
            code: "CONFLICT".into(),
            message: format!("A customer named “{}” already exists.", spec.name),
            field: Some("name".into()),
        },
        DbError::UniqueViolation { constraint } if constraint == "cluster_tenants_vanity_domain_key" => {
            AppError::Conflict {
                code: "CONFLICT".into(),
                message: format!(
                    "{} is already the vanity domain of another customer.",
                    spec.vanity_domain.as_deref().unwrap_or_default()
                ),
                field: Some("vanityDomain".into()),
            }
        }
        other => db_failure(caller, other),
    }
}

fn checked_spec(fleet: &FleetSettings, req: &ClusterTenantCreateRequest) -> Result<ClusterTenantSpec, AppError> {
    let spec = validate(req, &fleet.validation).map_err(|fields| AppError::Validation { fields })?;
    if !spec.isolation_tier.is_available(fleet.validation.dedicated_cluster_available) {
        return Err(AppError::Unprocessable {
            code: "TIER_UNAVAILABLE".into(),
            message: tier_unavailable_message(spec.isolation_tier),
            field: Some("isolationTier".into()),
        });
    }
    Ok(spec)
}

/// Creates a ClusterTenant in phase `pending`, with its first Owner, in one transaction. A
/// platform operator's machine caller (an API token, as the original's clients use) may create it
/// without one: it starts with no owner (the members page says so) and provisioning still runs.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    req: ClusterTenantCreateRequest,
) -> Result<ClusterTenant, AppError> {
    let fleet = settings(state)?;
    let target = req.name.trim().to_owned();
    let has_billing_account = match caller.principal.as_ref() {
        Some(p) if p.is_person() && !p.is_platform_operator => {
            billing_accounts::find_by_subject(&state.pool, &p.subject).await.or_fail(caller)?.is_some()
        }
        _ => false,
    };
    let principal = authorize_mutation(
        state,
        caller,
        Action::CreateClusterTenant { has_billing_account },
        "cluster_tenant.create",
        &target,
    )
    .await?;
    let spec = checked_spec(fleet, &req)?;
    let named_owner = req.owner.as_ref().map(|o| o.subject.trim()).filter(|s| !s.is_empty());
    let owner = match named_owner {
        // Only operators may make someone else the owner.
        Some(subject) if principal.is_platform_operator => Some(subject.to_owned()),
        Some(subject) if subject != principal.subject => {
            return Err(AppError::field("owner.subject", "You can only create customers that you own."));
        }
        _ if principal.is_person() => Some(principal.subject.clone()),
        // Machines own nothing: an operator's token creates a customer without an owner.
        _ if principal.is_platform_operator => None,
        _ => {
            return Err(AppError::field(
                "owner.subject",
                "An API token cannot own a customer; name the first owner's subject.",
            ));
        }
    };
    if owner.as_ref().is_some_and(|o| o.chars().count() > 255) {
        return Err(AppError::field("owner.subject", "Subject is longer than 255 characters."));
    }
    let quota = serde_json::to_value(&spec.quota).map_err(|e| internal(caller, &e))?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let mut kept_org = None;
    // A name whose deleted customer's data was kept is held: nobody inherits that data by
    // accident; an operator may re-attach it on purpose.
    if let Some(tombstone) = tombstones::get(&mut *tx, &spec.name).await.or_fail(caller)? {
        let reattach = principal.is_platform_operator && req.reattach_retained == Some(true);
        if !reattach {
            let kept: Vec<String> = serde_json::from_value(tombstone.retained.clone()).unwrap_or_default();
            return Err(AppError::Conflict {
                code: "NAME_RETAINED".into(),
                message: format!(
                    "“{}” belonged to a customer deleted on {} whose data was kept ({}). Choose another name; only a platform operator can give this one out again, re-attaching that data (reattachRetained: true).",
                    spec.name,
                    tombstone.deleted_at.format("%Y-%m-%d"),
                    if kept.is_empty() { "its database".to_owned() } else { kept.join(" ") },
                ),
                field: Some("name".into()),
            });
        }
        tombstones::remove(&mut *tx, &spec.name).await.or_fail(caller)?;
        let meta = json!({
            "formerOwners": tombstone.former_owners,
            "retained": tombstone.retained,
            "zitadelOrgId": tombstone.zitadel_org_id,
            "owner": owner,
        });
        record(&mut *tx, caller, "cluster_tenant.reattach", &spec.name, "success", meta).await?;
        kept_org = tombstone.zitadel_org_id;
    }
    let mut row =
        db::insert(&mut *tx, &spec.name, &desired(&spec, &quota)).await.map_err(|e| write_failure(caller, &spec, e))?;
    if let Some(org) = kept_org {
        // The kept organisation comes back with its data (its users are that data's owners); the
        // identity step adopts its project and login app by their managed names, or makes them.
        let ids = db::ZitadelIds { org_id: Some(org), ..db::ZitadelIds::default() };
        db::set_zitadel_ids(&mut *tx, &spec.name, &ids).await.or_fail(caller)?;
        row.zitadel_org_id = ids.org_id;
    }
    if let Some(owner) = &owner {
        memberships::upsert(&mut tx, &spec.name, owner, "owner").await.map_err(|e| match e {
            memberships::MembershipError::Db(db) => db_failure(caller, db),
            other => internal(caller, &other),
        })?;
    }
    let meta = json!({ "owner": owner, "isolationTier": spec.isolation_tier.as_str(), "seatCap": spec.seat_cap });
    record(&mut *tx, caller, "cluster_tenant.create", &spec.name, "success", meta).await?;
    provisioning::notify(&mut *tx, &spec.name).await.or_fail(caller)?;
    tx.commit().await.or_fail(caller)?;
    tracing::info!(request_id = %caller.request_id, cluster_tenant.name = %spec.name, actor = %principal.subject, "cluster tenant created");
    to_wire(row, Some(i64::from(owner.is_some()))).map_err(|e| internal(caller, &e))
}

/// Applies an update to a ClusterTenant's desired state.
pub async fn update(
    state: &AppState,
    caller: &Caller,
    name: &str,
    req: ClusterTenantUpdateRequest,
) -> Result<ClusterTenant, AppError> {
    let fleet = settings(state)?;
    let principal =
        authorize_mutation(state, caller, Action::UpdateClusterTenant(name), "cluster_tenant.update", name).await?;
    let current = get(state, caller, name).await?;
    if current.status.phase == Phase::Deleting {
        return Err(AppError::Conflict {
            code: "BEING_DELETED".into(),
            message: format!("“{name}” is being deleted; it can no longer be changed."),
            field: None,
        });
    }
    let spec = checked_spec(fleet, &req.merge_into(&current.spec()))?;
    if !principal.is_platform_operator {
        refuse_operator_only(state, caller, name, &spec.operator_only_changes(&current.spec())).await?;
    }
    let quota = serde_json::to_value(&spec.quota).map_err(|e| internal(caller, &e))?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let row = db::update_desired(&mut *tx, name, &desired(&spec, &quota)).await.map_err(|e| match e {
        DbError::NotFound => not_found(name),
        other => write_failure(caller, &spec, other),
    })?;
    let before = serde_json::to_value(current.spec()).unwrap_or_default();
    let after = serde_json::to_value(&spec).unwrap_or_default();
    record(&mut *tx, caller, "cluster_tenant.update", name, "success", json!({ "before": before, "after": after }))
        .await?;
    provisioning::notify(&mut *tx, name).await.or_fail(caller)?;
    tx.commit().await.or_fail(caller)?;
    tracing::info!(request_id = %caller.request_id, cluster_tenant.name = %name, actor = %principal.subject, "cluster tenant updated");
    to_wire(row, current.seats_used).map_err(|e| internal(caller, &e))
}

/// Refuses a customer's own admin a change of operator-only fields (403
/// `FORBIDDEN_NOT_PLATFORM_OPERATOR`, naming them), recording the refusal.
async fn refuse_operator_only(state: &AppState, caller: &Caller, name: &str, fields: &[&str]) -> Result<(), AppError> {
    if fields.is_empty() {
        return Ok(());
    }
    let message = format!(
        "Only platform operators may change {}; the customer's owners and admins may change the display name and the vanity domain.",
        fields.join(", ")
    );
    Err(not_operator(state, caller, "cluster_tenant.update", name, message, json!({ "fields": fields })).await)
}

/// Only platform operators: anybody else gets [`not_operator`] with `message` (audited as denied,
/// `action` on `target`).
pub(crate) async fn require_operator(
    state: &AppState,
    caller: &Caller,
    action: &str,
    target: &str,
    message: &str,
) -> Result<(), AppError> {
    let principal = caller.principal.as_ref().ok_or(AppError::Unauthorized)?;
    if principal.is_platform_operator {
        return Ok(());
    }
    Err(not_operator(state, caller, action, target, message.to_owned(), json!({})).await)
}

/// The 403 `FORBIDDEN_NOT_PLATFORM_OPERATOR` for `action` on `name`, recorded as denied (with
/// `meta` and the code).
pub(crate) async fn not_operator(
    state: &AppState,
    caller: &Caller,
    action: &str,
    name: &str,
    message: String,
    mut meta: serde_json::Value,
) -> AppError {
    let err = AppError::Forbidden { code: "FORBIDDEN_NOT_PLATFORM_OPERATOR".into(), message };
    meta["code"] = json!(err.code());
    if let Err(audit_err) = record(&state.pool, caller, action, name, "denied", meta).await {
        tracing::warn!(request_id = %caller.request_id, error = %audit_err, "could not record a refusal");
    }
    err
}

/// Starts the deletion of a ClusterTenant: the row is marked `deleting` and the provisioner tears
/// the silo down in order, keeping or deleting the database per the termination policy; the row
/// (and its memberships) goes when the teardown has finished. Asking again is harmless.
pub async fn delete(
    state: &AppState,
    caller: &Caller,
    name: &str,
    termination_policy: Option<TerminationPolicy>,
) -> Result<ClusterTenant, AppError> {
    settings(state)?;
    let principal =
        authorize_mutation(state, caller, Action::DeleteClusterTenant(name), "cluster_tenant.delete", name).await?;
    let current = get(state, caller, name).await?;
    let policy = termination_policy.unwrap_or(current.termination_policy);
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    if policy != current.termination_policy {
        provisioning::set_termination_policy(&mut *tx, name, policy.as_str()).await.or_fail(caller)?;
    }
    provisioning::request_deletion(&mut *tx, name).await.map_err(|e| match e {
        DbError::NotFound => not_found(name),
        other => db_failure(caller, other),
    })?;
    let meta = json!({ "terminationPolicy": policy.as_str() });
    record(&mut *tx, caller, "cluster_tenant.delete", name, "success", meta).await?;
    provisioning::notify(&mut *tx, name).await.or_fail(caller)?;
    // Read before the commit: a teardown with nothing to remove (no cluster, the local backend)
    // may delete the row as soon as the notification is out, and the deletion did succeed.
    let deleting = read(state, caller, &mut tx, name).await?;
    tx.commit().await.or_fail(caller)?;
    tracing::info!(request_id = %caller.request_id, cluster_tenant.name = %name, actor = %principal.subject, "cluster tenant deletion requested");
    Ok(deleting)
}

/// Suspends (scale to zero, block sign-ins) or resumes a ClusterTenant's silo.
pub async fn set_suspended(
    state: &AppState,
    caller: &Caller,
    name: &str,
    suspended: bool,
) -> Result<ClusterTenant, AppError> {
    let request = ClusterTenantUpdateRequest { suspended: Some(suspended), ..ClusterTenantUpdateRequest::default() };
    update(state, caller, name, request).await
}

/// The provisioning checklist of one ClusterTenant: every step in pipeline order.
pub async fn provisioning_view(state: &AppState, caller: &Caller, name: &str) -> Result<ProvisioningView, AppError> {
    let ct = get(state, caller, name).await?;
    let rows = provisioning::steps(&state.pool, name).await.or_fail(caller)?;
    let mut steps = Vec::with_capacity(StepId::ALL.len());
    for step in StepId::ALL {
        let view = match rows.iter().find(|r| r.step == step.as_str()) {
            Some(row) => StepView {
                step,
                state: StepState::parse(&row.state).ok_or_else(|| {
                    internal(caller, &MalformedRow { name: name.to_owned(), what: format!("step state {}", row.state) })
                })?,
                reason: row.reason.clone(),
                message: row.message.clone(),
                action: row.action.clone(),
                started_at: row.started_at,
                finished_at: row.finished_at,
            },
            None => StepView {
                step,
                state: StepState::Pending,
                reason: "NotStarted".into(),
                message: "Not started yet.".into(),
                action: None,
                started_at: None,
                finished_at: None,
            },
        };
        steps.push(view);
    }
    Ok(ProvisioningView {
        name: ct.name,
        phase: ct.status.phase,
        message: ct.status.message,
        silo_url: ct.status.silo_url,
        provisioner: ct.status.provisioner,
        converged: ct.status.observed_generation == Some(ct.status.generation),
        steps,
        retained: ct.status.retained,
        as_of: chrono::Utc::now(),
        bound_namespace: ct.status.bound_namespace,
        generation: ct.status.generation,
        observed_generation: ct.status.observed_generation,
    })
}

/// Asks the provisioner for another attempt now: of one failed step, or of everything.
pub async fn retry(state: &AppState, caller: &Caller, name: &str, step: Option<StepId>) -> Result<(), AppError> {
    settings(state)?;
    authorize_mutation(state, caller, Action::UpdateClusterTenant(name), "cluster_tenant.retry", name).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    provisioning::request_retry(&mut *tx, name, step.map(StepId::as_str)).await.map_err(|e| match e {
        DbError::NotFound => not_found(name),
        other => db_failure(caller, other),
    })?;
    let meta = json!({ "step": step.map(StepId::as_str) });
    record(&mut *tx, caller, "cluster_tenant.retry", name, "success", meta).await?;
    provisioning::notify(&mut *tx, name).await.or_fail(caller)?;
    tx.commit().await.or_fail(caller)?;
    Ok(())
}

/// Rotates the silo credential of `name` (platform operators only): the one in force is revoked
/// at once, and the next reconcile mints a new one and installs it in the silo (a Secret the silo
/// re-reads; the dev process restarts the silo). Audited; the credential itself is never shown.
pub async fn rotate_silo_credential(state: &AppState, caller: &Caller, name: &str) -> Result<bool, AppError> {
    settings(state)?;
    let principal = caller.principal.as_ref().ok_or(AppError::Unauthorized)?;
    if !principal.is_platform_operator {
        // Another organisation's customer answers exactly like a missing one.
        authorize(Some(principal), Action::ReadClusterTenant(name))?;
        let message = "Only platform operators may rotate a silo's credential.".to_owned();
        return Err(
            not_operator(state, caller, "cluster_tenant.silo_credential.rotate", name, message, json!({})).await
        );
    }
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    db::lock(&mut *tx, name).await.map_err(|e| match e {
        DbError::NotFound => not_found(name),
        other => db_failure(caller, other),
    })?;
    let revoked = opencrane_fleet_db::silo_credentials::revoke(&mut *tx, name).await.or_fail(caller)?;
    record(&mut *tx, caller, "cluster_tenant.silo_credential.rotate", name, "success", json!({ "revoked": revoked }))
        .await?;
    provisioning::notify(&mut *tx, name).await.or_fail(caller)?;
    tx.commit().await.or_fail(caller)?;
    tracing::info!(request_id = %caller.request_id, cluster_tenant.name = %name, revoked, "silo credential rotation requested");
    Ok(revoked)
}

/// One membership for a silo's read-model (`GET /api/internal/cluster-tenants/{name}/members`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SiloMember {
    /// IdP subject.
    pub subject: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// `active` or `suspended`.
    pub status: String,
}

/// The row behind the internal API: the customer's own silo (its credential), or a platform
/// operator; `what` names what was asked for in the refusal.
pub(crate) async fn for_silo(
    state: &AppState,
    caller: &Caller,
    name: &str,
    what: &str,
) -> Result<ClusterTenantRow, AppError> {
    settings(state)?;
    match caller.principal.as_ref() {
        Some(p) if p.is_platform_operator => {}
        // A silo learns about its own customer only; another's answers exactly like a missing one.
        Some(p) if p.silo.is_some() => {
            if p.silo.as_deref() != Some(name) {
                return Err(not_found(name));
            }
        }
        Some(_) => {
            return Err(AppError::Forbidden {
                code: "FORBIDDEN".into(),
                message: format!("Only the customer's silo (with its own credential) may read its {what}."),
            });
        }
        None => return Err(authorize(None, Action::ReadClusterTenant(name)).err().unwrap_or_else(|| not_found(name))),
    }
    db::get(&state.pool, name).await.map_err(|e| match e {
        DbError::NotFound => not_found(name),
        other => db_failure(caller, other),
    })
}

/// The memberships of exactly one ClusterTenant, for its silo's read-model: that silo's own
/// credential, or a platform operator; a ClusterTenant being deleted has none.
pub async fn members_for_silo(state: &AppState, caller: &Caller, name: &str) -> Result<Vec<SiloMember>, AppError> {
    let row = for_silo(state, caller, name, "memberships").await?;
    if row.deletion_requested_at.is_some() {
        return Ok(Vec::new());
    }
    let rows = memberships::list(&state.pool, name).await.or_fail(caller)?;
    Ok(rows.into_iter().map(|m| SiloMember { subject: m.subject, role: m.role, status: m.status }).collect())
}

/// What a silo learns about its own ClusterTenant (`GET /api/internal/cluster-tenants/{name}`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SiloSelf {
    /// Name.
    pub name: String,
    /// Display name.
    pub display_name: String,
    /// Phase (stored spelling).
    pub phase: String,
    /// Suspended.
    pub suspended: bool,
    /// Vanity host.
    pub vanity_domain: Option<String>,
}

/// One ClusterTenant's own facts, for its silo (its own credential) or a platform operator.
pub async fn silo_self(state: &AppState, caller: &Caller, name: &str) -> Result<SiloSelf, AppError> {
    let row = for_silo(state, caller, name, "own record").await?;
    Ok(SiloSelf {
        name: row.name,
        display_name: row.display_name,
        phase: row.phase,
        suspended: row.suspended,
        vanity_domain: row.vanity_domain,
    })
}
