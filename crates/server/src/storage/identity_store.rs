//! This node's cluster identity on disk, in the `META` table: the cluster id
//! (created when the cluster formed, or adopted from the leader by a node
//! that joined) and the nodes this node has seen take part in the cluster.
//! [`crate::identity`] owns what they mean; this only keeps them.
//!
//! Both are written fsynced: the cluster id before Raft hears of the
//! cluster (an id lost in a crash would let the node accept another
//! cluster's messages), the nodes seen so that a restarted node still
//! recognises a member that lost its data.

use super::{blocking, meta, DbError};
use redb::Database;
use std::collections::BTreeSet;
use std::sync::Arc;

/// `META` key of the cluster id (a string).
const CLUSTER_ID: &str = "cluster_id";
/// `META` key of the ids of the nodes seen taking part (a set of u64).
const TOOK_PART: &str = "took_part";

/// A handle to the identity records (see the module doc). Cheap to clone.
#[derive(Clone)]
pub struct IdentityStore {
    /// The database shared with the log and state machine stores.
    db: Arc<Database>,
}

impl IdentityStore {
    pub(crate) fn new(db: Arc<Database>) -> IdentityStore {
        IdentityStore { db }
    }

    /// The stored cluster id, if this node has one.
    pub fn cluster_id(&self) -> Result<Option<String>, DbError> {
        meta::read(&self.db, CLUSTER_ID)
    }

    /// Stores the cluster id, fsynced before this returns.
    pub async fn save_cluster_id(&self, id: &str) -> Result<(), DbError> {
        let (db, id) = (self.db.clone(), id.to_owned());
        blocking(move || meta::write(&db, CLUSTER_ID, &id)).await
    }

    /// The nodes this node has seen take part in its cluster.
    pub fn took_part(&self) -> Result<BTreeSet<u64>, DbError> {
        Ok(meta::read(&self.db, TOOK_PART)?.unwrap_or_default())
    }

    /// Stores the nodes seen taking part, fsynced before this returns.
    pub async fn save_took_part(&self, nodes: BTreeSet<u64>) -> Result<(), DbError> {
        let db = self.db.clone();
        blocking(move || meta::write(&db, TOOK_PART, &nodes)).await
    }
}
