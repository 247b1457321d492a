//! One cluster, one identity: every cluster has a [`ClusterId`], made when
//! it forms and stored in each member's data dir before Raft hears of the
//! cluster, and every Raft message carries its sender's id. A node refuses
//! messages from another cluster ([`verdict`]), so a node of another
//! cluster started at a member's address is never fed this cluster's log,
//! and cannot vote in it.
//!
//! The second half guards against a member that lost its data dir: it
//! forgot its votes, and a voter that forgets its votes can vote twice in
//! a term, which is how Raft loses committed entries. Each node remembers
//! (durably) which nodes it has seen take part in its cluster, and a node
//! about to form a cluster on an empty data dir first asks its peers
//! ([`establish`]): if one of them saw it take part, it refuses to start and
//! says how to rejoin (remove it, start it with `--join`, add it again).
//!
//! - [`cluster_id`]: the id, derived from `--peers` and `--cluster-token`,
//!   or random for a one-member cluster.
//! - [`verdict`]: accept, adopt or refuse an incoming message (pure).
//! - [`startup`]: which id a node starts with, and judging the peers'
//!   answers (pure).
//! - [`establish`] and [`peers`]: doing that at start-up.
//! - [`log_limit`]: refusals repeat with every heartbeat; their log lines
//!   are limited per peer.
//! - [`Identity`] (here): this node's identity at run time, shared by the
//!   sending and receiving sides of Raft traffic and the Cluster API.

pub mod cluster_id;
pub mod establish;
pub mod log_limit;
pub mod peers;
pub mod startup;
pub mod verdict;

pub use cluster_id::{ClusterId, DEFAULT_CLUSTER_TOKEN};
pub use verdict::MessageKind;

use crate::clock::Clock;
use crate::storage::{DbError, IdentityStore};
use leasehold_proto::v1::IdentifyResponse;
use log_limit::{LogLimit, REFUSAL_LOG_EVERY};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use tonic::metadata::MetadataValue;
use tonic::Status;
use verdict::Verdict;

/// The gRPC metadata key under which a refusal names the refusing node's
/// cluster id, so that the refused sender can log both ids.
pub const CLUSTER_ID_METADATA: &str = "leasehold-cluster-id";

/// This node's identity at run time (see the module doc). Shared as an `Arc`.
pub struct Identity {
    /// This node's Raft id.
    node_id: u64,
    /// Where the id and the nodes seen are stored.
    store: IdentityStore,
    /// The cluster id: `None` until created at formation or adopted from a
    /// leader; never changed once set.
    cluster_id: RwLock<Option<ClusterId>>,
    /// Serialises adoption: two leader messages arriving together store
    /// one id, once.
    adopting: tokio::sync::Mutex<()>,
    /// The nodes seen sending or answering a Raft message: each held a vote
    /// or a log then.
    took_part: Mutex<BTreeSet<u64>>,
    /// Serialises writes of `took_part`, so the last write stores the
    /// latest set.
    saving_took_part: tokio::sync::Mutex<()>,
    /// Log limit of refusals this node makes, per sender.
    refused_from: LogLimit,
    /// Log limit of refusals this node receives, per peer.
    refused_by: LogLimit,
    /// The clock the log limits count on.
    clock: Arc<dyn Clock>,
}

impl Identity {
    /// Node `node_id`'s identity as stored in `store`, its log limits
    /// counting on `clock`.
    pub fn load(
        node_id: u64,
        store: IdentityStore,
        clock: Arc<dyn Clock>,
    ) -> Result<Identity, DbError> {
        let cluster_id = match store.cluster_id()? {
            None => None,
            Some(text) => Some(ClusterId::parse(&text).ok_or_else(|| {
                DbError::Corrupt(format!(
                    "the stored cluster id {text:?} is not 32 hex digits"
                ))
            })?),
        };
        Ok(Identity {
            node_id,
            took_part: Mutex::new(store.took_part()?),
            store,
            cluster_id: RwLock::new(cluster_id),
            adopting: tokio::sync::Mutex::new(()),
            saving_took_part: tokio::sync::Mutex::new(()),
            refused_from: LogLimit::new(REFUSAL_LOG_EVERY),
            refused_by: LogLimit::new(REFUSAL_LOG_EVERY),
            clock,
        })
    }

    /// This node's Raft id.
    pub fn node_id(&self) -> u64 {
        self.node_id
    }

    /// This node's cluster id, if it has one yet.
    pub fn cluster_id(&self) -> Option<ClusterId> {
        self.cluster_id
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The id as sent on the wire and shown by `status` (empty: none yet).
    pub fn cluster_id_text(&self) -> String {
        self.cluster_id()
            .map(|id| id.as_str().to_owned())
            .unwrap_or_default()
    }

    /// Gives this node the cluster id `id` (stored, fsynced, first). Only
    /// at start-up, before Raft forms anything, and only once.
    pub async fn create(&self, id: ClusterId) -> Result<(), DbError> {
        assert!(self.cluster_id().is_none(), "a cluster id is set only once");
        self.store.save_cluster_id(id.as_str()).await?;
        self.set(id);
        Ok(())
    }

    fn set(&self, id: ClusterId) {
        *self.cluster_id.write().unwrap_or_else(|e| e.into_inner()) = Some(id);
    }

    /// Decides whether a Raft message of `kind` from node `sender`, which
    /// says it belongs to cluster `theirs`, may reach Raft (see
    /// [`verdict::judge`]): adopts a leader's id if this node has none, and
    /// refuses another cluster's message with FAILED_PRECONDITION naming
    /// both ids (logged at warn, at most once per sender every
    /// [`REFUSAL_LOG_EVERY`]).
    pub async fn admit(
        self: &Arc<Self>,
        sender: u64,
        theirs: &str,
        kind: MessageKind,
    ) -> Result<(), Status> {
        let mut verdict = verdict::judge(self.cluster_id().as_ref(), theirs, kind);
        if let Verdict::Adopt(id) = verdict {
            verdict = self.adopt(id, sender).await?;
        }
        if verdict == Verdict::Refuse {
            return Err(self.refuse(sender, theirs, kind));
        }
        self.saw(sender);
        Ok(())
    }

    /// Stores and takes `id`, unless another message set an id meanwhile:
    /// then judges again by that one.
    async fn adopt(&self, id: ClusterId, sender: u64) -> Result<Verdict, Status> {
        let _one_at_a_time = self.adopting.lock().await;
        if let Some(current) = self.cluster_id() {
            let same = current == id;
            return Ok(if same {
                Verdict::Accept
            } else {
                Verdict::Refuse
            });
        }
        self.store
            .save_cluster_id(id.as_str())
            .await
            .map_err(|error| {
                Status::unavailable(format!(
                    "node {} cannot store cluster id {id}: {error}",
                    self.node_id
                ))
            })?;
        tracing::info!(cluster_id = %id, leader = sender, "joined cluster {id}");
        self.set(id);
        Ok(Verdict::Accept)
    }

    fn refuse(&self, sender: u64, theirs: &str, kind: MessageKind) -> Status {
        let ours = self.cluster_id();
        let message = verdict::refusal(self.node_id, ours.as_ref(), sender, theirs);
        if self.refused_from.allow(sender, self.clock.now()) {
            tracing::warn!(
                peer = sender,
                cluster_id = %self.cluster_id_text(),
                peer_cluster_id = theirs,
                %kind,
                "refused a Raft message (logged once per {}s per sender): {message}",
                REFUSAL_LOG_EVERY.as_secs()
            );
        }
        let mut status = Status::failed_precondition(message);
        if let Ok(value) = MetadataValue::try_from(self.cluster_id_text()) {
            status.metadata_mut().insert(CLUSTER_ID_METADATA, value);
        }
        status
    }

    /// Logs (at warn, at most once per peer every [`REFUSAL_LOG_EVERY`])
    /// that node `peer` at `addr` refused this node's Raft message.
    pub fn refused_by(&self, peer: u64, addr: &str, status: &Status) {
        if !self.refused_by.allow(peer, self.clock.now()) {
            return;
        }
        let theirs = status
            .metadata()
            .get(CLUSTER_ID_METADATA)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("none");
        tracing::warn!(
            peer,
            %addr,
            cluster_id = %self.cluster_id_text(),
            peer_cluster_id = theirs,
            "node {peer} at {addr} refused a Raft message from this node (logged once per {}s \
             per peer): {}",
            REFUSAL_LOG_EVERY.as_secs(),
            status.message()
        );
    }

    /// Notes that node `node` took part in this cluster (it sent or answered
    /// a Raft message); a node seen for the first time is stored.
    pub fn saw(self: &Arc<Self>, node: u64) {
        if node == 0 || node == self.node_id {
            return;
        }
        let new = self
            .took_part
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(node);
        if !new {
            return;
        }
        let identity = self.clone();
        tokio::spawn(async move {
            let _in_order = identity.saving_took_part.lock().await;
            let nodes = identity
                .took_part
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if let Err(error) = identity.store.save_took_part(nodes).await {
                tracing::warn!(%error, node, "cannot store the nodes seen taking part");
            }
        });
    }

    /// Whether node `node` has been seen taking part in this cluster.
    pub fn has_seen(&self, node: u64) -> bool {
        self.took_part
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&node)
    }

    /// The answer to `Identify` from node `asker`; `initialized`: whether
    /// this node's Raft holds a vote or a log.
    pub fn identify(&self, asker: u64, initialized: bool) -> IdentifyResponse {
        let cluster_id = self.cluster_id_text();
        IdentifyResponse {
            node_id: self.node_id,
            formed: initialized || !cluster_id.is_empty(),
            cluster_id,
            saw_asker: self.has_seen(asker),
        }
    }
}

#[cfg(test)]
mod tests;

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("node_id", &self.node_id)
            .field("cluster_id", &self.cluster_id())
            .finish_non_exhaustive()
    }
}
