//! Leader election against the fake API server (`opencrane-fake-kube`): exactly one holder, no
//! takeover before expiry, takeover after it, a concurrent race has one winner, and a leader
//! that shuts down lets its work finish, then hands the lease back at once.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::{Api, api::PostParams};
use opencrane_fake_kube::FakeApiServer;
use opencrane_provision::{kubernetes::client_for, lease::Elector};

async fn setup() -> (FakeApiServer, kube::Client) {
    let fake = FakeApiServer::start().await.unwrap();
    let client = client_for(&fake.url(), Duration::from_secs(2)).unwrap();
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": "opencrane-system"}})).unwrap();
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await.unwrap();
    (fake, client)
}

#[tokio::test]
async fn one_holder_until_the_lease_expires_then_another_takes_over() {
    let (_fake, client) = setup().await;
    let lease = Duration::from_secs(2);
    let a = Elector::new(client.clone(), "opencrane-system", "opencrane-fleet", "pod-a", lease);
    let b = Elector::new(client.clone(), "opencrane-system", "opencrane-fleet", "pod-b", lease);
    assert!(a.try_acquire_or_renew().await.unwrap());
    assert!(!b.try_acquire_or_renew().await.unwrap(), "held and fresh: no takeover");
    assert!(a.try_acquire_or_renew().await.unwrap(), "the holder renews");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert!(b.try_acquire_or_renew().await.unwrap(), "expired: taken over");
    assert!(!a.try_acquire_or_renew().await.unwrap(), "the old holder has lost it");
}

#[tokio::test]
async fn a_race_for_a_free_lease_has_one_winner() {
    let (_fake, client) = setup().await;
    let electors: Vec<Elector> = (0..5)
        .map(|i| Elector::new(client.clone(), "opencrane-system", "race", &format!("pod-{i}"), Duration::from_secs(30)))
        .collect();
    let results = futures_util::future::join_all(electors.iter().map(Elector::try_acquire_or_renew)).await;
    let winners = results.into_iter().filter(|r| matches!(r, Ok(true))).count();
    assert_eq!(winners, 1);
}

#[tokio::test]
async fn work_runs_only_while_leading() {
    let (_fake, client) = setup().await;
    let holder = Elector::new(client.clone(), "opencrane-system", "work", "pod-a", Duration::from_secs(30));
    assert!(holder.try_acquire_or_renew().await.unwrap());
    let candidate = Elector::new(client.clone(), "opencrane-system", "work", "pod-b", Duration::from_secs(30));
    let started = std::sync::atomic::AtomicBool::new(false);
    candidate
        .run_while_leader(
            |_| async { started.store(true, std::sync::atomic::Ordering::SeqCst) },
            tokio::time::sleep(Duration::from_millis(300)),
        )
        .await;
    assert!(!started.load(std::sync::atomic::Ordering::SeqCst), "a candidate that does not hold the lease never works");
}

/// Shutting down, a leader tells its work to stop and keeps the lease while the work finishes
/// (its reconciles under way), then hands the lease over at once.
#[tokio::test]
async fn a_leader_shutting_down_lets_its_work_finish_then_hands_the_lease_over_at_once() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let (_fake, client) = setup().await;
    // A long lease: without the release, the candidate would wait five minutes.
    let lease = Duration::from_secs(300);
    let leader = Elector::new(client.clone(), "opencrane-system", "handover", "pod-a", lease);
    let candidate = Elector::new(client.clone(), "opencrane-system", "handover", "pod-b", lease);
    assert!(!candidate.release().await.unwrap(), "nothing to release before anyone holds it");
    let (worked, finished, held_while_finishing) =
        (AtomicBool::new(false), AtomicBool::new(false), AtomicBool::new(false));
    leader
        .run_while_leader(
            |mut stopping| {
                let (worked, finished, held_while_finishing, candidate) =
                    (&worked, &finished, &held_while_finishing, &candidate);
                async move {
                    worked.store(true, SeqCst);
                    let _ = stopping.wait_for(|stop| *stop).await;
                    // Finishing what is under way: the lease is still this leader's.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    held_while_finishing.store(!candidate.try_acquire_or_renew().await.unwrap(), SeqCst);
                    finished.store(true, SeqCst);
                }
            },
            tokio::time::sleep(Duration::from_millis(200)),
        )
        .await;
    assert!(worked.load(SeqCst), "it led");
    assert!(finished.load(SeqCst), "its work finished before it returned");
    assert!(held_while_finishing.load(SeqCst), "the lease was kept while the work finished");
    assert!(candidate.try_acquire_or_renew().await.unwrap(), "released on shutdown: taken over at once");
    assert!(!leader.release().await.unwrap(), "a former holder releases nothing");
    assert!(!leader.try_acquire_or_renew().await.unwrap(), "and the new holder keeps it");
}
