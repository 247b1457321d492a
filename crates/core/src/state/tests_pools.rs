//! Unit tests of semaphores and read-write locks in the state: asks,
//! releases, waits that end, lease ends, the namespace they share with
//! locks, and their place in a snapshot.

use super::test_support::*;
use crate::outcome::{FreeCause, WaitEndCause};
use crate::{
    AcquirePermits, Applied, Command, Effect, LeaseId, LockError, PermitAsk, Pool, PoolKind, Reply,
    RequestId, State, Token,
};

fn ask(state: &mut State, lease: LeaseId, lock: &str, ask: PermitAsk, wait_ms: u64) -> Applied {
    let acquire = AcquirePermits {
        lease,
        name: name(lock),
        ask,
        wait_ms,
        request_id: None,
        fenced: false,
    };
    state.apply(Command::AcquirePermits(acquire), 7)
}

fn semaphore(permits: u32, count: u32) -> PermitAsk {
    PermitAsk::Semaphore { permits, count }
}

fn release_permits(state: &mut State, lease: LeaseId, lock: &str, token: Token) -> Applied {
    let release = Command::Release {
        lease,
        name: name(lock),
        token,
        request_id: None,
    };
    state.apply(release, 8)
}

fn token_of(applied: &Applied) -> Token {
    match applied.outcome {
        Ok(Reply::Acquired { token, .. }) => token,
        ref other => panic!("not granted: {other:?}"),
    }
}

/// The leases granted by `applied`, from the queue or not.
fn grants(applied: &Applied) -> Vec<(LeaseId, Token, bool)> {
    let granted = applied.effects.iter().filter_map(|effect| match effect {
        Effect::LockGranted {
            lease,
            token,
            from_queue,
            ..
        } => Some((*lease, *token, *from_queue)),
        _ => None,
    });
    granted.collect()
}

#[test]
fn a_semaphore_grants_its_permits_then_queues_and_a_release_lets_the_head_in() {
    let mut state = State::default();
    let (a, b, c) = (grant(&mut state), grant(&mut state), grant(&mut state));
    let first = ask(&mut state, a, "db/slots", semaphore(3, 2), 0);
    let second = ask(&mut state, b, "db/slots", semaphore(3, 1), 0);
    assert!(token_of(&second) > token_of(&first));
    assert_eq!(grants(&first), [(a, token_of(&first), false)]);
    let busy = ask(&mut state, c, "db/slots", semaphore(3, 1), 0);
    assert_eq!(
        busy.outcome,
        Err(LockError::Busy {
            name: name("db/slots"),
            holder_token: Some(token_of(&second))
        })
    );
    assert_eq!(busy.revision, second.revision, "a refusal moves nothing");
    let queued = ask(&mut state, c, "db/slots", semaphore(3, 1), 5_000);
    assert_eq!(queued.outcome, Ok(Reply::Queued { position: 1 }));
    assert!(matches!(
        queued.effects[..],
        [Effect::WaiterQueued { wait_ms: 5_000, .. }]
    ));
    let released = release_permits(&mut state, b, "db/slots", token_of(&second));
    assert_eq!(released.outcome, Ok(Reply::Released));
    assert!(matches!(
        released.effects[0],
        Effect::LockFreed {
            cause: FreeCause::Released,
            acquired_unix_ms: 7,
            ..
        }
    ));
    assert_eq!(grants(&released), [(c, Token(released.revision.0), true)]);
    state.check_invariants().unwrap();
}

#[test]
fn a_read_write_lock_shares_with_readers_and_lets_a_writer_in_alone() {
    let mut state = State::default();
    let (r1, r2, w, r3) = (
        grant(&mut state),
        grant(&mut state),
        grant(&mut state),
        grant(&mut state),
    );
    let t1 = token_of(&ask(&mut state, r1, "cfg", PermitAsk::Shared, 0));
    let t2 = token_of(&ask(&mut state, r2, "cfg", PermitAsk::Shared, 0));
    let writer = ask(&mut state, w, "cfg", PermitAsk::Exclusive, 60_000);
    assert_eq!(writer.outcome, Ok(Reply::Queued { position: 1 }));
    let reader = ask(&mut state, r3, "cfg", PermitAsk::Shared, 60_000);
    assert_eq!(
        reader.outcome,
        Ok(Reply::Queued { position: 2 }),
        "no reader jumps a writer"
    );
    assert!(grants(&release_permits(&mut state, r1, "cfg", t1)).is_empty());
    let last_reader_out = release_permits(&mut state, r2, "cfg", t2);
    let [(lease, writer_token, true)] = grants(&last_reader_out)[..] else {
        panic!("the writer is granted: {last_reader_out:?}");
    };
    assert_eq!(lease, w);
    assert!(
        writer_token > t2,
        "the writer's token is above every earlier holder's"
    );
    let writer_out = release_permits(&mut state, w, "cfg", writer_token);
    assert_eq!(grants(&writer_out).len(), 1, "the reader behind");
    let pool = state.pool(&name("cfg")).expect("held by the reader");
    assert_eq!(pool.pool.kind, PoolKind::ReadWrite);
    state.check_invariants().unwrap();
}

#[test]
fn a_name_is_one_thing_at_a_time_and_a_semaphore_one_size() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    hold(&mut state, a, "x");
    let as_semaphore = ask(&mut state, b, "x", semaphore(2, 1), 0);
    let Err(LockError::InvalidArgument { field, reason, .. }) = as_semaphore.outcome else {
        panic!("refused: {as_semaphore:?}");
    };
    assert_eq!(field, "name");
    assert!(reason.contains("x is a lock"), "{reason}");
    ask(&mut state, a, "s", semaphore(2, 1), 0);
    let as_lock = acquire(&mut state, b, "s", 0);
    assert!(
        matches!(as_lock.outcome, Err(LockError::InvalidArgument { .. })),
        "{as_lock:?}"
    );
    let Err(error) = ask(&mut state, b, "s", semaphore(3, 1), 0).outcome else {
        panic!("another size is refused");
    };
    assert_eq!(error.to_string(), "invalid permits: semaphore s has 2 permits, not 3: ask with a limit of 2, or use another name");
    let Err(error) = ask(&mut state, b, "s", PermitAsk::Shared, 0).outcome else {
        panic!("another kind is refused");
    };
    assert!(
        error
            .to_string()
            .contains("s is a semaphore now, not a read-write lock"),
        "{error}"
    );
    let wrong_token = release(&mut state, a, "s", Token(1));
    assert!(
        matches!(wrong_token.outcome, Err(LockError::NotHolder { .. })),
        "{wrong_token:?}"
    );
    assert_eq!(
        state.failed_releases().count(),
        1,
        "remembered for diagnosis, as a lock's"
    );
    state.check_invariants().unwrap();
}

#[test]
fn an_ended_lease_frees_exactly_its_permits_and_leaves_its_queues() {
    let mut state = State::default();
    let (a, b, c) = (grant(&mut state), grant(&mut state), grant(&mut state));
    ask(&mut state, a, "s", semaphore(3, 2), 0);
    ask(&mut state, b, "s", semaphore(3, 1), 0);
    ask(&mut state, a, "t", semaphore(1, 1), 0);
    ask(&mut state, b, "t", semaphore(1, 1), 10_000);
    ask(&mut state, c, "s", semaphore(3, 2), 10_000);
    let ended = state.apply(
        Command::RevokeLease {
            lease: a,
            request_id: None,
        },
        9,
    );
    let token = Token(ended.revision.0);
    let mut got = grants(&ended);
    got.sort();
    assert_eq!(
        got,
        [(b, token, true), (c, token, true)],
        "t to b, two of s to c"
    );
    let pool = state.pool(&name("s")).unwrap().pool;
    assert_eq!((pool.permits.held(), pool.permits.free()), (3, 0));
    let c_ended = state.apply(
        Command::RevokeLease {
            lease: c,
            request_id: None,
        },
        9,
    );
    let freed: Vec<_> = c_ended
        .effects
        .iter()
        .filter(|e| {
            matches!(
                e,
                Effect::LockFreed {
                    cause: FreeCause::LeaseRevoked,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(freed.len(), 1);
    assert_eq!(
        state.pool(&name("s")).unwrap().pool.permits.free(),
        2,
        "b's one stays held"
    );
    state.check_invariants().unwrap();
}

#[test]
fn a_timed_out_head_lets_the_asks_behind_it_in() {
    let mut state = State::default();
    let (a, b, c) = (grant(&mut state), grant(&mut state), grant(&mut state));
    ask(&mut state, a, "s", semaphore(2, 1), 0);
    ask(&mut state, b, "s", semaphore(2, 2), 1_000);
    let small = ask(&mut state, c, "s", semaphore(2, 1), 1_000);
    assert_eq!(
        small.outcome,
        Ok(Reply::Queued { position: 2 }),
        "behind the big ask"
    );
    let timed_out = state.apply(
        Command::TimeOutWaits {
            waits: vec![(b, name("s"))],
        },
        9,
    );
    assert!(matches!(
        timed_out.effects[0],
        Effect::WaiterRemoved {
            cause: WaitEndCause::TimedOut,
            ..
        }
    ));
    assert_eq!(grants(&timed_out), [(c, Token(timed_out.revision.0), true)]);
    let cancel = Command::CancelWait {
        lease: c,
        name: name("s"),
        timed_out: false,
    };
    let late = state.apply(cancel, 9);
    assert_eq!(
        late.outcome,
        Ok(Reply::WaitEnded {
            holder_token: Some(Token(timed_out.revision.0))
        }),
        "granted before the cancel applied"
    );
    state.check_invariants().unwrap();
}

#[test]
fn a_retried_ask_finds_its_grant_and_a_wrong_release_is_refused() {
    let mut state = State::default();
    let a = grant(&mut state);
    let request = AcquirePermits {
        lease: a,
        name: name("s"),
        ask: semaphore(2, 2),
        wait_ms: 0,
        request_id: RequestId::parse("r-1").unwrap(),
        fenced: false,
    };
    let first = state.apply(Command::AcquirePermits(request.clone()), 7);
    let again = state.apply(Command::AcquirePermits(request), 7);
    assert_eq!(again.outcome, first.outcome);
    assert_eq!(again.revision, first.revision);
    let wrong = release_permits(&mut state, a, "s", Token(token_of(&first).0 + 1));
    assert!(
        matches!(wrong.outcome, Err(LockError::NotHolder { .. })),
        "{wrong:?}"
    );
    let missing = release_permits(&mut state, a, "nope", Token(1));
    assert!(matches!(missing.outcome, Err(LockError::NoSuchLock { .. })));
    assert!(release_permits(&mut state, a, "s", token_of(&first))
        .outcome
        .is_ok());
    assert!(state.pool(&name("s")).is_none(), "an idle pool is dropped");
    state.check_invariants().unwrap();
}

#[test]
fn pools_are_stored_after_the_state_and_restored_with_their_members() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    ask(&mut state, a, "s", semaphore(1, 1), 0);
    ask(&mut state, b, "s", semaphore(1, 1), 10_000);
    ask(&mut state, b, "rw", PermitAsk::Shared, 0);
    let state_bytes = postcard::to_allocvec(&state).unwrap();
    let pool_bytes = postcard::to_allocvec(&state.stored_pools()).unwrap();
    let mut read: State = postcard::from_bytes(&state_bytes).unwrap();
    assert!(
        read.pools().next().is_none(),
        "the state's own fields carry no pools"
    );
    let pools: Vec<(crate::LockName, Pool)> = postcard::from_bytes(&pool_bytes).unwrap();
    read.restore_pools(pools);
    read.settle_decoded();
    assert_eq!(read, state);
    read.check_invariants().unwrap();
}

#[test]
fn grants_and_waits_in_pools_count_against_the_lease_limit_with_its_locks() {
    let mut state = State::default();
    let a = grant(&mut state);
    for i in 0..crate::limits::LOCKS_PER_LEASE_MAX - 1 {
        hold(&mut state, a, &format!("l/{i}"));
    }
    assert!(ask(&mut state, a, "s", semaphore(2, 1), 0).outcome.is_ok());
    let one_more_lock = acquire(&mut state, a, "l/last", 0);
    let one_more_pool = ask(&mut state, a, "t", PermitAsk::Shared, 0);
    for refused in [one_more_lock, one_more_pool] {
        assert!(
            matches!(
                refused.outcome,
                Err(LockError::ResourceExhausted {
                    limit: crate::Limit::LocksPerLeaseMax,
                    ..
                })
            ),
            "{refused:?}"
        );
    }
    let again = ask(&mut state, a, "s", semaphore(2, 1), 0);
    assert!(matches!(
        again.outcome,
        Ok(Reply::Acquired {
            already_held: true,
            ..
        })
    ));
    state.check_invariants().unwrap();
}

#[test]
fn what_a_lease_holds_lists_its_pool_grants_after_its_locks() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let lock = hold(&mut state, a, "m/lock");
    let shared = token_of(&ask(&mut state, a, "a/rw", PermitAsk::Shared, 0));
    ask(&mut state, b, "a/rw", PermitAsk::Exclusive, 10_000);
    ask(&mut state, a, "z/sem", semaphore(1, 1), 0);
    ask(&mut state, a, "y/sem", semaphore(1, 1), 0);
    let held: Vec<(String, Token)> = state
        .held_by(a)
        .map(|(name, token)| (name.to_string(), token))
        .collect();
    let names: Vec<&str> = held.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["m/lock", "a/rw", "y/sem", "z/sem"]);
    assert_eq!((held[0].1, held[1].1), (lock, shared));
    assert!(state.held_by(b).next().is_none(), "a wait is not a hold");
    let renewed = state.apply(Command::KeepAlive { lease: a }, 9);
    assert!(matches!(
        renewed.effects[..],
        [Effect::LeaseRenewed { holds: 4, .. }]
    ));
    let ended = state.apply(
        Command::RevokeLease {
            lease: a,
            request_id: None,
        },
        9,
    );
    let Ok(Reply::LeaseEnded { released }) = ended.outcome else {
        panic!("{ended:?}");
    };
    let released: Vec<&str> = released.iter().map(|name| name.as_str()).collect();
    assert_eq!(released, ["m/lock", "a/rw", "y/sem", "z/sem"]);
}

#[test]
fn a_force_release_frees_one_grant_if_fenced_or_allowed_and_lets_the_head_in() {
    let mut state = State::default();
    let (a, b, c) = (grant(&mut state), grant(&mut state), grant(&mut state));
    let fenced = AcquirePermits {
        lease: a,
        name: name("s"),
        ask: semaphore(2, 1),
        wait_ms: 0,
        request_id: None,
        fenced: true,
    };
    let token = token_of(&state.apply(Command::AcquirePermits(fenced), 7));
    let unfenced = token_of(&ask(&mut state, b, "s", semaphore(2, 1), 0));
    ask(&mut state, c, "s", semaphore(2, 1), 10_000);
    let force = |expected_token, allow_unfenced| Command::ForceRelease {
        name: name("s"),
        expected_token,
        reason: "INC-1".into(),
        caller: "op@host".into(),
        allow_unfenced,
        revoke_lease: false,
    };
    let refused = state.apply(force(unfenced, false), 9);
    assert!(
        matches!(refused.outcome, Err(LockError::Unfenced { .. })),
        "{refused:?}"
    );
    let wrong = state.apply(force(Token(token.0 + 100), true), 9);
    assert!(
        matches!(wrong.outcome, Err(LockError::NotHolder { .. })),
        "{wrong:?}"
    );
    let forced = state.apply(force(token, false), 9);
    let Ok(Reply::ForceReleased { lease, .. }) = forced.outcome else {
        panic!("{forced:?}");
    };
    assert_eq!(lease, a);
    assert!(forced
        .effects
        .iter()
        .any(|e| matches!(e, Effect::LockFreed { forced: Some(_), lease, .. } if *lease == a)));
    assert_eq!(
        grants(&forced),
        [(c, Token(forced.revision.0), true)],
        "the head is let in"
    );
    assert_eq!(state.force_releases().count(), 1);
    assert!(
        state.held_by(a).next().is_none(),
        "the lease lives on without its grant"
    );
    state.check_invariants().unwrap();
}
