//! The assessment on stated instants: every `now` is `t0` plus an offset.

use super::*;
use crate::raft::node::LEADER_LEASE;

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Node 1's view: `state` in term 5 of a cluster with voters 1..=3 and
/// learner 4, knowing `leader`.
fn view(state: ServerState, leader: Option<u64>, ack_ms: Option<u64>) -> RaftView {
    RaftView {
        id: 1,
        state,
        term: 5,
        leader,
        millis_since_quorum_ack: ack_ms,
        voters: BTreeSet::from([1, 2, 3]),
        members: BTreeSet::from([1, 2, 3, 4]),
    }
}

fn leader(ack_ms: Option<u64>) -> RaftView {
    view(ServerState::Leader, Some(1), ack_ms)
}

fn heard(t0: Instant, at: &[(u64, u64)]) -> BTreeMap<u64, Instant> {
    at.iter().map(|&(id, at)| (id, t0 + ms(at))).collect()
}

fn contact(reachable: Option<bool>, last_contact_ms: Option<u64>) -> Contact {
    Contact {
        reachable,
        last_contact: last_contact_ms.map(ms),
    }
}

#[test]
fn a_single_voter_always_has_its_quorum() {
    let t0 = Instant::now();
    let mut only = leader(Some(0));
    only.voters = BTreeSet::from([1]);
    only.members = BTreeSet::from([1]);
    let mut acks = AckTracker::default();
    acks.observe(&only, t0);
    // Its metrics stop changing (always "0 ms"): an hour later it still leads.
    let report = assess(
        &only,
        &acks,
        &BTreeMap::new(),
        t0 + ms(3_600_000),
        LEADER_LEASE,
    );
    assert_eq!(report.standing, Standing::Leader);
    assert!(report.quorum());
    assert_eq!(report.contacts[&1], contact(Some(true), Some(0)));
    let mut unacked = only.clone();
    unacked.millis_since_quorum_ack = None;
    let report = assess(
        &unacked,
        &AckTracker::default(),
        &BTreeMap::new(),
        t0,
        LEADER_LEASE,
    );
    assert_eq!(report.standing, Standing::Leader);
}

#[test]
fn a_leader_loses_its_quorum_when_the_last_ack_passes_the_lease() {
    let t0 = Instant::now();
    let mut acks = AckTracker::default();
    acks.observe(&leader(Some(40)), t0);
    let contacts = heard(t0, &[(2, 0), (3, 0)]);
    let healthy = assess(
        &leader(Some(40)),
        &acks,
        &contacts,
        t0 + ms(500),
        LEADER_LEASE,
    );
    assert_eq!(healthy.standing, Standing::Leader);
    assert_eq!(healthy.contacts[&2], contact(Some(true), Some(500)));
    assert_eq!(healthy.problem(), "");

    // Both followers die at t0: nothing is heard, the ack ages past the lease.
    let now = t0 + LEADER_LEASE - ms(40);
    let report = assess(&leader(Some(40)), &acks, &contacts, now, LEADER_LEASE);
    assert_eq!(
        report.standing,
        Standing::Leader,
        "at the lease: still held"
    );
    let now = t0 + ms(2_260);
    let report = assess(&leader(Some(40)), &acks, &contacts, now, LEADER_LEASE);
    let expected = NoQuorum {
        reached: 1,
        voters: 3,
        needed: 2,
        last_ack: Some(ms(2_300)),
        leading_for: ms(2_260),
    };
    assert_eq!(
        report.standing,
        Standing::LeaderWithoutQuorum(expected.clone())
    );
    assert!(!report.quorum());
    assert_eq!(report.no_quorum(), Some(&expected));
    assert_eq!(
        report.problem(),
        "leader without quorum: this node reaches 1 of 3 voting members (2 needed); \
         last quorum acknowledgement 2.3 s ago"
    );
    assert_eq!(report.contacts[&2], contact(Some(false), Some(2_260)));
    assert_eq!(
        report.contacts[&4],
        contact(Some(false), None),
        "never heard"
    );
}

#[test]
fn reached_counts_the_voters_heard_within_the_lease() {
    let t0 = Instant::now();
    let mut acks = AckTracker::default();
    acks.observe(&leader(Some(0)), t0);
    // Node 2 still answers (its replies do not acknowledge: say it rejects
    // them), node 3 is gone, learner 4 answers but does not count.
    let contacts = heard(t0, &[(2, 1_900), (3, 0), (4, 1_900)]);
    let report = assess(
        &leader(Some(0)),
        &acks,
        &contacts,
        t0 + ms(2_000),
        LEADER_LEASE,
    );
    let Standing::LeaderWithoutQuorum(why) = report.standing else {
        panic!("{report:?}")
    };
    assert_eq!((why.reached, why.voters, why.needed), (2, 3, 2));
}

#[test]
fn a_new_leader_has_the_lease_from_its_election_before_any_ack() {
    let t0 = Instant::now();
    let mut acks = AckTracker::default();
    acks.observe(&leader(None), t0);
    let none = BTreeMap::new();
    assert_eq!(
        assess(&leader(None), &acks, &none, t0 + ms(900), LEADER_LEASE).standing,
        Standing::Leader
    );
    let report = assess(&leader(None), &acks, &none, t0 + ms(1_100), LEADER_LEASE);
    assert_eq!(
        report.problem(),
        "leader without quorum: this node reaches 1 of 3 voting members (2 needed); \
         no quorum acknowledgement in the 1.1 s since it became leader"
    );
    // Metrics of a term the tracker has not seen yet: just elected.
    let mut next = leader(None);
    next.term = 6;
    assert_eq!(
        assess(&next, &acks, &none, t0 + ms(5_000), LEADER_LEASE).standing,
        Standing::Leader
    );
}

#[test]
fn the_tracker_anchors_acks_when_published_and_resets_per_term() {
    let t0 = Instant::now();
    let mut acks = AckTracker::default();
    acks.observe(&leader(Some(100)), t0);
    assert_eq!(acks.in_term(5), Some((t0, Some(t0 - ms(100)))));
    // A later publication with an older ack does not move it back.
    acks.observe(&leader(Some(900)), t0 + ms(200));
    assert_eq!(acks.in_term(5), Some((t0, Some(t0 - ms(100)))));
    acks.observe(&leader(Some(10)), t0 + ms(300));
    assert_eq!(acks.in_term(5), Some((t0, Some(t0 + ms(290)))));
    // A new term starts over; stepping down forgets it all.
    let mut next = leader(None);
    next.term = 6;
    acks.observe(&next, t0 + ms(400));
    assert_eq!(acks.in_term(6), Some((t0 + ms(400), None)));
    assert_eq!(acks.in_term(5), None);
    acks.observe(&view(ServerState::Follower, Some(2), None), t0 + ms(500));
    assert_eq!(acks.in_term(6), None);
}

#[test]
fn a_follower_has_a_quorum_while_it_hears_its_leader_and_views_only_it() {
    let t0 = Instant::now();
    let follower = view(ServerState::Follower, Some(2), None);
    let acks = AckTracker::default();
    let contacts = heard(t0, &[(2, 0), (3, 0)]);
    let report = assess(&follower, &acks, &contacts, t0 + ms(300), LEADER_LEASE);
    assert_eq!(report.standing, Standing::Following { leader: 2 });
    assert!(report.quorum());
    assert_eq!(report.contacts[&2], contact(Some(true), Some(300)));
    assert_eq!(report.contacts[&3], contact(None, None), "no view of 3");
    assert_eq!(report.contacts[&1], contact(Some(true), Some(0)));

    let report = assess(&follower, &acks, &contacts, t0 + ms(4_000), LEADER_LEASE);
    assert!(!report.quorum());
    assert_eq!(report.problem(), "leader node 2 not heard from for 4.0 s");
    assert_eq!(report.contacts[&2], contact(Some(false), Some(4_000)));

    let lost = view(ServerState::Follower, None, None);
    let report = assess(&lost, &acks, &contacts, t0, LEADER_LEASE);
    assert_eq!(report.problem(), "no leader known");
    assert!(report
        .contacts
        .values()
        .skip(1)
        .all(|c| c.reachable.is_none()));
}

#[test]
fn a_candidate_views_the_voters() {
    let t0 = Instant::now();
    let candidate = view(ServerState::Candidate, None, None);
    let contacts = heard(t0, &[(2, 0)]);
    let report = assess(
        &candidate,
        &AckTracker::default(),
        &contacts,
        t0 + ms(100),
        LEADER_LEASE,
    );
    assert!(!report.quorum());
    assert_eq!(report.contacts[&2], contact(Some(true), Some(100)));
    assert_eq!(report.contacts[&3], contact(Some(false), None));
    assert_eq!(
        report.contacts[&4],
        contact(None, None),
        "learners get no votes"
    );
}

#[test]
fn an_unconfirmed_read_names_who_answered() {
    let t0 = Instant::now();
    let mut acks = AckTracker::default();
    acks.observe(&leader(Some(0)), t0);
    let why = unconfirmed(&leader(Some(0)), &acks, 1, t0 + ms(400));
    assert_eq!(
        why.to_string(),
        "this node reaches 1 of 3 voting members (2 needed); last quorum acknowledgement 0.4 s ago"
    );
}
