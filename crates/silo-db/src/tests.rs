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

mod portal {
    //! The portal's repositories, each function against a fresh database.

    use chrono::{Duration, TimeZone, Utc};
    use serde_json::json;
    use sqlx::PgPool;
    use uuid::Uuid;

    use crate::{
        budgets::{self, BudgetFields, SpendEvent},
        grants::{self, NewGrant},
        groups, litellm,
        models::{self, DefinitionFields, KeySource, Sealed},
        policies::{self, PolicyFields},
        settings,
        tenants::{self, TenantFields, TenantFilter},
    };

    fn fields<'a>(email: &'a str, subject: &'a str, team: Option<&'a str>) -> TenantFields<'a> {
        TenantFields {
            display_name: "Ana",
            email,
            subject,
            team,
            policy_ref: None,
            cpu: Some("500m"),
            memory: Some("1Gi"),
        }
    }

    async fn seed_users(pool: &PgPool) {
        tenants::insert(pool, "ana", &fields("ana@acme.test", "s-ana", Some("eng")), "admin").await.unwrap();
        tenants::insert(pool, "bob", &fields("bob@acme.test", "s-bob", Some("sales")), "sign-in").await.unwrap();
    }

    #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
    async fn settings_have_one_row_with_defaults(pool: PgPool) {
        let s = settings::get(&pool).await.unwrap();
        assert_eq!(
            (s.time_zone.as_str(), s.currency.as_str(), s.default_model_access.as_str()),
            ("UTC", "USD", "allow")
        );
        let s = settings::update(&pool, "Europe/Berlin", "EUR", "deny").await.unwrap();
        assert_eq!(s.time_zone, "Europe/Berlin");
        let bad = settings::update(&pool, "UTC", "usd", "allow").await;
        assert!(matches!(bad, Err(opencrane_db::Error::CheckViolation { .. })));
    }

    #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
    async fn users_are_listed_filtered_updated_suspended_and_deleted(pool: PgPool) {
        seed_users(&pool).await;
        let all = tenants::list(&pool, &TenantFilter::default()).await.unwrap();
        assert_eq!(all.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["ana", "bob"]);
        let eng = tenants::list(&pool, &TenantFilter { team: Some("eng"), ..TenantFilter::default() }).await.unwrap();
        assert_eq!(eng.len(), 1);
        assert_eq!(tenants::teams(&pool).await.unwrap(), ["eng", "sales"]);
        let second = TenantFilter { limit: Some(1), offset: 1, ..TenantFilter::default() };
        let page = tenants::list(&pool, &second).await.unwrap();
        assert_eq!(page.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["bob"], "one page, in name order");
        assert_eq!(tenants::count(&pool, &second).await.unwrap(), 2, "the count ignores the page");
        let eng = TenantFilter { team: Some("eng"), ..TenantFilter::default() };
        assert_eq!(tenants::count(&pool, &eng).await.unwrap(), 1);
        let search =
            tenants::list(&pool, &TenantFilter { search: Some("BOB@"), ..TenantFilter::default() }).await.unwrap();
        assert_eq!(search[0].name, "bob");
        let wildcard =
            tenants::list(&pool, &TenantFilter { search: Some("%"), ..TenantFilter::default() }).await.unwrap();
        assert!(wildcard.is_empty(), "LIKE wildcards are literal");
        assert_eq!(tenants::by_subject(&pool, "s-bob").await.unwrap().unwrap().origin, "sign-in");

        let changed = tenants::update(&pool, "ana", &fields("ana@acme.test", "s-ana", None)).await.unwrap().unwrap();
        assert_eq!(changed.team, None);
        assert!(tenants::update(&pool, "nobody", &fields("x@y.z", "s-x", None)).await.unwrap().is_none());
        assert!(tenants::set_suspended(&pool, "ana", true).await.unwrap().unwrap().suspended);
        let suspended =
            tenants::list(&pool, &TenantFilter { suspended: Some(true), ..TenantFilter::default() }).await.unwrap();
        assert_eq!(suspended.len(), 1);
        assert!(tenants::set_phase(&pool, "ana", Some("Running")).await.unwrap());
        assert!(!tenants::set_phase(&pool, "ana", Some("Running")).await.unwrap(), "unchanged is not a write");
        let none =
            tenants::list(&pool, &TenantFilter { phase: Some("none"), ..TenantFilter::default() }).await.unwrap();
        assert_eq!(none[0].name, "bob");

        let dup_email = tenants::insert(&pool, "ana2", &fields("ANA@acme.test", "s-ana2", None), "admin").await;
        assert!(
            matches!(dup_email, Err(opencrane_db::Error::UniqueViolation { constraint }) if constraint == "tenants_email_key")
        );
        let bad_name = tenants::insert(&pool, "Ana!", &fields("z@acme.test", "s-z", None), "admin").await;
        assert!(matches!(bad_name, Err(opencrane_db::Error::CheckViolation { .. })));
        assert!(tenants::delete(&pool, "ana").await.unwrap());
        assert!(tenants::get(&pool, "ana").await.unwrap().is_none());
        assert!(!tenants::delete(&pool, "ana").await.unwrap());
    }

    #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
    async fn groups_keep_names_unique_per_scope_and_mirror_idp_groups(pool: PgPool) {
        seed_users(&pool).await;
        let eng = groups::insert(&pool, "eng", "team", "Engineers", "local").await.unwrap();
        groups::insert(&pool, "eng", "project", "", "local").await.unwrap();
        let dup = groups::insert(&pool, "eng", "team", "", "local").await;
        assert!(matches!(dup, Err(opencrane_db::Error::UniqueViolation { .. })));
        let mut conn = pool.acquire().await.unwrap();
        groups::set_members(&mut *conn, eng, &["ana".into(), "bob".into()]).await.unwrap();
        groups::set_members(&mut *conn, eng, &["bob".into()]).await.unwrap();
        groups::set_members(&mut *conn, eng, &["bob".into()]).await.unwrap();
        assert_eq!(groups::get(&pool, eng).await.unwrap().unwrap().members, ["bob"]);
        let unknown = groups::set_members(&mut *conn, eng, &["ghost".into()]).await;
        assert!(matches!(unknown, Err(opencrane_db::Error::ForeignKeyViolation { .. })));
        groups::set_members(&mut *conn, eng, &["bob".into(), "ana".into()]).await.unwrap();
        assert_eq!(
            groups::list(&pool).await.unwrap().into_iter().find(|g| g.id == eng).unwrap().members,
            ["ana", "bob"]
        );
        assert_eq!(groups::names(&pool).await.unwrap().iter().filter(|g| g.id == eng && g.name == "eng").count(), 1);
        groups::set_members(&mut *conn, eng, &["bob".into()]).await.unwrap();
        assert!(groups::update(&pool, eng, "engineering", "team", "All engineers").await.unwrap());

        assert_eq!(groups::mirror_idp_groups(&mut conn, "ana", &["admins".into(), "ops".into()]).await.unwrap(), 2);
        assert_eq!(groups::mirror_idp_groups(&mut conn, "ana", &["ops".into()]).await.unwrap(), 1);
        let mine: Vec<_> =
            groups::memberships_of(&pool, "ana").await.unwrap().into_iter().map(|m| m.group_name).collect();
        assert_eq!(mine, ["ops"]);
        let all = groups::memberships(&pool, None).await.unwrap();
        assert_eq!(all.len(), 2);
        let only_ana = groups::memberships(&pool, Some(&["ana".to_owned()])).await.unwrap();
        assert_eq!(only_ana.iter().map(|m| m.group_name.as_str()).collect::<Vec<_>>(), ["ops"]);
        assert!(groups::memberships(&pool, Some(&[])).await.unwrap().is_empty(), "nobody named, nothing read");
        assert_eq!(groups::list(&pool).await.unwrap().len(), 4);
        assert!(groups::delete(&pool, eng).await.unwrap());
        assert!(groups::get(&pool, eng).await.unwrap().is_none());
    }

    #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
    async fn policies_in_use_cannot_be_deleted(pool: PgPool) {
        let f = PolicyFields {
            description: "Engineers",
            tenant_selector: &json!({"team": "eng"}),
            allowed_domains: &["*.example.com".into()],
            denied_domains: &[],
            egress_rules: &json!([{"cidr": "10.0.0.0/8", "ports": [443]}]),
        };
        policies::insert(&pool, "eng", &f).await.unwrap();
        let mut user = fields("ana@acme.test", "s-ana", None);
        user.policy_ref = Some("eng");
        tenants::insert(&pool, "ana", &user, "admin").await.unwrap();
        let p = policies::get(&pool, "eng").await.unwrap().unwrap();
        assert_eq!(p.used_by, ["ana"]);
        assert!(policies::update(&pool, "eng", &PolicyFields { description: "changed", ..f.clone() }).await.unwrap());
        assert_eq!(policies::list(&pool).await.unwrap()[0].description, "changed");
        let in_use = policies::delete(&pool, "eng").await;
        assert!(matches!(in_use, Err(opencrane_db::Error::ForeignKeyViolation { .. })));
        user.policy_ref = None;
        tenants::update(&pool, "ana", &user).await.unwrap();
        assert!(policies::delete(&pool, "eng").await.unwrap());
        let dangling = {
            user.policy_ref = Some("gone");
            tenants::update(&pool, "ana", &user).await
        };
        assert!(matches!(dangling, Err(opencrane_db::Error::ForeignKeyViolation { .. })));
    }

    #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
    async fn grants_to_groups_go_with_the_group(pool: PgPool) {
        let g = groups::insert(&pool, "eng", "team", "", "local").await.unwrap();
        let gid = g.to_string();
        let new = |subject_type, subject_id| NewGrant {
            payload_type: "model",
            payload_id: "fast",
            subject_type,
            subject_id,
            access: "deny",
            priority: 5,
            note: "",
            created_by: "admin",
        };
        let to_group = grants::insert(&pool, &new("group", &gid)).await.unwrap();
        grants::insert(&pool, &new("tenant", "ana")).await.unwrap();
        let listed = grants::list(&pool).await.unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed.iter().find(|x| x.id == to_group).unwrap().group_name.as_deref(), Some("eng"));
        let ghost_id = Uuid::new_v4().to_string();
        let ghost = grants::insert(&pool, &new("group", &ghost_id)).await;
        assert!(matches!(ghost, Err(opencrane_db::Error::ForeignKeyViolation { .. })));
        let not_a_group = grants::insert(&pool, &new("group", "eng")).await;
        assert!(matches!(not_a_group, Err(opencrane_db::Error::CheckViolation { .. })));
        groups::delete(&pool, g).await.unwrap();
        assert_eq!(grants::list(&pool).await.unwrap().len(), 1);
        let remaining = grants::list(&pool).await.unwrap()[0].id;
        assert!(grants::delete(&pool, remaining).await.unwrap());
        assert!(!grants::delete(&pool, remaining).await.unwrap());
    }

    #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
    async fn limits_are_one_per_target_and_spend_is_summed_exactly(pool: PgPool) {
        seed_users(&pool).await;
        let g = groups::insert(&pool, "eng", "team", "", "local").await.unwrap();
        let mut conn = pool.acquire().await.unwrap();
        let limit = |level, group_id, tenant, amount| BudgetFields {
            level,
            group_id,
            tenant,
            currency: "USD",
            amount,
            period: "month",
            thresholds: &[50, 80, 100],
        };
        let silo = budgets::put(&mut conn, &limit("silo", None, None, 100_000_000)).await.unwrap();
        let again = budgets::put(&mut conn, &limit("silo", None, None, 250_500_000)).await.unwrap();
        assert_eq!(silo, again, "setting again replaces");
        budgets::put(&mut conn, &limit("group", Some(g), None, 10_000_000)).await.unwrap();
        budgets::put(&mut conn, &limit("user", None, Some("ana"), 5_000_000)).await.unwrap();
        let wrong = budgets::put(&mut conn, &limit("user", Some(g), None, 1)).await;
        assert!(matches!(wrong, Err(opencrane_db::Error::CheckViolation { .. })));
        let rows = budgets::list(&pool).await.unwrap();
        assert_eq!(rows.iter().map(|r| r.level.as_str()).collect::<Vec<_>>(), ["silo", "group", "user"]);
        assert_eq!(rows[0].amount, 250_500_000);
        assert_eq!(rows[1].group_name.as_deref(), Some("eng"));

        let t0 = Utc.with_ymd_and_hms(2026, 3, 28, 23, 30, 0).single().unwrap();
        let event = |id: &str, tenant: Option<&str>, model: &str, amount, at| SpendEvent {
            request_id: id.into(),
            tenant: tenant.map(str::to_owned),
            model: model.into(),
            amount,
            occurred_at: at,
            ..Default::default()
        };
        let events = [
            event("r1", Some("ana"), "fast", 1_234_567, t0),
            event("r2", Some("ana"), "smart", 1, t0 + Duration::hours(1)),
            event("r3", Some("bob"), "fast", 2_000_000, t0 + Duration::days(2)),
            event("r4", Some("ghost"), "fast", 5, t0),
        ];
        assert_eq!(budgets::record_spend(&pool, &events).await.unwrap(), 4);
        assert_eq!(budgets::record_spend(&pool, &events).await.unwrap(), 0, "each request once");
        let to = t0 + Duration::days(7);
        let by_tenant = budgets::spend_by_tenant(&pool, t0, to).await.unwrap();
        assert_eq!(by_tenant, [(Some("ana".into()), 1_234_568), (Some("bob".into()), 2_000_000), (None, 5)]);
        let by_model = budgets::spend_by_model(&pool, t0, to).await.unwrap();
        assert_eq!(by_model[0], ("fast".into(), 3_234_572));
        let days = budgets::spend_by_day(&pool, t0, to, "Europe/Berlin").await.unwrap();
        assert_eq!(days.len(), 2, "23:30 and 00:30 UTC are both 29 March in Berlin: {days:?}");

        let budget = rows[2].id;
        assert!(budgets::notify(&pool, budget, t0, 50, 2_500_000, "half").await.unwrap());
        assert!(!budgets::notify(&pool, budget, t0, 50, 2_600_000, "half again").await.unwrap(), "once per period");
        assert!(budgets::notify(&pool, budget, t0 + Duration::days(31), 50, 1, "next month").await.unwrap());
        let open = budgets::open_notices(&pool).await.unwrap();
        assert_eq!(open.len(), 2);
        assert!(budgets::dismiss(&pool, open[0].id).await.unwrap());
        assert_eq!(budgets::open_notices(&pool).await.unwrap().len(), 1);
        assert!(budgets::delete(&pool, budget).await.unwrap());
        assert_eq!(budgets::open_notices(&pool).await.unwrap().len(), 0, "notices go with their limit");
    }

    #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
    async fn models_credentials_fallbacks_and_defaults(pool: PgPool) {
        seed_users(&pool).await;
        let sealed = Sealed { nonce: vec![0; 12], ciphertext: vec![1, 2, 3], key_version: 1 };
        let cred = models::insert_credential(&pool, "openai-main", "openai", None, &KeySource::Sealed(&sealed, "ab12"))
            .await
            .unwrap();
        let short = Sealed { nonce: vec![0; 3], ..sealed.clone() };
        let bad_nonce = models::insert_credential(&pool, "x", "openai", None, &KeySource::Sealed(&short, "")).await;
        assert!(matches!(bad_nonce, Err(opencrane_db::Error::CheckViolation { .. })));
        // A Secret reference instead of a sealed key: a valid name (and key) only.
        let referenced =
            models::insert_credential(&pool, "by-ref", "openai", None, &KeySource::SecretRef("llm-keys/openai")).await;
        assert!(referenced.is_ok(), "{referenced:?}");
        let bad_ref = models::insert_credential(&pool, "y", "openai", None, &KeySource::SecretRef("Bad_Name")).await;
        assert!(matches!(bad_ref, Err(opencrane_db::Error::CheckViolation { .. })));
        assert_eq!(models::credential_secret(&pool, referenced.unwrap()).await.unwrap(), None, "nothing sealed");
        let f = DefinitionFields {
            public_name: "fast",
            upstream_model: "openai/gpt-4o-mini",
            api_base: None,
            credential_id: Some(cred),
            weight: 3,
        };
        let d1 = models::insert_definition(&pool, &f).await.unwrap();
        models::insert_definition(
            &pool,
            &DefinitionFields { upstream_model: "openai/gpt-4.1-mini", weight: 1, ..f.clone() },
        )
        .await
        .unwrap();
        assert!(matches!(models::insert_definition(&pool, &f).await, Err(opencrane_db::Error::UniqueViolation { .. })));
        let defs = models::definitions(&pool).await.unwrap();
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[0].credential_name.as_deref(), Some("openai-main"));
        let listed = models::credentials(&pool).await.unwrap();
        assert_eq!(listed.iter().find(|c| c.id == cred).map(|c| c.used_by), Some(2));
        assert!(matches!(
            models::delete_credential(&pool, cred).await,
            Err(opencrane_db::Error::ForeignKeyViolation { .. })
        ));
        assert!(models::update_definition(&pool, d1, &DefinitionFields { weight: 5, ..f.clone() }).await.unwrap());
        assert!(
            models::rotate_credential(
                &pool,
                cred,
                &KeySource::Sealed(&Sealed { nonce: vec![9; 12], ciphertext: vec![4], key_version: 1 }, "zz99")
            )
            .await
            .unwrap()
        );
        assert_eq!(models::credential_secret(&pool, cred).await.unwrap().unwrap().ciphertext, [4]);

        let mut conn = pool.acquire().await.unwrap();
        models::set_fallbacks(&mut conn, "fast", &["cheap".into()]).await.unwrap();
        models::set_fallbacks(&mut conn, "fast", &["smart".into(), "cheap".into()]).await.unwrap();
        assert_eq!(models::fallbacks(&pool).await.unwrap(), [("fast".into(), vec!["smart".into(), "cheap".into()])]);
        let mut tx = pool.begin().await.unwrap();
        assert!(models::set_fallbacks(&mut tx, "fast", &["fast".into()]).await.is_err(), "no self-fallback");
        drop(tx);
        assert_eq!(models::fallbacks(&pool).await.unwrap().len(), 1, "a refused chain changes nothing");
        models::set_fallbacks(&mut conn, "fast", &[]).await.unwrap();
        assert!(models::fallbacks(&pool).await.unwrap().is_empty());

        let g = groups::insert(&pool, "eng", "team", "", "local").await.unwrap();
        let silo = models::put_default(&mut conn, "silo", None, None, "fast").await.unwrap();
        assert_eq!(models::put_default(&mut conn, "silo", None, None, "smart").await.unwrap(), silo);
        models::put_default(&mut conn, "group", Some(g), None, "fast").await.unwrap();
        models::put_default(&mut conn, "user", None, Some("ana"), "fast").await.unwrap();
        let defaults = models::defaults(&pool).await.unwrap();
        assert_eq!(defaults.iter().map(|d| d.scope.as_str()).collect::<Vec<_>>(), ["silo", "group", "user"]);
        assert_eq!(defaults[0].model, "smart");
        assert!(models::delete_default(&pool, silo).await.unwrap());
        for d in models::definitions(&pool).await.unwrap() {
            assert!(models::delete_definition(&pool, d.id).await.unwrap());
        }
        assert!(models::delete_credential(&pool, cred).await.unwrap());
    }

    #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
    async fn key_records_follow_their_user_and_passes_are_recorded(pool: PgPool) {
        seed_users(&pool).await;
        let sealed = Sealed { nonce: vec![0; 12], ciphertext: vec![7], key_version: 1 };
        litellm::insert_key(&pool, "ana", "opencrane-ana", "tok-1", &sealed).await.unwrap();
        let at = Utc::now();
        litellm::record_pass(
            &pool,
            "ana",
            &json!({"models": ["fast"]}),
            1_500_000,
            Some(at),
            1_000_000,
            Some("models differed"),
        )
        .await
        .unwrap();
        let k = &litellm::keys(&pool, None).await.unwrap()[0];
        assert_eq!(
            (k.observed_spend, k.spend_before_period, k.drift.as_deref()),
            (1_500_000, 1_000_000, Some("models differed"))
        );
        litellm::insert_key(&pool, "ana", "opencrane-ana", "tok-2", &sealed).await.unwrap();
        let k = &litellm::keys(&pool, None).await.unwrap()[0];
        assert_eq!((k.token_id.as_str(), k.period_start), ("tok-2", None), "a regenerated key starts afresh");
        assert_eq!(litellm::keys(&pool, Some(&["ana".to_owned()])).await.unwrap().len(), 1);
        assert!(litellm::keys(&pool, Some(&["bob".to_owned()])).await.unwrap().is_empty());
        assert_eq!(litellm::key_secret(&pool, "ana").await.unwrap().unwrap().ciphertext, [7]);
        tenants::delete(&pool, "ana").await.unwrap();
        assert!(litellm::keys(&pool, None).await.unwrap().is_empty());
        assert!(!litellm::delete_key(&pool, "ana").await.unwrap());

        assert!(!litellm::sync_state(&pool).await.unwrap().ok);
        litellm::record_sync(&pool, true, "2 keys in step", 1).await.unwrap();
        let s = litellm::sync_state(&pool).await.unwrap();
        assert!(s.ok && s.finished_at.is_some() && s.repaired == 1);
    }
}

mod data_generation {
    //! Which of the silo's tables the data generation follows (the kept list answers rely on it;
    //! what it is and when it changes: `opencrane-common-db`'s tests).

    use sqlx::PgPool;

    async fn now(pool: &PgPool) -> uuid::Uuid {
        sqlx::query_scalar("SELECT generation FROM data_generation").fetch_one(pool).await.unwrap()
    }

    /// Every committed write to a table the kept lists read changes the generation (insert,
    /// update, delete, truncate, whoever writes it); reads, updates that change nothing, writes
    /// elsewhere and rolled-back writes do not.
    #[sqlx::test(migrator = "opencrane_db::SILO_MIGRATOR")]
    async fn every_committed_write_to_a_listed_table_changes_the_generation(pool: PgPool) {
        let writes = [
            "INSERT INTO tenants (name, display_name, email, subject) VALUES ('ana', 'Ana', 'ana@acme.test', 's-ana')",
            "UPDATE tenants SET display_name = 'Ana B' WHERE name = 'ana'",
            "INSERT INTO groups (name, scope) VALUES ('eng', 'team')",
            "INSERT INTO group_members (group_id, tenant) SELECT id, 'ana' FROM groups",
            "INSERT INTO access_policies (name) VALUES ('strict')",
            "UPDATE tenants SET policy_ref = 'strict'",
            "INSERT INTO budgets (level, tenant, currency, amount, period) VALUES ('user', 'ana', 'USD', 5, 'month')",
            "INSERT INTO litellm_keys (tenant, key_alias, token_id, nonce, ciphertext, applied)
             VALUES ('ana', 'acme-ana', 'tok-1', '\\x00', '\\x00', '{}')",
            "UPDATE litellm_keys SET synced_at = now()",
            "TRUNCATE group_members",
            "DELETE FROM budgets",
            "DELETE FROM tenants",
        ];
        let mut seen = vec![now(&pool).await];
        for write in writes {
            sqlx::query(write).execute(&pool).await.unwrap_or_else(|e| panic!("{write}: {e}"));
            let after = now(&pool).await;
            assert!(!seen.contains(&after), "{write} left the generation as it was (or repeated one)");
            seen.push(after);
        }
        let last = now(&pool).await;
        sqlx::query("SELECT count(*) FROM tenants, groups").execute(&pool).await.unwrap();
        sqlx::query("UPDATE groups SET name = name").execute(&pool).await.unwrap();
        sqlx::query("INSERT INTO audit_log (actor, action, target, outcome) VALUES ('ana', 'x', 'y', 'success')")
            .execute(&pool)
            .await
            .unwrap();
        assert_eq!(now(&pool).await, last, "reads, updates that change nothing and writes elsewhere keep it");

        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO groups (name, scope) VALUES ('ops', 'team')").execute(&mut *tx).await.unwrap();
        tx.rollback().await.unwrap();
        assert_eq!(now(&pool).await, last, "a rolled-back write keeps the generation");
    }
}
