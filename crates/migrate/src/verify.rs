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

/// The checksum of a set of rows.
pub fn checksum(rows: &[Value]) -> String {
    let mut hashes: Vec<String> = rows.iter().map(|r| sha256_hex(canonical(r).as_bytes())).collect();
    hashes.sort_unstable();
    sha256_hex(hashes.concat().as_bytes())
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
