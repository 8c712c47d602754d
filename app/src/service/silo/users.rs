//! Users (tenants): list with search and filters, create, edit, suspend/resume, delete.
//! A user's monthly budget is their own limit (see budgets); suspending blocks their key.

use std::collections::BTreeMap;

use opencrane_db::Error as DbError;
use opencrane_entitlements::{format_amount, parse_amount};
use opencrane_silo_db::{
    budgets::{self, BudgetFields},
    groups, litellm as key_db, settings,
    tenants::{self, TenantFields, TenantFilter, TenantRow},
};
use serde_json::json;
use sqlx::PgConnection;

use super::{admin_read, admin_write, conflict, converge, finish, not_found, sync_view};
use crate::model::rules::dns_label;
use crate::{
    error::{AppError, FieldErrors},
    model::{
        rules,
        silo::{KeyStatus, Resources, USERS_PER_PAGE, UserFilter, UserList, UserRequest, UserView},
    },
    service::{OrFail as _, db_failure, record},
    state::{AppState, Caller},
};

fn user_not_found(name: &str) -> AppError {
    not_found("TENANT_NOT_FOUND", format!("No user named “{name}” exists in this silo."))
}

/// What the pages show of users beside their rows: groups, own limits, keys.
struct Extras {
    groups: BTreeMap<String, Vec<String>>,
    limits: BTreeMap<String, String>,
    keys: BTreeMap<String, KeyStatus>,
    drift: BTreeMap<String, String>,
}

/// The extras of the users named `only` (those on the page; `None`: every user), on the
/// request's one connection.
async fn extras(conn: &mut PgConnection, caller: &Caller, only: Option<&[String]>) -> Result<Extras, AppError> {
    let db = |e| db_failure(caller, e);
    let mut groups_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in groups::memberships(&mut *conn, only).await.map_err(db)? {
        groups_of.entry(m.tenant).or_default().push(m.group_name);
    }
    let limits = budgets::list(&mut *conn)
        .await
        .map_err(db)?
        .into_iter()
        .filter_map(|b| {
            let per = opencrane_entitlements::period::Period::parse(&b.period)?.per();
            Some((b.tenant?, format!("{} {} {per}", format_amount(b.amount), b.currency)))
        })
        .collect();
    let keys = key_db::keys(&mut *conn, only)
        .await
        .map_err(db)?
        .into_iter()
        .map(|k| {
            let status = KeyStatus {
                blocked: k.applied["blocked"].as_bool().unwrap_or(false),
                models: serde_json::from_value(k.applied["models"].clone()).unwrap_or_default(),
                max_budget: k.applied["maxBudget"].as_i64().map(format_amount),
                drift: k.drift,
                synced_at: k.synced_at,
                issued_at: k.issued_at,
                revoke_requested_at: k.revoke_requested_at,
            };
            (k.tenant, status)
        })
        .collect();
    let drift = tenants::resource_drift(&mut *conn).await.map_err(db)?.into_iter().collect();
    Ok(Extras { groups: groups_of, limits, keys, drift })
}

fn view(row: TenantRow, extras: &Extras) -> UserView {
    UserView {
        groups: extras.groups.get(&row.name).cloned().unwrap_or_default(),
        own_limit: extras.limits.get(&row.name).cloned(),
        key: extras.keys.get(&row.name).cloned(),
        resource_drift: extras.drift.get(&row.name).cloned(),
        name: row.name,
        display_name: row.display_name,
        email: row.email,
        subject: row.subject,
        team: row.team,
        policy_ref: row.policy_ref,
        resources: Resources { cpu: row.cpu, memory: row.memory },
        suspended: row.suspended,
        phase: row.phase,
        origin: row.origin,
        created_at: row.created_at,
    }
}

/// Users matching `filter`, with what the console's page shows beside them (the team and
/// policy filters' choices, the enforcement loops' state).
pub async fn list(state: &AppState, caller: &Caller, filter: UserFilter) -> Result<UserList, AppError> {
    let (users, total) = page(state, caller, filter).await?;
    let db = |e| db_failure(caller, e);
    let teams = tenants::teams(&state.pool).await.map_err(db)?;
    let policies =
        opencrane_silo_db::policies::list(&state.pool).await.map_err(db)?.into_iter().map(|p| p.name).collect();
    Ok(UserList { users, total, teams, policies, enforcement: sync_view(state, caller).await? })
}

/// Users matching `filter` and how many match (without `filter.page`, all of them).
pub async fn page(state: &AppState, caller: &Caller, filter: UserFilter) -> Result<(Vec<UserView>, i64), AppError> {
    let page = filter.page.map(|p| p.max(1));
    let offset = page.map_or(0, |p| (p - 1).saturating_mul(USERS_PER_PAGE));
    window(state, caller, filter, page.map(|_| USERS_PER_PAGE), offset).await
}

/// At most `limit` users matching `filter` from the `offset`th (`filter.page` aside), and how
/// many match: what the REST list returns. Five statements whatever the number of users (a sixth
/// counts a window), on one connection (a pool acquire and its release's ping for each would
/// double the round trips). Measured against one statement for all of it (200 users, the bench's
/// seed): with each user's groups as a correlated array the route served half the requests/s;
/// with them joined pre-aggregated, Postgres alone took 1.15× the time of these five.
pub async fn window(
    state: &AppState,
    caller: &Caller,
    filter: UserFilter,
    limit: Option<i64>,
    offset: i64,
) -> Result<(Vec<UserView>, i64), AppError> {
    admin_read(state, caller)?;
    let db = |e| db_failure(caller, e);
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    let trimmed = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
    let (q, team, phase) = (trimmed(&filter.q), trimmed(&filter.team), trimmed(&filter.phase));
    let f = TenantFilter {
        search: q.as_deref(),
        team: team.as_deref(),
        suspended: filter.suspended,
        phase: phase.as_deref(),
        limit,
        offset,
    };
    let whole = f.search.is_none() && f.team.is_none() && f.suspended.is_none() && f.phase.is_none();
    let windowed = limit.is_some() || offset > 0;
    let rows = tenants::list(&mut *conn, &f).await.map_err(db)?;
    let total = match windowed {
        false => i64::try_from(rows.len()).unwrap_or(i64::MAX),
        true => tenants::count(&mut *conn, &f).await.map_err(db)?,
    };
    // The whole list's extras are every user's: read them without naming all of them.
    let names: Option<Vec<String>> = (!whole || windowed).then(|| rows.iter().map(|r| r.name.clone()).collect());
    let extras = extras(&mut conn, caller, names.as_deref()).await?;
    Ok((rows.into_iter().map(|r| view(r, &extras)).collect(), total))
}

/// Asks the background loops for a pass now: they compare every user's Tenant resource and
/// LiteLLM key with this database and put back what differs (the answer comes before the pass
/// does; `GET /tenants/drift` shows what is left).
pub async fn repair(state: &AppState, caller: &Caller) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "tenant.repair", "all").await?;
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    record(&mut *conn, caller, "tenant.repair", "all", "success", json!({})).await?;
    converge(silo);
    Ok(())
}

/// One user.
pub async fn get(state: &AppState, caller: &Caller, name: &str) -> Result<UserView, AppError> {
    admin_read(state, caller)?;
    let mut conn = state.pool.acquire().await.or_fail(caller)?;
    let row = tenants::get(&mut *conn, name).await.or_fail(caller)?.ok_or_else(|| user_not_found(name))?;
    let extras = extras(&mut conn, caller, Some(std::slice::from_ref(&row.name))).await?;
    Ok(view(row, &extras))
}

/// A validated request.
#[derive(Debug)]
struct Valid {
    display_name: String,
    email: String,
    subject: String,
    team: Option<String>,
    policy_ref: Option<String>,
    cpu: Option<String>,
    memory: Option<String>,
    /// `Some(None)`: remove the user's own limit.
    budget: Option<Option<i64>>,
}

impl Valid {
    fn fields(&self) -> TenantFields<'_> {
        TenantFields {
            display_name: &self.display_name,
            email: &self.email,
            subject: &self.subject,
            team: self.team.as_deref(),
            policy_ref: self.policy_ref.as_deref(),
            cpu: self.cpu.as_deref(),
            memory: self.memory.as_deref(),
        }
    }
}

fn validate(req: &UserRequest) -> Result<Valid, AppError> {
    let mut errors = FieldErrors::new();
    let opt = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
    let display_name = req.display_name.trim().to_owned();
    errors.check("displayName", rules::display_text("Display name", &display_name, 120));
    let email = req.email.trim().to_owned();
    errors.check("email", rules::email_address(&email));
    let subject = req.subject.trim().to_owned();
    errors.check("subject", rules::display_text("Subject", &subject, 255));
    let team = opt(&req.team);
    if let Some(t) = &team {
        errors.check("team", dns_label("Team", t));
    }
    let policy_ref = opt(&req.policy_ref);
    let resources = req.resources.clone().unwrap_or_default();
    let cpu = opt(&resources.cpu);
    if let Some(c) = &cpu {
        errors.check("resources.cpu", rules::quantity(c));
    }
    let memory = opt(&resources.memory);
    if let Some(m) = &memory {
        errors.check("resources.memory", rules::quantity(m));
    }
    let budget = match req.monthly_budget_usd.as_ref().map(|a| a.0.trim()) {
        None => None,
        Some("") => Some(None),
        Some(text) => match parse_amount(text) {
            Some(micros) => Some(Some(micros)),
            None => {
                errors.add(
                    "monthlyBudgetUsd",
                    "Enter an amount like 25 or 25.50 (two decimals at most), or leave it empty.",
                );
                None
            }
        },
    };
    errors
        .into_result(Valid { display_name, email, subject, team, policy_ref, cpu, memory, budget })
        .map_err(|fields| AppError::Validation { fields })
}

fn write_failure(caller: &Caller, err: DbError) -> AppError {
    match &err {
        DbError::UniqueViolation { constraint } if constraint == "tenants_pkey" => {
            conflict("TENANT_EXISTS", "name", "A user with this name exists; choose another.".into())
        }
        DbError::UniqueViolation { constraint } if constraint == "tenants_subject_key" => conflict(
            "SUBJECT_TAKEN",
            "subject",
            "Another user already has this subject: a person has one user per silo.".into(),
        ),
        DbError::UniqueViolation { constraint } if constraint == "tenants_email_key" => {
            conflict("EMAIL_TAKEN", "email", "Another user already has this e-mail address.".into())
        }
        DbError::ForeignKeyViolation { constraint } if constraint == "tenants_policy_ref_fkey" => {
            AppError::field("policyRef", "No access policy has this name.")
        }
        _ => db_failure(caller, err),
    }
}

async fn apply_budget(
    tx: &mut sqlx::PgConnection,
    caller: &Caller,
    name: &str,
    budget: Option<Option<i64>>,
) -> Result<(), AppError> {
    let db = |e| db_failure(caller, e);
    match budget {
        None => {}
        Some(Some(amount)) => {
            let currency = settings::get(&mut *tx).await.map_err(db)?.currency;
            let f = BudgetFields {
                level: "user",
                group_id: None,
                tenant: Some(name),
                currency: &currency,
                amount,
                period: "month",
                thresholds: &[50, 80, 100],
            };
            budgets::put(tx, &f).await.map_err(db)?;
        }
        Some(None) => {
            let own =
                budgets::list(&mut *tx).await.map_err(db)?.into_iter().find(|b| b.tenant.as_deref() == Some(name));
            if let Some(b) = own {
                budgets::delete(&mut *tx, b.id).await.map_err(db)?;
            }
        }
    }
    Ok(())
}

/// Creates a user.
pub async fn create(state: &AppState, caller: &Caller, req: UserRequest) -> Result<UserView, AppError> {
    let name = req.name.trim().to_owned();
    let silo = admin_write(state, caller, "tenant.create", &name).await?;
    let mut v = match validate(&req) {
        Ok(v) => Ok(v),
        Err(AppError::Validation { mut fields }) => {
            fields.check("name", dns_label("Name", &name));
            Err(AppError::Validation { fields })
        }
        Err(e) => Err(e),
    }?;
    dns_label("Name", &name).map_err(|m| AppError::field("name", m))?;
    let fields = v.fields();
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    tenants::insert(&mut *tx, &name, &fields, "admin").await.map_err(|e| write_failure(caller, e))?;
    apply_budget(&mut tx, caller, &name, v.budget.take()).await?;
    let meta = json!({ "email": v.email, "subject": v.subject, "team": v.team, "policyRef": v.policy_ref });
    finish(tx, silo, caller, "tenant.create", &name, meta).await?;
    get(state, caller, &name).await
}

/// Changes a user.
pub async fn update(state: &AppState, caller: &Caller, name: &str, req: UserRequest) -> Result<UserView, AppError> {
    let silo = admin_write(state, caller, "tenant.update", name).await?;
    let mut v = validate(&req)?;
    let fields = v.fields();
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = tenants::get(&mut *tx, name).await.or_fail(caller)?.ok_or_else(|| user_not_found(name))?;
    let mut before = audit_record(&before);
    let own_limit = budgets::list(&mut *tx)
        .await
        .or_fail(caller)?
        .into_iter()
        .find(|b| b.tenant.as_deref() == Some(name))
        .map(|b| format_amount(b.amount));
    before["monthlyBudget"] = json!(own_limit);
    tenants::update(&mut *tx, name, &fields)
        .await
        .map_err(|e| write_failure(caller, e))?
        .ok_or_else(|| user_not_found(name))?;
    let budget = v.budget.take();
    apply_budget(&mut tx, caller, name, budget).await?;
    let mut meta = json!({
        "email": v.email, "subject": v.subject, "team": v.team, "policyRef": v.policy_ref, "before": before,
    });
    if let Some(limit) = budget {
        meta["monthlyBudget"] = json!(limit.map(format_amount));
    }
    finish(tx, silo, caller, "tenant.update", name, meta).await?;
    get(state, caller, name).await
}

/// Suspends a user (blocks their key and ends their sign-in sessions in this silo, as the
/// reference's suspension cuts the tenant) or resumes them.
pub async fn set_suspended(
    state: &AppState,
    caller: &Caller,
    name: &str,
    suspended: bool,
) -> Result<UserView, AppError> {
    let action = if suspended { "tenant.suspend" } else { "tenant.resume" };
    let silo = admin_write(state, caller, action, name).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let row =
        tenants::set_suspended(&mut *tx, name, suspended).await.or_fail(caller)?.ok_or_else(|| user_not_found(name))?;
    let mut meta = json!({});
    if suspended {
        let ended =
            opencrane_common_db::sessions::delete_for_subject(&mut *tx, &row.subject, None).await.or_fail(caller)?;
        meta = json!({ "sessionsEnded": ended.len() });
    }
    finish(tx, silo, caller, action, name, meta).await?;
    get(state, caller, name).await
}

/// Revokes a user's LiteLLM key (a leaked key, a departing device): the reconciler, asked for a
/// pass at once, deletes it in LiteLLM and issues the user a new one under the same limits.
/// 404 `LITELLM_KEY_NOT_FOUND` while the user has no key yet.
pub async fn revoke_key(state: &AppState, caller: &Caller, name: &str) -> Result<UserView, AppError> {
    let silo = admin_write(state, caller, "litellm_key.revoke", name).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    tenants::get(&mut *tx, name).await.or_fail(caller)?.ok_or_else(|| user_not_found(name))?;
    if !key_db::request_revocation(&mut *tx, name).await.or_fail(caller)? {
        return Err(not_found(
            "LITELLM_KEY_NOT_FOUND",
            format!("User “{name}” has no LiteLLM key yet; it is made on the next pass."),
        ));
    }
    finish(tx, silo, caller, "litellm_key.revoke", name, json!({})).await?;
    get(state, caller, name).await
}

/// Deletes a user: their group memberships, limits, defaults and key go; their spend history
/// stays in the ledger, unattributed (the silo's totals must not shrink).
pub async fn delete(state: &AppState, caller: &Caller, name: &str) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "tenant.delete", name).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = tenants::get(&mut *tx, name).await.or_fail(caller)?.ok_or_else(|| user_not_found(name))?;
    tenants::delete(&mut *tx, name).await.or_fail(caller)?;
    finish(tx, silo, caller, "tenant.delete", name, json!({ "before": audit_record(&before) })).await?;
    Ok(())
}

/// What the audit log keeps of a user as it was before a change or deletion.
fn audit_record(row: &TenantRow) -> serde_json::Value {
    json!({
        "displayName": row.display_name, "email": row.email, "subject": row.subject, "team": row.team,
        "policyRef": row.policy_ref, "cpu": row.cpu, "memory": row.memory, "suspended": row.suspended,
    })
}

/// A group name from the identity provider's groups claim, as a silo group name (`Platform
/// Team` → `platform-team`, `/org/eng` → `org-eng`); `None` when nothing usable is left.
pub fn idp_group_name(claim: &str) -> Option<String> {
    let mut name = String::new();
    for c in claim.trim().chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | ':') {
            name.push(c);
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    let name: String = name.trim_matches(|c: char| !c.is_ascii_alphanumeric()).chars().take(80).collect();
    let name = name.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned();
    (!name.is_empty()).then_some(name)
}

/// The user name given to a member adopted at first sign-in: `u-` and the first ten hex digits
/// of the SHA-256 of their subject (stable, and reveals nothing about the person).
pub fn adopted_name(subject: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(subject.as_bytes());
    let hex: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    format!("u-{hex}")
}

/// At a member's sign-in: creates their user record the first time (adoption) and mirrors the
/// identity provider's groups claim into `idp` groups. Returns the user's name, or `None` for
/// callers who are not a person with an active membership (platform operators who are not
/// members, tokens) or who have no e-mail address to record.
pub async fn adopt(state: &AppState, caller: &Caller) -> Result<Option<String>, AppError> {
    let silo = state.silo()?;
    let Some(p) = caller.principal.as_ref() else { return Ok(None) };
    if !p.is_person() || p.role_in(&silo.cluster_tenant).is_none() {
        return Ok(None);
    }
    let db = |e| db_failure(caller, e);
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let name = match tenants::by_subject(&mut *tx, &p.subject).await.map_err(db)? {
        Some(t) => t.name,
        None => {
            let Some(email) = p.email.clone().filter(|e| e.contains('@')) else { return Ok(None) };
            let name = adopted_name(&p.subject);
            let display = if p.display_name.trim().is_empty() {
                email.clone()
            } else {
                p.display_name.chars().take(120).collect()
            };
            let fields = TenantFields {
                display_name: &display,
                email: &email,
                subject: &p.subject,
                team: None,
                policy_ref: None,
                cpu: None,
                memory: None,
            };
            match tenants::insert(&mut *tx, &name, &fields, "sign-in").await {
                Ok(_) => {}
                // Someone else holds the address (an admin's record for another subject): leave
                // both alone rather than guess.
                Err(DbError::UniqueViolation { constraint }) => {
                    tracing::warn!(request_id = %caller.request_id, %constraint, "not adopting a member whose e-mail or name is taken");
                    return Ok(None);
                }
                Err(e) => return Err(db(e)),
            }
            record(&mut *tx, caller, "tenant.adopt", &name, "success", json!({ "subject": p.subject })).await?;
            name
        }
    };
    let groups: Vec<String> = p.groups.iter().filter_map(|g| idp_group_name(g)).collect();
    let changed = groups::mirror_idp_groups(&mut tx, &name, &groups).await.map_err(db)?;
    if changed > 0 {
        record(&mut *tx, caller, "group.mirror", &name, "success", json!({ "groups": groups })).await?;
    }
    tx.commit().await.or_fail(caller)?;
    converge(silo);
    Ok(Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::silo::Amount;

    fn req() -> UserRequest {
        UserRequest {
            name: "ana".into(),
            display_name: "Ana".into(),
            email: "ana@example.com".into(),
            subject: "s-ana".into(),
            team: Some("eng".into()),
            policy_ref: None,
            resources: Some(Resources { cpu: Some("500m".into()), memory: Some("1Gi".into()) }),
            monthly_budget_usd: Some(Amount("25.50".into())),
        }
    }

    #[test]
    fn identity_provider_groups_become_valid_group_names() {
        assert_eq!(idp_group_name("Platform Team").as_deref(), Some("platform-team"));
        assert_eq!(idp_group_name("/org/eng/").as_deref(), Some("org-eng"));
        assert_eq!(idp_group_name("  ").as_deref(), None);
        assert_eq!(idp_group_name("ÄÖ").as_deref(), None);
        assert_eq!(adopted_name("sub-1"), adopted_name("sub-1"));
        assert_ne!(adopted_name("sub-1"), adopted_name("sub-2"));
        assert_eq!(adopted_name("sub-1").len(), 12);
    }

    #[test]
    fn valid_requests_pass_and_every_bad_field_is_named() {
        let v = validate(&req()).unwrap();
        assert_eq!(v.budget, Some(Some(25_500_000)));
        let bad = UserRequest {
            display_name: " ".into(),
            email: "ana".into(),
            subject: String::new(),
            team: Some("Eng Team".into()),
            resources: Some(Resources { cpu: Some("lots".into()), memory: Some("1GB".into()) }),
            monthly_budget_usd: Some(Amount("12.345".into())),
            ..req()
        };
        let AppError::Validation { fields } = validate(&bad).unwrap_err() else { panic!("not a validation error") };
        for field in
            ["displayName", "email", "subject", "team", "resources.cpu", "resources.memory", "monthlyBudgetUsd"]
        {
            assert!(fields.get(field).is_some(), "{field}: {fields:?}");
        }
        let cleared = UserRequest { monthly_budget_usd: Some(Amount(String::new())), ..req() };
        assert_eq!(validate(&cleared).unwrap().budget, Some(None));
        // The one quantity rule: what a ResourceQuota accepts, nothing else.
        let with = |cpu: &str, memory: &str| UserRequest {
            resources: Some(Resources { cpu: Some(cpu.into()), memory: Some(memory.into()) }),
            ..req()
        };
        for (cpu, memory) in [("1", "512Mi"), ("0.5", "2Gi"), ("250m", "1G"), ("1.", "100n"), (".5", "+4")] {
            assert!(validate(&with(cpu, memory)).is_ok(), "{cpu} {memory}");
        }
        for (cpu, memory) in [("m", "1Gi"), ("1.5.5", "1Gi"), ("1", "1K"), ("-1", "1Gi")] {
            assert!(validate(&with(cpu, memory)).is_err(), "{cpu} {memory}");
        }
    }
}
