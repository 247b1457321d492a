//! What the redb stores promise beyond openraft's suite: everything written
//! survives a fresh `open` of the same dir, a snapshot restores the state, and
//! the listener sees effects in log order.

use leasehold_core::{Applied, Command, OwnerInfo, State};
use leasehold_server::raft::types::{Batch, BatchOutcome, TypeConfig};
use leasehold_server::storage::{self, ApplyListener, NoopListener, OpenError};
use openraft::storage::{RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::testing::{blank_ent, log_id, membership_ent};
use openraft::{Entry, EntryPayload, RaftLogReader, RaftSnapshotBuilder, Vote};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// What a [`Recorder`] saw, in call order.
#[derive(Debug, PartialEq)]
enum Event {
    Applied {
        index: u64,
        revision: u64,
        applied: Vec<Applied>,
    },
    Reset {
        revision: u64,
    },
}

/// A listener that records every call, with the state's revision at the time.
#[derive(Default)]
struct Recorder(Mutex<Vec<Event>>);

impl Recorder {
    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl ApplyListener for Recorder {
    fn applied(&self, state: &State, index: u64, _at_unix_ms: u64, applied: &[Applied]) {
        let revision = state.revision().0;
        let applied = applied.to_vec();
        self.0.lock().unwrap().push(Event::Applied {
            index,
            revision,
            applied,
        });
    }

    fn reset(&self, state: &State) {
        self.0.lock().unwrap().push(Event::Reset {
            revision: state.revision().0,
        });
    }
}

fn grant() -> Command {
    Command::GrantLease {
        ttl_ms: 10_000,
        owner: OwnerInfo::default(),
        request_id: None,
    }
}

/// A normal entry at `index` (term 1, node 1) carrying `grants` lease grants.
fn batch_ent(index: u64, grants: usize) -> Entry<TypeConfig> {
    Entry {
        log_id: log_id(1, 1, index),
        payload: EntryPayload::Normal(Batch {
            at_unix_ms: 1_700_000_000_000 + index,
            commands: (0..grants).map(|_| grant()).collect(),
        }),
    }
}

fn members() -> BTreeSet<u64> {
    BTreeSet::from([1])
}

#[tokio::test]
async fn log_vote_and_committed_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let written = [
        blank_ent::<TypeConfig>(1, 1, 1),
        membership_ent::<TypeConfig>(1, 1, 2, vec![members()]),
        batch_ent(3, 2),
        batch_ent(4, 1),
        batch_ent(5, 1),
    ];
    let vote = Vote::new_committed(1, 1);
    let committed = Some(log_id(1, 1, 4));
    {
        let (mut log, _sm) = storage::open(dir.path(), Arc::new(NoopListener)).unwrap();
        log.save_vote(&vote).await.unwrap();
        log.blocking_append(written[..4].to_vec()).await.unwrap();
        log.save_committed(committed).await.unwrap();
        log.blocking_append(written[4..].to_vec()).await.unwrap();
        log.purge(log_id(1, 1, 1)).await.unwrap();
    }

    let (mut log, _sm) = storage::open(dir.path(), Arc::new(NoopListener)).unwrap();
    assert_eq!(log.read_vote().await.unwrap(), Some(vote));
    assert_eq!(log.read_committed().await.unwrap(), committed);
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(log_id(1, 1, 1)));
    assert_eq!(state.last_log_id, Some(log_id(1, 1, 5)));
    let read = log.try_get_log_entries(..).await.unwrap();
    assert_eq!(read, written[1..]);
    let middle = log.try_get_log_entries(3..5).await.unwrap();
    assert_eq!(middle, written[2..4]);
}

#[tokio::test]
async fn truncate_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut log, _sm) = storage::open(dir.path(), Arc::new(NoopListener)).unwrap();
        log.blocking_append((1..=5).map(|i| batch_ent(i, 1)))
            .await
            .unwrap();
        log.truncate(log_id(1, 1, 3)).await.unwrap();
    }
    let (mut log, _sm) = storage::open(dir.path(), Arc::new(NoopListener)).unwrap();
    let state = log.get_log_state().await.unwrap();
    assert_eq!(state.last_log_id, Some(log_id(1, 1, 2)));
    assert_eq!(log.try_get_log_entries(..).await.unwrap().len(), 2);
}

#[tokio::test]
async fn snapshot_survives_reopen_and_restores_state() {
    let dir = tempfile::tempdir().unwrap();
    let (expected_state, snapshot_meta) = {
        let (_log, mut sm) = storage::open(dir.path(), Arc::new(NoopListener)).unwrap();
        let entries = vec![
            membership_ent::<TypeConfig>(1, 1, 1, vec![members()]),
            batch_ent(2, 2),
            batch_ent(3, 1),
        ];
        sm.apply(entries).await.unwrap();
        let snapshot = sm
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        assert_eq!(snapshot.meta.last_log_id, Some(log_id(1, 1, 3)));
        (sm.shared().read(State::clone), snapshot.meta)
    };
    assert_eq!(expected_state.lease_count(), 3);

    let recorder = Arc::new(Recorder::default());
    let (_log, mut sm) = storage::open(dir.path(), recorder.clone()).unwrap();
    assert_eq!(sm.shared().read(State::clone), expected_state);
    assert_eq!(
        recorder.take(),
        vec![Event::Reset {
            revision: expected_state.revision().0
        }]
    );
    let (last_applied, membership) = sm.applied_state().await.unwrap();
    assert_eq!(last_applied, Some(log_id(1, 1, 3)));
    assert_eq!(membership, snapshot_meta.last_membership);
    let current = sm
        .get_current_snapshot()
        .await
        .unwrap()
        .expect("a stored snapshot");
    assert_eq!(current.meta, snapshot_meta);

    // The next snapshot gets a new id even though it covers the same log.
    let again = sm
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    assert_ne!(again.meta.snapshot_id, snapshot_meta.snapshot_id);
}

#[tokio::test]
async fn listener_sees_effects_in_log_order() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = Arc::new(Recorder::default());
    let (_log, mut sm) = storage::open(dir.path(), recorder.clone()).unwrap();
    let entries = vec![
        blank_ent::<TypeConfig>(1, 1, 1),
        batch_ent(2, 2),
        membership_ent::<TypeConfig>(1, 1, 3, vec![members()]),
        batch_ent(4, 1),
    ];

    let outcomes = sm.apply(entries).await.unwrap();

    assert_eq!(outcomes.len(), 4, "one response per entry");
    assert_eq!(outcomes[0], BatchOutcome::default());
    assert_eq!(outcomes[2], BatchOutcome::default());
    assert_eq!(outcomes[1].applied.len(), 2);
    assert_eq!(outcomes[3].applied.len(), 1);
    let revisions: Vec<u64> = outcomes
        .iter()
        .flat_map(|outcome| outcome.applied.iter().map(|applied| applied.revision.0))
        .collect();
    assert!(
        revisions.windows(2).all(|pair| pair[0] < pair[1]),
        "{revisions:?}"
    );
    assert_eq!(
        recorder.take(),
        vec![
            Event::Applied {
                index: 2,
                revision: revisions[1],
                applied: outcomes[1].applied.clone()
            },
            Event::Applied {
                index: 4,
                revision: revisions[2],
                applied: outcomes[3].applied.clone()
            },
        ]
    );
    assert_eq!(sm.shared().last_applied(), Some(log_id(1, 1, 4)));
}

#[tokio::test]
async fn installed_snapshot_replaces_state_and_resets_listener() {
    let (leader_dir, follower_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_log, mut leader) = storage::open(leader_dir.path(), Arc::new(NoopListener)).unwrap();
    leader.apply(vec![batch_ent(1, 3)]).await.unwrap();
    let snapshot = leader
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();

    let recorder = Arc::new(Recorder::default());
    let (_log, mut follower) = storage::open(follower_dir.path(), recorder.clone()).unwrap();
    follower.apply(vec![batch_ent(1, 1)]).await.unwrap();
    recorder.take();
    follower
        .install_snapshot(&snapshot.meta, snapshot.snapshot)
        .await
        .unwrap();

    let leader_state = leader.shared().read(State::clone);
    assert_eq!(follower.shared().read(State::clone), leader_state);
    assert_eq!(
        recorder.take(),
        vec![Event::Reset {
            revision: leader_state.revision().0
        }]
    );
    drop((_log, follower));
    let (_log, follower) = storage::open(follower_dir.path(), Arc::new(NoopListener)).unwrap();
    assert_eq!(follower.shared().read(State::clone), leader_state);
}

#[tokio::test]
async fn second_open_of_a_data_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = storage::open(dir.path(), Arc::new(NoopListener)).unwrap();
    let Err(error) = storage::open(dir.path(), Arc::new(NoopListener)) else {
        panic!("a second open of a locked data dir succeeded");
    };
    assert!(matches!(error, OpenError::AlreadyOpen { .. }), "{error:?}");
    assert!(
        error.to_string().contains("another `leasehold serve`"),
        "{error}"
    );
}
