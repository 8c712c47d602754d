//! Verification, pure: per table, the row count and an order-independent checksum of the
//! canonical rows the plan mapped from the source, against the same of the rows read back from
//! the silo; when they differ, the rows that differ (on either side).
//!
//! The checksum is the SHA-256 of the sorted SHA-256s of the rows' canonical JSON (keys sorted,
//! no whitespace): independent of the order rows are read in, sensitive to duplicates.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// SHA-256 in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A JSON value with its object keys sorted, as text.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let ordered: BTreeMap<&String, Value> = map.iter().map(|(k, v)| (k, sorted(v))).collect();
                Value::Object(ordered.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // A BTreeMap-backed object serialises in key order; rebuilding keeps that true even where
    // serde_json preserves insertion order.
    serde_json::to_string(&sorted(value)).unwrap_or_default()
}

/// One table's figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableCheck {
    /// The silo table.
    pub table: String,
    /// Rows mapped from the source.
    pub source_rows: usize,
    /// Rows in the silo.
    pub target_rows: usize,
    /// Checksum of the source side.
    pub source_checksum: String,
    /// Checksum of the silo side.
    pub target_checksum: String,
    /// Rows only the source has (canonical JSON), at most [`SHOWN`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// Rows only the silo has, at most [`SHOWN`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unexpected: Vec<String>,
}

impl TableCheck {
    /// Whether both sides agree.
    pub fn agrees(&self) -> bool {
        self.source_rows == self.target_rows && self.source_checksum == self.target_checksum
    }
}

/// How many differing rows a check lists per side.
pub const SHOWN: usize = 20;

/// The SHA-256 of each row's canonical JSON, sorted.
pub fn row_hashes(rows: &[Value]) -> Vec<String> {
    let mut hashes: Vec<String> = rows.iter().map(|r| sha256_hex(canonical(r).as_bytes())).collect();
    hashes.sort_unstable();
    hashes
}

/// The checksum of a set of rows given by their sorted [`row_hashes`].
pub fn checksum_of(sorted_hashes: &[String]) -> String {
    sha256_hex(sorted_hashes.concat().as_bytes())
}

/// The checksum of a set of rows.
pub fn checksum(rows: &[Value]) -> String {
    checksum_of(&row_hashes(rows))
}

/// A table as a silo manager reports it (the relayed migration): its rows are not sent, only
/// their count, checksum and — when the checksum is not the one expected — their sorted row
/// hashes (all of them, unless `partial`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableDigest {
    /// Rows.
    pub rows: usize,
    /// [`checksum_of`] its rows.
    pub checksum: String,
    /// Its sorted row hashes, when its checksum is not the expected one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hashes: Vec<String>,
    /// Whether `hashes` lists only some of them (too many to send).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

/// Compares one table's source rows with a silo's [`TableDigest`] of it: rows only the source
/// has are shown as canonical JSON, rows only the silo has by their hash (their values never
/// leave the silo).
pub fn compare_digest(table: &str, source: &[Value], target: &TableDigest) -> TableCheck {
    let source_hashes = row_hashes(source);
    let mut check = TableCheck {
        table: table.to_owned(),
        source_rows: source.len(),
        target_rows: target.rows,
        source_checksum: checksum_of(&source_hashes),
        target_checksum: target.checksum.clone(),
        missing: Vec::new(),
        unexpected: Vec::new(),
    };
    if check.agrees() {
        return check;
    }
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for hash in &source_hashes {
        *counts.entry(hash).or_default() += 1;
    }
    for hash in &target.hashes {
        *counts.entry(hash).or_default() -= 1;
    }
    let by_hash: BTreeMap<String, &Value> =
        source.iter().map(|row| (sha256_hex(canonical(row).as_bytes()), row)).collect();
    for (hash, n) in counts {
        if n > 0 && check.missing.len() < SHOWN && !target.partial {
            check.missing.extend(by_hash.get(hash).map(|row| canonical(row)));
        } else if n < 0 && check.unexpected.len() < SHOWN {
            check.unexpected.push(format!("(a row of the silo's, sha256 {hash})"));
        }
    }
    if target.partial && check.unexpected.len() < SHOWN {
        check.unexpected.push(format!("(the silo holds {} rows: too many to list every one)", target.rows));
    }
    check
}

/// Compares one table.
pub fn compare(table: &str, source: &[Value], target: &[Value]) -> TableCheck {
    let mut check = TableCheck {
        table: table.to_owned(),
        source_rows: source.len(),
        target_rows: target.len(),
        source_checksum: checksum(source),
        target_checksum: checksum(target),
        missing: Vec::new(),
        unexpected: Vec::new(),
    };
    if !check.agrees() {
        // Multiset difference on the canonical text.
        let mut counts: BTreeMap<String, i64> = BTreeMap::new();
        for row in source {
            *counts.entry(canonical(row)).or_default() += 1;
        }
        for row in target {
            *counts.entry(canonical(row)).or_default() -= 1;
        }
        for (row, n) in counts {
            if n > 0 && check.missing.len() < SHOWN {
                check.missing.push(row);
            } else if n < 0 && check.unexpected.len() < SHOWN {
                check.unexpected.push(row);
            }
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A digest of the same rows agrees; one missing a row and holding another names both (the
    /// missing one in full, the silo's own by hash).
    #[test]
    fn a_digest_is_compared_like_the_rows_it_stands_for() {
        let source = [json!({"a": 1}), json!({"a": 2})];
        let same = TableDigest { rows: 2, checksum: checksum(&source), ..TableDigest::default() };
        assert!(compare_digest("t", &source, &same).agrees());
        let theirs = [json!({"a": 1}), json!({"a": 3})];
        let hashes = row_hashes(&theirs);
        let other = TableDigest { rows: 2, checksum: checksum_of(&hashes), hashes, partial: false };
        let check = compare_digest("t", &source, &other);
        assert!(!check.agrees());
        assert_eq!(check.missing, [r#"{"a":2}"#]);
        let extra = sha256_hex(br#"{"a":3}"#);
        assert_eq!(check.unexpected, [format!("(a row of the silo's, sha256 {extra})")]);
    }

    #[test]
    fn the_checksum_ignores_order_and_key_order_but_not_duplicates_or_values() {
        let a = [json!({"a": 1, "b": "x"}), json!({"a": 2, "b": "y"})];
        let b = [json!({"b": "y", "a": 2}), json!({"b": "x", "a": 1})];
        assert_eq!(checksum(&a), checksum(&b));
        assert!(compare("t", &a, &b).agrees());
        let doubled = [a[0].clone(), a[0].clone(), a[1].clone()];
        let check = compare("t", &a, &doubled);
        assert!(!check.agrees());
        assert_eq!(check.unexpected, [r#"{"a":1,"b":"x"}"#]);
        let changed = [json!({"a": 1, "b": "x"}), json!({"a": 2, "b": "z"})];
        let check = compare("t", &a, &changed);
        assert_eq!((check.missing.len(), check.unexpected.len()), (1, 1));
        assert_eq!(check.missing, [r#"{"a":2,"b":"y"}"#]);
    }
}
