//! A silo's entitlements loaded from its database into the shapes the evaluators decide on.
//!
//! The portal's explanatory views and the LiteLLM reconciler both start from a [`Snapshot`], so
//! that they cannot disagree about who is in which group, which grants exist or what was spent.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use opencrane_entitlements::{
    Micros,
    budget::{self, Level, Limit, LimitStatus},
    grants::{Access, Grant, Membership, Recipient, Subject},
    period::{Period, PeriodError, Window, time_zone, window},
    policy::{EgressRule, Policy},
    routing::{Catalog, Defaults, Deployment},
};
use opencrane_silo_db::{
    budgets, grants, groups,
    models::{self, DefaultRow},
    policies, settings,
    settings::SettingsRow,
    tenants::{self, TenantFilter, TenantRow},
};
use sqlx::PgPool;

/// Why a snapshot could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The database failed.
    #[error(transparent)]
    Db(#[from] opencrane_db::Error),
    /// The stored time zone is unknown to this machine.
    #[error("the silo's time zone: {0}")]
    TimeZone(String),
    /// A period could not be computed.
    #[error(transparent)]
    Period(#[from] PeriodError),
}

/// Everything the evaluators need about a silo, at one moment.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Silo settings.
    pub settings: SettingsRow,
    /// The settings' time zone.
    pub time_zone: opencrane_entitlements::period::TimeZone,
    /// Every user.
    pub tenants: Vec<TenantRow>,
    /// Tenant → its groups.
    pub memberships: BTreeMap<String, Vec<Membership>>,
    /// Deployments, fallbacks, grants and default access.
    pub catalog: Catalog,
    /// Every limit.
    pub limits: Vec<Limit>,
    /// Every default model.
    pub defaults: Vec<DefaultRow>,
    /// Every access policy.
    pub policies: Vec<Policy>,
    /// Subject → their membership's status in the read-model from the fleet (`active`,
    /// `suspended`, or `removed` once the fleet no longer lists them).
    pub member_status: BTreeMap<String, String>,
}

/// Maps a stored grant.
pub fn grant(row: &grants::GrantRow) -> Option<Grant> {
    let recipient = match row.subject_type.as_str() {
        "tenant" => Recipient::Tenant(row.subject_id.clone()),
        "user" => Recipient::User(row.subject_id.clone()),
        "group" => Recipient::Group(row.subject_id.clone()),
        _ => return None,
    };
    Some(Grant {
        id: row.id.to_string(),
        payload_type: row.payload_type.clone(),
        payload_id: row.payload_id.clone(),
        recipient,
        access: Access::parse(&row.access)?,
        priority: row.priority,
        created_at: row.created_at,
    })
}

/// Maps a stored limit.
pub fn limit(row: &budgets::BudgetRow) -> Option<Limit> {
    let level = match row.level.as_str() {
        "silo" => Level::Silo,
        "group" => Level::Group { id: row.group_id?.to_string(), name: row.group_name.clone().unwrap_or_default() },
        "user" => Level::User { tenant: row.tenant.clone()? },
        _ => return None,
    };
    Some(Limit {
        id: row.id.to_string(),
        level,
        currency: row.currency.clone(),
        amount: row.amount,
        period: Period::parse(&row.period)?,
        thresholds: row.thresholds.iter().filter_map(|t| u8::try_from(*t).ok()).collect(),
    })
}

/// Maps a stored policy.
pub fn policy(row: &policies::PolicyRow) -> Policy {
    Policy {
        name: row.name.clone(),
        tenant_selector: serde_json::from_value(row.tenant_selector.clone()).unwrap_or_default(),
        allowed_domains: row.allowed_domains.clone(),
        denied_domains: row.denied_domains.clone(),
        egress: serde_json::from_value::<Vec<EgressRule>>(row.egress_rules.clone()).unwrap_or_default(),
    }
}

impl Snapshot {
    /// Loads the silo's current state.
    pub async fn load(pool: &PgPool) -> Result<Self, SnapshotError> {
        let settings = settings::get(pool).await?;
        let time_zone = time_zone(&settings.time_zone).map_err(SnapshotError::TimeZone)?;
        let tenants = tenants::list(pool, &TenantFilter::default()).await?;
        let mut memberships: BTreeMap<String, Vec<Membership>> = BTreeMap::new();
        for m in groups::memberships(pool, None).await? {
            memberships
                .entry(m.tenant)
                .or_default()
                .push(Membership { id: m.group_id.to_string(), name: m.group_name });
        }
        let grants = grants::list(pool).await?.iter().filter_map(grant).collect();
        let deployments = models::definitions(pool)
            .await?
            .into_iter()
            .map(|d| Deployment {
                id: d.id.to_string(),
                public_name: d.public_name,
                upstream_model: d.upstream_model,
                weight: u32::try_from(d.weight).unwrap_or(1),
            })
            .collect();
        let fallbacks = models::fallbacks(pool).await?.into_iter().collect();
        let default_access = Access::parse(&settings.default_model_access).unwrap_or(Access::Allow);
        let limits = budgets::list(pool).await?.iter().filter_map(limit).collect();
        let defaults = models::defaults(pool).await?;
        let policies = policies::list(pool).await?.iter().map(policy).collect();
        let member_status =
            opencrane_silo_db::memberships::list(pool).await?.into_iter().map(|m| (m.subject, m.status)).collect();
        Ok(Self {
            settings,
            time_zone,
            tenants,
            memberships,
            catalog: Catalog { deployments, fallbacks, grants, default_access },
            limits,
            defaults,
            policies,
            member_status,
        })
    }

    /// Why `tenant`'s key is blocked whatever their limits: the user is suspended here, or their
    /// membership in the organisation is suspended or ended on the fleet. A user who was never a
    /// member (an assistant an admin created) is held only by their own suspension.
    pub fn hold(&self, tenant: &TenantRow) -> Option<&'static str> {
        if tenant.suspended {
            return Some("the user is suspended");
        }
        match self.member_status.get(&tenant.subject).map(String::as_str) {
            Some("suspended") => Some("their membership in the organisation is suspended"),
            Some("removed") => Some("they are no longer a member of the organisation"),
            _ => None,
        }
    }

    /// The evaluators' view of a user.
    pub fn subject(&self, tenant: &TenantRow) -> Subject {
        Subject {
            tenant: tenant.name.clone(),
            subject: tenant.subject.clone(),
            groups: self.memberships.get(&tenant.name).cloned().unwrap_or_default(),
        }
    }

    /// The user named `name`.
    pub fn tenant(&self, name: &str) -> Option<&TenantRow> {
        self.tenants.iter().find(|t| t.name == name)
    }

    /// The defaults that apply to a user: theirs, their groups' (by group name), the silo's.
    pub fn defaults_for(&self, subject: &Subject) -> Defaults {
        let mut defaults = Defaults::default();
        for d in &self.defaults {
            match d.scope.as_str() {
                "silo" => defaults.silo = Some(d.model.clone()),
                "user" if d.tenant.as_deref() == Some(subject.tenant.as_str()) => defaults.user = Some(d.model.clone()),
                "group" => {
                    let id = d.group_id.map(|g| g.to_string()).unwrap_or_default();
                    if let Some(m) = subject.groups.iter().find(|g| g.id == id) {
                        defaults.groups.push((m.clone(), d.model.clone()));
                    }
                }
                _ => {}
            }
        }
        defaults.groups.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        defaults
    }

    /// The members of a group.
    pub fn group_members(&self, group_id: &str) -> Vec<&str> {
        self.memberships
            .iter()
            .filter(|(_, groups)| groups.iter().any(|g| g.id == group_id))
            .map(|(tenant, _)| tenant.as_str())
            .collect()
    }

    /// Spend per user in the current period of every limit, read once per distinct period.
    pub async fn ledger(&self, pool: &PgPool, now: DateTime<Utc>) -> Result<Ledger, SnapshotError> {
        let mut spend = HashMap::new();
        for period in Period::ALL {
            if !self.limits.iter().any(|l| l.period == period) {
                continue;
            }
            let w = window(period, &self.time_zone, now)?;
            let rows = budgets::spend_by_tenant(pool, w.start, w.end).await?;
            spend.insert((w.start, w.end), rows.into_iter().collect::<SpendByTenant>());
        }
        Ok(Ledger { spend, now })
    }

    /// Every limit that covers `subject` in its current period, the one that binds first first.
    pub fn limits_for(&self, subject: &Subject, ledger: &Ledger) -> Result<Vec<LimitStatus>, SnapshotError> {
        Ok(budget::effective(subject, &self.limits, &self.time_zone, ledger.now, |l, w| self.spent(l, w, ledger))?)
    }

    /// What everyone a limit covers spent in `w`.
    pub fn spent(&self, limit: &Limit, w: &Window, ledger: &Ledger) -> Micros {
        let Some(by_tenant) = ledger.spend.get(&(w.start, w.end)) else { return 0 };
        match &limit.level {
            Level::Silo => by_tenant.values().sum(),
            Level::Group { id, .. } => {
                self.group_members(id).iter().map(|t| by_tenant.get(&Some((*t).to_owned())).copied().unwrap_or(0)).sum()
            }
            Level::User { tenant } => by_tenant.get(&Some(tenant.clone())).copied().unwrap_or(0),
        }
    }

    /// Every limit in its current period (for the budgets page and notices).
    pub fn all_limit_statuses(&self, ledger: &Ledger) -> Result<Vec<LimitStatus>, SnapshotError> {
        self.limits
            .iter()
            .map(|l| {
                let w = window(l.period, &self.time_zone, ledger.now)?;
                Ok(budget::status(l, w, self.spent(l, &w, ledger)))
            })
            .collect()
    }
}

/// Spend per user (`None`: unattributed) in one period.
pub type SpendByTenant = HashMap<Option<String>, Micros>;

/// Spend per user per period, read at `now`.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    /// Period (start, end) → user (or unattributed) → spend.
    pub spend: HashMap<(DateTime<Utc>, DateTime<Utc>), SpendByTenant>,
    /// When it was read.
    pub now: DateTime<Utc>,
}
