//! Which spending limits apply to a user, how much of each is used, which binds first and when
//! each resets.
//!
//! Limits exist at three levels: the whole silo, a group, a user. Every applicable limit is
//! enforced (the original stored silo and group ceilings and never enforced them): the user may
//! spend only while no applicable limit is reached.

use chrono::{DateTime, Utc};
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::{
    Micros,
    grants::Subject,
    period::{Period, PeriodError, Window, window},
};

/// The alert thresholds a limit gets unless the admin chooses others (percent of the amount).
pub const DEFAULT_THRESHOLDS: [u8; 3] = [50, 80, 100];

/// Where a limit applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Level {
    /// Everyone in the silo together.
    Silo,
    /// The members of one group together.
    Group {
        /// Group id.
        id: String,
        /// Group name.
        name: String,
    },
    /// One user.
    User {
        /// Tenant name.
        tenant: String,
    },
}

impl Level {
    /// `silo`, `group`, `user`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Silo => "silo",
            Self::Group { .. } => "group",
            Self::User { .. } => "user",
        }
    }

    /// "the whole silo", "group “eng”", "user ana".
    pub fn describe(&self) -> String {
        match self {
            Self::Silo => "the whole silo".into(),
            Self::Group { name, .. } => format!("group “{name}”"),
            Self::User { tenant } => format!("user {tenant}"),
        }
    }

    /// Whether the limit covers `subject`.
    pub fn covers(&self, subject: &Subject) -> bool {
        match self {
            Self::Silo => true,
            Self::Group { id, .. } => subject.groups.iter().any(|g| g.id == *id),
            Self::User { tenant } => *tenant == subject.tenant,
        }
    }
}

/// One limit, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    /// Limit id.
    pub id: String,
    /// Where it applies.
    pub level: Level,
    /// ISO 4217 code.
    pub currency: String,
    /// The amount per period (0 blocks all spending).
    pub amount: Micros,
    /// How often it resets.
    pub period: Period,
    /// Alert thresholds, percent of the amount, ascending.
    pub thresholds: Vec<u8>,
}

/// A limit in its current period.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitStatus {
    /// The limit.
    pub limit: Limit,
    /// The current period; `window.end` is the reset.
    pub window: Window,
    /// Spent in the period by everyone the limit covers.
    pub spent: Micros,
    /// Left before the limit is reached (never negative).
    pub remaining: Micros,
    /// Spent as a percentage of the amount (100 when the amount is 0).
    pub used_percent: u32,
    /// Spending is blocked by this limit until `window.end`.
    pub reached: bool,
    /// The thresholds crossed in this period.
    pub crossed: Vec<u8>,
}

/// The state of one limit for a period in which `spent` was spent.
pub fn status(limit: &Limit, window: Window, spent: Micros) -> LimitStatus {
    let used_percent = if limit.amount <= 0 {
        100
    } else {
        u32::try_from((i128::from(spent.max(0)) * 100 / i128::from(limit.amount)).min(i128::from(u32::MAX)))
            .unwrap_or(u32::MAX)
    };
    let crossed = limit.thresholds.iter().copied().filter(|t| used_percent >= u32::from(*t)).collect();
    LimitStatus {
        limit: limit.clone(),
        window,
        spent,
        remaining: (limit.amount - spent).max(0),
        used_percent,
        reached: spent >= limit.amount,
        crossed,
    }
}

/// Every limit that covers `subject`, the one that binds first at the front: reached limits
/// first, then the least remaining, then the earliest reset.
///
/// `spent(limit, window)` returns what everyone the limit covers spent in the window.
pub fn effective(
    subject: &Subject,
    limits: &[Limit],
    tz: &TimeZone,
    now: DateTime<Utc>,
    mut spent: impl FnMut(&Limit, &Window) -> Micros,
) -> Result<Vec<LimitStatus>, PeriodError> {
    let mut statuses = Vec::new();
    for limit in limits.iter().filter(|l| l.level.covers(subject)) {
        let w = window(limit.period, tz, now)?;
        let s = spent(limit, &w);
        statuses.push(status(limit, w, s));
    }
    statuses.sort_by(|a, b| {
        b.reached.cmp(&a.reached).then(a.remaining.cmp(&b.remaining)).then(a.window.end.cmp(&b.window.end))
    });
    Ok(statuses)
}

/// Checks alert thresholds: 1 to 100 percent, no repeats.
pub fn validate_thresholds(thresholds: &[u8]) -> Result<(), String> {
    if thresholds.iter().any(|t| !(1..=100).contains(t)) {
        return Err("Thresholds are percentages from 1 to 100.".into());
    }
    let mut sorted = thresholds.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != thresholds.len() {
        return Err("Each threshold once.".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;

    use super::*;
    use crate::{MICROS_PER_UNIT, grants::Membership, period::time_zone};

    fn limit(id: &str, level: Level, amount: i64, period: Period) -> Limit {
        Limit {
            id: id.into(),
            level,
            currency: "USD".into(),
            amount: amount * MICROS_PER_UNIT,
            period,
            thresholds: DEFAULT_THRESHOLDS.to_vec(),
        }
    }

    fn ana() -> Subject {
        Subject {
            tenant: "ana".into(),
            subject: "s".into(),
            groups: vec![Membership { id: "g1".into(), name: "eng".into() }],
        }
    }

    #[test]
    fn every_covering_limit_applies_and_the_tightest_binds_first() {
        let limits = [
            limit("silo", Level::Silo, 1000, Period::Month),
            limit("eng", Level::Group { id: "g1".into(), name: "eng".into() }, 100, Period::Week),
            limit("sales", Level::Group { id: "g2".into(), name: "sales".into() }, 1, Period::Day),
            limit("ana", Level::User { tenant: "ana".into() }, 50, Period::Month),
            limit("bob", Level::User { tenant: "bob".into() }, 1, Period::Month),
        ];
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).single().unwrap_or_default();
        let spent = |l: &Limit, _: &Window| match l.id.as_str() {
            "silo" => 900 * MICROS_PER_UNIT,
            "eng" => 95 * MICROS_PER_UNIT,
            _ => 10 * MICROS_PER_UNIT,
        };
        let s = effective(&ana(), &limits, &time_zone("UTC").unwrap(), now, spent).unwrap();
        let order: Vec<_> = s.iter().map(|s| s.limit.id.as_str()).collect();
        assert_eq!(order, ["eng", "ana", "silo"]);
        assert_eq!(s[0].remaining, 5 * MICROS_PER_UNIT);
        assert_eq!(s[0].crossed, [50, 80]);
        assert_eq!(s[0].window.end, Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).single().unwrap_or_default());
        assert!(!s.iter().any(|s| s.reached));
    }

    #[test]
    fn a_reached_limit_binds_first_and_zero_blocks_everything() {
        let reached = status(&limit("l", Level::Silo, 10, Period::Day), dummy_window(), 12 * MICROS_PER_UNIT);
        assert!(reached.reached);
        assert_eq!((reached.remaining, reached.used_percent, reached.crossed.clone()), (0, 120, vec![50, 80, 100]));
        let zero = status(&limit("z", Level::Silo, 0, Period::Day), dummy_window(), 0);
        assert!(zero.reached);
        assert_eq!(zero.used_percent, 100);
    }

    fn dummy_window() -> Window {
        let t = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().unwrap_or_default();
        Window { start: t, end: t + chrono::Duration::days(1) }
    }

    #[test]
    fn thresholds_are_checked() {
        assert!(validate_thresholds(&[50, 80, 100]).is_ok());
        assert!(validate_thresholds(&[0]).is_err());
        assert!(validate_thresholds(&[101]).is_err());
        assert!(validate_thresholds(&[50, 50]).is_err());
    }
}
