//! The HTTP side: the JWT-bearer token exchange and its cache, the one request path every call
//! takes (org header, timeout, retries for idempotent calls only, one retry with a fresh token on
//! 401), and Zitadel's error bodies turned into [`Error`]s that name the call.

use std::{
    sync::{Arc, Mutex, RwLock},
    time::Duration,
};

use chrono::{DateTime, TimeDelta, Utc};
use reqwest::Method;
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::Value;

use crate::key::{KeyError, ServiceAccountKey, Signer};

/// The scope that makes the access token valid for Zitadel's own APIs.
pub const API_SCOPE: &str = "openid urn:zitadel:iam:org:project:id:zitadel:aud";

/// Why a call failed. Messages name the call and carry Zitadel's message, never a key or token.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Zitadel could not be reached or did not answer in time.
    #[error("{call}: Zitadel is unreachable ({detail})")]
    Unreachable {
        /// The call, e.g. `create organisation (POST /v2/organizations)`.
        call: &'static str,
        /// The transport error.
        detail: String,
    },
    /// The token exchange was refused (an unknown, expired or revoked key; a user without rights).
    #[error("token exchange: Zitadel refused the service-account key {key_id}: {error}{}", .description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    TokenRefused {
        /// The key's id (public).
        key_id: String,
        /// HTTP status.
        status: u16,
        /// The OAuth error code (`invalid_grant`, …).
        error: String,
        /// Zitadel's description.
        description: Option<String>,
    },
    /// Zitadel answered the call with an error.
    #[error("{call}: Zitadel answered {status}: {message}")]
    Status {
        /// The call.
        call: &'static str,
        /// HTTP status.
        status: u16,
        /// Zitadel's message (trimmed).
        message: String,
    },
    /// The answer was not the documented shape.
    #[error("{call}: Zitadel's answer was not understood: {detail}")]
    Shape {
        /// The call.
        call: &'static str,
        /// What did not parse.
        detail: String,
    },
    /// The key is unusable.
    #[error(transparent)]
    Key(#[from] KeyError),
}

impl Error {
    /// Zitadel says the thing does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Status { status: 404, .. })
    }

    /// Zitadel says the thing exists already.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Self::Status { status: 409, .. })
    }

    /// Zitadel did not answer (or answered a server error): worth retrying later.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unreachable { .. } | Self::Status { status: 500..=599, .. })
    }
}

/// The result of a call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Timeouts and retries.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// One request, end to end.
    pub request: Duration,
    /// Connecting.
    pub connect: Duration,
    /// Attempts of an idempotent call (1 = no retry).
    pub attempts: u32,
    /// Pause before the n-th retry: n × this.
    pub backoff: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            request: Duration::from_secs(10),
            connect: Duration::from_secs(3),
            attempts: 3,
            backoff: Duration::from_millis(200),
        }
    }
}

/// The outcome of the last token exchange (for the identity page's banner).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// When it happened.
    pub at: DateTime<Utc>,
    /// Whether Zitadel issued a token.
    pub ok: bool,
    /// Why not, when it failed.
    pub detail: Option<String>,
}

#[derive(Clone)]
struct Cached {
    token: String,
    until: DateTime<Utc>,
}

struct Inner {
    api: String,
    http: reqwest::Client,
    timeouts: Timeouts,
    signer: RwLock<Arc<Signer>>,
    token: tokio::sync::Mutex<Option<Cached>>,
    last_exchange: Mutex<Option<Exchange>>,
    last_success: Mutex<Option<DateTime<Utc>>>,
    /// The caller's W3C trace context, sent with every Management API call.
    trace: std::sync::OnceLock<TraceHeaders>,
}

/// What each call sends besides its own headers: the caller's trace context (`traceparent`),
/// computed inside the call's span.
pub type TraceHeaders = Arc<dyn Fn() -> Vec<(String, String)> + Send + Sync>;

/// A client of one Zitadel instance, signed in with one service-account key (swappable).
/// Cheap to clone; clones share the key, the token cache and the connection pool.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("api", &self.inner.api).field("key_id", &self.key_id()).finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<i64>,
}

#[derive(Deserialize)]
struct OAuthError {
    #[serde(default)]
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// How long a token is used: until a minute before it expires, and at least half its life.
fn cache_until(now: DateTime<Utc>, expires_in: Option<i64>) -> DateTime<Utc> {
    let life = expires_in.unwrap_or(3600).max(0);
    now + TimeDelta::seconds((life - 60).max(life / 2))
}

/// Zitadel's error body: `{code, message, details}` (gRPC gateway: numeric code; connect: a
/// string). Only the message is kept.
fn zitadel_message(body: &str) -> String {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| body.trim().to_owned());
    let message: String = message.chars().take(300).collect();
    if message.is_empty() { "(no message)".into() } else { message }
}

/// Whether a call may be sent twice without effect.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Idempotent {
    Yes,
    No,
}

impl Client {
    /// A client of the instance at `api_url`, signing with `key`.
    pub fn new(api_url: &str, key: &ServiceAccountKey, timeouts: Timeouts) -> Result<Self> {
        let signer = Signer::new(key)?;
        let http = reqwest::Client::builder()
            .timeout(timeouts.request)
            .connect_timeout(timeouts.connect)
            .build()
            .map_err(|e| Error::Unreachable { call: "client", detail: e.to_string() })?;
        Ok(Self::with_http(api_url, http, timeouts, signer))
    }

    fn with_http(api_url: &str, http: reqwest::Client, timeouts: Timeouts, signer: Signer) -> Self {
        Self {
            inner: Arc::new(Inner {
                api: api_url.trim_end_matches('/').to_owned(),
                http,
                timeouts,
                signer: RwLock::new(Arc::new(signer)),
                token: tokio::sync::Mutex::new(None),
                last_exchange: Mutex::new(None),
                last_success: Mutex::new(None),
                trace: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Sends `headers` (the trace context) with every call of this client and its clones (set once).
    pub fn set_trace_headers(&self, headers: TraceHeaders) {
        let _ = self.inner.trace.set(headers);
    }

    /// A throwaway client of the same instance signing with `key` (its own token cache): how a
    /// candidate key is validated before anything uses it.
    pub fn candidate(&self, key: &ServiceAccountKey) -> Result<Self> {
        let signer = Signer::new(key)?;
        Ok(Self::with_http(&self.inner.api, self.inner.http.clone(), self.inner.timeouts, signer))
    }

    /// Starts signing with `key` (already validated) and forgets the cached token; answers the
    /// previous key's id.
    pub fn swap_key(&self, key: &ServiceAccountKey) -> Result<String> {
        let signer = Arc::new(Signer::new(key)?);
        let previous = {
            let mut current = self.inner.signer.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            std::mem::replace(&mut *current, signer)
        };
        if let Ok(mut token) = self.inner.token.try_lock() {
            *token = None;
        } else {
            // A call holds the cache right now; the next 401 clears it.
            tracing::debug!("token cache busy during key swap");
        }
        tracing::info!(key_id = %self.key_id(), previous_key_id = %previous.key_id(), "Zitadel service-account key swapped");
        Ok(previous.key_id().to_owned())
    }

    fn signer(&self) -> Arc<Signer> {
        self.inner.signer.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The instance URL.
    pub fn api_url(&self) -> &str {
        &self.inner.api
    }

    /// The key in use.
    pub fn key_id(&self) -> String {
        self.signer().key_id().to_owned()
    }

    /// The machine user the key belongs to.
    pub fn user_id(&self) -> String {
        self.signer().user_id().to_owned()
    }

    /// When the key in use expires.
    pub fn key_expires(&self) -> Option<DateTime<Utc>> {
        self.signer().expires()
    }

    /// The last token exchange's outcome.
    pub fn last_exchange(&self) -> Option<Exchange> {
        self.inner.last_exchange.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The last successful token exchange.
    pub fn last_successful_exchange(&self) -> Option<DateTime<Utc>> {
        *self.inner.last_success.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn note_exchange(&self, ok: bool, detail: Option<String>) {
        let at = Utc::now();
        *self.inner.last_exchange.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(Exchange { at, ok, detail });
        if ok {
            *self.inner.last_success.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(at);
        }
    }

    /// An access token: the cached one while it is fresh, else a new JWT-bearer exchange.
    pub async fn token(&self) -> Result<String> {
        let mut cache = self.inner.token.lock().await;
        if let Some(cached) = cache.as_ref().filter(|c| c.until > Utc::now()) {
            return Ok(cached.token.clone());
        }
        let fresh = self.exchange().await;
        match fresh {
            Ok(cached) => {
                self.note_exchange(true, None);
                let token = cached.token.clone();
                *cache = Some(cached);
                Ok(token)
            }
            Err(e) => {
                self.note_exchange(false, Some(e.to_string()));
                *cache = None;
                Err(e)
            }
        }
    }

    async fn exchange(&self) -> Result<Cached> {
        const CALL: &str = "token exchange (POST /oauth/v2/token)";
        let signer = self.signer();
        let now = Utc::now();
        signer.check_not_expired(now)?;
        let assertion = signer.assertion(&self.inner.api, now)?;
        let form = [
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", assertion.as_str()),
            ("scope", API_SCOPE),
        ];
        let mut last = None;
        for attempt in 0..self.inner.timeouts.attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(self.inner.timeouts.backoff * attempt).await;
            }
            let response =
                match self.inner.http.post(format!("{}/oauth/v2/token", self.inner.api)).form(&form).send().await {
                    Ok(r) => r,
                    Err(e) => {
                        last = Some(Error::Unreachable { call: CALL, detail: transport(&e) });
                        continue;
                    }
                };
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            if status.is_success() {
                let answer: TokenAnswer =
                    serde_json::from_str(&body).map_err(|e| Error::Shape { call: CALL, detail: e.to_string() })?;
                return Ok(Cached { token: answer.access_token, until: cache_until(Utc::now(), answer.expires_in) });
            }
            // The exchange creates nothing, so a server error is worth another attempt.
            if status.is_server_error() {
                last = Some(Error::Status { call: CALL, status: status.as_u16(), message: zitadel_message(&body) });
                continue;
            }
            let oauth: OAuthError =
                serde_json::from_str(&body).unwrap_or(OAuthError { error: String::new(), error_description: None });
            return Err(Error::TokenRefused {
                key_id: signer.key_id().to_owned(),
                status: status.as_u16(),
                error: if oauth.error.is_empty() { format!("HTTP {}", status.as_u16()) } else { oauth.error },
                description: oauth.error_description.map(|d| d.chars().take(300).collect()),
            });
        }
        Err(last.unwrap_or(Error::Unreachable { call: CALL, detail: "no attempt was made".into() }))
    }

    /// Sends one call: `org` sets `x-zitadel-orgid`; `idempotent` calls are retried on transport
    /// errors and 5xx; every call is retried once with a fresh token on 401.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        call: &'static str,
        method: Method,
        path: &str,
        org: Option<&str>,
        body: Option<&Value>,
        idempotent: Idempotent,
    ) -> Result<T> {
        let attempts = if idempotent == Idempotent::Yes { self.inner.timeouts.attempts.max(1) } else { 1 };
        let mut last = None;
        let mut refreshed = false;
        let mut attempt = 0;
        while attempt < attempts {
            if attempt > 0 {
                tokio::time::sleep(self.inner.timeouts.backoff * attempt).await;
            }
            attempt += 1;
            let token = self.token().await?;
            let mut request =
                self.inner.http.request(method.clone(), format!("{}{path}", self.inner.api)).bearer_auth(&token);
            if let Some(org) = org {
                request = request.header("x-zitadel-orgid", org);
            }
            if let Some(body) = body {
                request = request.json(body);
            }
            let span =
                tracing::info_span!("zitadel", otel.name = %format!("Zitadel {method} {call}"), otel.kind = "client");
            if let Some(trace) = self.inner.trace.get() {
                for (name, value) in span.in_scope(|| trace()) {
                    request = request.header(name, value);
                }
            }
            let sent = std::time::Instant::now();
            let response = tracing::Instrument::instrument(request.send(), span).await;
            record_call(&response, sent.elapsed());
            let response = match response {
                Ok(r) => r,
                Err(e) => {
                    last = Some(Error::Unreachable { call, detail: transport(&e) });
                    continue;
                }
            };
            let status = response.status();
            let text = match response.text().await {
                Ok(text) => text,
                Err(e) => {
                    last = Some(Error::Unreachable { call, detail: transport(&e) });
                    continue;
                }
            };
            if status.is_success() {
                let text = if text.trim().is_empty() { "{}" } else { text.as_str() };
                return serde_json::from_str(text).map_err(|e| Error::Shape { call, detail: e.to_string() });
            }
            if status == reqwest::StatusCode::UNAUTHORIZED && !refreshed {
                // The token was revoked or the instance restarted: one more try with a new one.
                refreshed = true;
                *self.inner.token.lock().await = None;
                attempt -= 1;
                continue;
            }
            let err = Error::Status { call, status: status.as_u16(), message: zitadel_message(&text) };
            if !status.is_server_error() {
                return Err(err);
            }
            last = Some(err);
        }
        Err(last.unwrap_or(Error::Unreachable { call, detail: "no attempt was made".into() }))
    }
}

/// Counts one Management API call in `opencrane_outbound_requests_total{service="zitadel"}` by its
/// result (`ok`, `http_4xx`, `http_5xx`, `unreachable`) and times it.
fn record_call(response: &reqwest::Result<reqwest::Response>, elapsed: std::time::Duration) {
    let result = match response {
        Ok(r) if r.status().is_success() => "ok",
        Ok(r) if r.status().is_server_error() => "http_5xx",
        Ok(_) => "http_4xx",
        Err(_) => "unreachable",
    };
    metrics::counter!("opencrane_outbound_requests_total", "service" => "zitadel", "result" => result).increment(1);
    metrics::histogram!("opencrane_outbound_request_duration_seconds", "service" => "zitadel")
        .record(elapsed.as_secs_f64());
}

impl Signer {
    fn check_not_expired(&self, now: DateTime<Utc>) -> Result<(), KeyError> {
        match self.expires() {
            Some(expired) if expired <= now => Err(KeyError::Expired { key_id: self.key_id().to_owned(), expired }),
            _ => Ok(()),
        }
    }
}

/// A transport error in one line (reqwest's Display omits the cause).
fn transport(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    match std::error::Error::source(e) {
        Some(source) => format!("{kind}: {source}"),
        None => kind.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_used_until_a_minute_before_expiry_and_at_least_half_their_life() {
        let now = Utc::now();
        assert_eq!(cache_until(now, Some(3600)), now + TimeDelta::seconds(3540));
        assert_eq!(cache_until(now, None), now + TimeDelta::seconds(3540));
        assert_eq!(cache_until(now, Some(60)), now + TimeDelta::seconds(30));
        assert_eq!(cache_until(now, Some(0)), now);
    }

    #[test]
    fn zitadel_error_bodies_become_their_message() {
        assert_eq!(
            zitadel_message(r#"{"code":5,"message":"Project not found (PROJECT-3M9sd)"}"#),
            "Project not found (PROJECT-3M9sd)"
        );
        assert_eq!(zitadel_message(r#"{"code":"not_found","message":"x"}"#), "x");
        assert_eq!(zitadel_message("upstream down"), "upstream down");
        assert_eq!(zitadel_message(""), "(no message)");
    }
}
