//! `opencrane ensure-secret`: creates a Secret of generated values once and never overwrites it.
//! The charts run it as a Helm pre-install/pre-upgrade hook instead of generating keys with
//! `lookup` at render time, which returns nothing under `helm template`, Argo CD or Flux, so every
//! sync wrote a new credentials key and locked every sealed provider key.
//!
//! What it does with each `--key NAME=FORMAT`: an absent Secret is created with every key; a
//! present one gets only the keys it lacks (a replace guarded by its resourceVersion, retried on
//! a conflict), and a key it has is never changed. Values are never printed; key names are.

use anyhow::{Context as _, bail};
use base64::Engine as _;
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};
use rand::{Rng as _, distr::Alphanumeric};
use std::collections::BTreeMap;

use crate::cli::EnsureSecretArgs;

/// How one key's value is generated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// `n` random letters and digits.
    Alnum(usize),
    /// `sk-` then `n` random letters and digits (LiteLLM's key shape).
    Sk(usize),
    /// `n` random bytes, in standard base64 (the credentials key: `base64:32`).
    Base64(usize),
}

impl Format {
    fn generate(&self) -> String {
        let alnum = |n: usize| rand::rng().sample_iter(&Alphanumeric).take(n).map(char::from).collect::<String>();
        match self {
            Self::Alnum(n) => alnum(*n),
            Self::Sk(n) => format!("sk-{}", alnum(*n)),
            Self::Base64(n) => {
                let mut bytes = vec![0u8; *n];
                rand::rng().fill(&mut bytes[..]);
                base64::engine::general_purpose::STANDARD.encode(bytes)
            }
        }
    }
}

/// Parses `NAME=FORMAT` (`alnum:48`, `sk:48`, `base64:32`); the error names the part that is wrong.
pub fn parse_key(text: &str) -> Result<(String, Format), String> {
    let (name, format) =
        text.split_once('=').ok_or_else(|| format!("--key {text}: expected NAME=FORMAT, e.g. token=alnum:48"))?;
    let valid_name = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
    if !valid_name {
        return Err(format!("--key {text}: the key name must be letters, digits, '-', '.' or '_'"));
    }
    let (kind, length) = format.split_once(':').unwrap_or((format, ""));
    let length: usize = length
        .parse()
        .ok()
        .filter(|n| (16..=256).contains(n))
        .ok_or_else(|| format!("--key {text}: the length after ':' must be a number from 16 to 256"))?;
    let format = match kind {
        "alnum" => Format::Alnum(length),
        "sk" => Format::Sk(length),
        "base64" => Format::Base64(length),
        other => return Err(format!("--key {text}: unknown format “{other}” (alnum, sk or base64)")),
    };
    Ok((name.to_owned(), format))
}

/// What one run did, by key name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ensured {
    /// Keys generated now.
    pub created: Vec<String>,
    /// Keys the Secret already had, left as they were.
    pub kept: Vec<String>,
}

/// Ensures `name` in `namespace` holds every key of `keys`.
pub async fn ensure(
    client: Client,
    namespace: &str,
    name: &str,
    keys: &[(String, Format)],
    labels: &BTreeMap<String, String>,
) -> anyhow::Result<Ensured> {
    let api: Api<Secret> = Api::namespaced(client, namespace);
    for _attempt in 0..5 {
        let existing = api.get_opt(name).await.with_context(|| format!("reading Secret {namespace}/{name}"))?;
        let mut outcome = Ensured::default();
        match existing {
            None => {
                let data = keys
                    .iter()
                    .map(|(key, format)| {
                        outcome.created.push(key.clone());
                        (key.clone(), ByteString(format.generate().into_bytes()))
                    })
                    .collect();
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        namespace: Some(namespace.to_owned()),
                        labels: Some(labels.clone()),
                        ..ObjectMeta::default()
                    },
                    type_: Some("Opaque".into()),
                    data: Some(data),
                    ..Secret::default()
                };
                match api.create(&PostParams::default(), &secret).await {
                    Ok(_) => return Ok(outcome),
                    // Another run created it meanwhile: look again.
                    Err(kube::Error::Api(status)) if status.code == 409 => continue,
                    Err(err) => return Err(err).with_context(|| format!("creating Secret {namespace}/{name}")),
                }
            }
            Some(mut secret) => {
                let data = secret.data.get_or_insert_with(BTreeMap::new);
                for (key, format) in keys {
                    if data.contains_key(key) {
                        outcome.kept.push(key.clone());
                    } else {
                        data.insert(key.clone(), ByteString(format.generate().into_bytes()));
                        outcome.created.push(key.clone());
                    }
                }
                if outcome.created.is_empty() {
                    return Ok(outcome);
                }
                // Guarded by the resourceVersion just read: a concurrent change fails with 409.
                match api.replace(name, &PostParams::default(), &secret).await {
                    Ok(_) => return Ok(outcome),
                    Err(kube::Error::Api(status)) if status.code == 409 => continue,
                    Err(err) => return Err(err).with_context(|| format!("adding keys to Secret {namespace}/{name}")),
                }
            }
        }
    }
    bail!("Secret {namespace}/{name} kept changing under this run; run it again")
}

/// The command.
pub async fn run(args: EnsureSecretArgs) -> anyhow::Result<()> {
    let Some(namespace) = args.namespace.clone() else {
        bail!("--namespace (or POD_NAMESPACE) is required");
    };
    let client = match &args.kube_api_url {
        Some(url) => opencrane_provision::kubernetes::client_for(url, std::time::Duration::from_secs(30))?,
        None => opencrane_provision::kubernetes::default_client().await?,
    };
    let labels = args
        .labels
        .iter()
        .map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .with_context(|| format!("--label {l}: expected key=value"))
        })
        .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
    let ensured = ensure(client, &namespace, &args.name, &args.keys, &labels).await?;
    println!(
        "Secret {namespace}/{}: created {}; kept {}",
        args.name,
        if ensured.created.is_empty() { "nothing".into() } else { ensured.created.join(", ") },
        if ensured.kept.is_empty() { "nothing".into() } else { ensured.kept.join(", ") },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_bad_ones_name_the_part() {
        assert_eq!(parse_key("token=alnum:48").unwrap(), ("token".into(), Format::Alnum(48)));
        assert_eq!(parse_key("LITELLM_MASTER_KEY=sk:48").unwrap().1, Format::Sk(48));
        assert_eq!(parse_key("OPENCRANE_CREDENTIALS_KEY=base64:32").unwrap().1, Format::Base64(32));
        assert!(parse_key("token").unwrap_err().contains("NAME=FORMAT"));
        assert!(parse_key("to ken=alnum:48").unwrap_err().contains("key name"));
        assert!(parse_key("token=alnum:4").unwrap_err().contains("16 to 256"));
        assert!(parse_key("token=hex:32").unwrap_err().contains("unknown format"));
        let key = Format::Base64(32).generate();
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(key).unwrap().len(), 32);
        assert!(Format::Sk(48).generate().starts_with("sk-"));
        assert_ne!(Format::Alnum(48).generate(), Format::Alnum(48).generate());
    }
}
