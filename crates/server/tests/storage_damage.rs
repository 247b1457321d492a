//! Damage on disk: a bad log record followed by a later append, or at the
//! end of a segment that a later one follows, and a snapshot that fails its
//! crc, are refused at open with the file, the offset and what to do; a torn
//! tail (made by `tear_wal_tail`, as a crash mid-append leaves it) is
//! erased and every record before it kept.

use leasehold_server::raft::types::{Batch, TypeConfig};
use leasehold_server::storage::{
    self, LogStore, NoopListener, OpenError, StateMachineStore, StorageOptions,
};
use openraft::storage::{RaftLogStorageExt, RaftStateMachine};
use openraft::testing::{log_id, membership_ent};
use openraft::{Entry, EntryPayload, RaftLogReader, RaftSnapshotBuilder};
use std::collections::BTreeSet;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

fn ent(index: u64) -> Entry<TypeConfig> {
    Entry {
        log_id: log_id(1, 1, index),
        payload: EntryPayload::Normal(Batch {
            at_unix_ms: 1_700_000_000_000,
            commands: Vec::new(),
        }),
    }
}

fn open(dir: &Path, segment_bytes: u64) -> Result<(LogStore, StateMachineStore), OpenError> {
    let options = StorageOptions { segment_bytes };
    storage::open_with(dir, Arc::new(NoopListener), options)
}

/// Appends 1..=9, three entries per append, in segments of `segment_bytes`.
async fn write_nine(dir: &Path, segment_bytes: u64) {
    let (mut log, _sm) = open(dir, segment_bytes).unwrap();
    for first in [1, 4, 7] {
        log.blocking_append((first..first + 3).map(ent))
            .await
            .unwrap();
    }
}

/// Flips one payload byte of the record holding `index`; returns its place.
fn flip(dir: &Path, index: u64) -> storage::RecordPlace {
    let records = storage::wal_records(dir).unwrap();
    let place = records.into_iter().find(|r| r.index == index).unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&place.segment)
        .unwrap();
    let at = place.offset + place.bytes - 2;
    let mut byte = [0];
    file.read_exact_at(&mut byte, at).unwrap();
    file.write_all_at(&[byte[0] ^ 0x10], at).unwrap();
    place
}

fn refusal(dir: &Path, segment_bytes: u64) -> String {
    match open(dir, segment_bytes) {
        Ok(_) => panic!("a damaged log opened"),
        Err(error) => error.to_string(),
    }
}

#[tokio::test]
async fn a_bad_record_before_a_later_append_is_refused_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    write_nine(dir.path(), 1 << 20).await;
    let place = flip(dir.path(), 5);
    let message = refusal(dir.path(), 1 << 20);
    assert!(
        message.contains(&format!("corrupt log record at byte {}", place.offset)),
        "{message}"
    );
    assert!(
        message.contains(&place.segment.display().to_string()),
        "{message}"
    );
    assert!(message.contains("leasehold member add"), "{message}");
    // Refusing changed nothing: it is refused again, the same way.
    assert_eq!(refusal(dir.path(), 1 << 20), message);
}

#[tokio::test]
async fn a_bad_last_record_of_a_segment_that_another_follows_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Room for one append (three records of 19 bytes) per segment.
    write_nine(dir.path(), 64).await;
    let records = storage::wal_records(dir.path()).unwrap();
    assert_ne!(records[2].segment, records[3].segment, "{records:?}");
    let place = flip(dir.path(), 3);
    let message = refusal(dir.path(), 64);
    assert!(
        message.contains(&format!("corrupt log record at byte {}", place.offset)),
        "{message}"
    );
}

#[tokio::test]
async fn a_bad_record_in_the_last_append_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    write_nine(dir.path(), 1 << 20).await;
    flip(dir.path(), 8);
    let (mut log, _sm) = open(dir.path(), 1 << 20).unwrap();
    let kept = log.try_get_log_entries(..).await.unwrap();
    assert_eq!(kept, (1..=7).map(ent).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_torn_tail_is_erased_and_everything_before_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    write_nine(dir.path(), 1 << 20).await;
    let before = storage::wal_records(dir.path()).unwrap();
    let torn = storage::tear_wal_tail(dir.path()).unwrap();
    let last = before.last().unwrap();
    assert_eq!(torn.offset, last.offset + last.bytes);
    assert!(torn.written_bytes < torn.claimed_bytes, "{torn:?}");
    {
        let (mut log, _sm) = open(dir.path(), 1 << 20).unwrap();
        let kept = log.try_get_log_entries(..).await.unwrap();
        assert_eq!(kept, (1..=9).map(ent).collect::<Vec<_>>());
        log.blocking_append([ent(10)]).await.unwrap();
    }
    let (mut log, _sm) = open(dir.path(), 1 << 20).unwrap();
    let kept = log.try_get_log_entries(..).await.unwrap();
    assert_eq!(kept, (1..=10).map(ent).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_snapshot_that_fails_its_crc_is_refused_with_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_log, mut sm) = open(dir.path(), 1 << 20).unwrap();
        let members = BTreeSet::from([1u64]);
        let entries = vec![membership_ent::<TypeConfig>(1, 1, 1, vec![members])];
        sm.apply(entries).await.unwrap();
        sm.get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
    }
    {
        // The snapshot's bytes are the one file in `snapshots/`.
        let files: Vec<_> = std::fs::read_dir(dir.path().join("snapshots"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&files[0])
            .unwrap();
        let mut first = [0u8; 1];
        file.read_exact_at(&mut first, 0).unwrap();
        file.write_all_at(&[first[0] ^ 0x01], 0).unwrap();
    }
    let message = refusal(dir.path(), 1 << 20);
    assert!(message.contains("the snapshot is damaged"), "{message}");
    assert!(message.contains("chunk at byte 0 of its"), "{message}");
    assert!(message.contains("kept in the file"), "{message}");
    assert!(message.contains("snapshots/"), "{message}");
    assert!(message.contains("leasehold.redb"), "{message}");
    assert!(message.contains("from a backup"), "{message}");
}

#[tokio::test]
async fn a_record_of_a_newer_format_is_refused_naming_both_formats_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    write_nine(dir.path(), 1 << 20).await;
    let newer = storage::DATA_FORMAT + 1;
    let records = storage::wal_records(dir.path()).unwrap();
    let place = records.into_iter().find(|r| r.index == 9).unwrap();
    storage::rewrite_wal_record_format(dir.path(), 9, newer).unwrap();
    let written = std::fs::read(&place.segment).unwrap();
    let message = refusal(dir.path(), 1 << 20);
    assert!(
        message.contains(&format!("written by data format {newer}"))
            && message.contains(&format!("format {} and older", storage::DATA_FORMAT)),
        "{message}"
    );
    // Not taken for a torn tail and erased: the segment is as it was, for
    // the build that wrote the record to read.
    assert!(
        std::fs::read(&place.segment).unwrap() == written,
        "the refused segment changed"
    );
}

#[tokio::test]
async fn records_of_the_previous_format_read_beside_this_one() {
    let dir = tempfile::tempdir().unwrap();
    write_nine(dir.path(), 1 << 20).await;
    for index in 1..=5 {
        storage::rewrite_wal_record_format(dir.path(), index, 1).unwrap();
    }
    let (mut log, _sm) = open(dir.path(), 1 << 20).unwrap();
    let read = log.try_get_log_entries(1..10).await.unwrap();
    assert_eq!(read, (1..10).map(ent).collect::<Vec<_>>());
}
