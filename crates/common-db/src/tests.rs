//! Every test runs twice: against a fresh fleet database and a fresh silo database, proving the
//! shared tables really are the same in both schemas.

use chrono::{Duration, Utc};
use serde_json::json;
use sqlx::PgPool;

use crate::{
    audit::{self, AuditFilter, NewAuditEntry, escape_control},
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
