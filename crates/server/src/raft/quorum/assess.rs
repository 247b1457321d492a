//! The quorum assessment, a pure function of four inputs: what openraft's
//! metrics say ([`RaftView`]), when a quorum last acknowledged this node as
//! leader ([`AckTracker`]), when each member was last heard from
//! ([`super::super::contacts`]), and now. No clock is read here, so tests
//! state every instant.
//!
//! A leader has its quorum while a quorum acknowledged it within the
//! leader lease (a one-voter cluster always has it); any other node
//! counts as having one while it follows a leader it heard from within the
//! lease. A member is reachable if heard from within the lease; a node only
//! has a view of the members it exchanges messages with: a leader of every
//! member, a candidate of the voters, a follower of its leader only.

use openraft::{BasicNode, RaftMetrics, ServerState};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;

/// What the assessment needs from openraft's metrics, copied out (a borrow
/// of the metrics channel must never be held across an await).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaftView {
    /// This node.
    pub id: u64,
    pub state: ServerState,
    pub term: u64,
    /// The leader this node knows (itself only while it leads).
    pub leader: Option<u64>,
    /// openraft's age of the last quorum acknowledgement, when it published
    /// these metrics (`None`: not leader, or not acknowledged yet).
    pub millis_since_quorum_ack: Option<u64>,
    /// The voters (of both configurations during a joint change).
    pub voters: BTreeSet<u64>,
    /// Every member, voters and learners.
    pub members: BTreeSet<u64>,
}

impl RaftView {
    /// The view in `metrics`.
    pub fn of(metrics: &RaftMetrics<u64, BasicNode>) -> RaftView {
        let membership = metrics.membership_config.membership();
        RaftView {
            id: metrics.id,
            state: metrics.state,
            term: metrics.current_term,
            // A leader that removed itself keeps its own vote; it leads nothing.
            leader: metrics
                .current_leader
                .filter(|id| *id != metrics.id || metrics.state == ServerState::Leader),
            millis_since_quorum_ack: metrics.millis_since_quorum_ack,
            voters: membership.voter_ids().collect(),
            members: membership.nodes().map(|(id, _)| *id).collect(),
        }
    }

    fn leads(&self) -> bool {
        self.state == ServerState::Leader
    }

    /// A majority of the voters.
    fn needed(&self) -> usize {
        self.voters.len() / 2 + 1
    }
}

/// When a quorum last acknowledged this node as leader, as an instant on
/// this node's clock. openraft reports an age as of the moment it published
/// its metrics; [`observe`](Self::observe) anchors it when the metrics
/// change, so between publications the age keeps growing (a core that
/// stopped publishing ages too, instead of looking fresh).
#[derive(Clone, Debug, Default)]
pub struct AckTracker {
    /// The term this node leads in, and when it was first seen leading in it.
    leading: Option<(u64, Instant)>,
    /// When a quorum last acknowledged it in that term.
    acked_at: Option<Instant>,
}

impl AckTracker {
    /// Takes in freshly published metrics, seen at `now`.
    pub fn observe(&mut self, view: &RaftView, now: Instant) {
        if !view.leads() {
            *self = AckTracker::default();
            return;
        }
        if self.leading.map(|(term, _)| term) != Some(view.term) {
            *self = AckTracker {
                leading: Some((view.term, now)),
                acked_at: None,
            };
        }
        let acked = view
            .millis_since_quorum_ack
            .and_then(|ms| now.checked_sub(Duration::from_millis(ms)));
        // Acknowledgements only move forward within a term.
        self.acked_at = self.acked_at.max(acked);
    }

    /// (since when it leads, the last acknowledgement) if it leads in `term`.
    pub(super) fn in_term(&self, term: u64) -> Option<(Instant, Option<Instant>)> {
        match self.leading {
            Some((leading_term, since)) if leading_term == term => Some((since, self.acked_at)),
            _ => None,
        }
    }
}

/// Why a leader has no quorum: the sentence after "no quorum: ".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoQuorum {
    /// Voters this node heard from within the lease, itself included.
    pub reached: usize,
    /// Voters in the membership.
    pub voters: usize,
    /// A majority of them.
    pub needed: usize,
    /// Time since a quorum last acknowledged it (`None`: not in this term).
    pub last_ack: Option<Duration>,
    /// Time since it was first seen leading in this term.
    pub leading_for: Duration,
}

impl fmt::Display for NoQuorum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "this node reaches {} of {} voting members ({} needed); ",
            self.reached, self.voters, self.needed
        )?;
        match self.last_ack {
            Some(age) => write!(f, "last quorum acknowledgement {} ago", seconds(age)),
            None => write!(
                f,
                "no quorum acknowledgement in the {} since it became leader",
                seconds(self.leading_for)
            ),
        }
    }
}

/// `2.3 s`.
pub fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

/// Where this node stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// It leads, acknowledged by a quorum within the lease (or it is the
    /// only voter).
    Leader,
    /// It leads, and no quorum acknowledged it within the lease.
    LeaderWithoutQuorum(NoQuorum),
    /// It follows `leader`, heard from within the lease.
    Following { leader: u64 },
    /// It knows no leader (`leader` is `None`: an election, or shut down),
    /// or has not heard from the one it knows within the lease
    /// (`last_heard`: how long ago it did, `None` if never).
    LeaderUnreachable {
        leader: Option<u64>,
        last_heard: Option<Duration>,
    },
}

/// One member as this node sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contact {
    /// Heard from within the lease; `None` where this node has no view of it.
    pub reachable: Option<bool>,
    /// Time since it was last heard from; `None` where this node has no
    /// view of it or never heard from it. Zero for this node itself.
    pub last_contact: Option<Duration>,
}

/// The assessment at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuorumReport {
    pub standing: Standing,
    /// Every member (this node included) as this node sees it.
    pub contacts: BTreeMap<u64, Contact>,
}

impl QuorumReport {
    /// A leader with its quorum, or a follower of a reachable leader.
    pub fn quorum(&self) -> bool {
        matches!(self.standing, Standing::Leader | Standing::Following { .. })
    }

    /// Why this node leads without a quorum, if it does.
    pub fn no_quorum(&self) -> Option<&NoQuorum> {
        match &self.standing {
            Standing::LeaderWithoutQuorum(why) => Some(why),
            _ => None,
        }
    }

    /// One sentence on what this node lacks ("" when [`quorum`](Self::quorum)).
    pub fn problem(&self) -> String {
        match &self.standing {
            Standing::Leader | Standing::Following { .. } => String::new(),
            Standing::LeaderWithoutQuorum(why) => format!("leader without quorum: {why}"),
            Standing::LeaderUnreachable { leader: None, .. } => "no leader known".into(),
            Standing::LeaderUnreachable {
                leader: Some(leader),
                last_heard: Some(age),
            } => format!("leader node {leader} not heard from for {}", seconds(*age)),
            Standing::LeaderUnreachable {
                leader: Some(leader),
                last_heard: None,
            } => format!("leader node {leader} never heard from"),
        }
    }
}

/// Assesses `view` at `now`, given the acknowledgements `acks` has seen,
/// when each member was last `heard`, and the leader `lease`.
pub fn assess(
    view: &RaftView,
    acks: &AckTracker,
    heard: &BTreeMap<u64, Instant>,
    now: Instant,
    lease: Duration,
) -> QuorumReport {
    let age = |id: u64| heard.get(&id).map(|at| now.saturating_duration_since(*at));
    let fresh = |id: u64| id == view.id || age(id).is_some_and(|age| age <= lease);
    let standing = if view.leads() {
        leader_standing(view, acks, now, lease, fresh)
    } else {
        match view.leader {
            Some(leader) if fresh(leader) => Standing::Following { leader },
            leader => Standing::LeaderUnreachable {
                leader,
                last_heard: leader.and_then(age),
            },
        }
    };
    let viewed = |id: u64| match view.state {
        ServerState::Leader => true,
        ServerState::Candidate => view.voters.contains(&id),
        _ => view.leader == Some(id),
    };
    let contacts = view
        .members
        .iter()
        .map(|&id| {
            let contact = if id == view.id {
                Contact {
                    reachable: Some(true),
                    last_contact: Some(Duration::ZERO),
                }
            } else if viewed(id) {
                Contact {
                    reachable: Some(fresh(id)),
                    last_contact: age(id),
                }
            } else {
                Contact {
                    reachable: None,
                    last_contact: None,
                }
            };
            (id, contact)
        })
        .collect();
    QuorumReport { standing, contacts }
}

fn leader_standing(
    view: &RaftView,
    acks: &AckTracker,
    now: Instant,
    lease: Duration,
    fresh: impl Fn(u64) -> bool,
) -> Standing {
    // openraft counts the leader's own clock for a single voter: its
    // acknowledgement is always "now", so it always has its quorum.
    if view.voters.len() == 1 && view.voters.contains(&view.id) {
        return Standing::Leader;
    }
    // Metrics newer than the tracker: it has just been elected, by a quorum.
    let (since, acked_at) = acks.in_term(view.term).unwrap_or((now, None));
    let last_ack = acked_at.map(|at| now.saturating_duration_since(at));
    let leading_for = now.saturating_duration_since(since);
    if last_ack.unwrap_or(leading_for) <= lease {
        return Standing::Leader;
    }
    Standing::LeaderWithoutQuorum(NoQuorum {
        reached: view.voters.iter().filter(|id| fresh(**id)).count(),
        voters: view.voters.len(),
        needed: view.needed(),
        last_ack,
        leading_for,
    })
}

/// The no-quorum sentence for a read a leader could not confirm: only
/// `acked` voters (itself included) answered its heartbeat.
pub fn unconfirmed(view: &RaftView, acks: &AckTracker, acked: usize, now: Instant) -> NoQuorum {
    let (since, acked_at) = acks.in_term(view.term).unwrap_or((now, None));
    NoQuorum {
        reached: acked,
        voters: view.voters.len(),
        needed: view.needed(),
        last_ack: acked_at.map(|at| now.saturating_duration_since(at)),
        leading_for: now.saturating_duration_since(since),
    }
}

#[cfg(test)]
#[path = "assess_tests.rs"]
mod tests;
