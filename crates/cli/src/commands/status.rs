//! `leasehold status`: the answering node's view of the cluster: its id, the
//! leader, term, revision, applied index and members.

use super::{revision, Global};
use crate::error::CliError;
use crate::output::{print_json, table};
use leasehold_proto::v1::cluster_client::ClusterClient;
use leasehold_proto::v1::StatusRequest;
use serde_json::json;
use std::time::Duration;

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
    let s = conn
        .call(Duration::ZERO, |ch| async move {
            ClusterClient::new(ch).status(StatusRequest {}).await
        })
        .await?;
    let header_revision = revision(s.header.as_ref());
    if args.json {
        let members: Vec<_> = s
            .members
            .iter()
            .map(|m| json!({ "id": m.id, "addr": m.addr, "voter": m.voter }))
            .collect();
        print_json(&json!({
            "node_id": s.node_id,
            "leader": s.leader,
            "term": s.term,
            "revision": s.revision.max(header_revision),
            "applied_index": s.applied_index,
            "state": s.state,
            "members": members,
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
        "node {} ({}), leader {leader}, term {}, revision {}, applied index {}",
        s.node_id,
        s.state,
        s.term,
        s.revision.max(header_revision),
        s.applied_index
    );
    println!(
        "{} leases, {} locks, version {}",
        s.leases, s.locks, s.version
    );
    let mut rows = vec![vec![
        "MEMBER".to_owned(),
        "ADDR".to_owned(),
        "ROLE".to_owned(),
    ]];
    for m in &s.members {
        let role = if m.id == s.leader {
            "leader"
        } else if m.voter {
            "voter"
        } else {
            "learner"
        };
        rows.push(vec![m.id.to_string(), m.addr.clone(), role.to_owned()]);
    }
    print!("{}", table(&rows));
    Ok(())
}
