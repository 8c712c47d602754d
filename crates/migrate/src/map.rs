//! The mapping, pure: a [`Snapshot`] of the original's shared database becomes a [`Plan`] — per
//! customer its fleet record and memberships, and the rows of its own silo database in the
//! canonical shape [`crate::verify`] compares (names instead of ids, timestamps in UTC with
//! microseconds, amounts as decimal strings). Rows that cannot be placed are listed in
//! [`Plan::unplaced`] with the reason; defaults used for columns this version of the original
//! lacks are listed in [`Plan::defaults`]; nothing is dropped silently.
//!
//! Placement rules (the original told customers' rows apart by `cluster_tenant_ref`,
//! `cluster_tenant` and membership):
//! - a user (tenant) belongs to its `cluster_tenant_ref`, else to the one customer its subject
//!   is a member of;
//! - a group goes to each customer its members belong to, with that customer's members only;
//! - a grant follows its subject (user, tenant or group); awareness payloads are not part of
//!   this project;
//! - access policies, the global budget, global provider credentials, legacy provider keys,
//!   global model definitions and the global routing default were shared configuration: each
//!   customer gets its own copy (customer-scoped rows win over global ones). A policy whose
//!   selector names a customer (`opencrane.io/cluster-tenant`, `clusterTenantRef`) goes to that
//!   customer only;
//! - an access token acts for its owner, who must be a member (or user) of exactly one customer;
//! - an audit entry follows its tenant.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::source::Snapshot;

/// Silo tables the plan fills, in the order they are written (referenced tables first).
pub const SILO_TABLES: &[&str] = &[
    "org_memberships",
    "access_policies",
    "tenants",
    "groups",
    "group_members",
    "grants",
    "budgets",
    "provider_credentials",
    "model_definitions",
    "model_defaults",
    "access_tokens",
    "audit_log",
];

/// Providers this project's silos know.
const PROVIDERS: &[&str] = &["openai", "anthropic", "azure", "gemini", "mistral", "openai-compatible"];

/// Selector labels that name a customer in the original.
const CUSTOMER_LABELS: &[&str] =
    &["opencrane.io/cluster-tenant", "clusterTenantRef", "cluster-tenant", "clusterTenant"];

/// A plaintext provider key from the legacy table: sealed with the silo's key when copied;
/// never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainKey(pub String);

impl std::fmt::Debug for PlainKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlainKey(…)")
    }
}

/// A customer's fleet record, as the original had it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FleetCustomer {
    /// Display name.
    pub display_name: String,
    /// Vanity domain.
    pub vanity_domain: Option<String>,
    /// `shared`, `dedicatedNodes` or `dedicatedCluster`.
    pub isolation_tier: String,
    /// `shared` or `dedicated`.
    pub compute_mode: String,
    /// Node pool (dedicated compute only).
    pub node_pool: Option<String>,
    /// Quota object.
    pub quota: Value,
    /// Seat cap.
    pub seat_cap: Option<i32>,
}

/// One membership.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Membership {
    /// The identity provider's subject.
    pub subject: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// `active` or `suspended`.
    pub status: String,
}

/// Everything one customer gets.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomerPlan {
    /// The customer's name (its ClusterTenant).
    pub name: String,
    /// Its fleet record.
    pub fleet: FleetCustomer,
    /// Its memberships (fleet and silo read-model).
    pub memberships: Vec<Membership>,
    /// Its silo rows per table, canonical.
    #[serde(skip)]
    pub silo: BTreeMap<&'static str, Vec<Value>>,
    /// Plaintext keys to seal, by credential name.
    #[serde(skip)]
    pub plain_keys: BTreeMap<String, PlainKey>,
}

impl CustomerPlan {
    /// Rows per silo table.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        SILO_TABLES.iter().map(|t| (*t, self.silo.get(t).map_or(0, Vec::len))).collect()
    }

    fn push(&mut self, table: &'static str, row: Value) {
        self.silo.entry(table).or_default().push(row);
    }
}

/// A row that cannot be placed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Unplaced {
    /// The source table.
    pub table: String,
    /// Which row (its key; never a secret).
    pub row: String,
    /// Why.
    pub reason: String,
}

/// A billing account (fleet-wide).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BillingAccount {
    /// Subject.
    pub subject: String,
    /// E-mail (lower-case).
    pub email: Option<String>,
    /// Display name.
    pub display_name: Option<String>,
}

/// The whole mapping.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Customers, by name.
    pub customers: Vec<CustomerPlan>,
    /// Billing accounts (the fleet's).
    pub billing_accounts: Vec<BillingAccount>,
    /// Rows that cannot be placed.
    pub unplaced: Vec<Unplaced>,
    /// Defaults used for columns or tables this version lacks.
    pub defaults: Vec<String>,
    /// What the operator should know (shared rows copied to each customer, changed behaviour).
    pub notes: Vec<String>,
}

impl Plan {
    /// The customer named `name`.
    pub fn customer(&self, name: &str) -> Option<&CustomerPlan> {
        self.customers.iter().find(|c| c.name == name)
    }
}

// ---------------------------------------------------------------------------------------------
// Reading JSON rows

fn text(row: &Value, key: &str) -> Option<String> {
    match row.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn trimmed(row: &Value, key: &str) -> Option<String> {
    text(row, key).map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

fn key_of(row: &Value, keys: &[&str]) -> String {
    keys.iter().filter_map(|k| text(row, k)).collect::<Vec<_>>().join("/")
}

/// A timestamp as the canonical form has it: UTC, microseconds, `Z`. The original's columns are
/// `timestamp(3)` without a zone (UTC by its convention); later ones may carry an offset.
pub fn timestamp(value: &Value) -> Option<String> {
    let s = value.as_str()?;
    let utc = DateTime::parse_from_rfc3339(s).map(|t| t.with_timezone(&Utc)).ok().or_else(|| {
        ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
            .map(|n| n.and_utc())
    })?;
    Some(utc.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
}

fn ts(row: &Value, key: &str) -> Value {
    row.get(key).and_then(timestamp).map_or(Value::Null, Value::String)
}

/// An amount with two decimal places, from a JSON number or string; `None` if not a number.
pub fn amount(value: &Value) -> Option<String> {
    let s = match value {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.trim().to_owned(),
        _ => return None,
    };
    let (whole, frac) = s.split_once('.').unwrap_or((&s, ""));
    if whole.is_empty() || !whole.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if frac.len() > 2 && frac[2..].chars().any(|c| c != '0') {
        return None;
    }
    let cents: String = frac.chars().chain("00".chars()).take(2).collect();
    let whole = whole.trim_start_matches('0');
    Some(format!("{}.{cents}", if whole.is_empty() { "0" } else { whole }))
}

fn is_zero(amount: &str) -> bool {
    amount.chars().all(|c| c == '0' || c == '.')
}

fn json_field(row: &Value, key: &str) -> Option<Value> {
    match row.get(key)? {
        Value::Null => None,
        // Some versions stored JSON in text columns.
        Value::String(s) => serde_json::from_str(s).ok(),
        other => Some(other.clone()),
    }
}

fn strings(value: Option<Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .into_iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.trim().to_owned()).filter(|s| !s.is_empty()),
                Value::Object(o) => {
                    o.get("subject").or_else(|| o.get("name")).and_then(Value::as_str).map(str::to_owned)
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn is_object_name(name: &str, extra: &str, max: usize) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= max
        && name.starts_with(ok)
        && name.ends_with(ok)
        && name.chars().all(|c| ok(c) || c == '-' || extra.contains(c))
}

// ---------------------------------------------------------------------------------------------
// The mapping

struct Ctx<'a> {
    snap: &'a Snapshot,
    plan: Plan,
    index: BTreeMap<String, usize>,
    /// subject → customers it is a member of.
    member_of: BTreeMap<String, BTreeSet<String>>,
    /// tenant name → (customer, subject).
    tenants: BTreeMap<String, (String, String)>,
    /// (customer, subject) → tenant name.
    tenant_by_subject: BTreeMap<(String, String), String>,
    /// source group id → (scope, name, customers).
    groups: BTreeMap<String, (String, String, BTreeSet<String>)>,
    /// source provider credential id → its provider (the credential's name in a silo).
    credential_ids: BTreeMap<String, String>,
    /// Every customer the source has (placed, out of scope or with an invalid name).
    known: BTreeSet<String>,
}

impl Ctx<'_> {
    fn unplaced(&mut self, table: &str, row: String, reason: impl Into<String>) {
        self.plan.unplaced.push(Unplaced { table: table.to_owned(), row, reason: reason.into() });
    }

    fn default_used(&mut self, table: &str, column: &str, what: &str) {
        if self.snap.columns.contains_key(table) && !self.snap.has(table, column) {
            self.plan.defaults.push(format!("{table}.{column} is absent in this version: {what}"));
        }
    }

    fn customer_mut(&mut self, name: &str) -> Option<&mut CustomerPlan> {
        self.index.get(name).map(|i| &mut self.plan.customers[*i])
    }

    fn names(&self) -> Vec<String> {
        self.plan.customers.iter().map(|c| c.name.clone()).collect()
    }

    /// Customers `subject` is known in: by membership, or as a user's subject.
    fn customers_of_subject(&self, subject: &str) -> BTreeSet<String> {
        let mut out = self.member_of.get(subject).cloned().unwrap_or_default();
        out.extend(self.tenant_by_subject.keys().filter(|(_, s)| s == subject).map(|(c, _)| c.clone()));
        out
    }
}

/// Maps the snapshot. `only`: the customers to migrate (all when empty). Placement is decided
/// over the whole source first (a token's owner is a member of two customers whether or not both
/// are migrated now), then the plan keeps the customers asked for.
pub fn plan(snap: &Snapshot, only: &[String]) -> Plan {
    let mut cx = Ctx {
        snap,
        plan: Plan::default(),
        index: BTreeMap::new(),
        member_of: BTreeMap::new(),
        tenants: BTreeMap::new(),
        tenant_by_subject: BTreeMap::new(),
        groups: BTreeMap::new(),
        credential_ids: BTreeMap::new(),
        known: BTreeSet::new(),
    };
    customers(&mut cx);
    memberships(&mut cx);
    billing_accounts(&mut cx);
    tenants(&mut cx);
    groups(&mut cx);
    policies(&mut cx);
    grants(&mut cx);
    budgets(&mut cx);
    credentials(&mut cx);
    models(&mut cx);
    access_tokens(&mut cx);
    audit(&mut cx);
    for c in &mut cx.plan.customers {
        for rows in c.silo.values_mut() {
            rows.sort_by_cached_key(crate::verify::canonical);
        }
    }
    let mut plan = cx.plan;
    if !only.is_empty() {
        plan.customers.retain(|c| only.contains(&c.name));
    }
    plan
}

fn customers(cx: &mut Ctx<'_>) {
    let mut found: BTreeMap<String, Value> = BTreeMap::new();
    if cx.snap.columns.contains_key("cluster_tenants") {
        for row in cx.snap.rows("cluster_tenants") {
            if let Some(name) = trimmed(row, "name") {
                found.insert(name, row.clone());
            }
        }
    } else {
        // No fleet tables in this database: the customers are those its rows name.
        cx.plan.defaults.push(
            "table cluster_tenants is absent (the fleet tables are in another database): customers are the \
             names users and memberships refer to, each shown by its name, on the shared tier"
                .into(),
        );
        let refs = cx.snap.rows("tenants").iter().filter_map(|r| trimmed(r, "cluster_tenant_ref"));
        let members = cx.snap.rows("org_memberships").iter().filter_map(|r| trimmed(r, "cluster_tenant"));
        for name in refs.chain(members).collect::<BTreeSet<_>>() {
            found.insert(name.clone(), json!({ "name": name, "display_name": name }));
        }
    }
    cx.known = found.keys().cloned().collect();
    for (name, row) in found {
        if let Err(why) = opencrane_types::rules::cluster_tenant_name(&name) {
            cx.unplaced("cluster_tenants", name, format!("not a valid customer name here: {why}"));
            continue;
        }
        let display_name = trimmed(&row, "display_name").unwrap_or_else(|| name.clone());
        let display_name: String = display_name.chars().filter(|c| !c.is_control()).collect();
        let tier = text(&row, "isolation_tier")
            .filter(|t| ["shared", "dedicatedNodes", "dedicatedCluster"].contains(&t.as_str()))
            .unwrap_or_else(|| "shared".into());
        let node_pool = trimmed(&row, "node_pool");
        let compute = match text(&row, "compute_mode").as_deref() {
            Some("dedicated") if node_pool.is_some() => "dedicated",
            _ => "shared",
        };
        let quota = json_field(&row, "quota").filter(Value::is_object).unwrap_or_else(|| json!({}));
        let seat_cap =
            row.get("seat_cap").and_then(Value::as_i64).and_then(|n| i32::try_from(n).ok()).filter(|n| *n >= 0);
        let vanity = trimmed(&row, "vanity_domain").map(|d| d.to_lowercase());
        let fleet = FleetCustomer {
            display_name,
            vanity_domain: vanity,
            isolation_tier: tier,
            compute_mode: compute.into(),
            node_pool: if compute == "dedicated" { node_pool } else { None },
            quota,
            seat_cap,
        };
        cx.index.insert(name.clone(), cx.plan.customers.len());
        cx.plan.customers.push(CustomerPlan {
            name,
            fleet,
            memberships: Vec::new(),
            silo: BTreeMap::new(),
            plain_keys: BTreeMap::new(),
        });
    }
}

fn memberships(cx: &mut Ctx<'_>) {
    cx.default_used("org_memberships", "status", "every membership is active");
    let rows = cx.snap.rows("org_memberships").to_vec();
    for row in rows {
        let (Some(customer), Some(subject)) = (trimmed(&row, "cluster_tenant"), trimmed(&row, "subject")) else {
            cx.unplaced("org_memberships", key_of(&row, &["id"]), "no customer or subject");
            continue;
        };
        if !cx.index.contains_key(&customer) {
            if !cx.known.contains(&customer) {
                cx.unplaced(
                    "org_memberships",
                    format!("{customer}/{subject}"),
                    format!("customer {customer} does not exist"),
                );
            }
            continue;
        }
        let role = text(&row, "role").map(|r| r.to_lowercase()).unwrap_or_default();
        if !["owner", "admin", "member"].contains(&role.as_str()) {
            cx.unplaced("org_memberships", format!("{customer}/{subject}"), format!("unknown role {role:?}"));
            continue;
        }
        let status = match text(&row, "status").map(|s| s.to_lowercase()).as_deref() {
            Some("suspended") => "suspended",
            _ => "active",
        };
        cx.member_of.entry(subject.clone()).or_default().insert(customer.clone());
        let membership = Membership { subject: subject.clone(), role: role.clone(), status: status.into() };
        if let Some(c) = cx.customer_mut(&customer) {
            c.push("org_memberships", json!({ "subject": subject, "role": role, "status": status }));
            c.memberships.push(membership);
        }
    }
}

fn billing_accounts(cx: &mut Ctx<'_>) {
    let rows = cx.snap.rows("billing_accounts").to_vec();
    for row in &rows {
        // Every account: they are the fleet's, not a customer's.
        let Some(subject) = trimmed(row, "subject") else {
            cx.unplaced("billing_accounts", key_of(row, &["id"]), "no subject");
            continue;
        };
        cx.plan.billing_accounts.push(BillingAccount {
            subject,
            email: trimmed(row, "email").map(|e| e.to_lowercase()),
            display_name: trimmed(row, "display_name"),
        });
    }
}

fn tenants(cx: &mut Ctx<'_>) {
    cx.default_used("tenants", "cluster_tenant_ref", "users are placed by their subject's membership");
    let rows = cx.snap.rows("tenants").to_vec();
    let mut seen_email: BTreeSet<(String, String)> = BTreeSet::new();
    for row in rows {
        let name = text(&row, "name").unwrap_or_default();
        let subject = trimmed(&row, "subject");
        let customer = match trimmed(&row, "cluster_tenant_ref") {
            Some(c) => Some(c),
            None => {
                let of =
                    subject.as_deref().map(|s| cx.member_of.get(s).cloned().unwrap_or_default()).unwrap_or_default();
                if of.len() == 1 { of.into_iter().next() } else { None }
            }
        };
        let Some(customer) = customer else {
            cx.unplaced(
                "tenants",
                name,
                "no customer: clusterTenantRef is empty and its subject is a member of no single customer",
            );
            continue;
        };
        if !cx.index.contains_key(&customer) {
            if !cx.known.contains(&customer) {
                cx.unplaced("tenants", name, format!("its customer {customer} does not exist"));
            }
            continue;
        }
        let Some(subject) = subject else {
            cx.unplaced("tenants", name, "no subject: a silo user is the identity provider's subject");
            continue;
        };
        if let Err(why) = opencrane_types::rules::dns_label("Name", &name) {
            cx.unplaced("tenants", name, why);
            continue;
        }
        let display = trimmed(&row, "display_name").unwrap_or_else(|| name.clone());
        if let Err(why) = opencrane_types::rules::display_text("Display name", &display, 120) {
            cx.unplaced("tenants", name, why);
            continue;
        }
        let email = trimmed(&row, "email").unwrap_or_default();
        if let Err(why) = opencrane_types::rules::email_address(&email) {
            cx.unplaced("tenants", name, why);
            continue;
        }
        if cx.tenant_by_subject.contains_key(&(customer.clone(), subject.clone()))
            || !seen_email.insert((customer.clone(), email.to_lowercase()))
        {
            cx.unplaced("tenants", name, "another user of the same customer has the same subject or e-mail");
            continue;
        }
        let team = trimmed(&row, "team");
        let team = match team {
            Some(t) if opencrane_types::rules::dns_label("Team", &t).is_ok() => Some(t),
            Some(t) => {
                cx.plan.defaults.push(format!("tenants {name}: team {t:?} is not a label here; left empty"));
                None
            }
            None => None,
        };
        cx.tenants.insert(name.clone(), (customer.clone(), subject.clone()));
        cx.tenant_by_subject.insert((customer.clone(), subject.clone()), name.clone());
        if let Some(c) = cx.customer_mut(&customer) {
            c.push(
                "tenants",
                json!({ "name": name, "display_name": display, "email": email, "subject": subject, "team": team }),
            );
        }
    }
}

fn groups(cx: &mut Ctx<'_>) {
    cx.default_used("groups", "scope", "every group is an org group");
    let rows = cx.snap.rows("groups").to_vec();
    for row in rows {
        let id = text(&row, "id").unwrap_or_default();
        let name = text(&row, "name").unwrap_or_default();
        let scope = text(&row, "scope").map(|s| s.to_lowercase()).unwrap_or_else(|| "org".into());
        let label = format!("{name} ({id})");
        if !is_object_name(&name, ":._", 80) {
            cx.unplaced(
                "groups",
                label,
                "its name is not a group name here (lowercase letters, digits, - : . _; up to 80)",
            );
            continue;
        }
        if !["org", "department", "team", "project", "personal"].contains(&scope.as_str()) {
            cx.unplaced("groups", label, format!("unknown scope {scope:?}"));
            continue;
        }
        let description = text(&row, "description").unwrap_or_default();
        if description.chars().count() > 500 {
            cx.unplaced("groups", label, "its description is longer than 500 characters");
            continue;
        }
        let mut by_customer: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for member in strings(json_field(&row, "members")) {
            // A member is a user's name or subject.
            let hits: Vec<(String, String)> = match cx.tenants.get(&member) {
                Some((customer, _)) => vec![(customer.clone(), member.clone())],
                None => cx
                    .tenant_by_subject
                    .iter()
                    .filter(|((_, s), _)| *s == member)
                    .map(|((c, _), t)| (c.clone(), t.clone()))
                    .collect(),
            };
            if hits.is_empty() {
                cx.unplaced("groups.members", format!("{name}/{member}"), "not a migrated user");
            }
            for (customer, tenant) in hits {
                by_customer.entry(customer).or_default().insert(tenant);
            }
        }
        if by_customer.is_empty() {
            cx.unplaced("groups", label, "none of its members is a migrated user, so it belongs to no customer");
            continue;
        }
        if by_customer.len() > 1 {
            cx.plan.notes.push(format!(
                "group {name} had members in {} customers: each gets the group with its own members",
                by_customer.len()
            ));
        }
        cx.groups.insert(id, (scope.clone(), name.clone(), by_customer.keys().cloned().collect()));
        for (customer, members) in by_customer {
            let Some(c) = cx.customer_mut(&customer) else { continue };
            c.push("groups", json!({ "scope": scope, "name": name, "description": description }));
            for tenant in members {
                c.push("group_members", json!({ "group": format!("{scope}/{name}"), "tenant": tenant }));
            }
        }
    }
}

fn policies(cx: &mut Ctx<'_>) {
    let rows = cx.snap.rows("access_policies").to_vec();
    let mut shared = 0;
    for row in rows {
        let name = text(&row, "name").unwrap_or_default();
        if opencrane_types::rules::dns_label("Name", &name).is_err() {
            cx.unplaced("access_policies", name, "not a policy name here (a DNS label)");
            continue;
        }
        let selector = json_field(&row, "tenant_selector").unwrap_or_else(|| json!({}));
        let mut labels: Map<String, Value> = match selector.get("matchLabels").cloned().unwrap_or(selector) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let named = CUSTOMER_LABELS.iter().find_map(|k| labels.remove(*k)).and_then(|v| v.as_str().map(str::to_owned));
        let domains = json_field(&row, "domains").unwrap_or_else(|| json!({}));
        let allow = strings(domains.get("allow").cloned());
        let deny = strings(domains.get("deny").cloned());
        let egress = json_field(&row, "egress_rules").filter(Value::is_array).unwrap_or_else(|| json!([]));
        let description = text(&row, "description").unwrap_or_default();
        if description.chars().count() > 500 {
            cx.unplaced("access_policies", name, "its description is longer than 500 characters");
            continue;
        }
        let out = json!({
            "name": name, "description": description, "tenant_selector": Value::Object(labels),
            "allowed_domains": allow, "denied_domains": deny, "egress_rules": egress,
        });
        let targets = match named {
            Some(customer) if cx.index.contains_key(&customer) => vec![customer],
            Some(other) => {
                cx.unplaced("access_policies", name, format!("it names customer {other}, which is not in the source"));
                continue;
            }
            None => {
                shared += 1;
                cx.names()
            }
        };
        for customer in targets {
            if let Some(c) = cx.customer_mut(&customer) {
                c.push("access_policies", out.clone());
            }
        }
    }
    if shared > 0 {
        cx.plan.notes.push(format!(
            "{shared} access policies named no customer (shared configuration): each customer gets its own copy"
        ));
    }
}

fn grants(cx: &mut Ctx<'_>) {
    cx.default_used("grants", "priority", "priority 0");
    let rows = cx.snap.rows("grants").to_vec();
    for row in rows {
        let id = text(&row, "id").unwrap_or_default();
        let payload_type = text(&row, "payload_type").unwrap_or_default().to_lowercase().replace('_', "-");
        if payload_type == "awareness" {
            cx.unplaced("grants", id, "awareness payloads are not part of this project");
            continue;
        }
        if !["mcp-server", "skill-bundle", "model"].contains(&payload_type.as_str()) {
            cx.unplaced("grants", id, format!("unknown payload type {payload_type:?}"));
            continue;
        }
        let access = text(&row, "access").unwrap_or_default().to_lowercase();
        if !["allow", "deny"].contains(&access.as_str()) {
            cx.unplaced("grants", id, format!("unknown access {access:?}"));
            continue;
        }
        let priority = row.get("priority").and_then(Value::as_i64).unwrap_or(0);
        if !(-1000..=1000).contains(&priority) {
            cx.unplaced("grants", id, format!("priority {priority} is outside -1000..1000"));
            continue;
        }
        let payload_id = text(&row, "payload_id").unwrap_or_default();
        let subject_type = text(&row, "subject_type").unwrap_or_default().to_lowercase();
        let subject_id = text(&row, "subject_id").unwrap_or_default();
        let targets: Vec<(String, String)> = match subject_type.as_str() {
            "group" => {
                let group = text(&row, "group_id").unwrap_or_else(|| subject_id.clone());
                match cx.groups.get(&group) {
                    Some((scope, name, customers)) => {
                        customers.iter().map(|c| (c.clone(), format!("{scope}/{name}"))).collect()
                    }
                    None => {
                        cx.unplaced("grants", id, format!("its group {group} does not exist or was not placed"));
                        continue;
                    }
                }
            }
            "tenant" => match cx.tenants.get(&subject_id) {
                Some((customer, _)) => vec![(customer.clone(), subject_id.clone())],
                None => {
                    cx.unplaced("grants", id, format!("user {subject_id} was not migrated"));
                    continue;
                }
            },
            "user" => {
                let of = cx.customers_of_subject(&subject_id);
                if of.is_empty() {
                    cx.unplaced("grants", id, format!("subject {subject_id} belongs to no migrated customer"));
                    continue;
                }
                of.into_iter().map(|c| (c, subject_id.clone())).collect()
            }
            other => {
                cx.unplaced("grants", id, format!("unknown subject type {other:?}"));
                continue;
            }
        };
        let note = text(&row, "note").unwrap_or_default();
        if note.chars().count() > 500 || payload_id.trim().is_empty() || payload_id.chars().count() > 200 {
            cx.unplaced("grants", id, "its payload id (1–200 characters) or note (up to 500) does not fit");
            continue;
        }
        let created_by = trimmed(&row, "shared_by").unwrap_or_else(|| "migration".into());
        for (customer, subject) in targets {
            if let Some(c) = cx.customer_mut(&customer) {
                c.push(
                    "grants",
                    json!({
                        "payload_type": payload_type, "payload_id": payload_id, "subject_type": subject_type,
                        "subject_id": subject, "access": access, "priority": priority, "note": note,
                        "created_by": created_by,
                    }),
                );
            }
        }
    }
}

fn budget(level: &str, tenant: Option<&str>, currency: &str, amount: &str) -> Value {
    json!({ "level": level, "tenant": tenant, "currency": currency, "amount": amount, "period": "month" })
}

fn currency_of(row: &Value) -> Option<String> {
    text(row, "currency")
        .map(|c| c.trim().to_uppercase())
        .filter(|c| c.len() == 3 && c.chars().all(|x| x.is_ascii_uppercase()))
}

fn budgets(cx: &mut Ctx<'_>) {
    if let Some(row) = cx.snap.rows("global_budget_settings").first().cloned() {
        match (currency_of(&row), row.get("ceiling_amount").and_then(amount)) {
            (Some(currency), Some(a)) if !is_zero(&a) => {
                for name in cx.names() {
                    if let Some(c) = cx.customer_mut(&name) {
                        c.push("budgets", budget("silo", None, &currency, &a));
                    }
                }
                cx.plan.notes.push(format!(
                    "the company-wide ceiling ({a} {currency} a month) becomes each silo's budget, which this project enforces (the original only displayed it)"
                ));
            }
            (Some(_), Some(_)) => cx.plan.notes.push("the company-wide ceiling is 0 (unset): no silo budget".into()),
            _ => cx.unplaced("global_budget_settings", "1".into(), "its currency or amount is not valid"),
        }
    }
    let mut budgeted: BTreeSet<String> = BTreeSet::new();
    let rows = cx.snap.rows("account_budget_settings").to_vec();
    for row in rows {
        let user = text(&row, "user_id").unwrap_or_default();
        let tenant = cx.tenants.get(&user).map(|(c, _)| (c.clone(), user.clone())).or_else(|| {
            cx.tenant_by_subject.iter().find(|((_, s), _)| *s == user).map(|((c, _), t)| (c.clone(), t.clone()))
        });
        let Some((customer, tenant)) = tenant else {
            cx.unplaced("account_budget_settings", user, "not a migrated user");
            continue;
        };
        match (currency_of(&row), row.get("ceiling_amount").and_then(amount)) {
            (Some(currency), Some(a)) if !is_zero(&a) => {
                budgeted.insert(tenant.clone());
                if let Some(c) = cx.customer_mut(&customer) {
                    c.push("budgets", budget("user", Some(&tenant), &currency, &a));
                }
            }
            (Some(_), Some(_)) => {}
            _ => cx.unplaced("account_budget_settings", user, "its currency or amount is not valid"),
        }
    }
    // The one budget the original enforced: the monthly budget on a user's LiteLLM key (newest
    // unrevoked key), unless a per-account ceiling was set.
    let mut newest: BTreeMap<String, (String, String)> = BTreeMap::new();
    for row in cx.snap.rows("tenant_litellm_keys") {
        if row.get("revoked_at").is_some_and(|v| !v.is_null()) {
            continue;
        }
        let (Some(tenant), Some(a)) = (text(row, "tenant"), row.get("monthly_budget_usd").and_then(amount)) else {
            continue;
        };
        let issued = text(row, "issued_at").unwrap_or_default();
        if newest.get(&tenant).is_none_or(|(at, _)| *at <= issued) {
            newest.insert(tenant, (issued, a));
        }
    }
    for (tenant, (_, a)) in newest {
        if budgeted.contains(&tenant) || is_zero(&a) {
            continue;
        }
        let Some((customer, _)) = cx.tenants.get(&tenant).cloned() else { continue };
        if let Some(c) = cx.customer_mut(&customer) {
            c.push("budgets", budget("user", Some(&tenant), "USD", &a));
        }
    }
}

fn credentials(cx: &mut Ctx<'_>) {
    cx.default_used("provider_credentials", "scope", "every credential is global");
    // provider → (customer or None for global) → secret ref; customer-scoped ones win.
    let mut by_customer: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut global: BTreeMap<String, String> = BTreeMap::new();
    let rows = cx.snap.rows("provider_credentials").to_vec();
    for row in &rows {
        let id = text(row, "id").unwrap_or_default();
        let provider = text(row, "provider").unwrap_or_default().to_lowercase();
        let secret_ref = trimmed(row, "secret_ref").unwrap_or_default();
        if !PROVIDERS.contains(&provider.as_str()) {
            cx.unplaced("provider_credentials", id, format!("provider {provider:?} is not one this project routes to"));
            continue;
        }
        if !valid_secret_ref(&secret_ref) {
            cx.unplaced(
                "provider_credentials",
                id,
                format!("secret reference {secret_ref:?} is not a Secret name here"),
            );
            continue;
        }
        match (text(row, "scope").map(|s| s.to_lowercase()).as_deref(), trimmed(row, "cluster_tenant")) {
            (Some("clustertenant"), Some(customer)) => {
                if cx.index.contains_key(&customer) {
                    by_customer.entry(customer).or_default().insert(provider, secret_ref);
                }
            }
            _ => {
                global.insert(provider, secret_ref);
            }
        }
    }
    let legacy: Vec<(String, String)> = cx
        .snap
        .rows("provider_api_keys")
        .iter()
        .filter_map(|r| Some((text(r, "provider")?.to_lowercase(), text(r, "key_value")?)))
        .filter(|(_, k)| !k.trim().is_empty())
        .collect();
    for (provider, _) in &legacy {
        if !PROVIDERS.contains(&provider.as_str()) {
            cx.unplaced(
                "provider_api_keys",
                provider.clone(),
                format!("provider {provider:?} is not one this project routes to"),
            );
        }
    }
    if !global.is_empty() || !legacy.is_empty() {
        cx.plan.notes.push(
            "global provider credentials and legacy provider keys are copied to every customer; a secret reference \
             names a Secret that must exist in each silo's namespace; legacy keys are sealed with each silo's key"
                .into(),
        );
    }
    for name in cx.names() {
        let mut refs = global.clone();
        refs.extend(by_customer.remove(&name).unwrap_or_default());
        let mut rows_out = Vec::new();
        let mut keys = BTreeMap::new();
        for (provider, secret_ref) in &refs {
            rows_out.push(
                json!({ "name": provider, "provider": provider, "secret_ref": secret_ref, "secret_sha256": null }),
            );
        }
        for (provider, key) in &legacy {
            if !PROVIDERS.contains(&provider.as_str()) || refs.contains_key(provider) {
                continue;
            }
            rows_out.push(json!({
                "name": provider, "provider": provider, "secret_ref": null, "secret_sha256": crate::verify::sha256_hex(key.as_bytes()),
            }));
            keys.insert(provider.clone(), PlainKey(key.clone()));
        }
        if let Some(c) = cx.customer_mut(&name) {
            for row in rows_out {
                c.push("provider_credentials", row);
            }
            c.plain_keys = keys;
        }
    }
    cx.credential_ids =
        rows.iter().filter_map(|r| Some((text(r, "id")?, text(r, "provider")?.to_lowercase()))).collect();
}

fn valid_secret_ref(value: &str) -> bool {
    let (name, key) = value.split_once('/').map_or((value, None), |(n, k)| (n, Some(k)));
    is_object_name(name, ".", 253)
        && key.is_none_or(|k| {
            (1..=253).contains(&k.len()) && k.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
        })
}

fn models(cx: &mut Ctx<'_>) {
    cx.default_used("model_definitions", "scope", "every model definition is global");
    let ids = std::mem::take(&mut cx.credential_ids);
    let rows = cx.snap.rows("model_definitions").to_vec();
    // customer (None: global) → (public, upstream) → row; and the default model names.
    // (public, upstream) → (row, is_default)
    type Definitions = BTreeMap<(String, String), (Value, bool)>;
    let mut global = Definitions::new();
    let mut scoped: BTreeMap<String, Definitions> = BTreeMap::new();
    for row in rows {
        let id = key_of(&row, &["id", "public_model_name"]);
        let public = text(&row, "public_model_name").unwrap_or_default();
        let upstream = trimmed(&row, "upstream_model").unwrap_or_default();
        if !is_object_name(&public, "._:/", 80) || upstream.is_empty() || upstream.chars().count() > 200 {
            cx.unplaced("model_definitions", id, "its public or upstream model name is not valid here");
            continue;
        }
        let api_base = trimmed(&row, "api_base").filter(|b| b.starts_with("http://") || b.starts_with("https://"));
        let credential = text(&row, "provider_credential_id").and_then(|c| ids.get(&c).cloned());
        let is_default = row.get("is_default").and_then(Value::as_bool).unwrap_or(false);
        let out = json!({ "public_name": public, "upstream_model": upstream, "api_base": api_base, "credential": credential });
        match (text(&row, "scope").map(|s| s.to_lowercase()).as_deref(), trimmed(&row, "cluster_tenant")) {
            (Some("clustertenant"), Some(customer)) => {
                if cx.index.contains_key(&customer) {
                    scoped.entry(customer).or_default().insert((public, upstream), (out, is_default));
                }
            }
            _ => {
                global.insert((public, upstream), (out, is_default));
            }
        }
    }
    let routing: Vec<(Option<String>, String)> = cx
        .snap
        .rows("model_routing_defaults")
        .iter()
        .filter_map(|r| {
            let model = trimmed(r, "default_model")?;
            let customer = match text(r, "scope").map(|s| s.to_lowercase()).as_deref() {
                Some("clustertenant") => Some(trimmed(r, "cluster_tenant")?),
                _ => None,
            };
            Some((customer, model))
        })
        .collect();
    for name in cx.names() {
        let mut defs = global.clone();
        defs.extend(scoped.remove(&name).unwrap_or_default());
        let credentials: BTreeSet<String> = cx.plan.customers[cx.index[&name]]
            .silo
            .get("provider_credentials")
            .map(|rows| rows.iter().filter_map(|r| text(r, "name")).collect())
            .unwrap_or_default();
        let default = routing
            .iter()
            .find(|(c, _)| c.as_deref() == Some(name.as_str()))
            .or_else(|| routing.iter().find(|(c, _)| c.is_none()))
            .map(|(_, m)| m.clone())
            .or_else(|| defs.iter().find(|(_, (_, d))| *d).map(|((p, _), _)| p.clone()));
        let Some(c) = cx.customer_mut(&name) else { continue };
        for (_, (mut row, _)) in defs {
            // A credential this customer does not get leaves the model on LiteLLM's own.
            if row["credential"].as_str().is_some_and(|cred| !credentials.contains(cred)) {
                row["credential"] = Value::Null;
            }
            c.push("model_definitions", row);
        }
        if let Some(model) = default {
            c.push("model_defaults", json!({ "scope": "silo", "model": model }));
        }
    }
}

fn access_tokens(cx: &mut Ctx<'_>) {
    let rows = cx.snap.rows("access_tokens").to_vec();
    for row in rows {
        let id = text(&row, "id").unwrap_or_default();
        let owner = trimmed(&row, "owner").unwrap_or_default();
        let hash = text(&row, "token_hash").unwrap_or_default().to_lowercase();
        if hash.len() != 64 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
            cx.unplaced("access_tokens", id, "its hash is not a SHA-256 in hex");
            continue;
        }
        // The owner is a subject, or a user's name.
        let subject = cx.tenants.get(&owner).map_or(owner.clone(), |(_, s)| s.clone());
        let of = cx.customers_of_subject(&subject);
        if of.len() != 1 {
            cx.unplaced(
                "access_tokens",
                id,
                format!(
                    "its owner {owner:?} is a member of {} migrated customers; a token acts for one member of one",
                    of.len()
                ),
            );
            continue;
        }
        let customer = of.into_iter().next().unwrap_or_default();
        let admin = cx
            .plan
            .customers
            .get(cx.index[&customer])
            .is_some_and(|c| c.memberships.iter().any(|m| m.subject == subject && m.role != "member"));
        let name = trimmed(&row, "name").unwrap_or_else(|| "default".into());
        if name.chars().count() > 80 {
            cx.unplaced("access_tokens", id, "its name is longer than 80 characters");
            continue;
        }
        let out = json!({
            "name": name, "owner_subject": subject, "role": if admin { "admin" } else { "member" },
            "token_hash": hash, "created_at": ts(&row, "created_at"), "expires_at": ts(&row, "expires_at"),
            "last_used_at": ts(&row, "last_used_at"),
        });
        if let Some(c) = cx.customer_mut(&customer) {
            c.push("access_tokens", out);
        }
    }
}

fn audit(cx: &mut Ctx<'_>) {
    let mut orphans: Vec<String> = Vec::new();
    for row in cx.snap.rows("audit_log") {
        let tenant = text(row, "tenant");
        let Some((customer, _)) = tenant.as_ref().and_then(|t| cx.tenants.get(t)).cloned() else {
            orphans.push(text(row, "id").unwrap_or_default());
            continue;
        };
        let mut metadata = Map::new();
        if let Some(m) = json_field(row, "metadata") {
            metadata.insert("original".into(), m);
        }
        if let Some(message) = text(row, "message") {
            metadata.insert("message".into(), Value::String(message));
        }
        metadata.insert("migratedFrom".into(), json!(text(row, "id")));
        let out = json!({
            "occurred_at": ts(row, "timestamp"),
            "actor": "(original)",
            "action": text(row, "action").unwrap_or_default(),
            "target": text(row, "resource").or(tenant).unwrap_or_default(),
            "metadata": Value::Object(metadata),
        });
        if let Some(i) = cx.index.get(&customer).copied() {
            cx.plan.customers[i].push("audit_log", out);
        }
    }
    if !orphans.is_empty() {
        let first = orphans.first().cloned().unwrap_or_default();
        let last = orphans.last().cloned().unwrap_or_default();
        cx.unplaced(
            "audit_log",
            format!("{} entries (ids {first}…{last})", orphans.len()),
            "they name no migrated user; they stay in the original database",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_amounts_are_canonical() {
        assert_eq!(timestamp(&json!("2026-01-02T03:04:05.123")).unwrap(), "2026-01-02T03:04:05.123000Z");
        assert_eq!(timestamp(&json!("2026-01-02T03:04:05+01:00")).unwrap(), "2026-01-02T02:04:05.000000Z");
        assert!(timestamp(&json!("yesterday")).is_none());
        assert_eq!(amount(&json!(12.5)).unwrap(), "12.50");
        assert_eq!(amount(&json!("0012.30")).unwrap(), "12.30");
        assert_eq!(amount(&json!(7)).unwrap(), "7.00");
        assert!(amount(&json!("1.234")).is_none(), "more than cents is not silently rounded");
        assert!(amount(&json!("-1")).is_none());
    }

    #[test]
    fn secret_references_follow_the_silo_rule() {
        assert!(valid_secret_ref("openai-key"));
        assert!(valid_secret_ref("llm.keys/api-key"));
        assert!(!valid_secret_ref("Upper"));
        assert!(!valid_secret_ref("a/"));
    }

    #[test]
    fn a_plain_key_never_prints() {
        assert_eq!(format!("{:?}", PlainKey("sk-live-secret".into())), "PlainKey(…)");
    }
}
