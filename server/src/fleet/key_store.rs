//! Where a rotated Zitadel key is persisted: the Kubernetes Secret the fleet's Deployment reads
//! `ZITADEL_MGMT_SA_KEY` from (`ZITADEL_MGMT_SECRET_NAME` in the fleet's namespace, key
//! `ZITADEL_MGMT_SECRET_KEY`), written with a JSON merge patch so other keys of the Secret stay.
//! A prepared key of a two-phase rotation waits in `<key>.next`. The chart's Role allows `get`
//! and `patch` on that one Secret only.

use app::service::fleet::identity::{KeySlot, KeyStore};
use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use serde_json::json;

/// The Secret `name` in `namespace`, key `key`.
#[derive(Clone)]
pub struct SecretKeyStore {
    api: Api<Secret>,
    namespace: String,
    name: String,
    key: String,
}

impl std::fmt::Debug for SecretKeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.location())
    }
}

impl SecretKeyStore {
    /// The store for `(namespace, name, key)`.
    pub fn new(client: Client, namespace: &str, name: &str, key: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.into(),
            name: name.into(),
            key: key.into(),
        }
    }

    fn data_key(&self, slot: KeySlot) -> String {
        match slot {
            KeySlot::Active => self.key.clone(),
            KeySlot::Next => format!("{}.next", self.key),
        }
    }
}

/// A Kubernetes error in one sentence (the API server's message; never the Secret's data).
fn sentence(what: &str, e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => format!("{what}: the API server answered {} ({})", status.code, status.message),
        other => format!("{what}: {other}"),
    }
}

#[async_trait::async_trait]
impl KeyStore for SecretKeyStore {
    fn location(&self) -> String {
        format!("Secret {}/{} key {}", self.namespace, self.name, self.key)
    }

    async fn write(&self, slot: KeySlot, json: Option<&str>) -> Result<(), String> {
        let value = json.map(|j| base64::engine::general_purpose::STANDARD.encode(j));
        let patch = json!({ "data": { self.data_key(slot): value } });
        self.api
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
            .map_err(|e| sentence(&format!("patching Secret {}/{}", self.namespace, self.name), &e))
    }

    async fn read(&self, slot: KeySlot) -> Result<Option<String>, String> {
        let secret = self
            .api
            .get(&self.name)
            .await
            .map_err(|e| sentence(&format!("reading Secret {}/{}", self.namespace, self.name), &e))?;
        let Some(bytes) = secret.data.and_then(|mut d| d.remove(&self.data_key(slot))) else { return Ok(None) };
        String::from_utf8(bytes.0).map(Some).map_err(|_| "the stored key is not text".to_owned())
    }
}
