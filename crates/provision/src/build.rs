//! The Kubernetes objects of each provisioning step, built from a [`Desired`] state and the
//! fleet's [`ClusterSettings`] — pure functions, no client. The Kubernetes backend applies them
//! with server-side apply (one field manager); `opencrane provision render` prints them, and the
//! chart tests validate every one of them offline (kubernetes-validate for built-in kinds, the
//! CRD schemas for CloudNativePG, cert-manager and external-dns).
//!
//! Ownership between the pipeline and the silo release: the pipeline owns the namespace, the
//! quota and limit range, the default-deny NetworkPolicy (so the namespace is closed before any
//! workload exists), the database cluster, the DNS record and the vanity certificate; the release
//! adds the allow policies, the workloads and the platform-host certificate, and is told not to
//! render what the pipeline owns (see [`release_values`]).

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::spec::Desired;

/// The field manager of every object the fleet applies.
pub const FIELD_MANAGER: &str = "opencrane-fleet-manager";
/// The silo database cluster's name (the chart's name for it, so its app Secret is where the
/// release looks).
pub const DATABASE_CLUSTER: &str = "opencrane-silo-db";
/// The default-deny policy that closes the namespace.
pub const DEFAULT_DENY: &str = "opencrane-default-deny";
/// The DNS record's name (the chart's name for it).
pub const DNS_ENDPOINT: &str = "opencrane-silo";
/// The RoleBinding of the fleet's installer role in a silo namespace.
pub const INSTALLER_BINDING: &str = "opencrane-fleet-silo-installer";
/// The vanity certificate's name (the chart's name for it).
pub const VANITY_CERTIFICATE: &str = "opencrane-silo-vanity";

/// The fleet's settings the objects depend on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterSettings {
    /// `PLATFORM_BASE_DOMAIN`: silos answer at `<name>.<base>`.
    pub base_domain: String,
    /// The ingress controller's public address; with it, `<name>.<base>` gets a DNS record.
    pub ingress_ip: Option<IpAddr>,
    /// The cert-manager issuer (kind, name) for vanity certificates.
    pub issuer: (String, String),
    /// Database instances per silo.
    pub database_instances: u32,
    /// Database volume size per instance.
    pub database_storage: String,
    /// Storage class, when not the cluster's default.
    pub storage_class: Option<String>,
    /// The fleet-manager's ServiceAccount (namespace, name): bound to the installer role in each
    /// silo namespace.
    pub fleet_service_account: (String, String),
    /// The fleet chart's ClusterRole with what installing a silo release needs inside its
    /// namespace (never bound cluster-wide).
    pub installer_role: String,
    /// The OpenID issuer the silos sign their organisation's users in with (the fleet's Zitadel):
    /// a silo given an organisation's login app cannot start without it.
    pub oidc_issuer_url: Option<String>,
}

impl ClusterSettings {
    /// The defaults for `base_domain`: one 10 Gi instance, the fleet chart's ClusterIssuer, no DNS.
    pub fn new(base_domain: impl Into<String>) -> Self {
        Self {
            base_domain: base_domain.into(),
            ingress_ip: None,
            issuer: ("ClusterIssuer".into(), "opencrane-issuer".into()),
            database_instances: 1,
            database_storage: "10Gi".into(),
            storage_class: None,
            fleet_service_account: ("opencrane-system".into(), "opencrane-fleet-manager".into()),
            installer_role: "opencrane-fleet-silo-installer".into(),
            oidc_issuer_url: None,
        }
    }

    /// The silo's platform host.
    pub fn host(&self, desired: &Desired) -> String {
        format!("{}.{}", desired.name, self.base_domain)
    }
}

/// Labels on every object the pipeline owns.
fn labels(desired: &Desired, component: &str) -> Value {
    json!({
        "app.kubernetes.io/part-of": "opencrane",
        "app.kubernetes.io/managed-by": FIELD_MANAGER,
        "app.kubernetes.io/component": component,
        "opencrane.io/cluster-tenant": desired.name,
    })
}

fn metadata(desired: &Desired, name: &str, component: &str) -> Value {
    json!({ "name": name, "namespace": desired.namespace(), "labels": labels(desired, component) })
}

/// Step 1: the namespace, under the `restricted` Pod Security Standard — the same object
/// `opencrane deploy silo` applies, so the two never disagree.
pub fn namespace(desired: &Desired) -> Value {
    opencrane_deploy::manifest::namespace(&desired.namespace(), "silo", &[(OWNER_LABEL, &desired.name)])
}

/// Step 6, before the release: the Secret holding the silo's own credential for the fleet's
/// internal API (see [`crate::credential`]), under the name the silo chart mounts. Only built
/// when the reconciler minted a new credential; its value is never logged.
pub fn silo_credential_secret(desired: &Desired, credential: &opencrane_deploy::Secret) -> Value {
    let token =
        serde_json::to_value(k8s_openapi::ByteString(credential.expose().as_bytes().to_vec())).unwrap_or_default();
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(desired, opencrane_deploy::silo::FLEET_TOKEN_SECRET, "fleet-credential"),
        "type": "Opaque",
        "data": { "token": token },
    })
}

/// The label that says which customer a silo namespace belongs to.
pub const OWNER_LABEL: &str = "opencrane.io/cluster-tenant";

/// Step 1, with the namespace: the RoleBinding that lets the fleet-manager install the silo
/// release in this namespace — and only here (the installer role is never bound cluster-wide).
pub fn installer_binding(desired: &Desired, settings: &ClusterSettings) -> Value {
    let (sa_namespace, sa_name) = &settings.fleet_service_account;
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata(desired, INSTALLER_BINDING, "rbac"),
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": settings.installer_role },
        "subjects": [{ "kind": "ServiceAccount", "name": sa_name, "namespace": sa_namespace }],
    })
}

/// Step 2: a ResourceQuota from `spec.resources.quota`, and a LimitRange that gives containers
/// without requests a default (a quota on requests refuses pods that declare none). Empty when no
/// quota is declared.
pub fn quota(desired: &Desired) -> Vec<Value> {
    let Some(quota) = &desired.quota else { return Vec::new() };
    let mut hard = serde_json::Map::new();
    if let Some(cpu) = &quota.cpu {
        hard.insert("requests.cpu".into(), json!(cpu));
    }
    if let Some(memory) = &quota.memory {
        hard.insert("requests.memory".into(), json!(memory));
    }
    if let Some(storage) = &quota.storage {
        hard.insert("requests.storage".into(), json!(storage));
    }
    if let Some(pods) = quota.pods {
        hard.insert("pods".into(), json!(pods.to_string()));
    }
    if let Some(gpu) = quota.gpu {
        hard.insert("requests.nvidia.com/gpu".into(), json!(gpu.to_string()));
    }
    vec![
        json!({
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": metadata(desired, "opencrane-quota", "quota"),
            "spec": { "hard": hard },
        }),
        json!({
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": metadata(desired, "opencrane-limits", "quota"),
            "spec": { "limits": [{
                "type": "Container",
                "defaultRequest": { "cpu": "100m", "memory": "128Mi" },
                "default": { "cpu": "1", "memory": "512Mi" },
            }]},
        }),
    ]
}

/// The identity layer's default-deny CiliumNetworkPolicy.
pub const CILIUM_DEFAULT_DENY: &str = "opencrane-identity-default-deny";

/// Step 3: the floor's first brick — deny all ingress and egress of every pod in the namespace.
/// The release's chart adds the allows (intra-silo, ingress controller, fleet API, DNS, egress
/// allow-list); until it does, nothing in the namespace can talk to anything.
pub fn network_policy(desired: &Desired) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(desired, DEFAULT_DENY, "network-policy"),
        "spec": { "podSelector": {}, "policyTypes": ["Ingress", "Egress"] },
    })
}

/// Step 3, on a cluster running Cilium: the identity layer's default deny in the silo's namespace
/// (every endpoint selected, both directions enforced, nothing allowed; the release's
/// CiliumNetworkPolicies add the allows on identities).
pub fn cilium_default_deny(desired: &Desired) -> Value {
    json!({
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNetworkPolicy",
        "metadata": metadata(desired, CILIUM_DEFAULT_DENY, "network-policy"),
        "spec": {
            "description": "Default deny on workload identity; the silo release adds the allows.",
            "endpointSelector": {},
            "ingress": [{}],
            "egress": [{}],
        },
    })
}

/// Step 4: the silo's own PostgreSQL, a CloudNativePG cluster; CNPG writes its app Secret
/// (`<cluster>-app`, key `uri`), which the release's manager reads.
pub fn database(desired: &Desired, settings: &ClusterSettings) -> Value {
    let mut storage = json!({ "size": settings.database_storage });
    if let Some(class) = &settings.storage_class {
        storage["storageClass"] = json!(class);
    }
    json!({
        "apiVersion": "postgresql.cnpg.io/v1",
        "kind": "Cluster",
        "metadata": metadata(desired, DATABASE_CLUSTER, "database"),
        "spec": {
            "instances": settings.database_instances,
            "storage": storage,
            "bootstrap": { "initdb": { "database": "opencrane_silo", "owner": "opencrane" } },
        },
    })
}

/// The Secret CloudNativePG creates for the database's application user.
pub fn database_secret() -> String {
    format!("{DATABASE_CLUSTER}-app")
}

/// Step 5: an A record for `<name>.<base>` when the ingress address is known, and a certificate
/// for the vanity host when one is set. Either may be absent.
pub fn dns(desired: &Desired, settings: &ClusterSettings) -> Vec<Value> {
    let mut objects = Vec::new();
    if let Some(ip) = settings.ingress_ip {
        let record_type = if ip.is_ipv4() { "A" } else { "AAAA" };
        objects.push(json!({
            "apiVersion": "externaldns.k8s.io/v1alpha1",
            "kind": "DNSEndpoint",
            "metadata": metadata(desired, DNS_ENDPOINT, "dns"),
            "spec": { "endpoints": [{
                "dnsName": settings.host(desired),
                "recordType": record_type,
                "recordTTL": 300,
                "targets": [ip.to_string()],
            }]},
        }));
    }
    if let Some(vanity) = &desired.vanity_domain {
        let (kind, name) = &settings.issuer;
        objects.push(json!({
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": metadata(desired, VANITY_CERTIFICATE, "dns"),
            "spec": {
                "secretName": "opencrane-silo-tls-vanity",
                "dnsNames": [vanity],
                "issuerRef": { "name": name, "kind": kind, "group": "cert-manager.io" },
            },
        }));
    }
    objects
}

/// Step 6: the values the silo release gets on top of the fleet-managed profile (a values file,
/// so booleans and numbers keep their types), so that it uses the pipeline's database and leaves
/// the DNS record and the vanity certificate to the pipeline; the organisation's login app with
/// the issuer it belongs to; no replicas while suspended.
pub fn release_values(desired: &Desired, settings: &ClusterSettings) -> Result<Value, MissingSetting> {
    let mut values = json!({
        "clustertenantManager": {
            "database": {
                "cnpg": { "enabled": false },
                "existingSecret": database_secret(),
                "secretKey": "uri",
            },
        },
        "certManager": { "vanityCertificate": false },
    });
    if let Some(vanity) = &desired.vanity_domain {
        values["clusterTenant"]["vanityDomain"] = json!(vanity);
    }
    if let Some(identity) = &desired.identity {
        // The organisation's own login app: the silo signs in only this organisation's users, at
        // the issuer the app lives in (without it the manager refuses to start).
        let issuer = settings.oidc_issuer_url.as_deref().filter(|i| !i.trim().is_empty()).ok_or(MissingSetting {
            setting: "OIDC_ISSUER_URL",
            why: "the customer has a login app in Zitadel, and its silo signs people in at the issuer that app lives in",
        })?;
        values["clusterTenant"]["zitadel"] = json!({ "clientId": identity.client_id, "orgId": identity.org_id });
        values["clustertenantManager"]["oidc"] = json!({ "issuerUrl": issuer });
    }
    if desired.suspended {
        values["clustertenantManager"]["replicas"] = json!(0);
    }
    Ok(values)
}

/// A fleet setting a silo's release needs and the fleet does not have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{setting} is not set on the fleet-manager, and {why}")]
pub struct MissingSetting {
    /// The fleet-manager's variable.
    pub setting: &'static str,
    /// Why the silo needs it.
    pub why: &'static str,
}

/// The annotation on the silo manager's Deployment that records what the release was rendered
/// from ([`release_fingerprint`]).
pub const RELEASE_FINGERPRINT: &str = "opencrane.io/release-fingerprint";

/// The fingerprint of a silo release: the chart's content (`chart_digest`, see
/// [`chart_digest`]) and every input of the install (values, image tag, host, fleet link,
/// Cilium). A fleet whose chart or settings changed, or a customer whose values did, gets a new
/// one, and the release step upgrades the release.
pub fn release_fingerprint(chart_digest: &str, inputs: &Value) -> String {
    use sha2::{Digest as _, Sha256};
    let mut hash = Sha256::new();
    hash.update(chart_digest.as_bytes());
    hash.update([0]);
    hash.update(inputs.to_string().as_bytes());
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256-{hex}")
}

/// The SHA-256 of every file under the chart directory `dir` (names and contents, in name
/// order): what Helm renders from, so any edit to a template, a profile or the chart's version
/// changes it.
pub fn chart_digest(dir: &std::path::Path) -> std::io::Result<String> {
    use sha2::{Digest as _, Sha256};
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() { files(&path, out)? } else { out.push(path) }
        }
        Ok(())
    }
    let mut paths = Vec::new();
    files(dir, &mut paths)?;
    paths.sort();
    let mut hash = Sha256::new();
    for path in paths {
        let relative = path.strip_prefix(dir).unwrap_or(&path);
        hash.update(relative.to_string_lossy().as_bytes());
        hash.update([0]);
        hash.update(std::fs::read(&path)?);
        hash.update([0]);
    }
    Ok(hash.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Every object the pipeline applies itself, in step order (for `opencrane provision render`
/// and the offline validation); `cilium`: as on a cluster running Cilium.
pub fn all_objects(desired: &Desired, settings: &ClusterSettings, cilium: bool) -> Vec<Value> {
    let mut objects = vec![namespace(desired), installer_binding(desired, settings)];
    objects.extend(quota(desired));
    objects.push(network_policy(desired));
    if cilium {
        objects.push(cilium_default_deny(desired));
    }
    objects.push(database(desired, settings));
    objects.extend(dns(desired, settings));
    objects
}

#[cfg(test)]
mod tests {
    use super::*;
    use opencrane_types::Quota;

    fn desired() -> Desired {
        Desired::example()
    }

    fn kinds(objects: &[Value]) -> Vec<&str> {
        objects.iter().map(|o| o["kind"].as_str().unwrap_or_default()).collect()
    }

    #[test]
    fn the_namespace_is_restricted_and_labelled() {
        let ns = namespace(&desired());
        assert_eq!(ns["metadata"]["name"], "opencrane-acme");
        let labels = &ns["metadata"]["labels"];
        assert_eq!(labels["pod-security.kubernetes.io/enforce"], "restricted");
        assert_eq!(labels["opencrane.io/cluster-tenant"], "acme");
        assert_eq!(labels["app.kubernetes.io/part-of"], "opencrane");
    }

    #[test]
    fn the_installer_role_is_bound_to_the_fleet_in_the_silo_namespace_only() {
        let binding = installer_binding(&desired(), &ClusterSettings::new("example.com"));
        assert_eq!(binding["metadata"]["namespace"], "opencrane-acme");
        assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
        assert_eq!(binding["roleRef"]["name"], "opencrane-fleet-silo-installer");
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": "opencrane-fleet-manager", "namespace": "opencrane-system"}])
        );
    }

    #[test]
    fn quota_objects_exist_only_when_declared_and_carry_exactly_the_declared_values() {
        assert!(quota(&desired()).is_empty());
        let d = Desired {
            quota: Some(Quota { cpu: Some("8".into()), pods: Some(100), gpu: Some(2), ..Quota::default() }),
            ..desired()
        };
        let objects = quota(&d);
        assert_eq!(kinds(&objects), ["ResourceQuota", "LimitRange"]);
        assert_eq!(
            objects[0]["spec"]["hard"],
            json!({"requests.cpu": "8", "pods": "100", "requests.nvidia.com/gpu": "2"})
        );
        assert!(objects.iter().all(|o| o["metadata"]["namespace"] == "opencrane-acme"));
    }

    #[test]
    fn the_floor_denies_everything_in_both_directions() {
        let np = network_policy(&desired());
        assert_eq!(np["spec"], json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}));
    }

    #[test]
    fn dns_needs_an_ingress_address_and_the_vanity_certificate_a_vanity_domain() {
        let mut settings = ClusterSettings::new("example.com");
        assert!(dns(&desired(), &settings).is_empty());
        settings.ingress_ip = Some("203.0.113.7".parse().unwrap());
        let with_vanity = Desired { vanity_domain: Some("portal.acme.io".into()), ..desired() };
        let objects = dns(&with_vanity, &settings);
        assert_eq!(kinds(&objects), ["DNSEndpoint", "Certificate"]);
        assert_eq!(objects[0]["spec"]["endpoints"][0]["dnsName"], "acme.example.com");
        assert_eq!(objects[0]["spec"]["endpoints"][0]["targets"], json!(["203.0.113.7"]));
        assert_eq!(objects[1]["spec"]["dnsNames"], json!(["portal.acme.io"]));
        settings.ingress_ip = Some("2001:db8::7".parse().unwrap());
        assert_eq!(dns(&desired(), &settings)[0]["spec"]["endpoints"][0]["recordType"], "AAAA");
    }

    #[test]
    fn the_release_uses_the_pipelines_database_and_scales_to_zero_when_suspended() {
        let settings = ClusterSettings::new("example.com");
        let values = release_values(&desired(), &settings).unwrap();
        assert_eq!(values["clustertenantManager"]["database"]["existingSecret"], "opencrane-silo-db-app");
        assert_eq!(values["clustertenantManager"]["database"]["cnpg"]["enabled"], false);
        assert!(values["clustertenantManager"].get("replicas").is_none());
        let suspended = release_values(&Desired { suspended: true, ..desired() }, &settings).unwrap();
        assert_eq!(suspended["clustertenantManager"]["replicas"], 0);
        assert!(values.get("clusterTenant").is_none(), "no vanity host, no organisation yet");
    }

    #[test]
    fn the_release_carries_the_organisations_login_app_and_its_issuer_next_to_the_vanity_host() {
        let identity = crate::spec::SiloIdentity { org_id: "3001".into(), client_id: "3004@opencrane".into() };
        let with_identity =
            Desired { vanity_domain: Some("portal.acme.io".into()), identity: Some(identity), ..desired() };
        let mut settings = ClusterSettings::new("example.com");
        // A silo with a login app but no issuer cannot start: the fleet refuses to render it.
        let missing = release_values(&with_identity, &settings).unwrap_err();
        assert_eq!(missing.setting, "OIDC_ISSUER_URL");
        assert!(missing.to_string().starts_with("OIDC_ISSUER_URL is not set on the fleet-manager"), "{missing}");
        settings.oidc_issuer_url = Some("https://login.example.com".into());
        let values = release_values(&with_identity, &settings).unwrap();
        assert_eq!(
            values["clusterTenant"],
            json!({ "vanityDomain": "portal.acme.io", "zitadel": { "clientId": "3004@opencrane", "orgId": "3001" } })
        );
        assert_eq!(values["clustertenantManager"]["oidc"], json!({ "issuerUrl": "https://login.example.com" }));
    }

    #[test]
    fn the_fingerprint_follows_the_chart_and_every_input() {
        let inputs = json!({ "values": release_values(&desired(), &ClusterSettings::new("example.com")).unwrap() });
        let base = release_fingerprint("chart-a", &inputs);
        assert!(base.starts_with("sha256-") && base.len() == 71, "{base}");
        assert_eq!(base, release_fingerprint("chart-a", &inputs), "stable");
        assert_ne!(base, release_fingerprint("chart-b", &inputs), "a new chart is a new release");
        let suspended = json!({ "values": release_values(&Desired { suspended: true, ..desired() }, &ClusterSettings::new("example.com")).unwrap() });
        assert_ne!(base, release_fingerprint("chart-a", &suspended), "new values are a new release");
        let charts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../charts/opencrane-silo");
        let digest = chart_digest(&charts).unwrap();
        assert_eq!(digest, chart_digest(&charts).unwrap());
        assert_eq!(digest.len(), 64);
    }

    #[test]
    fn every_object_lives_in_the_silo_namespace_or_is_it() {
        let mut settings = ClusterSettings::new("example.com");
        settings.ingress_ip = Some("203.0.113.7".parse().unwrap());
        let d = Desired {
            vanity_domain: Some("portal.acme.io".into()),
            quota: Some(Quota { cpu: Some("1".into()), ..Quota::default() }),
            ..desired()
        };
        let objects = all_objects(&d, &settings, true);
        assert_eq!(
            kinds(&objects),
            [
                "Namespace",
                "RoleBinding",
                "ResourceQuota",
                "LimitRange",
                "NetworkPolicy",
                "CiliumNetworkPolicy",
                "Cluster",
                "DNSEndpoint",
                "Certificate"
            ]
        );
        for o in &objects[1..] {
            assert_eq!(o["metadata"]["namespace"], "opencrane-acme", "{o}");
            assert_eq!(o["metadata"]["labels"]["app.kubernetes.io/managed-by"], FIELD_MANAGER);
        }
    }
}
