//! The loop that makes LiteLLM enforce what the silo database says.
//!
//! The database is the desired state; LiteLLM is converged to it on every pass (every 30 s, and
//! right after a change in the portal): provider credentials, model deployments and fallback
//! chains, then spend is ingested from LiteLLM's logs into the ledger, then every user's key is
//! made to match [`opencrane_entitlements::keys::desired`] — allowed models, a budget aligned with
//! the calendar period of the user's own limit, and blocked while any silo, group or user limit
//! is reached (or the user is suspended). Threshold notices are recorded once per period. What
//! LiteLLM held that the portal did not put there is reported as drift and repaired.
//!
//! Per-user budgets: LiteLLM's own `budget_duration` counts from its own reset schedule, so the
//! portal sets no duration and instead gives the key a `max_budget` of "its spend before this
//! period + the limit", recomputed at each calendar boundary. LiteLLM then stops the key exactly
//! when the period's limit is used up, and the reset happens at local midnight of the silo.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use opencrane_entitlements::{
    MICROS_PER_UNIT, Micros,
    budget::Level,
    format_amount,
    keys::{self, KeySpec},
};
use opencrane_silo_db::{
    budgets::{self, SpendEvent},
    litellm as key_db, models,
};
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::sync::{Mutex, Notify};

use crate::{
    litellm::{KeyFields, KeyInfo, LiteLlm, LiteLlmError, ModelEntry},
    seal::{SealError, SecretBox},
    snapshot::{Snapshot, SnapshotError},
};

/// How often a pass runs when nothing asks for one sooner.
pub const INTERVAL: Duration = Duration::from_secs(30);

/// The prefix of every name a silo's portal owns in LiteLLM: `opencrane.<silo>.` (a dot cannot
/// occur in a silo name, so silo `acme` never claims `acme-x`'s names), so that a LiteLLM shared
/// by several silos (as in `dev`) never has one silo's reconciler touch another's keys,
/// credentials or deployments.
pub fn prefix(silo: &str) -> String {
    format!("opencrane.{silo}.")
}

/// Why a pass failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// LiteLLM failed.
    #[error(transparent)]
    LiteLlm(#[from] LiteLlmError),
    /// The database failed.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A stored secret did not open.
    #[error(transparent)]
    Seal(#[from] SealError),
}

impl From<opencrane_db::Error> for ReconcileError {
    fn from(e: opencrane_db::Error) -> Self {
        Self::Snapshot(SnapshotError::Db(e))
    }
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Keys generated.
    pub keys_created: u32,
    /// Keys whose models or budget were updated.
    pub keys_updated: u32,
    /// Keys blocked.
    pub keys_blocked: u32,
    /// Keys unblocked.
    pub keys_unblocked: u32,
    /// Keys of deleted users removed from LiteLLM.
    pub orphans_deleted: u32,
    /// Keys revoked by an admin (deleted in LiteLLM; a new one is issued in the same pass).
    pub keys_revoked: u32,
    /// Deployments added (or replaced).
    pub models_added: u32,
    /// Deployments removed.
    pub models_removed: u32,
    /// Credentials pushed.
    pub credentials_pushed: u32,
    /// New spend events.
    pub spend_ingested: u64,
    /// New threshold notices.
    pub notices: u32,
    /// What LiteLLM held that differed from what the portal last applied.
    pub drift: Vec<String>,
    /// Per-object failures (the pass went on).
    pub failures: Vec<String>,
}

impl PassReport {
    /// Objects changed in LiteLLM.
    pub fn repaired(&self) -> u32 {
        self.keys_created
            + self.keys_updated
            + self.keys_blocked
            + self.keys_unblocked
            + self.orphans_deleted
            + self.keys_revoked
            + self.models_added
            + self.models_removed
            + self.credentials_pushed
    }

    /// One line for people.
    pub fn summary(&self) -> String {
        if !self.failures.is_empty() {
            return format!("{} problem(s): {}", self.failures.len(), self.failures.join("; "));
        }
        let mut parts = vec![format!("{} change(s) applied", self.repaired())];
        if !self.drift.is_empty() {
            parts.push(format!("drift repaired: {}", self.drift.join("; ")));
        }
        parts.join("; ")
    }
}

/// Asks the reconciler for a pass soon (after a change in the portal).
#[derive(Clone, Debug, Default)]
pub struct Trigger(Arc<Notify>);

impl Trigger {
    /// Requests a pass.
    pub fn poke(&self) {
        self.0.notify_one();
    }

    /// Waits for a request, at most `limit`.
    pub async fn wait(&self, limit: Duration) {
        let _ = tokio::time::timeout(limit, self.0.notified()).await;
    }
}

/// Fallback chains: (public name, fallbacks in order).
type Chains = Vec<(String, Vec<String>)>;

/// The reconciler of one silo.
#[derive(Debug)]
pub struct Reconciler {
    pool: PgPool,
    litellm: LiteLlm,
    secrets: Arc<SecretBox>,
    trigger: Trigger,
    pushed_fallbacks: Mutex<Option<Chains>>,
    silo: String,
    prefix: String,
    /// Kubernetes mode: reads the keys credentials reference in Secrets.
    secret_reader: Option<crate::secrets::SecretReader>,
}

/// A short fingerprint of a key (to notice a changed Secret without storing the key).
fn fingerprint(key: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
    digest.as_ref()[..6].iter().map(|b| format!("{b:02x}")).collect()
}

fn to_units(micros: Micros) -> f64 {
    // Exact for every amount below 2^53 millionths (9 billion units).
    #[allow(clippy::cast_precision_loss, reason = "amounts are far below 2^53 millionths")]
    let value = micros as f64 / MICROS_PER_UNIT as f64;
    value
}

fn to_micros(units: f64) -> Micros {
    #[allow(clippy::cast_possible_truncation, reason = "spend is far below i64::MAX millionths")]
    let value = (units * MICROS_PER_UNIT as f64).round() as Micros;
    value
}

fn fields(alias: &str, spec: &KeySpec) -> KeyFields {
    KeyFields {
        key_alias: alias.to_owned(),
        // An empty list means "every model" to LiteLLM: a key without models is blocked instead,
        // and keeps a list that names nothing real.
        models: if spec.models.is_empty() { vec!["opencrane-no-model".into()] } else { spec.models.clone() },
        max_budget: spec.max_budget.map(to_units),
        metadata: json!({ "tenant": spec.tenant, "managed_by": "opencrane" }),
    }
}

fn applied(spec: &KeySpec) -> Value {
    json!({ "models": fields("", spec).models, "maxBudget": spec.max_budget, "blocked": spec.blocked })
}

/// How an observed key differs from `spec` (empty when it matches).
fn differences(spec: &KeySpec, info: &KeyInfo) -> Vec<&'static str> {
    let want = fields("", spec);
    let mut diff = Vec::new();
    let observed: BTreeSet<&String> = info.models.iter().collect();
    if observed != want.models.iter().collect() {
        diff.push("models");
    }
    let budget_differs = match (want.max_budget, info.max_budget) {
        (None, None) => false,
        (Some(a), Some(b)) => (a - b).abs() > 1e-6,
        _ => true,
    };
    if budget_differs {
        diff.push("budget");
    }
    if info.blocked.unwrap_or(false) != spec.blocked {
        diff.push("blocked");
    }
    diff
}

impl Reconciler {
    /// A reconciler of silo `silo`'s database `pool` against `litellm`.
    pub fn new(silo: &str, pool: PgPool, litellm: LiteLlm, secrets: Arc<SecretBox>) -> Self {
        Self {
            pool,
            litellm,
            secrets,
            trigger: Trigger::default(),
            pushed_fallbacks: Mutex::new(None),
            silo: silo.to_owned(),
            prefix: prefix(silo),
            secret_reader: None,
        }
    }

    /// Reads the keys that credentials reference (`secretRef`) from the silo namespace's Secrets.
    #[must_use]
    pub fn with_secret_reader(mut self, reader: crate::secrets::SecretReader) -> Self {
        self.secret_reader = Some(reader);
        self
    }

    /// The LiteLLM alias of a user's key.
    pub fn alias(&self, tenant: &str) -> String {
        format!("{}{tenant}", self.prefix)
    }

    fn credential_name(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// The handle that asks for an early pass.
    pub fn trigger(&self) -> Trigger {
        self.trigger.clone()
    }

    /// Runs passes forever: every [`INTERVAL`], or sooner when triggered.
    pub async fn run(self) {
        loop {
            let outcome = self.pass(Utc::now()).await;
            let (ok, message, repaired) = match &outcome {
                Ok(r) => (r.failures.is_empty(), r.summary(), i32::try_from(r.repaired()).unwrap_or(i32::MAX)),
                Err(e) => (false, e.to_string(), 0),
            };
            if !ok {
                tracing::warn!(litellm = self.litellm.base(), %message, "LiteLLM pass incomplete");
            }
            if let Err(e) = key_db::record_sync(&self.pool, ok, &message, repaired).await {
                tracing::warn!(error = %e, "could not record the LiteLLM pass");
            }
            self.trigger.wait(INTERVAL).await;
        }
    }

    /// One pass at `now`.
    pub async fn pass(&self, now: DateTime<Utc>) -> Result<PassReport, ReconcileError> {
        let mut report = PassReport::default();
        self.credentials(&mut report).await?;
        self.models(&mut report).await?;
        self.fallbacks(&mut report).await?;
        self.ingest_spend(now, &mut report).await?;
        let snapshot = Snapshot::load(&self.pool).await?;
        let ledger = snapshot.ledger(&self.pool, now).await?;
        self.keys(&snapshot, &ledger, &mut report).await?;
        self.notices(&snapshot, &ledger, &mut report).await?;
        Ok(report)
    }

    /// The key a credential's `secretRef` points at, or why it cannot be read.
    async fn referenced_key(&self, reference: &str) -> Result<String, String> {
        match &self.secret_reader {
            Some(reader) => reader.read(reference).await,
            None => Err(format!(
                "Secret “{}” cannot be read: Secret references are read from the silo's namespace, and this silo runs outside Kubernetes. Paste the key instead.",
                crate::secrets::split(reference).0
            )),
        }
    }

    async fn credentials(&self, report: &mut PassReport) -> Result<(), ReconcileError> {
        let desired = models::credentials(&self.pool).await?;
        let observed = self.litellm.credentials().await?;
        for c in &desired {
            let name = self.credential_name(&c.name);
            let current = observed.iter().find(|o| o.credential_name == name);
            let pushed = |version: &str| {
                current.is_some_and(|o| {
                    o.credential_info.get("opencrane_version").and_then(Value::as_str) == Some(version)
                })
            };
            let (key, version) = match &c.secret_ref {
                // The operator's Secret is read on every pass: a changed key is pushed at once.
                Some(reference) => match self.referenced_key(reference).await {
                    Ok(key) => {
                        models::set_secret_status(&self.pool, c.id, None).await?;
                        let version = format!("{}#{}", c.updated_at.to_rfc3339(), fingerprint(&key));
                        (key, version)
                    }
                    Err(problem) => {
                        // LiteLLM keeps what it was last given: a Secret deleted by mistake does
                        // not stop the models; the problem is on the credential and the pass.
                        models::set_secret_status(&self.pool, c.id, Some(&problem)).await?;
                        report.failures.push(format!("credential {}: {problem}", c.name));
                        continue;
                    }
                },
                None => {
                    let version = c.updated_at.to_rfc3339();
                    if pushed(&version) {
                        continue;
                    }
                    let Some(sealed) = models::credential_secret(&self.pool, c.id).await? else { continue };
                    let key = String::from_utf8(self.secrets.open(&sealed, &format!("credential:{}", c.name))?)
                        .unwrap_or_default();
                    (key, version)
                }
            };
            if pushed(&version) {
                continue;
            }
            if current.is_some() {
                self.litellm.delete_credential(&name).await?;
            }
            let mut values = json!({ "api_key": key });
            if let Some(base) = &c.api_base {
                values["api_base"] = json!(base);
            }
            let info = json!({ "custom_llm_provider": c.provider, "opencrane_version": version });
            self.litellm.add_credential(&name, values, info).await?;
            report.credentials_pushed += 1;
        }
        for o in observed.iter().filter(|o| o.credential_name.starts_with(&self.prefix)) {
            if !desired.iter().any(|c| self.credential_name(&c.name) == o.credential_name) {
                self.litellm.delete_credential(&o.credential_name).await?;
                report.drift.push(format!("credential {} was not the portal's", o.credential_name));
            }
        }
        Ok(())
    }

    async fn models(&self, report: &mut PassReport) -> Result<(), ReconcileError> {
        let desired: Vec<ModelEntry> = models::definitions(&self.pool)
            .await?
            .into_iter()
            .map(|d| {
                let mut params = json!({ "model": d.upstream_model, "weight": d.weight });
                if let Some(base) = d.api_base {
                    params["api_base"] = json!(base);
                }
                if let Some(cred) = d.credential_name {
                    params["litellm_credential_name"] = json!(self.credential_name(&cred));
                }
                ModelEntry {
                    model_name: d.public_name,
                    litellm_params: params,
                    model_info: json!({ "id": d.id.to_string(), "opencrane_managed": true, "opencrane_silo": self.silo }),
                }
            })
            .collect();
        let observed = self.litellm.models().await?;
        let matches = |want: &ModelEntry, have: &ModelEntry| {
            let p = |e: &ModelEntry, k: &str| e.litellm_params.get(k).cloned().unwrap_or(Value::Null);
            want.model_name == have.model_name
                && ["model", "api_base", "litellm_credential_name", "weight"].iter().all(|k| p(want, k) == p(have, k))
        };
        for want in &desired {
            match observed.iter().find(|o| o.id() == want.id()) {
                Some(have) if matches(want, have) => {}
                Some(have) => {
                    report.drift.push(format!("deployment of {} differed", have.model_name));
                    self.litellm.delete_model(want.id().unwrap_or_default()).await?;
                    self.litellm.add_model(want).await?;
                    report.models_added += 1;
                }
                None => {
                    self.litellm.add_model(want).await?;
                    report.models_added += 1;
                }
            }
        }
        let managed = |o: &ModelEntry| {
            o.model_info.get("opencrane_managed").and_then(Value::as_bool) == Some(true)
                && o.model_info.get("opencrane_silo").and_then(Value::as_str) == Some(self.silo.as_str())
        };
        for o in observed.iter().filter(|o| managed(o)) {
            if !desired.iter().any(|d| d.id() == o.id()) {
                self.litellm.delete_model(o.id().unwrap_or_default()).await?;
                report.models_removed += 1;
            }
        }
        Ok(())
    }

    async fn fallbacks(&self, report: &mut PassReport) -> Result<(), ReconcileError> {
        let chains = models::fallbacks(&self.pool).await?;
        let mut pushed = self.pushed_fallbacks.lock().await;
        if pushed.as_ref() != Some(&chains) {
            self.litellm.set_fallbacks(&chains).await?;
            report.models_added += u32::from(pushed.is_some());
            *pushed = Some(chains);
        }
        Ok(())
    }

    async fn ingest_spend(&self, now: DateTime<Utc>, report: &mut PassReport) -> Result<(), ReconcileError> {
        let keys = key_db::keys(&self.pool, None).await?;
        if keys.is_empty() {
            return Ok(());
        }
        // Each pass rereads the last 35 days (a month plus a margin for late logs); requests
        // already in the ledger are skipped by id.
        let from = (now - chrono::Duration::days(35)).date_naive();
        let to = (now + chrono::Duration::days(1)).date_naive();
        let logs = self.litellm.spend_logs(from, to).await?;
        let events: Vec<SpendEvent> = logs
            .into_iter()
            .filter_map(|log| {
                let tenant = keys.iter().find(|k| k.token_id == log.api_key)?.tenant.clone();
                Some(SpendEvent {
                    request_id: log.request_id,
                    tenant: Some(tenant),
                    model: log.model_group.filter(|m| !m.is_empty()).unwrap_or(log.model),
                    amount: to_micros(log.spend).max(0),
                    occurred_at: log.start_time,
                    input_tokens: log.prompt_tokens.max(0),
                    output_tokens: log.completion_tokens.max(0),
                })
            })
            .collect();
        if !events.is_empty() {
            report.spend_ingested = budgets::record_spend(&self.pool, &events).await?;
        }
        Ok(())
    }

    async fn keys(
        &self,
        snapshot: &Snapshot,
        ledger: &crate::snapshot::Ledger,
        report: &mut PassReport,
    ) -> Result<(), ReconcileError> {
        let records = key_db::keys(&self.pool, None).await?;
        for tenant in &snapshot.tenants {
            let subject = snapshot.subject(tenant);
            let limits = snapshot.limits_for(&subject, ledger)?;
            let own = limits.iter().find(|l| matches!(&l.limit.level, Level::User { tenant: t } if *t == tenant.name));
            let mut record = records.iter().find(|r| r.tenant == tenant.name);
            if record.is_some_and(|r| r.revoke_requested_at.is_some()) {
                // Revoked by an admin: the old key stops working now, and a new one is issued
                // below as for a user without a key (its period's spend still counts).
                if let Err(e) = self.litellm.delete_keys(&[self.alias(&tenant.name)]).await {
                    report.failures.push(format!("revoking the key of {}: {e}", tenant.name));
                    continue;
                }
                report.keys_revoked += 1;
                record = None;
            }
            let info = match record {
                Some(r) => self.litellm.key_info(&r.token_id).await?,
                None => None,
            };
            let observed_spend = info.as_ref().map_or(0, |i| to_micros(i.spend));
            // The key's spend before the current period of the user's own limit: kept within a
            // period, recomputed from the ledger when a new period begins.
            let (period_start, spend_before) = match (own, record) {
                (Some(l), Some(r)) if r.period_start == Some(l.window.start) && info.is_some() => {
                    (Some(l.window.start), r.spend_before_period)
                }
                // Negative for a key issued mid-period (a lost key given again): the period's
                // spend so far still counts against the new key's budget.
                (Some(l), _) => (Some(l.window.start), observed_spend - l.spent),
                (None, _) => (None, 0),
            };
            let spec = keys::desired(&subject, snapshot.hold(tenant), &snapshot.catalog, &limits, spend_before);
            let outcome = self.converge_key(tenant.name.as_str(), &spec, record, info, report).await;
            let (drift, spend) = match outcome {
                Ok(d) => d,
                Err(e) => {
                    report.failures.push(format!("key of {}: {e}", tenant.name));
                    continue;
                }
            };
            let drift_text = (!drift.is_empty()).then(|| drift.join(", "));
            key_db::record_pass(
                &self.pool,
                &tenant.name,
                &applied(&spec),
                spend.unwrap_or(observed_spend),
                period_start,
                spend_before,
                drift_text.as_deref(),
            )
            .await?;
        }
        let orphans: Vec<String> = self
            .litellm
            .list_keys(&self.prefix)
            .await?
            .into_iter()
            .filter_map(|k| k.key_alias)
            .filter(|alias| snapshot.tenant(alias.trim_start_matches(&self.prefix)).is_none())
            .collect();
        if !orphans.is_empty() {
            self.litellm.delete_keys(&orphans).await?;
            report.orphans_deleted += u32::try_from(orphans.len()).unwrap_or(u32::MAX);
        }
        Ok(())
    }

    /// Makes one key match `spec`; returns what had drifted and the spend LiteLLM reported.
    async fn converge_key(
        &self,
        tenant: &str,
        spec: &KeySpec,
        record: Option<&key_db::KeyRow>,
        info: Option<KeyInfo>,
        report: &mut PassReport,
    ) -> Result<(Vec<String>, Option<Micros>), ReconcileError> {
        let alias = self.alias(tenant);
        let want = fields(&alias, spec);
        let (Some(record), Some(info)) = (record, info) else {
            let mut drift = Vec::new();
            if record.is_some() {
                drift.push("the key was missing in LiteLLM and was issued again".to_owned());
            }
            let generated = self.litellm.generate_key(&want).await?;
            let sealed = self.secrets.seal(generated.key.as_bytes(), &format!("litellm-key:{tenant}"))?;
            key_db::insert_key(&self.pool, tenant, &alias, &generated.token_id, &sealed).await?;
            if spec.blocked {
                self.litellm.set_blocked(&generated.token_id, true).await?;
                report.keys_blocked += 1;
            }
            report.keys_created += 1;
            return Ok((drift, Some(0)));
        };
        let diff = differences(spec, &info);
        // Drift is a difference from what the portal itself last applied; a difference from a
        // new desired state is just a change.
        let last: Option<KeySpec> = (!record.applied.is_null() && record.applied != json!({})).then(|| KeySpec {
            models: serde_json::from_value(record.applied["models"].clone()).unwrap_or_default(),
            max_budget: record.applied["maxBudget"].as_i64(),
            blocked: record.applied["blocked"].as_bool().unwrap_or(false),
            ..spec.clone()
        });
        let drift: Vec<String> = match &last {
            Some(last) => differences(last, &info).into_iter().map(|d| format!("{d} changed in LiteLLM")).collect(),
            None => Vec::new(),
        };
        if diff.contains(&"models") || diff.contains(&"budget") {
            self.litellm.update_key(&record.token_id, &want).await?;
            report.keys_updated += 1;
        }
        if diff.contains(&"blocked") {
            self.litellm.set_blocked(&record.token_id, spec.blocked).await?;
            if spec.blocked {
                report.keys_blocked += 1;
            } else {
                report.keys_unblocked += 1;
            }
        }
        for d in &drift {
            report.drift.push(format!("{tenant}: {d}"));
        }
        Ok((drift, Some(to_micros(info.spend))))
    }

    async fn notices(
        &self,
        snapshot: &Snapshot,
        ledger: &crate::snapshot::Ledger,
        report: &mut PassReport,
    ) -> Result<(), ReconcileError> {
        for status in snapshot.all_limit_statuses(ledger)? {
            let Ok(id) = uuid::Uuid::parse_str(&status.limit.id) else { continue };
            for threshold in &status.crossed {
                let message = format!(
                    "{} has used {}% of its limit of {} {} {} ({} spent); it resets {}.",
                    capitalise(&status.limit.level.describe()),
                    threshold,
                    format_amount(status.limit.amount),
                    status.limit.currency,
                    status.limit.period.per(),
                    format_amount(status.spent),
                    status.window.end.format("%Y-%m-%d %H:%M UTC"),
                );
                if budgets::notify(&self.pool, id, status.window.start, i16::from(*threshold), status.spent, &message)
                    .await?
                {
                    report.notices += 1;
                }
            }
        }
        Ok(())
    }
}

fn capitalise(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}
