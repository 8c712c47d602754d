//! Server-rendered pages: status codes, the role's chrome, and what anonymous callers see.

use axum::http::{Method, StatusCode};
use std::sync::atomic::Ordering;

use sqlx::PgPool;

use crate::support::{self, Features, create_body, send};

#[sqlx::test(migrations = false)]
async fn fleet_pages_render_with_the_right_status(pool: PgPool) {
    let fleet = support::fleet(support::fleet_db(&pool).await, Features::default(), true);
    send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;

    let list = send(&fleet, Method::GET, "/cluster-tenants", None, false).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.text.contains(r#"<body data-role="fleet""#));
    assert!(list.text.contains("acme Corp"), "the list shows the new customer");
    assert!(list.text.contains("dev operator"), "the header shows who is signed in");

    let filtered = send(&fleet, Method::GET, "/cluster-tenants?q=zzz", None, false).await;
    assert!(filtered.text.contains("No customers match these filters"));

    let detail = send(&fleet, Method::GET, "/cluster-tenants/acme", None, false).await;
    assert_eq!(detail.status, StatusCode::OK);
    assert!(detail.text.contains("opencrane-acme"));
    assert!(detail.text.contains("leptos-island"), "the delete action is an island");

    let missing = send(&fleet, Method::GET, "/cluster-tenants/nope", None, false).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing.text.contains("No customer named"));

    let nowhere = send(&fleet, Method::GET, "/no/such/page", None, false).await;
    assert_eq!(nowhere.status, StatusCode::NOT_FOUND);

    let new = send(&fleet, Method::GET, "/cluster-tenants/new", None, false).await;
    assert_eq!(new.status, StatusCode::OK);
    assert!(new.text.contains("id=\"ct-form\" method=\"post\""), "the create form posts without wasm");
    for island in ["EnhanceForm", "CustomerChecks"] {
        assert!(new.text.contains(island), "{island} takes it over with the wasm");
    }

    let home = send(&fleet, Method::GET, "/", None, false).await;
    assert_eq!(home.status, StatusCode::FOUND);
    assert_eq!(home.headers["location"], "/cluster-tenants");
}

#[sqlx::test(migrations = false)]
async fn anonymous_visitors_are_told_to_sign_in(pool: PgPool) {
    let fleet = support::fleet(support::fleet_db(&pool).await, Features::default(), false);
    let page = send(&fleet, Method::GET, "/cluster-tenants", None, false).await;
    assert_eq!(page.status, StatusCode::UNAUTHORIZED);
    assert!(page.text.contains("Sign-in required"));
    assert!(page.text.contains("Not signed in"));
}

#[sqlx::test(migrations = false)]
async fn the_list_paginates_and_sorts(pool: PgPool) {
    let db = support::fleet_db(&pool).await;
    sqlx::query(
        "INSERT INTO cluster_tenants (name, display_name) SELECT 'ct-' || lpad(i::text, 3, '0'), 'Customer ' || i FROM generate_series(1, 120) i",
    )
    .execute(&db)
    .await
    .unwrap();
    let fleet_db = db.clone();
    let fleet = support::fleet(db, Features::default(), true);
    let first = send(&fleet, Method::GET, "/cluster-tenants", None, false).await;
    assert!(first.text.contains("1–50 of 120"), "range shown");
    assert!(first.text.contains("ct-001") && first.text.contains("ct-050") && !first.text.contains("ct-051"));
    let third = send(&fleet, Method::GET, "/cluster-tenants?page=3", None, false).await;
    assert!(third.text.contains("101–120 of 120"));
    let desc = send(&fleet, Method::GET, "/cluster-tenants?sort=name&order=desc", None, false).await;
    assert!(desc.text.contains("ct-120") && !desc.text.contains("ct-001"));
    assert!(desc.text.contains(r#"aria-sort="descending""#));

    // Next and Prev are keyset links (issue 20): after the last row shown, before the first.
    let link = |page: &str, rel: &str| -> String {
        let at = page.find(&format!(r#"rel="{rel}""#)).unwrap_or_else(|| panic!("no {rel} link"));
        let start = page[..at].rfind("href=\"").unwrap() + 6;
        page[start..].split('"').next().unwrap().replace("&amp;", "&")
    };
    let next = link(&first.text, "next");
    assert_eq!(next, "/cluster-tenants?page=2&after=ct-050");
    // A customer added at the top meanwhile does not push ct-050 onto page 2 again.
    sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('aa-new', 'New')")
        .execute(&fleet_db)
        .await
        .unwrap();
    let second = send(&fleet, Method::GET, &next, None, false).await;
    assert!(second.text.contains("ct-051") && second.text.contains("ct-100") && !second.text.contains("ct-050"));
    assert!(second.text.contains("51–100 of 121"), "the page keeps its number");
    let back = link(&second.text, "prev");
    assert_eq!(back, "/cluster-tenants", "page 1 is the top of the list itself");
    let third = send(&fleet, Method::GET, &link(&second.text, "next"), None, false).await;
    assert!(third.text.contains("ct-101") && third.text.contains("ct-120"));
    assert!(!third.text.contains(r#"rel="next""#), "nothing after the last row");
    let prev = link(&third.text, "prev");
    assert_eq!(prev, "/cluster-tenants?page=2&before=ct-101");
    let second_again = send(&fleet, Method::GET, &prev, None, false).await;
    assert!(second_again.text.contains("ct-051") && second_again.text.contains("ct-100"));
    assert!(!second_again.text.contains("ct-050") && !second_again.text.contains("ct-101"));
    // Sorted by age, the cursor carries the creation time; a hand-made one is refused by name.
    let by_age = send(&fleet, Method::GET, "/cluster-tenants?sort=createdAt", None, false).await;
    assert!(link(&by_age.text, "next").contains("&after=ct-"), "{}", link(&by_age.text, "next"));
    let bad = send(&fleet, Method::GET, "/cluster-tenants?sort=createdAt&after=ct-001.yesterday", None, false).await;
    assert!(bad.text.contains("after: Not a position in this list"), "{}", bad.text);
}

#[sqlx::test(migrations = false)]
async fn silo_pages_show_the_silo(pool: PgPool) {
    let silo_db = support::silo_db(&pool).await;
    opencrane_silo_db::memberships::upsert(&silo_db, "acme", "ana", "owner", "active").await.unwrap();
    let silo = support::silo(silo_db.clone(), true);
    let overview = send(&silo, Method::GET, "/", None, false).await;
    assert_eq!(overview.status, StatusCode::OK);
    assert!(overview.text.contains(r#"<body data-role="silo""#));
    assert!(overview.text.contains("acme.example.com"), "the header shows the tenant context");
    let members = send(&silo, Method::GET, "/members", None, false).await;
    assert!(members.text.contains("ana"));
    let audit = send(&silo, Method::GET, "/audit", None, false).await;
    assert_eq!(audit.status, StatusCode::OK);
    let fleet_page = send(&silo, Method::GET, "/cluster-tenants", None, false).await;
    assert_eq!(fleet_page.status, StatusCode::NOT_FOUND, "fleet pages do not exist on a silo");
    // Where domain rules are enforced: the gateway only, unless the cluster runs Cilium.
    let policies = send(&silo, Method::GET, "/policies", None, false).await;
    assert!(policies.text.contains("Domain rules are enforced at the gateway only"), "{}", policies.text);
    let cilium = support::silo_with(silo_db, true, |s| s.cilium_egress = true);
    let policies = send(&cilium, Method::GET, "/policies", None, false).await;
    assert!(policies.text.contains("Cilium enforces these domains for the MCP gateway too"), "{}", policies.text);
}

/// Issue 20: a page's loader runs once per render and its query is never cancelled. Leptos' SSR
/// walks a `<Suspense>`'s children more than once before it renders them; a loader inside a
/// `move ||` closure was started anew by each walk and dropped after one poll — mid-query, so sqlx
/// closed that connection and the pool opened a new one (SCRAM and all) for the next request.
/// Twenty renders of pages of both roles, one after another, never replace a connection: each
/// pool holds at most 4, so more than 4 opened means one was closed (a page may load two things at
/// once, so a render may use two).
#[sqlx::test(migrations = false)]
async fn pages_run_their_loaders_once_and_keep_their_connections(pool: PgPool) {
    let fleet_db = support::fleet_db(&pool).await;
    let (counted, opened) = support::counting_pool(&fleet_db).await;
    let fleet = support::fleet(counted, Features::default(), true);
    let created = send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let silo_db = support::silo_db(&pool).await;
    let (silo_counted, silo_opened) = support::counting_pool(&silo_db).await;
    let silo = support::silo(silo_counted, true);
    for _ in 0..5 {
        for path in ["/cluster-tenants", "/cluster-tenants/acme", "/cluster-tenants/acme/members", "/audit"] {
            let page = send(&fleet, Method::GET, path, None, false).await;
            assert_eq!(page.status, StatusCode::OK, "{path}");
        }
        for path in ["/", "/users", "/groups", "/policies"] {
            let page = send(&silo, Method::GET, path, None, false).await;
            assert_eq!(page.status, StatusCode::OK, "{path}");
        }
    }
    let opened = (opened.load(Ordering::SeqCst), silo_opened.load(Ordering::SeqCst));
    assert!(opened.0 <= 4 && opened.1 <= 4, "connections opened (fleet, silo): {opened:?}; a pool holds at most 4");
}

/// Issue 20: pages go gzip-compressed to a browser that accepts it when this site started the
/// request or the user did (`Sec-Fetch-Site: same-origin` / `none`); a request another site
/// started, or a client that does not say, gets the page in full — so nobody can turn the page's
/// size into an oracle (BREACH). A page that shows a secret is never compressed (the forms test).
#[sqlx::test(migrations = false)]
async fn pages_are_compressed_only_for_requests_this_site_started(pool: PgPool) {
    let silo_db = support::silo_db(&pool).await;
    opencrane_silo_db::memberships::upsert(&silo_db, "acme", "ana", "owner", "active").await.unwrap();
    let silo = support::silo(silo_db, true);
    let plain = support::send_with(&silo, Method::GET, "/members", None, &[]).await;
    assert_eq!(plain.status, StatusCode::OK);
    assert!(!plain.headers.contains_key("content-encoding"));
    for started in ["same-origin", "none"] {
        let page = support::send_with(
            &silo,
            Method::GET,
            "/members",
            None,
            &[("accept-encoding", "gzip"), ("sec-fetch-site", started)],
        )
        .await;
        assert_eq!(page.status, StatusCode::OK);
        assert_eq!(page.headers["content-encoding"], "gzip", "{started}");
        assert!(page.bytes.len() * 2 < plain.bytes.len(), "{} of {} bytes", page.bytes.len(), plain.bytes.len());
        let mut gunzip = std::process::Command::new("gzip")
            .arg("-dc")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut gunzip.stdin.take().unwrap(), &page.bytes).unwrap();
        let html = String::from_utf8(gunzip.wait_with_output().unwrap().stdout).unwrap();
        assert!(html.contains(r#"<body data-role="silo""#) && html.contains("ana"), "{html}");
    }
    for elsewhere in
        [vec![("accept-encoding", "gzip"), ("sec-fetch-site", "cross-site")], vec![("accept-encoding", "gzip")]]
    {
        let page = support::send_with(&silo, Method::GET, "/members", None, &elsewhere).await;
        assert!(!page.headers.contains_key("content-encoding"), "{elsewhere:?}");
        assert!(page.text.contains("ana"));
    }
}

#[sqlx::test(migrations = false)]
async fn big_silos_page_their_users_and_cap_their_spend_tables(pool: PgPool) {
    use opencrane_silo_db::{budgets, tenants};
    let silo_db = support::silo_db(&pool).await;
    let now = chrono::Utc::now();
    for i in 0..55 {
        let (name, email, subject) = (format!("user-{i:02}"), format!("u{i}@acme.test"), format!("s-{i}"));
        let fields = tenants::TenantFields {
            display_name: &name,
            email: &email,
            subject: &subject,
            team: None,
            policy_ref: None,
            cpu: None,
            memory: None,
        };
        tenants::insert(&silo_db, &name, &fields, "admin").await.unwrap();
        let spend = budgets::SpendEvent {
            request_id: format!("r-{i}"),
            tenant: Some(name),
            model: "fast".into(),
            amount: 1_000_000,
            occurred_at: now,
            ..Default::default()
        };
        budgets::record_spend(&silo_db, &[spend]).await.unwrap();
    }
    let silo = support::silo(silo_db, true);

    let first = send(&silo, Method::GET, "/users", None, false).await;
    assert!(first.text.contains("1–50 of 55"), "the count of all matches");
    assert!(first.text.contains(">user-49<") && !first.text.contains(">user-50<"), "fifty to a page");
    let second = send(&silo, Method::GET, "/users?page=2", None, false).await;
    assert!(second.text.contains("51–55 of 55") && second.text.contains(">user-54<"));

    let budgets = send(&silo, Method::GET, "/budgets", None, false).await;
    assert_eq!(budgets.status, StatusCode::OK);
    assert!(budgets.text.contains("and 35 more in the CSV"), "twenty spenders on the page, the rest in the CSV");
}

/// A silo without default models is a normal state: the effective-access view says what to do
/// (name a model, or set a default) instead of showing an error. Row actions name their row.
#[sqlx::test(migrations = false)]
async fn no_default_model_is_a_hint_not_an_error(pool: PgPool) {
    let silo_db = support::silo_db(&pool).await;
    support::add_ana(&silo_db, "admin").await;
    let silo = support::silo(silo_db, true);
    let access = send(&silo, Method::GET, "/access?user=ana", None, false).await;
    assert_eq!(access.status, StatusCode::OK, "{}", access.text);
    assert!(access.text.contains("No default model is set for this user"), "the hint is shown");
    assert!(access.text.contains("href=\"/models#defaults\""), "with the way to set one");
    assert!(!access.text.contains("route-result bad"), "not as an error");
    // Each row action says which row it acts on (not one "Delete" per row).
    let users = send(&silo, Method::GET, "/users", None, false).await;
    for name in ["Suspend user ana", "Delete user ana"] {
        assert!(users.text.contains(&format!("aria-label=\"{name}\"")), "{name}");
    }
    // The narrow-screen menu toggle sits inside the banner (the header landmark), not before it.
    let header = users.text.split("<header").nth(1).and_then(|h| h.split("</header>").next()).unwrap_or_default();
    assert!(header.contains("id=\"nav-toggle\""), "the toggle is in the header");
    assert_eq!(users.text.matches("id=\"nav-toggle\"").count(), 1);
}

/// Health probes (every few seconds from the kubelet) are not logged at INFO; other requests are.
#[sqlx::test(migrations = false)]
async fn health_probes_are_not_logged_at_info(pool: PgPool) {
    let (logs, _guard) =
        support::Logs::capture(tracing_subscriber::filter::Targets::new().with_default(tracing::Level::INFO));
    let fleet = support::fleet(support::fleet_db(&pool).await, Features::default(), true);
    for path in ["/healthz", "/readyz"] {
        assert_eq!(send(&fleet, Method::GET, path, None, false).await.status, StatusCode::OK, "{path}");
    }
    assert!(!logs.text().contains("finished processing request"), "probes are quiet: {}", logs.text());
    send(&fleet, Method::GET, "/api/v1/openapi.json", None, false).await;
    let text = logs.text();
    assert!(text.contains("finished processing request") && text.contains("/api/v1/openapi.json"), "{text}");
}

/// The bundle under `/pkg` (issue 20's delivery): the precompressed `.gz` to a browser that
/// accepts gzip (the file itself to one that does not); an unhashed name `no-cache` (a `304`
/// without a body on a repeat visit), the content-hashed names the pages use `immutable`; and
/// the wasm loaded only by a page with an island.
#[sqlx::test(migrations = false)]
async fn the_bundle_is_sent_compressed_cached_by_content_and_loaded_only_for_islands(pool: PgPool) {
    let site = std::env::temp_dir().join(format!("opencrane-site-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(site.join("pkg")).unwrap();
    let wasm: Vec<u8> = (0..200_000u32).map(|i| (i % 7) as u8).collect();
    std::fs::write(site.join("pkg/opencrane-fleet.wasm"), &wasm).unwrap();
    let gzipped =
        std::process::Command::new("gzip").args(["-k", "-n"]).arg(site.join("pkg/opencrane-fleet.wasm")).status();
    assert!(gzipped.unwrap().success());
    let gz = std::fs::read(site.join("pkg/opencrane-fleet.wasm.gz")).unwrap();
    assert!(gz.len() < wasm.len() / 10);
    let db = support::fleet_db(&pool).await;
    let options = opencrane::start::leptos_options(&site, "127.0.0.1:0".parse().unwrap(), leptos::config::Env::DEV);
    let state = opencrane::fleet::fleet_state(options, db.clone(), Some("example.com".into()), true, true, false);
    let app = opencrane::http::router(
        state,
        opencrane::http::AuthConfig::tokens_only(Vec::new(), false, opencrane::http::auth::Scope::Fleet, true),
    );

    let compressed =
        support::send_with(&app, Method::GET, "/pkg/opencrane-fleet.wasm", None, &[("accept-encoding", "gzip, br")])
            .await;
    assert_eq!(compressed.status, StatusCode::OK);
    assert_eq!(compressed.headers["content-encoding"], "gzip");
    assert_eq!(compressed.headers["content-type"], "application/wasm");
    assert_eq!(compressed.headers["cache-control"], "no-cache");
    assert_eq!(compressed.bytes.len(), gz.len(), "the precompressed file");

    let plain = support::send_with(&app, Method::GET, "/pkg/opencrane-fleet.wasm", None, &[]).await;
    assert_eq!(plain.status, StatusCode::OK);
    assert!(!plain.headers.contains_key("content-encoding"));
    assert_eq!(plain.bytes.len(), wasm.len());

    let modified = compressed.headers["last-modified"].to_str().unwrap().to_owned();
    let again = support::send_with(
        &app,
        Method::GET,
        "/pkg/opencrane-fleet.wasm",
        None,
        &[("accept-encoding", "gzip"), ("if-modified-since", &modified)],
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert!(again.bytes.is_empty(), "a repeat visit costs no body");
    let missing = support::send_with(&app, Method::GET, "/pkg/nothing.js", None, &[]).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);

    // The pages refer to the content-hashed names of the manifest, which never change: cached
    // for good, so a repeat visit fetches none of them.
    let hashed = "opencrane-fleet.00112233aabbccdd.wasm";
    std::fs::copy(site.join("pkg/opencrane-fleet.wasm"), site.join("pkg").join(hashed)).unwrap();
    std::fs::copy(site.join("pkg/opencrane-fleet.wasm.gz"), site.join(format!("pkg/{hashed}.gz"))).unwrap();
    std::fs::write(
        site.join("pkg/bundle.json"),
        format!(
            r#"{{"css": "opencrane.00112233aabbccdd.css", "fleet": {{"js": "opencrane-fleet.00112233aabbccdd.js", "wasm": "{hashed}"}}, "silo": {{"js": "opencrane-silo.00112233aabbccdd.js", "wasm": "opencrane-silo.00112233aabbccdd.wasm"}}}}"#
        ),
    )
    .unwrap();
    let app = opencrane::http::router(
        opencrane::fleet::fleet_state(
            opencrane::start::leptos_options(&site, "127.0.0.1:0".parse().unwrap(), leptos::config::Env::DEV),
            db,
            Some("example.com".into()),
            true,
            true,
            false,
        ),
        opencrane::http::AuthConfig::tokens_only(Vec::new(), false, opencrane::http::auth::Scope::Fleet, true),
    );
    let cached =
        support::send_with(&app, Method::GET, &format!("/pkg/{hashed}"), None, &[("accept-encoding", "gzip")]).await;
    assert_eq!(cached.status, StatusCode::OK);
    assert_eq!(cached.headers["cache-control"], "public, max-age=31536000, immutable");
    assert_eq!(cached.headers["content-encoding"], "gzip");
    let plain = support::send_with(&app, Method::GET, "/pkg/opencrane-fleet.wasm", None, &[]).await;
    assert_eq!(plain.headers["cache-control"], "no-cache", "an unhashed name is revalidated");
    let page = support::send_with(&app, Method::GET, "/cluster-tenants", None, &[]).await;
    assert!(page.text.contains(r#"href="/pkg/opencrane.00112233aabbccdd.css""#), "{}", page.text);
    assert!(page.text.contains(&format!(r#""/pkg/{hashed}""#)), "the loader names the hashed wasm");
    assert!(!page.text.contains("opencrane-silo."), "a fleet page loads the fleet's bundle, never a silo's");
    // The wasm is fetched only where an island is: no preload on any page, and the loader
    // looks for one first.
    assert!(!page.text.contains(r#"rel="preload""#) && !page.text.contains("modulepreload"));
    assert!(page.text.contains(r#"document.querySelector("leptos-island")"#));
    let _ = std::fs::remove_dir_all(&site);
}

/// The portal's two tools are `GET` forms the page answers, without the wasm: the test-route
/// tool on `/models` (`?route-user=&route-model=`) and the domain check on `/access`
/// (`&domain=`); a bad question is answered (400) under its field, and what was asked stays
/// chosen.
#[sqlx::test(migrations = false)]
async fn the_portal_tools_are_answered_by_their_pages(pool: PgPool) {
    let silo_db = support::silo_db(&pool).await;
    support::add_ana(&silo_db, "admin").await;
    let silo = support::silo(silo_db, true);

    let asked = send(&silo, Method::GET, "/models?route-user=ana&route-model=", None, false).await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.text);
    assert!(asked.text.contains("route-result"), "the route is explained: {}", asked.text);
    assert!(asked.text.contains("No default model is set for this user"), "ana has no default");
    assert!(asked.text.contains(r#"<option value="ana" selected"#), "ana stays chosen");
    let unasked = send(&silo, Method::GET, "/models", None, false).await;
    assert!(!unasked.text.contains("route-result"), "no answer before a question");
    // A bad question is a bad request (400), answered by the whole page with the reason.
    let nobody = send(&silo, Method::GET, "/models?route-user=ghost", None, false).await;
    assert_eq!(nobody.status, StatusCode::BAD_REQUEST);
    assert!(message_under(&nobody.text, "route-user").contains("Choose a user"), "{}", nobody.text);
    assert_eq!(nobody.text.matches("Choose a user").count(), 1, "said once, under the field");
    assert!(!nobody.text.contains("route-result"));

    let checked = send(&silo, Method::GET, "/access?user=ana&domain=api.example.com", None, false).await;
    assert_eq!(checked.status, StatusCode::OK, "{}", checked.text);
    assert!(checked.text.contains("domain-result"), "the domain is answered: {}", checked.text);
    assert!(checked.text.contains(r#"value="api.example.com""#), "what was asked stays typed");
    let bad = send(&silo, Method::GET, "/access?user=ana&domain=not%20a%20domain", None, false).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(!bad.text.contains("domain-result"), "no answer to a bad question");
    assert!(!message_under(&bad.text, "check-domain").is_empty(), "the message is under the field: {}", bad.text);
}

/// The text of the message slot under the field `id` in a rendered page.
fn message_under(page: &str, id: &str) -> String {
    let slot = page.split(&format!(r#"id="{id}-error""#)).nth(1).unwrap_or_default();
    let inner = slot.split_once('>').map_or("", |(_, rest)| rest);
    inner.split("</p>").next().unwrap_or_default().replace("<!>", "").trim().to_owned()
}

/// The checklist's island swaps in the server's rendering of the checklist: the same markup as
/// the page's (steps, the status card), whether it is still settling, and a state that stays
/// equal while nothing moves (the island's patience counts it).
#[sqlx::test(migrations = false)]
async fn the_checklist_is_rendered_for_its_island(pool: PgPool) {
    let fleet = support::fleet(support::fleet_db(&pool).await, Features::default(), true);
    send(&fleet, Method::POST, "/api/v1/cluster-tenants", Some(&create_body("acme")), true).await;
    let auth = format!("Bearer {}", support::TOKEN);
    let headers = [("authorization", auth.as_str()), ("accept", "application/json")];
    let path = "/api/fleet/cluster-tenants/provisioning/rendered";
    let first = support::send_with(&fleet, Method::POST, path, Some(r#"{"name":"acme"}"#), &headers).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let update: serde_json::Value = serde_json::from_str(&first.text).unwrap();
    let html = update["html"].as_str().unwrap_or_default();
    assert!(html.contains(r#"class="card checklist""#) && html.contains("status-card"), "{html}");
    assert!(html.contains("data-step=\"namespace\""), "the steps are listed: {html}");
    assert_eq!(update["settling"], true, "a new customer settles");
    assert_eq!(update["deleting"], false);
    let again = support::send_with(&fleet, Method::POST, path, Some(r#"{"name":"acme"}"#), &headers).await;
    let again: serde_json::Value = serde_json::from_str(&again.text).unwrap();
    assert_eq!(again["state"], update["state"], "nothing moved in between");

    let page = send(&fleet, Method::GET, "/cluster-tenants/acme", None, false).await;
    assert!(page.text.contains(r#"id="live-status""#) && page.text.contains("FollowChecklist"), "{}", page.text);
    let missing = support::send_with(&fleet, Method::POST, path, Some(r#"{"name":"nope"}"#), &headers).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text);
}
