//! The cases, written once against [`Store`] and [`Handle`]: what every
//! fence must do, whatever holds the data. Each case takes a fresh store
//! in a [`Case`] (its resources prefixed with a name unique to it, so
//! nothing is written under them yet) and names resources and locks freely.

use leasehold_core::limits::NAME_BYTES_MAX;
use leasehold_fence::{Rejection, StaleToken};
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A fenced store under test, fresh for one case.
pub trait Store: Send + Sync + 'static {
    /// A connection onto the store.
    type Handle: Handle;

    /// Opens another connection onto the same store (one per writer task).
    fn handle(&self) -> impl Future<Output = Self::Handle> + Send;
}

/// One fenced write: set `resource` to `value` if `token` is at least the
/// highest accepted for (`resource`, `lock`), as one atomic step.
pub struct Write<'a> {
    pub resource: &'a str,
    pub lock: &'a str,
    pub token: u64,
    pub value: &'a str,
}

/// One connection to a fenced store, as an adapter provides it. Resources
/// hold one text value; failures other than a stale token fail the test
/// inside the adapter. The suite reaches it through [`Scoped`].
pub trait Handle: Send + 'static {
    /// Makes `write`; a refusal is the only error.
    fn put(&mut self, write: Write<'_>) -> impl Future<Output = Result<(), StaleToken>> + Send;

    /// The value of `resource`, `None` if nothing was ever written.
    fn value(&mut self, resource: &str) -> impl Future<Output = Option<String>> + Send;

    /// The highest token accepted for (`resource`, `lock`).
    fn highest(&mut self, resource: &str, lock: &str) -> impl Future<Output = Option<u64>> + Send;

    /// The recorded refusals, at least those of writes to `resource` (the
    /// suite picks those out), in any order.
    fn rejections(&mut self, resource: &str) -> impl Future<Output = Vec<Rejection>> + Send;
}

/// A fresh store and a name prefix unique to the case: the case's
/// resources are named under it, so cases share a server (and every run
/// of them one database) without meeting.
pub struct Case<S> {
    store: S,
    prefix: String,
}

impl<S: Store> Case<S> {
    /// The case's view of `store`.
    pub fn new(store: S) -> Case<S> {
        Case {
            store,
            prefix: leasehold_testkit::unique("case"),
        }
    }

    /// Opens a handle onto the store, under the case's prefix.
    async fn open(&self) -> Scoped<S::Handle> {
        Scoped {
            handle: self.store.handle().await,
            prefix: self.prefix.clone(),
        }
    }
}

/// A handle seen through the case's prefix: the suite names resources
/// freely, the adapter sees them prefixed.
pub struct Scoped<H> {
    handle: H,
    prefix: String,
}

impl<H: Handle> Scoped<H> {
    fn name(&self, resource: &str) -> String {
        format!("{}_{resource}", self.prefix)
    }

    async fn write(
        &mut self,
        resource: &str,
        lock: &str,
        token: u64,
        value: &str,
    ) -> Result<(), StaleToken> {
        let resource = &self.name(resource);
        let write = Write {
            resource,
            lock,
            token,
            value,
        };
        self.handle.put(write).await
    }

    async fn value(&mut self, resource: &str) -> Option<String> {
        self.handle.value(&self.name(resource)).await
    }

    async fn highest(&mut self, resource: &str, lock: &str) -> Option<u64> {
        self.handle.highest(&self.name(resource), lock).await
    }
}

/// `(lock, presented, highest)` of each refusal of a write to `resource`, sorted.
async fn refusals(fence: &mut Scoped<impl Handle>, resource: &str) -> Vec<(String, u64, u64)> {
    let name = fence.name(resource);
    let mut all: Vec<_> = (fence.handle.rejections(&name).await.into_iter())
        .filter(|r| r.resource == name)
        .map(|r| (r.lock, r.presented, r.highest))
        .collect();
    all.sort();
    all
}

/// The first write to a (resource, lock) is accepted whatever its token.
pub async fn first_write_is_accepted(case: Case<impl Store>) {
    let mut fence = case.open().await;
    assert_eq!(fence.highest("r", "l").await, None);
    assert_eq!(fence.value("r").await, None);
    fence.write("r", "l", 7, "seven").await.unwrap();
    assert_eq!(fence.value("r").await.as_deref(), Some("seven"));
    assert_eq!(fence.highest("r", "l").await, Some(7));
    assert_eq!(refusals(&mut fence, "r").await, []);
}

/// Higher tokens are accepted, and so is an equal one (the same holder
/// writing again); each write lands.
pub async fn higher_and_equal_tokens_are_accepted(case: Case<impl Store>) {
    let mut fence = case.open().await;
    fence.write("r", "l", 5, "five").await.unwrap();
    fence.write("r", "l", 5, "five again").await.unwrap();
    assert_eq!(fence.value("r").await.as_deref(), Some("five again"));
    fence.write("r", "l", 9, "nine").await.unwrap();
    assert_eq!(fence.value("r").await.as_deref(), Some("nine"));
    assert_eq!(fence.highest("r", "l").await, Some(9));
}

/// A lower token is refused naming the presented and the highest token,
/// changes nothing, and is recorded; the highest holder still writes.
pub async fn a_lower_token_is_refused_and_changes_nothing(case: Case<impl Store>) {
    let mut fence = case.open().await;
    fence.write("r", "l", 5, "five").await.unwrap();
    let stale = fence.write("r", "l", 4, "four").await.unwrap_err();
    assert_eq!(
        (stale.lock.as_str(), stale.presented, stale.highest),
        ("l", 4, 5)
    );
    assert_eq!(fence.value("r").await.as_deref(), Some("five"));
    assert_eq!(fence.highest("r", "l").await, Some(5));
    assert_eq!(refusals(&mut fence, "r").await, [("l".to_owned(), 4, 5)]);
    fence.write("r", "l", 5, "five again").await.unwrap();
    assert_eq!(fence.value("r").await.as_deref(), Some("five again"));
}

/// Each (resource, lock) has its own highest token: another lock on the
/// same resource, or the same lock on another resource, starts fresh.
pub async fn resources_and_locks_are_fenced_independently(case: Case<impl Store>) {
    let mut fence = case.open().await;
    fence.write("r1", "l", 10, "r1 by l").await.unwrap();
    fence.write("r2", "l", 1, "r2 by l").await.unwrap();
    fence.write("r1", "m", 1, "r1 by m").await.unwrap();
    let stale = fence.write("r1", "l", 9, "stale").await.unwrap_err();
    assert_eq!((stale.presented, stale.highest), (9, 10));
    assert_eq!(fence.highest("r1", "l").await, Some(10));
    assert_eq!(fence.highest("r2", "l").await, Some(1));
    assert_eq!(fence.highest("r1", "m").await, Some(1));
    assert_eq!(fence.highest("r2", "m").await, None);
    assert_eq!(fence.value("r1").await.as_deref(), Some("r1 by m"));
    assert_eq!(fence.value("r2").await.as_deref(), Some("r2 by l"));
    assert_eq!(refusals(&mut fence, "r2").await, []);
}

/// Every refusal is recorded, under its own resource, with its lock and
/// both tokens; another connection reads the same record.
pub async fn every_refusal_is_recorded(case: Case<impl Store>) {
    let mut fence = case.open().await;
    fence.write("r", "a", 8, "a8").await.unwrap();
    fence.write("r", "b", 3, "b3").await.unwrap();
    fence.write("other", "a", 1, "o1").await.unwrap();
    for (lock, token) in [("a", 7), ("b", 2), ("a", 0), ("b", 1)] {
        fence.write("r", lock, token, "stale").await.unwrap_err();
    }
    fence.write("other", "a", 0, "stale").await.unwrap_err();
    let expected = [("a", 0, 8), ("a", 7, 8), ("b", 1, 3), ("b", 2, 3)]
        .map(|(lock, presented, highest)| (lock.to_owned(), presented, highest));
    assert_eq!(refusals(&mut fence, "r").await, expected);
    let mut reader = case.open().await;
    assert_eq!(
        refusals(&mut reader, "other").await,
        [("a".to_owned(), 0, 1)]
    );
    assert_eq!(reader.value("r").await.as_deref(), Some("b3"));
}

/// Any valid lock name is fenced: the longest Leasehold issues tokens for
/// ([`NAME_BYTES_MAX`] bytes), with `/`, spaces and multi-byte UTF-8.
pub async fn the_longest_lock_name_is_fenced(case: Case<impl Store>) {
    let mut name = String::from("billing/invoices 2026/");
    while name.len() + 'é'.len_utf8() <= NAME_BYTES_MAX {
        name.push('é');
    }
    name.push_str(&"x".repeat(NAME_BYTES_MAX - name.len()));
    assert_eq!(name.len(), NAME_BYTES_MAX);
    let mut fence = case.open().await;
    fence.write("r", &name, 3, "three").await.unwrap();
    let stale = fence.write("r", &name, 2, "two").await.unwrap_err();
    assert_eq!((&stale.lock, stale.presented, stale.highest), (&name, 2, 3));
    assert_eq!(fence.highest("r", &name).await, Some(3));
    assert_eq!(refusals(&mut fence, "r").await, [(name, 2, 3)]);
    assert_eq!(fence.value("r").await.as_deref(), Some("three"));
}

/// Writers on their own connections race: they take rising tokens from one
/// counter but write after a random delay, so writes arrive out of order.
const WRITERS: u64 = 6;
const WRITES_PER_WRITER: u64 = 25;

/// One write of the race: its token, the highest token already
/// acknowledged as accepted (to anyone) before it was sent, and its result.
struct Raced {
    token: u64,
    floor: u64,
    result: Result<(), StaleToken>,
}

/// Concurrent writers on one (resource, lock): once a token was accepted,
/// no lower one is accepted and refusals name a highest at least as high;
/// the resource ends with the highest accepted write, and exactly the
/// refused writes are recorded.
pub async fn concurrent_writers_apply_in_token_order(case: Case<impl Store>) {
    let case = Arc::new(case);
    let (next_token, max_acked) = (Arc::new(AtomicU64::new(1)), Arc::new(AtomicU64::new(0)));
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let (case, next_token, max_acked) = (case.clone(), next_token.clone(), max_acked.clone());
        tasks.push(tokio::spawn(async move {
            let mut fence = case.open().await;
            let mut seed = writer + 1;
            let mut raced = Vec::new();
            for _ in 0..WRITES_PER_WRITER {
                let token = next_token.fetch_add(1, Ordering::SeqCst);
                for _ in 0..lcg(&mut seed) % 8 {
                    tokio::task::yield_now().await;
                }
                let floor = max_acked.load(Ordering::SeqCst);
                let result = fence.write("r", "l", token, &token.to_string()).await;
                if result.is_ok() {
                    max_acked.fetch_max(token, Ordering::SeqCst);
                }
                raced.push(Raced {
                    token,
                    floor,
                    result,
                });
            }
            raced
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("writer task"));
    }
    let mut refused = BTreeSet::new();
    for w in &all {
        match &w.result {
            Ok(()) => assert!(w.token >= w.floor, "accepted {} after {}", w.token, w.floor),
            Err(stale) => {
                assert!(stale.presented == w.token && stale.presented < stale.highest);
                assert!(stale.highest >= w.floor, "{stale} after {}", w.floor);
                refused.insert(("l".to_owned(), stale.presented, stale.highest));
            }
        }
    }
    let top = (all.iter().filter(|w| w.result.is_ok()).map(|w| w.token)).max();
    let top = top.expect("some write was accepted");
    let mut fence = case.open().await;
    assert_eq!(fence.highest("r", "l").await, Some(top));
    let last = top.to_string();
    assert_eq!(
        fence.value("r").await,
        Some(last),
        "the highest write is last"
    );
    let recorded: BTreeSet<_> = refusals(&mut fence, "r").await.into_iter().collect();
    assert_eq!(recorded, refused);
}

/// A tiny seeded generator (LCG): how long each writer dawdles.
fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}
