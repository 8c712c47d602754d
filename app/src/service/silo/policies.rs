//! Access policies (who they govern, which domains and networks they open) and grants (allow or
//! deny a payload to a user, tenant or group), with what-if previews computed by the evaluator
//! that enforcement uses.

use std::collections::BTreeMap;

use chrono::Utc;
use opencrane_db::Error as DbError;
use opencrane_entitlements::{
    grants::{Access, Grant, Recipient, decide},
    policy::{self, EgressRule, Policy},
    routing::MODEL,
};
use opencrane_portal::snapshot::{self, Snapshot};
use opencrane_silo_db::{
    grants::{self as grant_db, GrantRow, NewGrant},
    groups,
    policies::{self as policy_db, PolicyFields, PolicyRow},
};
use serde_json::json;

use super::{admin_read, admin_write, conflict, finish, not_found, snapshot as load};
use crate::model::rules::dns_label;
use crate::{
    error::{AppError, FieldErrors},
    model::silo::{
        AccessChange, EgressRuleView, GrantRequest, GrantView, PoliciesOverview, PolicyRequest, PolicyView, WhatIf,
    },
    service::{OrFail as _, db_failure},
    state::{AppState, Caller},
};

/// The payload types grants may name.
pub const PAYLOAD_TYPES: [&str; 3] = ["model", "mcp-server", "skill-bundle"];

fn policy_not_found(name: &str) -> AppError {
    not_found("POLICY_NOT_FOUND", format!("No access policy named “{name}” exists in this silo."))
}

/// A stored policy for the pages.
pub(crate) fn policy_view(row: PolicyRow) -> PolicyView {
    let p = snapshot::policy(&row);
    PolicyView {
        name: row.name,
        description: row.description,
        tenant_selector: p.tenant_selector,
        allowed_domains: row.allowed_domains,
        denied_domains: row.denied_domains,
        egress_rules: p.egress.into_iter().map(|r| EgressRuleView { cidr: r.cidr, ports: r.ports }).collect(),
        used_by: row.used_by,
        resource_drift: row.resource_drift,
    }
}

fn grant_view(row: GrantRow) -> GrantView {
    GrantView {
        id: row.id.to_string(),
        subject_label: row.group_name.clone().unwrap_or_else(|| row.subject_id.clone()),
        payload_type: row.payload_type,
        payload_id: row.payload_id,
        subject_type: row.subject_type,
        subject_id: row.subject_id,
        access: row.access,
        priority: row.priority,
        note: row.note,
        created_by: row.created_by,
        created_at: row.created_at,
    }
}

/// Every policy.
pub async fn list_policies(state: &AppState, caller: &Caller) -> Result<Vec<PolicyView>, AppError> {
    admin_read(state, caller)?;
    Ok(policy_db::list(&state.pool).await.or_fail(caller)?.into_iter().map(policy_view).collect())
}

/// Policies whose AccessPolicy resource differed from their record on the last pass: (name, how).
pub async fn drift(state: &AppState, caller: &Caller) -> Result<Vec<(String, String)>, AppError> {
    admin_read(state, caller)?;
    policy_db::resource_drift(&state.pool).await.or_fail(caller)
}

/// Asks the background loops for a pass now (it puts every policy's resource back), audited.
pub async fn repair(state: &AppState, caller: &Caller) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "policy.repair", "all").await?;
    let tx = state.pool.begin().await.or_fail(caller)?;
    finish(tx, silo, caller, "policy.repair", "all", json!({})).await
}

/// Every grant, newest first.
pub async fn list_grants(state: &AppState, caller: &Caller) -> Result<Vec<GrantView>, AppError> {
    admin_read(state, caller)?;
    Ok(grant_db::list(&state.pool).await.or_fail(caller)?.into_iter().map(grant_view).collect())
}

/// Policies, grants and what the forms offer.
pub async fn overview(state: &AppState, caller: &Caller) -> Result<PoliciesOverview, AppError> {
    admin_read(state, caller)?;
    let db = |e| db_failure(caller, e);
    let policies = list_policies(state, caller).await?;
    let grants = list_grants(state, caller).await?;
    let snap = load(state, caller).await?;
    let groups =
        groups::names(&state.pool).await.map_err(db)?.into_iter().map(|g| (g.id.to_string(), g.name)).collect();
    Ok(PoliciesOverview {
        policies,
        grants,
        models: snap.catalog.public_names(),
        users: snap.tenants.iter().map(|t| t.name.clone()).collect(),
        groups,
        default_model_access: snap.settings.default_model_access,
        domain_enforcement: opencrane_portal::egress::enforcement_note(state.silo()?.cilium_egress).to_owned(),
    })
}

struct ValidPolicy {
    description: String,
    selector: serde_json::Value,
    allowed: Vec<String>,
    denied: Vec<String>,
    egress: serde_json::Value,
    policy: Policy,
}

fn validate_policy(req: &PolicyRequest, name: &str) -> Result<ValidPolicy, AppError> {
    let mut errors = FieldErrors::new();
    errors.check("name", dns_label("Name", name));
    let description = req.description.trim().to_owned();
    if description.chars().count() > 500 {
        errors.add("description", "At most 500 characters.");
    }
    let mut selector = BTreeMap::new();
    for (k, v) in &req.tenant_selector {
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty()
            || k.len() > 63
            || v.len() > 63
            || !k.chars().chain(v.chars()).all(|c| c.is_ascii_alphanumeric() || "-._/".contains(c))
        {
            errors.add(
                "tenantSelector",
                format!("“{k}={v}” is not a label: use key=value with letters, digits, - . _ /."),
            );
        }
        selector.insert(k.to_owned(), v.to_owned());
    }
    let clean = |list: &[String]| -> Vec<String> {
        let mut out: Vec<String> =
            list.iter().map(|d| d.trim().to_ascii_lowercase()).filter(|d| !d.is_empty()).collect();
        out.dedup();
        out
    };
    let allowed = clean(&req.allowed_domains);
    let denied = clean(&req.denied_domains);
    for (field, list) in [("allowedDomains", &allowed), ("deniedDomains", &denied)] {
        for d in list {
            errors.check(field, policy::validate_pattern(d));
        }
    }
    let egress: Vec<EgressRule> = req
        .egress_rules
        .iter()
        .map(|r| EgressRule { cidr: r.cidr.trim().to_owned(), ports: r.ports.clone() })
        .collect();
    for r in &egress {
        errors.check("egressRules", policy::validate_egress(r));
    }
    let policy = Policy {
        name: name.to_owned(),
        tenant_selector: selector.clone(),
        allowed_domains: allowed.clone(),
        denied_domains: denied.clone(),
        egress: egress.clone(),
    };
    errors
        .into_result(ValidPolicy {
            description,
            selector: json!(selector),
            allowed,
            denied,
            egress: json!(egress.iter().map(|r| json!({ "cidr": r.cidr, "ports": r.ports })).collect::<Vec<_>>()),
            policy,
        })
        .map_err(|fields| AppError::Validation { fields })
}

impl ValidPolicy {
    fn fields(&self) -> PolicyFields<'_> {
        PolicyFields {
            description: &self.description,
            tenant_selector: &self.selector,
            allowed_domains: &self.allowed,
            denied_domains: &self.denied,
            egress_rules: &self.egress,
        }
    }
}

/// Creates a policy.
pub async fn create_policy(state: &AppState, caller: &Caller, req: PolicyRequest) -> Result<PolicyView, AppError> {
    let name = req.name.trim().to_owned();
    let silo = admin_write(state, caller, "policy.create", &name).await?;
    let v = validate_policy(&req, &name)?;
    let f = v.fields();
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    policy_db::insert(&mut *tx, &name, &f).await.map_err(|e| match e {
        DbError::UniqueViolation { .. } => conflict("POLICY_EXISTS", "name", "A policy with this name exists.".into()),
        other => db_failure(caller, other),
    })?;
    finish(tx, silo, caller, "policy.create", &name, json!({ "allowedDomains": v.allowed, "deniedDomains": v.denied }))
        .await?;
    get_policy(state, caller, &name).await
}

/// One policy.
pub async fn get_policy(state: &AppState, caller: &Caller, name: &str) -> Result<PolicyView, AppError> {
    admin_read(state, caller)?;
    let row = policy_db::get(&state.pool, name).await.or_fail(caller)?.ok_or_else(|| policy_not_found(name))?;
    Ok(policy_view(row))
}

/// Changes a policy.
pub async fn update_policy(
    state: &AppState,
    caller: &Caller,
    name: &str,
    req: PolicyRequest,
) -> Result<PolicyView, AppError> {
    let silo = admin_write(state, caller, "policy.update", name).await?;
    let v = validate_policy(&req, name)?;
    let f = v.fields();
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = policy_db::get(&mut *tx, name).await.or_fail(caller)?.ok_or_else(|| policy_not_found(name))?;
    policy_db::update(&mut *tx, name, &f).await.or_fail(caller)?;
    let meta = json!({ "allowedDomains": v.allowed, "deniedDomains": v.denied, "before": policy_view(before) });
    finish(tx, silo, caller, "policy.update", name, meta).await?;
    get_policy(state, caller, name).await
}

/// Deletes a policy no user names.
pub async fn delete_policy(state: &AppState, caller: &Caller, name: &str) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "policy.delete", name).await?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let row = policy_db::get(&mut *tx, name).await.or_fail(caller)?.ok_or_else(|| policy_not_found(name))?;
    if !row.used_by.is_empty() {
        return Err(AppError::Conflict {
            code: "POLICY_IN_USE".into(),
            message: format!("Users {} name this policy; give them another one first.", row.used_by.join(", ")),
            field: None,
        });
    }
    policy_db::delete(&mut *tx, name).await.or_fail(caller)?;
    finish(tx, silo, caller, "policy.delete", name, json!({ "before": policy_view(row) })).await?;
    Ok(())
}

/// Which users a policy would govern, before and after a change (`WhatIf` rows with the policy
/// as the "model").
pub async fn preview_policy(state: &AppState, caller: &Caller, req: PolicyRequest) -> Result<WhatIf, AppError> {
    admin_read(state, caller)?;
    let name = req.name.trim().to_owned();
    let v = validate_policy(&req, &name)?;
    let snap = load(state, caller).await?;
    let mut after = snap.policies.clone();
    after.retain(|p| p.name != name);
    after.push(v.policy);
    let mut changes = Vec::new();
    for t in &snap.tenants {
        let labels = policy::labels(&t.name, t.team.as_deref());
        let governs =
            |ps: &[Policy]| policy::select(ps, t.policy_ref.as_deref(), &labels).is_some_and(|(p, _)| p.name == name);
        let (before, now) = (governs(&snap.policies), governs(&after));
        if before != now {
            let why = if now {
                format!("selected by {}", selector_text(&req.tenant_selector))
            } else {
                "no longer selected".into()
            };
            changes.push(AccessChange {
                tenant: t.name.clone(),
                model: format!("policy {name}"),
                before,
                after: now,
                why,
            });
        }
    }
    Ok(WhatIf { changes, evaluated: i64::try_from(snap.tenants.len()).unwrap_or(i64::MAX) })
}

fn selector_text(selector: &BTreeMap<String, String>) -> String {
    selector.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// A validated grant, ready to store or to evaluate.
struct ValidGrant {
    payload_type: String,
    payload_id: String,
    subject_type: String,
    subject_id: String,
    access: Access,
    priority: i32,
    note: String,
}

async fn validate_grant(
    state: &AppState,
    caller: &Caller,
    req: &GrantRequest,
    snap: &Snapshot,
) -> Result<ValidGrant, AppError> {
    let mut errors = FieldErrors::new();
    let payload_type = req.payload_type.trim().to_owned();
    if !PAYLOAD_TYPES.contains(&payload_type.as_str()) {
        errors.add("payloadType", format!("Choose one of {}.", PAYLOAD_TYPES.join(", ")));
    }
    let payload_id = req.payload_id.trim().to_owned();
    if payload_id.is_empty() || payload_id.len() > 200 {
        errors.add("payloadId", "Name what is granted (or * for all of its type).");
    } else if payload_type == MODEL && payload_id != "*" && !snap.catalog.public_names().contains(&payload_id) {
        errors.add("payloadId", format!("No model named “{payload_id}” is defined (see Models)."));
    }
    let subject_type = req.subject_type.trim().to_owned();
    let mut subject_id = req.subject_id.trim().to_owned();
    match subject_type.as_str() {
        "tenant" if snap.tenant(&subject_id).is_none() => {
            errors.add("subjectId", format!("No user named “{subject_id}”."))
        }
        "user" if subject_id.is_empty() => errors.add("subjectId", "Give the person's subject."),
        "group" => {
            let all = groups::names(&state.pool).await.or_fail(caller)?;
            match all.iter().find(|g| g.id.to_string() == subject_id || g.name == subject_id) {
                Some(g) => subject_id = g.id.to_string(),
                None => errors.add("subjectId", format!("No group named “{subject_id}”.")),
            }
        }
        "tenant" | "user" => {}
        _ => errors.add("subjectType", "Choose tenant, user or group."),
    }
    let access = Access::parse(req.access.trim());
    if access.is_none() {
        errors.add("access", "Choose allow or deny.");
    }
    if !(-1000..=1000).contains(&req.priority) {
        errors.add("priority", "Priority is from −1000 to 1000; higher wins.");
    }
    let note = req.note.trim().to_owned();
    if note.chars().count() > 500 {
        errors.add("note", "At most 500 characters.");
    }
    errors
        .into_result(ValidGrant {
            payload_type,
            payload_id,
            subject_type,
            subject_id,
            access: access.unwrap_or(Access::Deny),
            priority: req.priority,
            note,
        })
        .map_err(|fields| AppError::Validation { fields })
}

/// The decisions that would change if `grants` replaced the silo's grants.
fn what_if(snap: &Snapshot, grants: &[Grant]) -> WhatIf {
    let mut changes = Vec::new();
    let models = snap.catalog.public_names();
    for t in &snap.tenants {
        let subject = snap.subject(t);
        for m in &models {
            let before = snap.catalog.access(&subject, m);
            let after = decide(&subject, grants, MODEL, m, snap.catalog.default_access);
            if before.allowed() != after.allowed() {
                changes.push(AccessChange {
                    tenant: t.name.clone(),
                    model: m.clone(),
                    before: before.allowed(),
                    after: after.allowed(),
                    why: after.explain(),
                });
            }
        }
    }
    WhatIf { changes, evaluated: i64::try_from(snap.tenants.len() * models.len()).unwrap_or(i64::MAX) }
}

/// What a grant would change, without making it.
pub async fn preview_grant(state: &AppState, caller: &Caller, req: GrantRequest) -> Result<WhatIf, AppError> {
    admin_read(state, caller)?;
    let snap = load(state, caller).await?;
    let v = validate_grant(state, caller, &req, &snap).await?;
    let recipient = match v.subject_type.as_str() {
        "tenant" => Recipient::Tenant(v.subject_id.clone()),
        "user" => Recipient::User(v.subject_id.clone()),
        _ => Recipient::Group(v.subject_id.clone()),
    };
    let mut grants = snap.catalog.grants.clone();
    grants.push(Grant {
        id: "preview".into(),
        payload_type: v.payload_type,
        payload_id: v.payload_id,
        recipient,
        access: v.access,
        priority: v.priority,
        created_at: Utc::now(),
    });
    Ok(what_if(&snap, &grants))
}

/// What deleting a grant would change.
pub async fn preview_grant_removal(state: &AppState, caller: &Caller, id: &str) -> Result<WhatIf, AppError> {
    admin_read(state, caller)?;
    let snap = load(state, caller).await?;
    if !snap.catalog.grants.iter().any(|g| g.id == id) {
        return Err(grant_not_found(id));
    }
    let grants: Vec<Grant> = snap.catalog.grants.iter().filter(|g| g.id != id).cloned().collect();
    Ok(what_if(&snap, &grants))
}

fn grant_not_found(id: &str) -> AppError {
    not_found("GRANT_NOT_FOUND", format!("No grant with id “{id}” exists in this silo."))
}

/// Creates a grant.
pub async fn create_grant(state: &AppState, caller: &Caller, req: GrantRequest) -> Result<GrantView, AppError> {
    let silo = admin_write(state, caller, "grant.create", req.payload_id.trim()).await?;
    let snap = load(state, caller).await?;
    let v = validate_grant(state, caller, &req, &snap).await?;
    let creator = caller.actor().to_owned();
    let new = NewGrant {
        payload_type: &v.payload_type,
        payload_id: &v.payload_id,
        subject_type: &v.subject_type,
        subject_id: &v.subject_id,
        access: v.access.as_str(),
        priority: v.priority,
        note: &v.note,
        created_by: &creator,
    };
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let id = grant_db::insert(&mut *tx, &new).await.map_err(|e| match e {
        DbError::ForeignKeyViolation { .. } => AppError::field("subjectId", "That group was deleted meanwhile."),
        other => db_failure(caller, other),
    })?;
    let meta = json!({ "id": id, "payloadType": v.payload_type, "subject": format!("{}:{}", v.subject_type, v.subject_id), "access": v.access.as_str(), "priority": v.priority });
    finish(tx, silo, caller, "grant.create", &v.payload_id, meta).await?;
    let id = id.to_string();
    list_grants(state, caller).await?.into_iter().find(|g| g.id == id).ok_or_else(|| grant_not_found(&id))
}

/// Deletes a grant.
pub async fn delete_grant(state: &AppState, caller: &Caller, id: &str) -> Result<(), AppError> {
    let silo = admin_write(state, caller, "grant.delete", id).await?;
    let uuid = uuid::Uuid::parse_str(id.trim()).map_err(|_| grant_not_found(id))?;
    let mut tx = state.pool.begin().await.or_fail(caller)?;
    let before = grant_db::list(&mut *tx)
        .await
        .or_fail(caller)?
        .into_iter()
        .find(|g| g.id == uuid)
        .ok_or_else(|| grant_not_found(id))?;
    grant_db::delete(&mut *tx, uuid).await.or_fail(caller)?;
    finish(tx, silo, caller, "grant.delete", id, json!({ "before": grant_view(before) })).await?;
    Ok(())
}
