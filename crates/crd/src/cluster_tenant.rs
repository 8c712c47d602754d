//! `ClusterTenant`: one customer organisation. Cluster-scoped; its silo lives in the namespace
//! `opencrane-<name>`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The customer vocabulary's enums are the resource's enums (one spelling for API, database and
/// CRD).
pub use opencrane_types::{ComputeMode, IsolationTier, Phase, Quota, TerminationPolicy};

/// A customer organisation and the desired state of its silo.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "opencrane.io",
    version = "v1alpha1",
    kind = "ClusterTenant",
    plural = "clustertenants",
    shortname = "ct",
    category = "opencrane",
    status = "ClusterTenantStatus",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Display Name","type":"string","jsonPath":".spec.displayName"}"#,
    printcolumn = r#"{"name":"Tier","type":"string","jsonPath":".spec.isolationTier"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Namespace","type":"string","jsonPath":".status.boundNamespace"}"#,
    printcolumn = r#"{"name":"Retention","type":"string","jsonPath":".spec.terminationPolicy","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTenantSpec {
    /// Human-readable name of the organisation.
    #[schemars(length(min = 1))]
    pub display_name: String,
    /// A host name the customer owns and points at the platform (e.g. portal.acme.com); the silo
    /// answers on it besides `<name>.<base domain>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = r"^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,}$"))]
    pub vanity_domain: Option<String>,
    /// How strongly the customer is separated from others.
    #[serde(default)]
    pub isolation_tier: IsolationTier,
    /// Where the customer's workloads run.
    #[serde(default)]
    pub compute: Compute,
    /// Limits for the silo's namespace.
    #[serde(default)]
    pub resources: Resources,
    /// The organisation's identifiers in Zitadel (public ids the silo's sign-in uses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zitadel: Option<Zitadel>,
    /// The person who owns the organisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// Scale the silo's workloads to zero and block its sign-ins; clearing it restores them.
    #[serde(default)]
    pub suspended: bool,
    /// What happens to the silo's database when the ClusterTenant is deleted.
    #[serde(default)]
    pub termination_policy: TerminationPolicy,
    /// Pin of the silo chart/application version; unset follows the fleet's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silo_version: Option<String>,
}

/// Compute placement.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Compute {
    /// `shared` or `dedicated`.
    #[serde(default)]
    pub mode: ComputeMode,
    /// The node pool (value of the `opencrane.io/node-pool` node label) for dedicated compute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_pool: Option<String>,
}

/// Namespace limits.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Resources {
    /// A ResourceQuota for the silo namespace; none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<Quota>,
}

/// Zitadel identifiers of the organisation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Zitadel {
    /// Client id of the organisation's login app (public PKCE client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Organisation id (used in the org-restricting sign-in scope).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org_id: Option<String>,
    /// Redirect URI registered for the login app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

/// The owner.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Owner {
    /// The owner's IdP subject.
    #[schemars(length(min = 1))]
    pub subject: String,
    /// The owner's email (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// Observed state, written by the fleet-manager's controller only.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTenantStatus {
    /// Lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// `Ready` (True only when every step holds: what `kubectl wait --for=condition=Ready` and
    /// GitOps health checks read) and one condition per provisioning step (type, status, reason,
    /// message, lastTransitionTime, observedGeneration).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The namespace the silo is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_namespace: Option<String>,
    /// Where the silo's console answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silo_url: Option<String>,
    /// Which provisioner serves the tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioner: Option<String>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// A sentence about the current state, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What `Retain` kept after deletion began (e.g. the database cluster and its volumes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retained: Vec<String>,
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{api::core::v1::ResourceQuotaSpec, apimachinery::pkg::api::resource::Quantity};
    use opencrane_types::rules;

    use super::*;

    /// The Kubernetes quantity grammar as apimachinery documents it, written independently of
    /// `rules::quantity` (with the parser's `n` and `u` suffixes).
    fn grammar() -> regex::Regex {
        regex::Regex::new(
            r"^([+-]?)([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$",
        )
        .unwrap()
    }

    proptest::proptest! {
        /// Generated strings: the vocabulary's rule accepts exactly what the grammar generates
        /// (minus negative amounts), and an accepted value round-trips unchanged through the
        /// ClusterTenant resource and through `Quantity` in a ResourceQuota.
        #[test]
        fn the_quantity_rule_is_the_kubernetes_grammar(
            value in proptest::prop_oneof![
                r"[+-]?[0-9.]{0,4}(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|K|i|e|E|[eE][+-]?[0-9]{0,3}|x| |\.)?",
                r"[0-9.+eEKMGTPimnuk -]{0,10}",
            ]
        ) {
            let captures = grammar().captures(&value);
            let negative = |c: &regex::Captures<'_>| &c[1] == "-" && c[2].chars().any(|d| matches!(d, '1'..='9'));
            let expected = captures.as_ref().is_some_and(|c| !negative(c));
            proptest::prop_assert_eq!(rules::quantity(&value).is_ok(), expected, "{:?}", value);
            if expected {
                let spec: ClusterTenantSpec = serde_json::from_value(serde_json::json!({
                    "displayName": "Acme", "resources": {"quota": {"cpu": value, "memory": value}}
                })).unwrap();
                let back: ClusterTenantSpec = serde_yaml_ng::from_str(&serde_yaml_ng::to_string(&spec).unwrap()).unwrap();
                proptest::prop_assert_eq!(back.resources.quota.and_then(|q| q.cpu), Some(value.clone()));
                let quota = ResourceQuotaSpec {
                    hard: Some([("requests.cpu".to_owned(), Quantity(value.clone()))].into()),
                    ..Default::default()
                };
                let json = serde_json::to_value(&quota).unwrap();
                let parsed: ResourceQuotaSpec = serde_json::from_value(json).unwrap();
                proptest::prop_assert_eq!(&parsed.hard.unwrap()["requests.cpu"].0, &value);
            }
        }
    }
}
