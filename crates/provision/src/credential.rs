//! The silo credential: what a customer's silo presents to the fleet's internal API. The
//! reconciler mints one on the release step when the customer has none in force (first
//! provisioning, after a rotation) or the backend no longer holds it, hands it to the backend to
//! install (a Secret in the silo's namespace, or the dev process's memory), recording only its
//! SHA-256 with the customer (just before the install, so the silo's first call is accepted).
//! Nothing else ever stores it.

use opencrane_deploy::Secret;
use sha2::{Digest, Sha256};

/// Every silo credential starts with this (so the fleet knows where to look it up).
pub const PREFIX: &str = "ocs_";

/// A new random credential: `ocs_` and 64 hex digits (256 bits from the kernel).
pub fn mint() -> Result<Secret, String> {
    opencrane_localpg::random_hex(32).map(|hex| Secret::new(format!("{PREFIX}{hex}"))).map_err(|e| e.to_string())
}

/// The SHA-256 (lower-case hex) of a credential: what the fleet stores and looks up.
pub fn fingerprint(credential: &str) -> String {
    Sha256::digest(credential.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_random_prefixed_and_fingerprinted() {
        let (a, b) = (mint().unwrap(), mint().unwrap());
        assert_ne!(a, b);
        assert!(a.expose().starts_with(PREFIX));
        assert_eq!(a.expose().len(), PREFIX.len() + 64);
        assert_eq!(format!("{a:?}"), "<redacted>");
        let print = fingerprint(a.expose());
        assert_eq!(print.len(), 64);
        assert!(print.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(fingerprint("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
