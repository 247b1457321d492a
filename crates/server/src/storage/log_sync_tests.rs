use super::*;
use crate::raft::types::{Batch, TypeConfig};
use crate::storage::wal::{Encoded, DEFAULT_SEGMENT_BYTES};
use crate::storage::DiskHealth;
use openraft::testing::log_id;
use openraft::{Entry, EntryPayload};
use std::time::Duration;

fn open(dir: &std::path::Path) -> Arc<Wal> {
    let disk = Arc::new(DiskHealth::new(dir, DEFAULT_SEGMENT_BYTES));
    Arc::new(Wal::open(dir, DEFAULT_SEGMENT_BYTES, None, disk).unwrap())
}

fn encoded(index: u64) -> Encoded {
    Encoded::new([Entry::<TypeConfig> {
        log_id: log_id(1, 1, index),
        payload: EntryPayload::Normal(Batch {
            at_unix_ms: 1_700_000_000_000,
            commands: Vec::new(),
        }),
    }])
    .unwrap()
}

/// Submits a job per index (each written first); returns what completed,
/// in the order it completed.
fn write_and_sync(wal: &Arc<Wal>, sync: &LogSync, indexes: &[u64]) -> Vec<(u64, bool)> {
    let (completed, completions) = std::sync::mpsc::channel();
    for &index in indexes {
        let written = wal.write(&encoded(index)).unwrap();
        let completed = completed.clone();
        let done: Done = Box::new(move |outcome| completed.send((index, outcome.is_ok())).unwrap());
        sync.submit(written, Instant::now(), done);
    }
    indexes
        .iter()
        .map(|_| completions.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect()
}

#[test]
fn writes_complete_in_the_order_submitted() {
    let dir = tempfile::tempdir().unwrap();
    let wal = open(dir.path());
    let sync = LogSync::spawn(wal.clone()).unwrap();
    let completed = write_and_sync(&wal, &sync, &[1, 2, 3, 4, 5]);
    assert_eq!(completed, [1, 2, 3, 4, 5].map(|index| (index, true)));
}

#[test]
fn written_entries_are_readable_before_their_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let wal = open(dir.path());
    wal.write(&encoded(1)).unwrap();
    assert_eq!(wal.last_log_id(), Some(log_id(1, 1, 1)));
}

#[test]
fn synced_entries_are_there_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let wal = open(dir.path());
        let sync = LogSync::spawn(wal.clone()).unwrap();
        write_and_sync(&wal, &sync, &[1, 2, 3]);
    }
    assert_eq!(open(dir.path()).last_log_id(), Some(log_id(1, 1, 3)));
}

#[test]
fn a_job_after_the_thread_stopped_fails_instead_of_hanging() {
    let (jobs, queue) = mpsc::channel::<Job>();
    drop(queue);
    let sync = LogSync { jobs };
    let (completed, completion) = std::sync::mpsc::channel();
    let done: Done = Box::new(move |outcome| completed.send(outcome.is_err()).unwrap());
    sync.submit(Written::nothing(), Instant::now(), done);
    assert!(completion.recv_timeout(Duration::from_secs(1)).unwrap());
}
