//! A leader whose disk fills yields leadership (crates/server/src/raft/
//! full_disk.rs): with only its disk full, the other two elect a leader
//! among them within a few election timeouts and take writes, the full
//! node's `/readyz` names the disk, and once space returns it is ready
//! again. Before, the full leader kept heartbeating and the whole cluster
//! refused every write until space came back on that one disk. Real
//! processes behind the fault harness's cluster; the node's data dir on a
//! small tmpfs (mounting needs root, as CI runs).

use leasehold_chaos::cluster::{Cluster, ClusterSpec};
use leasehold_chaos::tmpfs::fill;
use leasehold_client::owner_info;
use std::time::{Duration, Instant};

/// Free room on the full node's tmpfs before it is filled: two log
/// segments and the headroom, as the harness's `disk-full` gives.
const ROOM_BYTES: u64 = 2 * (64 << 20) + (16 << 20);
/// Bound on a leader being agreed, and on each change the test awaits.
const WITHIN: Duration = Duration::from_secs(20);
/// Tries at making the tmpfs node the leader (each succeeds about half
/// the time: a new election between it and one other).
const LEAD_TRIES: usize = 12;

async fn cluster(dir: &std::path::Path) -> Cluster {
    let spec = ClusterSpec {
        nodes: 3,
        binary: env!("CARGO_BIN_EXE_leasehold").into(),
        dir: dir.to_path_buf(),
        serve_args: Vec::new(),
        env: Vec::new(),
    };
    Cluster::start(spec).await.expect("a 3-node cluster")
}

/// Makes node `id` the leader: restarts whoever else leads until it wins.
async fn make_leader(cluster: &mut Cluster, id: u64) {
    for _ in 0..LEAD_TRIES {
        let leader = cluster.leader(WITHIN).await.expect("a leader");
        if leader == id {
            return;
        }
        cluster.kill9(leader).expect("kill the leader");
        cluster.leader(WITHIN).await.expect("a new leader");
        cluster.restart(leader).await.expect("restart it");
    }
    panic!("node {id} did not become the leader in {LEAD_TRIES} elections");
}

/// Awaits `ready(code, body)` of node `id`'s `/readyz`.
async fn readyz_until(cluster: &Cluster, id: u64, ready: impl Fn(u16, &str) -> bool) -> String {
    let deadline = Instant::now() + WITHIN;
    loop {
        if let Some((code, body)) = cluster.readyz(id).await {
            if ready(code, &body) {
                return body;
            }
        }
        assert!(
            Instant::now() < deadline,
            "node {id}'s /readyz did not change"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t224_a_leader_whose_disk_fills_yields_and_the_others_take_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut cluster = cluster(dir.path()).await;
    let full = cluster.leader(WITHIN).await.expect("a leader");
    let mount = cluster.tmpfs_for(full, ROOM_BYTES).await.expect("a tmpfs");
    make_leader(&mut cluster, full).await;

    let filler = mount.join("filler");
    let filled = {
        let filler = filler.clone();
        tokio::task::spawn_blocking(move || fill(&filler, Duration::ZERO, || false))
    };
    let filled_bytes = filled.await.unwrap().expect("fill the tmpfs");
    assert!(filled_bytes > 0);
    let why = readyz_until(&cluster, full, |code, _| code == 503).await;
    assert!(why.contains("no space left"), "{why}");

    let yielded = Instant::now();
    let deadline = yielded + WITHIN;
    let leader = loop {
        let leader = cluster.leader(WITHIN).await.expect("a leader");
        if leader != full {
            break leader;
        }
        assert!(Instant::now() < deadline, "the full node kept leading");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "node {leader} leads {:?} after node {full}'s disk filled",
        yielded.elapsed()
    );
    let client = cluster.client().await.expect("a client");
    let owner = owner_info(Some("t224".into()), Vec::new());
    let granted = client.grant_lease(Duration::from_secs(5), owner).await;
    assert!(granted.is_ok(), "the others take writes: {granted:?}");

    std::fs::remove_file(&filler).expect("free the space");
    readyz_until(&cluster, full, |code, _| code == 200).await;
}
