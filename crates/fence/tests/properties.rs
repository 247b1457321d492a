//! The fencing invariant, checked against [`MemoryFence`]: whatever order
//! writers arrive in, the tokens whose writes actually ran never decrease
//! per (resource, lock), a refused token was lower than the highest
//! accepted before it, and a token at least that high is never refused.

use leasehold_fence::audit::REJECTIONS_REMEMBERED;
use leasehold_fence::memory::MemoryFence;
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

/// Resources and locks drawn from small sets so writers collide.
const RESOURCES: [&str; 2] = ["accounts", "orders"];
const LOCKS: [&str; 2] = ["a", "b"];

/// One write a writer wants to make.
#[derive(Clone, Debug)]
struct Attempt {
    resource: &'static str,
    lock: &'static str,
    token: u64,
}

fn attempt() -> impl Strategy<Value = Attempt> {
    // Tokens from a small range: equal and lower tokens are common.
    (0..RESOURCES.len(), 0..LOCKS.len(), 0u64..10).prop_map(|(r, l, token)| Attempt {
        resource: RESOURCES[r],
        lock: LOCKS[l],
        token,
    })
}

/// Several writers, each with its own queue of attempts, and a schedule
/// naming which writer moves next (an interleaving of the queues).
fn writers_and_schedule() -> impl Strategy<Value = (Vec<Vec<Attempt>>, Vec<usize>)> {
    prop::collection::vec(prop::collection::vec(attempt(), 0..12), 1..6).prop_flat_map(|writers| {
        let total: usize = writers.iter().map(Vec::len).sum();
        let schedule = prop::collection::vec(0..writers.len(), total..=total * 2 + 1);
        (Just(writers), schedule)
    })
}

proptest! {
    #[test]
    fn any_interleaving_accepts_a_non_decreasing_token_sequence(
        (writers, schedule) in writers_and_schedule()
    ) {
        let fence = MemoryFence::new();
        let mut next = vec![0; writers.len()];
        // What actually ran, in order, recorded from inside the write.
        let mut ran: Vec<(&str, &str, u64)> = Vec::new();
        // Independent model: highest accepted so far per (resource, lock).
        let mut model: HashMap<(&str, &str), u64> = HashMap::new();
        let mut refused = 0;

        // Follow the schedule, then drain whatever it left in writer order.
        let order = schedule.iter().copied().chain((0..writers.len()).flat_map(|w| {
            std::iter::repeat_n(w, writers[w].len())
        }));
        for w in order {
            let Some(a) = writers[w].get(next[w]) else { continue };
            next[w] += 1;
            let key = (a.resource, a.lock);
            let before = model.get(&key).copied();
            let result = fence.write(a.resource, a.lock, a.token, || {
                ran.push((a.resource, a.lock, a.token));
            });
            match (result, before) {
                (Ok(()), _) => {
                    prop_assert!(before.is_none_or(|h| a.token >= h),
                        "accepted {} after {:?}", a.token, before);
                    prop_assert_eq!(ran.last(), Some(&(a.resource, a.lock, a.token)));
                    model.insert(key, a.token);
                }
                (Err(stale), Some(highest)) => {
                    prop_assert!(a.token < highest, "refused {} with highest {}", a.token, highest);
                    prop_assert_eq!((stale.presented, stale.highest), (a.token, highest));
                    refused += 1;
                }
                (Err(stale), None) => {
                    return Err(TestCaseError::fail(format!("refused the first token: {stale}")));
                }
            }
            prop_assert_eq!(fence.highest(a.resource, a.lock), model.get(&key).copied());
        }

        prop_assert!(next.iter().zip(&writers).all(|(n, w)| *n == w.len()));
        let attempted: usize = writers.iter().map(Vec::len).sum();
        prop_assert_eq!(ran.len() + refused, attempted);
        prop_assert_eq!(fence.rejections().len(), refused);
        // The recorded sequence itself, per (resource, lock), never decreases.
        let mut last: HashMap<(&str, &str), u64> = HashMap::new();
        for (resource, lock, token) in ran {
            let previous = last.insert((resource, lock), token);
            prop_assert!(previous.is_none_or(|p| token >= p));
        }
    }
}

/// Threads hammering one lock with interleaved tokens. The write does a
/// deliberately racy read-yield-store on a "resource" that only the fence
/// protects: if check and write were not one atomic step, a lower token
/// would overwrite a higher one and the assertions below would fail.
#[test]
fn concurrent_writers_on_one_lock_never_go_backwards() {
    const WRITERS: u64 = 8;
    const ROUNDS: u64 = 200;
    let fence = Arc::new(MemoryFence::new());
    let resource = Arc::new(AtomicU64::new(0));
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let barrier = Arc::new(Barrier::new(WRITERS as usize));

    let handles: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (fence, resource, accepted, barrier) = (
                Arc::clone(&fence),
                Arc::clone(&resource),
                Arc::clone(&accepted),
                Arc::clone(&barrier),
            );
            std::thread::spawn(move || {
                let mut refusals = Vec::new();
                barrier.wait();
                for round in 0..ROUNDS {
                    // Mostly rising tokens, interleaved across writers, with
                    // a lower retry every third round and repeats.
                    let token = match round % 3 {
                        2 => (round / 2) * WRITERS + writer,
                        _ => round * WRITERS + (writer + round) % WRITERS,
                    };
                    let written = fence.write("resource", "lock", token, || {
                        let seen = resource.load(Ordering::SeqCst);
                        std::thread::yield_now();
                        assert!(token >= seen, "token {token} overwrote {seen}");
                        resource.store(token, Ordering::SeqCst);
                        accepted.lock().unwrap().push(token);
                    });
                    if let Err(stale) = written {
                        refusals.push(stale);
                    }
                }
                refusals
            })
        })
        .collect();
    let refusals: Vec<_> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("writer panicked"))
        .collect();

    let accepted = accepted.lock().unwrap().clone();
    assert!(accepted.windows(2).all(|w| w[0] <= w[1]), "{accepted:?}");
    assert_eq!(accepted.len() + refusals.len(), (WRITERS * ROUNDS) as usize);
    assert!(
        !refusals.is_empty(),
        "the schedule never produced a stale token"
    );
    for stale in &refusals {
        // Refused only because something higher had already been written.
        assert!(stale.presented < stale.highest, "{stale}");
        assert!(accepted.contains(&stale.highest), "{stale}");
    }
    let top = *accepted.last().expect("something was accepted");
    assert_eq!(top, (ROUNDS - 1) * WRITERS + WRITERS - 1);
    assert_eq!(fence.highest("resource", "lock"), Some(top));
    assert_eq!(resource.load(Ordering::SeqCst), top);
    assert_eq!(
        fence.rejections().len(),
        refusals.len().min(REJECTIONS_REMEMBERED)
    );
}
