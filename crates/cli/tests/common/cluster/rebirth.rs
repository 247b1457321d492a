//! A node that lost its data dir, or comes back as a node of another
//! cluster at the same id and address: [`wipe`](Cluster::wipe) its data,
//! [`set_formation`](Cluster::set_formation) for its next start, and
//! [`start_refused`](Cluster::start_refused) for a start that must fail.

use super::{Cluster, Formation};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

impl Cluster {
    /// Deletes stopped node `id`'s data dir (its log survives).
    pub fn wipe(&mut self, id: u64) {
        let node = self.node(id);
        assert!(
            node.child.is_none(),
            "stop node {id} before wiping its data"
        );
        match std::fs::remove_dir_all(&node.data_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("wipe {}: {e}", node.data_dir.display()),
        }
    }

    /// Node `id`'s extra `serve` flags from its next start on.
    pub fn set_serve_args(&mut self, id: u64, serve_args: &[&str]) {
        self.node_mut(id).serve_args = serve_args.iter().map(|&arg| arg.to_owned()).collect();
    }

    /// How node `id` forms or joins a cluster from its next start on.
    pub fn set_formation(&mut self, id: u64, formation: Formation) {
        self.node_mut(id).formation = formation;
    }

    /// Starts node `id` and waits, at most `limit`, for it to exit by
    /// itself (panics if it still runs then). Returns how it exited, how
    /// long that took, and its log of this start.
    pub fn start_refused(&mut self, id: u64, limit: Duration) -> (ExitStatus, Duration, String) {
        let started = Instant::now();
        let node = self.node_mut(id);
        node.spawn();
        let marker = format!("===== start {} of node {id} =====", node.starts);
        let mut child = node.child.take().expect("just spawned");
        let exited = loop {
            if let Some(status) = child.try_wait().expect("wait for the node") {
                break status;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "node {id} still runs {limit:?} after it started; log:\n{}",
                    self.log_text(id)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = started.elapsed();
        let log = self.log_text(id);
        let this_start = log
            .rsplit_once(&marker)
            .map_or(log.as_str(), |(_, tail)| tail);
        (exited, took, this_start.to_owned())
    }
}
