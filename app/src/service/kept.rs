//! Kept answers: the last answer to each of a few read requests, kept beside the role database's
//! data generation read before the answer was ([`opencrane_common_db::generation`]), and given
//! again while the generation is the same. The generation changes in the same commit as any
//! write to what the kept answers read, whoever writes it (a route, a background loop, an
//! import, `psql`), so a kept answer is never older than a fresh read would be: a request costs
//! one statement (the generation) instead of the answer's. A write committed between the two
//! reads makes the next request read afresh.
//!
//! Used for the silo's REST lists ([`super::silo::kept`]) and the fleet's customers pages. The
//! caller's right to the answer is checked before [`answer`] is called, on every request.
//!
//! Bounded: at most [`KEPT`] answers of at most [`LARGEST`] bytes each (as the user of the cache
//! weighs them), for request keys of at most [`LONGEST_KEY`] bytes; a larger answer or key is
//! read afresh every time.
//!
//! [`KeptHtml`] keeps a page part's rendered HTML beside what it was rendered from, for parts
//! that cost more to render than to compare (the customers list's rows).

use std::{
    future::Future,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use opencrane_db::PgPool;
use uuid::Uuid;

use crate::{error::AppError, service::OrFail as _, state::Caller};

/// How many answers are kept (the oldest makes room).
pub const KEPT: usize = 16;
/// The largest answer kept, in bytes.
pub const LARGEST: usize = 1 << 20;
/// The longest request key kept, in bytes.
pub const LONGEST_KEY: usize = 512;

/// A bounded room of kept things, oldest first: [`Kept`] answers or [`KeptHtml`] parts.
#[derive(Debug)]
pub struct Room<E> {
    entries: Mutex<Vec<E>>,
    /// Keep nothing: every answer is read afresh and every part rendered (`--kept-answers false`).
    off: bool,
}

impl<E> Default for Room<E> {
    fn default() -> Self {
        Self { entries: Mutex::new(Vec::new()), off: false }
    }
}

impl<E> Room<E> {
    /// Keeps nothing: every answer is read afresh (no generation is read for it), every part
    /// rendered.
    pub fn off() -> Self {
        Self { off: true, ..Self::default() }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<E>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `entry` beside those kept that `stays(kept, entry)` lets stay; the oldest makes room
    /// beyond [`KEPT`].
    fn put(&self, entry: E, stays: impl Fn(&E, &E) -> bool) {
        let mut kept = self.lock();
        kept.retain(|k| stays(k, &entry));
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push(entry);
    }

    /// Drops everything kept (and the room it took).
    pub fn forget(&self) {
        *self.lock() = Vec::new();
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One kept answer: the request's key, the generation it was read under, the answer.
#[derive(Debug)]
pub struct Entry<V> {
    key: String,
    generation: Uuid,
    value: Arc<V>,
}

/// One role's kept answers of one kind (in its settings, see [`crate::state`]).
pub type Kept<V> = Room<Entry<V>>;

impl<V> Kept<V> {
    fn get(&self, key: &str, generation: Uuid) -> Option<Arc<V>> {
        self.lock().iter().find(|k| k.generation == generation && k.key == key).map(|k| Arc::clone(&k.value))
    }

    fn keep(&self, key: &str, generation: Uuid, value: &Arc<V>, bytes: usize) {
        if key.len() > LONGEST_KEY || bytes > LARGEST {
            return;
        }
        // An answer of another generation is never given again: those make room first.
        let entry = Entry { key: key.to_owned(), generation, value: Arc::clone(value) };
        self.put(entry, |kept, new| kept.generation == new.generation && kept.key != new.key);
    }
}

/// Rendered HTML kept beside the input it was rendered from (compared whole, ages and all), and
/// given again for an equal input: what it gives is what rendering that input gives, so no data
/// generation is needed. Bounded like [`Kept`]: [`KEPT`] parts of at most [`LARGEST`] bytes.
pub type KeptHtml<K> = Room<(K, Arc<str>)>;

impl<K: PartialEq> KeptHtml<K> {
    /// The HTML `render` gives for `input`: the kept one when an equal input is among the last
    /// rendered (then `render` does not run), else `render`'s, kept for the next equal input.
    pub fn html(&self, input: K, render: impl FnOnce(&K) -> String) -> Arc<str> {
        if self.off {
            return render(&input).into();
        }
        if let Some((_, html)) = self.lock().iter().find(|(kept, _)| *kept == input) {
            return Arc::clone(html);
        }
        let html: Arc<str> = render(&input).into();
        if html.len() <= LARGEST {
            // One rendered meanwhile for an equal input makes room.
            self.put((input, Arc::clone(&html)), |(kept, _), (new, _)| kept != new);
        }
        html
    }
}

/// The answer to the request `key` (canonical: equal requests, equal keys): the one `kept` holds
/// while the data generation of `pool` is the one it was kept under, else `read`'s, kept for the
/// next request if `weigh` finds it small enough. `read` runs only when nothing current is kept.
/// Check the caller's right to the answer first.
pub async fn answer<V>(
    pool: &PgPool,
    caller: &Caller,
    kept: &Kept<V>,
    key: &str,
    weigh: impl FnOnce(&V) -> usize,
    read: impl Future<Output = Result<V, AppError>>,
) -> Result<Arc<V>, AppError> {
    if kept.off {
        return Ok(Arc::new(read.await?));
    }
    let generation = opencrane_common_db::generation::current(pool).await.or_fail(caller)?;
    if let Some(generation) = generation
        && let Some(value) = kept.get(key, generation)
    {
        return Ok(value);
    }
    let value = Arc::new(read.await?);
    if let Some(generation) = generation {
        kept.keep(key, generation, &value, weigh(&value));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Switched off, every request reads afresh (and the database is never asked for the
    /// generation: this pool connects nowhere).
    #[tokio::test]
    async fn switched_off_every_answer_is_read_afresh() {
        let pool = PgPool::connect_lazy("postgres://nobody@127.0.0.1:1/none").unwrap();
        let caller = Caller { principal: None, request_id: "r1".into(), session_id: None };
        let kept = Kept::<u32>::off();
        let reads = std::sync::atomic::AtomicU32::new(0);
        for _ in 0..3 {
            let read = async { Ok(reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) };
            answer(&pool, &caller, &kept, "/groups", |_| 1, read).await.unwrap();
        }
        assert_eq!((reads.into_inner(), kept.len()), (3, 0));
    }

    /// A kept part is given for an equal input only (a row or an age apart renders again), the
    /// room is bounded, and switched off every part is rendered.
    #[test]
    fn kept_html_is_given_for_an_equal_input_only() {
        let kept = KeptHtml::<(Vec<&str>, Vec<(i64, char)>)>::default();
        let renders = std::cell::Cell::new(0);
        let render = |input: &(Vec<&str>, Vec<(i64, char)>)| {
            renders.set(renders.get() + 1);
            format!("<tr>{}</tr>{:?}", input.0.join("</tr><tr>"), input.1)
        };
        let first = kept.html((vec!["a", "b"], vec![(2, 'h'), (3, 'd')]), render);
        let again = kept.html((vec!["a", "b"], vec![(2, 'h'), (3, 'd')]), render);
        assert_eq!((first.as_ref(), renders.get()), (again.as_ref(), 1), "an equal input: kept");
        let older = kept.html((vec!["a", "b"], vec![(3, 'h'), (3, 'd')]), render);
        assert!(older.contains("(3, 'h')") && renders.get() == 2, "an age apart renders again: {older}");
        let renamed = kept.html((vec!["a", "c"], vec![(3, 'h'), (3, 'd')]), render);
        assert!(renamed.contains("<tr>c</tr>") && renders.get() == 3, "a row apart renders again: {renamed}");
        assert_eq!(kept.len(), 3);
        for i in 0..KEPT as i64 + 2 {
            kept.html((vec!["x"], vec![(i, 's')]), render);
        }
        assert_eq!(kept.len(), KEPT, "bounded");
        kept.forget();
        assert!(kept.is_empty());

        let off = KeptHtml::<(Vec<&str>, Vec<(i64, char)>)>::off();
        let before = renders.get();
        for _ in 0..3 {
            off.html((vec!["a"], vec![(1, 's')]), render);
        }
        assert_eq!((renders.get() - before, off.len()), (3, 0), "switched off, every part is rendered");
    }

    #[test]
    fn only_the_current_generation_is_answered_and_the_room_is_bounded() {
        let kept = Kept::<u8>::default();
        let (old, new) = (Uuid::new_v4(), Uuid::new_v4());
        kept.keep("/groups", old, &Arc::new(1), 1);
        assert_eq!(kept.get("/groups", old).as_deref(), Some(&1));
        assert!(kept.get("/groups", new).is_none(), "another generation's answer is not given");
        assert!(kept.get("/groups?limit=1", old).is_none(), "another request's answer is not given");

        kept.keep("/policies", new, &Arc::new(2), 1);
        assert_eq!(kept.len(), 1, "the older generation's answers make room");
        for i in 0..KEPT + 3 {
            kept.keep(&format!("/tenants?offset={i}"), new, &Arc::new(3), 1);
        }
        assert_eq!(kept.len(), KEPT);
        assert!(kept.get("/tenants?offset=0", new).is_none(), "the oldest made room");
        assert!(kept.get(&format!("/tenants?offset={}", KEPT + 2), new).is_some());
        kept.keep("/tenants?offset=18", new, &Arc::new(4), 1);
        assert_eq!(
            kept.get("/tenants?offset=18", new).as_deref(),
            Some(&4),
            "a request's newer answer replaces its older"
        );
        assert_eq!(kept.len(), KEPT);

        kept.forget();
        assert!(kept.is_empty() && kept.get("/tenants?offset=18", new).is_none(), "forgotten");

        kept.keep("/big", new, &Arc::new(5), LARGEST + 1);
        assert!(kept.get("/big", new).is_none(), "an answer over the bound is not kept");
        let long = format!("/tenants?q={}", "a".repeat(LONGEST_KEY));
        kept.keep(&long, new, &Arc::new(6), 1);
        assert!(kept.get(&long, new).is_none(), "a key over the bound is not kept");
    }
}
