//! What applying a command produced: the caller's reply (or error), and the
//! effects the server reacts to (wake a waiter, arm or disarm a timer).

use crate::{FencedKey, LeaseId, LockError, LockName, Revision, Token};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The caller's result of one command.
pub type Outcome = Result<Reply, LockError>;

/// Everything one `apply` produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// The state's revision after this command.
    pub revision: Revision,
    /// What the proposer of the command is told.
    pub outcome: Outcome,
    /// Side effects for the server: waiters to wake, timers to arm or disarm.
    pub effects: Vec<Effect>,
}

/// A successful command's reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// A lease was granted (or a retried grant found its first outcome).
    LeaseGranted { lease: LeaseId, ttl_ms: u64 },
    /// A keep-alive was recorded.
    KeptAlive { lease: LeaseId, ttl_ms: u64 },
    /// The lease is gone; these locks were released by it.
    LeaseEnded { released: Vec<LockName> },
    /// The caller holds the lock under `token`.
    Acquired {
        token: Token,
        /// The lease already held this lock; `token` is the existing one.
        already_held: bool,
    },
    /// The caller is queued; the grant arrives later as
    /// [`Effect::LockGranted`]. `position` 1 is the head.
    Queued { position: u32 },
    /// The lock was released.
    Released,
    /// The waiter left the queue (or was not queued). If the lease holds the
    /// lock by now (granted before the cancel applied), `holder_token` says so.
    WaitEnded { holder_token: Option<Token> },
    /// A timer command applied (or found nothing left to do).
    TimerApplied,
    /// A fenced put was accepted: the key now holds the value under `token`.
    FencedStored { token: Token },
    /// A force release applied: `lease` held the lock; `released` lists
    /// every lock freed (just the named one, or all of the lease's locks if
    /// `lease_revoked`).
    ForceReleased {
        lease: LeaseId,
        released: Vec<LockName>,
        lease_revoked: bool,
    },
    /// An auth change applied. Appended last so stored replies still decode.
    AuthChanged,
    /// An audit entry was appended as record `seq`.
    Audited { seq: u64 },
    /// The leader holding an election under `token` set its value.
    /// Appended last so stored replies still decode.
    Proclaimed { token: Token },
    /// The caller holds every lock of the set it asked for, in its order,
    /// under these tokens. Appended last so stored replies still decode.
    AcquiredAll {
        tokens: Vec<Token>,
        /// The lease already held them all (a retry after the grant).
        already_held: bool,
    },
}

/// Why a holder stopped holding a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FreeCause {
    Released,
    LeaseRevoked,
    LeaseExpired,
    MaxHoldExceeded,
}

impl FreeCause {
    /// The metric label: the variant's name in snake case.
    pub fn label(self) -> &'static str {
        match self {
            FreeCause::Released => "released",
            FreeCause::LeaseRevoked => "lease_revoked",
            FreeCause::LeaseExpired => "lease_expired",
            FreeCause::MaxHoldExceeded => "max_hold_exceeded",
        }
    }
}

/// Why a waiter left a queue without being granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WaitEndCause {
    /// The caller went away (its stream or request was dropped).
    Cancelled,
    /// The waiter's deadline passed.
    TimedOut,
    LeaseRevoked,
    LeaseExpired,
}

/// Who forced a lock free, and why (from the force release command), for
/// the event log and the holder's next keep-alive reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForcedBy {
    /// The operator (or tool) that asked.
    pub caller: String,
    /// The reason they gave.
    pub reason: String,
}

/// How many of a lease's locks a renewal's effect names, for its log line:
/// not a copy of a thousand names at every renewal of a lease holding them.
pub const RENEWAL_NAMES_LOGGED: usize = 8;

/// A side effect of applying a command, for the server's waiter registry,
/// timer layer, metrics and event log. Each carries what those sinks need
/// (owner names, renewal counts, who forced a release), so no sink reads
/// the state back. Effects are never stored (the log holds commands, a
/// snapshot holds the state, the dedup memory holds [`Reply`]s): their
/// shape may change freely.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effect {
    /// A lease was granted or renewed: (re)arm its expiry timer at apply time + ttl.
    LeaseRenewed {
        lease: LeaseId,
        ttl_ms: u64,
        /// Renewals so far (0 at the grant): a timer armed for an older
        /// count is stale.
        renewals: u64,
        /// The lease's owner name, for the renewal log.
        owner: String,
        /// The first [`RENEWAL_NAMES_LOGGED`] locks the lease
        /// holds and their tokens, for the renewal log.
        held: Vec<(LockName, Token)>,
        /// How many locks the lease holds.
        holds: usize,
    },
    /// A lease is gone (revoked or expired): disarm its timer.
    LeaseEnded { lease: LeaseId, expired: bool },
    /// `lease` now holds `name` under `token`. `from_queue`: a waiter was
    /// granted (wake it). `max_hold_ms` > 0: arm the hold timer.
    LockGranted {
        name: LockName,
        lease: LeaseId,
        token: Token,
        from_queue: bool,
        max_hold_ms: u64,
        /// The lease's owner name, for the log and the event.
        owner: String,
        /// The holder's election value (its metadata entry
        /// [`crate::election::VALUE_KEY`]), for the event and observers.
        value: Option<String>,
    },
    /// The holder `lease` with `token` stopped holding `name`.
    LockFreed {
        name: LockName,
        lease: LeaseId,
        token: Token,
        /// The grant's proposal wall time (display only), so a node can
        /// tell how long the hold lasted.
        acquired_unix_ms: u64,
        /// How it was freed: `Released` for a force release of one lock,
        /// `LeaseRevoked` for each lock of a force-revoked lease.
        cause: FreeCause,
        /// An operator's force release freed it (break-glass), so metrics
        /// and the event log can count it apart from holders' own releases.
        forced: Option<ForcedBy>,
        /// The holder's owner name, for the log and the event: shared,
        /// because a lease's end frees all its locks at once, and a string
        /// each was a tenth of an expiry storm's apply time.
        owner: Arc<str>,
    },
    /// A waiter left the queue without a grant (wake it with an error).
    WaiterRemoved {
        name: LockName,
        lease: LeaseId,
        cause: WaitEndCause,
        /// The waiting lease's owner name, for the event.
        owner: String,
    },
    /// A release was refused (no such lock, not the holder, lease gone):
    /// remembered in [`crate::State::failed_releases`] and reported as an event.
    ReleaseFailed {
        name: LockName,
        lease: LeaseId,
        token: Token,
        /// The error the caller was told.
        error: LockError,
        /// The lease's owner name; `None` if the lease is gone.
        owner: Option<String>,
    },
    /// A fenced put was refused (stale token, not the holder, no such lock,
    /// a store limit): reported as an event and a warning, so a stale
    /// writer leaves a trace at the server ("find stale writes").
    FencedPutRefused {
        /// The key the put named.
        key: FencedKey,
        /// The lock the writer named.
        lock: LockName,
        /// The writer's lease, when its token is the lock's current holder's.
        lease: Option<LeaseId>,
        /// That lease's owner name (empty without a lease).
        owner: String,
        /// The token the writer presented.
        presented: Token,
        /// The key's highest token and the lock that wrote it, if the key
        /// was ever written.
        highest: Option<Token>,
        highest_lock: Option<LockName>,
        /// The error the writer was told.
        error: LockError,
    },
    /// `name` is unavailable for `delay_ms` because the holder with `token`
    /// expired: arm a timer that proposes `EndLockDelay { name, token }`.
    LockDelayStarted {
        name: LockName,
        token: Token,
        delay_ms: u64,
    },
    /// A record was appended to the audit trail (a refusal, an auth or
    /// membership change; a force release is reported by its `LockFreed`):
    /// reported as an event of its own kind.
    Audited(crate::auth::AuditRecord),
    /// `lease` joined the queue of `name`, waiting at most `wait_ms`: arm a
    /// timer that proposes `CancelWait { timed_out: true }` when the wait
    /// runs out (every node arms it, so a new leader knows it).
    WaiterQueued {
        name: LockName,
        lease: LeaseId,
        wait_ms: u64,
    },
    /// The leader of `name` (its holder `lease` under `token`) set its
    /// election value to `value`.
    Proclaimed {
        name: LockName,
        lease: LeaseId,
        token: Token,
        value: String,
        /// The lease's owner name, for the event.
        owner: String,
    },
}
