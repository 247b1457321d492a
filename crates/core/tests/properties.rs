//! Property tests of the core's guarantees over random command sequences in a
//! small universe (4 lease slots, 3 lock names, 2 fenced-store keys), so
//! that collisions — contention, queues, expiry of holders and waiters,
//! stale tokens, fenced writes across holders — are common. Each step is checked against a model kept by the test from the
//! replies and effects, not against the state's own bookkeeping alone.

mod support;

use leasehold_core::{
    Applied, Command, Effect, FencedKey, LeaseId, LockError, LockName, Reply, State, Token,
};
use proptest::prelude::*;
use std::collections::{BTreeMap, VecDeque};
use support::checks::{check_force_release, check_lease_end, core_view};
use support::{op, to_command, Op, SLOTS};

/// What the test tracks across the run, from replies and effects only.
#[derive(Default)]
struct Model {
    /// Highest token ever granted per lock.
    last_token: BTreeMap<LockName, Token>,
    /// Queue order per lock, built from `Queued` replies.
    queues: BTreeMap<LockName, VecDeque<LeaseId>>,
    /// Highest token accepted per fenced-store key, from `FencedStored` replies.
    fenced_highest: BTreeMap<FencedKey, Token>,
}

impl Model {
    fn observe(&mut self, command: &Command, applied: &Applied, bumped: bool) {
        for effect in &applied.effects {
            match effect {
                Effect::LockGranted {
                    name,
                    lease,
                    token,
                    from_queue,
                    ..
                } => {
                    // (2) tokens strictly increase per lock; grants carry the revision.
                    let last = self.last_token.insert(name.clone(), *token);
                    assert!(
                        last.is_none_or(|last| last < *token),
                        "token regressed on {name}"
                    );
                    assert_eq!(token.0, applied.revision.0);
                    // (3) only the FIFO head is granted from a queue.
                    let queue = self.queues.entry(name.clone()).or_default();
                    if *from_queue {
                        assert_eq!(queue.pop_front(), Some(*lease), "grant skipped the head");
                    } else {
                        assert!(queue.is_empty(), "free grant while waiters queue");
                    }
                }
                Effect::WaiterRemoved { name, lease, .. } => {
                    let queue = self.queues.entry(name.clone()).or_default();
                    let before = queue.len();
                    queue.retain(|l| l != lease);
                    assert_eq!(queue.len() + 1, before);
                }
                _ => {}
            }
        }
        if let (Command::AcquireAll(a), Ok(Reply::Queued { .. }), true) =
            (command, &applied.outcome, bumped)
        {
            for name in &a.names {
                self.queues
                    .entry(name.clone())
                    .or_default()
                    .push_back(a.lease);
            }
        }
        if let (Command::Acquire(a), Ok(Reply::Queued { position })) = (command, &applied.outcome) {
            let queue = self.queues.entry(a.name.clone()).or_default();
            if bumped {
                queue.push_back(a.lease);
            }
            // A dedup replay may report an old position; a fresh one is exact.
            if bumped || a.request_id.is_none() {
                let at = queue
                    .iter()
                    .position(|l| *l == a.lease)
                    .expect("queued lease");
                assert_eq!(at + 1, *position as usize);
            }
        }
    }

    /// (7) a fenced put is accepted only from the lock's current holder token
    /// (as it was before the put) and never below the key's highest token;
    /// a stale refusal names the model's highest.
    fn observe_fenced(
        &mut self,
        before: &State,
        after: &State,
        command: &Command,
        applied: &Applied,
        bumped: bool,
    ) {
        let Command::FencedPut {
            lock, token, key, ..
        } = command
        else {
            return;
        };
        let holder = before
            .lock(lock)
            .and_then(|l| l.holder.as_ref())
            .map(|h| h.token);
        let highest = self.fenced_highest.get(key).copied();
        match &applied.outcome {
            Ok(Reply::FencedStored { token: stored }) if bumped => {
                assert_eq!(stored, token);
                assert_eq!(holder, Some(*token), "a put by a non-holder was accepted");
                assert!(
                    highest.is_none_or(|h| h <= *token),
                    "a stale put was accepted"
                );
                self.fenced_highest.insert(key.clone(), *token);
            }
            Ok(Reply::FencedStored { .. }) => {} // a dedup replay: nothing changed
            Ok(other) => panic!("fenced put replied {other:?}"),
            Err(LockError::StaleToken {
                key: refused,
                lock: writer,
                presented,
                highest: h,
                ..
            }) => {
                assert_eq!(refused, key);
                assert_eq!(writer, lock);
                // A dedup replay may name an older highest; never a newer one.
                assert_eq!(presented, token);
                assert!(highest.is_some_and(|m| *h <= m), "refused above the model");
                assert!(presented < h);
            }
            Err(_) => {}
        }
        let stored = after.fenced_get(key).map(|e| e.token);
        assert_eq!(
            stored,
            self.fenced_highest.get(key).copied(),
            "fenced key {key}"
        );
    }

    /// The model's queues match the state's.
    fn check_queues(&self, state: &State) {
        for (name, queue) in &self.queues {
            let waiters: VecDeque<LeaseId> = state
                .lock(name)
                .map(|l| l.waiters.iter().map(|w| w.lease).collect())
                .unwrap_or_default();
            assert_eq!(&waiters, queue, "queue of {name}");
        }
    }
}

/// (1) at most one holder per lock, holders live and listing their locks.
fn check_holders(state: &State) {
    state.check_invariants().unwrap();
    let mut held_by: BTreeMap<LockName, LeaseId> = BTreeMap::new();
    for lease in state.leases() {
        for name in &lease.holds {
            assert!(
                held_by.insert(name.clone(), lease.id).is_none(),
                "two holders of {name}"
            );
        }
    }
    for lock in state.locks() {
        match &lock.holder {
            Some(h) => assert_eq!(held_by.get(lock.name), Some(&h.lease)),
            None => assert!(!held_by.contains_key(lock.name)),
        }
    }
}

/// (7) only the leader of the current epoch sets an election's value, and
/// an accepted proclaim changes that value and nothing else of the lock.
fn check_proclaim(
    before: &State,
    after: &State,
    command: &Command,
    applied: &Applied,
    bumped: bool,
) {
    let Command::Proclaim(p) = command else {
        return;
    };
    let holder = |state: &State| {
        let lock = state.lock(&p.name)?;
        lock.holder.clone()
    };
    match &applied.outcome {
        Ok(Reply::Proclaimed { token }) if bumped => {
            assert_eq!(*token, p.token);
            let (was, now) = (
                holder(before).expect("a leader"),
                holder(after).expect("a leader"),
            );
            assert_eq!(
                (was.lease, was.token),
                (p.lease, p.token),
                "a non-leader proclaimed"
            );
            assert_eq!(now.metadata.get("value"), Some(&p.value));
            assert_eq!(
                (now.lease, now.token, now.acquired_unix_ms),
                (was.lease, was.token, was.acquired_unix_ms)
            );
        }
        // A refusal, or the replay of an earlier request's outcome under
        // the same id (the generator reuses ids across kinds): no change.
        _ if !bumped => {}
        other => panic!("a proclaim changed the state and replied {other:?}"),
    }
}

/// (8) several locks at once are all or nothing: a fresh grant of a set
/// holds every lock of it, and a lease waiting for a set holds none of it.
fn check_lock_sets(state: &State, command: &Command, applied: &Applied, bumped: bool) {
    if let (Command::AcquireAll(a), Ok(Reply::AcquiredAll { tokens, .. }), true) =
        (command, &applied.outcome, bumped)
    {
        for (name, token) in a.names.iter().zip(tokens) {
            let holder = state.lock(name).and_then(|l| l.holder.clone());
            assert_eq!(holder.map(|h| (h.lease, h.token)), Some((a.lease, *token)));
        }
    }
    for (lease, names) in state.stored_lock_sets() {
        let holds = state
            .lease(lease)
            .expect("a set's lease is live")
            .holds
            .clone();
        assert!(
            names.iter().all(|name| !holds.contains(name)),
            "a waiting set holds part of itself"
        );
    }
}

/// (9) nothing deadlocks: releasing every holder and ending every delay,
/// over and over, grants every waiter in turn (a set whole) until no lock
/// is left.
fn drain(mut state: State) {
    for round in 0.. {
        assert!(round < 64, "the locks did not drain: a deadlock");
        let locks: Vec<_> = state
            .locks()
            .map(|l| l.to_lock())
            .zip(state.locks().map(|l| l.name.clone()))
            .collect();
        if locks.is_empty() {
            return;
        }
        for (lock, name) in locks {
            let command = match (&lock.holder, &lock.delay) {
                (Some(h), _) => Command::Release {
                    lease: h.lease,
                    name,
                    token: h.token,
                    request_id: None,
                },
                (None, Some(d)) => Command::EndLockDelay {
                    name,
                    token: d.token,
                },
                (None, None) => continue,
            };
            state.apply(command, 0);
            state.check_invariants().unwrap();
        }
    }
}

/// Runs `ops`, checking every property after each step; returns the
/// commands and what they produced.
fn run(ops: &[Op]) -> (State, Vec<Command>, Vec<Applied>) {
    let mut state = State::default();
    let mut model = Model::default();
    let mut slots = [LeaseId(0); SLOTS];
    let (mut commands, mut applied_list) = (Vec::new(), Vec::new());
    for (step, op) in ops.iter().enumerate() {
        let command = to_command(op, &state, &slots, step);
        let before = state.clone();
        let applied = state.apply(command.clone(), step as u64);
        // (6) the revision moves by exactly one iff the core tables changed.
        let bumped = applied.revision != before.revision();
        assert_eq!(applied.revision, state.revision());
        assert!(applied.revision >= before.revision());
        assert_eq!(
            bumped,
            core_view(&before) != core_view(&state),
            "{command:?}"
        );
        if bumped {
            assert_eq!(applied.revision.0, before.revision().0 + 1);
        }
        if let (Op::Grant { slot, .. }, Ok(Reply::LeaseGranted { lease, .. })) =
            (op, &applied.outcome)
        {
            slots[*slot] = *lease;
        }
        model.observe(&command, &applied, bumped);
        model.observe_fenced(&before, &state, &command, &applied, bumped);
        check_proclaim(&before, &state, &command, &applied, bumped);
        check_lock_sets(&state, &command, &applied, bumped);
        model.check_queues(&state);
        check_holders(&state);
        check_lease_end(&before, &state, &command, &applied);
        check_force_release(&before, &state, &command, &applied);
        commands.push(command);
        applied_list.push(applied);
    }
    (state, commands, applied_list)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn guarantees_hold_over_random_sequences(ops in proptest::collection::vec(op(), 1..160)) {
        let (state, commands, applied) = run(&ops);
        // (5) replaying the same commands yields the same state and outcomes.
        let mut replica = State::default();
        let replayed: Vec<Applied> = commands
            .iter()
            .enumerate()
            .map(|(step, c)| replica.apply(c.clone(), step as u64))
            .collect();
        prop_assert_eq!(&replica, &state);
        prop_assert_eq!(&replayed, &applied);
        // Snapshots: the state survives a postcard round trip unchanged.
        let bytes = postcard::to_allocvec(&state).unwrap();
        let mut restored: State = postcard::from_bytes(&bytes).unwrap();
        let sets = postcard::to_allocvec(&state.stored_lock_sets()).unwrap();
        restored.restore_lock_sets(postcard::from_bytes(&sets).unwrap());
        prop_assert_eq!(&restored, &state);
        drain(state.clone());
        let bytes = postcard::to_allocvec(&applied).unwrap();
        let restored: Vec<Applied> = postcard::from_bytes(&bytes).unwrap();
        prop_assert_eq!(restored, applied);
    }
}

/// Guards against a generator that never exercises the interesting paths:
/// a fixed seed-free scenario that must see queue grants, delays and holds.
#[test]
fn the_universe_reaches_queues_delays_and_hold_ends() {
    let ops = vec![
        Op::Grant {
            slot: 0,
            ttl_ok: true,
            request: None,
        },
        Op::Grant {
            slot: 1,
            ttl_ok: true,
            request: None,
        },
        Op::Acquire {
            slot: 0,
            lock: 0,
            wait: false,
            delay: true,
            hold: true,
            request: None,
        },
        Op::Acquire {
            slot: 1,
            lock: 0,
            wait: true,
            delay: false,
            hold: false,
            request: None,
        },
        Op::Expire { slot: 0 },
        Op::EndDelay {
            lock: 0,
            right: true,
        },
        Op::EndHold {
            lock: 0,
            right: true,
        },
    ];
    let (state, _, applied) = run(&ops);
    let effects: Vec<&Effect> = applied.iter().flat_map(|a| &a.effects).collect();
    assert!(effects
        .iter()
        .any(|e| matches!(e, Effect::LockDelayStarted { .. })));
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::LockGranted {
            from_queue: true,
            ..
        }
    )));
    assert_eq!(state.lock_count(), 0);
}

/// The force-release paths the generator relies on: refused with a stale
/// token, freed to the head waiter, and a whole lease revoked.
#[test]
fn the_universe_reaches_force_releases() {
    let grant = |slot| Op::Grant {
        slot,
        ttl_ok: true,
        request: None,
    };
    let acquire = |slot, lock, wait| Op::Acquire {
        slot,
        lock,
        wait,
        delay: false,
        hold: false,
        request: None,
    };
    let force = |right_token, revoke| Op::ForceRelease {
        lock: 0,
        right_token,
        revoke,
    };
    let ops = vec![
        grant(0),
        grant(1),
        acquire(0, 0, false),
        acquire(0, 1, false),
        acquire(1, 0, true),
        force(false, false),
        force(true, false),
        force(true, true),
    ];
    let (state, _, applied) = run(&ops);
    let outcomes: Vec<_> = applied[5..].iter().map(|a| a.outcome.is_ok()).collect();
    assert_eq!(outcomes, [false, true, true]);
    assert!(applied[6].effects.iter().any(|e| matches!(
        e,
        Effect::LockGranted {
            from_queue: true,
            ..
        }
    )));
    assert_eq!(state.force_releases().count(), 2);
    assert_eq!(
        state.lease_count(),
        1,
        "the second holder's lease was revoked"
    );
}

/// The fenced ops reach both an accepted write and a stale refusal: the
/// holder of an older lock cannot overwrite a key a newer token wrote.
#[test]
fn the_universe_reaches_fenced_writes_and_stale_refusals() {
    let grant = |slot| Op::Grant {
        slot,
        ttl_ok: true,
        request: None,
    };
    let acquire = |slot, lock| Op::Acquire {
        slot,
        lock,
        wait: false,
        delay: false,
        hold: false,
        request: None,
    };
    let put = |lock| Op::FencedPut {
        lock,
        key: 0,
        right_token: true,
        request: None,
    };
    let ops = vec![
        grant(0),
        grant(1),
        acquire(0, 0),
        acquire(1, 1),
        put(1),
        put(0),
    ];
    let (state, _, applied) = run(&ops);
    assert!(matches!(applied[4].outcome, Ok(Reply::FencedStored { .. })));
    assert!(matches!(
        applied[5].outcome,
        Err(LockError::StaleToken { .. })
    ));
    assert_eq!(state.fenced_count(), 1);
}
