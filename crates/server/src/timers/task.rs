//! The timer task: sleeps until the earliest deadline, and when this node is
//! the leader proposes what is due. A due item stays armed (re-armed a little
//! later) until its command's effect removes it, so a proposal lost to a
//! leadership change is retried by whoever leads next.

use super::{Due, Timers};
use crate::proposer::Proposer;
use crate::raft::types::Raft;
use leasehold_core::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{sleep_until, Instant};

/// Longest sleep between leadership checks.
const POLL_MAX: Duration = Duration::from_millis(100);

/// Starts the timer task; it ends when `raft` shuts down.
pub fn spawn(timers: Arc<Timers>, proposer: Proposer, raft: Raft, node_id: u64) {
    tokio::spawn(async move {
        // Server metrics change only with votes, roles and membership, not
        // with every applied entry: waking on them costs nothing per write.
        let mut metrics = raft.server_metrics();
        let mut leading = false;
        loop {
            let leader = metrics.borrow_and_update().current_leader;
            let now = timers.now();
            let is_leader = leader == Some(node_id);
            if is_leader != leading {
                leading = is_leader;
                timers.update(|table, now| table.set_leader_since(is_leader.then_some(now)));
                tracing::info!(node_id, leading, "leadership changed");
            }
            if leading {
                let due = timers.update(|table, now| table.take_due(now));
                for item in due {
                    tokio::spawn(propose(timers.clone(), proposer.clone(), item));
                }
            }
            let next = timers.update(|table, _| table.next_deadline());
            let wake_at = next.map_or(now + POLL_MAX, |at| at.min(now + POLL_MAX));
            tokio::select! {
                _ = sleep_until(wake_at.max(Instant::now())) => {}
                _ = timers.wake.notified() => {}
                changed = metrics.changed() => if changed.is_err() { return },
            }
        }
    });
}

async fn propose(timers: Arc<Timers>, proposer: Proposer, due: Due) {
    let command = match &due {
        Due::ExpireLease { lease, renewals } => Command::ExpireLease {
            lease: *lease,
            renewals: *renewals,
        },
        Due::EndLockDelay { name, token } => Command::EndLockDelay {
            name: name.clone(),
            token: *token,
        },
        Due::EndHold { name, token } => Command::EndHold {
            name: name.clone(),
            token: *token,
        },
    };
    match proposer.propose(command).await {
        Ok(_) => timers.lock_timer_done(&due),
        Err(error) => tracing::debug!(?due, %error, "timer proposal failed; will retry"),
    }
}
