//! What a silo user may use and spend, decided by pure functions.
//!
//! The portal's explanatory views (effective access, effective limits, the test-route tool, the
//! what-if preview) and the enforcement path (the LiteLLM key each user gets) call the same
//! functions here, so what an admin is shown is what is enforced. Nothing in this crate does I/O.
//!
//! - [`grants`]: allow/deny grants with the reference's precedence.
//! - [`policy`]: AccessPolicy selection and domain/egress rules.
//! - [`period`]: calendar budget periods in the silo's time zone.
//! - [`budget`]: which limits apply to a user, which binds first, alert thresholds.
//! - [`routing`]: the effective model of a request and the deployments that would serve it.
//! - [`keys`]: the desired LiteLLM virtual key of a user.
//! - [`statement`]: what a customer owes the platform for a month (the fleet's billing).

pub mod budget;
pub mod grants;
pub mod keys;
pub mod period;
pub mod policy;
pub mod routing;
pub mod statement;

/// A money amount in millionths of the currency unit (LiteLLM reports spend with sub-cent
/// precision; limits are whole cents). The database stores `numeric`; this is the exact
/// in-memory form.
pub type Micros = i64;

/// Millionths per currency unit.
pub const MICROS_PER_UNIT: Micros = 1_000_000;

/// Formats micros as a decimal amount with two places (`12.50`), rounding half away from zero.
pub fn format_amount(micros: Micros) -> String {
    let cents = (micros.abs() + 5_000) / 10_000;
    let sign = if micros < 0 && cents > 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", cents / 100, cents % 100)
}

/// The active ISO 4217 currency codes (a plan's currency must be one; the list changes rarely and
/// is small, so it is written here rather than pulled in as a crate).
pub const CURRENCIES: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN", "BHD", "BIF",
    "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHF", "CLP", "CNY", "COP", "CRC",
    "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS",
    "GIP", "GMD", "GNF", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD",
    "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL",
    "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MYR", "MZN", "NAD",
    "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD",
    "RUB", "RWF", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP",
    "SZL", "THB", "TJS", "TMT", "TND", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS", "VES",
    "VND", "VUV", "WST", "XAF", "XCD", "XOF", "XPF", "YER", "ZAR", "ZMW", "ZWG",
];

/// Whether `code` is an active ISO 4217 currency.
pub fn is_currency(code: &str) -> bool {
    CURRENCIES.binary_search(&code).is_ok()
}

/// Formats micros exactly, with six places (`0.000125`): for usage, where cents would round.
pub fn format_micros(micros: Micros) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let abs = micros.unsigned_abs();
    let per = MICROS_PER_UNIT.unsigned_abs();
    format!("{sign}{}.{:06}", abs / per, abs % per)
}

/// Parses a non-negative decimal amount with at most six places (`12`, `0.000125`).
pub fn parse_micros(text: &str) -> Option<Micros> {
    let text = text.trim();
    let (whole, frac) = text.split_once('.').unwrap_or((text, "0"));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || frac.is_empty() || frac.len() > 6 {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let frac: i64 = format!("{frac:0<6}").parse().ok()?;
    whole.checked_mul(MICROS_PER_UNIT)?.checked_add(frac)
}

/// Parses a non-negative decimal amount with at most two places (`12`, `12.5`, `12.50`).
pub fn parse_amount(text: &str) -> Option<Micros> {
    let text = text.trim();
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 2 {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let cents: i64 = format!("{frac:0<2}").parse().ok()?;
    whole.checked_mul(MICROS_PER_UNIT)?.checked_add(cents * 10_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn currencies_are_the_iso_4217_codes() {
        assert!(CURRENCIES.windows(2).all(|w| w[0] < w[1]), "sorted, for the binary search");
        assert!(is_currency("EUR") && is_currency("USD") && is_currency("CHF"));
        assert!(!is_currency("eur") && !is_currency("XYZ") && !is_currency("EURO"));
    }

    #[test]
    fn micros_are_exact_to_six_places() {
        assert_eq!(format_micros(125), "0.000125");
        assert_eq!(format_micros(12_500_000), "12.500000");
        assert_eq!(format_micros(-1), "-0.000001");
        for text in ["0.000125", "12.5", "3", "1000000.000001"] {
            let micros = parse_micros(text).unwrap();
            assert_eq!(parse_micros(&format_micros(micros)), Some(micros), "{text}");
        }
        for bad in ["", "-1", "1.0000001", "1e3", "1,5", ".5", "1.", "x"] {
            assert_eq!(parse_micros(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn amounts_round_trip_and_reject_what_is_not_money() {
        assert_eq!(parse_amount("12"), Some(12_000_000));
        assert_eq!(parse_amount("12.5"), Some(12_500_000));
        assert_eq!(parse_amount(" 0.05 "), Some(50_000));
        assert_eq!(format_amount(12_500_000), "12.50");
        assert_eq!(format_amount(4_999), "0.00");
        assert_eq!(format_amount(5_000), "0.01");
        assert_eq!(format_amount(-1_234_567), "-1.23");
        for bad in ["", "-1", "1.234", "1e3", "abc", ".5", "1.x"] {
            assert_eq!(parse_amount(bad), None, "{bad:?}");
        }
    }
}
