//! The log on a full disk (a small tmpfs; needs root): an append that meets
//! `ENOSPC` before its fsync (here: making the next segment) waits, and
//! completes by itself once space returns, with nothing lost or doubled;
//! the disk health refuses writes meanwhile, naming the path.

#[path = "support/tmpfs.rs"]
mod tmpfs;

use leasehold_server::raft::types::TypeConfig;
use leasehold_server::storage::{self, DiskFault, NoopListener, StorageOptions};
use openraft::storage::RaftLogStorageExt;
use openraft::testing::blank_ent;
use openraft::{Entry, RaftLogReader};
use std::sync::Arc;
use std::time::Duration;
use tmpfs::{fill, Tmpfs};

/// Small segments, so that a roll needs little space.
const SEGMENT_BYTES: u64 = 1 << 20;
/// How long the blocked append is watched before the space returns.
const BLOCKED_FOR: Duration = Duration::from_millis(500);
/// Bound on the append once space is back.
const RESUME_MAX: Duration = Duration::from_secs(20);

fn ent(index: u64) -> Entry<TypeConfig> {
    blank_ent::<TypeConfig>(1, 1, index)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_without_space_waits_and_completes_when_space_returns() {
    let tmpfs = Tmpfs::mount("24m");
    let dir = tmpfs.path().join("data");
    let filler = tmpfs.path().join("filler");
    let options = StorageOptions {
        segment_bytes: SEGMENT_BYTES,
    };
    let (mut log, _sm) = storage::open_with(&dir, Arc::new(NoopListener), options).unwrap();
    let disk = log.disk_health();
    // Under half a segment: no spare segment is prepared ahead.
    log.blocking_append((1..=10_000).map(ent)).await.unwrap();
    assert_eq!(disk.check(), Ok(()));

    fill(&filler, Duration::ZERO, || false);
    let Err(DiskFault::NoSpace { path, .. }) = disk.check() else {
        panic!("a full disk takes writes");
    };
    assert_eq!(path, dir);

    // More than a segment: the next segment cannot be made.
    let mut appender = log.clone();
    let append =
        tokio::spawn(async move { appender.blocking_append((10_001..=200_000).map(ent)).await });
    tokio::time::sleep(BLOCKED_FOR).await;
    assert!(!append.is_finished(), "an append went through a full disk");

    std::fs::remove_file(&filler).unwrap();
    tokio::time::timeout(RESUME_MAX, append)
        .await
        .expect("the append resumes once space returns")
        .unwrap()
        .unwrap();
    assert_eq!(disk.check(), Ok(()));
    let all = log.try_get_log_entries(..).await.unwrap();
    assert_eq!(all.len(), 200_000);
    assert!(all
        .iter()
        .zip(1..)
        .all(|(entry, index)| entry.log_id.index == index));
    drop((log, _sm));

    let (mut log, _sm) = storage::open_with(&dir, Arc::new(NoopListener), options).unwrap();
    assert_eq!(log.try_get_log_entries(..).await.unwrap().len(), 200_000);
}

/// A snapshot due while the disk is full (the chaos harness's `disk-full`
/// found a node stuck for good at a snapshot boundary: the database write
/// failed, and openraft stops a node whose storage fails) waits for room,
/// then is stored, and the node goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_due_on_a_full_disk_waits_and_is_stored_when_space_returns() {
    use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};

    let tmpfs = Tmpfs::mount("24m");
    let dir = tmpfs.path().join("data");
    let filler = tmpfs.path().join("filler");
    let options = StorageOptions {
        segment_bytes: SEGMENT_BYTES,
    };
    let (log, mut sm) = storage::open_with(&dir, Arc::new(NoopListener), options).unwrap();
    let disk = log.disk_health();
    fill(&filler, Duration::ZERO, || false);
    assert!(disk.check().is_err(), "a full disk takes writes");

    let mut builder = sm.get_snapshot_builder().await;
    let build = tokio::spawn(async move { builder.build_snapshot().await });
    tokio::time::sleep(BLOCKED_FOR).await;
    assert!(
        !build.is_finished(),
        "a snapshot was written to (or failed on) a full disk: {:?}",
        build.await
    );

    std::fs::remove_file(&filler).unwrap();
    let built = tokio::time::timeout(RESUME_MAX, build)
        .await
        .expect("the snapshot is stored once space returns")
        .unwrap()
        .expect("the snapshot is stored, not failed");
    let current = sm.get_current_snapshot().await.unwrap();
    assert_eq!(
        current.map(|s| s.meta.snapshot_id),
        Some(built.meta.snapshot_id)
    );
}
