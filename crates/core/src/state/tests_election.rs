//! Unit tests of leader election in the state: a campaign is an acquire
//! that carries a value, the epoch is the grant's token, and only the
//! leader of the current epoch may proclaim.

use super::test_support::*;
use crate::election::VALUE_KEY;
use crate::{
    limits, AcquirePermits, Applied, Command, Effect, LeaseId, LockError, PermitAsk, Proclaim,
    Reply, RequestId, State, Token,
};

/// Applies a campaign for `election` with `value`, waiting up to 60 s.
fn campaign(state: &mut State, lease: LeaseId, election: &str, value: &str) -> Applied {
    let mut acquire = args(lease, election, 60_000);
    acquire.metadata.insert(VALUE_KEY.into(), value.into());
    state.apply(Command::Acquire(acquire), 10)
}

fn proclaim(
    state: &mut State,
    lease: LeaseId,
    election: &str,
    token: Token,
    value: &str,
) -> Applied {
    proclaim_once(state, lease, election, token, value, None)
}

/// A proclaim with `request_id` (a retry carries the same one).
fn proclaim_once(
    state: &mut State,
    lease: LeaseId,
    election: &str,
    token: Token,
    value: &str,
    request_id: Option<RequestId>,
) -> Applied {
    let proclaim = Proclaim {
        lease,
        name: name(election),
        token,
        value: value.into(),
        request_id,
    };
    state.apply(Command::Proclaim(proclaim), 11)
}

/// The election's leader: its lease, epoch and value.
fn leader(state: &State, election: &str) -> Option<(LeaseId, Token, String)> {
    let lock = state.lock(&name(election))?;
    let holder = lock.holder.as_ref()?;
    let value = holder.metadata.get(VALUE_KEY).cloned().unwrap_or_default();
    Some((holder.lease, holder.token, value))
}

#[test]
fn the_first_campaign_leads_and_the_next_leads_after_it_with_a_higher_epoch() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let first = campaign(&mut state, a, "svc", "10.0.0.1:80");
    let Ok(Reply::Acquired { token: epoch, .. }) = first.outcome else {
        panic!("{first:?}");
    };
    assert!(matches!(
        &first.effects[..],
        [Effect::LockGranted { value: Some(v), .. }] if v == "10.0.0.1:80"
    ));
    assert_eq!(
        campaign(&mut state, b, "svc", "10.0.0.2:80").outcome,
        Ok(Reply::Queued { position: 1 })
    );
    assert_eq!(
        leader(&state, "svc"),
        Some((a, epoch, "10.0.0.1:80".into()))
    );

    let ended = state.apply(
        Command::ExpireLease {
            lease: a,
            renewals: 0,
        },
        12,
    );
    let (lease, next, value) = leader(&state, "svc").expect("the queued campaign leads");
    assert_eq!((lease, value.as_str()), (b, "10.0.0.2:80"));
    assert!(next > epoch, "epochs increase: {next:?} after {epoch:?}");
    assert!(ended.effects.iter().any(|e| matches!(
        e,
        Effect::LockGranted { lease, value: Some(v), .. } if *lease == b && v == "10.0.0.2:80"
    )));
}

#[test]
fn only_the_leader_of_the_current_epoch_proclaims() {
    let mut state = State::default();
    let (a, b) = (grant(&mut state), grant(&mut state));
    let epoch = hold(&mut state, a, "svc");
    campaign(&mut state, b, "svc", "b");

    let before = state.revision();
    let id = RequestId::parse("p-1").unwrap();
    let said = proclaim_once(&mut state, a, "svc", epoch, "a, now at :81", id.clone());
    assert_eq!(said.outcome, Ok(Reply::Proclaimed { token: epoch }));
    assert_eq!(said.revision.0, before.0 + 1, "a proclaim is a change");
    assert_eq!(
        said.effects,
        vec![Effect::Proclaimed {
            name: name("svc"),
            lease: a,
            token: epoch,
            value: "a, now at :81".into(),
            owner: String::new(),
        }]
    );
    assert_eq!(leader(&state, "svc").unwrap().2, "a, now at :81");
    // The retry of a proclaim whose reply was lost hears the same answer.
    let again = proclaim_once(&mut state, a, "svc", epoch, "a, now at :81", id);
    assert_eq!(again.outcome, said.outcome);
    assert_eq!(again.revision, said.revision);

    // A waiting campaigner is not the leader.
    let refused = proclaim(&mut state, b, "svc", epoch, "b");
    assert!(matches!(
        refused.outcome,
        Err(LockError::NotHolder { holder_token: Some(t), .. }) if t == epoch
    ));
    // The leader of an earlier epoch (the same lease, led before) neither.
    release(&mut state, a, "svc", epoch);
    let b_epoch = leader(&state, "svc").unwrap().1;
    release(&mut state, b, "svc", b_epoch);
    let later = hold(&mut state, a, "svc");
    let stale = proclaim(&mut state, a, "svc", epoch, "stale");
    assert!(matches!(
        stale.outcome,
        Err(LockError::NotHolder { holder_token: Some(t), .. }) if t == later
    ));
    assert_eq!(leader(&state, "svc").unwrap().2, "");
    assert_eq!(
        state.revision(),
        stale.revision,
        "a refusal changes nothing"
    );
}

#[test]
fn a_proclaim_is_refused_on_no_election_a_semaphore_and_an_oversize_value() {
    let mut state = State::default();
    let a = grant(&mut state);
    let missing = proclaim(&mut state, a, "nobody", Token(1), "v");
    assert!(matches!(missing.outcome, Err(LockError::NoSuchLock { .. })));

    let permits = AcquirePermits {
        lease: a,
        name: name("pool"),
        ask: PermitAsk::Semaphore {
            permits: 2,
            count: 1,
        },
        wait_ms: 0,
        request_id: None,
        fenced: false,
    };
    let granted = state.apply(Command::AcquirePermits(permits), 3);
    let Ok(Reply::Acquired { token, .. }) = granted.outcome else {
        panic!("{granted:?}");
    };
    let refused = proclaim(&mut state, a, "pool", token, "v");
    let Err(error) = refused.outcome else {
        panic!("{refused:?}")
    };
    assert!(error.to_string().contains("is a semaphore"), "{error}");

    let epoch = hold(&mut state, a, "svc");
    let huge = "x".repeat(limits::LABEL_BYTES_MAX);
    let refused = proclaim(&mut state, a, "svc", epoch, &huge);
    let Err(error) = refused.outcome else {
        panic!("{refused:?}")
    };
    assert!(
        matches!(
            &error,
            LockError::InvalidArgument {
                limit: Some(limits::Limit::LabelBytesMax),
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("LABEL_BYTES_MAX"), "{error}");
}
