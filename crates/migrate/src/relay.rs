//! The migration relayed through each silo's own manager, for a cluster, where every silo's
//! database is closed to everything but its manager (the silo's NetworkPolicy floor) and the
//! fleet holds no silo's credentials key.
//!
//! The fleet side ([`Relay`], and the copy/verify steps [`run`](crate::run) calls) stages a
//! **delivery** in the fleet database: a manifest (its generation, kind, tables, parcel count,
//! the checksum it expects per table) and the customer's mapped rows in parcels of at most
//! [`PARCEL_ROWS`] rows of one table. The silo manager pulls it with its own credential over
//! the fleet's internal API (`GET …/cluster-tenants/<own name>/import`, `…/import/<generation>/<seq>`)
//! — so a silo can only ever receive its own customer's rows — applies it with [`apply`] in one
//! transaction on its own database (sealing a legacy plaintext provider key with its own key),
//! reads its tables back and reports a [`Digest`] (`PUT …/import/<generation>`): per table the
//! row count, the checksum and, where the checksum is not the expected one, the row hashes.
//! The fleet records the report and drops the parcels in the same statement, so a legacy key
//! stays in the fleet database only until its silo has sealed it.
//!
//! Every step is idempotent: a copy the silo already committed (its import marker) is not
//! repeated, a delta copy replaces what it replaces again, a check only reads; a delivery staged
//! again replaces the one before it, and a report on a replaced one is refused.

use std::{collections::BTreeMap, future::Future, time::Duration};

use opencrane_fleet_db::shared_migrations;
use opencrane_portal::seal::SecretBox;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;

use crate::{
    Error, Reach, Silos,
    map::{CustomerPlan, PlainKey, SILO_TABLES},
    silo::{self, Copied},
    verify::{self, TableCheck, TableDigest},
};

/// Rows per parcel (a parcel is one request of the silo's; a few hundred KiB of JSON).
pub const PARCEL_ROWS: usize = 2_000;

/// Row hashes a digest lists at most, over all its tables (the report stays one small request).
pub const HASHES_REPORTED: usize = 10_000;

/// What a delivery asks of the silo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The first copy of every table (not repeated once the silo's marker says it was done).
    Copy,
    /// The delta copy: replace `tables` with the parcels' rows.
    Again,
    /// Only read the tables back.
    Check,
}

/// A staged delivery's manifest (`GET …/import`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Names this delivery; the report names it back.
    pub generation: String,
    /// The customer it is for.
    pub customer: String,
    /// What to do.
    pub kind: Kind,
    /// The tables the parcels fill (replaced first for [`Kind::Again`]).
    pub tables: Vec<String>,
    /// Parcels, numbered from 0.
    pub parcels: u32,
    /// `host:port/database` of the source (for the silo's import marker).
    pub source: String,
    /// Rows per table the plan maps (for the import marker).
    pub counts: BTreeMap<String, usize>,
    /// The checksum the fleet expects per table after it is applied.
    pub expected: BTreeMap<String, String>,
}

/// One parcel (`GET …/import/<generation>/<seq>`): rows of one table, and the legacy plaintext
/// keys of the credentials among them (its `Debug` never shows a key).
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Parcel {
    /// The silo table.
    pub table: String,
    /// Canonical rows, as the plan maps them.
    pub rows: Vec<Value>,
    /// Legacy plaintext keys by credential name, to be sealed by the silo.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plain_keys: BTreeMap<String, String>,
}

impl std::fmt::Debug for Parcel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parcel")
            .field("table", &self.table)
            .field("rows", &self.rows.len())
            .field("plain_keys", &self.plain_keys.len())
            .finish()
    }
}

/// The silo's report on a delivery (`PUT …/import/<generation>`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Digest {
    /// The delivery reported on.
    pub generation: String,
    /// Whether the rows were written by this delivery (`false`: an earlier one had, or a check).
    pub written: bool,
    /// Why it could not be applied (nothing was written then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every silo table as read back after it.
    #[serde(default)]
    pub tables: BTreeMap<String, TableDigest>,
}

// ---------------------------------------------------------------------------------------------
// The fleet side.

/// The silos of a cluster, reached through their managers: a customer's is there once the
/// fleet holds it `ready` (its manager is up and pulling).
#[derive(Clone, Debug)]
pub struct Relay {
    fleet: PgPool,
}

impl Relay {
    /// The relay through the fleet database `fleet`.
    pub fn new(fleet: PgPool) -> Self {
        Self { fleet }
    }
}

#[async_trait::async_trait]
impl Silos for Relay {
    async fn reach(&self, customer: &str) -> Result<Option<Reach>, Error> {
        let ready = match opencrane_fleet_db::cluster_tenants::get(&self.fleet, customer).await {
            Ok(row) => row.phase == "ready",
            Err(opencrane_db::Error::NotFound) => false,
            Err(e) => return Err(Error::Fleet(crate::chain(&e))),
        };
        Ok(ready.then_some(Reach::Relay))
    }

    fn credentials_key(&self, _customer: &str) -> Option<SecretBox> {
        None
    }
}

/// The parcels of `tables` of `plan`, in copy order (a table's parcels after those of the tables
/// its rows point at). Pure.
pub fn parcels(plan: &CustomerPlan, tables: &[&'static str]) -> Vec<Parcel> {
    let mut out = Vec::new();
    for table in SILO_TABLES.iter().copied().filter(|t| tables.contains(t)) {
        for chunk in plan.silo.get(table).map(Vec::as_slice).unwrap_or_default().chunks(PARCEL_ROWS) {
            let plain_keys = chunk
                .iter()
                .filter_map(|row| row["name"].as_str())
                .filter(|_| table == "provider_credentials")
                .filter_map(|name| plan.plain_keys.get(name).map(|PlainKey(key)| (name.to_owned(), key.clone())))
                .collect();
            out.push(Parcel { table: table.to_owned(), rows: chunk.to_vec(), plain_keys });
        }
    }
    out
}

/// Stages a delivery of `kind` for `plan`'s silo and waits up to `wait` for its report.
async fn deliver(
    fleet: &PgPool,
    plan: &CustomerPlan,
    kind: Kind,
    tables: &[&'static str],
    source: &str,
    wait: Duration,
) -> Result<Digest, Error> {
    let fleet_err = |e: opencrane_db::Error| Error::Fleet(crate::chain(&e));
    let parcels = if kind == Kind::Check { Vec::new() } else { parcels(plan, tables) };
    let delivery = Delivery {
        generation: uuid::Uuid::new_v4().simple().to_string(),
        customer: plan.name.clone(),
        kind,
        tables: tables.iter().map(|t| (*t).to_owned()).collect(),
        parcels: u32::try_from(parcels.len()).unwrap_or(u32::MAX),
        source: source.to_owned(),
        counts: plan.counts().into_iter().map(|(t, n)| (t.to_owned(), n)).collect(),
        expected: SILO_TABLES
            .iter()
            .map(|t| ((*t).to_owned(), verify::checksum(plan.silo.get(t).map(Vec::as_slice).unwrap_or_default())))
            .collect(),
    };
    let bodies: Vec<Value> = parcels.iter().map(|p| serde_json::to_value(p).unwrap_or_default()).collect();
    let manifest = serde_json::to_value(&delivery).unwrap_or_default();
    let mut tx = fleet.begin().await.map_err(|e| Error::Fleet(format!("staging: {e}")))?;
    shared_migrations::stage(&mut tx, &plan.name, &delivery.generation, &manifest, &bodies).await.map_err(fleet_err)?;
    tx.commit().await.map_err(|e| Error::Fleet(format!("staging: {e}")))?;
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let reported = shared_migrations::delivered(fleet, &plan.name).await.map_err(fleet_err)?;
        if let Some(digest) = reported.and_then(|v| serde_json::from_value::<Digest>(v).ok())
            && digest.generation == delivery.generation
        {
            return match digest.error {
                Some(error) => {
                    Err(Error::Silo(format!("its silo manager could not apply the {kind:?} delivery: {error}")))
                }
                None => Ok(digest),
            };
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::Silo(format!(
                "staged for its silo manager, which has not reported it after {} s (it pulls every few seconds while settling, every minute at rest); run again to resume",
                wait.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The copy through the silo's manager.
pub(crate) async fn copy(fleet: &PgPool, plan: &CustomerPlan, source: &str, wait: Duration) -> Result<Copied, Error> {
    let digest = deliver(fleet, plan, Kind::Copy, SILO_TABLES, source, wait).await?;
    Ok(if digest.written { Copied::Now } else { Copied::Before })
}

/// The delta copy of `tables` through the silo's manager.
pub(crate) async fn copy_again(
    fleet: &PgPool,
    plan: &CustomerPlan,
    tables: &[&'static str],
    source: &str,
    wait: Duration,
) -> Result<(), Error> {
    deliver(fleet, plan, Kind::Again, tables, source, wait).await.map(drop)
}

/// Every silo table of `plan` compared with what its manager reads back now.
pub(crate) async fn checks(
    fleet: &PgPool,
    plan: &CustomerPlan,
    source: &str,
    wait: Duration,
) -> Result<Vec<TableCheck>, Error> {
    let digest = deliver(fleet, plan, Kind::Check, &[], source, wait).await?;
    Ok(SILO_TABLES
        .iter()
        .map(|t| {
            let rows = plan.silo.get(t).map(Vec::as_slice).unwrap_or_default();
            verify::compare_digest(t, rows, &digest.tables.get(*t).cloned().unwrap_or_default())
        })
        .collect())
}

// ---------------------------------------------------------------------------------------------
// The silo side.

/// Applies `delivery` to the silo's own database `pool` (the silo manager, for its own customer
/// `own`), fetching parcel after parcel with `fetch`, all in one transaction; then reads every
/// table back into the report. `key` is the silo's credentials key (already checked against
/// its database). A delivery for another customer is refused before anything is read.
pub async fn apply<F, Fut>(
    pool: &PgPool,
    own: &str,
    delivery: &Delivery,
    mut fetch: F,
    key: Option<&SecretBox>,
) -> Result<Digest, Error>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<Parcel, Error>>,
{
    if delivery.customer != own {
        return Err(Error::Isolation(format!(
            "a delivery for {} reached the silo of {own}; nothing was written",
            delivery.customer
        )));
    }
    let tables: Vec<&'static str> =
        SILO_TABLES.iter().copied().filter(|t| delivery.tables.iter().any(|d| d == t)).collect();
    let mut written = false;
    if delivery.kind != Kind::Check {
        let db = |what: &'static str| move |e: sqlx::Error| Error::Silo(format!("{what}: {e}"));
        let mut tx = pool.begin().await.map_err(db("starting the copy"))?;
        let marked = silo::locked_marker(&mut tx, own).await?;
        match (delivery.kind, marked) {
            (Kind::Copy, true) => {}
            (Kind::Again, false) => {
                return Err(Error::Silo(format!("{own} has not been copied yet; nothing to copy again")));
            }
            _ => {
                if delivery.kind == Kind::Again {
                    silo::clear(&mut tx, &tables).await?;
                }
                for seq in 0..delivery.parcels {
                    let parcel = fetch(seq).await?;
                    let Some(table) = tables.iter().copied().find(|t| *t == parcel.table) else {
                        return Err(Error::Silo(format!(
                            "parcel {seq} holds rows of {}, which this delivery does not fill",
                            parcel.table
                        )));
                    };
                    let plan = CustomerPlan {
                        name: own.to_owned(),
                        fleet: crate::map::FleetCustomer::default(),
                        memberships: Vec::new(),
                        silo: BTreeMap::from([(table, parcel.rows)]),
                        plain_keys: parcel.plain_keys.into_iter().map(|(k, v)| (k, PlainKey(v))).collect(),
                    };
                    silo::write(&mut tx, &plan, key).await?;
                }
                if delivery.kind == Kind::Copy {
                    let counts: BTreeMap<&str, usize> = delivery.counts.iter().map(|(t, n)| (t.as_str(), *n)).collect();
                    silo::mark(&mut tx, own, &delivery.source, &counts).await?;
                }
                tx.commit().await.map_err(db("committing the copy"))?;
                written = true;
            }
        }
    }
    let back = silo::read_back_with(pool, key).await?;
    let mut budget = HASHES_REPORTED;
    let tables = back
        .iter()
        .map(|(table, rows)| {
            let hashes = verify::row_hashes(rows);
            let checksum = verify::checksum_of(&hashes);
            let mut digest = TableDigest { rows: rows.len(), checksum, hashes: Vec::new(), partial: false };
            if delivery.expected.get(*table) != Some(&digest.checksum) {
                let listed = hashes.len().min(budget);
                budget -= listed;
                digest.partial = listed < hashes.len();
                digest.hashes = hashes.into_iter().take(listed).collect();
            }
            ((*table).to_owned(), digest)
        })
        .collect();
    Ok(Digest { generation: delivery.generation.clone(), written, error: None, tables })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Parcels follow the copy order, hold one table each, at most [`PARCEL_ROWS`] rows, and a
    /// legacy key travels only with its own credential's row; `Debug` shows no key.
    #[test]
    fn parcels_are_small_single_table_and_carry_only_their_own_keys() {
        let mut plan = CustomerPlan {
            name: "acme".into(),
            fleet: crate::map::FleetCustomer::default(),
            memberships: Vec::new(),
            silo: BTreeMap::new(),
            plain_keys: BTreeMap::from([("mistral".to_owned(), PlainKey("sk-secret".into()))]),
        };
        plan.silo.insert("group_members", vec![json!({"group": "x/y", "tenant": "t"})]);
        plan.silo.insert("tenants", (0..PARCEL_ROWS + 1).map(|i| json!({"name": format!("u{i}")})).collect());
        plan.silo.insert("provider_credentials", vec![json!({"name": "mistral"}), json!({"name": "openai"})]);
        let all = parcels(&plan, SILO_TABLES);
        let order: Vec<(&str, usize)> = all.iter().map(|p| (p.table.as_str(), p.rows.len())).collect();
        assert_eq!(
            order,
            [("tenants", PARCEL_ROWS), ("tenants", 1), ("group_members", 1), ("provider_credentials", 2)]
        );
        assert!(all[..3].iter().all(|p| p.plain_keys.is_empty()));
        assert_eq!(all[3].plain_keys.len(), 1);
        assert!(!format!("{:?}", all[3]).contains("sk-secret"));
        assert_eq!(parcels(&plan, &["group_members"]).len(), 1, "only the tables asked for");
    }
}
