//! Routed pages, one file per view, grouped by role and area. Pages render on the server only;
//! anything interactive is an island from [`crate::islands`].
//!
//! A page's data comes from a `Suspend` placed directly in its `<Suspense>`:
//! `<Suspense …>{Suspend::new(async move { load().await … })}</Suspense>`, never
//! `{move || Suspend::new(…)}`. Leptos' server rendering walks a `<Suspense>`'s children more than
//! once before it renders them; a closure is called again at each walk and the futures it started
//! are dropped after one poll — each loader ran up to three times, and the dropped ones were
//! cancelled mid-query, so sqlx closed their connections. Pages are never re-rendered in the
//! browser, so nothing needs the closure (`pages_run_their_loaders_once_and_keep_their_connections`).

pub mod fleet;
pub mod shared;
pub mod silo;
