//! Database tests: each runs against a fresh database on the harness's PostgreSQL, migrated with
//! the embedded fleet schema.

use opencrane_db::Error as DbError;
use serde_json::json;
use sqlx::PgPool;

use crate::{
    billing_accounts,
    cluster_tenants::{self, Cursor, DesiredState, ListFilter, SortKey, Start},
    invitations,
    memberships::{self, Admission, MembershipError},
};

fn desired<'a>(display_name: &'a str, quota: &'a serde_json::Value) -> DesiredState<'a> {
    DesiredState::shared(display_name, quota, "Retain")
}

async fn seed(pool: &PgPool, name: &str) {
    let quota = json!({});
    cluster_tenants::insert(pool, name, &desired(&name.to_uppercase(), &quota)).await.unwrap();
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn insert_then_get_round_trips_and_starts_pending(pool: PgPool) {
    let quota = json!({"cpu": "4", "pods": 20});
    let mut d = desired("Acme Corp", &quota);
    d.vanity_domain = Some("acme.example.com");
    d.seat_cap = Some(50);
    let inserted = cluster_tenants::insert(&pool, "acme", &d).await.unwrap();
    assert_eq!(inserted.phase, "pending");
    let got = cluster_tenants::get(&pool, "acme").await.unwrap();
    assert_eq!(got, inserted);
    assert_eq!(got.quota, quota);
    assert_eq!(got.vanity_domain.as_deref(), Some("acme.example.com"));
    assert_eq!(got.seat_cap, Some(50));
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn duplicates_are_reported_by_constraint_name(pool: PgPool) {
    let quota = json!({});
    let mut d = desired("Acme", &quota);
    d.vanity_domain = Some("acme.example.com");
    cluster_tenants::insert(&pool, "acme", &d).await.unwrap();

    let again = cluster_tenants::insert(&pool, "acme", &desired("Other", &quota)).await;
    assert!(matches!(again, Err(DbError::UniqueViolation { ref constraint }) if constraint == "cluster_tenants_pkey"));

    let same_domain = cluster_tenants::insert(&pool, "beta", &d).await;
    assert!(
        matches!(same_domain, Err(DbError::UniqueViolation { ref constraint }) if constraint == "cluster_tenants_vanity_domain_key"),
        "{same_domain:?}"
    );
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn check_constraints_back_up_the_validator(pool: PgPool) {
    let quota = json!({});
    for bad in ["Acme", "-acme", "acme-", "1acme", "a_b", &"a".repeat(54)] {
        let r = cluster_tenants::insert(&pool, bad, &desired("X", &quota)).await;
        assert!(
            matches!(r, Err(DbError::CheckViolation { ref constraint }) if constraint == "cluster_tenants_name_format"),
            "{bad}: {r:?}"
        );
    }
    let mut d = desired("X", &quota);
    d.compute_mode = "dedicated";
    let r = cluster_tenants::insert(&pool, "nopool", &d).await;
    assert!(
        matches!(r, Err(DbError::CheckViolation { ref constraint }) if constraint == "cluster_tenants_node_pool_iff_dedicated")
    );
    let mut d = desired("X", &quota);
    d.isolation_tier = "gold";
    let r = cluster_tenants::insert(&pool, "gold", &d).await;
    assert!(
        matches!(r, Err(DbError::CheckViolation { ref constraint }) if constraint == "cluster_tenants_isolation_tier_valid")
    );
    let r = cluster_tenants::insert(&pool, "blank", &desired("   ", &quota)).await;
    assert!(matches!(r, Err(DbError::CheckViolation { .. })));
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn update_changes_desired_state_only(pool: PgPool) {
    seed(&pool, "acme").await;
    sqlx::query("UPDATE cluster_tenants SET phase = 'ready', bound_namespace = 'opencrane-acme' WHERE name = 'acme'")
        .execute(&pool)
        .await
        .unwrap();
    let quota = json!({"pods": 5});
    let mut d = desired("Acme Two", &quota);
    d.compute_mode = "dedicated";
    d.node_pool = Some("gpu-a");
    let updated = cluster_tenants::update_desired(&pool, "acme", &d).await.unwrap();
    assert_eq!(updated.display_name, "Acme Two");
    assert_eq!(updated.node_pool.as_deref(), Some("gpu-a"));
    assert_eq!(updated.phase, "ready", "status columns must survive an update");
    assert_eq!(updated.bound_namespace.as_deref(), Some("opencrane-acme"));
    assert!(updated.updated_at >= updated.created_at);
    let missing = cluster_tenants::update_desired(&pool, "nope", &d).await;
    assert!(matches!(missing, Err(DbError::NotFound)));
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn delete_cascades_to_memberships(pool: PgPool) {
    seed(&pool, "acme").await;
    let mut tx = pool.begin().await.unwrap();
    memberships::upsert(&mut tx, "acme", "sub-1", "owner").await.unwrap();
    tx.commit().await.unwrap();
    cluster_tenants::delete(&pool, "acme").await.unwrap();
    assert!(memberships::list(&pool, "acme").await.unwrap().is_empty());
    assert!(matches!(cluster_tenants::delete(&pool, "acme").await, Err(DbError::NotFound)));
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn list_filters_sorts_and_pages_without_overlap(pool: PgPool) {
    for name in ["delta", "alpha", "charlie", "bravo", "echo"] {
        seed(&pool, name).await;
    }
    sqlx::query("UPDATE cluster_tenants SET phase = 'ready', seat_cap = 10 WHERE name IN ('bravo', 'delta')")
        .execute(&pool)
        .await
        .unwrap();
    let all = ListFilter::default();
    assert_eq!(cluster_tenants::count(&pool, &all).await.unwrap(), 5);

    let names = |rows: Vec<cluster_tenants::ClusterTenantListRow>| rows.into_iter().map(|r| r.name).collect::<Vec<_>>();
    let first =
        cluster_tenants::list(&mut pool.acquire().await.unwrap(), &all, SortKey::Name, false, 2, Start::Offset(0))
            .await
            .unwrap();
    let second =
        cluster_tenants::list(&mut pool.acquire().await.unwrap(), &all, SortKey::Name, false, 2, Start::Offset(2))
            .await
            .unwrap();
    let third =
        cluster_tenants::list(&mut pool.acquire().await.unwrap(), &all, SortKey::Name, false, 2, Start::Offset(4))
            .await
            .unwrap();
    assert!(first.iter().all(|r| r.total == 5), "every row of a page carries the list's total");
    assert_eq!(names(first), ["alpha", "bravo"]);
    assert_eq!(names(second), ["charlie", "delta"]);
    assert_eq!(names(third), ["echo"]);

    let desc =
        cluster_tenants::list(&mut pool.acquire().await.unwrap(), &all, SortKey::Name, true, 10, Start::Offset(0))
            .await
            .unwrap();
    assert_eq!(names(desc), ["echo", "delta", "charlie", "bravo", "alpha"]);

    // Ties on the sort column fall back to name order.
    let by_phase =
        cluster_tenants::list(&mut pool.acquire().await.unwrap(), &all, SortKey::Phase, false, 10, Start::Offset(0))
            .await
            .unwrap();
    assert_eq!(names(by_phase), ["alpha", "charlie", "echo", "bravo", "delta"]);
    let by_cap =
        cluster_tenants::list(&mut pool.acquire().await.unwrap(), &all, SortKey::SeatCap, false, 10, Start::Offset(0))
            .await
            .unwrap();
    assert_eq!(names(by_cap)[..2], ["bravo", "delta"], "capped rows first, uncapped last");

    let ready = ListFilter { phase: Some("ready".into()), ..Default::default() };
    assert_eq!(cluster_tenants::count(&pool, &ready).await.unwrap(), 2);
    let search = ListFilter { search: Some("HAR".into()), ..Default::default() };
    let found =
        cluster_tenants::list(&mut pool.acquire().await.unwrap(), &search, SortKey::Name, false, 10, Start::Offset(0))
            .await
            .unwrap();
    assert_eq!(found[0].total, 1, "a search's total counts the matching rows");
    assert_eq!(names(found), ["charlie"]);
    // LIKE wildcards in the search are literal.
    let wildcard = ListFilter { search: Some("%".into()), ..Default::default() };
    assert_eq!(cluster_tenants::count(&pool, &wildcard).await.unwrap(), 0);
}

/// Keyset paging (issue 20): for every sort column in both directions, following the cursor of
/// each page's last row returns every row exactly once, in the order of the whole list, while
/// rows are inserted between pages — before the cursor (an OFFSET page would then repeat a row)
/// and after it. Ties on the sort value, uncapped seat limits and equal creation times included.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn keyset_pages_return_every_row_once_while_rows_are_inserted(pool: PgPool) {
    let names: Vec<String> = (0..23).map(|i| format!("row-{i:02}")).collect();
    for name in &names {
        seed(&pool, name).await;
    }
    // Awkward values: shared display names (differing in case), phases, caps, and creation times.
    sqlx::query(
        "UPDATE cluster_tenants SET
            display_name = CASE WHEN right(name, 1) IN ('1', '2') THEN 'Same' WHEN right(name, 1) = '3' THEN 'same' ELSE 'Ä ' || name END,
            phase = CASE WHEN right(name, 1) < '4' THEN 'ready' ELSE 'provisioning' END,
            isolation_tier = CASE WHEN right(name, 1) < '6' THEN 'shared' ELSE 'dedicatedNodes' END,
            seat_cap = CASE WHEN right(name, 1) < '5' THEN NULL ELSE substr(name, 6, 1)::int END,
            created_at = CASE WHEN right(name, 1) < '5' THEN '2026-01-01T00:00:00.000001Z'::timestamptz ELSE created_at END",
    )
    .execute(&pool)
    .await
    .unwrap();
    let all = ListFilter::default();
    let sorts =
        [SortKey::Name, SortKey::DisplayName, SortKey::Tier, SortKey::Phase, SortKey::SeatCap, SortKey::CreatedAt];
    let mut inserted = 0;
    for sort in sorts {
        for descending in [false, true] {
            let mut conn = pool.acquire().await.unwrap();
            let whole: Vec<String> = cluster_tenants::list(&mut conn, &all, sort, descending, 1000, Start::Offset(0))
                .await
                .unwrap()
                .into_iter()
                .map(|r| r.name)
                .collect();
            let mut seen: Vec<String> = Vec::new();
            let mut cursor: Option<Cursor> = None;
            loop {
                let start = cursor.as_ref().map_or(Start::Offset(0), Start::After);
                let page = cluster_tenants::list(&mut conn, &all, sort, descending, 4, start).await.unwrap();
                let Some(last) = page.last() else { break };
                cursor = Some(Cursor::of(last, sort));
                assert!(cursor.as_ref().unwrap().fits(sort), "{sort:?}: {cursor:?}");
                seen.extend(page.iter().map(|r| r.name.clone()));
                // Between the first pages, a row that sorts first and one that sorts last arrive.
                if seen.len() <= 12 {
                    for edge in ["aaa", "zzz"] {
                        inserted += 1;
                        seed(&pool, &format!("{edge}-{inserted:03}")).await;
                    }
                }
            }
            let originals: Vec<&String> = seen.iter().filter(|n| n.starts_with("row-")).collect();
            let expected: Vec<&String> = whole.iter().filter(|n| n.starts_with("row-")).collect();
            assert_eq!(originals, expected, "{sort:?} descending={descending}: every row once, in order");
            let mut unique = seen.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), seen.len(), "{sort:?} descending={descending}: no row twice");
        }
    }
    let foreign = Cursor { name: "row-01".into(), key: Some("soon".into()) };
    assert!(!foreign.fits(SortKey::CreatedAt) && !foreign.fits(SortKey::SeatCap) && !foreign.fits(SortKey::Name));
}

/// Issue 20: a jump to a numbered page (an offset past 0) reads the page's names first and then
/// only those rows; for every sort column in both directions, under no filter, a phase filter and
/// a search, each jumped page is the same slice of the whole list, with the same seats in use and
/// the same total.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn jumped_pages_are_slices_of_the_whole_list(pool: PgPool) {
    for i in 0..11 {
        seed(&pool, &format!("row-{i:02}")).await;
    }
    sqlx::query(
        "UPDATE cluster_tenants SET
            display_name = CASE WHEN right(name, 1) IN ('1', '2') THEN 'Same' ELSE 'Ä ' || name END,
            phase = CASE WHEN right(name, 1) < '4' THEN 'ready' ELSE 'provisioning' END,
            seat_cap = CASE WHEN right(name, 1) < '5' THEN NULL ELSE right(name, 1)::int END",
    )
    .execute(&pool)
    .await
    .unwrap();
    let mut tx = pool.begin().await.unwrap();
    for (tenant, subject) in [("row-03", "a"), ("row-03", "b"), ("row-07", "a"), ("row-10", "c")] {
        memberships::upsert(&mut tx, tenant, subject, "member").await.unwrap();
    }
    tx.commit().await.unwrap();
    let filters = [
        ListFilter::default(),
        ListFilter { phase: Some("provisioning".into()), ..Default::default() },
        ListFilter { search: Some("ROW-0".into()), ..Default::default() },
    ];
    let sorts =
        [SortKey::Name, SortKey::DisplayName, SortKey::Tier, SortKey::Phase, SortKey::SeatCap, SortKey::CreatedAt];
    let mut conn = pool.acquire().await.unwrap();
    for filter in &filters {
        for sort in sorts {
            for descending in [false, true] {
                let seen = |rows: Vec<cluster_tenants::ClusterTenantListRow>| {
                    rows.into_iter().map(|r| (r.name, r.active_members, r.total)).collect::<Vec<_>>()
                };
                let whole = seen(
                    cluster_tenants::list(&mut conn, filter, sort, descending, 100, Start::Offset(0)).await.unwrap(),
                );
                assert!(whole.len() >= 4, "{filter:?}: {whole:?}");
                assert!(whole.iter().any(|(_, seats, _)| *seats > 0), "{filter:?}: some row has seats in use");
                for offset in 1..=whole.len() as i64 {
                    let page = seen(
                        cluster_tenants::list(&mut conn, filter, sort, descending, 3, Start::Offset(offset))
                            .await
                            .unwrap(),
                    );
                    let at = offset as usize;
                    let expected = &whole[at..(at + 3).min(whole.len())];
                    assert_eq!(page, expected, "{filter:?} {sort:?} descending={descending} offset={offset}");
                }
            }
        }
    }
}

/// Issue 20: the list's total comes from the tally the database keeps per phase and tier; it
/// matches a count of the rows after single and bulk inserts, status writes that move rows
/// between phases (and ones that do not), tier changes, deletes (cascading or not) and a truncate,
/// for every phase and tier filter.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn the_tally_counts_what_a_scan_counts(pool: PgPool) {
    async fn agrees(pool: &PgPool, when: &str) {
        let phases = [None, Some("pending"), Some("provisioning"), Some("ready"), Some("failed"), Some("deleting")];
        for phase in phases {
            for tier in [None, Some("shared"), Some("dedicatedNodes")] {
                let filter = ListFilter {
                    phase: phase.map(str::to_owned),
                    isolation_tier: tier.map(str::to_owned),
                    ..ListFilter::default()
                };
                let tallied = cluster_tenants::count(pool, &filter).await.unwrap();
                let scanned: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM cluster_tenants WHERE ($1::text IS NULL OR phase = $1)
                       AND ($2::text IS NULL OR isolation_tier = $2)",
                )
                .bind(phase)
                .bind(tier)
                .fetch_one(pool)
                .await
                .unwrap();
                assert_eq!(tallied, scanned, "{when}: phase {phase:?}, tier {tier:?}");
                // The page's own statement counts the same (a page past the end has no row).
                let mut conn = pool.acquire().await.unwrap();
                let page = cluster_tenants::list(&mut conn, &filter, SortKey::Name, false, 2, Start::Offset(0));
                let paged = page.await.unwrap().first().map_or(0, |r| r.total);
                assert_eq!(paged, scanned, "{when}: the page's total, phase {phase:?}, tier {tier:?}");
            }
        }
    }
    agrees(&pool, "empty").await;
    seed(&pool, "one").await;
    agrees(&pool, "one insert").await;
    sqlx::query(
        "INSERT INTO cluster_tenants (name, display_name, isolation_tier, phase)
         SELECT 'bulk-' || i, 'Bulk', (ARRAY['shared', 'dedicatedNodes'])[1 + i % 2],
                (ARRAY['pending', 'provisioning', 'ready', 'failed'])[1 + i % 4]
         FROM generate_series(1, 40) i",
    )
    .execute(&pool)
    .await
    .unwrap();
    agrees(&pool, "a bulk insert").await;
    sqlx::query("UPDATE cluster_tenants SET message = 'still here'").execute(&pool).await.unwrap();
    agrees(&pool, "a write that moves nothing").await;
    sqlx::query("UPDATE cluster_tenants SET phase = 'ready' WHERE phase = 'provisioning'")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE cluster_tenants SET isolation_tier = 'shared', phase = 'deleting' WHERE name LIKE 'bulk-1%'")
        .execute(&pool)
        .await
        .unwrap();
    agrees(&pool, "phase and tier changes").await;
    sqlx::query("DELETE FROM cluster_tenants WHERE phase = 'failed' OR name = 'one'").execute(&pool).await.unwrap();
    agrees(&pool, "deletes").await;
    // A search or a name restriction counts the rows themselves.
    let search = ListFilter { search: Some("bulk-3".into()), ..ListFilter::default() };
    let scanned: i64 = sqlx::query_scalar("SELECT count(*) FROM cluster_tenants WHERE name LIKE 'bulk-3%'")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(scanned > 1);
    assert_eq!(cluster_tenants::count(&pool, &search).await.unwrap(), scanned);
    let names = ListFilter { names: Some(vec!["bulk-2".into(), "bulk-4".into(), "gone".into()]), ..search.clone() };
    let names_only = ListFilter { search: None, ..names.clone() };
    for (filter, expected) in [(search, scanned), (names, 0), (names_only, 2)] {
        let mut conn = pool.acquire().await.unwrap();
        let page = cluster_tenants::list(&mut conn, &filter, SortKey::Name, true, 1, Start::Offset(0)).await.unwrap();
        assert_eq!(page.first().map_or(0, |r| r.total), expected, "the page's total under {filter:?}");
    }
    sqlx::query("TRUNCATE cluster_tenants CASCADE").execute(&pool).await.unwrap();
    agrees(&pool, "a truncate").await;
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn list_counts_only_active_members_as_seats(pool: PgPool) {
    seed(&pool, "acme").await;
    let mut tx = pool.begin().await.unwrap();
    memberships::upsert(&mut tx, "acme", "owner-1", "owner").await.unwrap();
    memberships::upsert(&mut tx, "acme", "member-1", "member").await.unwrap();
    memberships::upsert(&mut tx, "acme", "member-2", "member").await.unwrap();
    memberships::set_status(&mut tx, "acme", "member-2", "suspended").await.unwrap();
    tx.commit().await.unwrap();
    let rows = cluster_tenants::list(
        &mut pool.acquire().await.unwrap(),
        &ListFilter::default(),
        SortKey::Name,
        false,
        10,
        Start::Offset(0),
    )
    .await
    .unwrap();
    assert_eq!(rows[0].active_members, 2);
    // The REST API's list reads whole rows, with the same seats and total, from the first row
    // and after a skip (the jump's statement).
    seed(&pool, "beta").await;
    let mut conn = pool.acquire().await.unwrap();
    let all = ListFilter::default();
    let full = cluster_tenants::list_full_by_creation(&mut conn, &all, 10, 0).await.unwrap();
    let names: Vec<&str> = full.iter().map(|r| r.row.name.as_str()).collect();
    assert_eq!(names, ["acme", "beta"], "creation order");
    assert_eq!(full[0].row, cluster_tenants::get(&mut *conn, "acme").await.unwrap(), "every column");
    assert_eq!((full[0].active_members, full[0].total), (2, 2));
    let skipped = cluster_tenants::list_full_by_creation(&mut conn, &all, 10, 1).await.unwrap();
    assert_eq!(skipped, full[1..], "a skip reads the same rows");
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn the_last_active_owner_cannot_be_demoted_suspended_or_removed(pool: PgPool) {
    seed(&pool, "acme").await;
    let mut tx = pool.begin().await.unwrap();
    memberships::upsert(&mut tx, "acme", "ana", "owner").await.unwrap();
    memberships::upsert(&mut tx, "acme", "bob", "admin").await.unwrap();
    tx.commit().await.unwrap();

    let mut tx = pool.begin().await.unwrap();
    assert!(matches!(memberships::upsert(&mut tx, "acme", "ana", "admin").await, Err(MembershipError::LastOwner)));
    assert!(matches!(
        memberships::set_status(&mut tx, "acme", "ana", "suspended").await,
        Err(MembershipError::LastOwner)
    ));
    assert!(matches!(memberships::remove(&mut tx, "acme", "ana").await, Err(MembershipError::LastOwner)));
    // Non-owners are unaffected by the guard.
    memberships::set_status(&mut tx, "acme", "bob", "suspended").await.unwrap();
    // Promoting a second owner makes the first one removable.
    memberships::set_status(&mut tx, "acme", "bob", "active").await.unwrap();
    memberships::upsert(&mut tx, "acme", "bob", "owner").await.unwrap();
    memberships::remove(&mut tx, "acme", "ana").await.unwrap();
    tx.commit().await.unwrap();

    let left = memberships::list(&pool, "acme").await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].subject.as_str(), left[0].role.as_str()), ("bob", "owner"));
    // A suspended owner does not count as the remaining owner.
    let mut tx = pool.begin().await.unwrap();
    memberships::upsert(&mut tx, "acme", "cy", "owner").await.unwrap();
    memberships::set_status(&mut tx, "acme", "cy", "suspended").await.unwrap();
    assert!(matches!(memberships::remove(&mut tx, "acme", "bob").await, Err(MembershipError::LastOwner)));
}

/// Two owners demoting each other at the same time: the row lock serialises them, so exactly one
/// succeeds and the ClusterTenant keeps an owner.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn concurrent_demotions_keep_one_owner(pool: PgPool) {
    seed(&pool, "acme").await;
    let mut tx = pool.begin().await.unwrap();
    memberships::upsert(&mut tx, "acme", "ana", "owner").await.unwrap();
    memberships::upsert(&mut tx, "acme", "bob", "owner").await.unwrap();
    tx.commit().await.unwrap();

    let mut first = pool.begin().await.unwrap();
    memberships::upsert(&mut first, "acme", "ana", "member").await.unwrap();
    let second = {
        let pool = pool.clone();
        tokio::spawn(async move {
            let mut tx = pool.begin().await.unwrap();
            let r = memberships::upsert(&mut tx, "acme", "bob", "member").await;
            if r.is_ok() {
                tx.commit().await.unwrap();
            }
            r
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!second.is_finished(), "the second demotion must wait for the first transaction");
    first.commit().await.unwrap();
    assert!(matches!(second.await.unwrap(), Err(MembershipError::LastOwner)));
    let owners: Vec<_> =
        memberships::list(&pool, "acme").await.unwrap().into_iter().filter(|m| m.role == "owner").collect();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].subject, "bob");
}

/// Admission at sign-in: a member's sign-in is recorded (role kept, raised by an invitation,
/// never lowered); a verified address accepts its invitation; a newcomer becomes a `member`; both
/// only with a free seat (a refusal keeps the invitation); a suspended member stays suspended.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn admission_records_accepts_adopts_and_refuses(pool: PgPool) {
    seed(&pool, "acme").await;
    sqlx::query("UPDATE cluster_tenants SET seat_cap = 3 WHERE name = 'acme'").execute(&pool).await.unwrap();
    let admit = |subject: &'static str, email: Option<&'static str>| {
        let pool = pool.clone();
        async move {
            let mut tx = pool.begin().await.unwrap();
            let result = memberships::admit(&mut tx, "acme", subject, email).await;
            if result.is_ok() {
                tx.commit().await.unwrap();
            }
            result
        }
    };
    let mut tx = pool.begin().await.unwrap();
    memberships::upsert(&mut tx, "acme", "otto", "owner").await.unwrap();
    tx.commit().await.unwrap();
    invitations::put(&pool, "acme", "Ana@Example.com", "admin", "otto").await.unwrap();
    invitations::put(&pool, "acme", "otto@example.com", "member", "otto").await.unwrap();

    let (row, how) = admit("otto", Some("otto@example.com")).await.unwrap();
    assert_eq!((row.role.as_str(), how), ("owner", Admission::Member), "an invitation never lowers a role");
    assert!(row.last_sign_in_at.is_some());
    let (row, how) = admit("s-ana", Some("ana@example.com")).await.unwrap();
    assert_eq!((row.role.as_str(), row.status.as_str(), how), ("admin", "active", Admission::Invited));
    assert_eq!(invitations::list(&pool, "acme").await.unwrap().len(), 0, "both invitations were taken");
    let (row, how) = admit("s-ben", None).await.unwrap();
    assert_eq!((row.role.as_str(), how), ("member", Admission::Adopted));

    // Every seat is taken: a newcomer is refused and an invitation stays for later.
    invitations::put(&pool, "acme", "cy@example.com", "admin", "otto").await.unwrap();
    let refused = admit("s-cy", Some("cy@example.com")).await.unwrap_err();
    assert!(matches!(refused, MembershipError::SeatCapExceeded { cap: 3 }), "{refused:?}");
    assert_eq!(invitations::list(&pool, "acme").await.unwrap().len(), 1, "the refusal kept the invitation");
    // An existing member still signs in with every seat taken.
    admit("s-ben", None).await.unwrap();

    let mut tx = pool.begin().await.unwrap();
    memberships::set_status(&mut tx, "acme", "s-ben", "suspended").await.unwrap();
    tx.commit().await.unwrap();
    let refused = admit("s-ben", None).await.unwrap_err();
    assert!(matches!(refused, MembershipError::Suspended), "{refused:?}");
    let mut conn = pool.acquire().await.unwrap();
    let ben = memberships::find(&mut conn, "acme", "s-ben").await.unwrap().unwrap();
    assert_eq!(ben.status, "suspended", "a sign-in never reactivates");
    assert!(matches!(memberships::admit(&mut conn, "nope", "x", None).await, Err(MembershipError::NotFound)));
}

/// Concurrent first sign-ins never take more than the free seats.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn concurrent_admissions_respect_the_seat_cap(pool: PgPool) {
    seed(&pool, "acme").await;
    sqlx::query("UPDATE cluster_tenants SET seat_cap = 4 WHERE name = 'acme'").execute(&pool).await.unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut tx = pool.begin().await.unwrap();
                let subject = format!("s-{i}");
                let admitted = memberships::admit(&mut tx, "acme", &subject, None).await;
                if admitted.is_ok() {
                    tx.commit().await.unwrap();
                }
                admitted.is_ok()
            })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        admitted += usize::from(task.await.unwrap());
    }
    assert_eq!(admitted, 4);
    let active = memberships::list(&pool, "acme").await.unwrap().iter().filter(|m| m.status == "active").count();
    assert_eq!(active, 4);
}

/// Invitations: one per address (case-insensitive), the role changed in place, withdrawn once.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn invitations_are_one_per_address(pool: PgPool) {
    seed(&pool, "acme").await;
    let (first, created) = invitations::put(&pool, "acme", "Ana@Example.com", "member", "otto").await.unwrap();
    assert!(created);
    assert_eq!(first.email, "ana@example.com");
    let (again, created) = invitations::put(&pool, "acme", "ana@example.com", "owner", "root").await.unwrap();
    assert!(!created);
    assert_eq!((again.id, again.role.as_str(), again.invited_by.as_str()), (first.id, "owner", "root"));
    assert!(
        invitations::put(&pool, "acme", "not-an-address", "member", "otto").await.is_err(),
        "the CHECK backs the validator"
    );
    assert!(invitations::cancel(&pool, "acme", "ANA@example.com").await.unwrap());
    assert!(!invitations::cancel(&pool, "acme", "ana@example.com").await.unwrap());
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn membership_changes_on_unknown_rows_are_not_found(pool: PgPool) {
    let mut tx = pool.begin().await.unwrap();
    assert!(matches!(memberships::upsert(&mut tx, "ghost", "ana", "owner").await, Err(MembershipError::NotFound)));
    drop(tx);
    seed(&pool, "acme").await;
    let mut tx = pool.begin().await.unwrap();
    assert!(matches!(memberships::remove(&mut tx, "acme", "nobody").await, Err(MembershipError::NotFound)));
}

#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn billing_account_upsert_reports_creation_once(pool: PgPool) {
    let (first, created) = billing_accounts::upsert(&pool, "sub-1", Some("Ana@Example.com"), None, None).await.unwrap();
    assert!(created);
    assert_eq!(first.email.as_deref(), Some("ana@example.com"));
    let (second, created) =
        billing_accounts::upsert(&pool, "sub-1", None, Some("Ana"), Some("Europe/Berlin")).await.unwrap();
    assert!(!created);
    assert_eq!(second.id, first.id);
    assert_eq!(second.email.as_deref(), Some("ana@example.com"), "a missing email keeps the stored one");
    assert_eq!(second.display_name.as_deref(), Some("Ana"));
    assert_eq!((first.time_zone.as_str(), second.time_zone.as_str()), ("UTC", "Europe/Berlin"));
    let (third, _) = billing_accounts::upsert(&pool, "sub-1", None, None, None).await.unwrap();
    assert_eq!(third.time_zone, "Europe/Berlin", "a missing time zone keeps the stored one");
    assert!(billing_accounts::find_by_subject(&pool, "sub-2").await.unwrap().is_none());
}

mod provisioning_bookkeeping {
    use super::*;
    use crate::provisioning::{self, Observed, Progress, StepRow};

    fn ready(generation: i64) -> Observed<'static> {
        Observed {
            generation,
            phase: "ready",
            message: Some("Ready."),
            bound_namespace: Some("opencrane-acme"),
            silo_url: Some("http://127.0.0.1:3001"),
            provisioner: "local",
            progress: Progress::Converged,
        }
    }

    fn step(state: &str) -> StepRow {
        StepRow {
            step: "database".into(),
            state: state.into(),
            reason: "Provisioned".into(),
            message: "m".into(),
            action: None,
            started_at: None,
            finished_at: None,
            generation: 1,
        }
    }

    #[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
    async fn a_new_row_is_due_until_it_converges_and_a_converged_reconcile_writes_nothing(pool: PgPool) {
        seed(&pool, "acme").await;
        let due = provisioning::due(&pool).await.unwrap();
        assert_eq!(
            due.iter().map(|d| (d.name.as_str(), d.generation, d.deleting)).collect::<Vec<_>>(),
            [("acme", 1, false)]
        );
        assert!(provisioning::observe(&pool, "acme", &ready(1)).await.unwrap());
        assert!(provisioning::due(&pool).await.unwrap().is_empty(), "converged");
        assert!(!provisioning::observe(&pool, "acme", &ready(1)).await.unwrap(), "the same status again is no write");
        assert!(provisioning::put_step(&pool, "acme", &step("done")).await.unwrap());
        assert!(!provisioning::put_step(&pool, "acme", &step("done")).await.unwrap(), "an unchanged step is no write");
    }

    #[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
    async fn only_a_real_change_is_a_new_generation(pool: PgPool) {
        let quota = json!({});
        cluster_tenants::insert(&pool, "acme", &desired("Acme", &quota)).await.unwrap();
        let same = cluster_tenants::update_desired(&pool, "acme", &desired("Acme", &quota)).await.unwrap();
        assert_eq!(same.generation, 1);
        let mut suspend = desired("Acme", &quota);
        suspend.suspended = true;
        let changed = cluster_tenants::update_desired(&pool, "acme", &suspend).await.unwrap();
        assert_eq!(changed.generation, 2);
    }

    #[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
    async fn a_failure_backs_off_and_retry_makes_it_due_at_once(pool: PgPool) {
        seed(&pool, "acme").await;
        let working = Observed { phase: "provisioning", progress: Progress::Working, ..ready(1) };
        assert!(provisioning::observe(&pool, "acme", &working).await.unwrap());
        assert_eq!(cluster_tenants::get(&pool, "acme").await.unwrap().failed_attempts, 0, "progress is no failure");
        let failed = Observed { phase: "failed", progress: Progress::Failed { retry_in_seconds: 3600 }, ..ready(1) };
        assert!(provisioning::observe(&pool, "acme", &failed).await.unwrap());
        assert!(provisioning::due(&pool).await.unwrap().is_empty(), "backing off for an hour");
        provisioning::put_step(&pool, "acme", &step("failed")).await.unwrap();
        provisioning::request_retry(&pool, "acme", Some("database")).await.unwrap();
        let due = provisioning::due(&pool).await.unwrap();
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].failed_attempts, 0);
        let steps = provisioning::steps(&pool, "acme").await.unwrap();
        assert_eq!(steps[0].state, "pending");
        assert!(matches!(provisioning::request_retry(&pool, "nobody", None).await, Err(DbError::NotFound)));
    }

    #[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
    async fn deletion_is_two_phase(pool: PgPool) {
        seed(&pool, "acme").await;
        provisioning::observe(&pool, "acme", &ready(1)).await.unwrap();
        assert!(!provisioning::finish_deletion(&pool, "acme").await.unwrap(), "not marked: stays");
        provisioning::request_deletion(&pool, "acme").await.unwrap();
        let due = provisioning::due(&pool).await.unwrap();
        assert!(due[0].deleting);
        assert_eq!(cluster_tenants::get(&pool, "acme").await.unwrap().phase, "deleting");
        assert!(provisioning::live_names(&pool).await.unwrap().is_empty());
        assert!(provisioning::finish_deletion(&pool, "acme").await.unwrap());
        assert!(matches!(cluster_tenants::get(&pool, "acme").await, Err(DbError::NotFound)));
    }

    /// A reconcile that was running when the deletion was asked for finishes after it: its status
    /// must not put the phase back (the console would stop following the teardown) nor push the
    /// teardown behind a backoff; a step failure from before the deletion is queued for the teardown.
    #[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
    async fn a_reconcile_that_ends_after_the_deletion_request_leaves_it_alone(pool: PgPool) {
        seed(&pool, "acme").await;
        provisioning::put_step(&pool, "acme", &step("failed")).await.unwrap();
        provisioning::request_deletion(&pool, "acme").await.unwrap();
        let steps = provisioning::steps(&pool, "acme").await.unwrap();
        assert_eq!((steps[0].state.as_str(), steps[0].message.as_str()), ("pending", "Waits for the teardown."));
        assert!(!provisioning::observe(&pool, "acme", &ready(1)).await.unwrap(), "converged late: no write");
        let failed = Observed { phase: "failed", progress: Progress::Failed { retry_in_seconds: 3600 }, ..ready(1) };
        assert!(!provisioning::observe(&pool, "acme", &failed).await.unwrap(), "failed late: no write");
        let row = cluster_tenants::get(&pool, "acme").await.unwrap();
        assert_eq!((row.phase.as_str(), row.failed_attempts), ("deleting", 0));
        assert_eq!(provisioning::due(&pool).await.unwrap().len(), 1, "the teardown is due at once");
        let teardown = Observed { phase: "deleting", progress: Progress::Failed { retry_in_seconds: 60 }, ..ready(1) };
        assert!(provisioning::observe(&pool, "acme", &teardown).await.unwrap(), "the teardown's own status is kept");
        assert!(provisioning::due(&pool).await.unwrap().is_empty());
    }
}

/// Usage is recorded once per (customer, day) whatever the order and repetition of reports; a
/// different report revises the day and keeps what it replaced; concurrent identical reports of
/// a new day leave one row at revision 1.
#[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
async fn usage_days_are_idempotent_reorderable_and_revised(pool: PgPool) {
    use crate::usage::{self, DayUsage, SpendLine};
    let day = |d: u32| chrono::NaiveDate::from_ymd_opt(2026, 11, d).unwrap();
    let line = |model: &str, amount| SpendLine { model: model.into(), currency: "EUR".into(), amount };
    let report = |seats, lines: Vec<SpendLine>| DayUsage { active_seats: seats, spend: lines };
    let mut conn = pool.acquire().await.unwrap();
    // Day 2 before day 1; lines in any order.
    let two = report(3, vec![line("smart", 5), line("fast", 7)]);
    assert_eq!(usage::record(&mut conn, "acme", day(2), two.clone()).await.unwrap().revision, 1);
    assert!(usage::record(&mut conn, "acme", day(1), report(2, vec![])).await.unwrap().changed);
    let reordered = report(3, vec![line("fast", 7), line("smart", 5)]);
    let again = usage::record(&mut conn, "acme", day(2), reordered).await.unwrap();
    assert_eq!((again.revision, again.changed), (1, false), "the same report in another order");
    assert_eq!(usage::latest_day(&mut conn, "acme").await.unwrap(), Some(day(2)));
    // A late line revises the day.
    let late =
        usage::record(&mut conn, "acme", day(2), report(3, vec![line("fast", 9), line("smart", 5)])).await.unwrap();
    assert_eq!((late.revision, late.changed), (2, true));
    let replaced: serde_json::Value =
        sqlx::query_scalar("SELECT replaced FROM usage_revisions WHERE cluster_tenant = 'acme' AND revision = 1")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(replaced, serde_json::to_value(two.normalised()).unwrap());
    let held = usage::days(&mut conn, "acme", day(1), day(30)).await.unwrap();
    assert_eq!(held.len(), 2);
    assert_eq!(held[1].usage.spend, [line("fast", 9), line("smart", 5)]);
    assert_eq!(usage::latest_day(&mut conn, "globex").await.unwrap(), None, "another customer holds nothing");
    drop(conn);

    let concurrent = (0..10).map(|_| {
        let pool = pool.clone();
        tokio::spawn(async move {
            let mut tx = pool.begin().await.unwrap();
            let r = usage::record(&mut tx, "acme", day(5), report(1, vec![line("fast", 1)])).await.unwrap();
            tx.commit().await.unwrap();
            r
        })
    });
    let results: Vec<_> = joined(concurrent).await;
    assert_eq!(results.iter().filter(|r| r.changed).count(), 1, "{results:?}");
    assert!(results.iter().all(|r| r.revision == 1));
}

async fn joined<T>(handles: impl Iterator<Item = tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for handle in handles.collect::<Vec<_>>() {
        out.push(handle.await.unwrap());
    }
    out
}

mod data_generation {
    //! Which of the fleet's tables the data generation follows (the kept customers pages rely on
    //! it; what it is and when it changes: `opencrane-common-db`'s tests).

    use sqlx::PgPool;

    async fn now(pool: &PgPool) -> uuid::Uuid {
        sqlx::query_scalar("SELECT generation FROM data_generation").fetch_one(pool).await.unwrap()
    }

    /// Every committed change to the customers or their memberships is a new generation; an
    /// update that changes nothing (the reconciler writing the status it already wrote), reads
    /// and writes elsewhere are not.
    #[sqlx::test(migrator = "opencrane_db::FLEET_MIGRATOR")]
    async fn every_change_to_what_the_customers_list_reads_changes_the_generation(pool: PgPool) {
        let writes = [
            "INSERT INTO cluster_tenants (name, display_name) VALUES ('acme', 'Acme')",
            "UPDATE cluster_tenants SET phase = 'ready', message = 'ready'",
            "INSERT INTO org_memberships (cluster_tenant, subject, role) VALUES ('acme', 'ana', 'owner')",
            "UPDATE org_memberships SET status = 'suspended'",
            "DELETE FROM org_memberships",
            "TRUNCATE org_memberships",
            "DELETE FROM cluster_tenants",
        ];
        let mut seen = vec![now(&pool).await];
        for write in writes {
            sqlx::query(write).execute(&pool).await.unwrap_or_else(|e| panic!("{write}: {e}"));
            let after = now(&pool).await;
            assert!(!seen.contains(&after), "{write} left the generation as it was (or repeated one)");
            seen.push(after);
        }
        sqlx::query("INSERT INTO cluster_tenants (name, display_name, phase) VALUES ('acme', 'Acme', 'ready')")
            .execute(&pool)
            .await
            .unwrap();
        let last = now(&pool).await;
        let same = [
            "UPDATE cluster_tenants SET phase = 'ready' WHERE name = 'acme'",
            "SELECT count(*) FROM cluster_tenants",
            "INSERT INTO audit_log (actor, action, target, outcome) VALUES ('ana', 'x', 'y', 'success')",
        ];
        for statement in same {
            sqlx::query(statement).execute(&pool).await.unwrap_or_else(|e| panic!("{statement}: {e}"));
            assert_eq!(now(&pool).await, last, "{statement} changed the generation");
        }
    }
}
