//! Database tests against a fresh silo database per test.

use sqlx::PgPool;

use crate::{access_tokens, memberships};

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

#[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
async fn access_tokens_authenticate_until_revoked_or_expired(pool: PgPool) {
    let live = access_tokens::NewAccessToken {
        name: "ci",
        owner_subject: "ana",
        role: "admin",
        token_hash: &[1; 32],
        prefix: "ocp_abcd",
        expires_at: None,
    };
    let created = access_tokens::insert(&pool, &live).await.unwrap();
    let found = access_tokens::authenticate(&pool, &[1; 32]).await.unwrap().unwrap();
    assert_eq!(found.id, created.id);
    let listed = access_tokens::list(&pool).await.unwrap();
    assert!(listed[0].last_used_at.is_some(), "use is recorded");
    assert!(access_tokens::authenticate(&pool, &[2; 32]).await.unwrap().is_none());

    let expired = access_tokens::NewAccessToken {
        token_hash: &[3; 32],
        expires_at: Some(chrono::Utc::now() - chrono::Duration::seconds(1)),
        ..live.clone()
    };
    access_tokens::insert(&pool, &expired).await.unwrap();
    assert!(access_tokens::authenticate(&pool, &[3; 32]).await.unwrap().is_none());

    let revoked = access_tokens::revoke(&pool, created.id).await.unwrap().unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(access_tokens::authenticate(&pool, &[1; 32]).await.unwrap().is_none());
    assert!(access_tokens::revoke(&pool, uuid::Uuid::new_v4()).await.unwrap().is_none());
    let duplicate = access_tokens::insert(&pool, &live).await;
    assert!(matches!(duplicate, Err(opencrane_db::Error::UniqueViolation { .. })));
}
