//! What statements are computed from, loaded once: the plans, the customers' plan histories,
//! their usage days and the final statements of the months in view. Loaded for one customer
//! (its billing page, its statements) or for every customer at once (the operators' overview:
//! a fixed number of statements whatever the number of customers), then priced in memory by
//! `opencrane_entitlements::statement`, so both give the same numbers.

use std::collections::HashMap;

use chrono::{Duration, NaiveDate};
use opencrane_db::Result;
use opencrane_entitlements::{
    Micros,
    statement::{self, Day, Plan, PlanPeriod, Statement},
};
use opencrane_fleet_db::{
    plans::{self as plan_db, AssignmentRow, PlanRow},
    statements::{self, FinalTotal},
    usage,
};
use sqlx::PgPool;

/// A plan's prices for the arithmetic.
pub fn priced(row: &PlanRow) -> Plan {
    Plan {
        name: row.name.clone(),
        currency: row.currency.clone(),
        seat_price: row.seat_price,
        included_seats: i64::from(row.included_seats),
        markup_basis_points: row.markup_basis_points,
        monthly_minimum: row.monthly_minimum,
    }
}

/// The loaded ledger.
#[derive(Debug, Default)]
pub struct Book {
    /// Every plan.
    pub plans: Vec<PlanRow>,
    /// Plan histories by customer, oldest first.
    pub assignments: HashMap<String, Vec<AssignmentRow>>,
    /// Usage days by customer, oldest first.
    pub days: HashMap<String, Vec<Day>>,
    /// Final statements by customer and month (first day).
    pub finals: HashMap<(String, NaiveDate), FinalTotal>,
}

fn day(usage: usage::DayUsage, on: NaiveDate) -> Day {
    Day {
        day: on,
        seats: i64::from(usage.active_seats),
        spend: usage.spend.into_iter().map(|l| (l.model, l.currency, l.amount)).collect(),
    }
}

impl Book {
    /// `name`'s book for the months `from` to `to` (first days) and the month before (whose
    /// correction may land on `from`).
    pub async fn one(pool: &PgPool, name: &str, from: NaiveDate, to: NaiveDate) -> Result<Self> {
        let before = statement::month_bounds(from - Duration::days(1)).0;
        let last = statement::month_bounds(to).1;
        let mut conn = pool.acquire().await?;
        let days = usage::days(&mut conn, name, before, last).await?;
        drop(conn);
        let finals = statements::totals(pool, Some(name), before, to).await?;
        Ok(Self {
            plans: plan_db::list(pool).await?,
            assignments: HashMap::from([(name.to_owned(), plan_db::assignments(pool, name).await?)]),
            days: HashMap::from([(name.to_owned(), days.into_iter().map(|d| day(d.usage, d.day)).collect())]),
            finals: finals.into_iter().map(|f| ((f.cluster_tenant.clone(), f.month), f)).collect(),
        })
    }

    /// Every customer's book for the months `from` to `to` and the month before, in four
    /// statements. Days of final months are read only where they changed after finalising.
    pub async fn all(pool: &PgPool, from: NaiveDate, to: NaiveDate) -> Result<Self> {
        let before = statement::month_bounds(from - Duration::days(1)).0;
        let last = statement::month_bounds(to).1;
        let mut conn = pool.acquire().await?;
        let rows = usage::all_days(&mut conn, before, last, true).await?;
        drop(conn);
        let mut days: HashMap<String, Vec<Day>> = HashMap::new();
        for d in rows {
            days.entry(d.cluster_tenant).or_default().push(day(d.usage, d.day));
        }
        let mut assignments: HashMap<String, Vec<AssignmentRow>> = HashMap::new();
        for (name, row) in plan_db::all_assignments(pool).await? {
            assignments.entry(name).or_default().push(row);
        }
        Ok(Self {
            plans: plan_db::list(pool).await?,
            assignments,
            days,
            finals: statements::totals(pool, None, before, to)
                .await?
                .into_iter()
                .map(|f| ((f.cluster_tenant.clone(), f.month), f))
                .collect(),
        })
    }

    /// The customers the book knows of (a plan, usage or a final statement).
    pub fn customers(&self) -> impl Iterator<Item = &String> {
        self.assignments.keys().chain(self.days.keys()).chain(self.finals.keys().map(|(n, _)| n))
    }

    /// `name`'s plan periods.
    pub fn periods(&self, name: &str) -> Vec<PlanPeriod> {
        let Some(rows) = self.assignments.get(name) else { return Vec::new() };
        rows.iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let plan = self.plans.iter().find(|p| p.id == a.plan_id)?;
                let to = rows.get(i + 1).map_or(NaiveDate::MAX, |next| next.effective_from - Duration::days(1));
                Some(PlanPeriod { plan: priced(plan), from: a.effective_from, to })
            })
            .collect()
    }

    /// The plan in force on `on`.
    pub fn plan_on(&self, name: &str, on: NaiveDate) -> Option<&PlanRow> {
        let a = self.assignments.get(name)?.iter().rev().find(|a| a.effective_from <= on)?;
        self.plans.iter().find(|p| p.id == a.plan_id)
    }

    /// `name`'s days in the month starting `first`.
    pub fn days_in(&self, name: &str, first: NaiveDate) -> &[Day] {
        let (first, last) = statement::month_bounds(first);
        let days = self.days.get(name).map_or(&[][..], Vec::as_slice);
        let start = days.partition_point(|d| d.day < first);
        let end = days.partition_point(|d| d.day <= last);
        &days[start..end]
    }

    /// The month starting `first` priced from the usage held now.
    pub fn priced(&self, name: &str, first: NaiveDate) -> Statement {
        statement::compute(first, &self.periods(name), self.days_in(name, first))
    }

    /// The final statement of `name` for the month starting `first`.
    pub fn final_of(&self, name: &str, first: NaiveDate) -> Option<&FinalTotal> {
        self.finals.get(&(name.to_owned(), first))
    }

    /// The draft of the month starting `first`: priced now, with the correction of the month
    /// before when that one is final and its usage changed since (a final month whose days are
    /// not in the book did not change: `Book::all` leaves those out).
    pub fn draft(&self, name: &str, first: NaiveDate) -> Statement {
        let priced = self.priced(name, first);
        let previous = statement::month_bounds(first - Duration::days(1)).0;
        match self.final_of(name, previous) {
            Some(frozen) if !self.days_in(name, previous).is_empty() => {
                let delta: Micros = self.priced(name, previous).total - frozen.total;
                statement::with_correction(priced, previous, delta)
            }
            _ => priced,
        }
    }
}
