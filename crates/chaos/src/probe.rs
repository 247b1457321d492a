//! [`Probes`]: while nodes are cut off from the majority, a task per node
//! keeps sending it writes straight through its proxy (clients are not
//! cut off, only node-to-node links): a lease grant, and a renewal of a
//! lease granted before the cut. Each answer is recorded as a
//! [`Probe`](crate::history::Probe); property 5 says none may succeed.
//!
//! Probes are raw gRPC calls, not the client library's: the library
//! follows a follower's `NotLeader` to the leader (the majority's, which
//! clients still reach), and a probe must ask the cut-off node only.

use crate::cluster::Cluster;
use crate::history::{OpRecord, Probe};
use crate::recorder::Recorder;
use crate::workload::ops::Ops;
use leasehold_client::owner_info;
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::{GrantRequest, KeepAliveRequest};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tonic::transport::Channel;

/// Time between two probes of one node.
const EVERY: Duration = Duration::from_millis(250);

/// Bound on one probe.
const CALL_TIMEOUT: Duration = Duration::from_secs(1);

/// The probes' leases' ttl.
const TTL: Duration = Duration::from_secs(5);

/// Running probes.
pub struct Probes {
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<Vec<Probe>>>,
    recorder: Recorder,
}

impl Probes {
    /// Starts probing `nodes` (cut off as of now).
    pub async fn start(
        cluster: &Cluster,
        nodes: &[u64],
        recorder: Recorder,
    ) -> Result<Probes, String> {
        let cut_ms = recorder.now_ms();
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for &node in nodes {
            let channel = Channel::from_shared(cluster.endpoint(node)?)
                .map_err(|e| format!("node {node}'s endpoint: {e}"))?
                .connect_timeout(CALL_TIMEOUT)
                .timeout(CALL_TIMEOUT)
                .connect_lazy();
            let client = LeaseClient::new(channel);
            let whole = Ops {
                client: cluster.client().await?,
                recorder: recorder.clone(),
            };
            let probe = Prober {
                node,
                client,
                recorder: recorder.clone(),
                cut_ms,
            };
            tasks.push(tokio::spawn(probe.run(whole, stop.clone())));
        }
        Ok(Probes {
            stop,
            tasks,
            recorder,
        })
    }

    /// Stops probing; records every probe with the heal time.
    pub async fn stop(self, healed_ms: u64) {
        self.stop.store(true, Ordering::SeqCst);
        for task in self.tasks {
            let Ok(probes) = task.await else { continue };
            let mut recorded = self.recorder.lock();
            for mut probe in probes {
                probe.healed_ms = healed_ms;
                recorded.history.probes.push(probe);
            }
        }
    }
}

struct Prober {
    node: u64,
    client: LeaseClient<Channel>,
    recorder: Recorder,
    cut_ms: u64,
}

impl Prober {
    async fn run(self, whole: Ops, stop: Arc<AtomicBool>) -> Vec<Probe> {
        // A lease granted through the majority, to renew through the minority.
        let renewable = whole.grant(TTL, "chaos-probe").await;
        let mut probes = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            probes.push(self.grant().await);
            if let Some(lease) = renewable {
                probes.push(self.renew(lease).await);
            }
            tokio::time::sleep(EVERY).await;
        }
        probes
    }

    /// The probe's record, also logged as an operation of the run.
    fn probe(&self, op: &'static str, invoked_ms: u64, args: String, outcome: String) -> Probe {
        let completed_ms = self.recorder.now_ms();
        self.recorder.op(OpRecord {
            op,
            invoked_ms,
            completed_ms,
            node: Some(self.node),
            args,
            outcome: outcome.clone(),
        });
        Probe {
            node: self.node,
            op: op.trim_start_matches("probe-").to_owned(),
            invoked_ms,
            completed_ms,
            ok: outcome.starts_with("ok"),
            cut_ms: self.cut_ms,
            healed_ms: u64::MAX,
        }
    }

    async fn grant(&self) -> Probe {
        let invoked_ms = self.recorder.now_ms();
        let request = GrantRequest {
            ttl_ms: TTL.as_millis() as u64,
            owner: Some(owner_info(Some("chaos-probe".into()), Vec::new())),
            request_id: leasehold_client::new_request_id(),
        };
        let granted = self.client.clone().grant(request).await;
        let mut recorded = self.recorder.lock();
        match &granted {
            // It may have taken effect later (the orphan-lease rule allows
            // for it).
            Err(_) => recorded.history.pending_grants_ms.push(invoked_ms),
            // Known, so the orphan check does not count it.
            Ok(granted) => recorded.history.leases.push(crate::history::Lease {
                id: granted.get_ref().lease,
                ttl_ms: TTL.as_millis() as u64,
                granted_invoked_ms: invoked_ms,
                renewals_sent_ms: Vec::new(),
                revoke_invoked_ms: None,
                last_ack_ms: invoked_ms,
                abandoned_ms: None,
            }),
        }
        drop(recorded);
        let args = format!("ttl_ms={}", TTL.as_millis());
        self.probe("probe-grant", invoked_ms, args, said(&granted))
    }

    async fn renew(&self, lease: u64) -> Probe {
        let invoked_ms = self.recorder.now_ms();
        let request = KeepAliveRequest {
            lease,
            ..Default::default()
        };
        let renewed = self.client.clone().keep_alive(request).await;
        self.probe(
            "probe-renew",
            invoked_ms,
            format!("lease={lease:x}"),
            said(&renewed),
        )
    }
}

/// A raw call's outcome as the op log says it.
fn said<T>(answer: &Result<tonic::Response<T>, tonic::Status>) -> String {
    match answer {
        Ok(_) => "ok".to_owned(),
        Err(status) => format!("failed: {:?}: {}", status.code(), status.message()),
    }
}
