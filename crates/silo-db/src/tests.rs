//! Database tests against a fresh silo database per test.

use serde_json::json;
use sqlx::PgPool;

use crate::{
    audit::{self, NewAuditEntry},
    memberships,
};

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn audit_pages_newest_first(pool: PgPool) {
    let meta = json!({"field": "role"});
    for i in 0..5 {
        let target = format!("member-{i}");
        let entry = NewAuditEntry {
            actor: "ana",
            action: "membership.update",
            target: &target,
            outcome: "success",
            request_id: Some("req-1"),
            metadata: &meta,
        };
        audit::append(&pool, &entry).await.unwrap();
    }
    let first = audit::list(&pool, None, 2).await.unwrap();
    assert_eq!(first.iter().map(|r| r.target.as_str()).collect::<Vec<_>>(), ["member-4", "member-3"]);
    let next = audit::list(&pool, Some(first[1].id), 10).await.unwrap();
    assert_eq!(next.iter().map(|r| r.target.as_str()).collect::<Vec<_>>(), ["member-2", "member-1", "member-0"]);
    assert_eq!(next[0].metadata, meta);
}

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn audit_rejects_unknown_outcomes(pool: PgPool) {
    let meta = json!({});
    let entry =
        NewAuditEntry { actor: "a", action: "x", target: "t", outcome: "maybe", request_id: None, metadata: &meta };
    let r = audit::append(&pool, &entry).await;
    assert!(matches!(r, Err(opencrane_db::Error::CheckViolation { .. })), "{r:?}");
}

/// The read-model accepts several owners: the fleet allows them, so the projection must too.
#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn read_model_accepts_several_owners_and_updates_in_place(pool: PgPool) {
    memberships::upsert(&pool, "acme", "ana", "owner", "active").await.unwrap();
    memberships::upsert(&pool, "acme", "bob", "owner", "active").await.unwrap();
    memberships::upsert(&pool, "acme", "cy", "member", "active").await.unwrap();
    memberships::upsert(&pool, "acme", "cy", "admin", "suspended").await.unwrap();
    let rows = memberships::list(&pool).await.unwrap();
    let view: Vec<_> = rows.iter().map(|r| (r.subject.as_str(), r.role.as_str(), r.status.as_str())).collect();
    assert_eq!(view, [("ana", "owner", "active"), ("bob", "owner", "active"), ("cy", "admin", "suspended")]);
}
