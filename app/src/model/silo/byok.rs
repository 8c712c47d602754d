//! Bring your own key, the quick way: one provider key, and the provider's default models are
//! defined — with the stable aliases `auto` (its cheapest chat model) and `auto-embedding` (its
//! embedding model), as the original seeds them — behind a credential of its own.

use serde::{Deserialize, Serialize};

/// The credential a provider's quick set-up keeps its key in.
pub fn credential_name(provider: &str) -> String {
    format!("byok-{provider}")
}

/// The deployments a provider's quick set-up defines: (public name, upstream model). `None` for
/// a provider without a fixed catalogue (Azure's and OpenAI-compatible endpoints name their own
/// deployments: add a credential and define the models).
pub fn catalogue(provider: &str) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match provider {
        "openai" => &[
            ("gpt-4o", "openai/gpt-4o"),
            ("gpt-4o-mini", "openai/gpt-4o-mini"),
            ("text-embedding-3-small", "openai/text-embedding-3-small"),
            ("auto", "openai/gpt-4o-mini"),
            ("auto-embedding", "openai/text-embedding-3-small"),
        ],
        "anthropic" => &[
            ("claude-sonnet-4", "anthropic/claude-sonnet-4-20250514"),
            ("claude-3-5-haiku", "anthropic/claude-3-5-haiku-latest"),
            ("auto", "anthropic/claude-3-5-haiku-latest"),
        ],
        "gemini" => &[
            ("gemini-2.5-pro", "gemini/gemini-2.5-pro"),
            ("gemini-2.5-flash", "gemini/gemini-2.5-flash"),
            ("text-embedding-004", "gemini/text-embedding-004"),
            ("auto", "gemini/gemini-2.5-flash"),
            ("auto-embedding", "gemini/text-embedding-004"),
        ],
        "mistral" => &[
            ("mistral-large", "mistral/mistral-large-latest"),
            ("mistral-small", "mistral/mistral-small-latest"),
            ("mistral-embed", "mistral/mistral-embed"),
            ("auto", "mistral/mistral-small-latest"),
            ("auto-embedding", "mistral/mistral-embed"),
        ],
        _ => return None,
    })
}

/// The providers with a quick set-up.
pub const BYOK_PROVIDERS: [&str; 4] = ["openai", "anthropic", "gemini", "mistral"];

/// One provider's quick set-up, as it is now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ByokStatus {
    /// The provider.
    pub provider: String,
    /// Its key is stored.
    pub configured: bool,
    /// The key's last four characters, when stored.
    pub hint: Option<String>,
    /// The public names it defined that are there now.
    pub models: Vec<String>,
    /// The public names it defines.
    pub catalogue: Vec<String>,
}

/// `PUT /providers/byok/{provider}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ByokRequest {
    /// The provider's API key (write-only).
    #[serde(default, alias = "key")]
    pub api_key: String,
}

/// What a quick set-up did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ByokOutcome {
    /// The provider.
    pub provider: String,
    /// The credential holding its key.
    pub credential: String,
    /// Public names defined now.
    pub seeded: Vec<String>,
    /// Public names an admin had already defined (left as they are).
    pub kept: Vec<String>,
    /// On removal: the public names it had defined, now gone.
    pub removed: Vec<String>,
    /// On removal: an admin's deployments that use the key too (so the key stays).
    pub left: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_has_auto_on_one_of_its_own_chat_models() {
        for provider in BYOK_PROVIDERS {
            let models = catalogue(provider).unwrap_or_default();
            let auto = models.iter().find(|(name, _)| *name == "auto").map(|(_, up)| *up);
            assert!(auto.is_some(), "{provider} has auto");
            assert!(
                models.iter().any(|(name, up)| *name != "auto" && Some(*up) == auto),
                "{provider}: auto is one of its models"
            );
            assert!(models.iter().all(|(_, up)| up.starts_with(&format!("{provider}/"))), "{provider}: its own models");
        }
        assert!(catalogue("azure").is_none() && catalogue("openai-compatible").is_none());
        assert_eq!(credential_name("openai"), "byok-openai");
    }
}
