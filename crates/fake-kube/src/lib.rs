//! A **fake** Kubernetes API server for tests, on loopback, in the test's process. No
//! kube-apiserver, kind or k3s can run on the test machine, so the fleet's Kubernetes code is
//! tested against this: it implements the few semantics that code relies on, each written from
//! the Kubernetes API documentation and pinned by a conformance test (`tests/conformance.rs`),
//! and nothing else.
//!
//! Implemented: get, list (label and `metadata.name` field selectors), watch (from a
//! resourceVersion, or all current objects as ADDED first), create (409 AlreadyExists; 404 when
//! the namespace is missing, 403 while it terminates), replace (409 Conflict on a stale
//! resourceVersion), server-side apply (`application/apply-patch+yaml`, `fieldManager` required,
//! create-or-merge), JSON merge patch, JSON patch (add/remove/replace/test), the `status`
//! subresource (the main resource ignores status, `/status` ignores the rest), `metadata.generation`
//! bumped only when something outside metadata and status changes, finalizers (delete sets
//! `deletionTimestamp`; the object goes when the last finalizer is removed) and namespace deletion
//! (the namespace terminates, its objects are deleted, it goes when it is empty). Errors are
//! `Status` objects as the real server sends them.
//!
//! Not implemented (and not relied on): field ownership and apply conflicts between managers,
//! pruning of fields a manager stops applying, admission, defaulting, schema validation (the
//! chart tests validate objects offline), RBAC, paging, bookmarks.
//!
//! Tests inject faults ([`FakeApiServer::fail`], [`FakeApiServer::stall`]) and count requests
//! ([`FakeApiServer::requests`]).

#![allow(clippy::result_large_err, reason = "errors are ready-made HTTP responses of a test fake")]

use std::{
    collections::BTreeMap,
    net::{Ipv4Addr, SocketAddr},
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, oneshot};

/// Where an object lives: `api/v1` or `apis/<group>/<version>`, the plural, the namespace.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    prefix: String,
    plural: String,
    namespace: Option<String>,
    name: String,
}

/// What a request path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Target {
    prefix: String,
    plural: String,
    namespace: Option<String>,
    name: Option<String>,
    status: bool,
}

impl Target {
    fn key(&self, name: &str) -> Key {
        Key {
            prefix: self.prefix.clone(),
            plural: self.plural.clone(),
            namespace: self.namespace.clone(),
            name: name.into(),
        }
    }
}

fn parse_path(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (prefix, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("api/v1".to_owned(), rest),
        ["apis", group, version, rest @ ..] => (format!("apis/{group}/{version}"), rest),
        _ => return None,
    };
    let tail = |tail: &[&str]| -> Option<(Option<String>, bool)> {
        match tail {
            [] => Some((None, false)),
            [name] => Some((Some((*name).to_owned()), false)),
            [name, "status"] => Some((Some((*name).to_owned()), true)),
            _ => None,
        }
    };
    match rest {
        ["namespaces", namespace, plural, more @ ..] if !matches!(*plural, "status" | "finalize") => {
            let (name, status) = tail(more)?;
            Some(Target {
                prefix,
                plural: (*plural).to_owned(),
                namespace: Some((*namespace).to_owned()),
                name,
                status,
            })
        }
        [plural, more @ ..] => {
            let (name, status) = tail(more)?;
            Some(Target { prefix, plural: (*plural).to_owned(), namespace: None, name, status })
        }
        _ => None,
    }
}

/// One change, as a watch reports it.
#[derive(Clone, Debug)]
struct Change {
    resource_version: u64,
    prefix: String,
    plural: String,
    namespace: Option<String>,
    kind: &'static str,
    object: Value,
}

#[derive(Default)]
struct Store {
    resource_version: u64,
    objects: BTreeMap<Key, Value>,
    history: Vec<Change>,
}

/// A fault to inject.
#[derive(Clone, Debug)]
struct Fault {
    method: String,
    path_contains: String,
    action: FaultAction,
    times: usize,
}

#[derive(Clone, Debug)]
enum FaultAction {
    Status(u16),
    Stall(Duration),
}

struct Shared {
    store: Mutex<Store>,
    changes: broadcast::Sender<Change>,
    faults: Mutex<Vec<Fault>>,
    requests: Mutex<Vec<(String, String)>>,
    /// Plurals whose controller the fake plays: a new object gets this status.
    settled: Mutex<BTreeMap<String, Value>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The fake server; stops when dropped.
pub struct FakeApiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
}

impl FakeApiServer {
    /// Starts a server on a free loopback port.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let (changes, _) = broadcast::channel(4096);
        let shared = Arc::new(Shared {
            store: Mutex::new(Store::default()),
            changes,
            faults: Mutex::default(),
            requests: Mutex::default(),
            settled: Mutex::default(),
        });
        let router = Router::new().fallback(handle).with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self { addr, shared, stop: Some(stop) })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answers the next `times` requests whose method is `method` (or any, with `*`) and whose
    /// path contains `path_contains` with a `Status` error of `code` (500, 409, …).
    pub fn fail(&self, method: &str, path_contains: &str, code: u16, times: usize) {
        lock(&self.shared.faults).push(Fault {
            method: method.to_owned(),
            path_contains: path_contains.to_owned(),
            action: FaultAction::Status(code),
            times,
        });
    }

    /// Holds the next `times` matching requests for `delay` before answering them normally (a
    /// client with a shorter timeout sees a timeout).
    pub fn stall(&self, method: &str, path_contains: &str, delay: Duration, times: usize) {
        lock(&self.shared.faults).push(Fault {
            method: method.to_owned(),
            path_contains: path_contains.to_owned(),
            action: FaultAction::Stall(delay),
            times,
        });
    }

    /// Plays the controller of `plural` (e.g. cert-manager for `certificates`): every object of it
    /// created from now on carries `status` at once, as if its controller had written it. Tests
    /// that are not about that controller stay deterministic.
    pub fn settle(&self, plural: &str, status: Value) {
        lock(&self.shared.settled).insert(plural.to_owned(), status);
    }

    /// Drops every pending fault.
    pub fn heal(&self) {
        lock(&self.shared.faults).clear();
    }

    /// Every request so far as (method, path with query).
    pub fn requests(&self) -> Vec<(String, String)> {
        lock(&self.shared.requests).clone()
    }

    /// The stored object at an API path (e.g. `/api/v1/namespaces/acme`), if any.
    pub fn object(&self, path: &str) -> Option<Value> {
        let target = parse_path(path)?;
        let key = target.key(target.name.as_deref()?);
        lock(&self.shared.store).objects.get(&key).cloned()
    }

    /// How many objects exist, by API path of their collection (e.g. `apis/postgresql.cnpg.io/v1/clusters`
    /// → 1), for "nothing is left behind" checks.
    pub fn inventory(&self) -> Vec<String> {
        lock(&self.shared.store)
            .objects
            .keys()
            .map(|k| match &k.namespace {
                Some(ns) => format!("{}/namespaces/{ns}/{}/{}", k.prefix, k.plural, k.name),
                None => format!("{}/{}/{}", k.prefix, k.plural, k.name),
            })
            .collect()
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A `Status` error, as the API server sends it.
fn status(code: u16, reason: &str, message: impl Into<String>) -> Response {
    let body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message.into(),
        "reason": reason,
        "code": code,
    });
    let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (code, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn ok(code: StatusCode, object: &Value) -> Response {
    (code, [(header::CONTENT_TYPE, "application/json")], object.to_string()).into_response()
}

fn query(req: &Request) -> BTreeMap<String, String> {
    req.uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k.to_owned(), decode(v))
        })
        .collect()
}

fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let shown = req.uri().path_and_query().map_or(path.clone(), |p| p.as_str().to_owned());
    lock(&shared.requests).push((method.to_string(), shown));
    let fault = {
        let mut faults = lock(&shared.faults);
        let found = faults.iter_mut().position(|f| {
            (f.method == "*" || f.method.eq_ignore_ascii_case(method.as_str())) && path.contains(&f.path_contains)
        });
        found.map(|i| {
            let action = faults[i].action.clone();
            faults[i].times -= 1;
            if faults[i].times == 0 {
                faults.remove(i);
            }
            action
        })
    };
    match fault {
        Some(FaultAction::Status(code)) => {
            let reason = match code {
                409 => "Conflict",
                404 => "NotFound",
                429 => "TooManyRequests",
                503 => "ServiceUnavailable",
                _ => "InternalError",
            };
            return status(code, reason, format!("injected fault: {code} for {method} {path}"));
        }
        Some(FaultAction::Stall(delay)) => tokio::time::sleep(delay).await,
        None => {}
    }
    let Some(target) = parse_path(&path) else {
        return status(404, "NotFound", format!("the server could not find the requested resource ({path})"));
    };
    let params = query(&req);
    let headers = req.headers().clone();
    let body = match axum::body::to_bytes(req.into_body(), 16 * 1024 * 1024).await {
        Ok(body) => body,
        Err(err) => return status(400, "BadRequest", format!("reading the body: {err}")),
    };
    match (method, target.name.clone()) {
        (Method::GET, Some(name)) => get(&shared, &target, &name),
        (Method::GET, None) if matches!(params.get("watch").map(String::as_str), Some("true" | "1")) => {
            watch(&shared, &target, &params)
        }
        (Method::GET, None) => list(&shared, &target, &params),
        (Method::POST, None) => create(&shared, &target, &body),
        (Method::PUT, Some(name)) => replace(&shared, &target, &name, &body),
        (Method::PATCH, Some(name)) => patch(&shared, &target, &name, &headers, &params, &body),
        (Method::DELETE, Some(name)) => delete(&shared, &target, &name),
        (method, _) => status(405, "MethodNotAllowed", format!("{method} is not supported on {path}")),
    }
}

fn parse_body(body: &Bytes) -> Result<Value, Response> {
    serde_json::from_slice(body)
        .or_else(|_| serde_yaml_ng::from_slice::<Value>(body))
        .map_err(|e| status(400, "BadRequest", format!("the body is not a JSON or YAML object: {e}")))
}

fn name_of(object: &Value) -> Option<&str> {
    object.pointer("/metadata/name").and_then(Value::as_str)
}

fn get(shared: &Shared, target: &Target, name: &str) -> Response {
    match lock(&shared.store).objects.get(&target.key(name)) {
        Some(object) => ok(StatusCode::OK, object),
        None => not_found(target, name),
    }
}

fn not_found(target: &Target, name: &str) -> Response {
    status(404, "NotFound", format!("{} \"{name}\" not found", target.plural))
}

fn matches_selectors(object: &Value, params: &BTreeMap<String, String>) -> bool {
    if let Some(selector) = params.get("labelSelector").filter(|s| !s.is_empty()) {
        for term in selector.split(',') {
            let ok = match term.split_once('=') {
                Some((k, v)) => {
                    object
                        .pointer("/metadata/labels")
                        .and_then(|l| l.get(k.trim_end_matches('=')))
                        .and_then(Value::as_str)
                        == Some(v)
                }
                None => object.pointer("/metadata/labels").and_then(|l| l.get(term)).is_some(),
            };
            if !ok {
                return false;
            }
        }
    }
    if let Some(selector) = params.get("fieldSelector").filter(|s| !s.is_empty()) {
        for term in selector.split(',') {
            if let Some(name) = term.strip_prefix("metadata.name=")
                && name_of(object) != Some(name.trim_start_matches('='))
            {
                return false;
            }
        }
    }
    true
}

fn in_scope(key: &Key, target: &Target) -> bool {
    key.prefix == target.prefix
        && key.plural == target.plural
        && (target.namespace.is_none() || key.namespace == target.namespace)
}

fn list(shared: &Shared, target: &Target, params: &BTreeMap<String, String>) -> Response {
    let store = lock(&shared.store);
    let items: Vec<Value> = store
        .objects
        .iter()
        .filter(|(k, o)| in_scope(k, target) && matches_selectors(o, params))
        .map(|(_, o)| o.clone())
        .collect();
    let kind = items
        .first()
        .and_then(|o| o.get("kind"))
        .and_then(Value::as_str)
        .map_or("List".to_owned(), |k| format!("{k}List"));
    let api_version = target.prefix.trim_start_matches("apis/").trim_start_matches("api/").to_owned();
    let list = json!({
        "kind": kind,
        "apiVersion": api_version,
        "metadata": { "resourceVersion": store.resource_version.to_string() },
        "items": items,
    });
    ok(StatusCode::OK, &list)
}

fn watch(shared: &Arc<Shared>, target: &Target, params: &BTreeMap<String, String>) -> Response {
    let since = params.get("resourceVersion").and_then(|v| v.parse::<u64>().ok()).filter(|v| *v > 0);
    let timeout = params.get("timeoutSeconds").and_then(|v| v.parse::<u64>().ok()).unwrap_or(300);
    let (backlog, receiver) = {
        let store = lock(&shared.store);
        let backlog: Vec<Value> = match since {
            // From a resourceVersion: every change after it.
            Some(since) => store
                .history
                .iter()
                .filter(|c| c.resource_version > since && change_in_scope(c, target))
                .filter(|c| matches_selectors(&c.object, params))
                .map(|c| json!({ "type": c.kind, "object": c.object }))
                .collect(),
            // No resourceVersion: the current objects as ADDED, then changes.
            None => store
                .objects
                .iter()
                .filter(|(k, o)| in_scope(k, target) && matches_selectors(o, params))
                .map(|(_, o)| json!({ "type": "ADDED", "object": o }))
                .collect(),
        };
        (backlog, shared.changes.subscribe())
    };
    let target = target.clone();
    let params = params.clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
    let backlog = futures_util::stream::iter(backlog.into_iter().map(|e| Ok::<_, std::io::Error>(line(&e))));
    let live = futures_util::stream::unfold(receiver, move |mut receiver| {
        let target = target.clone();
        let params = params.clone();
        async move {
            loop {
                match tokio::time::timeout_at(deadline, receiver.recv()).await {
                    Ok(Ok(change))
                        if change_in_scope(&change, &target) && matches_selectors(&change.object, &params) =>
                    {
                        let event = json!({ "type": change.kind, "object": change.object });
                        return Some((Ok::<_, std::io::Error>(line(&event)), receiver));
                    }
                    Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => {}
                    Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => return None,
                }
            }
        }
    });
    let stream = futures_util::StreamExt::chain(backlog, live);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| status(500, "InternalError", "cannot build the watch response"))
}

fn line(event: &Value) -> Bytes {
    let mut text = event.to_string();
    text.push('\n');
    Bytes::from(text)
}

fn change_in_scope(change: &Change, target: &Target) -> bool {
    change.prefix == target.prefix
        && change.plural == target.plural
        && (target.namespace.is_none() || change.namespace == target.namespace)
}

/// Records a change: bumps the resourceVersion, stamps it on the object, keeps it in the history
/// and tells the watchers.
fn record(shared: &Shared, store: &mut Store, key: &Key, kind: &'static str, mut object: Value) -> Value {
    store.resource_version += 1;
    object["metadata"]["resourceVersion"] = json!(store.resource_version.to_string());
    if kind == "DELETED" {
        store.objects.remove(key);
    } else {
        store.objects.insert(key.clone(), object.clone());
    }
    let change = Change {
        resource_version: store.resource_version,
        prefix: key.prefix.clone(),
        plural: key.plural.clone(),
        namespace: key.namespace.clone(),
        kind,
        object: object.clone(),
    };
    store.history.push(change.clone());
    let _ = shared.changes.send(change);
    object
}

/// Checks that a namespaced object may be created: its namespace exists and is not terminating.
fn namespace_admits(store: &Store, target: &Target) -> Result<(), Response> {
    let Some(ns) = &target.namespace else { return Ok(()) };
    let key = Key { prefix: "api/v1".into(), plural: "namespaces".into(), namespace: None, name: ns.clone() };
    match store.objects.get(&key) {
        None => Err(status(404, "NotFound", format!("namespaces \"{ns}\" not found"))),
        Some(n) if n.pointer("/metadata/deletionTimestamp").is_some() => Err(status(
            403,
            "Forbidden",
            format!("unable to create new content in namespace {ns} because it is being terminated"),
        )),
        Some(_) => Ok(()),
    }
}

fn stamp_new(shared: &Shared, target: &Target, object: &mut Value) {
    if let Some(status) = lock(&shared.settled).get(&target.plural) {
        object["status"] = status.clone();
    }
    let meta = &mut object["metadata"];
    meta["uid"] = json!(uuid::Uuid::new_v4().to_string());
    meta["creationTimestamp"] = json!(now());
    meta["generation"] = json!(1);
    if let Some(ns) = &target.namespace {
        meta["namespace"] = json!(ns);
    }
    if target.plural == "namespaces" && object.get("status").is_none() {
        object["status"] = json!({ "phase": "Active" });
    }
}

fn create(shared: &Shared, target: &Target, body: &Bytes) -> Response {
    let mut object = match parse_body(body) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let Some(name) = name_of(&object).map(str::to_owned) else {
        return status(422, "Invalid", "metadata.name: Required value");
    };
    let mut store = lock(&shared.store);
    if let Err(e) = namespace_admits(&store, target) {
        return e;
    }
    let key = target.key(&name);
    if store.objects.contains_key(&key) {
        return status(409, "AlreadyExists", format!("{} \"{name}\" already exists", target.plural));
    }
    if target.plural != "namespaces"
        && let Some(map) = object.as_object_mut()
    {
        map.remove("status");
    }
    stamp_new(shared, target, &mut object);
    let stored = record(shared, &mut store, &key, "ADDED", object);
    ok(StatusCode::CREATED, &stored)
}

/// The object without metadata and status: what `metadata.generation` tracks.
fn spec_part(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    copy
}

/// Stores `next` as the new state of `key` (already present as `current`): applies the status
/// subresource rules, bumps the generation when the spec part changed, and completes a pending
/// deletion when the last finalizer went.
fn update(shared: &Shared, store: &mut Store, key: &Key, current: &Value, mut next: Value, status_only: bool) -> Value {
    if status_only {
        let mut merged = current.clone();
        merged["status"] = next.get("status").cloned().unwrap_or(Value::Null);
        next = merged;
    } else {
        next["status"] = current.get("status").cloned().unwrap_or(Value::Null);
        if next["status"].is_null()
            && let Some(map) = next.as_object_mut()
        {
            map.remove("status");
        }
        // Server-owned metadata stays the server's.
        for field in ["uid", "creationTimestamp", "deletionTimestamp", "namespace", "name"] {
            match current["metadata"].get(field) {
                Some(v) => next["metadata"][field] = v.clone(),
                None => {
                    if let Some(meta) = next["metadata"].as_object_mut() {
                        meta.remove(field);
                    }
                }
            }
        }
    }
    let generation = current.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
    let bump = i64::from(spec_part(current) != spec_part(&next));
    next["metadata"]["generation"] = json!(generation + bump);
    if next == *current {
        return current.clone();
    }
    let deleting = next.pointer("/metadata/deletionTimestamp").is_some();
    let finalizers_left = next.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
    if deleting && !finalizers_left {
        let gone = record(shared, store, key, "DELETED", next);
        finish_namespace(shared, store, key.namespace.as_deref());
        return gone;
    }
    record(shared, store, key, "MODIFIED", next)
}

fn replace(shared: &Shared, target: &Target, name: &str, body: &Bytes) -> Response {
    let next = match parse_body(body) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let mut store = lock(&shared.store);
    let key = target.key(name);
    let Some(current) = store.objects.get(&key).cloned() else { return not_found(target, name) };
    let sent = next.pointer("/metadata/resourceVersion").and_then(Value::as_str);
    let stored = current.pointer("/metadata/resourceVersion").and_then(Value::as_str);
    if sent.is_some() && sent != stored {
        return status(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                target.plural
            ),
        );
    }
    let result = update(shared, &mut store, &key, &current, next, target.status);
    ok(StatusCode::OK, &result)
}

/// Server-side apply, simplified: the applied fields are merged into the object (maps merge,
/// everything else is replaced). Field ownership is not tracked.
fn merge_apply(into: &mut Value, applied: &Value) {
    match (into, applied) {
        (Value::Object(into), Value::Object(applied)) => {
            for (k, v) in applied {
                match into.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => merge_apply(existing, v),
                    _ => {
                        into.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (into, applied) => *into = applied.clone(),
    }
}

/// RFC 7386 JSON merge patch.
fn merge_patch(into: &mut Value, patch: &Value) {
    match patch {
        Value::Object(patch) => {
            if !into.is_object() {
                *into = Value::Object(Map::new());
            }
            if let Value::Object(into) = into {
                for (k, v) in patch {
                    if v.is_null() {
                        into.remove(k);
                    } else {
                        merge_patch(into.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *into = other.clone(),
    }
}

/// RFC 6902 JSON patch: add, remove, replace, test.
fn json_patch(into: &mut Value, ops: &Value) -> Result<(), String> {
    let ops = ops.as_array().ok_or("a JSON patch is an array of operations")?;
    for op in ops {
        let kind = op.get("op").and_then(Value::as_str).ok_or("op missing")?;
        let path = op.get("path").and_then(Value::as_str).ok_or("path missing")?;
        let (parent_path, last) = path.rsplit_once('/').ok_or("path must start with /")?;
        let last = last.replace("~1", "/").replace("~0", "~");
        match kind {
            "test" => {
                let expected = op.get("value").cloned().unwrap_or(Value::Null);
                if into.pointer(path) != Some(&expected) {
                    return Err(format!("test failed at {path}"));
                }
            }
            "remove" => {
                let parent = into.pointer_mut(parent_path).ok_or(format!("no parent at {path}"))?;
                match parent {
                    Value::Object(map) => {
                        map.remove(&last).ok_or(format!("nothing to remove at {path}"))?;
                    }
                    Value::Array(list) => {
                        let i: usize = last.parse().map_err(|_| format!("bad index in {path}"))?;
                        if i >= list.len() {
                            return Err(format!("nothing to remove at {path}"));
                        }
                        list.remove(i);
                    }
                    _ => return Err(format!("cannot remove at {path}")),
                }
            }
            "add" | "replace" => {
                let value = op.get("value").cloned().unwrap_or(Value::Null);
                let parent = into.pointer_mut(parent_path).ok_or(format!("no parent at {path}"))?;
                match parent {
                    Value::Object(map) => {
                        if kind == "replace" && !map.contains_key(&last) {
                            return Err(format!("nothing to replace at {path}"));
                        }
                        map.insert(last, value);
                    }
                    Value::Array(list) if last == "-" => list.push(value),
                    Value::Array(list) => {
                        let i: usize = last.parse().map_err(|_| format!("bad index in {path}"))?;
                        if kind == "replace" {
                            *list.get_mut(i).ok_or(format!("nothing to replace at {path}"))? = value;
                        } else if i <= list.len() {
                            list.insert(i, value);
                        } else {
                            return Err(format!("index out of range in {path}"));
                        }
                    }
                    _ => return Err(format!("cannot {kind} at {path}")),
                }
            }
            other => return Err(format!("unsupported op {other}")),
        }
    }
    Ok(())
}

fn patch(
    shared: &Shared,
    target: &Target,
    name: &str,
    headers: &HeaderMap,
    params: &BTreeMap<String, String>,
    body: &Bytes,
) -> Response {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let body_value = match parse_body(body) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let mut store = lock(&shared.store);
    let key = target.key(name);
    let current = store.objects.get(&key).cloned();
    if content_type.starts_with("application/apply-patch") {
        if params.get("fieldManager").is_none_or(|m| m.is_empty()) {
            return status(400, "BadRequest", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value");
        }
        if name_of(&body_value).is_some_and(|n| n != name) {
            return status(400, "BadRequest", "the name of the object does not match the name in the URL");
        }
        let Some(current) = current else {
            if target.status {
                return not_found(target, name);
            }
            if let Err(e) = namespace_admits(&store, target) {
                return e;
            }
            let mut object = body_value;
            object["metadata"]["name"] = json!(name);
            if target.plural != "namespaces"
                && let Some(map) = object.as_object_mut()
            {
                map.remove("status");
            }
            stamp_new(shared, target, &mut object);
            let stored = record(shared, &mut store, &key, "ADDED", object);
            return ok(StatusCode::CREATED, &stored);
        };
        let mut next = current.clone();
        merge_apply(&mut next, &body_value);
        let result = update(shared, &mut store, &key, &current, next, target.status);
        return ok(StatusCode::OK, &result);
    }
    let Some(current) = current else { return not_found(target, name) };
    let mut next = current.clone();
    if content_type.starts_with("application/merge-patch+json")
        || content_type.starts_with("application/strategic-merge-patch+json")
    {
        merge_patch(&mut next, &body_value);
    } else if content_type.starts_with("application/json-patch+json") {
        if let Err(message) = json_patch(&mut next, &body_value) {
            return status(422, "Invalid", message);
        }
    } else {
        return status(415, "UnsupportedMediaType", format!("unsupported patch type {content_type}"));
    }
    let sent = body_value.pointer("/metadata/resourceVersion").and_then(Value::as_str);
    if sent.is_some() && sent != current.pointer("/metadata/resourceVersion").and_then(Value::as_str) {
        return status(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} \"{name}\": the object has been modified", target.plural),
        );
    }
    let result = update(shared, &mut store, &key, &current, next, target.status);
    ok(StatusCode::OK, &result)
}

fn delete(shared: &Shared, target: &Target, name: &str) -> Response {
    let mut store = lock(&shared.store);
    let key = target.key(name);
    let Some(current) = store.objects.get(&key).cloned() else { return not_found(target, name) };
    let result = delete_object(shared, &mut store, &key, &current);
    ok(StatusCode::OK, &result)
}

/// Deletes one object: with finalizers it only gets a deletionTimestamp; a namespace terminates
/// and takes its objects with it.
fn delete_object(shared: &Shared, store: &mut Store, key: &Key, current: &Value) -> Value {
    let has_finalizers =
        current.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
    if key.prefix == "api/v1" && key.plural == "namespaces" {
        let mut terminating = current.clone();
        if terminating.pointer("/metadata/deletionTimestamp").is_none() {
            terminating["metadata"]["deletionTimestamp"] = json!(now());
            terminating["status"] = json!({ "phase": "Terminating" });
            terminating = record(shared, store, key, "MODIFIED", terminating);
        }
        let inside: Vec<(Key, Value)> = store
            .objects
            .iter()
            .filter(|(k, _)| k.namespace.as_deref() == Some(key.name.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (k, v) in inside {
            delete_object(shared, store, &k, &v);
        }
        finish_namespace(shared, store, Some(&key.name));
        return terminating;
    }
    if has_finalizers {
        if current.pointer("/metadata/deletionTimestamp").is_some() {
            return current.clone();
        }
        let mut marked = current.clone();
        marked["metadata"]["deletionTimestamp"] = json!(now());
        marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        return record(shared, store, key, "MODIFIED", marked);
    }
    let gone = record(shared, store, key, "DELETED", current.clone());
    finish_namespace(shared, store, key.namespace.as_deref());
    gone
}

/// Removes a terminating namespace once nothing is left in it.
fn finish_namespace(shared: &Shared, store: &mut Store, namespace: Option<&str>) {
    let Some(ns) = namespace else { return };
    let key = Key { prefix: "api/v1".into(), plural: "namespaces".into(), namespace: None, name: ns.to_owned() };
    let terminating = store.objects.get(&key).is_some_and(|n| n.pointer("/metadata/deletionTimestamp").is_some());
    let empty = !store.objects.keys().any(|k| k.namespace.as_deref() == Some(ns));
    if terminating
        && empty
        && let Some(object) = store.objects.get(&key).cloned()
    {
        record(shared, store, &key, "DELETED", object);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_address_namespaced_and_cluster_scoped_objects() {
        let t = parse_path("/api/v1/namespaces/acme").unwrap();
        assert_eq!((t.plural.as_str(), t.namespace, t.name.as_deref()), ("namespaces", None, Some("acme")));
        let t = parse_path("/api/v1/namespaces/acme/secrets/db").unwrap();
        assert_eq!(
            (t.plural.as_str(), t.namespace.as_deref(), t.name.as_deref()),
            ("secrets", Some("acme"), Some("db"))
        );
        let t = parse_path("/apis/opencrane.io/v1alpha1/clustertenants/acme/status").unwrap();
        assert_eq!((t.prefix.as_str(), t.status), ("apis/opencrane.io/v1alpha1", true));
        let t = parse_path("/apis/postgresql.cnpg.io/v1/namespaces/x/clusters").unwrap();
        assert_eq!((t.plural.as_str(), t.name), ("clusters", None));
        assert!(parse_path("/version").is_none());
    }

    #[test]
    fn merge_and_json_patches_follow_their_rfcs() {
        let mut doc = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        merge_patch(&mut doc, &json!({"a": {"b": null, "d": 3}, "l": [3]}));
        assert_eq!(doc, json!({"a": {"c": 2, "d": 3}, "l": [3]}));
        let mut doc = json!({"metadata": {"finalizers": ["x", "y"]}});
        json_patch(&mut doc, &json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "x"}, {"op": "remove", "path": "/metadata/finalizers/0"}])).unwrap();
        assert_eq!(doc, json!({"metadata": {"finalizers": ["y"]}}));
        assert!(
            json_patch(&mut doc, &json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "x"}])).is_err()
        );
        json_patch(&mut doc, &json!([{"op": "add", "path": "/metadata/finalizers/-", "value": "z"}])).unwrap();
        assert_eq!(doc["metadata"]["finalizers"], json!(["y", "z"]));
        assert_eq!(decode("metadata.name%3Dacme"), "metadata.name=acme");
    }
}
