//! Kubernetes mode against the fake API server of `opencrane-fake-kube` (no kube-apiserver can
//! run here; the fake implements list, server-side apply, merge patches, the status subresource
//! and delete as the API documents them, each pinned by its conformance tests) and a real silo
//! database: Tenant resources follow the user rows, drift is reported and repaired, the runtime's
//! phase comes back, `kubectl apply`d resources are adopted and deleted users' resources go.

use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use opencrane_crd::tenant::{Tenant, TenantSpec};
use opencrane_fake_kube::FakeApiServer;
use opencrane_portal::runtime::{MANAGED_LABEL, TenantRuntime};
use opencrane_silo_db::tenants::{self, TenantFields};
use serde_json::json;
use sqlx::PgPool;

const NS: &str = "opencrane-acme";

fn client(url: &str) -> Client {
    Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap()
}

async fn user(pool: &PgPool, name: &str, team: Option<&str>) {
    let email = format!("{name}@acme.test");
    let subject = format!("s-{name}");
    let fields = TenantFields {
        display_name: name,
        email: &email,
        subject: &subject,
        team,
        policy_ref: None,
        cpu: Some("500m"),
        memory: None,
    };
    tenants::insert(pool, name, &fields, "admin").await.unwrap();
}

/// A fake API server with the silo's namespace, and a client for it.
async fn cluster_with_namespace() -> (FakeApiServer, Client) {
    let server = FakeApiServer::start().await.unwrap();
    let kube = client(&server.url());
    let namespace = k8s_openapi::api::core::v1::Namespace {
        metadata: kube::api::ObjectMeta { name: Some(NS.into()), ..Default::default() },
        ..Default::default()
    };
    Api::<k8s_openapi::api::core::v1::Namespace>::all(kube.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    (server, kube)
}

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn tenant_resources_follow_the_rows_and_drift_comes_back(pool: PgPool) {
    let (server, kube) = cluster_with_namespace().await;
    let api: Api<Tenant> = Api::namespaced(kube.clone(), NS);
    let runtime = TenantRuntime::new(kube, NS, pool.clone(), "acme");
    user(&pool, "ana", Some("eng")).await;
    user(&pool, "bob", None).await;
    tenants::set_suspended(&pool, "bob", true).await.unwrap();

    let report = runtime.pass().await.unwrap();
    assert_eq!(report.applied, ["ana", "bob"]);
    let ana = api.get("ana").await.unwrap();
    assert_eq!((ana.spec.email.as_str(), ana.spec.team.as_deref()), ("ana@acme.test", Some("eng")));
    assert_eq!(ana.spec.cluster_tenant_ref.as_deref(), Some("acme"));
    assert!(ana.metadata.labels.unwrap().contains_key(MANAGED_LABEL));
    assert!(api.get("bob").await.unwrap().spec.suspended);
    assert_eq!(runtime.pass().await.unwrap(), Default::default(), "a converged pass writes nothing");

    // `kubectl edit` behind the portal's back: reported on the row, and repaired.
    let edit = json!({ "spec": { "team": "sales", "suspended": true } });
    api.patch("ana", &PatchParams::default(), &Patch::Merge(&edit)).await.unwrap();
    let report = runtime.pass().await.unwrap();
    assert_eq!(report.drift.len(), 1, "{report:?}");
    assert!(report.drift[0].1.contains("team is “sales”, the portal says “eng”"), "{report:?}");
    assert!(report.drift[0].1.contains("suspended"), "{report:?}");
    assert_eq!(tenants::resource_drift(&pool).await.unwrap().len(), 1, "the page can show it");
    let repaired = api.get("ana").await.unwrap();
    assert_eq!((repaired.spec.team.as_deref(), repaired.spec.suspended), (Some("eng"), false));
    runtime.pass().await.unwrap();
    assert!(tenants::resource_drift(&pool).await.unwrap().is_empty(), "in step again");

    // The runtime's phase comes back into the row.
    let status = json!({ "status": { "phase": "Running" } });
    api.patch_status("ana", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    runtime.pass().await.unwrap();
    assert_eq!(tenants::get(&pool, "ana").await.unwrap().unwrap().phase.as_deref(), Some("Running"));

    // A resource applied with kubectl becomes a user; a user deleted in the portal loses theirs.
    let applied = Tenant::new(
        "cy",
        TenantSpec {
            display_name: "Cy".into(),
            email: "cy@acme.test".into(),
            subject: Some("s-cy".into()),
            team: None,
            openclaw_image: None,
            openclaw_version: None,
            policy_ref: None,
            cluster_tenant_ref: None,
            monthly_budget_usd: None,
            resources: None,
            mcp_policy: None,
            channels: Vec::new(),
            config_overrides: None,
            suspended: false,
        },
    );
    api.create(&PostParams::default(), &applied).await.unwrap();
    tenants::delete(&pool, "bob").await.unwrap();
    let report = runtime.pass().await.unwrap();
    assert_eq!(
        (report.adopted.clone(), report.deleted.clone()),
        (vec!["cy".to_owned()], vec!["bob".to_owned()]),
        "{report:?}"
    );
    assert_eq!(tenants::get(&pool, "cy").await.unwrap().unwrap().origin, "resource");
    assert!(api.get_opt("bob").await.unwrap().is_none());
    assert!(api.get("cy").await.unwrap().metadata.labels.unwrap().contains_key(MANAGED_LABEL), "now the portal's");

    // A resource that cannot be a user (its e-mail is taken) is left alone, not deleted.
    let mut clash = applied.clone();
    clash.metadata.name = Some("cy2".into());
    clash.spec.subject = Some("s-cy2".into());
    api.create(&PostParams::default(), &clash).await.unwrap();
    let report = runtime.pass().await.unwrap();
    assert!(report.adopted.is_empty() && report.deleted.is_empty(), "{report:?}");
    assert!(api.get_opt("cy2").await.unwrap().is_some());

    // Access policies follow their rows the same way.
    let selector = json!({ "team": "eng" });
    let egress = json!([{ "cidr": "10.20.0.0/16", "ports": [443] }]);
    let fields = opencrane_silo_db::policies::PolicyFields {
        description: "Engineers",
        tenant_selector: &selector,
        allowed_domains: &["*.example.com".to_owned()],
        denied_domains: &[],
        egress_rules: &egress,
    };
    opencrane_silo_db::policies::insert(&pool, "eng", &fields).await.unwrap();
    let report = runtime.pass().await.unwrap();
    assert_eq!(report.applied, ["policy eng"], "{report:?}");
    let policies: Api<opencrane_crd::access_policy::AccessPolicy> = Api::namespaced(client(&server.url()), NS);
    let eng = policies.get("eng").await.unwrap();
    let domains = eng.spec.domains.clone().unwrap();
    assert_eq!((domains.allow, domains.default_deny), (vec!["*.example.com".to_owned()], true));
    assert_eq!(eng.spec.tenant_selector.clone().unwrap().match_labels["team"], "eng");
    assert_eq!(eng.spec.egress_rules[0].cidr, "10.20.0.0/16");
    assert_eq!(runtime.pass().await.unwrap(), Default::default(), "converged");
    // `kubectl edit` of a policy: repaired, and how it differed kept for GET /policies/drift.
    let widened = json!({ "spec": { "domains": { "allow": ["*"], "deny": [], "defaultDeny": false } } });
    policies.patch("eng", &PatchParams::default(), &Patch::Merge(&widened)).await.unwrap();
    let report = runtime.pass().await.unwrap();
    assert_eq!(report.drift, [("policy eng".to_owned(), "domains was changed on the resource".to_owned())]);
    assert_eq!(
        opencrane_silo_db::policies::resource_drift(&pool).await.unwrap(),
        [("eng".to_owned(), "domains was changed on the resource".to_owned())]
    );
    assert_eq!(policies.get("eng").await.unwrap().spec.domains.unwrap().allow, ["*.example.com"], "repaired");
    assert_eq!(runtime.pass().await.unwrap(), Default::default(), "converged again");
    assert!(opencrane_silo_db::policies::resource_drift(&pool).await.unwrap().is_empty(), "in step again");
    opencrane_silo_db::policies::delete(&pool, "eng").await.unwrap();
    let report = runtime.pass().await.unwrap();
    assert_eq!(report.deleted, ["policy eng"]);
    assert!(policies.get_opt("eng").await.unwrap().is_none());
}

/// On a cluster running Cilium the pass also keeps the MCP gateway's egress policy: the floor
/// while no policy governs everybody, the policies' domains once one does, back to the floor
/// when it goes; a converged pass writes nothing. Without Cilium it never touches that API.
#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn on_cilium_the_gateway_egress_follows_the_access_policies(pool: PgPool) {
    use opencrane_portal::egress::{ACCESS_EGRESS, CidrBlock};
    let (server, kube) = cluster_with_namespace().await;
    let path = format!("/apis/cilium.io/v2/namespaces/{NS}/ciliumnetworkpolicies/{ACCESS_EGRESS}");

    // Without Cilium: nothing of it.
    let plain = TenantRuntime::new(kube.clone(), NS, pool.clone(), "acme");
    plain.pass().await.unwrap();
    assert!(server.requests().iter().all(|(_, p)| !p.contains("cilium.io")), "no Cilium API call without Cilium");

    let floor = vec![CidrBlock { cidr: "0.0.0.0/0".into(), except: vec!["10.0.0.0/8".into()] }];
    let runtime = TenantRuntime::new(kube.clone(), NS, pool.clone(), "acme").with_cilium(kube, floor);
    let report = runtime.pass().await.unwrap();
    assert_eq!(report.applied, [format!("egress {ACCESS_EGRESS}")]);
    let applied = server.object(&path).unwrap();
    assert_eq!(applied["spec"]["endpointSelector"]["matchLabels"]["app.kubernetes.io/component"], "mcp-gateway");
    assert_eq!(applied["spec"]["egress"][0]["toCIDRSet"][0]["cidr"], "0.0.0.0/0");
    assert_eq!(runtime.pass().await.unwrap(), Default::default(), "converged: nothing written");

    let everyone = json!({});
    let egress = json!([]);
    let fields = opencrane_silo_db::policies::PolicyFields {
        description: "Everybody",
        tenant_selector: &everyone,
        allowed_domains: &["github.com".to_owned(), "*.atlassian.net".to_owned()],
        denied_domains: &["gist.github.com".to_owned()],
        egress_rules: &egress,
    };
    opencrane_silo_db::policies::insert(&pool, "everyone", &fields).await.unwrap();
    let report = runtime.pass().await.unwrap();
    assert!(report.applied.contains(&format!("egress {ACCESS_EGRESS}")), "{report:?}");
    let narrowed = server.object(&path).unwrap();
    assert_eq!(
        narrowed["spec"]["egress"][0]["toFQDNs"],
        json!([{"matchPattern": "*.atlassian.net"}, {"matchName": "github.com"}])
    );
    assert_eq!(runtime.pass().await.unwrap(), Default::default());

    opencrane_silo_db::policies::delete(&pool, "everyone").await.unwrap();
    runtime.pass().await.unwrap();
    assert!(server.object(&path).unwrap()["spec"]["egress"][0].get("toCIDRSet").is_some(), "back to the floor");
}
