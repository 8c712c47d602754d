//! What statements are computed from, loaded once: the plans, a customer's plan history, its
//! usage days and the final statements of the months in view, priced in memory by
//! `opencrane_entitlements::statement`. Every change that prices a month (a usage report that
//! changed a day, a plan assignment) re-prices it in the same transaction into
//! `billing_month_totals` ([`reprice`]), which the operators' overview reads: one row per
//! customer and month, the same numbers as the statement.

use std::collections::HashMap;

use chrono::{Duration, NaiveDate};
use opencrane_db::Result;
use opencrane_entitlements::{
    Micros,
    statement::{self, Day, Plan, PlanPeriod, SoFar, Statement},
};
use opencrane_fleet_db::{
    month_totals::{self, MonthTotal},
    plans::{self as plan_db, AssignmentRow, PlanRow},
    statements::{self, FinalTotal},
    usage,
};
use sqlx::{PgConnection, PgPool};

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
    /// Final statements by customer, oldest first.
    pub finals: HashMap<String, Vec<FinalTotal>>,
}

/// `rows` grouped by customer, in their order.
pub fn by_customer<T>(rows: Vec<T>, name: impl Fn(&T) -> &String) -> HashMap<String, Vec<T>> {
    let mut out: HashMap<String, Vec<T>> = HashMap::new();
    for row in rows {
        match out.get_mut(name(&row)) {
            Some(list) => list.push(row),
            None => {
                let key = name(&row).clone();
                out.insert(key, vec![row]);
            }
        }
    }
    out
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
    /// correction may land on `from`), read through `conn` (a transaction's, when pricing what
    /// it changes).
    pub async fn one(conn: &mut PgConnection, name: &str, from: NaiveDate, to: NaiveDate) -> Result<Self> {
        let before = statement::month_bounds(from - Duration::days(1)).0;
        let last = statement::month_bounds(to).1;
        let days = usage::days(&mut *conn, name, before, last).await?;
        let finals = statements::totals(&mut *conn, Some(name), before, to).await?;
        Ok(Self {
            plans: plan_db::list(&mut *conn).await?,
            assignments: HashMap::from([(name.to_owned(), plan_db::assignments(&mut *conn, name).await?)]),
            days: HashMap::from([(name.to_owned(), days.into_iter().map(|d| day(d.usage, d.day)).collect())]),
            finals: by_customer(finals, |f| &f.cluster_tenant),
        })
    }

    /// Every customer's plan histories and the final statements of the months `from` to `to`
    /// (no usage days: the overview reads the priced months instead), in three statements.
    pub async fn plans_of_all(pool: &PgPool, from: NaiveDate, to: NaiveDate) -> Result<Self> {
        let mut assignments: HashMap<String, Vec<AssignmentRow>> = HashMap::new();
        for (name, row) in plan_db::all_assignments(pool).await? {
            assignments.entry(name).or_default().push(row);
        }
        Ok(Self {
            plans: plan_db::list(pool).await?,
            assignments,
            days: HashMap::new(),
            finals: by_customer(statements::totals(pool, None, from, to).await?, |f| &f.cluster_tenant),
        })
    }

    /// The month's figures as the overview keeps them.
    pub fn month_total(&self, name: &str, first: NaiveDate) -> MonthTotal {
        let draft = self.draft(name, first);
        let so_far = SoFar::of(&draft, self.minimum_of(name, first));
        MonthTotal {
            cluster_tenant: name.to_owned(),
            month: first,
            usage_amount: so_far.usage,
            corrections: so_far.corrections,
            minimum: so_far.minimum,
            last_seats: self.days_in(name, first).last().and_then(|d| i32::try_from(d.seats).ok()),
            currency: draft.currency,
            total: draft.total,
        }
    }

    /// The monthly minimum of the plan in force on the last day of the month starting `first`.
    pub fn minimum_of(&self, name: &str, first: NaiveDate) -> Option<Micros> {
        self.plan_on(name, statement::month_bounds(first).1).and_then(|p| p.monthly_minimum)
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
        self.finals.get(name)?.iter().find(|f| f.month == first)
    }

    /// The draft of the month starting `first`: priced now, with the correction of the month
    /// before when that one is final and its usage changed since (a book without that month's
    /// days corrects nothing).
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

/// Prices `name`'s `months` (first days) again from what `conn` sees and keeps the figures of
/// each one that is not final. Inside the transaction of the change, after its write: the
/// customer's lock makes a concurrent change wait and then price what this one wrote.
pub async fn reprice(conn: &mut PgConnection, name: &str, months: &[NaiveDate]) -> Result<()> {
    let (Some(from), Some(to)) = (months.iter().min(), months.iter().max()) else { return Ok(()) };
    month_totals::lock(&mut *conn, name).await?;
    let book = Book::one(&mut *conn, name, *from, *to).await?;
    for month in months {
        if book.final_of(name, *month).is_none() {
            month_totals::upsert(&mut *conn, &book.month_total(name, *month)).await?;
        }
    }
    Ok(())
}

/// Prices every month since `from` that has usage but no figures (usage held before the figures
/// were kept, or written around the fleet); how many it priced. Run once at the fleet's start.
pub async fn backfill(pool: &PgPool, from: NaiveDate) -> Result<usize> {
    let missing = month_totals::unpriced(pool, from).await?;
    let mut conn = pool.acquire().await?;
    for (name, month) in &missing {
        reprice(&mut conn, name, &[*month]).await?;
    }
    Ok(missing.len())
}
