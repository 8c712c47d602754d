//! A fake LiteLLM proxy, built from LiteLLM's documented admin API shapes, for tests.
//!
//! The real proxy keeps keys in Postgres through Prisma, whose engines are downloaded from
//! `binaries.prisma.sh` at first start; this machine cannot reach that host, so the proxy cannot
//! manage keys here. The fake implements the calls the portal makes (`/key/generate|update|info|
//! list|delete|block|unblock`, `/model/new|info|delete`, `/credentials`, `/spend/logs`,
//! `/config/update`) with the same request and answer shapes, checks the master key, and enforces
//! on `/chat/completions` what LiteLLM enforces: a blocked key, a model outside the key's list, a
//! spend at or above `max_budget` are refused; otherwise the request's cost is added to the key's
//! spend and logged.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, MutexGuard},
};

use axum::{
    Json, Router,
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::{delete, get, post},
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};
/// A stand-in for LiteLLM's token hash: distinct per key, stable, not the key itself.
fn hex_sha256(text: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// A key as the fake holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeKey {
    /// The secret.
    pub key: String,
    /// Hashed token.
    pub token: String,
    /// Alias.
    pub alias: String,
    /// Allowed models (empty = all, as in LiteLLM).
    pub models: Vec<String>,
    /// Budget.
    pub max_budget: Option<f64>,
    /// Blocked.
    pub blocked: bool,
    /// Total spend.
    pub spend: f64,
    /// Metadata.
    pub metadata: Value,
}

#[derive(Debug, Default)]
struct FakeState {
    master_key: String,
    keys: BTreeMap<String, FakeKey>,
    models: Vec<Value>,
    credentials: BTreeMap<String, Value>,
    logs: Vec<Value>,
    router_settings: Value,
    fail_next: Vec<u16>,
    calls: Vec<String>,
    serial: u64,
}

/// A running fake.
#[derive(Clone, Debug)]
pub struct FakeLiteLlm {
    /// Base URL.
    pub url: String,
    state: Arc<Mutex<FakeState>>,
}

type Shared = Arc<Mutex<FakeState>>;

fn lock(state: &Shared) -> MutexGuard<'_, FakeState> {
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": { "message": message } }))).into_response()
}

/// Checks the master key and injected faults; `Some` is the answer to send instead.
fn admit(state: &Shared, headers: &HeaderMap, call: &str) -> Option<Response> {
    let mut s = lock(state);
    s.calls.push(call.to_owned());
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    if bearer != Some(s.master_key.as_str()) {
        return Some(error(StatusCode::UNAUTHORIZED, "Authentication Error, invalid master key"));
    }
    if !s.fail_next.is_empty() {
        let status = s.fail_next.remove(0);
        return Some(error(
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "injected fault",
        ));
    }
    None
}

fn key_json(k: &FakeKey) -> Value {
    json!({
        "token": k.token, "key_alias": k.alias, "models": k.models, "max_budget": k.max_budget,
        "blocked": k.blocked, "spend": k.spend, "metadata": k.metadata,
    })
}

fn apply(k: &mut FakeKey, body: &Value) {
    if let Some(models) = body.get("models").and_then(Value::as_array) {
        k.models = models.iter().filter_map(Value::as_str).map(str::to_owned).collect();
    }
    if let Some(budget) = body.get("max_budget") {
        k.max_budget = budget.as_f64();
    }
    if let Some(alias) = body.get("key_alias").and_then(Value::as_str) {
        k.alias = alias.to_owned();
    }
    if let Some(meta) = body.get("metadata").filter(|m| m.is_object()) {
        k.metadata = meta.clone();
    }
    if let Some(blocked) = body.get("blocked").and_then(Value::as_bool) {
        k.blocked = blocked;
    }
}

async fn generate(State(st): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(r) = admit(&st, &headers, "key/generate") {
        return r;
    }
    let mut s = lock(&st);
    s.serial += 1;
    let key = format!("sk-fake-{:08}", s.serial);
    let token = hex_sha256(&key);
    let mut k = FakeKey {
        key: key.clone(),
        token: token.clone(),
        alias: String::new(),
        models: Vec::new(),
        max_budget: None,
        blocked: false,
        spend: 0.0,
        metadata: json!({}),
    };
    apply(&mut k, &body);
    if s.keys.values().any(|other| other.alias == k.alias && !k.alias.is_empty()) {
        return error(StatusCode::BAD_REQUEST, "Unique key aliases across all keys are required");
    }
    s.keys.insert(token.clone(), k);
    Json(json!({ "key": key, "token_id": token, "key_alias": body.get("key_alias") })).into_response()
}

fn token_of(s: &FakeState, key: &str) -> Option<String> {
    if s.keys.contains_key(key) {
        return Some(key.to_owned());
    }
    s.keys.values().find(|k| k.key == key).map(|k| k.token.clone())
}

async fn update(State(st): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(r) = admit(&st, &headers, "key/update") {
        return r;
    }
    let mut s = lock(&st);
    let Some(token) = body.get("key").and_then(Value::as_str).and_then(|k| token_of(&s, k)) else {
        return error(StatusCode::NOT_FOUND, "key not found");
    };
    let Some(k) = s.keys.get_mut(&token) else { return error(StatusCode::NOT_FOUND, "key not found") };
    apply(k, &body);
    Json(key_json(k)).into_response()
}

async fn block(
    State(st): State<Shared>,
    headers: HeaderMap,
    Path(action): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    if let Some(r) = admit(&st, &headers, &format!("key/{action}")) {
        return r;
    }
    let mut s = lock(&st);
    let Some(token) = body.get("key").and_then(Value::as_str).and_then(|k| token_of(&s, k)) else {
        return error(StatusCode::NOT_FOUND, "key not found");
    };
    let Some(k) = s.keys.get_mut(&token) else { return error(StatusCode::NOT_FOUND, "key not found") };
    match action.as_str() {
        "block" => k.blocked = true,
        "unblock" => k.blocked = false,
        _ => return error(StatusCode::NOT_FOUND, "no such route"),
    }
    Json(key_json(k)).into_response()
}

#[derive(Deserialize)]
struct KeyQuery {
    key: String,
}

async fn info(State(st): State<Shared>, headers: HeaderMap, Query(q): Query<KeyQuery>) -> Response {
    if let Some(r) = admit(&st, &headers, "key/info") {
        return r;
    }
    let s = lock(&st);
    match token_of(&s, &q.key).and_then(|t| s.keys.get(&t)) {
        Some(k) => Json(json!({ "key": q.key, "info": key_json(k) })).into_response(),
        None => error(StatusCode::NOT_FOUND, "key not found"),
    }
}

#[derive(Deserialize)]
struct ListQuery {
    #[serde(default)]
    page: Option<usize>,
    #[serde(default)]
    size: Option<usize>,
}

async fn list(State(st): State<Shared>, headers: HeaderMap, Query(q): Query<ListQuery>) -> Response {
    if let Some(r) = admit(&st, &headers, "key/list") {
        return r;
    }
    let s = lock(&st);
    let size = q.size.unwrap_or(10).clamp(1, 100);
    let page = q.page.unwrap_or(1).max(1);
    let all: Vec<Value> = s.keys.values().map(key_json).collect();
    let total_pages = all.len().div_ceil(size).max(1);
    let keys: Vec<Value> = all.into_iter().skip((page - 1) * size).take(size).collect();
    Json(json!({ "keys": keys, "total_count": s.keys.len(), "current_page": page, "total_pages": total_pages }))
        .into_response()
}

async fn delete_keys(State(st): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(r) = admit(&st, &headers, "key/delete") {
        return r;
    }
    let mut s = lock(&st);
    let aliases: Vec<String> =
        body["key_aliases"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect();
    let before = s.keys.len();
    s.keys.retain(|_, k| !aliases.contains(&k.alias));
    Json(json!({ "deleted_keys": before - s.keys.len() })).into_response()
}

async fn model_info(State(st): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(r) = admit(&st, &headers, "model/info") {
        return r;
    }
    Json(json!({ "data": lock(&st).models })).into_response()
}

async fn model_new(State(st): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(r) = admit(&st, &headers, "model/new") {
        return r;
    }
    let mut s = lock(&st);
    let id = body["model_info"]["id"].as_str().unwrap_or_default().to_owned();
    if s.models.iter().any(|m| m["model_info"]["id"] == json!(id)) {
        return error(StatusCode::BAD_REQUEST, "a model with this id exists");
    }
    s.models.push(body);
    Json(json!({ "model_id": id })).into_response()
}

async fn model_delete(State(st): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(r) = admit(&st, &headers, "model/delete") {
        return r;
    }
    let mut s = lock(&st);
    let before = s.models.len();
    s.models.retain(|m| m["model_info"]["id"] != body["id"]);
    if s.models.len() == before {
        return error(StatusCode::NOT_FOUND, "model not found");
    }
    Json(json!({ "message": "deleted" })).into_response()
}

async fn credentials(State(st): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(r) = admit(&st, &headers, "credentials/list") {
        return r;
    }
    let s = lock(&st);
    let list: Vec<Value> = s
        .credentials
        .iter()
        .map(|(name, c)| json!({ "credential_name": name, "credential_info": c["credential_info"] }))
        .collect();
    Json(json!({ "credentials": list })).into_response()
}

async fn credential_new(State(st): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(r) = admit(&st, &headers, "credentials/new") {
        return r;
    }
    let mut s = lock(&st);
    let name = body["credential_name"].as_str().unwrap_or_default().to_owned();
    if s.credentials.contains_key(&name) {
        return error(StatusCode::BAD_REQUEST, "credential exists");
    }
    s.credentials.insert(name, body);
    Json(json!({ "success": true })).into_response()
}

async fn credential_delete(State(st): State<Shared>, headers: HeaderMap, Path(name): Path<String>) -> Response {
    if let Some(r) = admit(&st, &headers, "credentials/delete") {
        return r;
    }
    match lock(&st).credentials.remove(&name) {
        Some(_) => Json(json!({ "success": true })).into_response(),
        None => error(StatusCode::NOT_FOUND, "credential not found"),
    }
}

#[derive(Deserialize)]
struct SpendQuery {
    start_date: String,
    end_date: String,
}

async fn spend_logs(State(st): State<Shared>, headers: HeaderMap, Query(q): Query<SpendQuery>) -> Response {
    if let Some(r) = admit(&st, &headers, "spend/logs") {
        return r;
    }
    let parse = |d: &str| {
        chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|t| t.and_utc())
    };
    let (Some(from), Some(to)) = (parse(&q.start_date), parse(&q.end_date)) else {
        return error(StatusCode::BAD_REQUEST, "dates are YYYY-MM-DD");
    };
    let s = lock(&st);
    let logs: Vec<Value> = s
        .logs
        .iter()
        .filter(|l| {
            l["startTime"]
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| t >= from && t <= to)
        })
        .cloned()
        .collect();
    Json(Value::Array(logs)).into_response()
}

async fn config_update(State(st): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(r) = admit(&st, &headers, "config/update") {
        return r;
    }
    lock(&st).router_settings = body["router_settings"].clone();
    Json(json!({ "message": "updated" })).into_response()
}

async fn chat(State(st): State<Shared>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned();
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let cost = body["mock_cost"].as_f64().unwrap_or(0.01);
    // LiteLLM logs the provider's usage; the fake's is given by the request (or 10 + 5).
    let prompt = body["mock_prompt_tokens"].as_i64().unwrap_or(10);
    let completion = body["mock_completion_tokens"].as_i64().unwrap_or(5);
    let mut s = lock(&st);
    let Some(token) = token_of(&s, &bearer) else { return error(StatusCode::UNAUTHORIZED, "invalid key") };
    let Some(k) = s.keys.get_mut(&token) else { return error(StatusCode::UNAUTHORIZED, "invalid key") };
    if k.blocked {
        return error(StatusCode::UNAUTHORIZED, "Key is blocked");
    }
    if !k.models.is_empty() && !k.models.contains(&model) {
        return error(StatusCode::UNAUTHORIZED, "key not allowed to access model");
    }
    if k.max_budget.is_some_and(|b| k.spend >= b) {
        return error(StatusCode::BAD_REQUEST, "Budget has been exceeded");
    }
    k.spend += cost;
    let token = k.token.clone();
    s.serial += 1;
    let id = format!("req-{}", s.serial);
    s.logs.push(json!({
        "request_id": id, "api_key": token, "spend": cost, "startTime": Utc::now().to_rfc3339(),
        "model_group": model, "model": format!("upstream/{model}"),
        "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
    }));
    let usage =
        json!({ "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion });
    Json(json!({ "id": id, "choices": [{ "message": { "role": "assistant", "content": "ok" } }], "usage": usage }))
        .into_response()
}

impl FakeLiteLlm {
    /// Starts a fake on a free loopback port, accepting `master_key`.
    pub async fn start(master_key: &str) -> std::io::Result<Self> {
        let state: Shared =
            Arc::new(Mutex::new(FakeState { master_key: master_key.to_owned(), ..FakeState::default() }));
        let app = Router::new()
            .route("/key/generate", post(generate))
            .route("/key/update", post(update))
            .route("/key/info", get(info))
            .route("/key/list", get(list))
            .route("/key/delete", post(delete_keys))
            .route("/key/{action}", post(block))
            .route("/model/info", get(model_info))
            .route("/model/new", post(model_new))
            .route("/model/delete", post(model_delete))
            .route("/credentials", get(credentials).post(credential_new))
            .route("/credentials/{name}", delete(credential_delete))
            .route("/spend/logs", get(spend_logs))
            .route("/config/update", post(config_update))
            .route("/chat/completions", post(chat))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { url, state })
    }

    /// The key with `alias`.
    pub fn key(&self, alias: &str) -> Option<FakeKey> {
        lock(&self.state).keys.values().find(|k| k.alias == alias).cloned()
    }

    /// Every key.
    pub fn keys(&self) -> Vec<FakeKey> {
        lock(&self.state).keys.values().cloned().collect()
    }

    /// Changes a key behind the portal's back (to test drift repair).
    pub fn tamper(&self, alias: &str, change: impl FnOnce(&mut FakeKey)) {
        if let Some(k) = lock(&self.state).keys.values_mut().find(|k| k.alias == alias) {
            change(k);
        }
    }

    /// Adds a key the portal did not make.
    pub fn add_foreign_key(&self, alias: &str) {
        let mut s = lock(&self.state);
        let token = hex_sha256(alias);
        s.keys.insert(
            token.clone(),
            FakeKey {
                key: format!("sk-{alias}"),
                token,
                alias: alias.into(),
                models: vec![],
                max_budget: None,
                blocked: false,
                spend: 0.0,
                metadata: json!({}),
            },
        );
    }

    /// Logs spend of `amount` on the key with `alias` at `at` (as a request would).
    pub fn record_spend(&self, alias: &str, model: &str, amount: f64, at: DateTime<Utc>) {
        self.record_usage(alias, model, amount, (0, 0), at);
    }

    /// As [`Self::record_spend`], with the request's (prompt, completion) tokens.
    pub fn record_usage(&self, alias: &str, model: &str, amount: f64, tokens: (i64, i64), at: DateTime<Utc>) {
        let mut s = lock(&self.state);
        s.serial += 1;
        let id = format!("req-{}", s.serial);
        let Some(k) = s.keys.values_mut().find(|k| k.alias == alias) else { return };
        k.spend += amount;
        let token = k.token.clone();
        s.logs.push(json!({
            "request_id": id, "api_key": token, "spend": amount, "startTime": at.to_rfc3339(),
            "model_group": model, "model": format!("upstream/{model}"),
            "prompt_tokens": tokens.0, "completion_tokens": tokens.1, "total_tokens": tokens.0 + tokens.1,
        }));
    }

    /// The deployments LiteLLM holds.
    pub fn models(&self) -> Vec<Value> {
        lock(&self.state).models.clone()
    }

    /// The credentials LiteLLM holds (with values, which the real API never returns).
    pub fn credentials(&self) -> BTreeMap<String, Value> {
        lock(&self.state).credentials.clone()
    }

    /// The router settings last pushed.
    pub fn router_settings(&self) -> Value {
        lock(&self.state).router_settings.clone()
    }

    /// Makes the next admin calls answer these statuses.
    pub fn fail_next(&self, statuses: &[u16]) {
        lock(&self.state).fail_next.extend_from_slice(statuses);
    }

    /// Forgets the failures [`Self::fail_next`] queued that no request used yet.
    pub fn heal(&self) {
        lock(&self.state).fail_next.clear();
    }

    /// The admin calls received so far (names like `key/update`), and forgets them.
    pub fn take_calls(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.state).calls)
    }
}
