//! Asking the other members listed in `--peers` who they are (`Identify`),
//! all at once, each within [`ASK_MAX`]: what a node on an empty data dir
//! does before it forms a cluster. A peer that does not answer (not started
//! yet) is left out; it cannot have seen this node.

use super::startup::Answer;
use super::ClusterId;
use crate::raft::network::ask_once;
use crate::tls::PeerDialer;
use leasehold_proto::v1::raft_transport_client::RaftTransportClient;
use leasehold_proto::v1::IdentifyRequest;
use std::collections::BTreeMap;
use std::time::Duration;

/// Bound on one peer's answer, connecting included. Short: a peer that is
/// not running is refused at once, and one that hangs must not hold up a
/// start for long.
pub const ASK_MAX: Duration = Duration::from_secs(1);

/// Asks every member of `members` but node `node_id` (which would form
/// cluster `ours`) who it is, calling through `dialer`; returns the answers
/// that came.
pub async fn ask(
    dialer: &PeerDialer,
    node_id: u64,
    ours: &ClusterId,
    members: &BTreeMap<u64, String>,
) -> Vec<Answer> {
    let request = IdentifyRequest {
        node_id,
        cluster_id: ours.as_str().to_owned(),
    };
    let asks = members
        .iter()
        .filter(|(id, _)| **id != node_id)
        .map(|(&listed_id, addr)| {
            let request = request.clone();
            async move {
                let asked = ask_once(dialer, addr, ASK_MAX, |channel| async move {
                    RaftTransportClient::new(channel).identify(request).await
                })
                .await;
                match asked {
                    Ok(reply) => Some(Answer {
                        listed_id,
                        addr: addr.clone(),
                        reply,
                    }),
                    Err(why) => {
                        tracing::info!(
                            peer = listed_id,
                            %addr,
                            "peer did not answer ({why}); not started yet?"
                        );
                        None
                    }
                }
            }
        });
    futures::future::join_all(asks)
        .await
        .into_iter()
        .flatten()
        .collect()
}
