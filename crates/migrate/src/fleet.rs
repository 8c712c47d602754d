//! The fleet's side: a migrated customer is created as an operator would create it (its record,
//! its memberships, an audit entry, a notification the provisioner acts on), in one transaction
//! with the start of its migration record, so a crash leaves either both or neither. A name the
//! fleet already has for another customer is never merged into.

use opencrane_common_db::audit::{self, NewAuditEntry};
use opencrane_fleet_db::{billing_accounts, cluster_tenants, provisioning, shared_migrations};
use serde_json::json;
use sqlx::PgPool;

use crate::{
    Error,
    map::{BillingAccount, CustomerPlan},
};

/// Who the fleet's audit log names.
pub const ACTOR: &str = "migrate-shared";

fn db(what: &str) -> impl FnOnce(opencrane_db::Error) -> Error + '_ {
    move |e| Error::Fleet(format!("{what}: {}", crate::chain(&e)))
}

/// The fleet customer (not this migration's `name`) that already has `domain` as its vanity
/// domain, if any.
pub async fn vanity_holder(fleet: &PgPool, name: &str, domain: &str) -> Result<Option<String>, Error> {
    sqlx::query_scalar("SELECT name FROM cluster_tenants WHERE lower(vanity_domain) = lower($1) AND name <> $2 LIMIT 1")
        .bind(domain)
        .bind(name)
        .fetch_optional(fleet)
        .await
        .map_err(|e| Error::Fleet(format!("looking up the vanity domain {domain}: {e}")))
}

/// Whether `name` is free in the fleet, or already this migration's.
pub async fn name_taken(fleet: &PgPool, name: &str) -> Result<bool, Error> {
    let ours = shared_migrations::get(fleet, name).await.map_err(db("reading the migration state"))?.is_some();
    let exists = match cluster_tenants::get(fleet, name).await {
        Ok(_) => true,
        Err(opencrane_db::Error::NotFound) => false,
        Err(e) => return Err(Error::Fleet(format!("looking up {name}: {}", crate::chain(&e)))),
    };
    Ok(exists && !ours)
}

/// Creates `plan`'s customer in the fleet (with its memberships) and starts its migration
/// record; does nothing when the record exists. Refuses a name another customer has.
pub async fn ensure_customer(fleet: &PgPool, plan: &CustomerPlan, source: &str) -> Result<bool, Error> {
    let name = &plan.name;
    let mut tx = fleet.begin().await.map_err(|e| Error::Fleet(format!("starting a transaction: {e}")))?;
    if shared_migrations::get(&mut *tx, name).await.map_err(db("reading the migration state"))?.is_some() {
        return Ok(false);
    }
    let f = &plan.fleet;
    // Migrated data is kept if the customer is ever deleted, until an operator says otherwise.
    let desired = cluster_tenants::DesiredState {
        vanity_domain: f.vanity_domain.as_deref(),
        isolation_tier: &f.isolation_tier,
        compute_mode: &f.compute_mode,
        node_pool: f.node_pool.as_deref(),
        seat_cap: f.seat_cap,
        ..cluster_tenants::DesiredState::shared(&f.display_name, &f.quota, "Retain")
    };
    cluster_tenants::insert(&mut *tx, name, &desired).await.map_err(|e| match e {
        opencrane_db::Error::UniqueViolation { .. } => Error::Fleet(format!(
            "the fleet already has a customer named {name} (or one with its vanity domain) that this migration did not create; nothing was changed"
        )),
        other => Error::Fleet(format!("creating {name}: {}", crate::chain(&other))),
    })?;
    for m in &plan.memberships {
        sqlx::query(
            "INSERT INTO org_memberships (cluster_tenant, subject, role, status) VALUES ($1, $2, $3, $4)
             ON CONFLICT (cluster_tenant, subject) DO NOTHING",
        )
        .bind(name)
        .bind(&m.subject)
        .bind(&m.role)
        .bind(&m.status)
        .execute(&mut *tx)
        .await
        .map_err(|e| Error::Fleet(format!("adding {}'s membership of {name}: {e}", m.subject)))?;
    }
    let meta = json!({ "source": source, "memberships": plan.memberships.len(), "rows": plan.counts() });
    let entry = NewAuditEntry {
        actor: ACTOR,
        actor_role: "operator",
        action: "cluster_tenant.migrate",
        target: name,
        outcome: "success",
        request_id: None,
        metadata: &meta,
    };
    audit::append(&mut *tx, &entry).await.map_err(db("auditing"))?;
    provisioning::notify(&mut *tx, name).await.map_err(db("notifying the provisioner"))?;
    shared_migrations::begin(&mut *tx, name, source).await.map_err(db("starting the migration record"))?;
    tx.commit().await.map_err(|e| Error::Fleet(format!("committing {name}: {e}")))?;
    Ok(true)
}

/// Adds the billing accounts the fleet does not have yet (an existing account is left as it is).
pub async fn ensure_accounts(fleet: &PgPool, accounts: &[BillingAccount]) -> Result<usize, Error> {
    let mut added = 0;
    for a in accounts {
        if billing_accounts::find_by_subject(fleet, &a.subject).await.map_err(db("reading billing accounts"))?.is_some()
        {
            continue;
        }
        billing_accounts::upsert(fleet, &a.subject, a.email.as_deref(), a.display_name.as_deref(), None)
            .await
            .map_err(db("adding a billing account"))?;
        added += 1;
    }
    Ok(added)
}

/// Records the cut-over of `name` (phase and audit entry, one transaction).
pub async fn cut_over(fleet: &PgPool, name: &str) -> Result<(), Error> {
    let mut tx = fleet.begin().await.map_err(|e| Error::Fleet(format!("starting a transaction: {e}")))?;
    shared_migrations::set_phase(&mut *tx, name, "cut-over").await.map_err(db("recording the cut-over"))?;
    let meta = json!({});
    let entry = NewAuditEntry {
        actor: ACTOR,
        actor_role: "operator",
        action: "cluster_tenant.migrate.cut_over",
        target: name,
        outcome: "success",
        request_id: None,
        metadata: &meta,
    };
    audit::append(&mut *tx, &entry).await.map_err(db("auditing"))?;
    tx.commit().await.map_err(|e| Error::Fleet(format!("committing the cut-over of {name}: {e}")))
}
