//! The silo's usage report to the fleet, for billing, with its own credential: it asks where to
//! start (`GET <fleet>/api/internal/cluster-tenants/<name>/usage`: the latest day the fleet holds,
//! in the billing time zone it names), then sends every day from a few days before that (so a
//! late LiteLLM log revises its day) through today (`PUT …/usage/<day>`): the seats measured that
//! day (the last measurement carried over days the silo measured none) and the spend per model
//! from the ledger, in the silo's currency. A fleet that was unreachable for days gets them all at
//! the next report; the fleet keeps a day once however often it is sent.

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use app::model::fleet::usage::{CATCH_UP_DAYS, UsageCursor, UsageRecorded, UsageReport, UsageSpend};
use chrono::{Duration, NaiveDate, Utc};
use opencrane_db::PgPool;
use opencrane_entitlements::format_micros;

use super::sync::FleetLink;

/// What one report sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    /// Days sent.
    pub days: usize,
    /// Days the fleet took as new or changed.
    pub changed: usize,
}

/// Today in `time_zone`, and that zone's name as Postgres knows it.
fn today(time_zone: &str) -> anyhow::Result<NaiveDate> {
    let tz = opencrane_entitlements::period::time_zone(time_zone).map_err(|e| anyhow::anyhow!("{e}"))?;
    opencrane_entitlements::period::local_date(Utc::now(), &tz).context("today's date")
}

/// Measures the seats held now into today's row (in the billing time zone).
pub async fn measure(pool: &PgPool, time_zone: &str) -> anyhow::Result<()> {
    use opencrane_silo_db::usage;
    let active = usage::active_members(pool).await?;
    usage::measure_seats(pool, today(time_zone)?, i32::try_from(active).unwrap_or(i32::MAX)).await?;
    Ok(())
}

/// A ledger model name as the fleet takes it: trimmed, 1 to 200 characters.
fn reportable_model(model: &str) -> String {
    let model = model.trim();
    if model.is_empty() { "(unknown model)".to_owned() } else { model.chars().take(200).collect() }
}

/// The reports of `[from, to]`: one per day, seats carried forward, spend per model.
async fn reports(
    pool: &PgPool,
    from: NaiveDate,
    to: NaiveDate,
    time_zone: &str,
) -> anyhow::Result<Vec<(NaiveDate, UsageReport)>> {
    use opencrane_silo_db::usage;
    let currency = opencrane_silo_db::settings::get(pool).await?.currency;
    let (mut seats, measured) = usage::seats(pool, from, to).await?;
    let measured: BTreeMap<NaiveDate, i32> = measured.into_iter().collect();
    // A model name the fleet would refuse (empty, or longer than it takes) must not hold every
    // later day back: it is reported under a name it takes, summed with its namesakes.
    let mut by_model: BTreeMap<(NaiveDate, String), i64> = BTreeMap::new();
    for (day, model, micros) in usage::spend_by_day_and_model(pool, from, to, time_zone).await? {
        *by_model.entry((day, reportable_model(&model))).or_default() += micros;
    }
    let mut spend: BTreeMap<NaiveDate, Vec<UsageSpend>> = BTreeMap::new();
    for ((day, model), micros) in by_model {
        spend.entry(day).or_default().push(UsageSpend {
            model,
            currency: currency.clone(),
            amount: format_micros(micros),
        });
    }
    let mut out = Vec::new();
    let mut day = from;
    while day <= to {
        if let Some(count) = measured.get(&day) {
            seats = Some(*count);
        }
        out.push((
            day,
            UsageReport { active_seats: i64::from(seats.unwrap_or(0)), spend: spend.remove(&day).unwrap_or_default() },
        ));
        day += Duration::days(1);
    }
    Ok(out)
}

/// Reports once; answers what was sent. Stops at the first day the fleet refuses (the next
/// report starts again from the fleet's latest day).
pub async fn report_once(
    client: &openidconnect::reqwest::Client,
    link: &FleetLink,
    cluster_tenant: &str,
    pool: &PgPool,
) -> anyhow::Result<(Reported, String)> {
    let base = format!("{}/api/internal/cluster-tenants/{cluster_tenant}/usage", link.url.trim_end_matches('/'));
    let answer = crate::metrics::fleet_call(
        client.get(&base).bearer_auth(link.token.current()?).timeout(std::time::Duration::from_secs(10)),
    )
    .await
    .with_context(|| format!("GET {base}"))?;
    if !answer.status().is_success() {
        bail!("GET {base} answered {}", answer.status());
    }
    let cursor: UsageCursor = serde_json::from_slice(&answer.bytes().await?).context("decoding the usage cursor")?;
    let today = today(&cursor.time_zone)?;
    let floor = today - Duration::days(i64::from(CATCH_UP_DAYS) - 1);
    // Nothing before the silo's first measured or spent day (there is nothing to bill there).
    let first = opencrane_silo_db::usage::first_day(pool, &cursor.time_zone).await?.unwrap_or(today);
    let from = match cursor.last_day {
        Some(last) => (last - Duration::days(i64::from(cursor.resend_days))).max(first),
        None => first,
    }
    .clamp(floor, today);
    let mut reported = Reported::default();
    for (day, report) in reports(pool, from, today, &cursor.time_zone).await? {
        let url = format!("{base}/{day}");
        let answer = crate::metrics::fleet_call(
            client
                .put(&url)
                .bearer_auth(link.token.current()?)
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&report)?)
                .timeout(std::time::Duration::from_secs(10)),
        )
        .await
        .with_context(|| format!("PUT {url}"))?;
        let status = answer.status();
        let body = answer.bytes().await?;
        if !status.is_success() {
            bail!("PUT {url} answered {status}: {}", String::from_utf8_lossy(&body));
        }
        let recorded: UsageRecorded = serde_json::from_slice(&body).context("decoding the recorded day")?;
        reported.days += 1;
        reported.changed += usize::from(recorded.changed);
    }
    Ok((reported, cursor.time_zone))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ledger_model_name_is_one_the_fleet_takes() {
        assert_eq!(reportable_model(" fast "), "fast");
        assert_eq!(reportable_model(""), "(unknown model)");
        assert_eq!(reportable_model(&"m".repeat(300)).chars().count(), 200);
    }
}
