//! One vocabulary end to end: a value the API accepts never fails later in provisioning, and a
//! value provisioning refuses is refused by the API up front (the reported defect: `+4` answered
//! 201 and then failed the quota step).

use app::model::fleet::cluster_tenant::{
    ClusterTenantCreateRequest, ComputeMode, ComputeRequest, IsolationTier, Quota, Resources, ValidationContext,
    validate,
};
use opencrane_provision::spec::Desired;

fn request(cpu: &str) -> ClusterTenantCreateRequest {
    ClusterTenantCreateRequest {
        name: "acme".into(),
        display_name: "Acme".into(),
        isolation_tier: Some(IsolationTier::Shared),
        compute: Some(ComputeRequest { mode: Some(ComputeMode::Shared), node_pool: None }),
        resources: Some(Resources {
            quota: Some(Quota { cpu: Some(cpu.into()), memory: Some(cpu.into()), ..Default::default() }),
        }),
        ..Default::default()
    }
}

/// Whether provisioning accepts the quota values, through the resource an API create writes.
fn provisioning_accepts(cpu: Option<&str>, memory: Option<&str>) -> bool {
    let spec: opencrane_crd::ClusterTenantSpec = serde_json::from_value(serde_json::json!({
        "displayName": "Acme",
        "resources": {"quota": {"cpu": cpu, "memory": memory}},
    }))
    .unwrap();
    Desired::from_resource("acme", &spec, 1).is_ok()
}

#[test]
fn the_api_accepts_exactly_what_provisioning_accepts() {
    let ctx = ValidationContext { base_domain: Some("example.com".into()), ..Default::default() };
    // The reported values, then every string up to length 3 over the grammar's alphabet.
    let alphabet = ["0", "4", ".", "+", "-", "e", "E", "m", "n", "u", "k", "K", "G", "i", " "];
    let mut values: Vec<String> =
        ["+4", "100n", "1.", ".5", "1e3", "-1", "-0", "4 Gi", "1K"].map(String::from).to_vec();
    let mut frontier = vec![String::new()];
    for _ in 0..3 {
        frontier = frontier.iter().flat_map(|v| alphabet.iter().map(move |c| format!("{v}{c}"))).collect();
        values.extend(frontier.iter().cloned());
    }
    let mut accepted = 0;
    for value in &values {
        match validate(&request(value), &ctx) {
            // What the API stores (trimmed; blank = not set) provisions.
            Ok(spec) => {
                let stored = (spec.quota.cpu.as_deref(), spec.quota.memory.as_deref());
                assert!(provisioning_accepts(stored.0, stored.1), "{value:?} is accepted but {stored:?} fails later");
                accepted += 1;
            }
            // What the API refuses, provisioning refuses too (a resource applied with kubectl).
            Err(errors) => assert!(!provisioning_accepts(Some(value), Some(value)), "{value:?}: {errors:?}"),
        }
        // Values without surrounding blanks: the same verdict both ways.
        if value.trim() == value {
            let api = validate(&request(value), &ctx).is_ok();
            assert_eq!(api, provisioning_accepts(Some(value), Some(value)), "{value:?}: the API says {api}");
        }
    }
    assert!(accepted > 100, "the generator must reach accepted values too ({accepted})");
    assert!(validate(&request("+4"), &ctx).is_ok() && provisioning_accepts(Some("+4"), None));
}
