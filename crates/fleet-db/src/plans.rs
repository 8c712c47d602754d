//! Billing plans and which customer is on which plan from which day.

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::PgExecutor;
use uuid::Uuid;

use opencrane_db::Result;

/// A plan (amounts in millionths; markup in basis points, 20 % = 2000).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanRow {
    /// Id.
    pub id: Uuid,
    /// Unique name.
    pub name: String,
    /// ISO 4217 code.
    pub currency: String,
    /// Price of a seat for a whole month.
    pub seat_price: i64,
    /// Seats not charged.
    pub included_seats: i32,
    /// Markup on LLM spend.
    pub markup_basis_points: i64,
    /// The least a month costs.
    pub monthly_minimum: Option<i64>,
    /// Created.
    pub created_at: DateTime<Utc>,
}

/// A new plan's fields.
#[derive(Clone, Debug)]
pub struct NewPlan<'a> {
    /// Name.
    pub name: &'a str,
    /// Currency.
    pub currency: &'a str,
    /// Millionths.
    pub seat_price: i64,
    /// Seats not charged.
    pub included_seats: i32,
    /// Basis points.
    pub markup_basis_points: i64,
    /// Millionths.
    pub monthly_minimum: Option<i64>,
}

/// Every plan, by name.
pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<PlanRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        PlanRow,
        r#"SELECT id, name, currency, (seat_price * 1000000)::bigint AS "seat_price!", included_seats,
                  (markup_percent * 100)::bigint AS "markup_basis_points!",
                  (monthly_minimum * 1000000)::bigint AS monthly_minimum, created_at
           FROM billing_plans ORDER BY name"#
    )
    .fetch_all(db)
    .await?)
}

/// Creates a plan; a taken name is a unique violation.
pub async fn insert(db: impl PgExecutor<'_>, plan: &NewPlan<'_>) -> Result<Uuid> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        "INSERT INTO billing_plans (name, currency, seat_price, included_seats, markup_percent, monthly_minimum)
         VALUES ($1, $2, $3::bigint / 1000000.0, $4, $5::bigint / 100.0, $6::bigint / 1000000.0) RETURNING id",
        plan.name,
        plan.currency,
        plan.seat_price,
        plan.included_seats,
        plan.markup_basis_points,
        plan.monthly_minimum,
    )
    .fetch_one(db)
    .await?)
}

/// One assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssignmentRow {
    /// From this day on.
    pub effective_from: NaiveDate,
    /// The plan.
    pub plan_id: Uuid,
    /// Who assigned it.
    pub assigned_by: String,
    /// When.
    pub assigned_at: DateTime<Utc>,
}

/// `name`'s plan history, oldest first.
pub async fn assignments(db: impl PgExecutor<'_>, name: &str) -> Result<Vec<AssignmentRow>> {
    // language=PostgreSQL
    Ok(sqlx::query_as!(
        AssignmentRow,
        "SELECT effective_from, plan_id, assigned_by, assigned_at FROM plan_assignments
         WHERE cluster_tenant = $1 ORDER BY effective_from",
        name
    )
    .fetch_all(db)
    .await?)
}

/// Puts `name` on `plan` from `from` (replacing an assignment of the same day).
pub async fn assign(db: impl PgExecutor<'_>, name: &str, from: NaiveDate, plan: Uuid, by: &str) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "INSERT INTO plan_assignments (cluster_tenant, effective_from, plan_id, assigned_by) VALUES ($1, $2, $3, $4)
         ON CONFLICT (cluster_tenant, effective_from) DO UPDATE
           SET plan_id = EXCLUDED.plan_id, assigned_by = EXCLUDED.assigned_by, assigned_at = now()",
        name,
        from,
        plan,
        by,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Every customer's plan history, by customer and day (one statement).
pub async fn all_assignments(db: impl PgExecutor<'_>) -> Result<Vec<(String, AssignmentRow)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        "SELECT cluster_tenant, effective_from, plan_id, assigned_by, assigned_at FROM plan_assignments
         ORDER BY cluster_tenant, effective_from"
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let row = AssignmentRow {
                effective_from: r.effective_from,
                plan_id: r.plan_id,
                assigned_by: r.assigned_by,
                assigned_at: r.assigned_at,
            };
            (r.cluster_tenant, row)
        })
        .collect())
}
