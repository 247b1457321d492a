//! The Redis adapter against a real redis-server, found as
//! `leasehold_testkit::redis` says (`LEASEHOLD_TEST_REDIS`, which `.ci/run`
//! sets; required under `CI=true`; elsewhere 127.0.0.1:6379 if it answers,
//! else the tests say so loudly and return). What every adapter must do
//! is in the conformance suite (`tests/conformance`); these are the Redis
//! specifics.
//!
//! Every test uses its own key names (`leasehold_testkit::unique`) so
//! tests may run in parallel against one shared server.

use leasehold_core::limits::NAME_BYTES_MAX;
use leasehold_fence::redis::resp::{Connection, Reply};
use leasehold_fence::redis::{FenceError, RedisFence, SCRIPT, TOKEN_MAX};
use leasehold_testkit::redis::addr as server;
use leasehold_testkit::unique;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

async fn get(conn: &mut Connection, key: &str) -> Option<String> {
    match conn.command(&[b"GET", key.as_bytes()]).await.unwrap() {
        Reply::Bulk(None) => None,
        reply => Some(reply.as_text().expect("text value").to_owned()),
    }
}

async fn hgetall(conn: &mut Connection, key: &str) -> BTreeMap<String, String> {
    let Reply::Array(Some(items)) = conn.command(&[b"HGETALL", key.as_bytes()]).await.unwrap()
    else {
        panic!("HGETALL: not an array");
    };
    let text: Vec<String> = items
        .iter()
        .map(|r| r.as_text().unwrap().to_owned())
        .collect();
    text.chunks(2)
        .map(|kv| (kv[0].clone(), kv[1].clone()))
        .collect()
}

fn stale(result: Result<(), FenceError>) -> (u64, u64) {
    match result {
        Err(FenceError::Stale(s)) => (s.presented, s.highest),
        other => panic!("expected a stale-token refusal, got {other:?}"),
    }
}

/// A tiny seeded generator: how long each writer dawdles between taking a
/// token and writing with it, so writes arrive out of token order.
fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

const WRITERS: u64 = 8;
const WRITES_PER_WRITER: u64 = 40;

/// One write of the race: its token and unique value, the highest token
/// already acknowledged as accepted (to anyone) before it was sent, and
/// its result.
struct Write {
    token: u64,
    value: String,
    floor: u64,
    result: Result<(), FenceError>,
}

/// Writers take tokens in order from one counter, dawdle a random number
/// of scheduler turns, then write `SET key "<token> <writer>-<seq>"`.
async fn race(addr: &str, key: &str, lock: &str) -> Vec<Write> {
    let next_token = Arc::new(AtomicU64::new(1));
    let max_acked = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let (addr, key, lock) = (addr.to_owned(), key.to_owned(), lock.to_owned());
        let (next_token, max_acked) = (next_token.clone(), max_acked.clone());
        tasks.push(tokio::spawn(async move {
            let mut fence = RedisFence::connect(&addr).await.unwrap();
            let mut seed = writer + 1;
            let mut results = Vec::new();
            for seq in 0..WRITES_PER_WRITER {
                let token = next_token.fetch_add(1, Ordering::SeqCst);
                for _ in 0..lcg(&mut seed) % 8 {
                    tokio::task::yield_now().await;
                }
                let value = format!("{token} {writer}-{seq}");
                let floor = max_acked.load(Ordering::SeqCst);
                let result = fence.set(&key, &lock, token, &value).await;
                if result.is_ok() {
                    max_acked.fetch_max(token, Ordering::SeqCst);
                }
                results.push(Write {
                    token,
                    value,
                    floor,
                    result,
                });
            }
            results
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t10_concurrent_writers_never_move_the_token_backwards() {
    let Some(addr) = server().await else { return };
    let (key, lock) = (unique("race"), "race-lock");

    // A watcher reads the key over and over while the writers race: the
    // tokens it sees, in the server's order, must never decrease.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (addr, key, done) = (addr.clone(), key.clone(), done.clone());
        tokio::spawn(async move {
            let mut conn = Connection::connect(&addr).await.unwrap();
            let mut seen = Vec::new();
            while !done.load(Ordering::SeqCst) {
                if let Some(v) = get(&mut conn, &key).await {
                    seen.push(v);
                }
            }
            seen
        })
    };
    let results = race(&addr, &key, lock).await;
    done.store(true, Ordering::SeqCst);
    let seen = watcher.await.unwrap();

    // In real time: once token f was acknowledged, a write sent afterwards
    // is accepted only with a token >= f, and refused only by a highest
    // >= f. This catches any backwards step, not just the sampled ones.
    for w in &results {
        match &w.result {
            Ok(()) => assert!(w.token >= w.floor, "accepted {} after {}", w.token, w.floor),
            Err(FenceError::Stale(s)) => assert!(s.highest >= w.floor && s.presented < s.highest),
            Err(e) => panic!("write failed: {e}"),
        }
    }
    let accepted: BTreeSet<&str> = results
        .iter()
        .filter(|w| w.result.is_ok())
        .map(|w| w.value.as_str())
        .collect();
    let refused: Vec<(u64, u64)> = results
        .iter()
        .filter_map(|w| match &w.result {
            Err(FenceError::Stale(s)) => Some((s.presented, s.highest)),
            _ => None,
        })
        .collect();
    let token_of = |v: &str| v.split(' ').next().unwrap().parse::<u64>().unwrap();
    let seen_tokens: Vec<u64> = seen.iter().map(|v| token_of(v)).collect();
    assert!(
        seen_tokens.windows(2).all(|w| w[0] <= w[1]),
        "the value's token went backwards: {seen_tokens:?}"
    );
    // Stale writers changed nothing: every value ever visible was accepted.
    for v in &seen {
        assert!(
            accepted.contains(v.as_str()),
            "refused write {v:?} was visible"
        );
    }

    let mut fence = RedisFence::connect(&addr).await.unwrap();
    let max_accepted = accepted.iter().map(|v| token_of(v)).max().unwrap();
    assert_eq!(fence.highest(&key, lock).await.unwrap(), Some(max_accepted));
    let mut conn = Connection::connect(&addr).await.unwrap();
    let last = get(&mut conn, &key).await.unwrap();
    assert_eq!(
        token_of(&last),
        max_accepted,
        "the final value is the highest write"
    );

    // One more write, certainly stale, so the log is never trivially empty.
    stale(fence.set(&key, lock, 0, "0 late").await);
    assert_eq!(get(&mut conn, &key).await.unwrap(), last);

    // Every refusal is in the server's log with presented and highest.
    let logged = fence.rejections(&key, 10_000).await.unwrap();
    let mut expected: Vec<(u64, u64)> = refused.clone();
    expected.push((0, max_accepted));
    let mut got: Vec<(u64, u64)> = logged.iter().map(|r| (r.presented, r.highest)).collect();
    expected.sort();
    got.sort();
    assert_eq!(got, expected);
    assert!(logged.iter().all(|r| r.lock == lock && r.resource == key));
    assert_eq!(logged[0].presented, 0, "newest first");
    assert!(
        logged[0].at_unix_ms > 1_600_000_000_000,
        "server time in ms"
    );
    eprintln!(
        "{} writes: {} accepted, {} refused during the race",
        results.len(),
        accepted.len(),
        refused.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t11_concurrent_hset_keeps_exactly_the_accepted_fields() {
    let Some(addr) = server().await else { return };
    let (key, lock) = (unique("hrace"), "hrace-lock");
    let next_token = Arc::new(AtomicU64::new(1));
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let (addr, key, next_token) = (addr.clone(), key.clone(), next_token.clone());
        tasks.push(tokio::spawn(async move {
            let mut fence = RedisFence::connect(&addr).await.unwrap();
            let mut seed = writer + 100;
            let mut accepted = Vec::new();
            for seq in 0..WRITES_PER_WRITER {
                let token = next_token.fetch_add(1, Ordering::SeqCst);
                for _ in 0..lcg(&mut seed) % 8 {
                    tokio::task::yield_now().await;
                }
                let field = format!("{writer}-{seq}");
                match fence
                    .hset(&key, lock, token, &field, token.to_string())
                    .await
                {
                    Ok(()) => accepted.push((field, token.to_string())),
                    Err(FenceError::Stale(_)) => {}
                    Err(e) => panic!("hset failed: {e}"),
                }
            }
            accepted
        }));
    }
    let mut accepted = BTreeMap::new();
    for task in tasks {
        accepted.extend(task.await.unwrap());
    }
    let mut conn = Connection::connect(&addr).await.unwrap();
    // Exactly the accepted writes landed: no refused field exists.
    assert_eq!(hgetall(&mut conn, &key).await, accepted);
}

#[tokio::test]
async fn t20_set_hset_and_del_are_each_fenced() {
    let Some(addr) = server().await else { return };
    let mut fence = RedisFence::connect(&addr).await.unwrap();
    let mut conn = Connection::connect(&addr).await.unwrap();
    let (s, h, lock) = (unique("set"), unique("hset"), "l");

    // SET: higher and equal accepted, lower refused and changes nothing.
    fence.set(&s, lock, 5, "five").await.unwrap();
    fence.set(&s, lock, 5, "five again").await.unwrap();
    assert_eq!(stale(fence.set(&s, lock, 4, "four").await), (4, 5));
    assert_eq!(get(&mut conn, &s).await.as_deref(), Some("five again"));
    fence.set(&s, lock, 9, "nine").await.unwrap();
    assert_eq!(get(&mut conn, &s).await.as_deref(), Some("nine"));

    // Fences are per lock: another lock on the same key starts fresh.
    fence.set(&s, "other", 1, "other lock").await.unwrap();

    // HSET.
    fence.hset(&h, lock, 3, "a", "1").await.unwrap();
    assert_eq!(stale(fence.hset(&h, lock, 2, "b", "2").await), (2, 3));
    let fields = hgetall(&mut conn, &h).await;
    assert_eq!(fields, BTreeMap::from([("a".to_owned(), "1".to_owned())]));

    // DEL: a stale delete deletes nothing; a current one deletes, and the
    // fence survives the data, so an older holder still can't recreate it.
    assert_eq!(stale(fence.del(&s, lock, 8).await), (8, 9));
    assert_eq!(get(&mut conn, &s).await.as_deref(), Some("other lock"));
    fence.del(&s, lock, 9).await.unwrap();
    assert_eq!(get(&mut conn, &s).await, None);
    assert_eq!(stale(fence.set(&s, lock, 7, "zombie").await), (7, 9));
    assert_eq!(get(&mut conn, &s).await, None);

    // Every refusal is logged in Redis and in the in-process audit.
    let logged: Vec<(u64, u64)> = fence
        .rejections(&s, 10)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.presented, r.highest))
        .collect();
    assert_eq!(logged, [(7, 9), (8, 9), (4, 5)], "newest first");
    assert_eq!(fence.rejections(&s, 1).await.unwrap().len(), 1);
    let audited: Vec<(String, u64)> = fence
        .audit()
        .recent()
        .into_iter()
        .map(|r| (r.resource, r.presented))
        .collect();
    assert_eq!(
        audited,
        [
            (s.clone(), 4),
            (h.clone(), 2),
            (s.clone(), 8),
            (s.clone(), 7)
        ]
    );
}

#[tokio::test]
async fn t30_tokens_above_2_pow_53_are_refused() {
    let Some(addr) = server().await else { return };
    let mut fence = RedisFence::connect(&addr).await.unwrap();
    let mut conn = Connection::connect(&addr).await.unwrap();
    let key = unique("big");

    fence.set(&key, "l", TOKEN_MAX, "2^53").await.unwrap();
    let err = fence
        .set(&key, "l", TOKEN_MAX + 1, "2^53+1")
        .await
        .unwrap_err();
    assert!(
        matches!(err, FenceError::TokenOutOfRange { token } if token == TOKEN_MAX + 1),
        "{err:?}"
    );
    assert!(err.to_string().contains("exceeds 2^53"), "{err}");
    assert!(fence.set(&key, "l", u64::MAX, "max").await.is_err());
    assert_eq!(get(&mut conn, &key).await.as_deref(), Some("2^53"));

    // The script guards itself for clients that skip the Rust check:
    // 2^53 + 1 would read as 2^53 in Lua and pass as "equal".
    let fence_key = format!("{{{key}}}:fence:{}:{key}:l", key.len());
    let log_key = format!("{{{key}}}:fence-rejections:{}:{key}", key.len());
    let reply = conn
        .command(&[
            b"EVAL",
            SCRIPT.as_bytes(),
            b"3",
            key.as_bytes(),
            fence_key.as_bytes(),
            log_key.as_bytes(),
            b"l",
            b"9007199254740993",
            b"16",
            b"SET",
            b"sneaky",
        ])
        .await
        .unwrap();
    match reply {
        Reply::Error(e) => assert!(e.contains("LEASEHOLD_TOKEN_RANGE"), "{e}"),
        other => panic!("script accepted 2^53 + 1: {other:?}"),
    }
    assert_eq!(get(&mut conn, &key).await.as_deref(), Some("2^53"));
    assert_eq!(
        get(&mut conn, &fence_key).await.as_deref(),
        Some("9007199254740992")
    );
}

#[tokio::test]
async fn t40_survives_script_flush() {
    let Some(addr) = server().await else { return };
    let mut fence = RedisFence::connect(&addr).await.unwrap();
    let key = unique("flush");
    fence.set(&key, "l", 1, "one").await.unwrap();
    let mut conn = Connection::connect(&addr).await.unwrap();
    let flushed = conn.command(&[b"SCRIPT", b"FLUSH"]).await.unwrap();
    assert_eq!(flushed, Reply::Status("OK".to_owned()));
    // NOSCRIPT → SCRIPT LOAD → retry, invisibly.
    fence.set(&key, "l", 2, "two").await.unwrap();
    assert_eq!(stale(fence.set(&key, "l", 1, "old").await), (1, 2));
}

#[tokio::test]
async fn t50_lock_names_up_to_the_core_limit_are_accepted() {
    let Some(addr) = server().await else { return };
    let mut fence = RedisFence::connect(&addr).await.unwrap();
    // The adapter once stopped at 256 bytes, below the server's limit; the
    // conformance suite fences a name of exactly NAME_BYTES_MAX bytes.
    let (key, longest) = (unique("names"), "n".repeat(NAME_BYTES_MAX));
    fence.set(&key, &longest, 1, "one").await.unwrap();
    let too_long = format!("{longest}n");
    let error = fence.set(&key, &too_long, 2, "two").await.unwrap_err();
    assert!(matches!(error, FenceError::InvalidLock { .. }), "{error:?}");
    assert!(error.to_string().contains("NAME_BYTES_MAX"), "{error}");
    assert_eq!(fence.highest(&key, &longest).await.unwrap(), Some(1));
}

#[tokio::test]
async fn t60_a_fence_value_of_a_newer_format_is_refused_naming_both_and_kept() {
    let Some(addr) = server().await else { return };
    let mut fence = RedisFence::connect(&addr).await.unwrap();
    let mut conn = Connection::connect(&addr).await.unwrap();
    let (key, lock) = (unique("newer"), "l");
    fence.set(&key, lock, 5, "five").await.unwrap();
    let fence_key = leasehold_fence::redis::invocation::fence_key(&key, lock).unwrap();
    let newer = format!(
        "v{}:5;whatever it holds",
        leasehold_fence::redis::FENCE_FORMAT + 1
    );
    conn.command(&[b"SET", &fence_key, newer.as_bytes()])
        .await
        .unwrap();

    let write = fence.set(&key, lock, 9, "nine").await;
    let read = fence.highest(&key, lock).await;
    for refused in [write.map(|()| None), read] {
        let Err(error @ FenceError::NewerFormat { found: 2 }) = refused else {
            panic!("expected a newer-format refusal, got {refused:?}");
        };
        let said = error.to_string();
        assert!(
            said.contains("format v2") && said.contains("reads (v1)"),
            "{said}"
        );
    }
    assert_eq!(
        get(&mut conn, &key).await.as_deref(),
        Some("five"),
        "nothing written"
    );
    let kept = conn.command(&[b"GET", &fence_key]).await.unwrap();
    assert_eq!(kept.as_text(), Some(newer.as_str()));
}
