//! Asking a node for its status before it is added, so that a node that is
//! not running fails at once (not after
//! [`LEARNER_CATCH_UP_MAX`](super::membership::LEARNER_CATCH_UP_MAX)), and a
//! wrong id or a node of another cluster is refused: Raft would otherwise
//! count one process twice (two ids at one address), or overwrite another
//! cluster's data. A node of another cluster is one whose cluster id
//! differs from ours; a node from before cluster ids (none reported) is
//! judged by its member list.

use super::membership::Members;
use crate::api::ApiError;
use crate::identity::ClusterId;
use crate::raft::network::ask_once;
use leasehold_proto::v1::cluster_client::ClusterClient;
use leasehold_proto::v1::{StatusRequest, StatusResponse};
use std::time::Duration;

/// Bound on asking a node to be added for its status.
const PROBE_MAX: Duration = Duration::from_secs(2);

/// Asks the node at `addr` (through `dialer`) for its status, within
/// [`PROBE_MAX`], and checks that it is node `id` and free to join `ours`,
/// the cluster `cluster_id`.
pub async fn probe(
    dialer: &crate::tls::PeerDialer,
    ours: &Members,
    cluster_id: Option<&ClusterId>,
    id: u64,
    addr: &str,
) -> Result<(), ApiError> {
    let asked = ask_once(dialer, addr, PROBE_MAX, |channel| async move {
        ClusterClient::new(channel).status(StatusRequest {}).await
    })
    .await;
    let status = asked.map_err(|why| {
        ApiError::invalid(
            "addr",
            format!(
                "no leasehold node answers at {addr} ({why}); start it first with \
                 `leasehold serve --join --node-id {id} --listen {addr}`"
            ),
        )
    })?;
    check_probed(&status, ours, id, addr)?;
    check_cluster_id(&status, cluster_id, id, addr)
}

/// Judges a probed node's cluster id: none (a node started with `--join`,
/// or from before cluster ids), or ours (a learner added again, a removed
/// member coming back with its data). Any other: it already belongs to
/// another cluster, whose log and votes it holds.
fn check_cluster_id(
    status: &StatusResponse,
    ours: Option<&ClusterId>,
    id: u64,
    addr: &str,
) -> Result<(), ApiError> {
    let theirs = status.cluster_id.as_str();
    if theirs.is_empty() || ours.is_some_and(|ours| ours.as_str() == theirs) {
        return Ok(());
    }
    let ours = ours.map_or_else(|| "none".to_owned(), ClusterId::to_string);
    Err(ApiError::invalid(
        "addr",
        format!(
            "node {id} at {addr} already belongs to cluster {theirs} (this is cluster {ours}): \
             a node takes part in one cluster only; stop it and start it with --join on an \
             empty data dir to add it here"
        ),
    ))
}

/// Judges a probed node's own status: it must be node `id`, and either in no
/// cluster yet or in this one (a learner added again, a removed member
/// coming back): its members share a node (id and address) with `ours`.
/// Ids alone would not tell two clusters apart: both likely have a node 1.
fn check_probed(
    status: &StatusResponse,
    ours: &Members,
    id: u64,
    addr: &str,
) -> Result<(), ApiError> {
    if status.node_id != id {
        return Err(ApiError::invalid(
            "id",
            format!(
                "the node at {addr} is node {}, not node {id}",
                status.node_id
            ),
        ));
    }
    let knows_us = status.members.iter().any(|member| {
        ours.get_node(&member.id)
            .is_some_and(|node| node.addr == member.addr)
    });
    if !status.members.is_empty() && !knows_us {
        let theirs: Vec<String> = status.members.iter().map(|m| m.id.to_string()).collect();
        return Err(ApiError::invalid(
            "addr",
            format!(
                "node {id} at {addr} belongs to another cluster (members {}); start it \
                 on an empty data dir with --join",
                theirs.join(", ")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::cluster::test_support::{members, reason};
    use tonic::Code;

    #[test]
    fn a_probed_node_must_be_the_one_named_and_in_no_other_cluster() {
        let ours = members(&[1, 2, 3], &[]);
        let member = |id, addr: &str| leasehold_proto::v1::Member {
            id,
            addr: addr.into(),
            ..Default::default()
        };
        let fresh = StatusResponse {
            node_id: 4,
            ..Default::default()
        };
        assert!(check_probed(&fresh, &ours, 4, "h:4").is_ok());
        let (code, message) = reason(check_probed(&fresh, &ours, 5, "h:4").unwrap_err());
        assert_eq!(code, Code::InvalidArgument);
        assert!(message.contains("is node 4, not node 5"), "{message}");
        let removed_earlier = StatusResponse {
            members: vec![member(2, "10.0.0.2:7420"), member(4, "h:4")],
            ..fresh.clone()
        };
        assert!(check_probed(&removed_earlier, &ours, 4, "h:4").is_ok());
        let same_ids_elsewhere = StatusResponse {
            members: vec![member(1, "10.9.0.1:7420"), member(4, "h:4")],
            ..fresh
        };
        let (_, message) = reason(check_probed(&same_ids_elsewhere, &ours, 4, "h:4").unwrap_err());
        assert!(
            message.contains("another cluster (members 1, 4)"),
            "{message}"
        );
    }

    #[test]
    fn a_probed_node_of_another_cluster_id_is_refused() {
        let ours = ClusterId::parse("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa").unwrap();
        let probed = |cluster_id: &str| StatusResponse {
            node_id: 4,
            cluster_id: cluster_id.into(),
            ..Default::default()
        };
        // Started with --join (or from before cluster ids): free to join.
        assert!(check_cluster_id(&probed(""), Some(&ours), 4, "h:4").is_ok());
        // Ours already: a learner added again, a removed member coming back.
        assert!(check_cluster_id(&probed(ours.as_str()), Some(&ours), 4, "h:4").is_ok());
        let theirs = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
        for our_id in [Some(&ours), None] {
            let (code, message) =
                reason(check_cluster_id(&probed(theirs), our_id, 4, "h:4").unwrap_err());
            assert_eq!(code, Code::InvalidArgument);
            assert!(
                message.contains(&format!(
                    "node 4 at h:4 already belongs to cluster {theirs}"
                )) && message.contains("--join"),
                "{message}"
            );
        }
    }
}
