//! The silo's side of the relayed migration from the original's shared database
//! (`opencrane_migrate::relay`): at every pull the clustertenant-manager asks
//! `GET <fleet>/api/internal/cluster-tenants/<own name>/import` with its own credential; when the
//! fleet has staged a delivery, it fetches its parcels one by one, applies them to its own
//! database in one transaction (legacy provider keys sealed with its own credentials key), reads
//! its tables back and reports the digest (`PUT …/import/<generation>`). A parcel that cannot be
//! fetched leaves nothing written and is tried again at the next pull; a delivery that cannot
//! be applied is reported with the reason. Rows and keys are never logged.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use anyhow::{Context as _, bail};
use opencrane_db::PgPool;
use opencrane_migrate::relay::{self, Delivery, Digest, Parcel};
use opencrane_portal::seal::SecretBox;

use super::sync::FleetLink;

/// What one pass did.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    /// Nothing was staged.
    Nothing,
    /// A delivery was applied (or checked) and reported.
    Reported {
        /// Whether rows were written.
        written: bool,
    },
    /// A delivery could not be applied; the fleet was told why.
    Refused(String),
}

fn url(link: &FleetLink, path: &str) -> String {
    format!("{}/api/internal/cluster-tenants/{path}", link.url.trim_end_matches('/'))
}

/// Takes the delivery staged for this silo, if any.
pub async fn take_once(
    client: &openidconnect::reqwest::Client,
    link: &FleetLink,
    cluster_tenant: &str,
    pool: &PgPool,
    key: Option<&SecretBox>,
) -> anyhow::Result<Taken> {
    let at = url(link, &format!("{cluster_tenant}/import"));
    let response =
        crate::metrics::fleet_call(client.get(&at).bearer_auth(link.token.current()?).timeout(Duration::from_secs(10)))
            .await
            .with_context(|| format!("GET {at}"))?;
    // 404: a fleet from before the relayed migration (or no such customer any more): nothing.
    if matches!(response.status().as_u16(), 204 | 404) {
        return Ok(Taken::Nothing);
    }
    if !response.status().is_success() {
        bail!("GET {at} answered {}", response.status());
    }
    let body = response.bytes().await.with_context(|| format!("reading the answer of {at}"))?;
    let delivery: Delivery = serde_json::from_slice(&body).with_context(|| format!("decoding the answer of {at}"))?;
    let unreachable = AtomicBool::new(false);
    let fetch = |seq: u32| {
        let at = url(link, &format!("{cluster_tenant}/import/{}/{seq}", delivery.generation));
        let unreachable = &unreachable;
        async move {
            let fetched = async {
                let response = crate::metrics::fleet_call(
                    client.get(&at).bearer_auth(link.token.current()?).timeout(Duration::from_secs(60)),
                )
                .await?;
                if !response.status().is_success() {
                    bail!("answered {}", response.status());
                }
                Ok::<Parcel, anyhow::Error>(serde_json::from_slice(&response.bytes().await?)?)
            }
            .await;
            fetched.map_err(|e| {
                unreachable.store(true, Ordering::Relaxed);
                opencrane_migrate::Error::Silo(format!("fetching parcel {seq}: {e:#}"))
            })
        }
    };
    let digest = match relay::apply(pool, cluster_tenant, &delivery, fetch, key).await {
        Ok(digest) => digest,
        // The fleet or the network failed, not the delivery: nothing was written; next pull.
        Err(e) if unreachable.load(Ordering::Relaxed) => bail!("{e}"),
        Err(e) => Digest {
            generation: delivery.generation.clone(),
            written: false,
            error: Some(e.to_string()),
            tables: Default::default(),
        },
    };
    let at = url(link, &format!("{cluster_tenant}/import/{}", delivery.generation));
    let response = crate::metrics::fleet_call(
        client
            .put(&at)
            .bearer_auth(link.token.current()?)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&digest)?)
            .timeout(Duration::from_secs(30)),
    )
    .await
    .with_context(|| format!("PUT {at}"))?;
    if !response.status().is_success() {
        bail!("PUT {at} answered {}", response.status());
    }
    Ok(match digest.error {
        Some(error) => Taken::Refused(error),
        None => Taken::Reported { written: digest.written },
    })
}
