//! What a manager gives back once its requests stop: the database connections a burst opened
//! beyond one, its kept answers (`app::service::kept`), and the memory glibc's allocator keeps
//! after the burst freed it.
//!
//! Without this a silo manager that idled at 9 MiB stayed at 16 MiB after a minute of load, for
//! good: its pool kept the ten connections the load opened (sqlx reuses idle connections first in,
//! first out, so a readiness probe every few seconds keeps every one of them young), and glibc
//! returns freed memory to the system only from the top of each arena.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use axum::{Router, extract::Request, middleware};
use opencrane_db::PgPool;

/// How often [`give_back_when_quiet`] looks: memory and connections come back one to two periods
/// after the last request.
pub const PERIOD: Duration = Duration::from_secs(2);

/// Counts the requests a router serves, probes (`/healthz`, `/readyz`) aside: they come every few
/// seconds, need one connection and free nothing worth handing back.
#[derive(Clone, Debug, Default)]
pub struct Activity(Arc<AtomicU64>);

impl Activity {
    /// Requests counted so far.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts one request (for callers outside the router, such as tests).
    pub fn record(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// `router` with every request but the probes counted here.
    pub fn count_requests(&self, router: Router) -> Router {
        let activity = self.clone();
        router.layer(middleware::map_request(move |req: Request| {
            if !matches!(req.uri().path(), "/healthz" | "/readyz") {
                activity.record();
            }
            std::future::ready(req)
        }))
    }
}

/// Every `period`, once a period has passed without a request after some were served: closes the
/// pool's idle connections but one, calls `forget` (the manager drops its kept answers: a burst
/// of distinct requests would otherwise hold its last answers until the next write), and asks
/// the allocator to return its free pages. Ends when the pool is closed.
pub async fn give_back_when_quiet(pool: PgPool, activity: Activity, period: Duration, forget: impl Fn()) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen = activity.count();
    let mut served_since = false;
    while !pool.is_closed() {
        tick.tick().await;
        let now = activity.count();
        if now != seen {
            (seen, served_since) = (now, true);
        } else if served_since {
            served_since = false;
            let closed = opencrane_db::close_idle(&pool, 1).await;
            forget();
            let trimmed = tokio::task::spawn_blocking(trim_allocator).await.unwrap_or(false);
            tracing::debug!(closed, trimmed, "quiet: idle connections closed, free memory returned");
        }
    }
}

/// Asks glibc to return the free pages of every arena (`malloc_trim(0)`); answers whether any
/// came back. It walks and locks each arena in turn, so it runs only when requests have stopped,
/// on a blocking thread.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(unsafe_code, reason = "a call into glibc, the process's allocator")]
pub fn trim_allocator() -> bool {
    // SAFETY: `malloc_trim` takes no pointer and is thread-safe (it takes each arena's lock).
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Other C libraries (musl) have no such call; their allocators return memory themselves.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim_allocator() -> bool {
    false
}
