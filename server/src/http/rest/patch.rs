//! Partial updates on `PUT`, as the original's clients send them: only the members present
//! change, an explicit `null` clears an optional member (RFC 7396, JSON Merge Patch, applied to
//! the record as it is now), and the result is checked exactly as a whole body would be.
//!
//! The merge is written here rather than taken from a crate: it is the RFC's ten-line algorithm,
//! and the API also needs what a crate would not do — aliases folded onto their field before the
//! merge (so `domains` replaces `allowedDomains` instead of colliding with it) and, for members
//! whose "absent" means "unchanged" on the service side, `null` turned into the empty value that
//! means "remove".

use app::error::AppError;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Map, Value};

/// How one resource's body is patched.
pub struct PatchRules<'a> {
    /// `(alias, field)`: a member sent under an alias replaces the field.
    pub aliases: &'a [(&'a str, &'a str)],
    /// Members whose `null` means "remove" and is sent to the service as `""` (for the service, an
    /// absent one means "leave as it is").
    pub null_is_empty: &'a [&'a str],
}

/// RFC 7396: `patch`'s members replace `target`'s, `null` removes one, objects merge member-wise.
fn merge(target: &mut Value, patch: Value) {
    let Value::Object(patch) = patch else {
        *target = patch;
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(&key);
            } else {
                merge(target.entry(key).or_insert(Value::Null), value);
            }
        }
    }
}

/// The full request: `current` (the record as the service shows it) with `patch` applied, then
/// read as `T`, with an error naming the member that does not fit.
pub fn patched<T: DeserializeOwned>(
    current: &impl Serialize,
    mut patch: Map<String, Value>,
    rules: &PatchRules<'_>,
) -> Result<T, AppError> {
    for &(alias, field) in rules.aliases {
        if let Some(value) = patch.remove(alias) {
            patch.insert(field.to_owned(), value);
        }
    }
    for &field in rules.null_is_empty {
        if patch.get(field).is_some_and(Value::is_null) {
            patch.insert(field.to_owned(), Value::String(String::new()));
        }
    }
    let mut body = serde_json::to_value(current).unwrap_or_default();
    merge(&mut body, Value::Object(patch));
    serde_path_to_error::deserialize(body).map_err(|err| {
        let path = err.path().to_string();
        let field = if path == "." { "body".to_owned() } else { path };
        AppError::field(field, err.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Thing {
        #[serde(default)]
        display_name: String,
        #[serde(default)]
        team: Option<String>,
        #[serde(default, alias = "domains")]
        allowed_domains: Vec<String>,
        #[serde(default)]
        budget: Option<String>,
        #[serde(default)]
        labels: serde_json::Map<String, Value>,
    }

    const RULES: PatchRules<'static> =
        PatchRules { aliases: &[("domains", "allowedDomains")], null_is_empty: &["budget"] };

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn only_the_members_sent_change_and_null_clears() {
        let current = json!({
            "displayName": "Ana", "team": "eng", "allowedDomains": ["a.test"], "labels": {"x": "1", "y": "2"}
        });
        let t: Thing = patched(&current, object(json!({"team": "ops"})), &RULES).unwrap();
        assert_eq!(t.display_name, "Ana", "kept");
        assert_eq!(t.team.as_deref(), Some("ops"));
        assert_eq!(t.allowed_domains, ["a.test"]);
        assert_eq!(t.budget, None, "absent: the service leaves it as it is");

        let t: Thing = patched(&current, object(json!({"team": null, "budget": null})), &RULES).unwrap();
        assert_eq!(t.team, None, "null clears");
        assert_eq!(t.budget.as_deref(), Some(""), "null asks the service to remove it");

        let t: Thing =
            patched(&current, object(json!({"domains": ["b.test"], "labels": {"x": null}})), &RULES).unwrap();
        assert_eq!(t.allowed_domains, ["b.test"], "an alias replaces its field instead of colliding");
        assert_eq!(t.labels, object(json!({"y": "2"})), "objects merge member-wise");
    }

    #[test]
    fn a_member_of_the_wrong_type_is_named() {
        let err = patched::<Thing>(&json!({}), object(json!({"team": 7})), &RULES).unwrap_err();
        assert!(err.field_errors().get("team").is_some(), "{err:?}");
    }
}
