//! Who leads each election, change by change, for `Watch.Observe`.
//!
//! An election is a lock (see `leasehold_core::election`); its leader
//! changes when the lock is granted, freed or proclaimed. Observers must
//! see every change, including a gap with no leader, and must not see a
//! gap that never was: a release that hands the lock to the next waiter
//! frees and grants it in one command, and the leader went from one to the
//! next with nobody in between. So the watch takes the effects of one
//! command at a time and sends, per election it touched, the leader the
//! command left (never one step inside it). Effects are processed only
//! while someone observes: a grant storm with no observer pays one atomic
//! load per command.

use leasehold_core::{Effect, LeaseId, LockName, Token};
use std::sync::Arc;
use tokio::sync::broadcast;

/// Changes buffered for observers before the slowest one is told it fell
/// behind (and its stream ends).
pub const LEADER_CHANGES_BUFFER: usize = 1_024;

/// An election's leader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leader {
    pub lease: u64,
    /// Its epoch: the grant's fencing token.
    pub token: u64,
    pub owner: String,
    pub value: String,
}

/// The leader of `name` after the command of `revision`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderChange {
    pub name: LockName,
    /// `None`: nobody leads.
    pub leader: Option<Leader>,
    pub revision: u64,
}

/// The broadcast of leader changes.
pub struct LeaderWatch {
    sender: broadcast::Sender<Arc<LeaderChange>>,
}

impl Default for LeaderWatch {
    fn default() -> Self {
        let (sender, _) = broadcast::channel(LEADER_CHANGES_BUFFER);
        LeaderWatch { sender }
    }
}

impl LeaderWatch {
    /// A receiver of every later change (of every election: the observer
    /// filters by name).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LeaderChange>> {
        self.sender.subscribe()
    }

    /// How many observe streams follow elections on this node.
    pub fn observers(&self) -> usize {
        self.sender.receiver_count()
    }

    /// One command of `revision` applied with `effects`: sends the leader
    /// it left for each election it touched.
    pub fn command_applied(&self, revision: u64, effects: &[Effect]) {
        if self.sender.receiver_count() == 0 {
            return;
        }
        for (name, leader) in leaders_after(effects) {
            let change = LeaderChange {
                name,
                leader,
                revision,
            };
            let _no_observers_is_fine = self.sender.send(Arc::new(change));
        }
    }
}

/// Per lock the effects touched, in first-touched order, the holder they
/// leave (`None`: freed and not granted again).
fn leaders_after(effects: &[Effect]) -> Vec<(LockName, Option<Leader>)> {
    let mut after: Vec<(LockName, Option<Leader>)> = Vec::new();
    for (name, leader) in effects.iter().filter_map(leader_set_by) {
        match after.iter_mut().find(|(touched, _)| touched == name) {
            Some((_, now)) => *now = leader,
            None => after.push((name.clone(), leader)),
        }
    }
    after
}

/// The lock `effect` gives a holder (or takes it from), and that holder.
fn leader_set_by(effect: &Effect) -> Option<(&LockName, Option<Leader>)> {
    let leader = |lease: &LeaseId, token: &Token, owner: &str, value: &str| Leader {
        lease: lease.0,
        token: token.0,
        owner: owner.to_owned(),
        value: value.to_owned(),
    };
    match effect {
        Effect::LockGranted {
            name,
            lease,
            token,
            owner,
            value,
            ..
        } => {
            let value = value.as_deref().unwrap_or_default();
            Some((name, Some(leader(lease, token, owner, value))))
        }
        Effect::Proclaimed {
            name,
            lease,
            token,
            value,
            owner,
        } => Some((name, Some(leader(lease, token, owner, value)))),
        Effect::LockFreed { name, .. } => Some((name, None)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::FreeCause;

    fn name(raw: &str) -> LockName {
        LockName::parse(raw).unwrap()
    }

    fn granted(lock: &str, lease: u64, token: u64, value: Option<&str>) -> Effect {
        Effect::LockGranted {
            name: name(lock),
            lease: LeaseId(lease),
            token: Token(token),
            from_queue: true,
            max_hold_ms: 0,
            owner: format!("owner-{lease}"),
            value: value.map(str::to_owned),
        }
    }

    fn freed(lock: &str, lease: u64, token: u64) -> Effect {
        Effect::LockFreed {
            name: name(lock),
            lease: LeaseId(lease),
            token: Token(token),
            acquired_unix_ms: 0,
            cause: FreeCause::LeaseExpired,
            forced: None,
            owner: Arc::from("x"),
        }
    }

    #[test]
    fn a_hand_over_in_one_command_is_one_change_and_a_free_alone_is_a_gap() {
        let handed = leaders_after(&[freed("e", 1, 5), granted("e", 2, 9, Some("b"))]);
        assert_eq!(handed.len(), 1, "no gap inside one command");
        let leader = handed[0].1.as_ref().expect("the next leads");
        assert_eq!(
            (leader.lease, leader.token, leader.value.as_str()),
            (2, 9, "b")
        );

        let gap = leaders_after(&[freed("e", 2, 9), freed("other", 3, 4)]);
        assert_eq!(gap, vec![(name("e"), None), (name("other"), None)]);
    }

    #[tokio::test]
    async fn observers_get_each_command_and_nobody_listening_costs_nothing() {
        let watch = LeaderWatch::default();
        watch.command_applied(3, &[granted("e", 1, 3, None)]);
        let mut observer = watch.subscribe();
        watch.command_applied(4, &[freed("e", 1, 3)]);
        watch.command_applied(5, &[granted("e", 2, 5, Some("v"))]);
        let first = observer.recv().await.unwrap();
        assert_eq!((first.revision, first.leader.clone()), (4, None));
        let second = observer.recv().await.unwrap();
        assert_eq!(second.leader.as_ref().map(|l| l.token), Some(5));
        assert!(
            observer.try_recv().is_err(),
            "the change before subscribing is not sent"
        );
    }
}
