//! What the disk faults need of a [`Cluster`]: one node's data dir on a
//! filesystem of its own (a [`Tmpfs`] the harness can fill), and a node's
//! `/readyz` (which says when, and why, its disk takes no writes).

use super::{Cluster, STATUS_TIMEOUT};
use crate::tmpfs::Tmpfs;
use std::path::PathBuf;
use std::process::Command;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The size a node's tmpfs is mounted with, before its data is copied in
/// and it is sized to fit (a tmpfs takes memory only for what it holds).
const TMPFS_MOUNT_BYTES: u64 = 1 << 30;

impl Cluster {
    /// Node `id`'s `/readyz` straight from its listen address (no proxy):
    /// its status code and body; `None` if it does not answer in time.
    pub async fn readyz(&self, id: u64) -> Option<(u16, String)> {
        let addr = self.nodes.get(&id)?.listen;
        let ask = async {
            let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
            let request =
                format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            stream.write_all(request.as_bytes()).await.ok()?;
            let mut response = String::new();
            stream.read_to_string(&mut response).await.ok()?;
            let code = response.split_whitespace().nth(1)?.parse().ok()?;
            let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
            Some((code, body.trim().to_owned()))
        };
        tokio::time::timeout(STATUS_TIMEOUT, ask)
            .await
            .ok()
            .flatten()
    }

    /// Gives node `id`'s data dir a filesystem of its own with
    /// `room_bytes` free, and returns where it is mounted (a file written
    /// there fills the node's disk). The first time, kills the node, copies
    /// its data dir onto a new tmpfs and restarts it there; each time,
    /// resizes the tmpfs to what it holds plus `room_bytes`.
    pub async fn tmpfs_for(&mut self, id: u64, room_bytes: u64) -> Result<PathBuf, String> {
        if self.node(id)?.tmpfs.is_none() {
            self.move_to_tmpfs(id).await?;
        }
        let Some(tmpfs) = self.node_mut(id)?.tmpfs.as_mut() else {
            return Err(format!("node {id} has no tmpfs"));
        };
        tmpfs.resize(tmpfs.used_bytes()? + room_bytes)?;
        Ok(tmpfs.path().to_path_buf())
    }

    /// Kills node `id`, copies its data dir onto a tmpfs mounted in the
    /// cluster's directory and restarts it there (the copy is what a kill
    /// -9 leaves: the page cache survives it).
    async fn move_to_tmpfs(&mut self, id: u64) -> Result<(), String> {
        self.kill9(id)?;
        let mount = self.spec.dir.join(format!("node-{id}-tmpfs"));
        let tmpfs = Tmpfs::mount(&mount, TMPFS_MOUNT_BYTES)?;
        let node = self.node_mut(id)?;
        let data_dir = mount.join("data");
        let copied = Command::new("cp")
            .arg("-a")
            .arg(&node.data_dir)
            .arg(&data_dir)
            .status();
        if !copied.as_ref().is_ok_and(|status| status.success()) {
            return Err(format!(
                "copy node {id}'s data dir {} to {}: {copied:?}",
                node.data_dir.display(),
                data_dir.display()
            ));
        }
        let _ = std::fs::remove_dir_all(&node.data_dir);
        node.data_dir = data_dir;
        node.tmpfs = Some(tmpfs);
        self.restart(id).await
    }
}
