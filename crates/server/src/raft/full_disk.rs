//! A node whose disk is full does not lead, and does not campaign.
//!
//! **Why**: a full disk makes the proposer refuse every write on this node
//! (`storage::disk`), while openraft's heartbeats go on: a leader with a
//! full disk would keep its followers from electing anyone else, and the
//! whole cluster would take no write until space came back on that one
//! disk (the fault harness's `disk-full` showed it). So while the free
//! space is short, this node stops sending heartbeats, so that a healthy
//! follower times it out and takes over, and stops starting elections, so
//! that it does not take leadership back. It still votes and replicates,
//! and when space returns both come back on by themselves. (openraft 0.9
//! has no leadership transfer; silence is how a leader yields.) A single
//! voter keeps leading: nobody else could, and its reads still work.
//!
//! A failed fsync needs nothing here: openraft stops this node's Raft.

use crate::raft::types::Raft;
use crate::storage::DiskHealth;
use std::sync::Arc;
use std::time::Duration;

/// How often the free space is looked at.
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// Watches `disk` for as long as `raft` runs.
pub fn spawn(raft: Raft, disk: Arc<DiskHealth>) {
    tokio::spawn(async move {
        let mut yielding = false;
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            let full = disk.check_space().is_err();
            if full == yielding {
                continue;
            }
            yielding = full;
            let config = raft.runtime_config();
            config.heartbeat(!full);
            config.elect(!full);
            if full {
                tracing::warn!("the disk is full: this node yields leadership and does not campaign until space returns");
            } else {
                tracing::info!("free space is back: this node may lead again");
            }
        }
    });
}
