//! Leader election on a `coordination.k8s.io/v1` Lease, so that only one fleet-manager replica
//! provisions (and mirrors, and adopts) at a time. The holder renews every third of the lease
//! duration; another replica takes over only after the lease expired, and every write carries
//! the resourceVersion it read, so two candidates can never both win (the loser gets 409).

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};

/// One candidate.
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
}

fn micro_now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

impl Elector {
    /// A candidate `identity` (the pod name) for the lease `name` in `namespace`.
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str, duration: Duration) -> Self {
        Self { api: Api::namespaced(client, namespace), name: name.into(), identity: identity.into(), duration }
    }

    /// How often the holder renews.
    pub fn renew_every(&self) -> Duration {
        self.duration / 3
    }

    fn spec(&self, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: i32::try_from(self.duration.as_secs()).ok(),
            acquire_time: Some(micro_now()),
            renew_time: Some(micro_now()),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }

    /// Takes or renews the lease; `Ok(true)` while this candidate holds it.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, kube::Error> {
        let current = match self.api.get_opt(&self.name).await? {
            Some(lease) => lease,
            None => {
                let lease = Lease {
                    metadata: ObjectMeta { name: Some(self.name.clone()), ..ObjectMeta::default() },
                    spec: Some(self.spec(0)),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                    Err(e) => Err(e),
                };
            }
        };
        let spec = current.spec.clone().unwrap_or_default();
        let mine = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        // Released by its last holder (no holder): free at once.
        let released = spec.holder_identity.as_deref().is_none_or(str::is_empty);
        let expired = match (&spec.renew_time, spec.lease_duration_seconds) {
            (Some(renewed), Some(seconds)) => {
                let age = k8s_openapi::jiff::Timestamp::now().duration_since(renewed.0);
                age.as_secs() >= i64::from(seconds)
            }
            _ => true,
        };
        if !mine && !expired && !released {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!mine);
        let mut next = current.clone();
        let mut new_spec = self.spec(transitions);
        if mine {
            new_spec.acquire_time = spec.acquire_time.clone();
        }
        next.spec = Some(new_spec);
        // `replace` sends the resourceVersion read above: a concurrent writer makes this 409.
        match self.api.replace(&self.name, &PostParams::default(), &next).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the lease up if this candidate holds it (no holder: the next candidate takes it at
    /// once instead of waiting out the lease, as a rolling update would). `Ok(true)` when it held
    /// it; a concurrent change (409) leaves it to that writer.
    pub async fn release(&self) -> Result<bool, kube::Error> {
        let Some(current) = self.api.get_opt(&self.name).await? else { return Ok(false) };
        let spec = current.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(false);
        }
        let mut next = current;
        next.spec = Some(LeaseSpec {
            holder_identity: None,
            acquire_time: None,
            renew_time: Some(micro_now()),
            lease_duration_seconds: Some(1),
            lease_transitions: spec.lease_transitions,
            ..LeaseSpec::default()
        });
        match self.api.replace(&self.name, &PostParams::default(), &next).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Runs `work` while this candidate holds the lease; stops it when the lease is lost (at
    /// once: another replica may lead by then) and competes again. When `shutdown` resolves, a
    /// leader tells `work` to stop through the receiver it was given (it turns `true`), keeps
    /// renewing until `work` returns (its reconciles under way finish), then releases the lease so
    /// another replica takes over without waiting it out; a candidate returns at once. `work`
    /// must return soon after it is told to stop (the reconcile worker bounds its drain).
    pub async fn run_while_leader<F, Fut>(&self, mut work: F, shutdown: impl Future<Output = ()>)
    where
        F: FnMut(tokio::sync::watch::Receiver<bool>) -> Fut,
        Fut: Future<Output = ()>,
    {
        tokio::pin!(shutdown);
        metrics::gauge!("opencrane_leader", "lease" => self.name.clone()).set(0.0);
        loop {
            // Candidate: try until this replica leads.
            loop {
                match self.try_acquire_or_renew().await {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(err) => tracing::warn!(error = %err, lease = %self.name, "leader election failed; retrying"),
                }
                tokio::select! {
                    () = &mut shutdown => return,
                    () = tokio::time::sleep(self.renew_every()) => {}
                }
            }
            tracing::info!(identity = %self.identity, lease = %self.name, "leading: provisioning runs on this replica");
            let leader = metrics::gauge!("opencrane_leader", "lease" => self.name.clone());
            leader.set(1.0);
            let _not_leading = NotLeading(leader);
            // Leader: work, renewing; stop working the moment a renewal is not confirmed.
            let renewals = async {
                loop {
                    tokio::time::sleep(self.renew_every()).await;
                    match self.try_acquire_or_renew().await {
                        Ok(true) => {}
                        Ok(false) => return,
                        Err(err) => {
                            tracing::warn!(error = %err, "lease renewal failed; stepping down");
                            return;
                        }
                    }
                }
            };
            let (stop, stopping) = tokio::sync::watch::channel(false);
            let working = work(stopping);
            tokio::pin!(renewals, working);
            tokio::select! {
                () = &mut shutdown => {}
                () = &mut working => return,
                () = &mut renewals => {
                    tracing::warn!(identity = %self.identity, "lost the lease; provisioning stops here");
                    continue;
                }
            }
            let _ = stop.send(true);
            tokio::select! {
                () = &mut working => {}
                () = &mut renewals => tracing::warn!(identity = %self.identity, "lost the lease while stopping"),
            }
            match self.release().await {
                Ok(released) => tracing::info!(identity = %self.identity, released, "leadership handed back"),
                Err(err) => tracing::warn!(error = %err, "could not release the lease; it expires by itself"),
            }
            return;
        }
    }
}

/// Sets `opencrane_leader` back to 0 however leadership ends (shutdown, lost lease, work done).
struct NotLeading(metrics::Gauge);

impl Drop for NotLeading {
    fn drop(&mut self) {
        self.0.set(0.0);
    }
}
