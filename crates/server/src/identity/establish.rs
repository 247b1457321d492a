//! Giving this node its cluster id at start-up, before Raft forms anything:
//! keep the stored one, create one, or leave it to be adopted from a leader
//! (the rules are [`super::startup`]'s). A node about to form a `--peers`
//! cluster on an empty data dir first asks its peers ([`super::peers`]),
//! and refuses to start if they saw it take part before.

use super::startup::{judge_answers, starting_id, Held, StartingId};
use super::{peers, ClusterId, Identity};
use crate::raft::node::Formation;
use crate::raft::types::Raft;
use crate::tls::PeerDialer;
use crate::ServeError;
use std::collections::BTreeMap;

/// Gives `identity` its cluster id for a node started as `formation` with
/// cluster token `token`, on the data dir `raft` was opened on. Fails with
/// [`ServeError::Formation`] if the peers refuse this node (see
/// [`judge_answers`]), or with a storage error.
pub async fn establish(
    raft: &Raft,
    identity: &Identity,
    formation: &Formation,
    token: &str,
    dialer: &PeerDialer,
) -> Result<(), ServeError> {
    let initialized = raft
        .is_initialized()
        .await
        .map_err(|error| ServeError::Raft(error.to_string()))?;
    let members = stored_members(raft);
    let held = if initialized {
        Held::State { members: &members }
    } else {
        Held::Nothing
    };
    let stored = identity.cluster_id();
    let start = starting_id(stored, formation, held, token, &mut rand::rng());
    let node_id = identity.node_id();
    match start {
        StartingId::Stored(id) => tracing::info!(cluster_id = %id, "cluster {id}"),
        StartingId::Adopt if initialized => tracing::warn!(
            "this data dir predates cluster ids: it takes the cluster id of the first leader \
             that writes to it"
        ),
        StartingId::Adopt => tracing::info!(
            node_id,
            "no cluster yet: waiting to be added (leasehold member add), then taking the \
             leader's cluster id"
        ),
        StartingId::Create(id) => {
            if let (Held::Nothing, Formation::Initialize(members)) = (held, formation) {
                check_peers(dialer, node_id, &id, members).await?;
            }
            identity.create(id.clone()).await.map_err(|error| {
                ServeError::Storage(format!("cannot store the cluster id: {error}"))
            })?;
            if initialized {
                tracing::info!(
                    cluster_id = %id,
                    "this data dir predates cluster ids: derived cluster id {id} from its \
                     membership"
                );
            } else {
                tracing::info!(cluster_id = %id, "forming cluster {id}");
            }
        }
    }
    Ok(())
}

/// Asks the other `members` who they are and judges their answers.
async fn check_peers(
    dialer: &PeerDialer,
    node_id: u64,
    ours: &ClusterId,
    members: &BTreeMap<u64, String>,
) -> Result<(), ServeError> {
    let answers = peers::ask(dialer, node_id, ours, members).await;
    let own_addr = members.get(&node_id).map_or("ADDR", String::as_str);
    judge_answers(node_id, own_addr, ours, &answers).map_err(ServeError::Formation)
}

/// The members (id → address) of the membership this node's log holds.
fn stored_members(raft: &Raft) -> BTreeMap<u64, String> {
    raft.metrics()
        .borrow()
        .membership_config
        .membership()
        .nodes()
        .map(|(id, node)| (*id, node.addr.clone()))
        .collect()
}
