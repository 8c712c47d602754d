//! Calendar budget periods in the silo's time zone.
//!
//! A period is a calendar day, an ISO week (Monday to Monday) or a calendar month, starting at
//! local midnight in the silo's time zone and ending at the next one — not a rolling window (the
//! original's 30-day window drifted away from the invoice month). Days are 23 or 25 hours long
//! across daylight-saving changes; that is the calendar's truth and limits follow it.

use chrono::{DateTime, Utc};
/// The time-zone type periods are computed in (re-exported so callers need no jiff of their own).
pub use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan, Zoned};
use serde::{Deserialize, Serialize};

/// How often a limit resets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    /// A calendar day.
    Day,
    /// An ISO week, Monday to Monday.
    Week,
    /// A calendar month.
    Month,
}

impl Period {
    /// All, in order.
    pub const ALL: [Self; 3] = [Self::Day, Self::Week, Self::Month];

    /// `day`, `week`, `month`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }

    /// Parses `day`, `week`, `month`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == text)
    }

    /// "per day", for people.
    pub fn per(self) -> &'static str {
        match self {
            Self::Day => "per day",
            Self::Week => "per week",
            Self::Month => "per month",
        }
    }
}

/// One period: from `start` (inclusive) to `end` (exclusive, the reset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// Local midnight at the start, as an instant.
    pub start: DateTime<Utc>,
    /// Local midnight at the end: when the limit resets.
    pub end: DateTime<Utc>,
}

/// Why a window could not be computed (only at the far ends of representable time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeriodError(pub String);

impl std::fmt::Display for PeriodError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "budget period out of range: {}", self.0)
    }
}

impl std::error::Error for PeriodError {}

/// Looks up an IANA time-zone name (`Europe/Berlin`, `UTC`).
pub fn time_zone(name: &str) -> Result<TimeZone, String> {
    if name.trim().is_empty() {
        return Err("Choose a time zone, e.g. Europe/Berlin or UTC.".into());
    }
    TimeZone::get(name.trim()).map_err(|_| format!("“{name}” is not a time zone; use an IANA name like Europe/Berlin."))
}

fn to_jiff(at: DateTime<Utc>) -> Result<Timestamp, PeriodError> {
    Timestamp::new(at.timestamp(), i32::try_from(at.timestamp_subsec_nanos()).unwrap_or(0))
        .map_err(|e| PeriodError(e.to_string()))
}

fn to_chrono(at: &Zoned) -> Result<DateTime<Utc>, PeriodError> {
    let ts = at.timestamp();
    DateTime::from_timestamp(ts.as_second(), u32::try_from(ts.subsec_nanosecond()).unwrap_or(0))
        .ok_or_else(|| PeriodError(format!("{ts} is out of range")))
}

/// The calendar date of `at` in `tz`.
pub fn local_date(at: DateTime<Utc>, tz: &TimeZone) -> Option<chrono::NaiveDate> {
    let d = to_jiff(at).ok()?.to_zoned(tz.clone()).date();
    chrono::NaiveDate::from_ymd_opt(i32::from(d.year()), u32::try_from(d.month()).ok()?, u32::try_from(d.day()).ok()?)
}

/// `at` as people in `tz` read it: `2026-12-01 00:00 Europe/Berlin`.
pub fn local_label(at: DateTime<Utc>, tz: &TimeZone) -> String {
    match to_jiff(at) {
        Ok(ts) => format!("{} {}", ts.to_zoned(tz.clone()).strftime("%Y-%m-%d %H:%M"), tz.iana_name().unwrap_or("UTC")),
        Err(_) => at.to_rfc3339(),
    }
}

/// The period of kind `period` that contains `now`, in `tz`.
pub fn window(period: Period, tz: &TimeZone, now: DateTime<Utc>) -> Result<Window, PeriodError> {
    let err = |e: jiff::Error| PeriodError(e.to_string());
    let local = to_jiff(now)?.to_zoned(tz.clone());
    let start = match period {
        Period::Day => local.start_of_day().map_err(err)?,
        Period::Week => {
            let back = i64::from(local.weekday().to_monday_zero_offset());
            local.checked_sub(back.days()).and_then(|d| d.start_of_day()).map_err(err)?
        }
        Period::Month => local.first_of_month().and_then(|d| d.start_of_day()).map_err(err)?,
    };
    let length = match period {
        Period::Day => 1.day(),
        Period::Week => 7.days(),
        Period::Month => 1.month(),
    };
    // Calendar arithmetic in the zone, then back to midnight (a midnight that falls into a
    // daylight-saving gap becomes the first instant of that day).
    let end = start.checked_add(length).and_then(|d| d.start_of_day()).map_err(err)?;
    Ok(Window { start: to_chrono(&start)?, end: to_chrono(&end)? })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;

    use super::*;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).single().unwrap_or_default()
    }

    fn win(period: Period, zone: &str, now: DateTime<Utc>) -> Window {
        window(period, &time_zone(zone).unwrap(), now).unwrap()
    }

    #[test]
    fn months_end_at_the_next_first_whatever_their_length() {
        let w = win(Period::Month, "UTC", utc(2026, 1, 31, 23, 59));
        assert_eq!((w.start, w.end), (utc(2026, 1, 1, 0, 0), utc(2026, 2, 1, 0, 0)));
        let w = win(Period::Month, "UTC", utc(2026, 2, 1, 0, 0));
        assert_eq!((w.start, w.end), (utc(2026, 2, 1, 0, 0), utc(2026, 3, 1, 0, 0)));
        let w = win(Period::Month, "UTC", utc(2026, 12, 31, 12, 0));
        assert_eq!(w.end, utc(2027, 1, 1, 0, 0));
    }

    #[test]
    fn leap_years_have_a_29th_of_february() {
        let w = win(Period::Month, "UTC", utc(2028, 2, 29, 18, 0));
        assert_eq!((w.start, w.end), (utc(2028, 2, 1, 0, 0), utc(2028, 3, 1, 0, 0)));
        let day = win(Period::Day, "UTC", utc(2028, 2, 29, 18, 0));
        assert_eq!(day.end, utc(2028, 3, 1, 0, 0));
        // 2100 is not a leap year.
        assert_eq!(win(Period::Month, "UTC", utc(2100, 2, 28, 0, 0)).end, utc(2100, 3, 1, 0, 0));
    }

    #[test]
    fn periods_follow_the_silo_time_zone() {
        // 23:30 UTC on 31 March is already 1 April in Berlin (UTC+2).
        let w = win(Period::Month, "Europe/Berlin", utc(2026, 3, 31, 23, 30));
        assert_eq!((w.start, w.end), (utc(2026, 3, 31, 22, 0), utc(2026, 4, 30, 22, 0)));
        // …and still 31 March in New York (UTC−4).
        let w = win(Period::Month, "America/New_York", utc(2026, 3, 31, 23, 30));
        assert_eq!((w.start, w.end), (utc(2026, 3, 1, 5, 0), utc(2026, 4, 1, 4, 0)));
        // Half-hour zones: India is UTC+5:30.
        let w = win(Period::Day, "Asia/Kolkata", utc(2026, 6, 1, 20, 0));
        assert_eq!(w.start, utc(2026, 6, 1, 18, 30));
    }

    #[test]
    fn days_across_daylight_saving_changes_are_23_or_25_hours() {
        // Berlin springs forward on 29 March 2026 and falls back on 25 October 2026.
        let spring = win(Period::Day, "Europe/Berlin", utc(2026, 3, 29, 12, 0));
        assert_eq!((spring.end - spring.start).num_hours(), 23);
        let autumn = win(Period::Day, "Europe/Berlin", utc(2026, 10, 25, 12, 0));
        assert_eq!((autumn.end - autumn.start).num_hours(), 25);
        // The week containing the spring change is 167 hours, Monday 00:00 to Monday 00:00.
        let week = win(Period::Week, "Europe/Berlin", utc(2026, 3, 27, 9, 0));
        assert_eq!(week.start, utc(2026, 3, 22, 23, 0));
        assert_eq!(week.end, utc(2026, 3, 29, 22, 0));
        assert_eq!((week.end - week.start).num_hours(), 167);
        // A midnight that does not exist (Santiago springs forward at 24:00) starts the day at 01:00.
        let gap = win(Period::Day, "America/Santiago", utc(2026, 9, 6, 15, 0));
        assert_eq!(gap.start, utc(2026, 9, 6, 4, 0));
    }

    #[test]
    fn weeks_start_on_monday_and_now_is_always_inside_its_window() {
        let w = win(Period::Week, "UTC", utc(2026, 11, 29, 23, 0)); // a Sunday
        assert_eq!((w.start, w.end), (utc(2026, 11, 23, 0, 0), utc(2026, 11, 30, 0, 0)));
        for zone in ["UTC", "Europe/Berlin", "Pacific/Chatham", "America/St_Johns", "Australia/Lord_Howe"] {
            for hours in (0..24 * 400).step_by(7) {
                let now = utc(2026, 1, 1, 0, 0) + chrono::Duration::hours(hours);
                for period in Period::ALL {
                    let w = win(period, zone, now);
                    assert!(w.start <= now && now < w.end, "{zone} {period:?} {now}");
                }
            }
        }
    }

    #[test]
    fn instants_read_in_the_silo_time_zone() {
        let berlin = time_zone("Europe/Berlin").unwrap();
        let at = utc(2026, 11, 30, 23, 0);
        assert_eq!(local_date(at, &berlin), chrono::NaiveDate::from_ymd_opt(2026, 12, 1));
        assert_eq!(local_label(at, &berlin), "2026-12-01 00:00 Europe/Berlin");
        assert_eq!(local_label(at, &time_zone("UTC").unwrap()), "2026-11-30 23:00 UTC");
    }

    #[test]
    fn unknown_zones_are_refused_with_the_name() {
        assert!(time_zone("Mars/Olympus").unwrap_err().contains("Mars/Olympus"));
        assert!(time_zone("").is_err());
    }
}
