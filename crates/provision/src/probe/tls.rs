//! The certificate a host actually serves: one TLS handshake to the host's address with the host
//! as SNI, the end-entity certificate read (issuer, subject, validity, DNS names) and checked
//! against the host. The probe reports on what it is shown and trusts nothing: its verifier
//! accepts any chain, and nothing is sent after the handshake. Judging the result is a pure
//! function ([`assess`]).

use std::{net::SocketAddr, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio_rustls::rustls::{
    self, ClientConfig, DigitallySignedStruct, SignatureScheme,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    crypto::CryptoProvider,
    pki_types::{CertificateDer, ServerName, UnixTime},
};
use x509_cert::{
    Certificate,
    der::Decode as _,
    ext::pkix::{SubjectAltName, name::GeneralName},
};

/// What the host served.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServedCertificate {
    /// The issuer's distinguished name (`CN=R11,O=Let's Encrypt,C=US`).
    pub issuer: String,
    /// The subject's distinguished name.
    pub subject: String,
    /// Not valid before.
    pub not_before: DateTime<Utc>,
    /// Not valid after.
    pub not_after: DateTime<Utc>,
    /// Its DNS names (subject alternative names).
    pub names: Vec<String>,
    /// Whether it is valid for the host asked for (wildcards as TLS clients match them).
    pub matches_host: bool,
}

/// How a served certificate stands, for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "health", rename_all = "camelCase")]
pub enum CertHealth {
    /// Valid for the host, more than 30 days left.
    #[serde(rename_all = "camelCase")]
    Valid {
        /// Whole days left.
        days_left: i64,
    },
    /// Valid, but expiring within `within` days (30, 7 or 1): a warning.
    #[serde(rename_all = "camelCase")]
    Expiring {
        /// Whole days left.
        days_left: i64,
        /// The threshold crossed.
        within: i64,
    },
    /// Past its notAfter (or before its notBefore): an error.
    Expired,
    /// Not valid for the host: an error.
    WrongName,
}

/// Judges `cert` at `now`: the wrong name and expiry are errors; 30, 7 and 1 days left warn.
pub fn assess(cert: &ServedCertificate, now: DateTime<Utc>) -> CertHealth {
    if !cert.matches_host {
        return CertHealth::WrongName;
    }
    if now >= cert.not_after || now < cert.not_before {
        return CertHealth::Expired;
    }
    let days_left = (cert.not_after - now).num_days();
    match [1, 7, 30].into_iter().find(|within| days_left < *within) {
        Some(within) => CertHealth::Expiring { days_left, within },
        None => CertHealth::Valid { days_left },
    }
}

/// Accepts any certificate: the probe reports on what it is shown, it never relies on it.
#[derive(Debug)]
struct Observe(Arc<CryptoProvider>);

impl ServerCertVerifier for Observe {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Connects to `addr`, shakes hands as `host`, and reads the certificate served.
pub async fn served(addr: SocketAddr, host: &str, timeout: Duration) -> Result<ServedCertificate, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Observe(provider)))
        .with_no_client_auth();
    let name = ServerName::try_from(host.to_owned()).map_err(|_| format!("“{host}” is not a host name"))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let shake = async {
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("connecting to {addr}: {e}"))?;
        connector.connect(name, tcp).await.map_err(|e| format!("TLS handshake with {host} at {addr}: {e}"))
    };
    let stream = tokio::time::timeout(timeout, shake).await.map_err(|_| format!("{host} at {addr}: timed out"))??;
    let (_, session) = stream.get_ref();
    let leaf = session
        .peer_certificates()
        .and_then(|chain| chain.first())
        .ok_or_else(|| format!("{host} at {addr} served no certificate"))?;
    read(leaf, host)
}

/// Reads one DER certificate and checks it against `host`.
pub fn read(der: &CertificateDer<'_>, host: &str) -> Result<ServedCertificate, String> {
    let cert = Certificate::from_der(der.as_ref()).map_err(|e| format!("the served certificate is unreadable: {e}"))?;
    let tbs = &cert.tbs_certificate;
    let at = |t: x509_cert::time::Time| {
        DateTime::<Utc>::from_timestamp(i64::try_from(t.to_unix_duration().as_secs()).unwrap_or(i64::MAX), 0)
            .unwrap_or_default()
    };
    let names = match tbs.get::<SubjectAltName>() {
        Ok(Some((_, san))) => san
            .0
            .iter()
            .filter_map(|n| match n {
                GeneralName::DnsName(name) => Some(name.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let matches_host = names.iter().any(|n| name_matches(n, host));
    Ok(ServedCertificate {
        issuer: tbs.issuer.to_string(),
        subject: tbs.subject.to_string(),
        not_before: at(tbs.validity.not_before),
        not_after: at(tbs.validity.not_after),
        names,
        matches_host,
    })
}

/// Whether the certificate name `pattern` covers `host`: equal ignoring case, or a wildcard
/// `*.example.com` covering exactly one more label (`a.example.com`, not `a.b.example.com`, not
/// `example.com`), as RFC 6125 has clients match.
pub fn name_matches(pattern: &str, host: &str) -> bool {
    let (pattern, host) =
        (pattern.trim_end_matches('.').to_ascii_lowercase(), host.trim_end_matches('.').to_ascii_lowercase());
    match pattern.strip_prefix("*.") {
        Some(parent) => host.split_once('.').is_some_and(|(label, rest)| !label.is_empty() && rest == parent),
        None => pattern == host,
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;

    fn cert(days_left: i64, matches_host: bool) -> (ServedCertificate, DateTime<Utc>) {
        let now = Utc::now();
        let cert = ServedCertificate {
            issuer: "CN=Test CA".into(),
            subject: "CN=acme.example.com".into(),
            not_before: now - TimeDelta::days(60),
            not_after: now + TimeDelta::days(days_left) + TimeDelta::hours(1),
            names: vec!["acme.example.com".into()],
            matches_host,
        };
        (cert, now)
    }

    #[test]
    fn expiry_warns_at_30_7_and_1_days_and_fails_when_past_or_for_another_name() {
        for (days, want) in [
            (90, CertHealth::Valid { days_left: 90 }),
            (30, CertHealth::Valid { days_left: 30 }),
            (29, CertHealth::Expiring { days_left: 29, within: 30 }),
            (6, CertHealth::Expiring { days_left: 6, within: 7 }),
            (0, CertHealth::Expiring { days_left: 0, within: 1 }),
        ] {
            let (c, now) = cert(days, true);
            assert_eq!(assess(&c, now), want, "{days} days");
        }
        let (c, now) = cert(-2, true);
        assert_eq!(assess(&c, now), CertHealth::Expired);
        let (c, now) = cert(90, false);
        assert_eq!(assess(&c, now), CertHealth::WrongName);
    }

    #[test]
    fn wildcards_cover_exactly_one_label() {
        assert!(name_matches("acme.example.com", "ACME.example.com."));
        assert!(name_matches("*.example.com", "acme.example.com"));
        assert!(!name_matches("*.example.com", "a.b.example.com"));
        assert!(!name_matches("*.example.com", "example.com"));
        assert!(!name_matches("acme.example.com", "globex.example.com"));
    }
}
