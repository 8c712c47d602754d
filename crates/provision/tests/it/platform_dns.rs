//! The platform's issuer against the fake API server (`opencrane-fake-kube`, built from the
//! Kubernetes API documentation; no kube-apiserver or cert-manager runs here): what is written
//! where, what a second save keeps, what the answer shows, and when the fleet refuses to write.
//! cert-manager's part (the issuer's Ready condition) is played by writing the status
//! subresource, as cert-manager does.

use std::time::Duration;

use chrono::{TimeZone as _, Utc};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams},
};
use opencrane_fake_kube::FakeApiServer;
use opencrane_provision::{
    kubernetes::client_for,
    platform_dns::{Error, IssuerRequest, IssuerSettings, cluster::PlatformDns},
};
use serde_json::json;

fn settings(managed: bool) -> IssuerSettings {
    IssuerSettings {
        issuer_name: "opencrane-issuer".into(),
        cert_manager_namespace: "cert-manager".into(),
        managed,
        ingress_class: Some("nginx".into()),
    }
}

async fn cluster(with_namespace: bool) -> (FakeApiServer, kube::Client) {
    let fake = FakeApiServer::start().await.unwrap();
    let client = client_for(&fake.url(), Duration::from_secs(2)).unwrap();
    if with_namespace {
        let ns: k8s_openapi::api::core::v1::Namespace =
            serde_json::from_value(json!({"metadata": {"name": "cert-manager"}})).unwrap();
        Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    (fake, client)
}

fn cloudflare(token: Option<&str>) -> IssuerRequest {
    serde_json::from_value(json!({
        "provider": "cloudflare", "zone": "example.com", "email": "ops@example.com", "apiToken": token,
    }))
    .unwrap()
}

fn issuers(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cert-manager.io", "v1", "ClusterIssuer"),
        "clusterissuers",
    );
    Api::all_with(client.clone(), &resource)
}

#[tokio::test]
async fn the_issuer_and_its_secret_are_written_kept_and_read_back_without_the_token() {
    let (fake, client) = cluster(true).await;
    let dns = PlatformDns::new(client.clone(), settings(true));
    assert!(!dns.status().await.unwrap().configured, "nothing yet");

    let first = Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap();
    let summary = dns.configure(&cloudflare(Some("cf-secret-token")), first).await.unwrap();
    assert!(summary.configured && summary.editable && summary.token_set);
    assert_eq!(summary.provider.as_deref(), Some("cloudflare"));
    assert_eq!(summary.zone.as_deref(), Some("example.com"));
    assert_eq!(summary.token_changed_at, Some(first));
    assert_eq!(summary.ready, None, "cert-manager has not reported yet");
    assert!(!serde_json::to_string(&summary).unwrap().contains("cf-secret-token"));

    let secret = fake.object("/api/v1/namespaces/cert-manager/secrets/opencrane-dns01-cloudflare").unwrap();
    assert_eq!(secret["data"]["api-token"], "Y2Ytc2VjcmV0LXRva2Vu", "base64 of the token");
    assert_eq!(secret["metadata"]["labels"]["app.kubernetes.io/managed-by"], "opencrane-fleet-manager");
    let issuer = fake.object("/apis/cert-manager.io/v1/clusterissuers/opencrane-issuer").unwrap();
    let solver = &issuer["spec"]["acme"]["solvers"][0];
    assert_eq!(solver["selector"]["dnsZones"], json!(["example.com"]));
    assert_eq!(solver["dns01"]["cloudflare"]["apiTokenSecretRef"]["name"], "opencrane-dns01-cloudflare");
    // Both written with server-side apply (a PATCH with the apply content type).
    let applied: Vec<String> = fake.requests().into_iter().filter(|(m, _)| m == "PATCH").map(|(_, p)| p).collect();
    assert!(applied.iter().any(|p| p.contains("secrets/opencrane-dns01-cloudflare") && p.contains("fieldManager")));
    assert!(applied.iter().any(|p| p.contains("clusterissuers/opencrane-issuer") && p.contains("fieldManager")));

    // cert-manager reports; the summary shows its condition.
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "ErrRegisterACMEAccount", "message": "Failed to register ACME account"}]}});
    issuers(&client).patch_status("opencrane-issuer", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    let summary = dns.status().await.unwrap();
    assert_eq!(summary.ready, Some(false));
    assert_eq!(summary.message.as_deref(), Some("ErrRegisterACMEAccount: Failed to register ACME account"));

    // Saved again without a token (a new e-mail): the token on file stays, and so does its date.
    let later = Utc.with_ymd_and_hms(2026, 12, 2, 9, 0, 0).unwrap();
    let mut again = cloudflare(None);
    again.email = Some("certs@example.com".into());
    let summary = dns.configure(&again, later).await.unwrap();
    assert_eq!(summary.email.as_deref(), Some("certs@example.com"));
    assert!(summary.token_set);
    assert_eq!(summary.token_changed_at, Some(first), "the token was not rewritten");
    let issuer = fake.object("/apis/cert-manager.io/v1/clusterissuers/opencrane-issuer").unwrap();
    assert_eq!(issuer["spec"]["acme"]["solvers"][0]["dns01"]["cloudflare"]["apiTokenSecretRef"]["key"], "api-token");
}

#[tokio::test]
async fn the_fleet_writes_only_an_issuer_it_manages_and_says_why_not() {
    let (fake, client) = cluster(true).await;
    // The chart owns the issuer (createIssuer is not `fleet`): shown, never written.
    let dns = PlatformDns::new(client.clone(), settings(false));
    let err = dns.configure(&cloudflare(Some("t")), Utc::now()).await.unwrap_err();
    assert!(matches!(&err, Error::NotManaged(m) if m.contains("certManager.createIssuer=fleet")), "{err:?}");
    assert!(fake.object("/api/v1/namespaces/cert-manager/secrets/opencrane-dns01-cloudflare").is_none());

    // A Helm-owned issuer is left alone even when the fleet is told it manages one.
    let helm = json!({"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
        "metadata": {"name": "opencrane-issuer", "labels": {"app.kubernetes.io/managed-by": "Helm"}},
        "spec": {"selfSigned": {}}});
    issuers(&client).create(&PostParams::default(), &serde_json::from_value(helm).unwrap()).await.unwrap();
    let dns = PlatformDns::new(client.clone(), settings(true));
    let summary = dns.status().await.unwrap();
    assert!(summary.configured && summary.self_signed && !summary.editable);
    let err = dns.configure(&cloudflare(Some("t")), Utc::now()).await.unwrap_err();
    assert!(matches!(&err, Error::NotManaged(m) if m.contains("Helm")), "{err:?}");
    // Bad input is refused before anything is read or written.
    let before = fake.requests().len();
    let err = dns.configure(&IssuerRequest::default(), Utc::now()).await.unwrap_err();
    assert!(matches!(err, Error::Invalid { field: "provider", .. }));
    assert_eq!(fake.requests().len(), before);
}

#[tokio::test]
async fn a_cluster_without_cert_manager_is_a_sentence_not_a_crash() {
    let (fake, client) = cluster(false).await;
    let dns = PlatformDns::new(client, settings(true));
    let err = dns.configure(&cloudflare(Some("cf-secret-token")), Utc::now()).await.unwrap_err();
    let Error::Cluster(message) = err else { panic!("expected a cluster error") };
    assert!(message.contains("Secret opencrane-dns01-cloudflare") && message.contains("cert-manager"), "{message}");
    assert!(!message.contains("cf-secret-token"));
    fake.fail("GET", "clusterissuers", 500, 1);
    let err = dns.status().await.unwrap_err();
    assert!(matches!(&err, Error::Cluster(m) if m.contains("500")), "{err:?}");
}
