//! `--local`: a throwaway cluster of this very binary (`leasehold serve`
//! processes on loopback, each behind its proxy: `leasehold_chaos::cluster`)
//! in a temporary directory, killed and removed when the run ends, even on
//! error.

use leasehold_chaos::cluster::{Cluster, ClusterSpec};
use std::path::{Path, PathBuf};

/// The cluster and its directory.
pub struct LocalCluster {
    /// `None` once stopped.
    cluster: Option<Cluster>,
    /// Data dirs and node logs.
    dir: PathBuf,
}

impl LocalCluster {
    /// Starts `nodes` nodes of `binary` and waits for their leader.
    pub async fn start(binary: &Path, nodes: u64) -> Result<LocalCluster, String> {
        let dir = std::env::temp_dir().join(format!("leasehold-drill-{}", std::process::id()));
        let spec = ClusterSpec {
            nodes,
            binary: binary.to_path_buf(),
            dir: dir.clone(),
            serve_args: Vec::new(),
            env: Vec::new(),
        };
        // From here on the directory is ours to remove, whatever happens.
        let mut local = LocalCluster { cluster: None, dir };
        let cluster = Cluster::start(spec)
            .await
            .map_err(|e| format!("cannot start the local cluster: {e}"))?;
        local.cluster = Some(cluster);
        Ok(local)
    }

    /// The nodes' endpoints (through their proxies), comma-separated.
    pub fn endpoints(&self) -> String {
        self.cluster
            .as_ref()
            .map(|c| c.endpoints().join(","))
            .unwrap_or_default()
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        // Kill the nodes before their files go.
        drop(self.cluster.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
