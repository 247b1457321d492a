//! The corpus: inputs each target starts from, checked in under
//! `corpus/<target>/`, and the seeds that made them ([`seeds`]: valid
//! encodings, which mutations then bend). A state with leases, a held lock
//! and a queue ([`busy_state`]) gives the command target something to
//! break.

use leasehold_core::{
    Acquire, AcquireAll, AcquirePermits, Command, LeaseId, LockName, OwnerInfo, PermitAsk, State,
};
use leasehold_server::raft::codec::encode;
use leasehold_server::raft::types::{Batch, TypeConfig};
use openraft::raft::{AppendEntriesRequest, VoteRequest};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Vote};
use prost::Message;
use std::path::{Path, PathBuf};

/// The checked-in corpus of `target`.
pub fn dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

/// Every input in the corpus of `target`, in name order.
pub fn load(target: &str) -> std::io::Result<Vec<Vec<u8>>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir(target))?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<Result<_, _>>()?;
    paths.sort();
    paths.iter().map(std::fs::read).collect()
}

fn name(text: &str) -> LockName {
    LockName::parse(text).expect("a valid name")
}

fn grant() -> Command {
    Command::GrantLease {
        ttl_ms: 10_000,
        owner: OwnerInfo::default(),
        request_id: None,
    }
}

fn acquire(lease: u64, lock: &str, wait_ms: u64) -> Command {
    Command::Acquire(Acquire {
        lease: LeaseId(lease),
        name: name(lock),
        wait_ms,
        request_id: None,
        fenced: true,
        lock_delay_ms: 0,
        max_hold_ms: 0,
        metadata: Default::default(),
    })
}

/// Commands that make a state with two leases (ids 1 and 2), a lock held
/// by one and waited for by the other, a semaphore and a set waiting.
fn setup() -> Vec<Command> {
    vec![
        grant(),
        grant(),
        acquire(1, "a", 0),
        acquire(2, "a", 60_000),
        Command::AcquirePermits(AcquirePermits {
            lease: LeaseId(1),
            name: name("slots"),
            ask: PermitAsk::Semaphore {
                permits: 2,
                count: 1,
            },
            wait_ms: 0,
            request_id: None,
            fenced: false,
        }),
        Command::AcquireAll(AcquireAll {
            lease: LeaseId(2),
            names: vec![name("a"), name("b")],
            wait_ms: 60_000,
            request_id: None,
            fenced: false,
        }),
    ]
}

/// A state with leases, a held lock, a queue, a semaphore and a waiting
/// set.
pub fn busy_state() -> State {
    let mut state = State::default();
    for (at, command) in setup().into_iter().enumerate() {
        state.apply(command, 1_700_000_000_000 + at as u64);
    }
    state
}

/// The seed inputs of `target`: valid encodings of what it reads.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    match target {
        "requests" => request_seeds(),
        "commands" => vec![command_run(&setup()), command_run(&[acquire(2, "b", 0)])],
        "wal" => vec![segment(&[entry(1), entry(2)])],
        "snapshots" => snapshot_seeds(),
        "raft" => raft_seeds(),
        "api" => api_seeds(),
        _ => Vec::new(),
    }
}

fn request_seeds() -> Vec<Vec<u8>> {
    use leasehold_proto::v1 as pb;
    vec![
        pb::AcquireRequest {
            lease: 7,
            name: "jobs/nightly".into(),
            wait_ms: 1_000,
            ..Default::default()
        }
        .encode_to_vec(),
        pb::GrantRequest {
            ttl_ms: 10_000,
            ..Default::default()
        }
        .encode_to_vec(),
        pb::FencedPutRequest {
            key: "cfg/leader".into(),
            value: b"node-1".to_vec(),
            lock: "leader".into(),
            token: 9,
            ..Default::default()
        }
        .encode_to_vec(),
    ]
}

/// Commands as a leader's entry carries them: postcard, back to back.
fn command_run(commands: &[Command]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for command in commands {
        bytes = postcard::to_extend(command, bytes).expect("encodes");
    }
    bytes
}

fn entry(index: u64) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Batch {
            at_unix_ms: 1_700_000_000_000,
            commands: setup(),
        }),
    }
}

/// A segment holding `entries`, written by a real log store.
fn segment(entries: &[Entry<TypeConfig>]) -> Vec<u8> {
    use openraft::storage::RaftLogStorageExt;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let runtime = tokio_runtime();
    runtime.block_on(async {
        let listener = std::sync::Arc::new(leasehold_server::storage::NoopListener);
        let (mut log, _machine) =
            leasehold_server::storage::open(dir.path(), listener).expect("a new data dir");
        log.blocking_append(entries.to_vec())
            .await
            .expect("appended");
    });
    let records = leasehold_server::storage::wal_records(dir.path()).expect("the log reads");
    let last = records.last().expect("a record");
    let bytes = std::fs::read(&last.segment).expect("the segment");
    // The records, and a little of the zeros after them.
    bytes[..(last.offset + last.bytes) as usize + 16].to_vec()
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn snapshot_seeds() -> Vec<Vec<u8>> {
    let data = leasehold_server::storage::encode_state(busy_state()).expect("encodes");
    let header = leasehold_server::backup::header_for(&data, Default::default());
    let mut backup = leasehold_server::backup::preamble(&header);
    backup.extend_from_slice(&data);
    vec![data, backup]
}

fn raft_seeds() -> Vec<Vec<u8>> {
    let append = AppendEntriesRequest::<TypeConfig> {
        vote: Vote::new_committed(1, 1),
        prev_log_id: Some(LogId::new(CommittedLeaderId::new(1, 1), 1)),
        entries: vec![entry(2)],
        leader_commit: Some(LogId::new(CommittedLeaderId::new(1, 1), 1)),
    };
    let vote = VoteRequest::new(Vote::new(2, 3), None);
    vec![
        encode(&append).expect("encodes"),
        encode(&vote).expect("encodes"),
    ]
}

/// A valid request for each of a few methods of the lock data path, after
/// the byte that picks the method: a grant, an acquire and release under
/// lease 1, a renewal, a fenced write, a read.
fn api_seeds() -> Vec<Vec<u8>> {
    use leasehold_proto::v1 as pb;
    let methods = crate::api::called_methods();
    let pick = |path: &str| {
        let at = methods.iter().position(|m| m.path == path);
        u8::try_from(at.expect("a called method")).expect("fewer than 256 methods")
    };
    let seed = |path: &str, message: Vec<u8>| [vec![pick(path)], message].concat();
    let (lease, name) = (1, "jobs/nightly".to_owned());
    vec![
        seed(
            "/leasehold.v1.Lease/Grant",
            pb::GrantRequest {
                ttl_ms: 10_000,
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        seed(
            "/leasehold.v1.Lock/Acquire",
            pb::AcquireRequest {
                lease,
                name: name.clone(),
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        seed(
            "/leasehold.v1.Lease/KeepAlive",
            pb::KeepAliveRequest {
                lease,
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        seed(
            "/leasehold.v1.FencedStore/Put",
            pb::FencedPutRequest {
                key: "cfg".into(),
                value: b"v".to_vec(),
                lock: name.clone(),
                token: 1,
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        seed(
            "/leasehold.v1.Lock/Release",
            pb::ReleaseRequest {
                lease,
                name: name.clone(),
                token: 1,
                ..Default::default()
            }
            .encode_to_vec(),
        ),
        seed(
            "/leasehold.v1.Lock/Get",
            pb::GetLockRequest {
                name,
                ..Default::default()
            }
            .encode_to_vec(),
        ),
    ]
}
