//! The probes against real parts: a real authoritative DNS server (BIND 9 `named` from Debian,
//! changed with RFC 2136 updates through `nsupdate`, as external-dns' rfc2136 provider changes a
//! zone), and a real TLS server on loopback (rustls, certificates made with rcgen: one valid, one
//! expiring in 5 days, one for another name).

use std::{net::IpAddr, sync::Arc, time::Duration};

use chrono::Utc;
use opencrane_provision::probe::{
    bind::Bind,
    dns::{DnsProbe, RecordState},
    tls::{self, CertHealth},
};
use tokio_rustls::rustls::{
    self,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer},
};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[tokio::test]
async fn the_dns_probe_sees_missing_then_resolves_then_wrong_address_then_unreachable() {
    let mut bind = Bind::start("opencrane.test").unwrap();
    let probe = DnsProbe::new(&[bind.addr], Duration::from_secs(2));
    let host = "acme.opencrane.test";
    let want = ip("203.0.113.7");

    let check = probe.check(host, want).await;
    assert_eq!(check.state, RecordState::Missing, "{check:?}");
    assert_eq!(check.ownership, None);

    bind.set_address(host, want);
    bind.set_txt(
        &format!("a-{host}"),
        "heritage=external-dns,external-dns/owner=opencrane,external-dns/resource=crd/opencrane-acme/silo-dns",
    );
    let check = probe.check(host, want).await;
    assert_eq!(check.state, RecordState::Resolves, "no cache: the change is seen at once");
    assert!(check.ownership.as_deref().is_some_and(|o| o.contains("external-dns/owner=opencrane")), "{check:?}");

    bind.set_address(host, ip("198.51.100.9"));
    let check = probe.check(host, want).await;
    assert_eq!(check.state, RecordState::WrongAddress { got: vec![ip("198.51.100.9")] });

    // An IPv6 ingress asks for AAAA.
    bind.set_address("v6.opencrane.test", ip("2001:db8::7"));
    assert_eq!(probe.check("v6.opencrane.test", ip("2001:db8::7")).await.state, RecordState::Resolves);

    bind.delete(host);
    assert_eq!(probe.check(host, want).await.state, RecordState::Missing);

    bind.stop();
    let check = probe.check(host, want).await;
    assert!(matches!(check.state, RecordState::Unreachable { .. }), "{check:?}");
}

/// A TLS server on loopback serving `cert` for every name; returns its address.
async fn serve(cert: rcgen::CertifiedKey) -> std::net::SocketAddr {
    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![der], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = acceptor.accept(tcp).await;
            });
        }
    });
    addr
}

fn certificate(names: &[&str], days: i64) -> rcgen::CertifiedKey {
    let mut params = rcgen::CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>()).unwrap();
    let today = time_now();
    params.not_before = today - time::Duration::days(30);
    params.not_after = today + time::Duration::days(days) + time::Duration::hours(1);
    params.distinguished_name.push(rcgen::DnType::CommonName, names[0]);
    let key_pair = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key_pair).unwrap();
    rcgen::CertifiedKey { cert, key_pair }
}

fn time_now() -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(Utc::now().timestamp()).unwrap()
}

#[tokio::test]
async fn the_tls_probe_reads_what_the_host_serves() {
    let host = "acme.opencrane.test";
    let timeout = Duration::from_secs(3);

    let good = serve(certificate(&[host, "www.acme.opencrane.test"], 80)).await;
    let served = tls::served(good, host, timeout).await.unwrap();
    assert_eq!(served.names, [host, "www.acme.opencrane.test"]);
    assert!(served.matches_host);
    assert!(served.issuer.contains(host), "self-signed: the issuer is the subject: {}", served.issuer);
    assert_eq!(tls::assess(&served, Utc::now()), CertHealth::Valid { days_left: 80 });

    let expiring = serve(certificate(&[host], 5)).await;
    let served = tls::served(expiring, host, timeout).await.unwrap();
    assert_eq!(tls::assess(&served, Utc::now()), CertHealth::Expiring { days_left: 5, within: 7 });

    let wildcard = serve(certificate(&["*.opencrane.test"], 40)).await;
    assert!(tls::served(wildcard, host, timeout).await.unwrap().matches_host);

    let other = serve(certificate(&["globex.opencrane.test"], 80)).await;
    let served = tls::served(other, host, timeout).await.unwrap();
    assert_eq!(tls::assess(&served, Utc::now()), CertHealth::WrongName);

    // Nothing listening: a sentence, not a panic.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let err = tls::served(closed, host, timeout).await.unwrap_err();
    assert!(err.contains("connecting to"), "{err}");
}

/// The stored truth of a customer: both hosts asked of BIND, the certificates read from the
/// "ingress" (a TLS server on loopback), stored so pages render from the database; a pass checks
/// every customer not being deleted.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn a_refresh_stores_what_dns_and_the_ingress_serve(pool: sqlx::PgPool) {
    use opencrane_provision::dns_truth::{DnsTruth, DnsTruthSettings};
    let bind = Bind::start("opencrane.test").unwrap();
    let ingress = serve(certificate(&["acme.opencrane.test", "shop.acme.example"], 80)).await;
    sqlx::query(
        "INSERT INTO cluster_tenants (name, display_name, vanity_domain) VALUES ('acme', 'Acme', 'shop.opencrane.test'), ('gone', 'Gone', NULL)",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("UPDATE cluster_tenants SET deletion_requested_at = now() WHERE name = 'gone'")
        .execute(&pool)
        .await
        .unwrap();
    let truth = DnsTruth::new(DnsTruthSettings {
        base_domain: "opencrane.test".into(),
        ingress_ip: Some(ingress.ip()),
        nameservers: vec![bind.addr],
        tls_port: ingress.port(),
        timeout: Duration::from_secs(2),
        concurrency: 4,
        interval: Duration::from_secs(60),
    });

    let rows = truth.refresh(&pool, "acme").await.unwrap();
    let seen: Vec<(&str, &str, &str, Option<&str>)> = rows
        .iter()
        .map(|r| (r.host.as_str(), r.kind.as_str(), r.record_state.as_str(), r.cert_health.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("acme.opencrane.test", "canonical", "missing", Some("valid")),
            ("shop.opencrane.test", "vanity", "missing", Some("wrongName")),
        ]
    );
    assert_eq!(rows[0].certificate.as_ref().unwrap()["assessment"]["daysLeft"], 80);

    bind.set_address("acme.opencrane.test", ingress.ip());
    assert_eq!(truth.pass(&pool).await.unwrap(), 1, "the customer being deleted is not probed");
    let stored = opencrane_fleet_db::dns_checks::of(&pool, "acme").await.unwrap();
    assert_eq!(stored[0].record_state, "resolves");
    assert_eq!(stored[0].record["expected"], ingress.ip().to_string());
    assert_eq!(stored.len(), 2);
    assert!(opencrane_fleet_db::dns_checks::of(&pool, "gone").await.unwrap().is_empty());

    // The vanity domain goes: so does its row.
    sqlx::query("UPDATE cluster_tenants SET vanity_domain = NULL WHERE name = 'acme'").execute(&pool).await.unwrap();
    truth.refresh(&pool, "acme").await.unwrap();
    assert_eq!(opencrane_fleet_db::dns_checks::of(&pool, "acme").await.unwrap().len(), 1);
}
