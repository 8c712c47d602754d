//! What the silo reports to the fleet for billing: the seats held each day (measured at every
//! membership pull) and the spend per day and model from the ledger.

use chrono::NaiveDate;
use opencrane_db::Result;
use sqlx::PgExecutor;

/// Records that `active` members held a seat on `day` (keeping the day's highest count).
pub async fn measure_seats(db: impl PgExecutor<'_>, day: NaiveDate, active: i32) -> Result<()> {
    // language=PostgreSQL
    sqlx::query!(
        "INSERT INTO daily_seats (day, active_seats) VALUES ($1, $2)
         ON CONFLICT (day) DO UPDATE SET active_seats = GREATEST(daily_seats.active_seats, EXCLUDED.active_seats),
                                         measured_at = now()",
        day,
        active.max(0),
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Active members now (those holding a seat).
pub async fn active_members(db: impl PgExecutor<'_>) -> Result<i64> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM org_memberships WHERE status = 'active'"#)
        .fetch_one(db)
        .await?)
}

/// The seats measured in `[from, to]`, and the last measurement before `from` (a day with no
/// measurement — the silo was down — carries the one before it forward).
pub async fn seats(
    db: impl PgExecutor<'_> + Copy,
    from: NaiveDate,
    to: NaiveDate,
) -> Result<(Option<i32>, Vec<(NaiveDate, i32)>)> {
    // language=PostgreSQL
    let before =
        sqlx::query_scalar!("SELECT active_seats FROM daily_seats WHERE day < $1 ORDER BY day DESC LIMIT 1", from)
            .fetch_optional(db)
            .await?;
    // language=PostgreSQL
    let rows =
        sqlx::query!("SELECT day, active_seats FROM daily_seats WHERE day BETWEEN $1 AND $2 ORDER BY day", from, to)
            .fetch_all(db)
            .await?;
    Ok((before, rows.into_iter().map(|r| (r.day, r.active_seats)).collect()))
}

/// Spend per local day (in `time_zone`) and model in `[from, to]`, in millionths.
pub async fn spend_by_day_and_model(
    db: impl PgExecutor<'_>,
    from: NaiveDate,
    to: NaiveDate,
    time_zone: &str,
) -> Result<Vec<(NaiveDate, String, i64)>> {
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"SELECT (occurred_at AT TIME ZONE $3)::date AS "day!", model, (sum(amount) * 1000000)::bigint AS "spent!"
           FROM spend_events
           WHERE occurred_at >= ($1::date - 1)::timestamptz AND occurred_at < ($2::date + 2)::timestamptz
             AND (occurred_at AT TIME ZONE $3)::date BETWEEN $1 AND $2
           GROUP BY 1, 2 ORDER BY 1, 2"#,
        from,
        to,
        time_zone,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.day, r.model, r.spent)).collect())
}

/// The first day anything was measured or spent (where a report to a fleet that holds nothing
/// starts).
pub async fn first_day(db: impl PgExecutor<'_>, time_zone: &str) -> Result<Option<NaiveDate>> {
    // language=PostgreSQL
    Ok(sqlx::query_scalar!(
        r#"SELECT least((SELECT min(day) FROM daily_seats),
                        (SELECT min((occurred_at AT TIME ZONE $1)::date) FROM spend_events))"#,
        time_zone
    )
    .fetch_one(db)
    .await?)
}
