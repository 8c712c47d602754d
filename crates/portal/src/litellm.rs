//! A thin client of LiteLLM's admin REST API (`Authorization: Bearer <master key>`).
//!
//! Every call has a timeout; idempotent calls (reads, updates, deletes, block/unblock) are retried
//! on transport errors and 5xx answers with a short backoff; creating calls are not (a retried
//! `/key/generate` would mint a second key). Keys are addressed by their hashed token, never by
//! the secret, so that the secret stays out of URLs and access logs. Shapes follow LiteLLM's
//! documented API (`/key/*`, `/model/*`, `/credentials`, `/spend/logs`, `/config/update`).

use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

/// How long one call may take.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts for idempotent calls.
pub const ATTEMPTS: u32 = 3;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum LiteLlmError {
    /// LiteLLM could not be reached or did not answer in time.
    #[error("LiteLLM is unreachable: {0}")]
    Unreachable(String),
    /// LiteLLM answered with an error.
    #[error("LiteLLM answered {status} to {call}: {body}")]
    Status {
        /// The call.
        call: String,
        /// HTTP status.
        status: u16,
        /// The answer, trimmed.
        body: String,
    },
    /// The answer was not the documented shape.
    #[error("LiteLLM's answer to {call} was not understood: {detail}")]
    Shape {
        /// The call.
        call: String,
        /// What did not parse.
        detail: String,
    },
}

/// A LiteLLM admin endpoint.
#[derive(Clone, Debug)]
pub struct LiteLlm {
    base: String,
    master_key: String,
    http: reqwest::Client,
    trace: Option<TraceHeaders>,
}

/// What each call sends besides its own headers: the caller's W3C trace context
/// (`traceparent`), computed inside the call's span.
#[derive(Clone)]
pub struct TraceHeaders(pub std::sync::Arc<dyn Fn() -> Vec<(String, String)> + Send + Sync>);

impl std::fmt::Debug for TraceHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceHeaders(..)")
    }
}

/// The fields of a key the portal manages.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeyFields {
    /// `opencrane-<tenant>`.
    pub key_alias: String,
    /// Allowed public model names (never empty: LiteLLM reads `[]` as "all").
    pub models: Vec<String>,
    /// Budget in the proxy's currency; `None` clears it.
    pub max_budget: Option<f64>,
    /// `{"tenant": …, "managed_by": "opencrane"}`.
    pub metadata: Value,
}

/// A newly generated key.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct GeneratedKey {
    /// The secret (`sk-…`).
    pub key: String,
    /// Its hashed token, for later calls.
    #[serde(alias = "token")]
    pub token_id: String,
}

/// A key as LiteLLM reports it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct KeyInfo {
    /// Alias.
    #[serde(default)]
    pub key_alias: Option<String>,
    /// Spend (total, as the portal sets no budget duration).
    #[serde(default)]
    pub spend: f64,
    /// Budget.
    #[serde(default)]
    pub max_budget: Option<f64>,
    /// Allowed models.
    #[serde(default)]
    pub models: Vec<String>,
    /// Blocked or not.
    #[serde(default)]
    pub blocked: Option<bool>,
    /// Metadata.
    #[serde(default)]
    pub metadata: Value,
}

/// A key in `/key/list`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ListedKey {
    /// Hashed token.
    pub token: String,
    /// Alias.
    #[serde(default)]
    pub key_alias: Option<String>,
}

/// A model deployment as LiteLLM stores it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// Public name.
    pub model_name: String,
    /// `{model, api_base?, litellm_credential_name?, weight?}`.
    pub litellm_params: Value,
    /// `{id, …}`.
    pub model_info: Value,
}

impl ModelEntry {
    /// `model_info.id`.
    pub fn id(&self) -> Option<&str> {
        self.model_info.get("id").and_then(Value::as_str)
    }
}

/// A credential as listed (values are never returned).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CredentialEntry {
    /// Name.
    pub credential_name: String,
    /// Info (provider, the portal's version marker).
    #[serde(default)]
    pub credential_info: Value,
}

/// One logged request.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct SpendLog {
    /// Request id.
    pub request_id: String,
    /// Hashed token of the key that paid.
    #[serde(default)]
    pub api_key: String,
    /// Cost.
    #[serde(default)]
    pub spend: f64,
    /// When.
    #[serde(rename = "startTime")]
    pub start_time: DateTime<Utc>,
    /// Public model name.
    #[serde(default)]
    pub model_group: Option<String>,
    /// Upstream model.
    #[serde(default)]
    pub model: String,
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: i64,
    /// Completion tokens.
    #[serde(default)]
    pub completion_tokens: i64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Retry {
    Yes,
    No,
}

impl LiteLlm {
    /// A client of `base` (e.g. `http://litellm:4000`).
    pub fn new(base: &str, master_key: &str) -> Result<Self, LiteLlmError> {
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(3))
            .build()
            .map_err(|e| LiteLlmError::Unreachable(e.to_string()))?;
        Ok(Self { base: base.trim_end_matches('/').to_owned(), master_key: master_key.to_owned(), http, trace: None })
    }

    /// The same client, sending `headers` (the trace context) with every call.
    #[must_use]
    pub fn with_trace_headers(mut self, headers: TraceHeaders) -> Self {
        self.trace = Some(headers);
        self
    }

    /// The endpoint, for messages.
    pub fn base(&self) -> &str {
        &self.base
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        retry: Retry,
    ) -> Result<T, LiteLlmError> {
        let attempts = if retry == Retry::Yes { ATTEMPTS } else { 1 };
        let mut last = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
            }
            let mut request =
                self.http.request(method.clone(), format!("{}{path}", self.base)).bearer_auth(&self.master_key);
            if let Some(body) = body {
                request = request.json(body);
            }
            let span = tracing::info_span!("litellm", otel.name = %format!("LiteLLM {method} {}", path.split('?').next().unwrap_or(path)), otel.kind = "client");
            if let Some(trace) = &self.trace {
                for (name, value) in span.in_scope(|| (trace.0)()) {
                    request = request.header(name, value);
                }
            }
            let sent = std::time::Instant::now();
            let response = tracing::Instrument::instrument(request.send(), span).await;
            record_call(&response, sent.elapsed());
            let response = match response {
                Ok(r) => r,
                Err(e) => {
                    last = Some(LiteLlmError::Unreachable(e.to_string()));
                    continue;
                }
            };
            let status = response.status();
            let text = response.text().await.map_err(|e| LiteLlmError::Unreachable(e.to_string()))?;
            if status.is_success() {
                return serde_json::from_str(&text)
                    .map_err(|e| LiteLlmError::Shape { call: format!("{method} {path}"), detail: e.to_string() });
            }
            let err = LiteLlmError::Status {
                call: format!("{method} {}", path.split('?').next().unwrap_or(path)),
                status: status.as_u16(),
                body: text.chars().take(300).collect(),
            };
            if !status.is_server_error() {
                return Err(err);
            }
            last = Some(err);
        }
        Err(last.unwrap_or_else(|| LiteLlmError::Unreachable("no attempt was made".into())))
    }

    /// `POST /key/generate` (not retried).
    pub async fn generate_key(&self, fields: &KeyFields) -> Result<GeneratedKey, LiteLlmError> {
        let body = serde_json::to_value(fields).unwrap_or_default();
        self.call(reqwest::Method::POST, "/key/generate", Some(&body), Retry::No).await
    }

    /// `POST /key/update` by hashed token.
    pub async fn update_key(&self, token: &str, fields: &KeyFields) -> Result<(), LiteLlmError> {
        let mut body = serde_json::to_value(fields).unwrap_or_default();
        body["key"] = json!(token);
        self.call::<Value>(reqwest::Method::POST, "/key/update", Some(&body), Retry::Yes).await.map(|_| ())
    }

    /// `GET /key/info?key=<hashed token>`; `None` when LiteLLM does not know the key.
    pub async fn key_info(&self, token: &str) -> Result<Option<KeyInfo>, LiteLlmError> {
        #[derive(Deserialize)]
        struct Answer {
            info: KeyInfo,
        }
        match self.call::<Answer>(reqwest::Method::GET, &format!("/key/info?key={token}"), None, Retry::Yes).await {
            Ok(a) => Ok(Some(a.info)),
            Err(LiteLlmError::Status { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `POST /key/block` or `/key/unblock`.
    pub async fn set_blocked(&self, token: &str, blocked: bool) -> Result<(), LiteLlmError> {
        let path = if blocked { "/key/block" } else { "/key/unblock" };
        self.call::<Value>(reqwest::Method::POST, path, Some(&json!({ "key": token })), Retry::Yes).await.map(|_| ())
    }

    /// `POST /key/delete {key_aliases}`.
    pub async fn delete_keys(&self, aliases: &[String]) -> Result<(), LiteLlmError> {
        let body = json!({ "key_aliases": aliases });
        self.call::<Value>(reqwest::Method::POST, "/key/delete", Some(&body), Retry::Yes).await.map(|_| ())
    }

    /// Every key whose alias starts with `prefix` (`GET /key/list`, all pages).
    pub async fn list_keys(&self, prefix: &str) -> Result<Vec<ListedKey>, LiteLlmError> {
        #[derive(Deserialize)]
        struct Page {
            keys: Vec<ListedKey>,
            #[serde(default)]
            total_pages: Option<u32>,
        }
        let mut keys = Vec::new();
        for page in 1..=1000u32 {
            let path = format!("/key/list?return_full_object=true&size=100&page={page}");
            let answer: Page = self.call(reqwest::Method::GET, &path, None, Retry::Yes).await?;
            let done = answer.keys.is_empty() || answer.total_pages.is_none_or(|t| page >= t);
            keys.extend(
                answer.keys.into_iter().filter(|k| k.key_alias.as_deref().is_some_and(|a| a.starts_with(prefix))),
            );
            if done {
                break;
            }
        }
        Ok(keys)
    }

    /// `GET /model/info`.
    pub async fn models(&self) -> Result<Vec<ModelEntry>, LiteLlmError> {
        #[derive(Deserialize)]
        struct Answer {
            data: Vec<ModelEntry>,
        }
        Ok(self.call::<Answer>(reqwest::Method::GET, "/model/info", None, Retry::Yes).await?.data)
    }

    /// `POST /model/new` (not retried).
    pub async fn add_model(&self, model: &ModelEntry) -> Result<(), LiteLlmError> {
        let body = serde_json::to_value(model).unwrap_or_default();
        self.call::<Value>(reqwest::Method::POST, "/model/new", Some(&body), Retry::No).await.map(|_| ())
    }

    /// `POST /model/delete {id}`.
    pub async fn delete_model(&self, id: &str) -> Result<(), LiteLlmError> {
        self.call::<Value>(reqwest::Method::POST, "/model/delete", Some(&json!({ "id": id })), Retry::Yes)
            .await
            .map(|_| ())
    }

    /// `GET /credentials`.
    pub async fn credentials(&self) -> Result<Vec<CredentialEntry>, LiteLlmError> {
        #[derive(Deserialize)]
        struct Answer {
            credentials: Vec<CredentialEntry>,
        }
        Ok(self.call::<Answer>(reqwest::Method::GET, "/credentials", None, Retry::Yes).await?.credentials)
    }

    /// `POST /credentials` (not retried).
    pub async fn add_credential(&self, name: &str, values: Value, info: Value) -> Result<(), LiteLlmError> {
        let body = json!({ "credential_name": name, "credential_values": values, "credential_info": info });
        self.call::<Value>(reqwest::Method::POST, "/credentials", Some(&body), Retry::No).await.map(|_| ())
    }

    /// `DELETE /credentials/<name>`.
    pub async fn delete_credential(&self, name: &str) -> Result<(), LiteLlmError> {
        self.call::<Value>(reqwest::Method::DELETE, &format!("/credentials/{name}"), None, Retry::Yes).await.map(|_| ())
    }

    /// `GET /spend/logs?start_date&end_date&summarize=false` (UTC dates, both inclusive).
    pub async fn spend_logs(&self, from: NaiveDate, to: NaiveDate) -> Result<Vec<SpendLog>, LiteLlmError> {
        let path = format!("/spend/logs?start_date={from}&end_date={to}&summarize=false");
        self.call(reqwest::Method::GET, &path, None, Retry::Yes).await
    }

    /// `POST /config/update` with the router's fallback chains.
    pub async fn set_fallbacks(&self, chains: &[(String, Vec<String>)]) -> Result<(), LiteLlmError> {
        let fallbacks: Vec<Value> = chains.iter().map(|(name, chain)| json!({ name: chain })).collect();
        let body = json!({ "router_settings": { "fallbacks": fallbacks } });
        self.call::<Value>(reqwest::Method::POST, "/config/update", Some(&body), Retry::Yes).await.map(|_| ())
    }
}

/// Counts one admin API call in `opencrane_outbound_requests_total{service="litellm"}` by its
/// result (`ok`, `http_4xx`, `http_5xx`, `unreachable`) and times it.
fn record_call(response: &reqwest::Result<reqwest::Response>, elapsed: Duration) {
    let result = match response {
        Ok(r) if r.status().is_success() => "ok",
        Ok(r) if r.status().is_server_error() => "http_5xx",
        Ok(_) => "http_4xx",
        Err(_) => "unreachable",
    };
    metrics::counter!("opencrane_outbound_requests_total", "service" => "litellm", "result" => result).increment(1);
    metrics::histogram!("opencrane_outbound_request_duration_seconds", "service" => "litellm")
        .record(elapsed.as_secs_f64());
}
