//! Reading timestamps in the browser. chrono's own `Deserialize` for `DateTime<Utc>` goes through
//! its general format parser (`parse_rfc3339_relaxed` → `parse_internal`, several KB of wasm in
//! each bundle); the server writes RFC 3339 (chrono's `Serialize`), which `parse_from_rfc3339`
//! reads with its small dedicated parser. The types islands read name these with
//! `#[cfg_attr(not(feature = "ssr"), serde(deserialize_with = …))]`; the server keeps chrono's.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer};

fn parse<E: serde::de::Error>(text: &str) -> Result<DateTime<Utc>, E> {
    DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).map_err(E::custom)
}

/// An RFC 3339 timestamp.
pub fn rfc3339<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    parse(&String::deserialize(d)?)
}

/// An RFC 3339 timestamp or `null` (use with `#[serde(default)]` where the field may be absent).
pub fn rfc3339_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    Option::<String>::deserialize(d)?.map(|text| parse(&text)).transpose()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone as _;
    use serde::Serialize;

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Stamped {
        #[serde(deserialize_with = "rfc3339")]
        at: DateTime<Utc>,
        #[serde(default, deserialize_with = "rfc3339_opt", skip_serializing_if = "Option::is_none")]
        maybe: Option<DateTime<Utc>>,
    }

    #[test]
    fn reads_what_chrono_writes() {
        let at = Utc.with_ymd_and_hms(2026, 12, 6, 6, 4, 3).unwrap() + chrono::Duration::nanoseconds(123_456_789);
        for value in [Stamped { at, maybe: Some(at) }, Stamped { at, maybe: None }] {
            let text = serde_json::to_string(&value).unwrap();
            assert_eq!(serde_json::from_str::<Stamped>(&text).unwrap(), value, "{text}");
        }
        let whole = serde_json::from_str::<Stamped>(r#"{"at":"2026-12-06T07:04:03+01:00","maybe":null}"#).unwrap();
        assert_eq!(whole.at, Utc.with_ymd_and_hms(2026, 12, 6, 6, 4, 3).unwrap());
        assert!(serde_json::from_str::<Stamped>(r#"{"at":"yesterday"}"#).is_err());
    }
}
