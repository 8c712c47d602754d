//! The roles' links to systems outside their own database, checked at start-up so a wrong
//! Deployment fails fast with the variable named: the fleet's Zitadel Management API, the silo's
//! fleet (fleet-managed or standalone) and the silo operator's watch namespace.

use std::time::Duration;

use anyhow::{Context as _, bail, ensure};

use crate::cli::{DeploymentMode, ZitadelArgs};

pub use opencrane_zitadel::ServiceAccountKey;

/// Parses and checks a service-account key; the error names the variable and never repeats the
/// key.
pub fn parse_service_account_key(json: &str) -> anyhow::Result<ServiceAccountKey> {
    ServiceAccountKey::parse(json).map_err(|e| anyhow::anyhow!("ZITADEL_MGMT_SA_KEY: {e}"))
}

/// The fleet's Zitadel link, when configured.
#[derive(Clone, Debug)]
pub struct ZitadelLink {
    /// The instance URL.
    pub api_url: String,
    /// The service-account key.
    pub key: ServiceAccountKey,
    /// The Secret key rotation updates: (namespace, name, key).
    pub rotation_secret: Option<(String, String, String)>,
    /// How often the reconcile pass runs (`None`: never).
    pub reconcile_interval: Option<Duration>,
    /// How long an old key stays valid after a two-phase rotation.
    pub rotation_grace_hours: u32,
}

/// Checks the Zitadel flags: none set is fine (IAM off); a URL needs a valid key; rotation needs
/// the fleet's namespace.
pub fn zitadel_link(args: &ZitadelArgs, namespace: Option<&str>) -> anyhow::Result<Option<ZitadelLink>> {
    let Some(api_url) = args.mgmt_api_url.as_deref().filter(|u| !u.trim().is_empty()) else {
        ensure!(
            args.sa_key.is_none() && args.sa_key_file.is_none(),
            "ZITADEL_MGMT_SA_KEY is set but ZITADEL_MGMT_API_URL is not: set the URL of the Zitadel instance"
        );
        return Ok(None);
    };
    ensure!(
        api_url.starts_with("https://") || api_url.starts_with("http://"),
        "ZITADEL_MGMT_API_URL: “{api_url}” must be an http(s) URL"
    );
    let json = match (&args.sa_key, &args.sa_key_file) {
        (Some(json), _) => json.clone(),
        (None, Some(path)) => std::fs::read_to_string(path)
            .with_context(|| format!("ZITADEL_MGMT_SA_KEY_FILE: reading {}", path.display()))?,
        (None, None) => {
            bail!("ZITADEL_MGMT_API_URL is set: ZITADEL_MGMT_SA_KEY or ZITADEL_MGMT_SA_KEY_FILE is required")
        }
    };
    let key = parse_service_account_key(&json)?;
    let rotation_secret = match (&args.secret_name, namespace) {
        (Some(name), Some(ns)) => Some((ns.to_owned(), name.clone(), args.secret_key.clone())),
        (Some(_), None) => {
            bail!("ZITADEL_MGMT_SECRET_NAME is set: POD_NAMESPACE (the fleet's namespace) is required to find it")
        }
        (None, _) => None,
    };
    Ok(Some(ZitadelLink {
        api_url: api_url.trim_end_matches('/').to_owned(),
        key,
        rotation_secret,
        reconcile_interval: (args.reconcile_interval_ms > 0).then(|| Duration::from_millis(args.reconcile_interval_ms)),
        rotation_grace_hours: args.rotation_grace_hours,
    }))
}

/// How a silo relates to its fleet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SiloLink {
    /// Provisioned by the fleet at this URL.
    FleetManaged {
        /// The fleet's in-cluster URL.
        fleet_url: String,
    },
    /// No fleet.
    Standalone,
}

/// Resolves the silo's mode: explicit, or derived from the fleet URL. A fleet-managed silo needs
/// the URL and its own fleet credential; a standalone one must not name a fleet.
pub fn silo_link(mode: Option<DeploymentMode>, fleet_url: Option<&str>, has_token: bool) -> anyhow::Result<SiloLink> {
    let fleet_url = fleet_url.map(str::trim).filter(|u| !u.is_empty());
    match (mode, fleet_url) {
        (Some(DeploymentMode::Standalone), Some(_)) => {
            bail!("FLEET_INTERNAL_URL must be empty when DEPLOYMENT_MODE is standalone")
        }
        (Some(DeploymentMode::Standalone), None) | (None, None) => Ok(SiloLink::Standalone),
        (Some(DeploymentMode::FleetManaged), None) => {
            bail!("DEPLOYMENT_MODE is fleet-managed: FLEET_INTERNAL_URL is required")
        }
        (_, Some(url)) => {
            ensure!(
                url.starts_with("http://") || url.starts_with("https://"),
                "FLEET_INTERNAL_URL: “{url}” must be an http(s) URL"
            );
            ensure!(
                has_token,
                "a fleet-managed silo needs OPENCRANE_FLEET_TOKEN_FILE (its own credential, minted by the fleet)"
            );
            Ok(SiloLink::FleetManaged { fleet_url: url.trim_end_matches('/').to_owned() })
        }
    }
}

/// The silo operator's namespace: required when `require` is set, so the operator can never run
/// cluster-wide by accident.
pub fn watch_namespace(require: bool, namespace: Option<&str>) -> anyhow::Result<Option<String>> {
    match namespace.map(str::trim).filter(|n| !n.is_empty()) {
        Some(ns) => Ok(Some(ns.to_owned())),
        None if require => {
            bail!("REQUIRE_WATCH_NAMESPACE is true: WATCH_NAMESPACE (the silo's own namespace) is required")
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = r#"{"type":"serviceaccount","keyId":"k1","key":"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n","userId":"u1"}"#;

    fn zitadel(url: Option<&str>, key: Option<&str>, secret: Option<&str>) -> ZitadelArgs {
        ZitadelArgs {
            mgmt_api_url: url.map(String::from),
            sa_key: key.map(String::from),
            sa_key_file: None,
            secret_name: secret.map(String::from),
            secret_key: "service-account-key".into(),
            reconcile_interval_ms: 0,
            rotation_grace_hours: 24,
        }
    }

    #[test]
    fn zitadel_is_optional_but_complete_when_set() {
        assert!(zitadel_link(&zitadel(None, None, None), None).unwrap().is_none());
        let link = zitadel_link(
            &zitadel(Some("https://id.example.com/"), Some(KEY), Some("zitadel-sa")),
            Some("opencrane-system"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(link.api_url, "https://id.example.com");
        assert_eq!(
            link.rotation_secret,
            Some(("opencrane-system".into(), "zitadel-sa".into(), "service-account-key".into()))
        );
        assert_eq!(link.reconcile_interval, None);
        assert!(!format!("{link:?}").contains("BEGIN"), "the key never reaches logs");

        let cases = [
            (
                zitadel(Some("https://id.example.com"), None, None),
                None,
                "ZITADEL_MGMT_SA_KEY or ZITADEL_MGMT_SA_KEY_FILE is required",
            ),
            (zitadel(None, Some(KEY), None), None, "ZITADEL_MGMT_API_URL is not"),
            (zitadel(Some("id.example.com"), Some(KEY), None), None, "must be an http(s) URL"),
            (
                zitadel(Some("https://id.example.com"), Some("{not json"), None),
                None,
                "ZITADEL_MGMT_SA_KEY: the service-account key is not JSON",
            ),
            (
                zitadel(Some("https://id.example.com"), Some(&KEY.replace("serviceaccount", "application")), None),
                None,
                "expected “serviceaccount”",
            ),
            (
                zitadel(Some("https://id.example.com"), Some(&KEY.replace("BEGIN RSA PRIVATE", "BEGIN PUBLIC")), None),
                None,
                "not an RSA private key (its PEM block is labelled “PUBLIC KEY”)",
            ),
            (zitadel(Some("https://id.example.com"), Some(KEY), Some("zitadel-sa")), None::<&str>, "POD_NAMESPACE"),
        ];
        for (args, ns, expected) in cases {
            let err = zitadel_link(&args, ns).unwrap_err().to_string();
            assert!(err.contains(expected), "{expected}: {err}");
            assert!(!err.contains("MIIE"), "the key is never echoed");
        }
    }

    #[test]
    fn silo_mode_is_explicit_or_derived_and_consistent() {
        assert_eq!(silo_link(None, None, false).unwrap(), SiloLink::Standalone);
        assert_eq!(
            silo_link(None, Some("http://fleet:8080/"), true).unwrap(),
            SiloLink::FleetManaged { fleet_url: "http://fleet:8080".into() }
        );
        assert_eq!(silo_link(Some(DeploymentMode::Standalone), Some(" "), false).unwrap(), SiloLink::Standalone);
        for (mode, url, token, expected) in [
            (Some(DeploymentMode::FleetManaged), None, true, "FLEET_INTERNAL_URL is required"),
            (Some(DeploymentMode::Standalone), Some("http://fleet"), true, "must be empty"),
            (None, Some("http://fleet"), false, "OPENCRANE_FLEET_TOKEN_FILE"),
            (None, Some("fleet:8080"), true, "http(s) URL"),
        ] {
            let err = silo_link(mode, url, token).unwrap_err().to_string();
            assert!(err.contains(expected), "{expected}: {err}");
        }
    }

    #[test]
    fn a_required_watch_namespace_must_be_given() {
        assert_eq!(watch_namespace(true, Some("opencrane-acme")).unwrap().as_deref(), Some("opencrane-acme"));
        assert_eq!(watch_namespace(false, Some("")).unwrap(), None);
        assert!(watch_namespace(true, Some(" ")).unwrap_err().to_string().contains("WATCH_NAMESPACE"));
    }
}
