//! Kubernetes mode: each user is also a `Tenant` resource in the silo namespace, and each access
//! policy an `AccessPolicy` resource. The resource is
//! the source of truth for runtime state (its `status.phase`); the database row is the portal's.
//!
//! A pass (every 30 s and after each change in the portal) makes the resources follow the rows
//! with server-side apply, records in each row how its resource had differed (drift, shown on
//! the users page) and the phase the runtime reports, adopts resources applied with `kubectl`
//! that have no row (the reference's projection repairer: the resource is authoritative), and
//! deletes the resources of users deleted in the portal. The pure parts — the desired resource
//! and the comparison — are unit-tested; the pass is tested against the fake API server.

use std::collections::BTreeMap;

use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams},
};
use opencrane_crd::{
    access_policy::{AccessPolicy, AccessPolicySpec, Domains, EgressRule as CrdEgressRule, Protocol, TenantSelector},
    tenant::{Tenant, TenantResources, TenantSpec},
};
use opencrane_silo_db::{
    policies::{self as policy_db, PolicyFields, PolicyRow},
    tenants::{self, TenantFields, TenantFilter, TenantRow},
};
use sqlx::PgPool;

/// The field manager of the portal's writes.
pub const FIELD_MANAGER: &str = "opencrane-clustertenant-manager";

/// The label marking resources the portal writes (so that a resource without it, and without a
/// row, is a `kubectl apply` to adopt, while one with it is a deleted user's to remove).
pub const MANAGED_LABEL: &str = "opencrane.io/managed-by";

/// Why a pass failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The API server failed.
    #[error("the Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] opencrane_db::Error),
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeReport {
    /// Resources created or repaired.
    pub applied: Vec<String>,
    /// Rows created from resources nobody in the portal made.
    pub adopted: Vec<String>,
    /// Resources of deleted users removed.
    pub deleted: Vec<String>,
    /// Rows whose resource had drifted: (name, how).
    pub drift: Vec<(String, String)>,
}

/// The resource a user's row asks for.
pub fn desired(row: &TenantRow, cluster_tenant: &str) -> Tenant {
    let mut tenant = Tenant::new(
        &row.name,
        TenantSpec {
            display_name: row.display_name.clone(),
            email: row.email.clone(),
            subject: Some(row.subject.clone()),
            team: row.team.clone(),
            openclaw_image: None,
            openclaw_version: None,
            policy_ref: row.policy_ref.clone(),
            cluster_tenant_ref: Some(cluster_tenant.to_owned()),
            monthly_budget_usd: None,
            resources: (row.cpu.is_some() || row.memory.is_some())
                .then(|| TenantResources { cpu: row.cpu.clone(), memory: row.memory.clone() }),
            mcp_policy: None,
            channels: Vec::new(),
            config_overrides: None,
            suspended: row.suspended,
        },
    );
    tenant.metadata.labels = Some(BTreeMap::from([(MANAGED_LABEL.to_owned(), "opencrane-portal".to_owned())]));
    tenant
}

/// How `observed` differs from what `row` asks for (empty when in step).
pub fn drift(row: &TenantRow, observed: &TenantSpec) -> Vec<String> {
    let mut diff = Vec::new();
    let mut check = |field: &str, want: String, have: String| {
        if want != have {
            diff.push(format!("{field} is “{have}”, the portal says “{want}”"));
        }
    };
    check("displayName", row.display_name.clone(), observed.display_name.clone());
    check("email", row.email.clone(), observed.email.clone());
    check("subject", row.subject.clone(), observed.subject.clone().unwrap_or_default());
    check("team", row.team.clone().unwrap_or_default(), observed.team.clone().unwrap_or_default());
    check("policyRef", row.policy_ref.clone().unwrap_or_default(), observed.policy_ref.clone().unwrap_or_default());
    check("suspended", row.suspended.to_string(), observed.suspended.to_string());
    let res = observed.resources.clone().unwrap_or_default();
    check("resources.cpu", row.cpu.clone().unwrap_or_default(), res.cpu.unwrap_or_default());
    check("resources.memory", row.memory.clone().unwrap_or_default(), res.memory.unwrap_or_default());
    diff
}

/// Keeps a silo's Tenant resources in step with its user rows.
#[derive(Clone)]
pub struct TenantRuntime {
    api: Api<Tenant>,
    policies: Api<AccessPolicy>,
    pool: PgPool,
    cluster_tenant: String,
    namespace: String,
    /// On a cluster running Cilium: the CiliumNetworkPolicy API and the floor's HTTPS allow-list
    /// (see [`crate::egress`]).
    cilium: Option<(Api<kube::core::DynamicObject>, Vec<crate::egress::CidrBlock>)>,
}

impl TenantRuntime {
    /// The runtime of silo `cluster_tenant` in `namespace`.
    pub fn new(client: Client, namespace: &str, pool: PgPool, cluster_tenant: &str) -> Self {
        Self {
            api: Api::namespaced(client.clone(), namespace),
            policies: Api::namespaced(client, namespace),
            pool,
            cluster_tenant: cluster_tenant.to_owned(),
            namespace: namespace.to_owned(),
            cilium: None,
        }
    }

    /// On a cluster running Cilium: the MCP gateway's egress follows the access policies too,
    /// `floor` being the NetworkPolicy floor's HTTPS allow-list.
    pub fn with_cilium(mut self, client: Client, floor: Vec<crate::egress::CidrBlock>) -> Self {
        use kube::core::{ApiResource, GroupVersionKind};
        let resource = ApiResource::from_gvk(&GroupVersionKind::gvk("cilium.io", "v2", "CiliumNetworkPolicy"));
        self.cilium = Some((Api::namespaced_with(client, &self.namespace, &resource), floor));
        self
    }

    /// Runs passes forever: every [`crate::reconcile::INTERVAL`], or sooner when `trigger` is poked.
    pub async fn run(self, trigger: crate::reconcile::Trigger) {
        loop {
            match self.pass().await {
                Ok(r) if r != RuntimeReport::default() => tracing::info!(
                    applied = ?r.applied, adopted = ?r.adopted, deleted = ?r.deleted, drift = r.drift.len(),
                    "Tenant resources converged"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "Tenant resource pass failed"),
            }
            trigger.wait(crate::reconcile::INTERVAL).await;
        }
    }

    /// One pass.
    pub async fn pass(&self) -> Result<RuntimeReport, RuntimeError> {
        let mut report = RuntimeReport::default();
        // Policies first: a user's policyRef must name an existing policy.
        self.policies(&mut report).await?;
        self.gateway_egress(&mut report).await?;
        let resources = self.api.list(&ListParams::default()).await?.items;
        let rows = tenants::list(&self.pool, &TenantFilter::default()).await?;
        for r in &resources {
            let name = r.metadata.name.clone().unwrap_or_default();
            if rows.iter().any(|row| row.name == name) {
                continue;
            }
            let managed = r.metadata.labels.as_ref().is_some_and(|l| l.contains_key(MANAGED_LABEL));
            if managed {
                // Its user was deleted in the portal.
                self.api.delete(&name, &DeleteParams::default()).await?;
                report.deleted.push(name);
            } else if self.adopt(&name, &r.spec).await? {
                report.adopted.push(name);
            }
        }
        let rows = tenants::list(&self.pool, &TenantFilter::default()).await?;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        for row in &rows {
            let observed = resources.iter().find(|r| r.metadata.name.as_deref() == Some(row.name.as_str()));
            let diff = observed.map(|o| drift(row, &o.spec)).unwrap_or_default();
            let labelled =
                observed.is_some_and(|o| o.metadata.labels.as_ref().is_some_and(|l| l.contains_key(MANAGED_LABEL)));
            if observed.is_none() || !diff.is_empty() || !labelled {
                self.api.patch(&row.name, &params, &Patch::Apply(desired(row, &self.cluster_tenant))).await?;
                report.applied.push(row.name.clone());
            }
            let phase = observed.and_then(|o| o.status.as_ref()).and_then(|s| s.phase).map(|p| p.as_str());
            let drift_text = (!diff.is_empty()).then(|| diff.join("; "));
            tenants::set_runtime(&self.pool, &row.name, phase, drift_text.as_deref()).await?;
            if let Some(text) = drift_text {
                report.drift.push((row.name.clone(), text));
            }
        }
        Ok(report)
    }

    /// Creates the row of a resource applied outside the portal; false when it cannot be (its
    /// name, e-mail or subject is invalid or taken — logged, left alone).
    async fn adopt(&self, name: &str, spec: &TenantSpec) -> Result<bool, RuntimeError> {
        let subject = spec.subject.clone().unwrap_or_else(|| format!("resource:{name}"));
        let res = spec.resources.clone().unwrap_or_default();
        let fields = TenantFields {
            display_name: &spec.display_name,
            email: &spec.email,
            subject: &subject,
            team: spec.team.as_deref(),
            policy_ref: spec.policy_ref.as_deref(),
            cpu: res.cpu.as_deref(),
            memory: res.memory.as_deref(),
        };
        match tenants::insert(&self.pool, name, &fields, "resource").await {
            Ok(_) => {
                if spec.suspended {
                    tenants::set_suspended(&self.pool, name, true).await?;
                }
                audit_adoption(&self.pool, "tenant.adopt", name).await?;
                Ok(true)
            }
            Err(
                e @ (opencrane_db::Error::UniqueViolation { .. }
                | opencrane_db::Error::CheckViolation { .. }
                | opencrane_db::Error::ForeignKeyViolation { .. }),
            ) => {
                tracing::warn!(tenant = name, error = %e, "a Tenant resource cannot become a user");
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Records that a resource nobody made in the portal became a record.
async fn audit_adoption(pool: &PgPool, action: &str, name: &str) -> Result<(), RuntimeError> {
    let meta = serde_json::json!({ "source": "resource" });
    let entry = opencrane_common_db::audit::NewAuditEntry {
        actor: "controller",
        actor_role: "operator",
        action,
        target: name,
        outcome: "success",
        request_id: None,
        metadata: &meta,
    };
    opencrane_common_db::audit::append(pool, &entry).await?;
    Ok(())
}

/// The AccessPolicy resource a policy row asks for.
pub fn desired_policy(row: &PolicyRow) -> AccessPolicy {
    let policy = crate::snapshot::policy(row);
    let mut resource = AccessPolicy::new(
        &row.name,
        AccessPolicySpec {
            description: (!row.description.is_empty()).then(|| row.description.clone()),
            tenant_selector: (!policy.tenant_selector.is_empty())
                .then(|| TenantSelector { match_labels: policy.tenant_selector.clone(), match_team: None }),
            domains: Some(Domains {
                allow: row.allowed_domains.clone(),
                deny: row.denied_domains.clone(),
                default_deny: true,
            }),
            egress_rules: policy
                .egress
                .iter()
                .map(|r| CrdEgressRule {
                    cidr: r.cidr.clone(),
                    ports: r.ports.iter().map(|p| i32::from(*p)).collect(),
                    protocol: Protocol::Tcp,
                })
                .collect(),
        },
    );
    resource.metadata.labels = Some(BTreeMap::from([(MANAGED_LABEL.to_owned(), "opencrane-portal".to_owned())]));
    resource
}

/// How an AccessPolicy resource differs from what its row asks for, field by field (empty: in
/// step).
pub fn policy_drift(want: &AccessPolicySpec, observed: &AccessPolicySpec) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |field: &str, differs: bool| {
        if differs {
            out.push(format!("{field} was changed on the resource"));
        }
    };
    check(
        "description",
        want.description.as_deref().unwrap_or_default() != observed.description.as_deref().unwrap_or_default(),
    );
    check("tenantSelector", want.tenant_selector != observed.tenant_selector);
    check("domains", want.domains != observed.domains);
    check("egressRules", want.egress_rules != observed.egress_rules);
    out
}

impl TenantRuntime {
    /// On a cluster running Cilium, applies the gateway's egress policy when it differs.
    async fn gateway_egress(&self, report: &mut RuntimeReport) -> Result<(), RuntimeError> {
        use crate::egress::{ACCESS_EGRESS, DomainRules, gateway_egress};
        let Some((api, floor)) = &self.cilium else { return Ok(()) };
        let rules: Vec<DomainRules> = policy_db::list(&self.pool).await?.iter().map(DomainRules::of_row).collect();
        let want = gateway_egress(&rules, floor, &self.namespace);
        let observed = api.get_opt(ACCESS_EGRESS).await?;
        if observed.as_ref().is_none_or(|o| o.data.get("spec") != Some(&want["spec"])) {
            let params = PatchParams::apply(FIELD_MANAGER).force();
            api.patch(ACCESS_EGRESS, &params, &Patch::Apply(&want)).await?;
            report.applied.push(format!("egress {ACCESS_EGRESS}"));
        }
        Ok(())
    }

    /// Makes the AccessPolicy resources follow the policy rows: applies what differs (reported
    /// as drift), adopts unlabelled resources without a row, deletes labelled ones without.
    async fn policies(&self, report: &mut RuntimeReport) -> Result<(), RuntimeError> {
        let resources = self.policies.list(&ListParams::default()).await?.items;
        let rows = policy_db::list(&self.pool).await?;
        for r in &resources {
            let name = r.metadata.name.clone().unwrap_or_default();
            if rows.iter().any(|row| row.name == name) {
                continue;
            }
            if r.metadata.labels.as_ref().is_some_and(|l| l.contains_key(MANAGED_LABEL)) {
                self.policies.delete(&name, &DeleteParams::default()).await?;
                report.deleted.push(format!("policy {name}"));
            } else if self.adopt_policy(&name, &r.spec).await? {
                report.adopted.push(format!("policy {name}"));
            }
        }
        let rows = policy_db::list(&self.pool).await?;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        for row in &rows {
            let want = desired_policy(row);
            let observed = resources.iter().find(|r| r.metadata.name.as_deref() == Some(row.name.as_str()));
            let labelled =
                observed.is_some_and(|o| o.metadata.labels.as_ref().is_some_and(|l| l.contains_key(MANAGED_LABEL)));
            let diff = observed.map(|o| policy_drift(&want.spec, &o.spec)).unwrap_or_default();
            let drift_text = (!diff.is_empty()).then(|| diff.join("; "));
            if observed.is_none_or(|o| o.spec != want.spec || !labelled) {
                self.policies.patch(&row.name, &params, &Patch::Apply(want)).await?;
                report.applied.push(format!("policy {}", row.name));
            }
            policy_db::set_resource_drift(&self.pool, &row.name, drift_text.as_deref()).await?;
            if let Some(text) = drift_text {
                report.drift.push((format!("policy {}", row.name), text));
            }
        }
        Ok(())
    }

    async fn adopt_policy(&self, name: &str, spec: &AccessPolicySpec) -> Result<bool, RuntimeError> {
        let selector =
            serde_json::json!(spec.tenant_selector.as_ref().map(|s| s.match_labels.clone()).unwrap_or_default());
        let domains =
            spec.domains.clone().unwrap_or(Domains { allow: Vec::new(), deny: Vec::new(), default_deny: true });
        let egress = serde_json::json!(
            spec.egress_rules
                .iter()
                .map(|r| serde_json::json!({ "cidr": r.cidr, "ports": r.ports }))
                .collect::<Vec<_>>()
        );
        let fields = PolicyFields {
            description: spec.description.as_deref().unwrap_or_default(),
            tenant_selector: &selector,
            allowed_domains: &domains.allow,
            denied_domains: &domains.deny,
            egress_rules: &egress,
        };
        match policy_db::insert(&self.pool, name, &fields).await {
            Ok(()) => {
                audit_adoption(&self.pool, "policy.adopt", name).await?;
                Ok(true)
            }
            Err(e @ (opencrane_db::Error::UniqueViolation { .. } | opencrane_db::Error::CheckViolation { .. })) => {
                tracing::warn!(policy = name, error = %e, "an AccessPolicy resource cannot become a policy");
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
}
