//! Which Raft protocol each node speaks, so a cluster keeps serving through
//! a rolling upgrade (one node at a time, each restarted on the new
//! release).
//!
//! Every Raft message, request and reply, carries its sender's protocol
//! (`RaftPayload.protocol`; 0 from a release before the field, which is
//! protocol 1). Both sides note what they hear here. The protocol names
//! the commands a node can decode in a log entry ([`Command::protocol`]):
//! a leader proposes a command only when every member it has heard from
//! speaks that command's protocol, and refuses it otherwise with a
//! sentence naming the node that holds the upgrade back. Everything the
//! previous release could do keeps working meanwhile. A member not heard
//! from yet counts as speaking this node's protocol: a leader hears from
//! every reachable member within a heartbeat of its election (their votes
//! and replies carry it), and a member that cannot be reached cannot be
//! sent an entry either.
//!
//! A node can be told to speak an older protocol (`serve
//! --protocol-version`, hidden): it then also refuses a log entry holding
//! a newer command, as the previous release, which cannot decode one,
//! does. That is how the rolling-upgrade test runs "the previous release"
//! with this build.

use super::types::{Batch, Raft};
use leasehold_core::Command;
pub use leasehold_core::PROTOCOL_VERSION;
use openraft::{Entry, EntryPayload};
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// The oldest protocol this build speaks with: the releases before the
/// field, which send 0.
pub const PROTOCOL_OLDEST: u32 = 1;

/// A command was refused because a member speaks an older protocol.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "this command needs Raft protocol {needs} on every node, but node {node} speaks protocol \
     {speaks} (an older leasehold release): finish the rolling upgrade (upgrade node {node}), \
     then retry; commands of the older release keep working meanwhile"
)]
pub struct OlderMember {
    /// The protocol the command needs.
    pub needs: u32,
    /// A member that speaks an older one.
    pub node: u64,
    /// What that member speaks.
    pub speaks: u32,
    /// The refusing leader's id and address: the client retries there
    /// (reason `Unavailable`), not at a follower.
    pub leader: (u64, String),
}

/// This node's protocol and what it heard from the others.
#[derive(Debug)]
pub struct Protocols {
    /// This node's id.
    node_id: u64,
    /// What this node speaks ([`PROTOCOL_VERSION`] unless told older).
    own: u32,
    /// The last protocol heard from each other node.
    heard: Mutex<BTreeMap<u64, u32>>,
}

impl Protocols {
    /// Node `node_id`, speaking `own`.
    pub fn new(node_id: u64, own: u32) -> Protocols {
        Protocols {
            node_id,
            own,
            heard: Mutex::default(),
        }
    }

    /// What this node speaks, as sent in every message.
    pub fn own(&self) -> u32 {
        self.own
    }

    /// Notes that `node` sent a message saying `wire` (0: protocol 1).
    pub fn heard(&self, node: u64, wire: u32) {
        let protocol = wire.max(PROTOCOL_OLDEST);
        let mut heard = self.heard.lock().unwrap_or_else(PoisonError::into_inner);
        if heard.get(&node) != Some(&protocol) {
            tracing::info!(
                peer = node,
                protocol,
                "peer speaks Raft protocol {protocol}"
            );
            heard.insert(node, protocol);
        }
    }

    /// What `node` speaks, as far as this node knows (one not heard from
    /// yet: as this node, see the module doc).
    pub fn of(&self, node: u64) -> u32 {
        self.heard_of(node).unwrap_or(self.own)
    }

    /// What `node` said it speaks (this node: its own), if it said.
    pub fn heard_of(&self, node: u64) -> Option<u32> {
        if node == self.node_id {
            return Some(self.own);
        }
        let heard = self.heard.lock().unwrap_or_else(PoisonError::into_inner);
        heard.get(&node).copied()
    }

    /// On the leader, refuses `command` if a member of `raft`'s cluster
    /// speaks an older protocol than it needs (see the module doc).
    pub fn admit(&self, raft: &Raft, command: &Command) -> Result<(), OlderMember> {
        let needs = command.protocol();
        if needs <= PROTOCOL_OLDEST {
            return Ok(());
        }
        let metrics = raft.metrics();
        let metrics = metrics.borrow();
        if metrics.current_leader != Some(self.node_id) {
            // Only the leader judges: it hears every member. Here the
            // write is refused as "not the leader" anyway.
            return Ok(());
        }
        let membership = metrics.membership_config.membership();
        let older = std::iter::once(self.node_id)
            .chain(membership.nodes().map(|(&id, _)| id))
            .map(|node| (node, self.of(node)))
            .find(|&(_, speaks)| speaks < needs);
        match older {
            Some((node, speaks)) => Err(OlderMember {
                needs,
                node,
                speaks,
                leader: (
                    self.node_id,
                    membership
                        .get_node(&self.node_id)
                        .map(|node| node.addr.clone())
                        .unwrap_or_default(),
                ),
            }),
            None => Ok(()),
        }
    }

    /// On a node told to speak an older protocol: the first command in
    /// `entries` that it could not decode, as the release of that protocol
    /// could not (see the module doc).
    pub fn undecodable<'a>(
        &self,
        entries: &'a [Entry<super::types::TypeConfig>],
    ) -> Option<&'a Command> {
        entries
            .iter()
            .filter_map(|entry| match &entry.payload {
                EntryPayload::Normal(Batch { commands, .. }) => Some(commands),
                _ => None,
            })
            .flatten()
            .find(|command| command.protocol() > self.own)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::{LeaseId, Proclaim};

    fn proclaim() -> Command {
        Command::Proclaim(Proclaim {
            name: "election".parse().unwrap(),
            lease: LeaseId(1),
            token: leasehold_core::Token(1),
            value: "me".into(),
            request_id: None,
        })
    }

    #[test]
    fn a_release_before_the_field_is_protocol_1_and_the_last_word_counts() {
        let protocols = Protocols::new(1, PROTOCOL_VERSION);
        assert_eq!(protocols.of(2), PROTOCOL_VERSION, "unheard: as this node");
        protocols.heard(2, 0);
        assert_eq!(protocols.of(2), 1);
        protocols.heard(2, PROTOCOL_VERSION);
        assert_eq!(protocols.of(2), PROTOCOL_VERSION);
        assert_eq!(Protocols::new(1, 1).of(1), 1);
    }

    #[test]
    fn an_older_node_cannot_decode_a_newer_command() {
        let entry = |commands| Entry::<super::super::types::TypeConfig> {
            log_id: openraft::testing::log_id(1, 1, 1),
            payload: EntryPayload::Normal(Batch {
                at_unix_ms: 0,
                commands,
            }),
        };
        let old = Protocols::new(1, 1);
        let keep_alive = Command::KeepAlive { lease: LeaseId(1) };
        assert!(old
            .undecodable(&[entry(vec![keep_alive.clone()])])
            .is_none());
        let newer = [entry(vec![keep_alive]), entry(vec![proclaim()])];
        assert_eq!(old.undecodable(&newer), Some(&proclaim()));
        assert!(Protocols::new(1, PROTOCOL_VERSION)
            .undecodable(&newer)
            .is_none());
    }
}
