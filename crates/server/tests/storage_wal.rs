//! The segmented log (`<data dir>/log/log-<first:020>.wal`) across reopens:
//! torn tails, truncation, purge and segment roll-over.

use leasehold_server::raft::types::{Batch, TypeConfig};
use leasehold_server::storage::{self, LogStore, NoopListener, StateMachineStore, StorageOptions};
use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::testing::log_id;
use openraft::{Entry, EntryPayload, RaftLogReader, Vote};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A normal entry at `index` of `term` with an empty batch (same size for
/// any small term and index).
fn ent(term: u64, index: u64) -> Entry<TypeConfig> {
    Entry {
        log_id: log_id(term, 1, index),
        payload: EntryPayload::Normal(Batch {
            at_unix_ms: 1_700_000_000_000,
            commands: Vec::new(),
        }),
    }
}

fn ents(term: u64, indexes: std::ops::RangeInclusive<u64>) -> Vec<Entry<TypeConfig>> {
    indexes.map(|index| ent(term, index)).collect()
}

fn open(dir: &Path, segment_bytes: u64) -> (LogStore, StateMachineStore) {
    let options = StorageOptions { segment_bytes };
    storage::open_with(dir, Arc::new(NoopListener), options).unwrap()
}

/// The segment files, in index order.
fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.join("log"))
        .unwrap()
        .map(|item| item.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "wal"))
        .collect();
    paths.sort();
    paths
}

/// The offset after each record of a segment, parsed from the headers
/// (`[format:4 bits | len:28 bits, u32 LE][crc u32 LE][payload]`, a zero
/// word ends the segment).
fn record_ends(path: &Path) -> Vec<u64> {
    let bytes = std::fs::read(path).unwrap();
    let mut ends = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let word = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let len = (word & 0x0fff_ffff) as usize;
        if word == 0 {
            break;
        }
        at += 8 + len;
        ends.push(at as u64);
    }
    ends
}

/// The offset after the last record of a segment.
fn data_end(path: &Path) -> u64 {
    *record_ends(path).last().unwrap()
}

async fn all(log: &mut LogStore) -> Vec<Entry<TypeConfig>> {
    log.try_get_log_entries(..).await.unwrap()
}

#[tokio::test]
async fn entries_vote_and_committed_survive_reopen_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let vote = Vote::new_committed(3, 1);
    {
        let (mut log, _sm) = open(dir.path(), 256);
        log.save_vote(&vote).await.unwrap();
        for index in 1..=20 {
            log.blocking_append([ent(1, index)]).await.unwrap();
        }
        log.blocking_append(ents(2, 21..=30)).await.unwrap();
        log.save_committed(Some(log_id(2, 1, 25))).await.unwrap();
    }
    assert!(segments(dir.path()).len() > 2, "{:?}", segments(dir.path()));

    let (mut log, _sm) = open(dir.path(), 256);
    assert_eq!(log.read_vote().await.unwrap(), Some(vote));
    assert_eq!(log.read_committed().await.unwrap(), Some(log_id(2, 1, 25)));
    let mut expected = ents(1, 1..=20);
    expected.extend(ents(2, 21..=30));
    assert_eq!(all(&mut log).await, expected);
    // Ranges crossing segment boundaries.
    for (start, end) in [(1, 31), (3, 9), (19, 23), (29, 40), (0, 2)] {
        let read = log.try_get_log_entries(start..end).await.unwrap();
        let want: Vec<_> = expected
            .iter()
            .filter(|e| (start..end).contains(&e.log_id.index))
            .cloned()
            .collect();
        assert_eq!(read, want, "{start}..{end}");
    }
    log.blocking_append([ent(2, 31)]).await.unwrap();
    assert_eq!(all(&mut log).await.len(), 31);
}

#[tokio::test]
async fn an_entry_larger_than_a_segment_gets_its_own() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut log, _sm) = open(dir.path(), 64);
        log.blocking_append(ents(1, 1..=40)).await.unwrap();
        log.blocking_append(ents(1, 41..=42)).await.unwrap();
    }
    let (mut log, _sm) = open(dir.path(), 64);
    assert_eq!(all(&mut log).await, ents(1, 1..=42));
    assert_eq!(segments(dir.path()).len(), 2);
}

/// Writes 1..=5 (two appends), damages the end of the last record with
/// `damage`, and checks that a reopen keeps exactly what precedes the
/// damaged record, then that appending over the damage sticks.
async fn recovers_before(damage: impl FnOnce(&Path), kept: u64) {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut log, _sm) = open(dir.path(), 1 << 20);
        log.blocking_append(ents(1, 1..=3)).await.unwrap();
        log.blocking_append(ents(1, 4..=5)).await.unwrap();
    }
    damage(&segments(dir.path())[0]);
    {
        let (mut log, _sm) = open(dir.path(), 1 << 20);
        assert_eq!(all(&mut log).await, ents(1, 1..=kept));
        let state = log.get_log_state().await.unwrap();
        assert_eq!(state.last_log_id, Some(log_id(1, 1, kept)));
        // Same-size entries of a new term over the damaged ones.
        log.blocking_append([ent(2, kept + 1)]).await.unwrap();
    }
    let (mut log, _sm) = open(dir.path(), 1 << 20);
    let mut expected = ents(1, 1..=kept);
    expected.push(ent(2, kept + 1));
    assert_eq!(all(&mut log).await, expected);
}

#[tokio::test]
async fn garbage_after_the_tail_is_ignored() {
    recovers_before(
        |path| {
            let file = OpenOptions::new().write(true).open(path).unwrap();
            let end = data_end(path);
            // A plausible header with a wrong crc, then noise.
            let mut garbage = vec![10, 0, 0, 0, 1, 2, 3, 4];
            garbage.extend([0xA5; 40]);
            file.write_all_at(&garbage, end).unwrap();
        },
        5,
    )
    .await;
}

#[tokio::test]
async fn a_file_cut_mid_record_keeps_the_records_before() {
    recovers_before(
        |path| {
            let file = OpenOptions::new().write(true).open(path).unwrap();
            file.set_len(data_end(path) - 3).unwrap();
        },
        4,
    )
    .await;
}

#[tokio::test]
async fn a_flipped_byte_in_the_last_record_drops_only_it() {
    recovers_before(
        |path| {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .unwrap();
            let at = data_end(path) - 2;
            let mut byte = [0];
            file.read_exact_at(&mut byte, at).unwrap();
            file.write_all_at(&[byte[0] ^ 0x40], at).unwrap();
        },
        4,
    )
    .await;
}

#[tokio::test]
async fn a_torn_record_in_the_middle_of_an_append_hides_the_rest_for_good() {
    // The 4th of 5 records is damaged: the intact 5th after it must not come
    // back once a new, equally long, 4th record is written in front of it.
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut log, _sm) = open(dir.path(), 1 << 20);
        log.blocking_append(ents(1, 1..=5)).await.unwrap();
    }
    let path = &segments(dir.path())[0];
    let ends = record_ends(path);
    assert_eq!(ends.len(), 5);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    file.write_all_at(&[0xFF], ends[2] + 12).unwrap();
    {
        let (mut log, _sm) = open(dir.path(), 1 << 20);
        assert_eq!(all(&mut log).await, ents(1, 1..=3));
        log.blocking_append([ent(2, 4)]).await.unwrap();
    }
    let (mut log, _sm) = open(dir.path(), 1 << 20);
    let mut expected = ents(1, 1..=3);
    expected.push(ent(2, 4));
    assert_eq!(all(&mut log).await, expected);
}

#[tokio::test]
async fn truncated_entries_never_come_back() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut log, _sm) = open(dir.path(), 256);
        for index in 1..=30 {
            log.blocking_append([ent(1, index)]).await.unwrap();
        }
        let before = segments(dir.path()).len();
        log.truncate(log_id(1, 1, 6)).await.unwrap();
        assert!(
            segments(dir.path()).len() < before,
            "later segments deleted"
        );
        assert_eq!(all(&mut log).await, ents(1, 1..=5));
        // A shorter rewrite of the cut-off part: old records must not follow it.
        log.blocking_append([ent(2, 6)]).await.unwrap();
    }
    {
        let (mut log, _sm) = open(dir.path(), 256);
        let mut expected = ents(1, 1..=5);
        expected.push(ent(2, 6));
        assert_eq!(all(&mut log).await, expected);
        log.truncate(log_id(2, 1, 6)).await.unwrap();
    }
    let (mut log, _sm) = open(dir.path(), 256);
    assert_eq!(all(&mut log).await, ents(1, 1..=5));
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_log_id, Some(log_id(1, 1, 5)));
}

#[tokio::test]
async fn purge_deletes_whole_old_segments_only() {
    let dir = tempfile::tempdir().unwrap();
    let first_segment = {
        let (mut log, _sm) = open(dir.path(), 256);
        for index in 1..=30 {
            log.blocking_append([ent(1, index)]).await.unwrap();
        }
        let before = segments(dir.path());
        log.purge(log_id(1, 1, 1)).await.unwrap();
        assert_eq!(segments(dir.path()), before, "segment 1 still holds 2..");
        log.purge(log_id(1, 1, 20)).await.unwrap();
        let after = segments(dir.path());
        assert!(after.len() < before.len(), "{before:?} -> {after:?}");
        assert!(!after.contains(&before[0]));
        assert_eq!(all(&mut log).await, ents(1, 21..=30));
        after[0].clone()
    };
    let (mut log, _sm) = open(dir.path(), 256);
    assert_eq!(segments(dir.path())[0], first_segment);
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 1, 20)));
    assert_eq!(state.last_log_id, Some(log_id(1, 1, 30)));
    assert_eq!(all(&mut log).await, ents(1, 21..=30));
}

#[tokio::test]
async fn a_purge_past_the_end_restarts_the_log_after_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut log, _sm) = open(dir.path(), 1 << 20);
        log.blocking_append(ents(1, 1..=5)).await.unwrap();
        log.purge(log_id(2, 1, 100)).await.unwrap();
        log.blocking_append(ents(2, 101..=102)).await.unwrap();
    }
    let (mut log, _sm) = open(dir.path(), 1 << 20);
    assert_eq!(all(&mut log).await, ents(2, 101..=102));
    assert_eq!(segments(dir.path()).len(), 1, "the old segment is gone");
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(2, 1, 100)));
}
