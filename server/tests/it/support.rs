//! Building routers of either role on a test database, and sending requests to them.

use app::state::AppState;
use axum::{
    Router,
    body::Body,
    http::{HeaderMap, Method, Request, StatusCode, header},
};
use http_body_util::BodyExt as _;
use leptos::config::Env;
use opencrane::{
    fleet,
    http::{AuthConfig, auth::Scope},
    silo, start,
};
use serde_json::Value;
use sqlx::{PgPool, postgres::PgPoolOptions};
use tower::ServiceExt as _;

/// The operator token every test router accepts.
pub const TOKEN: &str = "test-operator-token-0123456789";

/// Feature switches of a fleet test router.
#[derive(Clone, Copy)]
pub struct Features {
    pub cluster_tenants: bool,
    pub billing: bool,
}

impl Default for Features {
    fn default() -> Self {
        Self { cluster_tenants: true, billing: true }
    }
}

pub fn options() -> leptos::config::LeptosOptions {
    start::leptos_options(std::path::Path::new("target/site"), "127.0.0.1:0".parse().unwrap(), Env::DEV)
}

/// A migrated fleet database (the test's own).
pub async fn fleet_db(pool: &PgPool) -> PgPool {
    opencrane_db::migrate(pool, opencrane_db::Schema::Fleet).await.unwrap();
    pool.clone()
}

/// A pool on the same database as `pool` that counts the connections it opens (a connection a
/// cancelled query left dirty is closed and replaced, so churn shows up here).
pub async fn counting_pool(pool: &PgPool) -> (PgPool, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let opened = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = opened.clone();
    let counted = PgPoolOptions::new()
        .max_connections(4)
        .after_connect(move |_, _| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Box::pin(async { Ok(()) })
        })
        .connect_with((*pool.connect_options()).clone())
        .await
        .unwrap();
    (counted, opened)
}

/// The server's own kind of pool (`opencrane_db::connect_lazy`, its session settings and ping
/// rule) on the test's database, with one connection.
pub fn server_pool(pool: &PgPool) -> PgPool {
    let base = std::env::var("DATABASE_URL").unwrap();
    let database = pool.connect_options().get_database().unwrap().to_owned();
    let url = format!("{}/{database}", base.rsplit_once('/').unwrap().0);
    let settings = opencrane_db::PoolSettings { max_connections: 1, ..opencrane_db::PoolSettings::default() };
    opencrane_db::connect_lazy(&url, &settings).unwrap()
}

/// A second, migrated silo database beside the test's own.
pub async fn silo_db(pool: &PgPool) -> PgPool {
    let options = pool.connect_options();
    // Test database names are already near Postgres' 63-byte limit; a suffix would be cut off.
    let name = format!("silo_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE \"{name}\"")).execute(pool).await.unwrap();
    let silo = PgPoolOptions::new().max_connections(5).connect_with((*options).clone().database(&name)).await.unwrap();
    opencrane_db::migrate(&silo, opencrane_db::Schema::Silo).await.unwrap();
    silo
}

/// The fleet router; `dev_identity` makes token-less requests the development operator.
pub fn fleet(pool: PgPool, features: Features, dev_identity: bool) -> Router {
    let state = fleet::fleet_state(
        options(),
        pool,
        Some("example.com".into()),
        features.cluster_tenants,
        features.billing,
        false,
    );
    router(state, dev_identity, Scope::Fleet)
}

/// The fleet's internal API (its own listener in production), on the same test database.
pub fn fleet_internal(pool: PgPool) -> Router {
    let state = fleet::fleet_state(options(), pool, Some("example.com".into()), true, true, false);
    opencrane::http::internal_router(
        state,
        AuthConfig::tokens_only(vec![("test".into(), TOKEN.into())], false, Scope::Fleet, true),
    )
}

/// The silo router for ClusterTenant `acme`.
/// Adds the silo user `ana` (Ana, ana@acme.test, subject `s-ana`), created by `by`.
pub async fn add_ana(silo_db: &PgPool, by: &str) {
    let fields = opencrane_silo_db::tenants::TenantFields {
        display_name: "Ana",
        email: "ana@acme.test",
        subject: "s-ana",
        team: None,
        policy_ref: None,
        cpu: None,
        memory: None,
    };
    opencrane_silo_db::tenants::insert(silo_db, "ana", &fields, by).await.unwrap();
}

pub fn silo(pool: PgPool, dev_identity: bool) -> Router {
    silo_with(pool, dev_identity, |_| {})
}

/// A silo whose settings `tweak` changes first.
pub fn silo_with(pool: PgPool, dev_identity: bool, tweak: impl FnOnce(&mut app::state::SiloSettings)) -> Router {
    let scope = Scope::Silo { cluster_tenant: "acme".into(), org_admin_groups: Vec::new(), fleet: None };
    let mut state = silo::silo_state(options(), pool, "acme".into(), Some("example.com".into()), false);
    if let app::state::RoleSettings::Silo(settings) = &mut state.role {
        tweak(settings);
    }
    router(state, dev_identity, scope)
}

fn router(state: AppState, dev_identity: bool, scope: Scope) -> Router {
    opencrane::http::router(
        state,
        AuthConfig::tokens_only(vec![("test".into(), TOKEN.into())], dev_identity, scope, true),
    )
}

/// A loopback port nothing listens on (bound once, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A response, read fully.
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
    /// The body as sent (`text` is it read as UTF-8).
    pub bytes: axum::body::Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
}

/// Sends one request. `token`: send the operator token as a bearer.
pub async fn send(router: &Router, method: Method, path: &str, body: Option<&str>, token: bool) -> Reply {
    let auth = format!("Bearer {TOKEN}");
    let headers: Vec<(&str, &str)> = if token { vec![("authorization", auth.as_str())] } else { Vec::new() };
    send_with(router, method, path, body, &headers).await
}

/// Sends one request with these extra headers.
pub async fn send_with(
    router: &Router,
    method: Method,
    path: &str,
    body: Option<&str>,
    extra: &[(&str, &str)],
) -> Reply {
    let mut req = Request::builder().method(method.clone()).uri(path);
    for (name, value) in extra {
        req = req.header(*name, *value);
    }
    if method == Method::GET && !extra.iter().any(|(k, _)| k.eq_ignore_ascii_case("accept")) {
        // What a browser sends on navigation.
        req = req.header(header::ACCEPT, "text/html,application/xhtml+xml,*/*;q=0.8");
    }
    let typed = extra.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
    let req = match body {
        Some(b) if typed => req.body(Body::from(b.to_owned())),
        Some(b) => req.header(header::CONTENT_TYPE, "application/json").body(Body::from(b.to_owned())),
        None => req.body(Body::empty()),
    }
    .unwrap();
    let res = router.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    Reply { status, headers, text: String::from_utf8_lossy(&bytes).into_owned(), bytes }
}

/// A valid create body for `name`.
pub fn create_body(name: &str) -> String {
    serde_json::json!({
        "name": name,
        "displayName": format!("{name} Corp"),
        "isolationTier": "shared",
        "compute": { "mode": "shared" },
        "resources": { "quota": { "cpu": "4", "pods": 20 } },
        "seatCap": 10,
        "owner": { "subject": "owner-subject" }
    })
    .to_string()
}

/// A signed-in browser session for `subject`, written straight into the role's session store
/// the way the sign-in callback writes it; returns the `Cookie` header value. `expired`: its
/// absolute lifetime is already over.
pub async fn session_cookie(pool: &PgPool, subject: &str, operator: bool, expired: bool) -> String {
    use opencrane::http::auth::{SessionUser, USER_KEY, oidc::VerifiedUser};
    let now = chrono::Utc::now();
    let user = SessionUser {
        user: VerifiedUser {
            subject: subject.into(),
            issuer: "https://idp.test".into(),
            email: Some(format!("{subject}@example.com")),
            email_verified: Some(true),
            name: Some(subject.into()),
            groups: Vec::new(),
            is_platform_operator: operator,
            id_token: "header.payload.signature".into(),
        },
        client_id: "test-client".into(),
        authenticated_at: now.timestamp() - 60,
        expires_at: if expired { now.timestamp() - 1 } else { now.timestamp() + 3600 },
    };
    let id = tower_sessions::session::Id::default().to_string();
    let data: std::collections::HashMap<String, Value> =
        [(USER_KEY.to_owned(), serde_json::to_value(&user).unwrap())].into_iter().collect();
    let record = opencrane_common_db::sessions::RecordRow {
        id: id.clone(),
        data: serde_json::to_vec(&data).unwrap(),
        expiry_date: now + chrono::Duration::minutes(30),
    };
    opencrane_common_db::sessions::insert_record(pool, &record).await.unwrap();
    let row = opencrane_common_db::sessions::SessionRow {
        session_id: id.clone(),
        subject: subject.into(),
        email: user.user.email.clone(),
        display_name: subject.into(),
        user_agent: "test".into(),
        ip: "127.0.0.1".into(),
        created_at: now,
        last_seen_at: now,
        expires_at: now + chrono::Duration::hours(1),
    };
    opencrane_common_db::sessions::insert(pool, &row).await.unwrap();
    format!("__Host-opencrane-session={id}")
}

/// A signed-in silo for `acme` whose members are the owner `otto` and the member `mia`: its
/// database, its router, and the owner's browser headers.
pub async fn silo_with_otto_and_mia(pool: &PgPool) -> (PgPool, Router, Vec<(&'static str, String)>) {
    let db = silo_db(pool).await;
    for (subject, role) in [("otto", "owner"), ("mia", "member")] {
        opencrane_silo_db::memberships::upsert(&db, "acme", subject, role, "active").await.unwrap();
    }
    let app = silo_signed_in(db.clone());
    let owner = browser(&session_cookie(&db, "otto", false, false).await);
    (db, app, owner)
}

/// The fleet router with sign-in "configured" (sessions are minted by [`session_cookie`]).
pub fn fleet_signed_in(pool: PgPool) -> Router {
    let state = fleet::fleet_state(options(), pool, Some("example.com".into()), true, true, true);
    router(state, false, Scope::Fleet)
}

/// [`fleet_signed_in`] whose settings `tweak` changes first.
pub fn fleet_signed_in_with(pool: PgPool, tweak: impl FnOnce(&mut app::state::FleetSettings)) -> Router {
    let mut state = fleet::fleet_state(options(), pool, Some("example.com".into()), true, true, true);
    if let app::state::RoleSettings::Fleet(settings) = &mut state.role {
        tweak(settings);
    }
    router(state, false, Scope::Fleet)
}

/// A silo router for `acme` with sign-in "configured".
pub fn silo_signed_in(pool: PgPool) -> Router {
    let scope = Scope::Silo { cluster_tenant: "acme".into(), org_admin_groups: Vec::new(), fleet: None };
    router(silo::silo_state(options(), pool, "acme".into(), Some("example.com".into()), true), false, scope)
}

/// [`silo_signed_in`] whose provider keys are sealed with `secrets` (so credentials can be stored).
pub fn silo_signed_in_sealing(pool: PgPool, secrets: opencrane_portal::seal::SecretBox) -> Router {
    let scope = Scope::Silo { cluster_tenant: "acme".into(), org_admin_groups: Vec::new(), fleet: None };
    let mut state = silo::silo_state(options(), pool, "acme".into(), Some("example.com".into()), true);
    if let app::state::RoleSettings::Silo(settings) = &mut state.role {
        settings.portal.secrets = Some(std::sync::Arc::new(secrets));
    }
    router(state, false, scope)
}

/// Headers of a same-origin browser request with `cookie`.
pub fn browser(cookie: &str) -> Vec<(&'static str, String)> {
    vec![
        ("cookie", cookie.to_owned()),
        ("host", "console.test".to_owned()),
        ("origin", "https://console.test".to_owned()),
        ("sec-fetch-site", "same-origin".to_owned()),
        ("accept", "application/json".to_owned()),
    ]
}

/// [`send_with`] taking owned header values.
pub async fn send_as(
    router: &Router,
    method: Method,
    path: &str,
    body: Option<&str>,
    headers: &[(&'static str, String)],
) -> Reply {
    let borrowed: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    send_with(router, method, path, body, &borrowed).await
}

/// Log lines captured on this thread (the tests' runtime is single-threaded, so a request's
/// handlers log here), as `tracing_subscriber`'s plain format writes them.
#[derive(Clone, Default)]
pub struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    /// Captures what `filter` lets through until the guard is dropped.
    pub fn capture(filter: tracing_subscriber::filter::Targets) -> (Self, tracing::subscriber::DefaultGuard) {
        use tracing_subscriber::layer::SubscriberExt as _;
        let logs = Self::default();
        let writer = logs.clone();
        let layer = tracing_subscriber::fmt::layer().with_ansi(false).with_writer(move || writer.clone());
        // tracing-core, when it knows of a single dispatcher, computes a new callsite's interest
        // from the registering thread's default only: a callsite first reached on another test's
        // thread (no subscriber there) would be disabled for this one too. A second dispatcher,
        // alive for the whole run, makes it ask every live subscriber.
        static SECOND: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
        SECOND.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer).with(filter));
        (logs, guard)
    }

    /// What was captured so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}
