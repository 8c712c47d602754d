//! Step `dns`: the DNSEndpoint `<name>.<base>` (when an ingress address is configured) and the
//! vanity Certificate (when a vanity domain is set); what is no longer wanted is deleted. With the
//! fleet's DNS probes, the step then waits (not a failure) until the record resolves to the ingress
//! address at the zone's authoritative nameservers and, with a vanity domain, until cert-manager
//! reports the vanity Certificate Ready ([`Issuance`]); the reconciler turns a wait longer than its
//! limit into a failure with the message below.

use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind},
};
use serde_json::Value;

use super::KubernetesBackend;
use crate::{
    build,
    probe::dns::RecordState,
    reconcile::{StepFailure, StepSuccess, Teardown},
    spec::Desired,
};

impl KubernetesBackend {
    /// `done_before`: the step already finished for this generation, so a routine reconcile does not
    /// wait again (a Ready silo never goes back to provisioning over a slow nameserver).
    pub(super) async fn converge_dns(&self, desired: &Desired, done_before: bool) -> Result<StepSuccess, StepFailure> {
        let ns = desired.namespace();
        let objects = build::dns(desired, &self.settings.cluster);
        for object in &objects {
            self.apply(object).await?;
        }
        // What is no longer wanted goes.
        if self.settings.cluster.ingress_ip.is_none() {
            self.prune("externaldns.k8s.io/v1alpha1", "DNSEndpoint", Some(&ns), build::DNS_ENDPOINT).await?;
        }
        if desired.vanity_domain.is_none() {
            self.prune("cert-manager.io/v1", "Certificate", Some(&ns), build::VANITY_CERTIFICATE).await?;
        }
        if objects.is_empty() {
            return Ok(StepSuccess::skipped(
                "NotConfigured",
                "No ingress address is configured (no DNS record) and no vanity domain is set (no certificate).",
            ));
        }
        let what: Vec<String> = objects
            .iter()
            .map(|o| match o["kind"].as_str() {
                Some("DNSEndpoint") => format!("DNS record {}", self.settings.cluster.host(desired)),
                _ => format!("certificate for {}", desired.vanity_domain.clone().unwrap_or_default()),
            })
            .collect();
        let mut applied = what.join(" and ");
        if let (Some(truth), Some(_), false) = (&self.settings.dns_truth, self.settings.cluster.ingress_ip, done_before)
        {
            let host = self.settings.cluster.host(desired);
            match truth.check_record(&host).await.map(|c| (c.expected, c.state)) {
                // The fleet cannot ask the nameservers: that is the probe's problem (the DNS page
                // shows it), not a reason to hold the silo back.
                Some((_, RecordState::Unreachable { error })) => {
                    applied.push_str(&format!("; the record could not be checked ({error})"));
                }
                Some((expected, state)) if !state.is_resolved() => {
                    return Ok(StepSuccess::waiting(
                        "WaitingForDns",
                        format!(
                            "Applied the DNS record; waiting for {host} to resolve to {} at the zone's nameservers \
                         (now: {}). external-dns publishes it; check its logs if this lasts.",
                            expected,
                            state.describe()
                        ),
                    ));
                }
                _ => {}
            }
        }
        if let (Some(vanity), false) = (&desired.vanity_domain, done_before) {
            let issuance = vanity_issuance(&self.client, &desired.name)
                .await
                .map_err(|e| super::failure(&format!("reading Certificate {}", build::VANITY_CERTIFICATE), &e))?;
            if !issuance.as_ref().is_some_and(Issuance::is_ready) {
                let now = issuance.map_or_else(|| "not reported yet".to_owned(), |i| i.describe());
                return Ok(StepSuccess::waiting(
                    "WaitingForCertificate",
                    format!(
                        "Applied {applied}; waiting for cert-manager to issue the certificate for {vanity} (now: {now}). \
                         The customer points {vanity} at {} (a CNAME) so the HTTP-01 challenge can be answered.",
                        self.settings.cluster.host(desired)
                    ),
                ));
            }
        }
        if done_before {
            // A re-check: the row keeps what the pass that did the work said (whether the record
            // could be checked, what it waited for).
            return Ok(StepSuccess::unchanged("Applied"));
        }
        Ok(StepSuccess::done("Applied", applied))
    }

    pub(super) async fn remove_dns(&self, name: &str) -> Result<Teardown, StepFailure> {
        let ns = crate::spec::namespace_of(name);
        self.delete("externaldns.k8s.io/v1alpha1", "DNSEndpoint", Some(&ns), build::DNS_ENDPOINT).await?;
        self.delete("cert-manager.io/v1", "Certificate", Some(&ns), build::VANITY_CERTIFICATE).await?;
        Ok(Teardown::Removed("DNS record and vanity certificate deleted.".into()))
    }
}

/// The vanity Certificate's Ready condition, as cert-manager wrote it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Issuance {
    /// `status` of the Ready condition (`None`: not reported yet).
    pub ready: Option<bool>,
    /// Its reason (`Issuing`, `Ready`, `Failed`, …).
    pub reason: Option<String>,
    /// Its message.
    pub message: Option<String>,
}

impl Issuance {
    /// Reads the Ready condition of a Certificate object.
    pub fn of(certificate: &Value) -> Self {
        let condition = certificate["status"]["conditions"]
            .as_array()
            .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Ready"));
        let text = |key: &str| condition.and_then(|c| c[key].as_str()).filter(|s| !s.is_empty()).map(str::to_owned);
        Self {
            ready: condition.and_then(|c| c["status"].as_str()).map(|s| s == "True"),
            reason: text("reason"),
            message: text("message"),
        }
    }

    /// Whether the certificate is issued and current.
    pub fn is_ready(&self) -> bool {
        self.ready == Some(true)
    }

    /// In words: "Ready (Certificate is up to date and has not expired)", "not ready: Issuing: …".
    pub fn describe(&self) -> String {
        let detail = match (&self.reason, &self.message) {
            (Some(r), Some(m)) => format!("{r}: {m}"),
            (Some(t), None) | (None, Some(t)) => t.clone(),
            (None, None) => String::new(),
        };
        match (self.ready, detail.is_empty()) {
            (None, _) => "not reported yet".to_owned(),
            (Some(true), true) => "ready".to_owned(),
            (Some(true), false) => format!("ready ({detail})"),
            (Some(false), true) => "not ready".to_owned(),
            (Some(false), false) => format!("not ready: {detail}"),
        }
    }
}

/// The Ready condition of customer `name`'s vanity Certificate; `None` when it does not exist.
pub async fn vanity_issuance(client: &Client, name: &str) -> Result<Option<Issuance>, kube::Error> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cert-manager.io", "v1", "Certificate"),
        "certificates",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &crate::spec::namespace_of(name), &resource);
    let object = api.get_opt(build::VANITY_CERTIFICATE).await?;
    Ok(object.map(|o| Issuance::of(&serde_json::to_value(o).unwrap_or_default())))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Issuance;

    #[test]
    fn the_ready_condition_is_read_and_said() {
        assert_eq!(Issuance::of(&json!({})).describe(), "not reported yet");
        let issuing = json!({"status": {"conditions": [
            {"type": "Issuing", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist"}
        ]}});
        let issuance = Issuance::of(&issuing);
        assert!(!issuance.is_ready());
        assert_eq!(issuance.describe(), "not ready: DoesNotExist: Issuing certificate as Secret does not exist");
        let ready =
            Issuance::of(&json!({"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Ready"}]}}));
        assert!(ready.is_ready());
        assert_eq!(ready.describe(), "ready (Ready)");
    }
}
