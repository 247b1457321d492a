//! The random-command universe of the property tests: abstract steps over 4
//! lease slots, 3 lock names and 2 fenced-store keys, and their translation into commands against
//! the current state (so "release with the right token" finds the token).

pub mod checks;

use leasehold_core::{
    Acquire, Command, FencedKey, LeaseId, LockName, OwnerInfo, RequestId, State, Token,
};
use proptest::prelude::*;

pub const SLOTS: usize = 4;
pub const NAMES: [&str; 3] = ["jobs/a", "jobs/b", "db"];

/// An abstract step; `to_command` makes it concrete against the current state
/// (which lease a slot holds, which token is current).
#[derive(Clone, Debug)]
pub enum Op {
    Grant {
        slot: usize,
        ttl_ok: bool,
        request: Option<u8>,
    },
    KeepAlive {
        slot: usize,
    },
    Revoke {
        slot: usize,
    },
    Expire {
        slot: usize,
    },
    Acquire {
        slot: usize,
        lock: usize,
        wait: bool,
        delay: bool,
        hold: bool,
        request: Option<u8>,
    },
    Release {
        slot: usize,
        lock: usize,
        right_token: bool,
        request: Option<u8>,
    },
    Cancel {
        slot: usize,
        lock: usize,
    },
    /// The leader's timer times out every slot's wait on `lock` and on the
    /// next lock at once (most of them not queued).
    TimeOutWaits {
        lock: usize,
    },
    EndDelay {
        lock: usize,
        right: bool,
    },
    EndHold {
        lock: usize,
        right: bool,
    },
    /// A fenced put under `lock` to one of `KEYS`; with `right_token` the
    /// lock's holder token (if held), else one below it.
    FencedPut {
        lock: usize,
        key: usize,
        right_token: bool,
        request: Option<u8>,
    },
    /// An operator's force release of `lock`; with `right_token` naming the
    /// holder's token (if held), else one below it; with `revoke` the
    /// holder's whole lease.
    ForceRelease {
        lock: usize,
        right_token: bool,
        revoke: bool,
    },
    /// An all-or-nothing acquire of two locks, `lock` and the next, in
    /// either order.
    AcquireAll {
        slot: usize,
        lock: usize,
        reversed: bool,
        wait: bool,
        request: Option<u8>,
    },
    /// A leader's proclaim of a new value for `lock` (an election); with
    /// `right_token` the holder's token (if held), else one below it.
    Proclaim {
        slot: usize,
        lock: usize,
        right_token: bool,
        request: Option<u8>,
    },
}

/// Fenced-store keys: few, so holders of different locks share them.
pub const KEYS: [&str; 2] = ["cfg/leader", "cfg/checkpoint"];

pub fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    let lock = 0..NAMES.len();
    let request = proptest::option::of(0u8..4);
    prop_oneof![
        2 => (slot.clone(), proptest::bool::weighted(0.9), request.clone())
            .prop_map(|(slot, ttl_ok, request)| Op::Grant { slot, ttl_ok, request }),
        1 => slot.clone().prop_map(|slot| Op::KeepAlive { slot }),
        1 => slot.clone().prop_map(|slot| Op::Revoke { slot }),
        1 => slot.clone().prop_map(|slot| Op::Expire { slot }),
        5 => (slot.clone(), lock.clone(), any::<bool>(), any::<bool>(), any::<bool>(), request.clone())
            .prop_map(|(slot, lock, wait, delay, hold, request)| {
                Op::Acquire { slot, lock, wait, delay, hold, request }
            }),
        3 => (slot.clone(), lock.clone(), proptest::bool::weighted(0.8), request.clone())
            .prop_map(|(slot, lock, right_token, request)| {
                Op::Release { slot, lock, right_token, request }
            }),
        1 => (slot.clone(), lock.clone()).prop_map(|(slot, lock)| Op::Cancel { slot, lock }),
        1 => lock.clone().prop_map(|lock| Op::TimeOutWaits { lock }),
        1 => (lock.clone(), proptest::bool::weighted(0.8))
            .prop_map(|(lock, right)| Op::EndDelay { lock, right }),
        1 => (lock.clone(), proptest::bool::weighted(0.8))
            .prop_map(|(lock, right)| Op::EndHold { lock, right }),
        3 => (lock.clone(), 0..KEYS.len(), proptest::bool::weighted(0.8), request.clone())
            .prop_map(|(lock, key, right_token, request)| {
                Op::FencedPut { lock, key, right_token, request }
            }),
        1 => (lock.clone(), proptest::bool::weighted(0.8), any::<bool>())
            .prop_map(|(lock, right_token, revoke)| Op::ForceRelease { lock, right_token, revoke }),
        2 => (slot.clone(), lock.clone(), proptest::bool::weighted(0.8), request.clone())
            .prop_map(|(slot, lock, right_token, request)| {
                Op::Proclaim { slot, lock, right_token, request }
            }),
        3 => (slot, lock, any::<bool>(), proptest::bool::weighted(0.7), request)
            .prop_map(|(slot, lock, reversed, wait, request)| {
                Op::AcquireAll { slot, lock, reversed, wait, request }
            }),
    ]
}

pub fn name(lock: usize) -> LockName {
    LockName::parse(NAMES[lock]).unwrap()
}

pub fn request_id(request: Option<u8>, step: usize) -> Option<RequestId> {
    // Request ids repeat within a small window so retries actually happen.
    request.and_then(|r| RequestId::parse(&format!("r{}-{r}", step / 8)).unwrap())
}

/// The concrete command for `op` in the current `state`.
pub fn to_command(op: &Op, state: &State, slots: &[LeaseId; SLOTS], step: usize) -> Command {
    let holder_token = |lock: usize| {
        state
            .lock(&name(lock))
            .and_then(|l| l.holder.as_ref())
            .map(|h| h.token)
    };
    match *op {
        Op::ForceRelease { lock, .. } => force_release(op, holder_token(lock)),
        Op::Grant {
            ttl_ok, request, ..
        } => Command::GrantLease {
            ttl_ms: if ttl_ok { 5_000 } else { 10 },
            owner: OwnerInfo::default(),
            request_id: request_id(request, step),
        },
        Op::KeepAlive { slot } => Command::KeepAlive { lease: slots[slot] },
        Op::Revoke { slot } => Command::RevokeLease {
            lease: slots[slot],
            request_id: None,
        },
        Op::Expire { slot } => {
            // Mostly the renewal count the leader saw; every fifth step a
            // stale count, as when a keep-alive applied after the decision.
            let current = state.lease(slots[slot]).map_or(0, |l| l.renewals());
            Command::ExpireLease {
                lease: slots[slot],
                renewals: if step.is_multiple_of(5) {
                    current + 1
                } else {
                    current
                },
            }
        }
        Op::Acquire { .. } => acquire(op, slots, step),
        Op::Release {
            slot,
            lock,
            right_token,
            request,
        } => Command::Release {
            lease: slots[slot],
            name: name(lock),
            token: presented(holder_token(lock), right_token),
            request_id: request_id(request, step),
        },
        Op::AcquireAll {
            slot,
            lock,
            reversed,
            wait,
            request,
        } => {
            let mut names = vec![name(lock), name((lock + 1) % NAMES.len())];
            if reversed {
                names.reverse();
            }
            Command::AcquireAll(leasehold_core::AcquireAll {
                lease: slots[slot],
                names,
                wait_ms: if wait { 60_000 } else { 0 },
                request_id: request_id(request, step),
                fenced: true,
            })
        }
        Op::Proclaim {
            slot,
            lock,
            right_token,
            request,
        } => Command::Proclaim(leasehold_core::Proclaim {
            lease: slots[slot],
            name: name(lock),
            token: presented(holder_token(lock), right_token),
            value: format!("v{step}"),
            request_id: request_id(request, step),
        }),
        Op::Cancel { slot, lock } => Command::CancelWait {
            lease: slots[slot],
            name: name(lock),
            timed_out: slot % 2 == 0,
        },
        Op::TimeOutWaits { lock } => {
            let next = (lock + 1) % NAMES.len();
            let waits = slots
                .iter()
                .flat_map(|&lease| [(lease, name(lock)), (lease, name(next))]);
            Command::TimeOutWaits {
                waits: waits.collect(),
            }
        }
        Op::EndDelay { lock, right } => {
            let delay = state.lock(&name(lock)).and_then(|l| l.delay.as_ref());
            let token = delay.map_or(Token(0), |d| d.token);
            Command::EndLockDelay {
                name: name(lock),
                token: if right { token } else { Token(0) },
            }
        }
        Op::EndHold { lock, right } => Command::EndHold {
            name: name(lock),
            token: if right {
                holder_token(lock).unwrap_or(Token(0))
            } else {
                Token(0)
            },
        },
        Op::FencedPut {
            lock,
            key,
            right_token,
            request,
        } => {
            Command::FencedPut {
                lock: name(lock),
                token: presented(holder_token(lock), right_token),
                key: FencedKey::parse(KEYS[key]).unwrap(),
                value: format!("{step}").into_bytes(),
                // A retry repeats the same put: a client never reuses a
                // request id for another request (a dedup hit replays the
                // first reply, whatever was asked).
                request_id: request.and_then(|r| {
                    RequestId::parse(&format!("f{}-{r}-{lock}{key}{right_token}", step / 8))
                        .unwrap()
                }),
            }
        }
    }
}

/// The token a step presents for a lock held with `holder` (1 if the
/// lock is free): that token when `right`, else one below it.
fn presented(holder: Option<Token>, right: bool) -> Token {
    let token = holder.unwrap_or(Token(1));
    if right {
        token
    } else {
        Token(token.0.saturating_sub(1))
    }
}

fn force_release(op: &Op, holder_token: Option<Token>) -> Command {
    let Op::ForceRelease {
        lock,
        right_token,
        revoke,
    } = *op
    else {
        unreachable!("not a force release: {op:?}");
    };
    Command::ForceRelease {
        name: name(lock),
        expected_token: presented(holder_token, right_token),
        reason: "property test".into(),
        caller: "op@test".into(),
        allow_unfenced: false,
        revoke_lease: revoke,
    }
}

fn acquire(op: &Op, slots: &[LeaseId; SLOTS], step: usize) -> Command {
    let Op::Acquire {
        slot,
        lock,
        wait,
        delay,
        hold,
        request,
    } = *op
    else {
        unreachable!("not an acquire: {op:?}");
    };
    Command::Acquire(Acquire {
        lease: slots[slot],
        name: name(lock),
        wait_ms: if wait { 1_000 } else { 0 },
        request_id: request_id(request, step),
        fenced: true,
        lock_delay_ms: if delay { 500 } else { 0 },
        max_hold_ms: if hold { 2_000 } else { 0 },
        metadata: Default::default(),
    })
}
