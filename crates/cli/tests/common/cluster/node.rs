//! One node of a [`Cluster`](super::Cluster): its process and how to
//! start it again identically ([`Node`]), and its answer to `status`
//! ([`NodeStatus`]).

use super::super::BIN;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// One node's `status --json`, as the node itself answers it.
#[derive(Clone, Debug)]
pub struct NodeStatus {
    /// The answering node.
    pub node_id: u64,
    /// The leader it knows of (0: none).
    pub leader: u64,
    /// Its current term.
    pub term: u64,
    /// `Leader`, `Follower`, `Candidate` or `Learner`.
    pub state: String,
    /// The last log index it applied.
    pub applied_index: u64,
    /// The state machine's revision.
    pub revision: u64,
    /// Members (id → voter?) in its membership config.
    pub members: BTreeMap<u64, bool>,
    /// The whole document.
    pub json: Value,
}

impl NodeStatus {
    pub(super) fn parse(json: Value) -> Option<NodeStatus> {
        let members = json["members"]
            .as_array()?
            .iter()
            .filter_map(|m| Some((m["id"].as_u64()?, m["voter"].as_bool().unwrap_or(false))))
            .collect();
        Some(NodeStatus {
            node_id: json["node_id"].as_u64()?,
            leader: json["leader"].as_u64()?,
            term: json["term"].as_u64()?,
            state: json["state"].as_str()?.to_owned(),
            applied_index: json["applied_index"].as_u64()?,
            revision: json["revision"].as_u64()?,
            members,
            json,
        })
    }

    /// How many voters its membership has.
    pub fn voters(&self) -> usize {
        self.members.values().filter(|voter| **voter).count()
    }
}

/// How a node forms or joins the cluster at its first start.
#[derive(Clone, Debug)]
pub enum Formation {
    /// `--peers` (the same list on every founding member).
    Peers(String),
    /// `--join`: wait to be added.
    Join,
    /// Neither: a one-member cluster of its own.
    Alone,
    /// `--force-new-cluster --revision-gap G` (a survivor of a lost
    /// quorum, once).
    ForceNewCluster { revision_gap: u64 },
}

/// One node process and everything needed to restart it identically.
pub(super) struct Node {
    pub(super) id: u64,
    /// Where it listens (and clients of the test reach it).
    pub(super) listen: SocketAddr,
    /// Where other nodes reach it (its proxy, or `listen`).
    pub(super) advertised: String,
    pub(super) data_dir: PathBuf,
    pub(super) log: PathBuf,
    pub(super) formation: Formation,
    /// `None` while killed.
    pub(super) child: Option<Child>,
    /// How many times it was started (numbers the log markers).
    pub(super) starts: u32,
    /// Its TLS flags (`--tls-cert ...`), in an mTLS cluster.
    pub(super) tls_args: Option<Vec<String>>,
    /// More `serve` flags (a test's, such as `--protocol-version`).
    pub(super) serve_args: Vec<String>,
}

impl Node {
    /// Spawns `leasehold serve` for this node, appending to its log.
    pub(super) fn spawn(&mut self) {
        assert!(self.child.is_none(), "node {} is already running", self.id);
        self.starts += 1;
        let mut log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open node log");
        writeln!(log, "===== start {} of node {} =====", self.starts, self.id).expect("log");
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .args(["--node-id", &self.id.to_string()])
            .args(["--listen", &self.listen.to_string()])
            .arg("--data-dir")
            .arg(&self.data_dir);
        match &self.formation {
            Formation::Peers(peers) => cmd.args(["--peers", peers]),
            Formation::Join => cmd.arg("--join"),
            Formation::Alone => &mut cmd,
            Formation::ForceNewCluster { revision_gap } => cmd
                .arg("--force-new-cluster")
                .args(["--revision-gap", &revision_gap.to_string()]),
        };
        cmd.args(self.tls_args.iter().flatten());
        cmd.args(&self.serve_args);
        let child = cmd
            .env("RUST_LOG", "info,openraft=warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn leasehold serve");
        self.child = Some(child);
    }

    pub(super) fn endpoint(&self) -> String {
        let scheme = if self.tls_args.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.listen)
    }

    /// Panics (with the log) if the process has exited.
    pub(super) fn assert_running(&mut self) {
        let exited = self
            .child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten());
        if let Some(exit) = exited {
            panic!(
                "node {} exited ({exit}); log:\n{}",
                self.id,
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }

    pub(super) fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
