//! A FAKE Zitadel for tests, on loopback. No Zitadel can run on the test machine (it needs its
//! own database, a master key and a first-instance setup we cannot download), so this serves the
//! calls of [`crate::calls`] with Zitadel's documented request and answer shapes and the
//! behaviours the fleet relies on, each covered by a conformance test in `tests/it/fake.rs`:
//!
//! - the JWT-bearer exchange checks the assertion against the *registered public key* of its
//!   `kid` (RS256, `iss = sub = userId`, `aud` = the instance URL, unexpired key): an unknown,
//!   removed or expired key is `400 invalid_grant` — the failure that broke the original's
//!   organisation provisioning when its key expired;
//! - a token is valid for the APIs only with the `…:zitadel:aud` scope; `/admin/*` needs
//!   IAM_OWNER (403); org-scoped calls act in the `x-zitadel-orgid` organisation (default: the
//!   caller's) and answer 404 for anything of another organisation, exactly like a missing id;
//! - duplicates are `409` (organisation names, project names per org, role keys, app names per
//!   project, a second grant of a user on a project, a member added twice); an update that
//!   changes nothing is `400 No changes`, as Zitadel answers;
//! - faults: the next N requests matching a method and a path suffix answer a status or stall
//!   first (and change nothing); every request is
//!   counted, and *writes* (successful creates, updates, deletes) separately.
//!
//! Keys the fake mints come from a fixed pool of test-only RSA keys (`fake/keys/`, never used
//! anywhere else); generating RSA keys in a debug build would take seconds per key.

#![allow(clippy::result_large_err, reason = "errors are ready-made HTTP responses of a test fake")]

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, Method, StatusCode, Uri},
    response::{IntoResponse, Response},
};
use base64::Engine as _;
use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::key::ServiceAccountKey;

/// The test-only key pool: (private PEM, public PEM).
const POOL: [(&str, &str); 6] = [
    (include_str!("fake/keys/test-1.pem"), include_str!("fake/keys/test-1.pub.pem")),
    (include_str!("fake/keys/test-2.pem"), include_str!("fake/keys/test-2.pub.pem")),
    (include_str!("fake/keys/test-3.pem"), include_str!("fake/keys/test-3.pub.pem")),
    (include_str!("fake/keys/test-4.pem"), include_str!("fake/keys/test-4.pub.pem")),
    (include_str!("fake/keys/test-5.pem"), include_str!("fake/keys/test-5.pub.pem")),
    (include_str!("fake/keys/test-6.pem"), include_str!("fake/keys/test-6.pub.pem")),
];

/// A test-only EC key (for "not an RSA key" cases).
pub const EC_TEST_KEY: &str = include_str!("fake/keys/test-ec.pem");

/// An organisation as the fake holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeOrg {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Members: user id → roles.
    pub members: BTreeMap<String, Vec<String>>,
}

/// A project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeProject {
    /// Id.
    pub id: String,
    /// Owning organisation.
    pub org_id: String,
    /// Name.
    pub name: String,
    /// Role key → display name.
    pub roles: BTreeMap<String, String>,
}

/// An OIDC app.
#[derive(Clone, Debug, PartialEq)]
pub struct FakeApp {
    /// Id.
    pub id: String,
    /// Project.
    pub project_id: String,
    /// Owning organisation.
    pub org_id: String,
    /// Name.
    pub name: String,
    /// Client id.
    pub client_id: String,
    /// The OIDC config as last written (create or update body, without `name`).
    pub config: Value,
}

/// A user grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeGrant {
    /// Id.
    pub id: String,
    /// User.
    pub user_id: String,
    /// Project.
    pub project_id: String,
    /// The organisation the grant was made in.
    pub org_id: String,
    /// Roles.
    pub roles: Vec<String>,
    /// Deactivated.
    pub inactive: bool,
}

#[derive(Clone, Debug)]
struct FakeUser {
    org_id: String,
    machine: bool,
    email: Option<String>,
    login_name: String,
    iam_owner: bool,
}

#[derive(Clone, Debug)]
struct FakeKey {
    user_id: String,
    public_pem: &'static str,
    expires: Option<DateTime<Utc>>,
    created: DateTime<Utc>,
}

#[derive(Clone, Debug)]
struct Session {
    user_id: String,
    api: bool,
    until: DateTime<Utc>,
}

/// What an injected fault does.
#[derive(Clone, Debug)]
enum Fault {
    Status(u16),
    Stall(Duration),
}

#[derive(Clone, Debug)]
struct Rule {
    method: String,
    suffix: String,
    times: u32,
    fault: Fault,
}

#[derive(Debug, Default)]
struct FakeState {
    url: String,
    next_id: u64,
    next_pool: usize,
    orgs: BTreeMap<String, FakeOrg>,
    projects: BTreeMap<String, FakeProject>,
    apps: BTreeMap<String, FakeApp>,
    grants: BTreeMap<String, FakeGrant>,
    users: BTreeMap<String, FakeUser>,
    keys: BTreeMap<String, FakeKey>,
    sessions: BTreeMap<String, Session>,
    token_lifetime: i64,
    rules: Vec<Rule>,
    requests: Vec<(String, String)>,
    writes: u64,
    exchanges: u64,
}

impl FakeState {
    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("{}", 300_000_000_000_000_000u64 + self.next_id)
    }
}

/// A running fake Zitadel. Dropping it stops the server.
pub struct FakeZitadel {
    url: String,
    state: Arc<Mutex<FakeState>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeZitadel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A Zitadel error answer: `{code, message, details}` with the gRPC code of the status.
fn error(status: StatusCode, message: &str) -> Response {
    let code = match status.as_u16() {
        400 => 3,
        401 => 16,
        403 => 7,
        404 => 5,
        409 => 6,
        503 => 14,
        _ => 13,
    };
    (status, axum::Json(json!({ "code": code, "message": message, "details": [] }))).into_response()
}

fn ok(body: Value) -> Response {
    (StatusCode::OK, axum::Json(body)).into_response()
}

fn details() -> Value {
    json!({ "sequence": 1, "creationDate": Utc::now().to_rfc3339(), "changeDate": Utc::now().to_rfc3339() })
}

fn not_found(what: &str) -> Response {
    error(StatusCode::NOT_FOUND, &format!("{what} not found"))
}

fn oauth_error(error: &str, description: &str) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": error, "error_description": description }))).into_response()
}

fn mutating(method: &Method, path: &str) -> bool {
    *method != Method::GET && !path.ends_with("/_search") && path != "/oauth/v2/token"
}

impl FakeZitadel {
    /// Starts a fake on a free loopback port.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(Mutex::new(FakeState { url: url.clone(), token_lifetime: 3600, ..FakeState::default() }));
        let app = Router::new().fallback(handle).with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { url, state, task })
    }

    fn state(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The instance URL (the assertion's audience).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A machine user (IAM_OWNER when `iam_owner`) in a "masters" organisation of its own, with
    /// one JSON key expiring at `expires`: the key the fleet is configured with.
    pub fn service_account(&self, iam_owner: bool, expires: Option<DateTime<Utc>>) -> ServiceAccountKey {
        let user_id = {
            let mut state = self.state();
            let org_id = match state.orgs.values().find(|o| o.name == "masters") {
                Some(org) => org.id.clone(),
                None => {
                    let id = state.id();
                    state.orgs.insert(
                        id.clone(),
                        FakeOrg { id: id.clone(), name: "masters".into(), members: BTreeMap::new() },
                    );
                    id
                }
            };
            let user_id = state.id();
            state.users.insert(
                user_id.clone(),
                FakeUser { org_id, machine: true, email: None, login_name: format!("fleet-{user_id}"), iam_owner },
            );
            user_id
        };
        self.add_key(&user_id, expires)
    }

    /// Registers a new key (from the test pool) for `user_id`, as the Zitadel console would.
    pub fn add_key(&self, user_id: &str, expires: Option<DateTime<Utc>>) -> ServiceAccountKey {
        mint(&mut self.state(), user_id, expires)
    }

    /// A human user of `org_id` (e.g. someone who signed up in the customer's organisation).
    pub fn add_human(&self, org_id: &str, email: &str) -> String {
        let mut state = self.state();
        let id = state.id();
        state.users.insert(
            id.clone(),
            FakeUser {
                org_id: org_id.into(),
                machine: false,
                email: Some(email.into()),
                login_name: email.into(),
                iam_owner: false,
            },
        );
        id
    }

    /// The "masters" organisation's id (the fleet's own), if a service account made it.
    pub fn masters_org(&self) -> Option<String> {
        self.state().orgs.values().find(|o| o.name == "masters").map(|o| o.id.clone())
    }

    /// The next `times` requests whose method is `method` and whose path ends with `suffix`
    /// (e.g. `/roles/_bulk`) answer `status`; nothing happens.
    pub fn fail(&self, method: &str, suffix: &str, status: u16, times: u32) {
        self.state().rules.push(Rule {
            method: method.into(),
            suffix: suffix.into(),
            times,
            fault: Fault::Status(status),
        });
    }

    /// The next `times` matching requests wait `stall` before they are served.
    pub fn stall(&self, method: &str, suffix: &str, stall: Duration, times: u32) {
        self.state().rules.push(Rule {
            method: method.into(),
            suffix: suffix.into(),
            times,
            fault: Fault::Stall(stall),
        });
    }

    /// Drops the faults not used up.
    pub fn clear_faults(&self) {
        self.state().rules.clear();
    }

    /// How long issued tokens live (`expires_in`).
    pub fn set_token_lifetime(&self, seconds: i64) {
        self.state().token_lifetime = seconds;
    }

    /// Forgets every issued token (as a restart of Zitadel with new signing keys would).
    pub fn revoke_tokens(&self) {
        self.state().sessions.clear();
    }

    /// Successful creates, updates and deletes so far.
    pub fn writes(&self) -> u64 {
        self.state().writes
    }

    /// Token exchanges so far (successful or not).
    pub fn exchanges(&self) -> u64 {
        self.state().exchanges
    }

    /// Requests so far whose method is `method` and path starts with `prefix`.
    pub fn count(&self, method: &str, prefix: &str) -> usize {
        self.state().requests.iter().filter(|(m, p)| m == method && p.starts_with(prefix)).count()
    }

    /// Every organisation.
    pub fn orgs(&self) -> Vec<FakeOrg> {
        self.state().orgs.values().cloned().collect()
    }

    /// One organisation.
    pub fn org(&self, id: &str) -> Option<FakeOrg> {
        self.state().orgs.get(id).cloned()
    }

    /// Projects of `org_id`.
    pub fn projects(&self, org_id: &str) -> Vec<FakeProject> {
        self.state().projects.values().filter(|p| p.org_id == org_id).cloned().collect()
    }

    /// Apps of `org_id`.
    pub fn apps(&self, org_id: &str) -> Vec<FakeApp> {
        self.state().apps.values().filter(|a| a.org_id == org_id).cloned().collect()
    }

    /// Grants on projects of `org_id`.
    pub fn grants(&self, org_id: &str) -> Vec<FakeGrant> {
        self.state().grants.values().filter(|g| g.org_id == org_id).cloned().collect()
    }

    /// Key ids registered for `user_id`.
    pub fn keys_of(&self, user_id: &str) -> Vec<String> {
        self.state().keys.iter().filter(|(_, k)| k.user_id == user_id).map(|(id, _)| id.clone()).collect()
    }

    /// Removes an organisation behind the fleet's back (as someone in the console would).
    pub fn remove_org(&self, id: &str) {
        remove_org(&mut self.state(), id);
    }
}

fn mint(state: &mut FakeState, user_id: &str, expires: Option<DateTime<Utc>>) -> ServiceAccountKey {
    let (private, public) = POOL[state.next_pool % POOL.len()];
    state.next_pool += 1;
    let key_id = state.id();
    state
        .keys
        .insert(key_id.clone(), FakeKey { user_id: user_id.into(), public_pem: public, expires, created: Utc::now() });
    ServiceAccountKey {
        kind: "serviceaccount".into(),
        key_id,
        key: private.into(),
        user_id: user_id.into(),
        expiration_date: expires,
    }
}

fn remove_org(state: &mut FakeState, id: &str) {
    state.orgs.remove(id);
    let projects: Vec<String> = state.projects.values().filter(|p| p.org_id == id).map(|p| p.id.clone()).collect();
    state.projects.retain(|_, p| p.org_id != id);
    state.apps.retain(|_, a| a.org_id != id);
    state.grants.retain(|_, g| g.org_id != id && !projects.contains(&g.project_id));
    state.users.retain(|_, u| u.org_id != id);
}

#[derive(Deserialize)]
struct Assertion {
    iss: String,
    sub: String,
}

fn token(state: &mut FakeState, body: &[u8]) -> Response {
    state.exchanges += 1;
    let Ok(form) = serde_urlencoded::from_bytes::<BTreeMap<String, String>>(body) else {
        return oauth_error("invalid_request", "the body is not a form");
    };
    if form.get("grant_type").map(String::as_str) != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return oauth_error("unsupported_grant_type", "only the JWT-bearer grant is served");
    }
    let Some(assertion) = form.get("assertion") else { return oauth_error("invalid_request", "assertion missing") };
    let Ok(header) = jsonwebtoken::decode_header(assertion) else {
        return oauth_error("invalid_grant", "assertion is not a JWT");
    };
    let Some(key) = header.kid.as_ref().and_then(|kid| state.keys.get(kid)).cloned() else {
        return oauth_error("invalid_grant", "Errors.AuthNKey.NotFound");
    };
    if key.expires.is_some_and(|e| e <= Utc::now()) {
        return oauth_error("invalid_grant", "Errors.AuthNKey.Expired");
    }
    let Ok(decoding) = DecodingKey::from_rsa_pem(key.public_pem.as_bytes()) else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "fake: bad pool key");
    };
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_audience(&[state.url.as_str()]);
    validation.set_required_spec_claims(&["exp", "aud", "iss", "sub"]);
    let claims = match jsonwebtoken::decode::<Assertion>(assertion, &decoding, &validation) {
        Ok(data) => data.claims,
        Err(e) => return oauth_error("invalid_grant", &format!("assertion invalid: {e}")),
    };
    if claims.iss != key.user_id || claims.sub != key.user_id {
        return oauth_error("invalid_grant", "iss and sub must be the key's user");
    }
    let api =
        form.get("scope").is_some_and(|s| s.split(' ').any(|s| s == "urn:zitadel:iam:org:project:id:zitadel:aud"));
    let access = format!("fake-at-{}", state.id());
    let lifetime = state.token_lifetime;
    state.sessions.insert(
        access.clone(),
        Session { user_id: key.user_id, api, until: Utc::now() + chrono::TimeDelta::seconds(lifetime) },
    );
    ok(json!({ "access_token": access, "token_type": "Bearer", "expires_in": lifetime }))
}

async fn handle(
    State(shared): State<Arc<Mutex<FakeState>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let fault = {
        let mut state = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.requests.push((method.to_string(), path.clone()));
        let rule =
            state.rules.iter_mut().find(|r| r.times > 0 && r.method == method.as_str() && path.ends_with(&r.suffix));
        rule.map(|r| {
            r.times -= 1;
            r.fault.clone()
        })
    };
    match fault {
        Some(Fault::Status(status)) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return error(status, "injected fault");
        }
        Some(Fault::Stall(stall)) => tokio::time::sleep(stall).await,
        None => {}
    }
    let mut state = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let response = if path == "/oauth/v2/token" && method == Method::POST {
        token(&mut state, &body)
    } else {
        api(&mut state, &method, &path, &headers, &body)
    };
    if response.status().is_success() && mutating(&method, &path) {
        state.writes += 1;
    }
    response
}

/// The caller, checked: a live token with the API scope.
fn caller(state: &FakeState, headers: &HeaderMap) -> Result<(String, FakeUser), Response> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| error(StatusCode::UNAUTHORIZED, "auth header missing"))?;
    let session = state
        .sessions
        .get(token)
        .filter(|s| s.until > Utc::now())
        .ok_or_else(|| error(StatusCode::UNAUTHORIZED, "Errors.Token.Invalid"))?;
    if !session.api {
        return Err(error(StatusCode::UNAUTHORIZED, "token is not valid for Zitadel's APIs (audience missing)"));
    }
    let user = state.users.get(&session.user_id).ok_or_else(|| error(StatusCode::UNAUTHORIZED, "user gone"))?;
    Ok((session.user_id.clone(), user.clone()))
}

fn body_json(body: &[u8]) -> Result<Value, Response> {
    if body.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_slice(body).map_err(|_| error(StatusCode::BAD_REQUEST, "body is not JSON"))
}

fn text<'a>(body: &'a Value, field: &str) -> &'a str {
    body.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn strings(body: &Value, field: &str) -> Vec<String> {
    body.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// The exact-name filter of a `_search` body, if any.
fn name_query(body: &Value) -> Option<String> {
    body.get("queries")?
        .as_array()?
        .iter()
        .find_map(|q| q.pointer("/nameQuery/name").and_then(Value::as_str).map(str::to_owned))
}

fn api(state: &mut FakeState, method: &Method, path: &str, headers: &HeaderMap, body: &[u8]) -> Response {
    let (caller_id, caller) = match caller(state, headers) {
        Ok(c) => c,
        Err(response) => return response,
    };
    let body = match body_json(body) {
        Ok(b) => b,
        Err(response) => return response,
    };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if segments.first() == Some(&"admin") && !caller.iam_owner {
        return error(StatusCode::FORBIDDEN, "No matching permissions found (AUTH-5mWD2)");
    }
    // The organisation a management call acts in.
    let org = headers
        .get("x-zitadel-orgid")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_else(|| caller.org_id.clone());
    if segments.first() == Some(&"management") {
        if !state.orgs.contains_key(&org) {
            return not_found("Organisation");
        }
        if !caller.iam_owner && org != caller.org_id {
            return error(StatusCode::FORBIDDEN, "No matching permissions found (AUTH-5mWD2)");
        }
    }
    let m = method.as_str();
    match (m, segments.as_slice()) {
        ("POST", ["v2", "organizations"]) => {
            let name = text(&body, "name").trim().to_owned();
            if name.is_empty() {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid AddOrganizationRequest.Name: value length must be between 1 and 200 runes",
                );
            }
            if !caller.iam_owner {
                return error(StatusCode::FORBIDDEN, "No matching permissions found (AUTH-5mWD2)");
            }
            if state.orgs.values().any(|o| o.name == name) {
                return error(StatusCode::CONFLICT, "Organisation already exists (ORG-lapo2m)");
            }
            let id = state.id();
            state.orgs.insert(id.clone(), FakeOrg { id: id.clone(), name, members: BTreeMap::new() });
            ok(json!({ "details": details(), "organizationId": id }))
        }
        ("DELETE", ["admin", "v1", "orgs", id]) => {
            if !state.orgs.contains_key(*id) {
                return not_found("Organisation");
            }
            remove_org(state, id);
            ok(json!({ "details": details() }))
        }
        ("GET", ["admin", "v1", "instances", "me"]) => {
            ok(json!({ "instance": { "id": "fake-instance", "name": "fake" } }))
        }
        ("GET", ["management", "v1", "orgs", "me"]) => {
            let o = &state.orgs[&org];
            ok(json!({ "org": { "id": o.id, "name": o.name, "state": "ORG_STATE_ACTIVE" } }))
        }
        ("PUT", ["management", "v1", "orgs", "me"]) => {
            let name = text(&body, "name").trim().to_owned();
            if name.is_empty() {
                return error(StatusCode::BAD_REQUEST, "invalid UpdateOrgRequest.Name");
            }
            if state.orgs[&org].name == name {
                return error(StatusCode::BAD_REQUEST, "No changes (ORG-4VhT1)");
            }
            if state.orgs.values().any(|o| o.name == name) {
                return error(StatusCode::CONFLICT, "Organisation already exists (ORG-lapo2m)");
            }
            if let Some(o) = state.orgs.get_mut(&org) {
                o.name = name;
            }
            ok(json!({ "details": details() }))
        }
        ("POST", ["management", "v1", "orgs", "me", "members", "_search"]) => {
            let result: Vec<Value> = state.orgs[&org]
                .members
                .iter()
                .map(|(user, roles)| json!({ "userId": user, "roles": roles, "details": details() }))
                .collect();
            ok(json!({ "details": { "totalResult": result.len() }, "result": result }))
        }
        ("POST", ["management", "v1", "orgs", "me", "members"]) => {
            let user = text(&body, "userId").to_owned();
            if !state.users.contains_key(&user) {
                return not_found("User");
            }
            let roles = strings(&body, "roles");
            let Some(o) = state.orgs.get_mut(&org) else { return not_found("Organisation") };
            if o.members.contains_key(&user) {
                return error(StatusCode::CONFLICT, "Member already exists (Org-PtXi1)");
            }
            o.members.insert(user, roles);
            ok(json!({ "details": details() }))
        }
        ("POST", ["management", "v1", "projects"]) => {
            let name = text(&body, "name").trim().to_owned();
            if name.is_empty() {
                return error(StatusCode::BAD_REQUEST, "invalid AddProjectRequest.Name");
            }
            if state.projects.values().any(|p| p.org_id == org && p.name == name) {
                return error(StatusCode::CONFLICT, "Project already exists (PROJECT-74Hs8)");
            }
            let id = state.id();
            state
                .projects
                .insert(id.clone(), FakeProject { id: id.clone(), org_id: org, name, roles: BTreeMap::new() });
            ok(json!({ "id": id, "details": details() }))
        }
        ("POST", ["management", "v1", "projects", "_search"]) => {
            let wanted = name_query(&body);
            let result: Vec<Value> = state
                .projects
                .values()
                .filter(|p| p.org_id == org && wanted.as_ref().is_none_or(|n| *n == p.name))
                .map(|p| json!({ "id": p.id, "name": p.name, "state": "PROJECT_STATE_ACTIVE" }))
                .collect();
            ok(json!({ "details": { "totalResult": result.len() }, "result": result }))
        }
        (_, ["management", "v1", "projects", project, rest @ ..]) => {
            let Some(p) = state.projects.get(*project).filter(|p| p.org_id == org).cloned() else {
                return not_found("Project");
            };
            project_call(state, m, &p, rest, &body)
        }
        ("POST", ["management", "v1", "users", "grants", "_search"]) => {
            let queries = body.get("queries").and_then(Value::as_array).cloned().unwrap_or_default();
            let user = queries.iter().find_map(|q| q.pointer("/userIdQuery/userId").and_then(Value::as_str));
            let project = queries.iter().find_map(|q| q.pointer("/projectIdQuery/projectId").and_then(Value::as_str));
            let result: Vec<Value> = state
                .grants
                .values()
                .filter(|g| {
                    g.org_id == org && user.is_none_or(|u| u == g.user_id) && project.is_none_or(|p| p == g.project_id)
                })
                .map(grant_json)
                .collect();
            ok(json!({ "details": { "totalResult": result.len() }, "result": result }))
        }
        ("POST", ["management", "v1", "users", "_search"]) => {
            let result: Vec<Value> = state
                .users
                .iter()
                .filter(|(_, u)| u.org_id == org)
                .map(|(id, u)| {
                    let mut user = json!({ "id": id, "userName": u.login_name, "preferredLoginName": u.login_name });
                    if let Some(email) = &u.email {
                        user["human"] = json!({ "email": { "email": email, "isEmailVerified": true } });
                    } else {
                        user["machine"] = json!({ "name": u.login_name });
                    }
                    user
                })
                .collect();
            ok(json!({ "details": { "totalResult": result.len() }, "result": result }))
        }
        (_, ["management", "v1", "users", user, "grants", rest @ ..]) => grant_call(state, m, &org, user, rest, &body),
        (_, ["management", "v1", "users", user, "keys", rest @ ..]) => {
            let Some(owner) = state.users.get(*user).cloned() else { return not_found("User") };
            if !owner.machine || owner.org_id != org {
                return not_found("User");
            }
            let _ = caller_id;
            key_call(state, m, user, rest, &body)
        }
        _ => error(StatusCode::NOT_FOUND, &format!("fake Zitadel does not serve {m} {path}")),
    }
}

fn grant_json(g: &FakeGrant) -> Value {
    json!({
        "id": g.id, "userId": g.user_id, "projectId": g.project_id, "orgId": g.org_id, "roleKeys": g.roles,
        "state": if g.inactive { "USER_GRANT_STATE_INACTIVE" } else { "USER_GRANT_STATE_ACTIVE" },
        "details": details(),
    })
}

fn app_json(a: &FakeApp) -> Value {
    let mut config = a.config.clone();
    config["clientId"] = json!(a.client_id);
    json!({ "id": a.id, "name": a.name, "state": "APP_STATE_ACTIVE", "oidcConfig": config, "details": details() })
}

/// The OIDC fields an app stores (the create body without `name`).
fn oidc_config(body: &Value) -> Value {
    let mut config = body.clone();
    if let Some(map) = config.as_object_mut() {
        map.remove("name");
    }
    config
}

fn project_call(state: &mut FakeState, m: &str, p: &FakeProject, rest: &[&str], body: &Value) -> Response {
    match (m, rest) {
        ("GET", []) => ok(json!({ "project": { "id": p.id, "name": p.name, "state": "PROJECT_STATE_ACTIVE" } })),
        ("POST", ["roles", "_bulk"]) => {
            let roles = body.get("roles").and_then(Value::as_array).cloned().unwrap_or_default();
            if roles.is_empty() {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid BulkAddProjectRolesRequest.Roles: value must contain at least 1 item",
                );
            }
            let keys: Vec<(String, String)> =
                roles.iter().map(|r| (text(r, "key").to_owned(), text(r, "displayName").to_owned())).collect();
            if keys.iter().any(|(k, _)| k.is_empty()) {
                return error(StatusCode::BAD_REQUEST, "invalid role key");
            }
            if keys.iter().any(|(k, _)| p.roles.contains_key(k)) {
                return error(StatusCode::CONFLICT, "Role already exists (PROJECT-Mxo0s)");
            }
            if let Some(project) = state.projects.get_mut(&p.id) {
                project.roles.extend(keys);
            }
            ok(json!({ "details": details() }))
        }
        ("POST", ["roles", "_search"]) => {
            let result: Vec<Value> = p.roles.iter().map(|(k, n)| json!({ "key": k, "displayName": n })).collect();
            ok(json!({ "details": { "totalResult": result.len() }, "result": result }))
        }
        ("POST", ["apps", "oidc"]) => {
            let name = text(body, "name").trim().to_owned();
            if name.is_empty() {
                return error(StatusCode::BAD_REQUEST, "invalid AddOIDCAppRequest.Name");
            }
            if strings(body, "redirectUris").is_empty() {
                return error(StatusCode::BAD_REQUEST, "Redirect URIs are required for a web app (APP-Fg8ws)");
            }
            if state.apps.values().any(|a| a.project_id == p.id && a.name == name) {
                return error(StatusCode::CONFLICT, "Application already exists (PROJECT-3M8ds)");
            }
            let id = state.id();
            let client_id = format!("{id}@{}", p.name);
            state.apps.insert(
                id.clone(),
                FakeApp {
                    id: id.clone(),
                    project_id: p.id.clone(),
                    org_id: p.org_id.clone(),
                    name,
                    client_id: client_id.clone(),
                    config: oidc_config(body),
                },
            );
            ok(json!({ "appId": id, "details": details(), "clientId": client_id, "noneCompliant": false }))
        }
        ("POST", ["apps", "_search"]) => {
            let wanted = name_query(body);
            let result: Vec<Value> = state
                .apps
                .values()
                .filter(|a| a.project_id == p.id && wanted.as_ref().is_none_or(|n| *n == a.name))
                .map(app_json)
                .collect();
            ok(json!({ "details": { "totalResult": result.len() }, "result": result }))
        }
        ("GET", ["apps", app]) => match state.apps.get(*app).filter(|a| a.project_id == p.id) {
            Some(a) => ok(json!({ "app": app_json(a) })),
            None => not_found("App"),
        },
        ("PUT", ["apps", app, "oidc_config"]) => {
            let Some(a) = state.apps.get_mut(*app).filter(|a| a.project_id == p.id) else { return not_found("App") };
            let config = oidc_config(body);
            if a.config == config {
                return error(StatusCode::BAD_REQUEST, "No changes (COMMAND-1m88i)");
            }
            a.config = config;
            ok(json!({ "details": details() }))
        }
        _ => not_found("Route"),
    }
}

fn grant_call(state: &mut FakeState, m: &str, org: &str, user: &str, rest: &[&str], body: &Value) -> Response {
    if !state.users.contains_key(user) {
        return not_found("User");
    }
    let roles = strings(body, "roleKeys");
    let check_roles = |state: &FakeState, project: &str| -> Option<Response> {
        let p = state.projects.get(project)?;
        roles
            .iter()
            .find(|r| !p.roles.contains_key(*r))
            .map(|r| error(StatusCode::NOT_FOUND, &format!("Role {r} not found (COMMAND-2M9fs)")))
    };
    match (m, rest) {
        ("POST", []) => {
            let project = text(body, "projectId").to_owned();
            if state.projects.get(&project).is_none_or(|p| p.org_id != org) {
                return not_found("Project");
            }
            if let Some(refused) = check_roles(state, &project) {
                return refused;
            }
            if state.grants.values().any(|g| g.user_id == user && g.project_id == project) {
                return error(StatusCode::CONFLICT, "User grant already exists (USERGRANT-2m9fs)");
            }
            let id = state.id();
            state.grants.insert(
                id.clone(),
                FakeGrant {
                    id: id.clone(),
                    user_id: user.into(),
                    project_id: project,
                    org_id: org.into(),
                    roles,
                    inactive: false,
                },
            );
            ok(json!({ "userGrantId": id, "details": details() }))
        }
        (_, [grant, action @ ..]) => {
            let Some(g) = state.grants.get(*grant).filter(|g| g.user_id == user && g.org_id == org).cloned() else {
                return not_found("User grant");
            };
            match (m, action) {
                ("PUT", []) => {
                    if let Some(refused) = check_roles(state, &g.project_id) {
                        return refused;
                    }
                    if g.roles == roles {
                        return error(StatusCode::BAD_REQUEST, "No changes (COMMAND-Slk3d)");
                    }
                    if let Some(g) = state.grants.get_mut(*grant) {
                        g.roles = roles;
                    }
                    ok(json!({ "details": details() }))
                }
                ("POST", ["_deactivate"]) | ("POST", ["_reactivate"]) => {
                    let deactivate = action == ["_deactivate"];
                    if g.inactive == deactivate {
                        return error(StatusCode::BAD_REQUEST, "User grant is not in the right state (COMMAND-1S9gx)");
                    }
                    if let Some(g) = state.grants.get_mut(*grant) {
                        g.inactive = deactivate;
                    }
                    ok(json!({ "details": details() }))
                }
                ("DELETE", []) => {
                    state.grants.remove(*grant);
                    ok(json!({ "details": details() }))
                }
                _ => not_found("Route"),
            }
        }
        _ => not_found("Route"),
    }
}

fn key_call(state: &mut FakeState, m: &str, user: &str, rest: &[&str], body: &Value) -> Response {
    match (m, rest) {
        ("POST", []) => {
            if text(body, "type") != "KEY_TYPE_JSON" {
                return error(StatusCode::BAD_REQUEST, "invalid AddMachineKeyRequest.Type");
            }
            let expires = match body.get("expirationDate").and_then(Value::as_str) {
                None => None,
                Some(text) => match DateTime::parse_from_rfc3339(text) {
                    Ok(date) if date.with_timezone(&Utc) > Utc::now() => Some(date.with_timezone(&Utc)),
                    Ok(_) => return error(StatusCode::BAD_REQUEST, "expiration date is in the past (AUTHN-dv3t5)"),
                    Err(_) => return error(StatusCode::BAD_REQUEST, "invalid expirationDate"),
                },
            };
            let key = mint(state, user, expires);
            let details = base64::engine::general_purpose::STANDARD.encode(key.to_json());
            ok(json!({ "keyId": key.key_id, "keyDetails": details, "details": self::details() }))
        }
        ("POST", ["_search"]) => {
            let result: Vec<Value> = state
                .keys
                .iter()
                .filter(|(_, k)| k.user_id == user)
                .map(|(id, k)| {
                    let mut key = json!({ "id": id, "type": "KEY_TYPE_JSON", "details": { "creationDate": k.created.to_rfc3339() } });
                    if let Some(e) = k.expires {
                        key["expirationDate"] = json!(e.to_rfc3339());
                    }
                    key
                })
                .collect();
            ok(json!({ "details": { "totalResult": result.len() }, "result": result }))
        }
        ("DELETE", [key]) => {
            if state.keys.get(*key).is_none_or(|k| k.user_id != user) {
                return not_found("Key");
            }
            state.keys.remove(*key);
            ok(json!({ "details": details() }))
        }
        _ => not_found("Route"),
    }
}
