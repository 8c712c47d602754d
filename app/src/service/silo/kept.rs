//! The REST lists' kept answers: the last answer of each list request (its JSON, as sent),
//! kept beside the silo's data generation read before the list was
//! ([`opencrane_silo_db::generation`]), and sent again while the generation is the same. The
//! generation changes in the same commit as any write to what the lists read, whoever writes it
//! (a route, a background loop, an import, `psql`), so a kept answer is never older than what a
//! fresh read would see: a request costs one statement (the generation) instead of the list's,
//! and no JSON is written. A caller's right to read is checked on every request, before
//! anything kept is looked at.
//!
//! Bounded: at most [`KEPT`] answers of at most [`LARGEST`] bytes each, for request keys of at
//! most [`LONGEST_KEY`] bytes; a larger answer or key is read afresh every time.

use std::{
    future::Future,
    sync::{Arc, Mutex, PoisonError},
};

use axum::body::Bytes;
use serde::Serialize;
use uuid::Uuid;

use super::admin_read;
use crate::{
    error::AppError,
    service::{OrFail as _, internal},
    state::{AppState, Caller},
};

/// How many answers are kept (the oldest makes room).
pub const KEPT: usize = 16;
/// The largest answer kept, in bytes.
pub const LARGEST: usize = 1 << 20;
/// The longest request key kept, in bytes.
pub const LONGEST_KEY: usize = 512;

/// One list answer: the JSON body of this window, how many it holds and how many the whole list
/// has.
#[derive(Debug)]
pub struct KeptList {
    /// The window's items as JSON.
    pub body: Bytes,
    /// How many items the window holds.
    pub shown: i64,
    /// How many the whole list holds (`X-Total-Count`).
    pub total: i64,
}

impl KeptList {
    /// `items` (a window of a list of `total`) written as JSON.
    pub fn of<T: Serialize>(caller: &Caller, items: &[T], total: i64) -> Result<Self, AppError> {
        let body = serde_json::to_vec(items).map_err(|e| internal(caller, &e))?;
        Ok(Self { body: body.into(), shown: i64::try_from(items.len()).unwrap_or(i64::MAX), total })
    }
}

#[derive(Debug)]
struct Kept {
    key: String,
    generation: Uuid,
    list: Arc<KeptList>,
}

/// The kept answers of one silo manager (in its [`crate::state::SiloSettings`]).
#[derive(Debug, Default)]
pub struct KeptLists(Mutex<Vec<Kept>>);

impl KeptLists {
    fn get(&self, key: &str, generation: Uuid) -> Option<Arc<KeptList>> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter().find(|k| k.generation == generation && k.key == key).map(|k| Arc::clone(&k.list))
    }

    fn keep(&self, key: &str, generation: Uuid, list: &Arc<KeptList>) {
        if key.len() > LONGEST_KEY || list.body.len() > LARGEST {
            return;
        }
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // An answer of another generation is never sent again: make room with those first.
        kept.retain(|k| k.generation == generation && k.key != key);
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push(Kept { key: key.to_owned(), generation, list: Arc::clone(list) });
    }

    /// How many answers are kept.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The answer to the list request `key` (its path and query, canonical) for a caller who may
/// administer the silo: the kept one while the data generation is the one it was kept under,
/// else `read`'s, kept for the next request. `read` runs only when nothing current is kept.
pub async fn list(
    state: &AppState,
    caller: &Caller,
    key: &str,
    read: impl Future<Output = Result<KeptList, AppError>>,
) -> Result<Arc<KeptList>, AppError> {
    let silo = admin_read(state, caller)?;
    let generation = opencrane_silo_db::generation::current(&state.pool).await.or_fail(caller)?;
    if let Some(generation) = generation
        && let Some(kept) = silo.kept_lists.get(key, generation)
    {
        return Ok(kept);
    }
    let list = Arc::new(read.await?);
    if let Some(generation) = generation {
        silo.kept_lists.keep(key, generation, &list);
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(n: usize) -> Arc<KeptList> {
        Arc::new(KeptList { body: Bytes::from(vec![b'x'; n]), shown: 0, total: 0 })
    }

    #[test]
    fn only_the_current_generation_is_answered_and_the_room_is_bounded() {
        let lists = KeptLists::default();
        let (old, new) = (Uuid::new_v4(), Uuid::new_v4());
        lists.keep("/groups", old, &answer(2));
        assert!(lists.get("/groups", old).is_some());
        assert!(lists.get("/groups", new).is_none(), "another generation's answer is not sent");
        assert!(lists.get("/groups?limit=1", old).is_none(), "another request's answer is not sent");

        lists.keep("/policies", new, &answer(3));
        assert_eq!(lists.len(), 1, "the older generation's answers make room");
        for i in 0..KEPT + 3 {
            lists.keep(&format!("/tenants?offset={i}"), new, &answer(1));
        }
        assert_eq!(lists.len(), KEPT);
        assert!(lists.get("/tenants?offset=0", new).is_none(), "the oldest made room");
        assert!(lists.get(&format!("/tenants?offset={}", KEPT + 2), new).is_some());

        lists.keep("/big", new, &answer(LARGEST + 1));
        assert!(lists.get("/big", new).is_none(), "an answer over the bound is not kept");
        let long = format!("/tenants?q={}", "a".repeat(LONGEST_KEY));
        lists.keep(&long, new, &answer(1));
        assert!(lists.get(&long, new).is_none(), "a key over the bound is not kept");
    }
}
