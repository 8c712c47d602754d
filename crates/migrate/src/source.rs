//! The original's shared database, read through a read-only connection: which of its tables and
//! columns this version has (its schema changed over its history), refusal of a database that
//! is not the original's, and every in-scope table read as JSON rows (`to_jsonb`), so a missing
//! optional column is simply absent and [`crate::map`] defaults it (and says so).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use sqlx::{ConnectOptions as _, Connection as _, PgConnection, Row as _, postgres::PgConnectOptions};

use crate::Error;

/// One table of the original's schema this tool reads.
#[derive(Clone, Copy, Debug)]
pub struct TableSpec {
    /// Its name in schema `public`.
    pub name: &'static str,
    /// Whether every version of the original has it (else: absent means empty, reported).
    pub required: bool,
    /// Columns it must have when present.
    pub columns: &'static [&'static str],
}

/// The in-scope tables (reference §3), in the order they are read.
pub const TABLES: &[TableSpec] = &[
    TableSpec { name: "tenants", required: true, columns: &["name", "display_name", "email"] },
    TableSpec { name: "groups", required: true, columns: &["id", "name", "members"] },
    TableSpec { name: "access_policies", required: true, columns: &["name"] },
    TableSpec {
        name: "grants",
        required: true,
        columns: &["id", "payload_type", "payload_id", "subject_type", "subject_id", "access"],
    },
    TableSpec { name: "access_tokens", required: true, columns: &["id", "name", "owner", "token_hash"] },
    TableSpec { name: "audit_log", required: true, columns: &["id", "action"] },
    // Some versions keep the fleet tables in the same database, later ones do not; the silo's
    // read-model of memberships has the same shape.
    TableSpec { name: "cluster_tenants", required: false, columns: &["name", "display_name"] },
    TableSpec { name: "org_memberships", required: false, columns: &["cluster_tenant", "subject", "role"] },
    TableSpec { name: "billing_accounts", required: false, columns: &["subject"] },
    TableSpec { name: "global_budget_settings", required: false, columns: &["currency", "ceiling_amount"] },
    TableSpec { name: "account_budget_settings", required: false, columns: &["user_id", "currency", "ceiling_amount"] },
    TableSpec { name: "tenant_litellm_keys", required: false, columns: &["tenant", "monthly_budget_usd"] },
    TableSpec { name: "provider_credentials", required: false, columns: &["id", "provider", "secret_ref"] },
    TableSpec { name: "provider_api_keys", required: false, columns: &["provider", "key_value"] },
    TableSpec { name: "model_definitions", required: false, columns: &["public_model_name", "upstream_model"] },
    TableSpec { name: "model_routing_defaults", required: false, columns: &["default_model"] },
];

/// What the source holds: its rows per present table and the columns each has.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The source as shown in reports: host, port and database, never the password.
    pub label: String,
    /// Rows of each present table, as JSON objects keyed by column.
    pub rows: BTreeMap<&'static str, Vec<Value>>,
    /// Columns of each present table.
    pub columns: BTreeMap<&'static str, BTreeSet<String>>,
}

impl Snapshot {
    /// The rows of `table` (none when the table is absent).
    pub fn rows(&self, table: &str) -> &[Value] {
        self.rows.get(table).map(Vec::as_slice).unwrap_or_default()
    }

    /// Whether `table` exists and has `column`.
    pub fn has(&self, table: &str, column: &str) -> bool {
        self.columns.get(table).is_some_and(|c| c.contains(column))
    }
}

/// How much of one table there was, and its newest change, when it was read (to tell later
/// whether the source changed after the copy began).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Watermark {
    /// Rows.
    pub rows: i64,
    /// The newest `updated_at` (or `timestamp`/`sampled_at`), when the table has one.
    pub newest: Option<String>,
}

/// A read-only connection to the original's database.
pub struct Source {
    conn: PgConnection,
    label: String,
}

/// The label of a connection URL: `host:port/database`.
pub fn label_of(options: &PgConnectOptions) -> String {
    format!("{}:{}/{}", options.get_host(), options.get_port(), options.get_database().unwrap_or("postgres"))
}

impl Source {
    /// Connects with `default_transaction_read_only` on: nothing this tool sends can change the
    /// source.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let options: PgConnectOptions = url
            .parse()
            .map_err(|e: sqlx::Error| Error::Source(format!("--source-url is not a PostgreSQL URL: {e}")))?;
        let label = label_of(&options);
        let options = options.options([("default_transaction_read_only", "on")]).disable_statement_logging();
        let conn = PgConnection::connect_with(&options)
            .await
            .map_err(|e| Error::Source(format!("cannot connect to the source {label}: {e}")))?;
        Ok(Self { conn, label })
    }

    /// The source's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The columns of every table of schema `public`.
    async fn catalogue(&mut self) -> Result<BTreeMap<String, BTreeSet<String>>, Error> {
        let rows = sqlx::query(
            "SELECT table_name::text AS t, column_name::text AS c FROM information_schema.columns
             WHERE table_schema = 'public'",
        )
        .fetch_all(&mut self.conn)
        .await
        .map_err(|e| Error::Source(format!("reading the source's catalogue: {e}")))?;
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for row in rows {
            out.entry(row.get("t")).or_default().insert(row.get("c"));
        }
        Ok(out)
    }

    /// Checks the schema is the original's: every required table, and every required column of
    /// each present table. The error lists everything missing at once.
    pub async fn check(&mut self) -> Result<BTreeMap<&'static str, BTreeSet<String>>, Error> {
        let catalogue = self.catalogue().await?;
        let mut missing = Vec::new();
        let mut present = BTreeMap::new();
        for spec in TABLES {
            match catalogue.get(spec.name) {
                None if spec.required => missing.push(format!("table {}", spec.name)),
                None => {}
                Some(columns) => {
                    for column in spec.columns.iter().filter(|c| !columns.contains(**c)) {
                        missing.push(format!("column {}.{column}", spec.name));
                    }
                    present.insert(spec.name, columns.clone());
                }
            }
        }
        if missing.is_empty() {
            Ok(present)
        } else {
            Err(Error::NotTheOriginal { database: self.label.clone(), missing })
        }
    }

    /// Reads every in-scope table (after [`Source::check`]) in one read-only transaction, so the
    /// snapshot is consistent.
    pub async fn read(&mut self) -> Result<Snapshot, Error> {
        let columns = self.check().await?;
        let mut tx = self.conn.begin().await.map_err(|e| Error::Source(format!("starting a read: {e}")))?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(|e| Error::Source(format!("starting a read: {e}")))?;
        let mut rows = BTreeMap::new();
        for table in columns.keys() {
            // Names come from TABLES, never from input.
            let order = if columns[table].contains("id") { " ORDER BY t.id" } else { "" };
            let sql = format!("SELECT to_jsonb(t) AS row FROM public.\"{table}\" t{order}");
            let values: Vec<Value> = sqlx::query_scalar(&sql)
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| Error::Source(format!("reading {table}: {e}")))?;
            rows.insert(*table, values);
        }
        tx.commit().await.map_err(|e| Error::Source(format!("ending the read: {e}")))?;
        Ok(Snapshot { label: self.label.clone(), rows, columns })
    }

    /// Row counts and newest change, now, of the tables a [`Snapshot`] found (with their columns).
    pub async fn watermarks(
        &mut self,
        columns: &BTreeMap<&'static str, BTreeSet<String>>,
    ) -> Result<BTreeMap<String, Watermark>, Error> {
        let mut out = BTreeMap::new();
        for (table, cols) in columns {
            let newest =
                ["updated_at", "timestamp", "sampled_at", "created_at"].into_iter().find(|c| cols.contains(*c));
            let sql = match newest {
                Some(c) => format!("SELECT count(*), max(\"{c}\")::text FROM public.\"{table}\""),
                None => format!("SELECT count(*), NULL::text FROM public.\"{table}\""),
            };
            let (rows, newest): (i64, Option<String>) = sqlx::query_as(&sql)
                .fetch_one(&mut self.conn)
                .await
                .map_err(|e| Error::Source(format!("counting {table}: {e}")))?;
            out.insert((*table).to_owned(), Watermark { rows, newest });
        }
        Ok(out)
    }
}
