//! A Zitadel service-account key (the JSON Zitadel hands out for a machine user) and the signer
//! made from it: parsing names what is wrong with a key in one sentence that never repeats the
//! key, and a key is accepted only once it has signed a trial assertion (a PEM block that parses
//! can still hold a broken RSA key; `jsonwebtoken` only finds out when it signs).

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

/// What is wrong with a service-account key. The sentences name the field, never its value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not JSON at all.
    #[error("the service-account key is not JSON (line {line}, column {column})")]
    NotJson {
        /// Where parsing stopped.
        line: usize,
        /// Where parsing stopped.
        column: usize,
    },
    /// JSON, but not an object of the documented shape.
    #[error("the service-account key is not a Zitadel key object: {0}")]
    Shape(String),
    /// A required field is absent or blank.
    #[error("the service-account key has no `{0}`")]
    Missing(&'static str),
    /// `type` is something else (an application key, say).
    #[error("the service-account key's `type` is “{0}”, expected “serviceaccount”")]
    WrongType(String),
    /// `key` is a PEM block of another algorithm.
    #[error("the service-account key's `key` is not an RSA private key (its PEM block is labelled “{0}”)")]
    NotRsa(String),
    /// `key` is not a usable RSA private key in PEM form.
    #[error("the service-account key's `key` is not a valid RSA private key in PEM form")]
    MalformedPem,
    /// The key's `expirationDate` has passed.
    #[error("the service-account key {key_id} expired on {expired}")]
    Expired {
        /// The key's id (public).
        key_id: String,
        /// When.
        expired: DateTime<Utc>,
    },
}

/// A service-account key as Zitadel serialises it.
#[derive(Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccountKey {
    /// Always `serviceaccount`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The key's id (the JWT `kid`).
    #[serde(default)]
    pub key_id: String,
    /// The PEM private key that signs the JWT-bearer assertion.
    #[serde(default)]
    pub key: String,
    /// The machine user's id (the JWT `iss` and `sub`).
    #[serde(default)]
    pub user_id: String,
    /// When Zitadel stops accepting the key (absent: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_date: Option<DateTime<Utc>>,
}

impl std::fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountKey")
            .field("key_id", &self.key_id)
            .field("user_id", &self.user_id)
            .field("expiration_date", &self.expiration_date)
            .finish_non_exhaustive()
    }
}

impl ServiceAccountKey {
    /// Parses a key from its JSON text.
    pub fn parse(json: &str) -> Result<Self, KeyError> {
        let value: serde_json::Value =
            serde_json::from_str(json.trim()).map_err(|e| KeyError::NotJson { line: e.line(), column: e.column() })?;
        Self::from_value(value)
    }

    /// Parses a key from a JSON value: an object, or a string holding the object (the
    /// original's rotation body accepts both).
    pub fn from_value(value: serde_json::Value) -> Result<Self, KeyError> {
        let value = match value {
            serde_json::Value::String(text) => return Self::parse(&text),
            object @ serde_json::Value::Object(_) => object,
            other => {
                let kind = match other {
                    serde_json::Value::Null => "null",
                    serde_json::Value::Bool(_) => "a boolean",
                    serde_json::Value::Number(_) => "a number",
                    _ => "an array",
                };
                return Err(KeyError::Shape(format!("expected an object, found {kind}")));
            }
        };
        let key: Self = serde_json::from_value(value).map_err(|e| {
            // serde's message names the field and the expected type, never the value.
            KeyError::Shape(e.to_string())
        })?;
        key.check()?;
        Ok(key)
    }

    /// Checks the fields (not the expiry: see [`ServiceAccountKey::check_expiry`]).
    fn check(&self) -> Result<(), KeyError> {
        if self.key_id.trim().is_empty() {
            return Err(KeyError::Missing("keyId"));
        }
        if self.user_id.trim().is_empty() {
            return Err(KeyError::Missing("userId"));
        }
        if self.key.trim().is_empty() {
            return Err(KeyError::Missing("key"));
        }
        if !self.kind.is_empty() && self.kind != "serviceaccount" {
            return Err(KeyError::WrongType(self.kind.clone()));
        }
        let label = self
            .key
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix("-----BEGIN ").and_then(|l| l.strip_suffix("-----")))
            .ok_or(KeyError::MalformedPem)?;
        if label != "RSA PRIVATE KEY" && label != "PRIVATE KEY" {
            return Err(KeyError::NotRsa(label.to_owned()));
        }
        Ok(())
    }

    /// Refuses a key whose `expirationDate` is at or before `now`.
    pub fn check_expiry(&self, now: DateTime<Utc>) -> Result<(), KeyError> {
        match self.expiration_date {
            Some(expired) if expired <= now => Err(KeyError::Expired { key_id: self.key_id.clone(), expired }),
            _ => Ok(()),
        }
    }

    /// The JSON text (for the Secret the key is persisted in).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The assertion's claims (RFC 7523 §3, as Zitadel's JWT profile wants them).
#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
}

/// How long an assertion is valid (Zitadel accepts at most one hour; the reference uses 5 minutes).
pub const ASSERTION_LIFETIME: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

/// Signs JWT-bearer assertions with one key.
#[derive(Clone)]
pub struct Signer {
    key_id: String,
    user_id: String,
    expires: Option<DateTime<Utc>>,
    encoding: EncodingKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("key_id", &self.key_id).field("user_id", &self.user_id).finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer for `key`, after a trial signature.
    pub fn new(key: &ServiceAccountKey) -> Result<Self, KeyError> {
        key.check()?;
        let encoding = EncodingKey::from_rsa_pem(key.key.as_bytes()).map_err(|_| KeyError::MalformedPem)?;
        let signer =
            Self { key_id: key.key_id.clone(), user_id: key.user_id.clone(), expires: key.expiration_date, encoding };
        signer.assertion("https://trial.invalid", Utc::now()).map_err(|_| KeyError::MalformedPem)?;
        Ok(signer)
    }

    /// The key's id.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The machine user's id.
    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// When the key expires, if it does.
    pub fn expires(&self) -> Option<DateTime<Utc>> {
        self.expires
    }

    /// A signed assertion for the audience `aud` (the instance URL), issued at `now`.
    pub fn assertion(&self, aud: &str, now: DateTime<Utc>) -> Result<String, KeyError> {
        let header = Header { kid: Some(self.key_id.clone()), ..Header::new(Algorithm::RS256) };
        let claims = Claims {
            iss: &self.user_id,
            sub: &self.user_id,
            aud,
            iat: now.timestamp(),
            exp: (now + ASSERTION_LIFETIME).timestamp(),
        };
        jsonwebtoken::encode(&header, &claims, &self.encoding).map_err(|_| KeyError::MalformedPem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEM: &str = include_str!("fake/keys/test-1.pem");
    const EC: &str = include_str!("fake/keys/test-ec.pem");

    fn json(key: &str, extra: &str) -> String {
        let key = serde_json::to_string(key).unwrap();
        format!(r#"{{"type":"serviceaccount","keyId":"k1","userId":"u1","key":{key}{extra}}}"#)
    }

    #[test]
    fn a_good_key_signs_an_rs256_assertion_with_its_kid() {
        let key = ServiceAccountKey::parse(&json(PEM, "")).unwrap();
        let jwt = Signer::new(&key).unwrap().assertion("https://id.example.com", Utc::now()).unwrap();
        let header = jsonwebtoken::decode_header(&jwt).unwrap();
        assert_eq!((header.alg, header.kid.as_deref()), (Algorithm::RS256, Some("k1")));
        assert!(!format!("{key:?}").contains("BEGIN"), "Debug never shows the key");
    }

    #[test]
    fn each_bad_key_is_refused_with_a_sentence_naming_what_is_wrong() {
        let broken = PEM.replace(&PEM[80..120], &"A".repeat(40));
        let cases = [
            ("{not json".to_owned(), "is not JSON"),
            ("[1]".to_owned(), "expected an object"),
            (r#"{"type":"serviceaccount","userId":"u","key":"x"}"#.to_owned(), "no `keyId`"),
            (r#"{"keyId":"k","key":"x"}"#.to_owned(), "no `userId`"),
            (r#"{"keyId":"k","userId":"u"}"#.to_owned(), "no `key`"),
            (json(PEM, "").replace("serviceaccount", "application"), "expected “serviceaccount”"),
            (json(EC, ""), "not an RSA private key (its PEM block is labelled “EC PRIVATE KEY”)"),
            (json("not a pem", ""), "not a valid RSA private key"),
            (json(&broken, ""), "not a valid RSA private key"),
        ];
        for (text, expected) in cases {
            let err = ServiceAccountKey::parse(&text).and_then(|k| Signer::new(&k).map(|_| ())).unwrap_err();
            let message = err.to_string();
            assert!(message.contains(expected), "{text:.40}: {message}");
            assert!(!message.contains("MII"), "never the key material: {message}");
        }
    }

    #[test]
    fn an_expired_key_is_refused_by_date() {
        let key = ServiceAccountKey::parse(&json(PEM, r#","expirationDate":"2020-01-01T00:00:00Z""#)).unwrap();
        let err = key.check_expiry(Utc::now()).unwrap_err();
        assert_eq!(err.to_string(), "the service-account key k1 expired on 2020-01-01 00:00:00 UTC");
        let later = ServiceAccountKey::parse(&json(PEM, r#","expirationDate":"2999-01-01T00:00:00Z""#)).unwrap();
        assert!(later.check_expiry(Utc::now()).is_ok());
    }
}
