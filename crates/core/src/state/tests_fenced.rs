//! Unit tests of the fenced store: who may write, the token rule per key,
//! idempotent retries, the limits, and snapshots.

use super::test_support::*;
use crate::{
    limits, Applied, Command, Effect, FencedKey, LockError, LockName, Reply, RequestId, State,
    Token,
};

fn key(raw: &str) -> FencedKey {
    FencedKey::parse(raw).unwrap()
}

/// Applies a fenced put without a request id.
fn put(state: &mut State, lock: &str, token: Token, k: &str, value: &[u8]) -> Applied {
    put_with(state, lock, token, k, value.to_vec(), None)
}

fn put_with(
    state: &mut State,
    lock: &str,
    token: Token,
    k: &str,
    value: Vec<u8>,
    request_id: Option<RequestId>,
) -> Applied {
    state.apply(
        Command::FencedPut {
            lock: name(lock),
            token,
            key: key(k),
            value,
            request_id,
        },
        4,
    )
}

/// The (value, token, lock) stored under `k`.
fn stored(state: &State, k: &str) -> Option<(Vec<u8>, Token, String)> {
    state
        .fenced_get(&key(k))
        .map(|e| (e.value.clone(), e.token, e.lock.to_string()))
}

#[test]
fn the_holder_writes_and_the_revision_moves() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold(&mut state, a, "leader");
    let before = state.revision();
    let applied = put(&mut state, "leader", token, "cfg/leader", b"10.0.0.1:80");
    assert_eq!(applied.outcome, Ok(Reply::FencedStored { token }));
    assert_eq!(applied.revision.0, before.0 + 1);
    assert!(applied.effects.is_empty());
    assert_eq!(
        stored(&state, "cfg/leader"),
        Some((b"10.0.0.1:80".to_vec(), token, "leader".into()))
    );
    assert_eq!(state.fenced_count(), 1);
    assert_eq!(stored(&state, "cfg/other"), None);
    state.check_invariants().unwrap();
}

#[test]
fn equal_token_is_accepted_and_overwrites() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold(&mut state, a, "leader");
    put(&mut state, "leader", token, "k", b"one");
    let again = put(&mut state, "leader", token, "k", b"two");
    assert_eq!(again.outcome, Ok(Reply::FencedStored { token }));
    assert_eq!(stored(&state, "k").unwrap().0, b"two".to_vec());
    state.check_invariants().unwrap();
}

#[test]
fn a_token_that_does_not_hold_the_lock_is_refused_naming_the_holder() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold(&mut state, a, "leader");
    let revision = state.revision();
    let wrong = Token(token.0 + 7);
    let refused = put(&mut state, "leader", wrong, "k", b"x");
    assert_eq!(
        refused.outcome,
        Err(LockError::NotHolder {
            name: name("leader"),
            lease: None,
            token: wrong,
            holder_token: Some(token),
        })
    );
    let text = refused.outcome.unwrap_err().to_string();
    assert!(
        text.ends_with(&format!("holder's token is {token}")),
        "{text}"
    );
    assert!(!text.contains("lease"), "{text}");
    assert_eq!(state.revision(), revision);
    assert_eq!(stored(&state, "k"), None);
}

#[test]
fn a_lock_nobody_holds_or_waits_for_is_no_such_lock() {
    let mut state = State::default();
    let a = grant(&mut state);
    hold(&mut state, a, "jobs/leader");
    let refused = put(&mut state, "jobs/leadr", Token(2), "k", b"x");
    match refused.outcome {
        Err(LockError::NoSuchLock { name: n, nearby }) => {
            assert_eq!(n, name("jobs/leadr"));
            assert_eq!(nearby, vec!["jobs/leader".to_owned()]);
        }
        other => panic!("expected NoSuchLock, got {other:?}"),
    }
}

#[test]
fn after_release_and_reacquire_the_new_holder_wins_and_the_old_is_refused() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let old = hold(&mut state, a, "leader");
    put(&mut state, "leader", old, "k", b"from a");
    release(&mut state, a, "leader", old);
    let new = hold(&mut state, b, "leader");
    assert!(new > old);
    let accepted = put(&mut state, "leader", new, "k", b"from b");
    assert_eq!(accepted.outcome, Ok(Reply::FencedStored { token: new }));
    // The old holder no longer holds the lock: NotHolder, naming the new token.
    let refused = put(&mut state, "leader", old, "k", b"late a");
    assert!(matches!(
        refused.outcome,
        Err(LockError::NotHolder { holder_token: Some(t), .. }) if t == new
    ));
    assert_eq!(
        stored(&state, "k").unwrap(),
        (b"from b".to_vec(), new, "leader".into())
    );
    state.check_invariants().unwrap();
}

#[test]
fn a_current_holder_below_the_keys_highest_token_is_stale() {
    // Tokens are global revisions: the holder of another lock with a higher
    // token may write the key, and then a holder with a lower token may not.
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let low = hold(&mut state, a, "first");
    let high = hold(&mut state, b, "second");
    assert!(low < high);
    put(&mut state, "second", high, "shared", b"high");
    let revision = state.revision();
    let refused = put(&mut state, "first", low, "shared", b"low");
    assert_eq!(
        refused.outcome,
        Err(LockError::StaleToken {
            key: key("shared"),
            lock: LockName::parse("first").unwrap(),
            presented: low,
            highest: high,
            highest_lock: LockName::parse("second").unwrap(),
        })
    );
    let text = refused.outcome.unwrap_err().to_string();
    assert!(text.contains(&format!("stale token {low}")), "{text}");
    assert!(
        text.contains(&format!("token {high} by the holder of lock second")),
        "{text}"
    );
    assert!(!text.contains("passed to a newer holder"), "{text}");
    assert!(
        matches!(
            &refused.effects[..],
            [Effect::FencedPutRefused {
                lease: Some(lease),
                presented,
                highest: Some(highest),
                highest_lock: Some(highest_lock),
                ..
            }] if *lease == a && *presented == low && *highest == high
                && highest_lock.as_str() == "second"
        ),
        "{:?}",
        refused.effects
    );
    assert_eq!(state.revision(), revision);
    assert_eq!(stored(&state, "shared").unwrap().2, "second");
}

#[test]
fn a_retry_with_the_same_request_id_replays_the_first_outcome() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold(&mut state, a, "leader");
    let id = RequestId::parse("put-1").unwrap();
    let first = put_with(&mut state, "leader", token, "k", b"v1".to_vec(), id.clone());
    let revision = state.revision();
    let retry = put_with(&mut state, "leader", token, "k", b"v2".to_vec(), id);
    assert_eq!(retry.outcome, first.outcome);
    assert_eq!(state.revision(), revision);
    assert_eq!(stored(&state, "k").unwrap().0, b"v1".to_vec());
}

#[test]
fn oversize_values_are_refused_by_validation_and_by_apply() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold(&mut state, a, "leader");
    let value = vec![7u8; limits::FENCED_VALUE_BYTES_MAX + 1];
    let command = Command::FencedPut {
        lock: name("leader"),
        token,
        key: key("k"),
        value: value.clone(),
        request_id: None,
    };
    let invalid = command.validate().unwrap_err();
    assert!(invalid.to_string().contains("FENCED_VALUE_BYTES_MAX"));
    let applied = state.apply(command, 5);
    assert_eq!(applied.outcome, Err(invalid));
    let max = put_with(
        &mut state,
        "leader",
        token,
        "k",
        vec![7u8; limits::FENCED_VALUE_BYTES_MAX],
        None,
    );
    assert!(max.outcome.is_ok());
}

#[test]
fn the_number_of_keys_is_bounded_but_existing_keys_stay_writable() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold(&mut state, a, "leader");
    for i in 0..limits::FENCED_KEYS_MAX {
        let applied = put(&mut state, "leader", token, &format!("k{i}"), b"");
        assert!(applied.outcome.is_ok(), "{i}: {:?}", applied.outcome);
    }
    let full = put(&mut state, "leader", token, "one-more", b"");
    assert!(matches!(
        full.outcome,
        Err(LockError::ResourceExhausted { ref limit, .. }) if limit.as_str() == "FENCED_KEYS_MAX"
    ));
    assert!(put(&mut state, "leader", token, "k0", b"again")
        .outcome
        .is_ok());
    assert_eq!(state.fenced_count(), limits::FENCED_KEYS_MAX);
}

#[test]
fn the_total_bytes_are_bounded() {
    let mut state = State::default();
    let a = grant(&mut state);
    let token = hold(&mut state, a, "leader");
    let big = vec![1u8; limits::FENCED_VALUE_BYTES_MAX];
    let fits = limits::FENCED_STORE_BYTES_MAX / (limits::FENCED_VALUE_BYTES_MAX + 8);
    for i in 0..fits {
        let applied = put_with(
            &mut state,
            "leader",
            token,
            &format!("b{i:06}"),
            big.clone(),
            None,
        );
        assert!(applied.outcome.is_ok(), "{i}: {:?}", applied.outcome);
    }
    let over = put_with(&mut state, "leader", token, "b-over", big.clone(), None);
    assert!(matches!(
        over.outcome,
        Err(LockError::ResourceExhausted { ref limit, .. }) if limit.as_str() == "FENCED_STORE_BYTES_MAX"
    ));
    // Shrinking an existing value always fits.
    assert!(put(&mut state, "leader", token, "b000000", b"small")
        .outcome
        .is_ok());
    state.check_invariants().unwrap();
}

#[test]
fn the_store_is_in_snapshots_and_replays_deterministically() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let first = hold(&mut state, a, "leader");
    put(&mut state, "leader", first, "k", &[0, 159, 146, 150]);
    release(&mut state, a, "leader", first);
    let second = hold(&mut state, b, "leader");
    put(&mut state, "leader", second, "k2", b"v");
    let bytes = postcard::to_allocvec(&state).unwrap();
    let restored: State = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(restored, state);
    assert_eq!(restored.fenced_get(&key("k")).unwrap().token, first);
    // A put after the restore sees the restored highest token.
    let mut replica = restored;
    let refused = put(&mut replica, "leader", Token(second.0 - 1), "k2", b"x");
    assert!(refused.outcome.is_err());
}
