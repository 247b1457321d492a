//! # leasehold-core
//!
//! The pure Leasehold state machine: leases, locks, FIFO waiters and fencing
//! tokens. It does no I/O, reads no clock and never awaits: time enters as an
//! argument (`at_unix_ms`, the proposer's wall time carried in the log entry,
//! used only for display) and lease expiry arrives as a command from the
//! server's timer layer. Every replica applies the same commands in the same
//! order and reaches the same state, which is what makes Raft replication of
//! it sound.
//!
//! Layout: [`command`] (what may change), [`outcome`] (what a change
//! produced), [`State`] (the tables and `apply`), [`LockName`] (the one way to
//! build a name), [`FencedKey`] and [`FencedEntry`] (the fenced store, a
//! key space written only by a lock's current holder), [`limits`] (every
//! bound, by name, and [`Limit`] naming each as data), [`LockError`] and its
//! [`Reason`] (the closed set of reasons every layer matches), and
//! [`lessor`] (the deadlines the leader enforces, on monotonic milliseconds
//! the server passes in), and [`auth`] (principals, roles, tokens, quotas
//! and the audit trail, replicated like everything else), and [`permits`]
//! (the first-come-first-served grant rule semaphores and read-write locks
//! share).
//!
//! ```
//! use leasehold_core::{Command, OwnerInfo, Reply, State};
//!
//! let mut state = State::default();
//! let granted = state.apply(
//!     Command::GrantLease { ttl_ms: 10_000, owner: OwnerInfo::default(), request_id: None },
//!     0,
//! );
//! let Ok(Reply::LeaseGranted { lease, .. }) = granted.outcome else { panic!() };
//! assert_eq!(lease.0, granted.revision.0);
//! ```

pub mod auth;
pub mod command;
mod compact_text;
mod dedup;
pub mod election;
mod error;
mod fenced;
mod holdings_digest;
mod ids;
mod lease;
mod lease_owner;
pub mod lessor;
pub mod limits;
mod lock;
pub mod lock_set;
mod metadata;
mod name;
mod name_set;
pub mod nearby;
mod one_or_many;
pub mod outcome;
pub mod permits;
mod pool;
mod reason;
mod state;
mod thin_text;
mod wait_queue;
mod wait_set;

pub use command::{Acquire, Command, OwnerInfo, PROTOCOL_VERSION};
pub use election::Proclaim;
pub use error::LockError;
pub use fenced::{check_fenced_value, FencedEntry, FencedKey};
pub use holdings_digest::{holdings_digest, NO_HOLDS_DIGEST};
pub use ids::{LeaseId, RequestId, Revision, Token};
pub use lease::{Lease, LeaseView, RENEWALS_MODULUS};
pub use lease_owner::LeaseOwner;
pub use limits::Limit;
pub use lock::{term_ms, Holder, Lock, LockDelay, LockView, Waiter};
pub use lock_set::AcquireAll;
pub use metadata::Metadata;
pub use name::{LockName, BENCH_PREFIX};
pub use name_set::NameSet;
pub use outcome::{
    Applied, Effect, ForcedBy, FreeCause, Outcome, Reply, WaitEndCause, RENEWAL_NAMES_LOGGED,
};
pub use pool::{AcquirePermits, PermitAsk, Pool, PoolKind, PoolView};
pub use reason::{Reason, UnknownReason};
pub use state::{FailedRelease, ForceRelease, ForceReleaseRecord, State};
pub use wait_queue::WaitQueue;
pub use wait_set::WaitSet;
