//! What a customer owes for a calendar month, from its plan periods and its reported usage: the
//! fleet's billing arithmetic, pure. Every line keeps the days it came from, so a number on a
//! statement links back to its usage rows.
//!
//! Rounding rule: each line is computed exactly in millionths (`i128` in between) and rounded
//! once, half away from zero, to whole cents; the total is the sum of the rounded lines, so the
//! lines always add up to it exactly.
//!
//! - **Seats** (one line per plan period in the month): the seat-days above the plan's included
//!   seats, each day's count taken as reported, priced `seat price × seat-days ÷ days in month` —
//!   a plan change mid-month prorates by seat-days and shows as two lines.
//! - **LLM spend** (one line per plan period and model): the spend in the plan's currency plus the
//!   plan's markup (`spend × (1 + markup ÷ 100)`). Spend in another currency is listed at zero as
//!   not priced (there is no exchange rate here) rather than dropped.
//! - **Minimum top-up**: when the plan in force on the month's last day has a monthly minimum
//!   and the lines come to less, the difference.

use chrono::{Datelike, Duration, NaiveDate};
use serde::{Deserialize, Serialize};

use crate::{MICROS_PER_UNIT, Micros};

/// A plan's prices (amounts in millionths; markup in basis points: 20 % = 2000).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Its name.
    pub name: String,
    /// ISO 4217 code.
    pub currency: String,
    /// Price of one seat for a whole month.
    pub seat_price: Micros,
    /// Seats the price does not apply to.
    pub included_seats: i64,
    /// LLM pass-through markup, in hundredths of a percent.
    pub markup_basis_points: i64,
    /// The least a month costs, if any.
    pub monthly_minimum: Option<Micros>,
}

/// A plan in force from `from` through `to` (inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanPeriod {
    /// The plan.
    pub plan: Plan,
    /// First day.
    pub from: NaiveDate,
    /// Last day (inclusive).
    pub to: NaiveDate,
}

/// One reported day.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Day {
    /// The day.
    pub day: NaiveDate,
    /// Active seats.
    pub seats: i64,
    /// (model, currency, millionths).
    pub spend: Vec<(String, String, Micros)>,
}

/// What a line is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LineKind {
    /// Seats above the included ones.
    Seats,
    /// LLM spend with markup.
    Spend,
    /// Spend in a currency the plan does not price.
    Unpriced,
    /// Up to the monthly minimum.
    Minimum,
    /// A change to a final month's usage, credited (or charged) on the next statement.
    Correction,
}

/// One line of a statement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// What it is for.
    pub kind: LineKind,
    /// For people.
    pub description: String,
    /// Whole cents, in millionths.
    pub amount: Micros,
    /// The usage days it came from.
    pub days: Vec<NaiveDate>,
}

/// A month's statement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// The month's first day.
    pub month: NaiveDate,
    /// The currency of the plan in force at the month's end (`None`: no plan).
    pub currency: Option<String>,
    /// The lines.
    pub lines: Vec<Line>,
    /// The sum of the lines.
    pub total: Micros,
}

/// The first and last day of `month`'s month.
pub fn month_bounds(month: NaiveDate) -> (NaiveDate, NaiveDate) {
    let first = month.with_day(1).unwrap_or(month);
    let next = if first.month() == 12 {
        NaiveDate::from_ymd_opt(first.year() + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(first.year(), first.month() + 1, 1)
    };
    (first, next.map_or(first, |n| n - Duration::days(1)))
}

/// `numerator ÷ denominator` millionths, rounded half away from zero to whole cents.
fn to_cents(numerator: i128, denominator: i128) -> Micros {
    let cent = i128::from(MICROS_PER_UNIT / 100);
    let unit = denominator * cent;
    let half = unit / 2;
    let cents = if numerator >= 0 { (numerator + half) / unit } else { (numerator - half) / unit };
    Micros::try_from(cents * cent).unwrap_or(Micros::MAX)
}

/// A money amount for people (`12.345678` → `12.35`, with the currency).
fn money(micros: Micros, currency: &str) -> String {
    format!("{} {currency}", crate::format_amount(micros))
}

/// The statement of `month` (any day in it) from `periods` (in any order; overlaps are the
/// caller's to avoid) and `usage` (days outside the month are ignored).
pub fn compute(month: NaiveDate, periods: &[PlanPeriod], usage: &[Day]) -> Statement {
    let (first, last) = month_bounds(month);
    let days_in_month = i128::from((last - first).num_days() + 1);
    let mut periods: Vec<&PlanPeriod> = periods.iter().filter(|p| p.from <= last && p.to >= first).collect();
    periods.sort_by_key(|p| p.from);
    let mut lines = Vec::new();
    for period in &periods {
        let (from, to) = (period.from.max(first), period.to.min(last));
        let plan = &period.plan;
        let days: Vec<&Day> = usage.iter().filter(|d| d.day >= from && d.day <= to).collect();
        let seat_days: i64 = days.iter().map(|d| (d.seats - plan.included_seats).max(0)).sum();
        let span = format!("{} – {}", from.format("%b %-d"), to.format("%b %-d"));
        lines.push(Line {
            kind: LineKind::Seats,
            description: format!(
                "Seats, {span} ({}): {seat_days} seat-days above {} included × {} a month ÷ {days_in_month} days",
                plan.name,
                plan.included_seats,
                money(plan.seat_price, &plan.currency)
            ),
            amount: to_cents(i128::from(plan.seat_price) * i128::from(seat_days), days_in_month),
            days: days.iter().map(|d| d.day).collect(),
        });
        let mut models: std::collections::BTreeMap<(&str, &str), (Micros, Vec<NaiveDate>)> = Default::default();
        for d in &days {
            for (model, currency, amount) in &d.spend {
                let entry = models.entry((model.as_str(), currency.as_str())).or_default();
                entry.0 += amount;
                if entry.1.last() != Some(&d.day) {
                    entry.1.push(d.day);
                }
            }
        }
        for ((model, currency), (spent, days)) in models {
            if currency != plan.currency {
                lines.push(Line {
                    kind: LineKind::Unpriced,
                    description: format!(
                        "{model}, {span}: {} spent in {currency}, which {} does not price (in {})",
                        crate::format_micros(spent),
                        plan.name,
                        plan.currency
                    ),
                    amount: 0,
                    days,
                });
                continue;
            }
            let with_markup = i128::from(spent) * i128::from(10_000 + plan.markup_basis_points);
            lines.push(Line {
                kind: LineKind::Spend,
                description: format!(
                    "{model}, {span}: {} spent + {}% markup",
                    crate::format_micros(spent),
                    format_percent(plan.markup_basis_points)
                ),
                amount: to_cents(with_markup, 10_000),
                days,
            });
        }
    }
    let closing = periods.iter().rev().find(|p| p.from <= last).map(|p| &p.plan);
    let subtotal: Micros = lines.iter().map(|l| l.amount).sum();
    if let Some(plan) = closing
        && let Some(minimum) = plan.monthly_minimum
        && subtotal < minimum
    {
        lines.push(Line {
            kind: LineKind::Minimum,
            description: format!("Minimum top-up to {} ({})", money(minimum, &plan.currency), plan.name),
            amount: to_cents(i128::from(minimum - subtotal), 1),
            days: Vec::new(),
        });
    }
    let total = lines.iter().map(|l| l.amount).sum();
    Statement { month: first, currency: closing.map(|p| p.currency.clone()), lines, total }
}

/// `statement` with a correction of an earlier, final month: `delta` is what that month comes to
/// now minus what was frozen (negative: a credit). Nothing changes when it is zero.
pub fn with_correction(mut statement: Statement, of_month: NaiveDate, delta: Micros) -> Statement {
    if delta == 0 {
        return statement;
    }
    let word = if delta < 0 { "Credit" } else { "Charge" };
    statement.lines.push(Line {
        kind: LineKind::Correction,
        description: format!(
            "{word}: usage of {} changed after its statement was final ({})",
            of_month.format("%B %Y"),
            crate::format_amount(delta)
        ),
        amount: to_cents(i128::from(delta), 1),
        days: Vec::new(),
    });
    statement.total = statement.lines.iter().map(|l| l.amount).sum();
    statement
}

/// An open month's figures so far, as kept between reports: enough to forecast its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoFar {
    /// Any day of the month.
    pub month: NaiveDate,
    /// The seat and spend lines.
    pub usage: Micros,
    /// The corrections of an earlier month.
    pub corrections: Micros,
    /// The statement's total.
    pub total: Micros,
    /// The minimum of the plan in force at the month's end.
    pub minimum: Option<Micros>,
}

impl SoFar {
    /// `statement`'s figures so far (its seat and spend lines, its corrections, its total), with
    /// the `minimum` of the plan in force at the month's end.
    pub fn of(statement: &Statement, minimum: Option<Micros>) -> Self {
        let sum =
            |kinds: &[LineKind]| statement.lines.iter().filter(|l| kinds.contains(&l.kind)).map(|l| l.amount).sum();
        Self {
            month: statement.month,
            usage: sum(&[LineKind::Seats, LineKind::Spend]),
            corrections: sum(&[LineKind::Correction]),
            total: statement.total,
            minimum,
        }
    }

    /// A forecast of the month's total after `elapsed` days, labelled as one wherever it is
    /// shown: the usage lines (seats and spend) so far extended linearly to the whole month and
    /// rounded to cents, at least the monthly minimum, plus the corrections. A closed or finished
    /// month (`elapsed` at or past its length, or none) forecasts its total.
    pub fn forecast(&self, elapsed: i64) -> Micros {
        let (first, last) = month_bounds(self.month);
        let length = (last - first).num_days() + 1;
        if elapsed >= length || elapsed <= 0 {
            return self.total;
        }
        let projected = to_cents(i128::from(self.usage) * i128::from(length), i128::from(elapsed));
        projected.max(self.minimum.unwrap_or(0)) + self.corrections
    }
}

/// `2000` → `20`, `1250` → `12.5`.
fn format_percent(basis_points: i64) -> String {
    let whole = basis_points / 100;
    let frac = (basis_points % 100).abs();
    match frac {
        0 => whole.to_string(),
        f if f % 10 == 0 => format!("{whole}.{}", f / 10),
        f => format!("{whole}.{f:02}"),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn plan(seat_price: Micros, included: i64, markup: i64, minimum: Option<Micros>) -> Plan {
        Plan {
            name: "Team".into(),
            currency: "EUR".into(),
            seat_price,
            included_seats: included,
            markup_basis_points: markup,
            monthly_minimum: minimum,
        }
    }

    fn date(m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, m, d).unwrap()
    }

    fn month_of(seats: i64, spend: &[(&str, Micros)]) -> Vec<Day> {
        (1..=30)
            .map(|d| Day {
                day: date(11, d),
                seats,
                spend: spend.iter().map(|(m, a)| ((*m).to_owned(), "EUR".to_owned(), *a)).collect(),
            })
            .collect()
    }

    #[test]
    fn a_whole_month_on_one_plan() {
        let period = PlanPeriod { plan: plan(10 * MICROS_PER_UNIT, 2, 2000, None), from: date(1, 1), to: date(12, 31) };
        let s = compute(date(11, 15), &[period], &month_of(5, &[("fast", 100_000)]));
        assert_eq!(s.month, date(11, 1));
        let amounts: Vec<_> = s.lines.iter().map(|l| (l.kind, l.amount)).collect();
        // 3 seats above the included 2 for 30 days = 90 seat-days × 10 ÷ 30 = 30.00; fast 3.00 + 20 %.
        assert_eq!(amounts, [(LineKind::Seats, 30_000_000), (LineKind::Spend, 3_600_000)]);
        assert_eq!(s.total, 33_600_000);
        assert_eq!(s.lines[0].days.len(), 30, "the line names its usage days");
        assert!(s.lines[1].description.contains("20% markup"), "{}", s.lines[1].description);
    }

    #[test]
    fn a_plan_change_mid_month_prorates_by_seat_days_in_two_lines() {
        let cheap = PlanPeriod { plan: plan(10 * MICROS_PER_UNIT, 0, 0, None), from: date(1, 1), to: date(11, 10) };
        let mut dear = plan(20 * MICROS_PER_UNIT, 0, 0, None);
        dear.name = "Business".into();
        let dear = PlanPeriod { plan: dear, from: date(11, 11), to: date(12, 31) };
        let s = compute(date(11, 1), &[dear, cheap], &month_of(3, &[]));
        let seats: Vec<_> = s.lines.iter().filter(|l| l.kind == LineKind::Seats).collect();
        assert_eq!(seats.len(), 2);
        // 30 seat-days × 10 ÷ 30 = 10.00; 60 seat-days × 20 ÷ 30 = 40.00.
        assert_eq!((seats[0].amount, seats[1].amount), (10_000_000, 40_000_000));
        assert!(seats[1].description.contains("Business"));
    }

    #[test]
    fn the_minimum_tops_up_and_foreign_spend_is_listed_unpriced() {
        let period =
            PlanPeriod { plan: plan(0, 0, 0, Some(50 * MICROS_PER_UNIT)), from: date(11, 1), to: date(11, 30) };
        let usage = vec![Day {
            day: date(11, 3),
            seats: 1,
            spend: vec![("fast".into(), "EUR".into(), 4_000_000), ("fast".into(), "USD".into(), 9_000_000)],
        }];
        let s = compute(date(11, 1), &[period], &usage);
        let kinds: Vec<_> = s.lines.iter().map(|l| (l.kind, l.amount)).collect();
        assert_eq!(
            kinds,
            [
                (LineKind::Seats, 0),
                (LineKind::Spend, 4_000_000),
                (LineKind::Unpriced, 0),
                (LineKind::Minimum, 46_000_000)
            ]
        );
        assert_eq!(s.total, 50_000_000);
    }

    #[test]
    fn without_a_plan_nothing_is_billed() {
        let s = compute(date(11, 1), &[], &month_of(4, &[("fast", 1)]));
        assert_eq!((s.lines.len(), s.total, s.currency), (0, 0, None));
    }

    #[test]
    fn a_correction_is_a_line_of_its_own() {
        let period = PlanPeriod { plan: plan(0, 0, 0, None), from: date(11, 1), to: date(12, 31) };
        let december = compute(date(12, 1), &[period], &[]);
        let credited = with_correction(december.clone(), date(11, 1), -2_500_000);
        assert_eq!((credited.lines.last().unwrap().kind, credited.total), (LineKind::Correction, -2_500_000));
        assert!(credited.lines.last().unwrap().description.starts_with("Credit: usage of November 2026"));
        assert_eq!(with_correction(december.clone(), date(11, 1), 0), december, "no change, no line");
    }

    #[test]
    fn rounding_is_half_away_from_zero_to_cents() {
        assert_eq!(to_cents(5_000, 1), 10_000, "half a cent rounds up");
        assert_eq!(to_cents(4_999, 1), 0);
        assert_eq!(to_cents(-5_000, 1), -10_000);
        assert_eq!(format_percent(1250), "12.5");
        assert_eq!(format_percent(1205), "12.05");
    }

    #[test]
    fn a_forecast_extends_the_usage_so_far_to_the_month_and_keeps_the_minimum() {
        let periods = [PlanPeriod { plan: plan(30_000_000, 0, 0, None), from: date(11, 1), to: NaiveDate::MAX }];
        // 10 days of 3 seats in a 30-day month: 30 seat-days = 30.00; linear to 90.00.
        let days: Vec<Day> = month_of(3, &[]).into_iter().take(10).collect();
        let so_far = compute(date(11, 1), &periods, &days);
        assert_eq!(so_far.total, 30_000_000);
        assert_eq!(SoFar::of(&so_far, None).forecast(10), 90_000_000);
        // The minimum is a floor on the forecast, not added to it.
        assert_eq!(SoFar::of(&so_far, Some(100_000_000)).forecast(10), 100_000_000);
        assert_eq!(SoFar::of(&so_far, Some(50_000_000)).forecast(10), 90_000_000);
        // A correction is not extended: it is added once.
        let corrected = with_correction(so_far.clone(), date(10, 1), -5_000_000);
        assert_eq!(SoFar::of(&corrected, None).forecast(10), 85_000_000);
        // A finished month forecasts what it is.
        assert_eq!(SoFar::of(&so_far, None).forecast(30), so_far.total);
        assert_eq!(SoFar::of(&so_far, None).forecast(0), so_far.total);
    }

    proptest! {
        /// Lines add up to the total exactly, each is whole cents, and seats never cost less for
        /// more seats.
        #[test]
        fn lines_sum_to_the_total_in_whole_cents(
            price in 0i64..1_000_000_000,
            included in 0i64..20,
            markup in 0i64..10_000,
            minimum in proptest::option::of(0i64..1_000_000_000),
            seats in proptest::collection::vec(0i64..50, 30),
            spend in proptest::collection::vec(0i64..50_000_000, 30),
            change in 1u32..30,
        ) {
            let a = PlanPeriod { plan: plan(price, included, markup, None), from: date(10, 1), to: date(11, change) };
            let b = PlanPeriod { plan: plan(price * 2, included, markup, minimum), from: date(11, change + 1), to: date(12, 31) };
            let usage: Vec<Day> = (1..=30u32).map(|d| Day {
                day: date(11, d),
                seats: seats[d as usize - 1],
                spend: vec![("fast".into(), "EUR".into(), spend[d as usize - 1])],
            }).collect();
            let s = compute(date(11, 1), &[a, b], &usage);
            prop_assert_eq!(s.lines.iter().map(|l| l.amount).sum::<i64>(), s.total);
            prop_assert!(s.lines.iter().all(|l| l.amount % 10_000 == 0));
            if let Some(minimum) = minimum {
                prop_assert!(s.total >= minimum - 10_000);
            }
            let single = || PlanPeriod { plan: plan(price, included, markup, None), from: date(10, 1), to: date(11, change) };
            let more: Vec<Day> = usage.iter().map(|d| Day { seats: d.seats + 1, ..d.clone() }).collect();
            let (fewer, more) = (compute(date(11, 1), &[single()], &usage), compute(date(11, 1), &[single()], &more));
            prop_assert!(more.lines[0].amount >= fewer.lines[0].amount);
        }

        /// A whole month at constant seats costs exactly seats above the included × the price.
        #[test]
        fn a_constant_month_costs_the_whole_price(cents in 0i64..100_000, seats in 0i64..40, included in 0i64..10) {
            let price = cents * 10_000;
            let period = PlanPeriod { plan: plan(price, included, 0, None), from: date(11, 1), to: date(11, 30) };
            let s = compute(date(11, 1), &[period], &month_of(seats, &[]));
            prop_assert_eq!(s.lines[0].amount, price * (seats - included).max(0));
        }
    }
}
