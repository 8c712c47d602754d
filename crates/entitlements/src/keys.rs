//! The LiteLLM virtual key each user should have: which models, how much budget, blocked or
//! not. The reconciler makes LiteLLM match this; the portal shows it.

use serde::{Deserialize, Serialize};

use crate::{
    Micros,
    budget::{Level, LimitStatus},
    format_amount,
    grants::Subject,
    routing::Catalog,
};

/// What a user's key should look like.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySpec {
    /// Tenant name (the key's metadata; the reconciler derives the key's alias from it).
    pub tenant: String,
    /// Public model names the key may call, sorted. Never empty unless blocked (LiteLLM reads
    /// an empty list as "every model").
    pub models: Vec<String>,
    /// LiteLLM's `max_budget` for the key: its spend before this period plus the user's limit,
    /// so that LiteLLM stops the key exactly when the calendar period's limit is used up.
    pub max_budget: Option<Micros>,
    /// Whether the key must be blocked.
    pub blocked: bool,
    /// Why it is blocked, for people.
    pub block_reasons: Vec<String>,
}

/// The key `subject` should have.
///
/// `hold` blocks the key whatever the limits, with its reason for people (the user is suspended,
/// or their membership in the organisation is suspended or ended).
/// `limits` are the user's effective limits (from [`crate::budget::effective`]);
/// `spend_before_period` is the key's total spend in LiteLLM before the current period of the
/// user's own limit began.
pub fn desired(
    subject: &Subject,
    hold: Option<&str>,
    catalog: &Catalog,
    limits: &[LimitStatus],
    spend_before_period: Micros,
) -> KeySpec {
    let models: Vec<String> =
        catalog.public_names().into_iter().filter(|m| catalog.access(subject, m).allowed()).collect();
    let mut block_reasons = Vec::new();
    if let Some(reason) = hold {
        block_reasons.push(reason.to_owned());
    }
    if models.is_empty() {
        block_reasons.push("no model is allowed".to_owned());
    }
    for l in limits.iter().filter(|l| l.reached) {
        block_reasons.push(format!(
            "the limit of {} {} {} for {} is reached until {}",
            format_amount(l.limit.amount),
            l.limit.currency,
            l.limit.period.per(),
            l.limit.level.describe(),
            l.window.end.format("%Y-%m-%d %H:%M UTC"),
        ));
    }
    let max_budget = limits
        .iter()
        .find(|l| matches!(&l.limit.level, Level::User { tenant } if *tenant == subject.tenant))
        // Never below zero: a budget that is already used up is a block, not a negative budget.
        .map(|l| spend_before_period.saturating_add(l.limit.amount).max(0));
    KeySpec { tenant: subject.tenant.clone(), blocked: !block_reasons.is_empty(), models, max_budget, block_reasons }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::{DateTime, TimeZone, Utc};
    use proptest::prelude::*;

    use super::*;
    use crate::{
        MICROS_PER_UNIT,
        budget::{Limit, status},
        grants::{Access, Grant, Membership, Recipient},
        period::{Period, Window},
        routing::{Defaults, Deployment, RouteError, resolve},
    };

    fn catalog(models: &[&str], grants: Vec<Grant>, default_access: Access) -> Catalog {
        Catalog {
            deployments: models
                .iter()
                .map(|m| Deployment {
                    id: (*m).into(),
                    public_name: (*m).into(),
                    upstream_model: (*m).into(),
                    weight: 1,
                })
                .collect(),
            fallbacks: BTreeMap::new(),
            grants,
            default_access,
        }
    }

    fn ana() -> Subject {
        Subject {
            tenant: "ana".into(),
            subject: "s-ana".into(),
            groups: vec![Membership { id: "g1".into(), name: "eng".into() }],
        }
    }

    fn window() -> Window {
        let t = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).single().unwrap_or_default();
        Window { start: t, end: t + chrono::Duration::days(30) }
    }

    fn user_limit(amount: i64) -> Limit {
        Limit {
            id: "u".into(),
            level: Level::User { tenant: "ana".into() },
            currency: "USD".into(),
            amount: amount * MICROS_PER_UNIT,
            period: Period::Month,
            thresholds: vec![100],
        }
    }

    #[test]
    fn the_key_carries_the_allowed_models_and_a_calendar_aligned_budget() {
        let c = catalog(&["fast", "smart"], vec![], Access::Allow);
        let limits = [status(&user_limit(20), window(), 5 * MICROS_PER_UNIT)];
        let key = desired(&ana(), None, &c, &limits, 100 * MICROS_PER_UNIT);
        assert_eq!(key.tenant, "ana");
        assert_eq!(key.models, ["fast", "smart"]);
        assert_eq!(key.max_budget, Some(120 * MICROS_PER_UNIT));
        assert!(!key.blocked);
        // A key issued again mid-period (its predecessor lost) gets only what is left.
        let again = desired(&ana(), None, &c, &limits, -5 * MICROS_PER_UNIT);
        assert_eq!(again.max_budget, Some(15 * MICROS_PER_UNIT));
        let overspent = desired(&ana(), None, &c, &limits, -30 * MICROS_PER_UNIT);
        assert_eq!(overspent.max_budget, Some(0));
    }

    #[test]
    fn reached_ceilings_suspension_and_no_models_block_the_key() {
        let c = catalog(&["fast"], vec![], Access::Allow);
        let silo = Limit { id: "silo".into(), level: Level::Silo, ..user_limit(10) };
        let limits = [status(&silo, window(), 10 * MICROS_PER_UNIT)];
        let key = desired(&ana(), None, &c, &limits, 0);
        assert!(key.blocked);
        assert!(key.block_reasons[0].contains("the whole silo"), "{:?}", key.block_reasons);
        assert_eq!(key.max_budget, None, "no user limit, no key budget");
        assert!(desired(&ana(), Some("the user is suspended"), &c, &[], 0).blocked);
        let none = catalog(&["fast"], vec![], Access::Deny);
        let key = desired(&ana(), None, &none, &[], 0);
        assert!(key.blocked && key.models.is_empty());
    }

    fn arb_grant() -> impl Strategy<Value = Grant> {
        (
            prop::sample::select(vec!["m0", "m1", "m2", "*"]),
            prop::sample::select(vec![
                Recipient::Tenant("ana".into()),
                Recipient::Tenant("bob".into()),
                Recipient::User("s-ana".into()),
                Recipient::Group("g1".into()),
                Recipient::Group("g2".into()),
            ]),
            any::<bool>(),
            -2i32..3,
            0i64..5,
            0u32..1000,
        )
            .prop_map(|(payload, recipient, allow, priority, minute, id)| Grant {
                id: format!("g{id}"),
                payload_type: "model".into(),
                payload_id: payload.into(),
                recipient,
                access: if allow { Access::Allow } else { Access::Deny },
                priority,
                created_at: DateTime::from_timestamp(1_800_000_000 + minute * 60, 0).unwrap_or_default(),
            })
    }

    proptest! {
        /// What the effective-access view shows per model (the catalog's decision) is exactly the
        /// key's model list, and a request resolves if and only if the key may call the model.
        #[test]
        fn the_effective_access_view_and_enforcement_agree(
            grants in prop::collection::vec(arb_grant(), 0..12),
            default_allow in any::<bool>(),
            in_group in any::<bool>(),
        ) {
            let default_access = if default_allow { Access::Allow } else { Access::Deny };
            let c = catalog(&["m0", "m1", "m2"], grants, default_access);
            let subject = if in_group { ana() } else { Subject { groups: vec![], ..ana() } };
            let key = desired(&subject, None, &c, &[], 0);
            for model in ["m0", "m1", "m2"] {
                let shown = c.access(&subject, model).allowed();
                prop_assert_eq!(shown, key.models.iter().any(|m| m == model));
                let routed = resolve(&subject, Some(model), &Defaults::default(), &c);
                prop_assert_eq!(routed.is_ok(), shown);
                if let Err(RouteError::NotAllowed { access, .. }) = routed {
                    prop_assert_eq!(*access, c.access(&subject, model));
                }
            }
            prop_assert_eq!(key.blocked, key.models.is_empty());
        }
    }
}
