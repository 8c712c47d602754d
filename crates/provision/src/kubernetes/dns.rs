//! Step `dns`: the DNSEndpoint `<name>.<base>` (when an ingress address is configured) and the
//! vanity Certificate (when a vanity domain is set); what is no longer wanted is deleted. With the
//! fleet's DNS probes, the step then waits (not a failure) until the record resolves to the ingress
//! address at the zone's authoritative nameservers; the reconciler turns a wait longer than its
//! limit into a failure with the message below.

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
            self.delete("externaldns.k8s.io/v1alpha1", "DNSEndpoint", Some(&ns), build::DNS_ENDPOINT).await?;
        }
        if desired.vanity_domain.is_none() {
            self.delete("cert-manager.io/v1", "Certificate", Some(&ns), build::VANITY_CERTIFICATE).await?;
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
        Ok(StepSuccess::done("Applied", applied))
    }

    pub(super) async fn remove_dns(&self, name: &str) -> Result<Teardown, StepFailure> {
        let ns = crate::spec::namespace_of(name);
        self.delete("externaldns.k8s.io/v1alpha1", "DNSEndpoint", Some(&ns), build::DNS_ENDPOINT).await?;
        self.delete("cert-manager.io/v1", "Certificate", Some(&ns), build::VANITY_CERTIFICATE).await?;
        Ok(Teardown::Removed("DNS record and vanity certificate deleted.".into()))
    }
}
