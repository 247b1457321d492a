//! `leasehold status`: the answering node's view of the cluster: its id, its
//! cluster's id, the leader, term, revision, its commit, applied and last log
//! index, its snapshot, and every member with its role (and, when the
//! answering node leads, how far the log reached each member and how far
//! behind it is).

use super::member::{member_rows, members_json, status_of};
use super::{revision, Global};
use crate::error::CliError;
use crate::output::{print_json, table};
use serde_json::json;

/// `leasehold status`
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Runs `status`.
pub async fn run(args: StatusArgs, global: &Global) -> Result<(), CliError> {
    let mut conn = global.connect().await?;
    let s = status_of(&mut conn).await?;
    let header_revision = revision(s.header.as_ref());
    // Only the leader tracks how far the log reached each member.
    let leader_view = s.state == "Leader";
    if args.json {
        print_json(&json!({
            "node_id": s.node_id,
            "cluster_id": s.cluster_id,
            "leader": s.leader,
            "term": s.term,
            "revision": s.revision.max(header_revision),
            "commit_index": s.commit_index,
            "applied_index": s.applied_index,
            "last_log_index": s.last_log_index,
            "snapshot_index": s.snapshot_index,
            "purged_index": s.purged_index,
            "state": s.state,
            "members": members_json(&s.members, leader_view),
            "leases": s.leases,
            "locks": s.locks,
            "version": s.version,
            "server_time_unix_ms": s.header.as_ref().map(|h| h.server_time_unix_ms),
        }));
        return Ok(());
    }
    let leader = if s.leader == 0 {
        "none".to_owned()
    } else {
        s.leader.to_string()
    };
    println!(
        "node {} ({}), leader {leader}, term {}, revision {}",
        s.node_id,
        s.state,
        s.term,
        s.revision.max(header_revision),
    );
    println!(
        "commit index {}, applied index {}, last log index {}, snapshot index {}",
        s.commit_index, s.applied_index, s.last_log_index, s.snapshot_index
    );
    println!(
        "{} leases, {} locks, version {}",
        s.leases, s.locks, s.version
    );
    if s.cluster_id.is_empty() {
        println!("cluster: none yet (started with --join; `leasehold member add` gives it one)");
    } else {
        println!("cluster {}", s.cluster_id);
    }
    print!("{}", table(&member_rows(&s.members, leader_view)));
    Ok(())
}
