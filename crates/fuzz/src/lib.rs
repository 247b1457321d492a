//! Fuzz targets: each takes arbitrary bytes and feeds them to a decoder that
//! reads what someone else wrote, and must never panic, whatever the bytes.
//!
//! - [`requests`]: every request message of the API, as tonic's codec
//!   decodes it from a client.
//! - [`commands`]: a run of log commands (postcard, as a leader's entry
//!   carries them) checked with `validate` and applied to a state that holds
//!   leases and locks, whose invariants are checked after each.
//! - [`wal`]: a log segment file, read by start-up's recovery scan, and
//!   each record's payload decoded as an entry.
//! - [`snapshots`]: snapshot bytes (a follower's install, a start-up's
//!   load) and backup files.
//! - [`raft`]: Raft messages between nodes, requests and replies.
//! - [`api::api`]: the whole path from a client's bytes through a real
//!   node's handlers (the checks that turn a request into a command) into
//!   the core, over a real socket.
//!
//! The driver ([`run`]) mutates a checked-in corpus (`corpus/<target>/`)
//! with a seeded generator, bounded in count and time: `tests/corpus.rs`
//! replays the corpus and runs a short bounded round of each target in CI;
//! `leasehold-fuzz TARGET --seconds S` runs one for as long as asked. For
//! coverage-guided runs, `libfuzzer/run.sh` builds the same targets under
//! libFuzzer.

pub mod api;
pub mod corpus;
pub mod mutate;

use leasehold_core::{Command, State};
use leasehold_server::raft::codec::decode;
use leasehold_server::raft::types::TypeConfig;
use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use prost::Message;

/// A fuzz target: a name (its corpus directory) and its function.
#[derive(Clone, Copy)]
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "requests",
        run: requests,
    },
    Target {
        name: "commands",
        run: commands,
    },
    Target {
        name: "wal",
        run: wal,
    },
    Target {
        name: "snapshots",
        run: snapshots,
    },
    Target {
        name: "raft",
        run: raft,
    },
    Target {
        name: "api",
        run: api::api,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().copied().find(|target| target.name == name)
}

/// Decodes `bytes` as each request message type of the API.
pub fn requests(bytes: &[u8]) {
    use leasehold_proto::v1 as pb;
    macro_rules! decode_each {
        ($($message:ty),+ $(,)?) => {
            $(let _ = <$message>::decode(bytes);)+
        };
    }
    decode_each!(
        pb::AcquireAllRequest,
        pb::AcquireRequest,
        pb::AddMemberRequest,
        pb::AddRoleRequest,
        pb::AddUserRequest,
        pb::AuditRequest,
        pb::CreateTokenRequest,
        pb::EventsRequest,
        pb::FencedGetRequest,
        pb::FencedPutRequest,
        pb::ForceReleaseRequest,
        pb::GetLeaseRequest,
        pb::GetLockRequest,
        pb::GrantRequest,
        pb::GrantRoleRequest,
        pb::IdentifyRequest,
        pb::IncidentsRequest,
        pb::KeepAliveRequest,
        pb::ListLeasesRequest,
        pb::ListLocksRequest,
        pb::ObserveRequest,
        pb::ProclaimRequest,
        pb::RaftPayload,
        pb::ReleaseRequest,
        pb::RemoveMemberRequest,
        pb::RevokeRequest,
        pb::RevokeTokenRequest,
        pb::SessionRequest,
        pb::SetUserQuotaRequest,
        pb::SetUserRolesRequest,
    );
}

/// Applies the commands `bytes` holds, one after another, to a state with
/// leases and a held lock; checks the invariants after each.
pub fn commands(bytes: &[u8]) {
    let mut state = corpus::busy_state();
    let mut rest = bytes;
    let mut at_unix_ms = 1_700_000_000_000;
    while let Ok((command, tail)) = postcard::take_from_bytes::<Command>(rest) {
        rest = tail;
        at_unix_ms += 1;
        if command.validate().is_ok() {
            state.apply(command, at_unix_ms);
        }
        if let Err(broken) = state.check_invariants() {
            panic!("an applied command broke an invariant: {broken}");
        }
    }
}

/// Recovers a log whose one segment file is `bytes`, and decodes each
/// record it finds as an entry.
pub fn wal(bytes: &[u8]) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let log = dir.path().join("log");
    std::fs::create_dir_all(&log).expect("the log directory");
    std::fs::write(log.join("log-00000000000000000001.wal"), bytes).expect("the segment");
    if let Ok(records) = leasehold_server::storage::wal_records(dir.path()) {
        for record in records {
            let start = usize::try_from(record.offset).unwrap_or(usize::MAX);
            let end = start.saturating_add(usize::try_from(record.bytes).unwrap_or(0));
            if let Some(payload) = bytes.get(start.saturating_add(8)..end) {
                let _ = postcard::from_bytes::<openraft::Entry<TypeConfig>>(payload);
            }
        }
    }
}

/// Decodes `bytes` as snapshot bytes, and as a backup file.
pub fn snapshots(bytes: &[u8]) {
    if let Ok(state) = leasehold_server::storage::decode_state(bytes) {
        check(&state);
    }
    if let Ok(backup) = leasehold_server::backup::parse(bytes) {
        if let Ok(state) = leasehold_server::storage::decode_state(&backup.data) {
            check(&state);
        }
    }
}

/// A decoded state's invariants may fail (the bytes can say anything);
/// checking them must not panic.
fn check(state: &State) {
    let _ = state.check_invariants();
}

/// Decodes `bytes` as each Raft message and reply.
pub fn raft(bytes: &[u8]) {
    let _ = decode::<AppendEntriesRequest<TypeConfig>>(bytes);
    let _ = decode::<VoteRequest<u64>>(bytes);
    let _ = decode::<InstallSnapshotRequest<TypeConfig>>(bytes);
    let _ = decode::<Result<AppendEntriesResponse<u64>, RaftError<u64>>>(bytes);
    let _ = decode::<Result<VoteResponse<u64>, RaftError<u64>>>(bytes);
    let _ =
        decode::<Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>>>(bytes);
}

/// What a run did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Ran {
    /// Inputs tried (the corpus, then mutations).
    pub executions: u64,
}

/// Runs `target` over `corpus`, then over mutations of it, until `rounds`
/// mutations were tried or `limit` passed. A panic is the target's
/// failure: it propagates, after the input is printed (hex) to replay.
pub fn run(
    target: Target,
    corpus: &[Vec<u8>],
    seed: u64,
    rounds: u64,
    limit: std::time::Duration,
) -> Ran {
    let mut ran = Ran::default();
    for input in corpus {
        try_one(target, input);
        ran.executions += 1;
    }
    let started = std::time::Instant::now();
    let mut mutator = mutate::Mutator::new(seed);
    let total = rounds.saturating_add(corpus.len() as u64);
    while ran.executions < total && started.elapsed() < limit {
        let input = mutator.next_input(corpus);
        try_one(target, &input);
        ran.executions += 1;
    }
    ran
}

fn try_one(target: Target, input: &[u8]) {
    let tried = std::panic::catch_unwind(|| (target.run)(input));
    if let Err(panic) = tried {
        eprintln!(
            "{}: the input that panicked ({} bytes, hex): {}",
            target.name,
            input.len(),
            input.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        std::panic::resume_unwind(panic);
    }
}
