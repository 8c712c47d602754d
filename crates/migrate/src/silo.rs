//! A customer's own silo database: the copy (every table in one transaction, set-based inserts
//! from the plan's canonical rows, legacy keys sealed with the silo's key) guarded by a marker
//! row written in the same transaction, so a copy that committed is never repeated and one that
//! did not left nothing; and the read-back of the same tables in the canonical shape.

use std::collections::BTreeMap;

use opencrane_portal::seal::SecretBox;
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};

use crate::{Error, map::CustomerPlan, verify::sha256_hex};

/// The request id migrated audit entries carry (so the read-back finds exactly them).
pub const AUDIT_MARK: &str = "shared-migration";

/// Audit rows per insert statement.
const AUDIT_CHUNK: usize = 5_000;

/// What the copy found.
#[derive(Debug, PartialEq, Eq)]
pub enum Copied {
    /// The rows were written now.
    Now,
    /// The marker says a previous run wrote them.
    Before,
}

fn db(what: &str) -> impl FnOnce(sqlx::Error) -> Error + '_ {
    move |e| Error::Silo(format!("{what}: {e}"))
}

/// Copies `plan` into its silo database in one transaction. `key` seals the legacy plaintext
/// provider keys (checked against the silo's recorded credentials key first).
pub async fn copy(pool: &PgPool, plan: &CustomerPlan, key: Option<SecretBox>, source: &str) -> Result<Copied, Error> {
    let name = &plan.name;
    let key = match key {
        Some(key) if !plan.plain_keys.is_empty() => Some(verified(pool, key).await?),
        None if !plan.plain_keys.is_empty() => {
            return Err(Error::Silo(format!(
                "{name} has legacy provider keys to seal, but its silo's credentials key is not known here"
            )));
        }
        _ => None,
    };
    let mut tx = pool.begin().await.map_err(db("starting the copy"))?;
    if locked_marker(&mut tx, name).await? {
        return Ok(Copied::Before);
    }
    write(&mut tx, plan, key.as_ref()).await?;
    mark(&mut tx, name, source, &plan.counts()).await?;
    tx.commit().await.map_err(db("committing the copy"))?;
    Ok(Copied::Now)
}

/// Writes the import marker: `name`'s rows from `source` are in (in the copy's transaction).
pub(crate) async fn mark(
    conn: &mut PgConnection,
    name: &str,
    source: &str,
    counts: &BTreeMap<&str, usize>,
) -> Result<(), Error> {
    sqlx::query("INSERT INTO shared_import (cluster_tenant, source, row_counts) VALUES ($1, $2, $3)")
        .bind(name)
        .bind(source)
        .bind(serde_json::to_value(counts).unwrap_or_default())
        .execute(conn)
        .await
        .map_err(db("writing the import marker"))?;
    Ok(())
}

/// Locks the silo's import marker for this transaction (one copy at a time per silo) and tells
/// whether it holds `name`'s import (`false`: none yet). Another customer's import refuses: the
/// database given for `name` is not its own.
pub(crate) async fn locked_marker(conn: &mut PgConnection, name: &str) -> Result<bool, Error> {
    sqlx::query("LOCK TABLE shared_import IN EXCLUSIVE MODE").execute(&mut *conn).await.map_err(db("locking"))?;
    let marker: Option<String> = sqlx::query_scalar("SELECT cluster_tenant FROM shared_import")
        .fetch_optional(&mut *conn)
        .await
        .map_err(db("reading the import marker"))?;
    match marker {
        Some(owner) if owner == name => Ok(true),
        Some(owner) => Err(Error::Isolation(format!(
            "the database given for {name} already holds the migrated data of {owner}; nothing was written"
        ))),
        None => Ok(false),
    }
}

/// The tables a replaced table takes with it (their rows point at its rows).
fn dependents(table: &str) -> &'static [&'static str] {
    match table {
        "tenants" => &["group_members", "grants", "budgets", "access_tokens"],
        "groups" => &["group_members", "grants"],
        "provider_credentials" => &["model_definitions"],
        _ => &[],
    }
}

/// `tables` with every table that depends on one of them, in copy order.
pub fn with_dependents(tables: &[&str]) -> Vec<&'static str> {
    crate::map::SILO_TABLES
        .iter()
        .copied()
        .filter(|t| tables.contains(t) || tables.iter().any(|changed| dependents(changed).contains(t)))
        .collect()
}

/// The delta copy: replaces `tables` (and what depends on them) in the customer's silo with what
/// the plan maps from the source now, in one transaction — for the tables that changed in the
/// source after the copy (the write freeze). Only into the silo that holds this customer's
/// import (its marker), never before its first copy. Migrated audit entries are replaced by
/// their mark; entries the silo wrote itself stay.
pub async fn copy_again(
    pool: &PgPool,
    plan: &CustomerPlan,
    tables: &[&'static str],
    key: Option<SecretBox>,
) -> Result<(), Error> {
    let name = &plan.name;
    let key = match key {
        Some(key) if tables.contains(&"provider_credentials") && !plan.plain_keys.is_empty() => {
            Some(verified(pool, key).await?)
        }
        _ => None,
    };
    let mut tx = pool.begin().await.map_err(db("starting the delta copy"))?;
    if !locked_marker(&mut tx, name).await? {
        return Err(Error::Silo(format!("{name} has not been copied yet; nothing to copy again")));
    }
    clear(&mut tx, tables).await?;
    let subset = CustomerPlan {
        silo: plan.silo.iter().filter(|(t, _)| tables.contains(t)).map(|(t, rows)| (*t, rows.clone())).collect(),
        name: plan.name.clone(),
        fleet: plan.fleet.clone(),
        memberships: plan.memberships.clone(),
        plain_keys: plan.plain_keys.clone(),
    };
    write(&mut tx, &subset, key.as_ref()).await?;
    tx.commit().await.map_err(db("committing the delta copy"))?;
    Ok(())
}

/// Empties `tables` (dependents last to first) for a delta copy; migrated audit entries only.
pub(crate) async fn clear(conn: &mut PgConnection, tables: &[&'static str]) -> Result<(), Error> {
    for table in crate::map::SILO_TABLES.iter().rev().filter(|t| tables.contains(t)) {
        // Names come from SILO_TABLES, never from input.
        let sql = if *table == "audit_log" {
            format!("DELETE FROM audit_log WHERE request_id = '{AUDIT_MARK}'")
        } else {
            format!("DELETE FROM {table}")
        };
        sqlx::query(&sql).execute(&mut *conn).await.map_err(|e| Error::Silo(format!("replacing {table}: {e}")))?;
    }
    Ok(())
}

fn rows(plan: &CustomerPlan, table: &str) -> Value {
    Value::Array(plan.silo.get(table).cloned().unwrap_or_default())
}

async fn insert(
    conn: &mut PgConnection,
    table: &str,
    sql: &str,
    rows: Value,
    extra: Option<&str>,
) -> Result<(), Error> {
    if rows.as_array().is_none_or(Vec::is_empty) {
        return Ok(());
    }
    let mut query = sqlx::query(sql).bind(rows);
    if let Some(extra) = extra {
        query = query.bind(extra);
    }
    query.execute(conn).await.map_err(|e| Error::Silo(format!("copying {table}: {e}")))?;
    Ok(())
}

pub(crate) async fn write(conn: &mut PgConnection, plan: &CustomerPlan, key: Option<&SecretBox>) -> Result<(), Error> {
    insert(
        conn,
        "org_memberships",
        "INSERT INTO org_memberships (cluster_tenant, subject, role, status)
         SELECT $2, x.subject, x.role, x.status FROM jsonb_to_recordset($1) AS x(subject text, role text, status text)
         ON CONFLICT (cluster_tenant, subject) DO UPDATE SET role = EXCLUDED.role, status = EXCLUDED.status, updated_at = now()",
        rows(plan, "org_memberships"),
        Some(&plan.name),
    )
    .await?;
    insert(
        conn,
        "access_policies",
        "INSERT INTO access_policies (name, description, tenant_selector, allowed_domains, denied_domains, egress_rules)
         SELECT x.name, x.description, x.tenant_selector,
                ARRAY(SELECT jsonb_array_elements_text(x.allowed_domains)),
                ARRAY(SELECT jsonb_array_elements_text(x.denied_domains)), x.egress_rules
         FROM jsonb_to_recordset($1) AS x(name text, description text, tenant_selector jsonb, allowed_domains jsonb,
                                          denied_domains jsonb, egress_rules jsonb)",
        rows(plan, "access_policies"),
        None,
    )
    .await?;
    insert(
        conn,
        "tenants",
        "INSERT INTO tenants (name, display_name, email, subject, team, origin)
         SELECT x.name, x.display_name, x.email, x.subject, x.team, 'admin'
         FROM jsonb_to_recordset($1) AS x(name text, display_name text, email text, subject text, team text)",
        rows(plan, "tenants"),
        None,
    )
    .await?;
    insert(
        conn,
        "groups",
        "INSERT INTO groups (name, scope, description)
         SELECT x.name, x.scope, x.description FROM jsonb_to_recordset($1) AS x(name text, scope text, description text)",
        rows(plan, "groups"),
        None,
    )
    .await?;
    insert(
        conn,
        "group_members",
        "INSERT INTO group_members (group_id, tenant)
         SELECT g.id, x.tenant FROM jsonb_to_recordset($1) AS x(\"group\" text, tenant text)
         JOIN groups g ON g.scope = split_part(x.\"group\", '/', 1) AND g.name = split_part(x.\"group\", '/', 2)",
        rows(plan, "group_members"),
        None,
    )
    .await?;
    insert(
        conn,
        "grants",
        "INSERT INTO grants (payload_type, payload_id, subject_type, subject_id, group_id, access, priority, note, created_by)
         SELECT x.payload_type, x.payload_id, x.subject_type,
                CASE WHEN x.subject_type = 'group' THEN g.id::text ELSE x.subject_id END,
                g.id, x.access, x.priority, x.note, x.created_by
         FROM jsonb_to_recordset($1) AS x(payload_type text, payload_id text, subject_type text, subject_id text,
                                          access text, priority integer, note text, created_by text)
         LEFT JOIN groups g ON x.subject_type = 'group'
                           AND g.scope = split_part(x.subject_id, '/', 1) AND g.name = split_part(x.subject_id, '/', 2)",
        rows(plan, "grants"),
        None,
    )
    .await?;
    insert(
        conn,
        "budgets",
        "INSERT INTO budgets (level, tenant, currency, amount, period)
         SELECT x.level, x.tenant, x.currency, x.amount::numeric, x.period
         FROM jsonb_to_recordset($1) AS x(level text, tenant text, currency text, amount text, period text)",
        rows(plan, "budgets"),
        None,
    )
    .await?;
    let (sealed, referenced): (Vec<Value>, Vec<Value>) = plan
        .silo
        .get("provider_credentials")
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .partition(|r| r["secret_ref"].is_null());
    insert(
        conn,
        "provider_credentials",
        "INSERT INTO provider_credentials (name, provider, secret_ref, hint)
         SELECT x.name, x.provider, x.secret_ref, '' FROM jsonb_to_recordset($1) AS x(name text, provider text, secret_ref text)",
        Value::Array(referenced),
        None,
    )
    .await?;
    for row in sealed {
        let name = row["name"].as_str().unwrap_or_default();
        let provider = row["provider"].as_str().unwrap_or_default();
        let (Some(plain), Some(key)) = (plan.plain_keys.get(name), key) else {
            return Err(Error::Silo(format!("the legacy key for {name} cannot be sealed")));
        };
        let sealed = key
            .seal(plain.0.as_bytes(), &format!("credential:{name}"))
            .map_err(|e| Error::Silo(format!("sealing the legacy key for {name}: {e}")))?;
        let hint = opencrane_portal::seal::hint(&plain.0);
        let source = opencrane_silo_db::models::KeySource::Sealed(&sealed, &hint);
        opencrane_silo_db::models::insert_credential(&mut *conn, name, provider, None, &source)
            .await
            .map_err(|e| Error::Silo(format!("copying provider_credentials: {e}")))?;
    }
    insert(
        conn,
        "model_definitions",
        "INSERT INTO model_definitions (public_name, upstream_model, api_base, credential_id)
         SELECT x.public_name, x.upstream_model, x.api_base, c.id
         FROM jsonb_to_recordset($1) AS x(public_name text, upstream_model text, api_base text, credential text)
         LEFT JOIN provider_credentials c ON c.name = x.credential",
        rows(plan, "model_definitions"),
        None,
    )
    .await?;
    insert(
        conn,
        "model_defaults",
        "INSERT INTO model_defaults (scope, model) SELECT x.scope, x.model FROM jsonb_to_recordset($1) AS x(scope text, model text)",
        rows(plan, "model_defaults"),
        None,
    )
    .await?;
    insert(
        conn,
        "access_tokens",
        "INSERT INTO access_tokens (name, owner_subject, role, token_hash, prefix, created_at, expires_at, last_used_at)
         SELECT x.name, x.owner_subject, x.role, decode(x.token_hash, 'hex'), 'ocp_', COALESCE(x.created_at, now()),
                x.expires_at, x.last_used_at
         FROM jsonb_to_recordset($1) AS x(name text, owner_subject text, role text, token_hash text,
                                          created_at timestamptz, expires_at timestamptz, last_used_at timestamptz)",
        rows(plan, "access_tokens"),
        None,
    )
    .await?;
    for chunk in plan.silo.get("audit_log").map(Vec::as_slice).unwrap_or_default().chunks(AUDIT_CHUNK) {
        insert(
            conn,
            "audit_log",
            "INSERT INTO audit_log (occurred_at, actor, actor_role, action, target, outcome, request_id, metadata)
             SELECT COALESCE(x.occurred_at, now()), x.actor, '', x.action, x.target, 'success', $2, x.metadata
             FROM jsonb_to_recordset($1) AS x(occurred_at timestamptz, actor text, action text, target text, metadata jsonb)",
            Value::Array(chunk.to_vec()),
            Some(AUDIT_MARK),
        )
        .await?;
    }
    Ok(())
}

/// A timestamp column in the canonical form.
macro_rules! ts {
    ($col:literal) => {
        concat!("to_char(", $col, " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')")
    };
}

/// The read-back of each table, in the plan's canonical shape.
fn read_back_sql(table: &str) -> Option<String> {
    Some(match table {
        "org_memberships" => {
            "SELECT jsonb_build_object('subject', subject, 'role', role, 'status', status) FROM org_memberships".into()
        }
        "access_policies" => {
            "SELECT jsonb_build_object('name', name, 'description', description, 'tenant_selector', tenant_selector,
                'allowed_domains', to_jsonb(allowed_domains), 'denied_domains', to_jsonb(denied_domains),
                'egress_rules', egress_rules) FROM access_policies"
                .into()
        }
        "tenants" => {
            "SELECT jsonb_build_object('name', name, 'display_name', display_name, 'email', email, 'subject', subject,
                'team', team) FROM tenants"
                .into()
        }
        "groups" => {
            "SELECT jsonb_build_object('scope', scope, 'name', name, 'description', description) FROM groups".into()
        }
        "group_members" => "SELECT jsonb_build_object('group', g.scope || '/' || g.name, 'tenant', m.tenant)
                FROM group_members m JOIN groups g ON g.id = m.group_id"
            .into(),
        "grants" => "SELECT jsonb_build_object('payload_type', r.payload_type, 'payload_id', r.payload_id,
                'subject_type', r.subject_type,
                'subject_id', CASE WHEN g.id IS NULL THEN r.subject_id ELSE g.scope || '/' || g.name END,
                'access', r.access, 'priority', r.priority, 'note', r.note, 'created_by', r.created_by)
                FROM grants r LEFT JOIN groups g ON g.id = r.group_id"
            .into(),
        "budgets" => {
            "SELECT jsonb_build_object('level', level, 'tenant', tenant, 'currency', currency, 'amount', amount::text,
                'period', period) FROM budgets"
                .into()
        }
        "model_definitions" => {
            "SELECT jsonb_build_object('public_name', d.public_name, 'upstream_model', d.upstream_model,
                'api_base', d.api_base, 'credential', c.name)
                FROM model_definitions d LEFT JOIN provider_credentials c ON c.id = d.credential_id"
                .into()
        }
        "model_defaults" => "SELECT jsonb_build_object('scope', scope, 'model', model) FROM model_defaults".into(),
        "access_tokens" => format!(
            "SELECT jsonb_build_object('name', name, 'owner_subject', owner_subject, 'role', role,
                'token_hash', encode(token_hash, 'hex'), 'created_at', {}, 'expires_at', {}, 'last_used_at', {})
                FROM access_tokens",
            ts!("created_at"),
            ts!("expires_at"),
            ts!("last_used_at")
        ),
        "audit_log" => format!(
            "SELECT jsonb_build_object('occurred_at', {}, 'actor', actor, 'action', action, 'target', target,
                'metadata', metadata) FROM audit_log WHERE request_id = '{AUDIT_MARK}'",
            ts!("occurred_at")
        ),
        _ => return None,
    })
}

/// Reads the silo's rows back, per table, in the canonical shape; sealed credentials are opened
/// with `key` and shown by the SHA-256 of the secret (never the secret).
pub async fn read_back(pool: &PgPool, key: Option<SecretBox>) -> Result<BTreeMap<&'static str, Vec<Value>>, Error> {
    let key = match key {
        Some(key) => Some(verified(pool, key).await?),
        None => None,
    };
    read_back_with(pool, key.as_ref()).await
}

/// [`read_back`] with a key already checked against the silo's (the silo manager's own).
pub(crate) async fn read_back_with(
    pool: &PgPool,
    key: Option<&SecretBox>,
) -> Result<BTreeMap<&'static str, Vec<Value>>, Error> {
    let mut out = BTreeMap::new();
    for table in crate::map::SILO_TABLES {
        let rows: Vec<Value> = if *table == "provider_credentials" {
            credentials(pool, key).await?
        } else {
            let sql = read_back_sql(table).unwrap_or_default();
            sqlx::query_scalar(&sql)
                .fetch_all(pool)
                .await
                .map_err(|e| Error::Silo(format!("reading back {table}: {e}")))?
        };
        out.insert(*table, rows);
    }
    Ok(out)
}

async fn credentials(pool: &PgPool, key: Option<&SecretBox>) -> Result<Vec<Value>, Error> {
    // name, provider, secret_ref, nonce, ciphertext, key_version
    type Row = (String, String, Option<String>, Option<Vec<u8>>, Option<Vec<u8>>, i16);
    let rows: Vec<Row> =
        sqlx::query_as("SELECT name, provider, secret_ref, nonce, ciphertext, key_version FROM provider_credentials")
            .fetch_all(pool)
            .await
            .map_err(|e| Error::Silo(format!("reading back provider_credentials: {e}")))?;
    Ok(rows
        .into_iter()
        .map(|(name, provider, secret_ref, nonce, ciphertext, key_version)| {
            let secret = match (nonce, ciphertext, key) {
                (Some(nonce), Some(ciphertext), Some(key)) => {
                    let sealed = opencrane_silo_db::models::Sealed { nonce, ciphertext, key_version };
                    key.open(&sealed, &format!("credential:{name}"))
                        .map_or_else(|_| json!("(does not open)"), |plain| json!(sha256_hex(&plain)))
                }
                (Some(_), Some(_), None) => json!("(sealed; no key to open it)"),
                _ => Value::Null,
            };
            json!({ "name": name, "provider": provider, "secret_ref": secret_ref, "secret_sha256": secret })
        })
        .collect())
}

/// `key` checked against the silo's recorded credentials key, as the version it recorded.
async fn verified(pool: &PgPool, key: SecretBox) -> Result<SecretBox, Error> {
    opencrane_portal::credentials_key::verify(pool, key, "the silo's credentials key")
        .await
        .map_err(|e| Error::Silo(e.to_string()))
}
