//! Provider keys that credentials reference in Kubernetes Secrets of the silo's namespace (the
//! original's `secretRef`): the operator manages the Secret, the portal reads it when it converges
//! LiteLLM and never stores the key. A reading problem is a sentence for the /models page.

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, Client};

/// The data key read when a reference names only the Secret.
pub const DEFAULT_KEY: &str = "api-key";

/// Reads referenced keys from one namespace.
#[derive(Clone)]
pub struct SecretReader {
    api: Api<Secret>,
    namespace: String,
}

/// `name` or `name/key` → (name, key).
pub fn split(reference: &str) -> (&str, &str) {
    reference.split_once('/').unwrap_or((reference, DEFAULT_KEY))
}

impl std::fmt::Debug for SecretReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretReader").field("namespace", &self.namespace).finish_non_exhaustive()
    }
}

impl SecretReader {
    /// A reader of `namespace`'s Secrets.
    pub fn new(client: Client, namespace: &str) -> Self {
        Self { api: Api::namespaced(client, namespace), namespace: namespace.to_owned() }
    }

    /// The key `reference` points at, or why it cannot be had (never containing the key).
    pub async fn read(&self, reference: &str) -> Result<String, String> {
        let (name, key) = split(reference);
        let secret = match self.api.get_opt(name).await {
            Ok(Some(secret)) => secret,
            Ok(None) => return Err(format!("Secret “{name}” does not exist in namespace “{}”.", self.namespace)),
            Err(e) => return Err(format!("Secret “{name}” could not be read: {}", reason(&e))),
        };
        let data = secret.data.unwrap_or_default();
        let Some(value) = data.get(key) else {
            let keys: Vec<&str> = data.keys().map(String::as_str).collect();
            let has = if keys.is_empty() { "it has none".to_owned() } else { format!("it has {}", keys.join(", ")) };
            return Err(format!("Secret “{name}” has no key “{key}” ({has})."));
        };
        match String::from_utf8(value.0.clone()) {
            Ok(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
            Ok(_) => Err(format!("Key “{key}” of Secret “{name}” is empty.")),
            Err(_) => Err(format!("Key “{key}” of Secret “{name}” is not text.")),
        }
    }
}

/// The API server's answer in a few words (its status message, or the transport's error).
fn reason(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("the Kubernetes API answered {} ({})", status.code, status.message),
        other => format!("the Kubernetes API could not be reached ({other})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_the_secret_and_optionally_its_key() {
        assert_eq!(split("llm-keys"), ("llm-keys", "api-key"));
        assert_eq!(split("llm-keys/openai"), ("llm-keys", "openai"));
    }
}
