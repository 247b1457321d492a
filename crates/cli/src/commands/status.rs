//! `leasehold status`: the answering node's view of the cluster: its id, its
//! cluster's id, the leader, term, revision, whether it has its quorum (and
//! if not, why), its commit, applied and last log index, its snapshot, and
//! every member with its role, whether the answering node reaches it and
//! when it last heard from it (and, when the answering node leads, how far
//! the log reached each member and how far behind it is).

use super::member::{member_rows, members_json};
use super::Global;
use crate::error::CliError;
use crate::output::{print_json, table};
use leasehold_client::show::count;
use leasehold_client::wire::{Member, StatusResponse};
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
    let client = global.client().await?;
    let s = client.status().await?;
    let header_revision = s.header.as_ref().map_or(0, |h| h.revision);
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
            "quorum": s.quorum,
            "removed": s.removed,
            "quorum_problem": (!s.quorum_problem.is_empty()).then_some(&s.quorum_problem),
            "transport_security": s.transport_security,
            "members": members_json(&s.members, leader_view),
            "leases": s.leases,
            "locks": s.locks,
            "version": s.version,
            "protocol": s.protocol,
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
        state_text(&s),
        s.term,
        s.revision.max(header_revision),
    );
    if !s.quorum_problem.is_empty() {
        println!("{}", s.quorum_problem);
    }
    if s.removed {
        println!("{}", crate::lock_view::REMOVED_NOTE);
    }
    println!(
        "commit index {}, applied index {}, last log index {}, snapshot index {}",
        s.commit_index, s.applied_index, s.last_log_index, s.snapshot_index
    );
    println!(
        "{}, {}, version {}, Raft protocol {}",
        count(s.leases, "lease", "leases"),
        count(s.locks, "lock", "locks"),
        s.version,
        s.protocol
    );
    if !s.transport_security.is_empty() {
        println!("transport: {}", s.transport_security);
    }
    if s.cluster_id.is_empty() {
        println!("cluster: none yet (started with --join; `leasehold member add` gives it one)");
    } else {
        println!("cluster {}", s.cluster_id);
    }
    print!("{}", table(&status_rows(&s.members, leader_view)));
    Ok(())
}

/// The node's state, flagged when it leads without its quorum or was
/// removed from the cluster.
fn state_text(s: &StatusResponse) -> String {
    if s.removed {
        "REMOVED from the cluster".into()
    } else if s.state == "Leader" && !s.quorum {
        "Leader (NO QUORUM)".into()
    } else {
        s.state.clone()
    }
}

/// The member table of `member ls`, with the answering node's view of
/// each member: reachable or not, and its last contact ("-": no view).
fn status_rows(members: &[Member], leader_view: bool) -> Vec<Vec<String>> {
    let mut rows = member_rows(members, leader_view);
    rows[0].extend(["REACHABLE", "LAST CONTACT", "PROTOCOL"].map(String::from));
    for (row, m) in rows[1..].iter_mut().zip(members) {
        let reachable = match m.reachable {
            Some(true) => "yes",
            Some(false) => "NO",
            None => "-",
        };
        let contact = match (m.reachable, m.last_contact_ms) {
            (None, _) => "-".to_owned(),
            (Some(_), None) => "never".to_owned(),
            (Some(_), Some(ms)) => format!("{:.1} s ago", ms as f64 / 1000.0),
        };
        let protocol = m.protocol.map_or("-".to_owned(), |p| p.to_string());
        row.extend([reachable.to_owned(), contact, protocol]);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leader_without_quorum_is_flagged_with_each_members_contact() {
        let member = |id, role: &str, reachable, last_contact_ms: Option<u64>| Member {
            id,
            addr: format!("127.0.0.1:{}", 7420 + id),
            voter: true,
            role: role.into(),
            reachable,
            protocol: last_contact_ms.map(|_| 2),
            last_contact_ms,
            ..Default::default()
        };
        let s = StatusResponse {
            state: "Leader".into(),
            quorum: false,
            members: vec![
                member(1, "Leader", Some(true), Some(0)),
                member(2, "Follower", Some(false), Some(2_345)),
                member(3, "Follower", None, None),
            ],
            ..Default::default()
        };
        assert_eq!(state_text(&s), "Leader (NO QUORUM)");
        let rows = status_rows(&s.members, true);
        assert_eq!(rows[0][5..], ["REACHABLE", "LAST CONTACT", "PROTOCOL"]);
        assert_eq!(rows[1][5..], ["yes", "0.0 s ago", "2"]);
        assert_eq!(rows[2][5..], ["NO", "2.3 s ago", "2"]);
        assert_eq!(rows[3][5..], ["-", "-", "-"]);
        let with_quorum = StatusResponse { quorum: true, ..s };
        assert_eq!(state_text(&with_quorum), "Leader");
    }
}
