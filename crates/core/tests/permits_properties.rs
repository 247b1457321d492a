//! Property test of the permit pool (semaphores, read-write locks) against a
//! naive model: a map of grants and a list of waiters that every rule scans.
//! Random asks (waiting or not, of any count, the same lease again),
//! releases (with the right token or a wrong one), cancelled waits and
//! leases ending, in a small universe (5 leases, up to 4 permits, or a
//! read-write pool whose asks are one permit or all of them), so full
//! pools, queues and retries are common. After every command the pool must
//! equal the model, and:
//!
//! - at most the pool's permits are held;
//! - the head of the queue never fits (else it would hold): nobody waits
//!   for permits that are free to them;
//! - waiters are granted in queue order, and only from the head (FIFO,
//!   a big ask never overtaken by a later, smaller one);
//! - a lease that ends frees exactly its own permits;
//! - a grant's token is the granting command's, above every earlier
//!   command's grants;
//! - in a read-write pool, a writer (all permits) holds alone.

use leasehold_core::permits::{Ask, Asked, PermitPool, PermitRefusal, Stamp};
use leasehold_core::{LeaseId, Token};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// The stamp of the command with revision `token`.
fn at(token: u64) -> Stamp {
    Stamp {
        token: Token(token),
        at_unix_ms: token,
    }
}

#[derive(Clone, Debug)]
enum Op {
    Ask { lease: u64, count: u32, wait: bool },
    Release { lease: u64, right_token: bool },
    Cancel { lease: u64 },
    Leave { lease: u64 },
}

/// The model: grants by lease (count, token) and the queue, in order.
#[derive(Default)]
struct Model {
    permits: u32,
    holds: BTreeMap<u64, (u32, u64)>,
    queue: Vec<(u64, u32)>,
}

impl Model {
    fn free(&self) -> u32 {
        self.permits - self.holds.values().map(|&(count, _)| count).sum::<u32>()
    }

    fn ask(&mut self, lease: u64, count: u32, wait: bool, token: u64) -> Result<Asked, ()> {
        if count == 0 || count > self.permits {
            return Err(());
        }
        if let Some(&(held, held_token)) = self.holds.get(&lease) {
            return (held == count)
                .then_some(Asked::Granted {
                    token: Token(held_token),
                    already_held: true,
                })
                .ok_or(());
        }
        if let Some(at) = self.queue.iter().position(|&(l, _)| l == lease) {
            return (self.queue[at].1 == count)
                .then_some(Asked::Queued {
                    position: at as u32 + 1,
                })
                .ok_or(());
        }
        if self.queue.is_empty() && count <= self.free() {
            self.holds.insert(lease, (count, token));
            return Ok(Asked::Granted {
                token: Token(token),
                already_held: false,
            });
        }
        if !wait {
            return Err(());
        }
        self.queue.push((lease, count));
        Ok(Asked::Queued {
            position: self.queue.len() as u32,
        })
    }

    fn grant_waiting(&mut self, token: u64) -> Vec<u64> {
        let mut granted = Vec::new();
        while let Some(&(lease, count)) = self.queue.first() {
            if count > self.free() {
                break;
            }
            self.queue.remove(0);
            self.holds.insert(lease, (count, token));
            granted.push(lease);
        }
        granted
    }
}

fn op(permits: u32, read_write: bool) -> impl Strategy<Value = Op> {
    let count = if read_write {
        prop_oneof![Just(PermitPool::SHARED), Just(permits)].boxed()
    } else {
        (0..=permits + 1).boxed()
    };
    prop_oneof![
        4 => (1..=5u64, count, any::<bool>())
            .prop_map(|(lease, count, wait)| Op::Ask { lease, count, wait }),
        3 => (1..=5u64, prop::bool::weighted(0.8))
            .prop_map(|(lease, right_token)| Op::Release { lease, right_token }),
        1 => (1..=5u64).prop_map(|lease| Op::Cancel { lease }),
        1 => (1..=5u64).prop_map(|lease| Op::Leave { lease }),
    ]
}

fn case() -> impl Strategy<Value = (bool, u32, Vec<Op>)> {
    prop_oneof![(1..=4u32).prop_map(|p| (false, p)), Just((true, 0))].prop_flat_map(
        |(read_write, permits)| {
            let permits = if read_write {
                PermitPool::read_write().permits()
            } else {
                permits
            };
            let ops = prop::collection::vec(op(permits, read_write), 1..60);
            (Just(read_write), Just(permits), ops)
        },
    )
}

/// Applies one op as one command under `token`; returns the leases granted
/// from the queue, checking the op's own rules on the way.
fn apply(pool: &mut PermitPool, model: &mut Model, op: &Op, token: u64) -> Vec<u64> {
    match *op {
        Op::Ask { lease, count, wait } => {
            let wait_ms = if wait { 60_000 } else { 0 };
            let ask = Ask {
                lease: LeaseId(lease),
                count,
                wait_ms,
                fenced: false,
            };
            let got = pool.ask(ask, at(token));
            let expected = model.ask(lease, count, wait, token);
            assert_eq!(got.ok(), expected.ok(), "{op:?}");
            if let Err(PermitRefusal::Busy { free, .. }) = got {
                assert_eq!(free, model.free());
            }
            Vec::new()
        }
        Op::Release { lease, right_token } => {
            let held = model.holds.get(&lease).map(|&(_, t)| t);
            let named = match (held, right_token) {
                (Some(t), true) => t,
                (Some(t), false) => t + 1,
                (None, _) => token,
            };
            let freed = pool.release(LeaseId(lease), Token(named));
            if held == Some(named) {
                let (count, _) = model.holds.remove(&lease).expect("held");
                assert_eq!(freed.map(|h| h.count), Ok(count));
            } else {
                assert!(
                    freed.is_err(),
                    "{op:?}: a release naming no grant frees nothing"
                );
            }
            grant_both(pool, model, token)
        }
        Op::Cancel { lease } => {
            let queued = model.queue.iter().any(|&(l, _)| l == lease);
            model.queue.retain(|&(l, _)| l != lease);
            assert_eq!(pool.cancel_wait(LeaseId(lease)), queued);
            grant_both(pool, model, token)
        }
        Op::Leave { lease } => {
            let free_before = pool.free();
            let own = model.holds.remove(&lease).map_or(0, |(count, _)| count);
            let queued = model.queue.iter().any(|&(l, _)| l == lease);
            model.queue.retain(|&(l, _)| l != lease);
            let (held, was_queued) = pool.leave(LeaseId(lease));
            assert_eq!((held.map_or(0, |h| h.count), was_queued), (own, queued));
            assert_eq!(pool.free(), free_before + own, "exactly its own permits");
            grant_both(pool, model, token)
        }
    }
}

/// Grants from the queue in both; checks they are the queue's head, in order.
fn grant_both(pool: &mut PermitPool, model: &mut Model, token: u64) -> Vec<u64> {
    let queue_before: Vec<u64> = model.queue.iter().map(|&(l, _)| l).collect();
    let granted: Vec<u64> = pool
        .grant_waiting(at(token))
        .iter()
        .map(|h| {
            assert_eq!(h.token, Token(token));
            h.lease.0
        })
        .collect();
    assert_eq!(granted, model.grant_waiting(token));
    assert_eq!(
        granted,
        queue_before[..granted.len()],
        "granted from the head, in order"
    );
    granted
}

fn check(pool: &PermitPool, model: &Model, read_write: bool) {
    let holds: BTreeMap<u64, (u32, u64)> = pool
        .holds()
        .iter()
        .map(|h| (h.lease.0, (h.count, h.token.0)))
        .collect();
    assert_eq!(holds, model.holds);
    assert_eq!(holds.len(), pool.holds().len(), "one grant per lease");
    let queue: Vec<(u64, u32)> = pool.waiters().map(|w| (w.lease.0, w.count)).collect();
    assert_eq!(queue, model.queue);
    assert!(pool.held() <= pool.permits());
    if let Some(head) = pool.waiters().next() {
        assert!(
            head.count > pool.free(),
            "the head waits only for permits not free"
        );
    }
    let tokens: Vec<Token> = pool.holds().iter().map(|h| h.token).collect();
    assert!(
        tokens.windows(2).all(|w| w[0] <= w[1]),
        "grants in token order"
    );
    if read_write && pool.holds().iter().any(|h| h.count == pool.permits()) {
        assert_eq!(pool.holds().len(), 1, "a writer holds alone");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_pool_follows_the_model((read_write, permits, ops) in case()) {
        let mut pool = if read_write {
            PermitPool::read_write()
        } else {
            PermitPool::new(permits).unwrap()
        };
        let mut model = Model { permits, ..Model::default() };
        // Each op is one command; its token is above every earlier one's.
        for (i, op) in ops.iter().enumerate() {
            let token = i as u64 + 1;
            let before: Vec<(LeaseId, Token)> =
                pool.holds().iter().map(|h| (h.lease, h.token)).collect();
            apply(&mut pool, &mut model, op, token);
            for grant in pool.holds().iter().filter(|h| !before.contains(&(h.lease, h.token))) {
                prop_assert_eq!(grant.token, Token(token), "a grant carries its command's token");
            }
            check(&pool, &model, read_write);
        }
    }
}
