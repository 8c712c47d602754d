//! Every test runs twice: against a fresh fleet database and a fresh silo database, proving the
//! shared tables really are the same in both schemas.

use chrono::{Duration, Utc};
use serde_json::json;
use sqlx::PgPool;

use crate::{
    audit::{self, AuditFilter, NewAuditEntry, escape_control},
    generation,
    sessions::{self, SessionRow},
};

macro_rules! on_both_schemas {
    ($name:ident, $body:path) => {
        mod $name {
            #[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
            async fn fleet(pool: sqlx::PgPool) {
                $body(pool).await
            }
            #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
            async fn silo(pool: sqlx::PgPool) {
                $body(pool).await
            }
        }
    };
}

fn entry<'a>(actor: &'a str, action: &'a str, target: &'a str, meta: &'a serde_json::Value) -> NewAuditEntry<'a> {
    NewAuditEntry {
        actor,
        actor_role: "owner",
        action,
        target,
        outcome: "success",
        request_id: Some("req-1"),
        metadata: meta,
    }
}

async fn audit_pages_and_filters(pool: PgPool) {
    let meta = json!({"field": "role"});
    for i in 0..5 {
        let target = format!("member-{i}");
        let action = if i % 2 == 0 { "membership.update" } else { "auth.sign_in" };
        audit::append(&pool, &entry("ana", action, &target, &meta)).await.unwrap();
    }
    audit::append(&pool, &entry("bob", "auth.sign_in", "bob", &meta)).await.unwrap();
    let all = AuditFilter::default();
    let first = audit::list(&pool, &all, None, 2).await.unwrap();
    assert_eq!(first.iter().map(|r| r.target.as_str()).collect::<Vec<_>>(), ["bob", "member-4"]);
    let next = audit::list(&pool, &all, Some(first[1].id), 10).await.unwrap();
    assert_eq!(next.len(), 4);
    assert_eq!(next[0].metadata, meta);
    assert_eq!(next[0].actor_role, "owner");
    let sign_ins = AuditFilter { action_prefix: Some("auth.".into()), ..Default::default() };
    assert_eq!(audit::list(&pool, &sign_ins, None, 10).await.unwrap().len(), 3);
    let anas = AuditFilter { actor: Some("ana".into()), action_prefix: Some("auth.".into()), ..Default::default() };
    assert_eq!(audit::list(&pool, &anas, None, 10).await.unwrap().len(), 2);
    // LIKE wildcards in the prefix are literal.
    let wild = AuditFilter { action_prefix: Some("%".into()), ..Default::default() };
    assert!(audit::list(&pool, &wild, None, 10).await.unwrap().is_empty());
    assert_eq!(audit::count(&pool).await.unwrap(), 6);
}
on_both_schemas!(audit_pages_and_filters_on, super::audit_pages_and_filters);

async fn audit_escapes_control_characters(pool: PgPool) {
    let meta = json!({});
    audit::append(&pool, &entry("eve\r\nINFO forged line", "x", "t\u{1b}[31m", &meta)).await.unwrap();
    let rows = audit::list(&pool, &AuditFilter::default(), None, 1).await.unwrap();
    assert_eq!(rows[0].actor, "eve\\u{d}\\u{a}INFO forged line");
    assert_eq!(rows[0].target, "t\\u{1b}[31m");
    assert!(!rows[0].actor.chars().any(char::is_control));
    let bad = NewAuditEntry { outcome: "maybe", ..entry("a", "x", "t", &meta) };
    assert!(matches!(audit::append(&pool, &bad).await, Err(opencrane_db::Error::CheckViolation { .. })));
}
on_both_schemas!(audit_escapes_control_characters_on, super::audit_escapes_control_characters);

fn session(id: &str, subject: &str, expires_in: Duration) -> SessionRow {
    let now = Utc::now();
    SessionRow {
        session_id: id.into(),
        subject: subject.into(),
        email: Some(format!("{subject}@example.com")),
        display_name: subject.into(),
        user_agent: "test-agent".into(),
        ip: "127.0.0.1".into(),
        created_at: now,
        last_seen_at: now,
        expires_at: now + expires_in,
    }
}

/// A session record as tower-sessions would store it, idling out after `idle`.
async fn record(pool: &PgPool, id: &str, idle: Duration) {
    sqlx::query("INSERT INTO tower_sessions.session (id, data, expiry_date) VALUES ($1, '\\x00', now() + $2)")
        .bind(id)
        .bind(idle)
        .execute(pool)
        .await
        .unwrap();
}

async fn sessions_list_revoke_and_expire(pool: PgPool) {
    for (id, subject) in [("s1", "ana"), ("s2", "ana"), ("s3", "bob")] {
        sessions::insert(&pool, &session(id, subject, Duration::hours(1))).await.unwrap();
        record(&pool, id, Duration::minutes(30)).await;
    }
    sessions::insert(&pool, &session("old", "ana", Duration::seconds(-1))).await.unwrap();
    record(&pool, "old", Duration::minutes(30)).await;
    sessions::insert(&pool, &session("idle", "ana", Duration::hours(1))).await.unwrap();
    record(&pool, "idle", Duration::seconds(-1)).await;
    let anas = sessions::list_for(&pool, &["ana".into()]).await.unwrap();
    assert_eq!(anas.len(), 2, "expired and idled-out sessions are not listed");
    let later = Utc::now() + Duration::minutes(5);
    sessions::touch(&pool, "s1", later).await.unwrap();
    let anas = sessions::list_for(&pool, &["ana".into(), "bob".into()]).await.unwrap();
    assert_eq!(anas[0].session_id, "s1", "most recently active first");
    assert_eq!(anas.len(), 3);

    let swept = sessions::delete_expired(&pool).await.unwrap();
    assert_eq!(swept, 2, "the absolutely expired and the idled-out session");
    let records: i64 =
        sqlx::query_scalar("SELECT count(*) FROM tower_sessions.session").fetch_one(&pool).await.unwrap();
    assert_eq!(records, 3, "the idled-out and the absolutely expired records went with their rows");

    let removed = sessions::delete_for_subject(&pool, "ana", Some("s1")).await.unwrap();
    assert_eq!(removed, ["s2"], "not the kept session");
    assert!(sessions::get(&pool, "s1").await.unwrap().is_some());
    assert!(sessions::delete(&pool, "s3").await.unwrap());
    assert!(!sessions::delete(&pool, "s3").await.unwrap());
    let left: Vec<String> =
        sqlx::query_scalar("SELECT id FROM tower_sessions.session ORDER BY id").fetch_all(&pool).await.unwrap();
    assert_eq!(left, ["s1"], "ending a session deletes its record too");
}
on_both_schemas!(sessions_list_revoke_and_expire_on, super::sessions_list_revoke_and_expire);

#[test]
fn escaping_is_visible_and_reversible_enough_to_read() {
    assert_eq!(escape_control("plain"), "plain");
    assert_eq!(escape_control("a\tb"), "a\\u{9}b");
}

/// A write to a table the kept answers read, as each schema has one (on the fleet a membership:
/// new customers also count themselves in the tally, whose row two writers would share).
async fn listed_write(pool: &PgPool, n: u32) -> String {
    let fleet: bool =
        sqlx::query_scalar("SELECT to_regclass('cluster_tenants') IS NOT NULL").fetch_one(pool).await.unwrap();
    match fleet {
        true => {
            format!("INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 's-{n}', 'member')")
        }
        false => format!("INSERT INTO groups (name, scope) VALUES ('team-{n}', 'team')"),
    }
}

/// The generation and the write become visible in one commit: while a writer has not committed,
/// others read the old generation; a writer changes it at its commit, not at its first statement,
/// so two writers never wait on each other for it (one commits while the other is still open —
/// with the change at the first statement, the second writer's commit would wait for the
/// first's; the timeout turns that wait into a failure).
async fn the_generation_changes_at_commit_and_writers_do_not_wait_for_it(pool: PgPool) {
    let now = || async { generation::current(&pool).await.unwrap().expect("the generation row exists") };
    let customers: bool =
        sqlx::query_scalar("SELECT to_regclass('cluster_tenants') IS NOT NULL").fetch_one(&pool).await.unwrap();
    if customers {
        sqlx::query("INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme')")
            .execute(&pool)
            .await
            .unwrap();
    }
    let before = now().await;
    let mut first = pool.begin().await.unwrap();
    for n in 1..=2 {
        sqlx::query(&listed_write(&pool, n).await).execute(&mut *first).await.unwrap();
    }
    assert_eq!(now().await, before, "an uncommitted write is not a new generation");

    let second = async {
        let mut tx = pool.begin().await.unwrap();
        sqlx::query(&listed_write(&pool, 3).await).execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), second)
        .await
        .expect("a writer commits while another writer is open");
    let between = now().await;
    assert_ne!(between, before);
    first.commit().await.unwrap();
    let after = now().await;
    assert!(after != between && after != before, "the open writer's commit is a generation too");
}
on_both_schemas!(
    generation_changes_at_commit_on,
    super::the_generation_changes_at_commit_and_writers_do_not_wait_for_it
);
