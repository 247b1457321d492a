//! Commands: the only way state changes. Each is validated at construction
//! (`validate`), proposed through the replicated log, and applied identically
//! on every replica by [`crate::State::apply`].

use crate::auth::{AuditEntry, AuthChange, Principal};
use crate::limits::{self, Limit};
use crate::{AcquirePermits, FencedKey, LeaseId, LockError, LockName, Metadata, RequestId, Token};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Who holds a lease: shown by `ls`, `get` and diagnostics so an operator can
/// tell a live renewer from an orphan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerInfo {
    /// A human name for the owner (service or job name).
    pub owner: String,
    /// Host the owner runs on.
    pub host: String,
    /// Process id on that host (0 if unknown).
    pub pid: u32,
    /// Process start time, Unix ms (0 if unknown); with `pid` it identifies
    /// the process even after pid reuse.
    pub process_start_unix_ms: u64,
    /// Free-form labels (out of line, as a holder's metadata: most owners
    /// have none, and every lease row keeps its owner).
    pub labels: Metadata,
}

impl OwnerInfo {
    /// Checks field sizes against [`limits`].
    pub fn validate(&self) -> Result<(), LockError> {
        check_text("owner.owner", &self.owner, Limit::OwnerFieldBytesMax)?;
        check_text("owner.host", &self.host, Limit::OwnerFieldBytesMax)?;
        check_map("owner.labels", &self.labels)
    }
}

/// Arguments of an acquire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acquire {
    /// The lease that will hold the lock.
    pub lease: LeaseId,
    /// The lock.
    pub name: LockName,
    /// 0: fail with Busy if held. >0: queue FIFO (the deadline is the server's).
    pub wait_ms: u64,
    /// Idempotency key.
    pub request_id: Option<RequestId>,
    /// The holder declares that the protected resource checks tokens.
    pub fenced: bool,
    /// After the holder's lease *expires* (not on release), keep the lock
    /// unavailable this long, so a paused holder's in-flight writes land first.
    pub lock_delay_ms: u64,
    /// 0: no limit. Otherwise the server releases the lock after this long.
    pub max_hold_ms: u64,
    /// Free-form metadata shown with the holder.
    pub metadata: BTreeMap<String, String>,
}

impl Acquire {
    /// Checks bounds against [`limits`].
    pub fn validate(&self) -> Result<(), LockError> {
        check_max("wait_ms", self.wait_ms, Limit::WaitMsMax)?;
        check_max("lock_delay_ms", self.lock_delay_ms, Limit::LockDelayMsMax)?;
        check_max("max_hold_ms", self.max_hold_ms, Limit::MaxHoldMsMax)?;
        check_map("metadata", &self.metadata)
    }
}

/// One state change. Commands marked "leader timer" are proposed only by the
/// leader's timer layer, never by clients.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Create a lease. Its id is the revision of this grant.
    GrantLease {
        ttl_ms: u64,
        owner: OwnerInfo,
        request_id: Option<RequestId>,
    },
    /// Record a renewal. Does not advance the revision.
    KeepAlive { lease: LeaseId },
    /// Delete a lease and release everything it holds or waits for.
    RevokeLease {
        lease: LeaseId,
        request_id: Option<RequestId>,
    },
    /// Leader timer: the lease was not renewed within its ttl. Applies only
    /// if the lease's renewal count is still `renewals` (no keep-alive was
    /// applied since the leader decided).
    ExpireLease { lease: LeaseId, renewals: u64 },
    /// Acquire a lock, or queue for it.
    Acquire(Acquire),
    /// Release a lock, or a grant of a semaphore or a read-write lock,
    /// held by (lease, token).
    Release {
        lease: LeaseId,
        name: LockName,
        token: Token,
        request_id: Option<RequestId>,
    },
    /// A waiter's deadline passed (`timed_out`) or its caller went away:
    /// leave the queue.
    CancelWait {
        lease: LeaseId,
        name: LockName,
        timed_out: bool,
    },
    /// Leader timer: the lock delay that began when the holder with `token`
    /// expired is over.
    EndLockDelay { name: LockName, token: Token },
    /// Leader timer: the holder with `token` exceeded its `max_hold_ms`.
    EndHold { name: LockName, token: Token },
    /// Write `value` under `key` in the fenced store, on behalf of the holder
    /// of `lock` with `token`. Accepted only if `token` is the lock's current
    /// holder token and at least the highest token that wrote `key`.
    FencedPut {
        lock: LockName,
        token: Token,
        key: FencedKey,
        value: Vec<u8>,
        request_id: Option<RequestId>,
    },
    /// Break-glass: free `name` from its current holder on an operator's
    /// say-so, without the holder's lease. Accepted only if
    /// `expected_token` is the holder's token (the operator looked at the
    /// right holder), and, for a holder that did not declare `fenced`, only
    /// with `allow_unfenced`. With `revoke_lease`, the holder's whole lease
    /// is revoked instead (every lock it holds is freed). Appended last so
    /// log entries written before it still decode.
    ForceRelease {
        name: LockName,
        expected_token: Token,
        /// Why, for the incident record (required, at most
        /// `FORCE_REASON_BYTES_MAX`).
        reason: String,
        /// Who, as `user@host` (at most `FORCE_CALLER_BYTES_MAX`).
        caller: String,
        allow_unfenced: bool,
        revoke_lease: bool,
    },
    /// Change the auth tables (roles, users, tokens, quotas, the enabled
    /// flag). Appended after `ForceRelease` so older entries still decode.
    Auth(AuthChange),
    /// `command`, asked for by `principal` (the server authenticated it):
    /// a grant records the principal on the lease, and with auth enabled
    /// apply re-checks the principal's permission and lease ownership.
    /// Never nested; never wraps a timer or an audit entry.
    As {
        principal: Principal,
        command: Box<Command>,
    },
    /// Server: append to the audit trail (a refusal it made before
    /// proposing, a membership change).
    Audit(AuditEntry),
    /// Leader timer: these queued acquires' waits ran out; each leaves its
    /// queue as `CancelWait { timed_out: true }` would, one revision for
    /// them all. The leader's timer task names a bounded number
    /// (`WAITS_PER_COMMAND_MAX` in the server), so a mass timeout is
    /// committed and applied a batch at a time. Appended last so older
    /// entries still decode.
    TimeOutWaits { waits: Vec<(LeaseId, LockName)> },
    /// Ask for permits of a semaphore or a read-write lock, or queue for
    /// them (released with `Release`, as a lock is). Appended last so older
    /// entries still decode.
    AcquirePermits(AcquirePermits),
    /// The leader of an election (the holder of its lock) replaces its
    /// value. Appended last so older entries still decode.
    Proclaim(crate::Proclaim),
    /// Acquire several locks at once, all or none, or wait for all of them
    /// as one waiter (see [`crate::lock_set`]). Appended last so older
    /// entries still decode.
    AcquireAll(crate::AcquireAll),
}

impl Command {
    /// Checks a client-proposed command's arguments against [`limits`].
    pub fn validate(&self) -> Result<(), LockError> {
        match self {
            Command::GrantLease { ttl_ms, owner, .. } => {
                check_ttl(*ttl_ms)?;
                owner.validate()
            }
            Command::Acquire(acquire) => acquire.validate(),
            Command::AcquirePermits(acquire) => acquire.validate(),
            Command::Proclaim(proclaim) => proclaim.validate(),
            Command::AcquireAll(acquire) => acquire.validate(),
            Command::FencedPut { value, .. } => crate::fenced::check_fenced_value(value),
            Command::ForceRelease { reason, caller, .. } => check_force(reason, caller),
            Command::Auth(change) => change.validate(),
            Command::Audit(entry) => entry.validate(),
            Command::As { command, .. } => {
                command.check_wrappable()?;
                command.validate()
            }
            _ => Ok(()),
        }
    }
}

/// The Raft protocol this build speaks: that of the release that added its
/// newest command (see [`Command::protocol`]).
pub const PROTOCOL_VERSION: u32 = 2;

impl Command {
    /// The protocol every node must speak to read this command in a log
    /// entry: 1 for the commands of the releases before semaphores, 2 for
    /// semaphores and read-write locks, elections and sets of locks. A
    /// leader proposes a command only when every member speaks its
    /// protocol, so a rolling upgrade never sends a node of the previous
    /// release an entry it cannot decode.
    pub fn protocol(&self) -> u32 {
        // No wildcard: a new command must say which protocol added it.
        match self {
            Command::GrantLease { .. }
            | Command::KeepAlive { .. }
            | Command::RevokeLease { .. }
            | Command::ExpireLease { .. }
            | Command::Acquire(_)
            | Command::Release { .. }
            | Command::CancelWait { .. }
            | Command::EndLockDelay { .. }
            | Command::EndHold { .. }
            | Command::FencedPut { .. }
            | Command::ForceRelease { .. }
            | Command::Auth(_)
            | Command::Audit(_)
            | Command::TimeOutWaits { .. } => 1,
            Command::AcquirePermits(_) | Command::Proclaim(_) | Command::AcquireAll(_) => 2,
            Command::As { command, .. } => command.protocol(),
        }
    }
}

impl Command {
    /// Refuses a command that is never proposed on a principal's behalf:
    /// the server's own (timers, audit entries) and a second wrapper.
    pub fn check_wrappable(&self) -> Result<(), LockError> {
        match self {
            Command::As { .. }
            | Command::Audit(_)
            | Command::ExpireLease { .. }
            | Command::EndLockDelay { .. }
            | Command::EndHold { .. }
            | Command::TimeOutWaits { .. } => Err(LockError::invalid(
                "command",
                "only a client's command is proposed on a principal's behalf",
            )),
            _ => Ok(()),
        }
    }

    /// What the command concerns, for an audit record: its lock name, or
    /// its lease (`""`: neither).
    pub fn subject(&self) -> String {
        match self {
            Command::Acquire(a) => a.name.as_str().to_owned(),
            Command::AcquirePermits(a) => a.name.as_str().to_owned(),
            Command::Proclaim(p) => p.name.as_str().to_owned(),
            Command::AcquireAll(a) => a
                .names
                .iter()
                .map(LockName::as_str)
                .collect::<Vec<_>>()
                .join(" "),
            Command::Release { name, .. } | Command::ForceRelease { name, .. } => {
                name.as_str().to_owned()
            }
            Command::FencedPut { lock, .. } => lock.as_str().to_owned(),
            Command::KeepAlive { lease }
            | Command::RevokeLease { lease, .. }
            | Command::CancelWait { lease, .. } => format!("lease {lease}"),
            Command::As { command, .. } => command.subject(),
            _ => String::new(),
        }
    }
}

/// Checks a lease ttl against [`limits::TTL_MS_MIN`] and [`limits::TTL_MS_MAX`].
pub fn check_ttl(ttl_ms: u64) -> Result<(), LockError> {
    if !(limits::TTL_MS_MIN..=limits::TTL_MS_MAX).contains(&ttl_ms) {
        let crossed = if ttl_ms < limits::TTL_MS_MIN {
            Limit::TtlMsMin
        } else {
            Limit::TtlMsMax
        };
        return Err(LockError::over_limit(
            "ttl_ms",
            crossed,
            format!(
                "{ttl_ms} ms is outside TTL_MS_MIN..=TTL_MS_MAX ({}..={} ms)",
                limits::TTL_MS_MIN,
                limits::TTL_MS_MAX
            ),
        ));
    }
    Ok(())
}

/// Checks a force release's reason (required) and caller against [`limits`].
pub fn check_force(reason: &str, caller: &str) -> Result<(), LockError> {
    if reason.trim().is_empty() {
        return Err(LockError::invalid(
            "reason",
            "is empty: say why the lock is force-released (it is kept in the incident record)",
        ));
    }
    check_text("reason", reason, Limit::ForceReasonBytesMax)?;
    check_text("caller", caller, Limit::ForceCallerBytesMax)
}

fn check_max(field: &str, value: u64, limit: Limit) -> Result<(), LockError> {
    let max = limit.value();
    if value > max {
        return Err(LockError::over_limit(
            field,
            limit,
            format!("{value} exceeds the limit {limit} ({max})"),
        ));
    }
    Ok(())
}

/// Free text: at most `limit` bytes, no control characters.
pub(crate) fn check_text(field: &str, value: &str, limit: Limit) -> Result<(), LockError> {
    let max = limit.value();
    if value.len() as u64 > max {
        return Err(LockError::over_limit(
            field,
            limit,
            format!("is {} bytes; the limit {limit} is {max}", value.len()),
        ));
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(LockError::invalid(field, "contains a control character"));
    }
    Ok(())
}

pub(crate) fn check_map(field: &str, map: &BTreeMap<String, String>) -> Result<(), LockError> {
    if map.len() > limits::LABELS_MAX {
        return Err(LockError::over_limit(
            field,
            Limit::LabelsMax,
            format!(
                "has {} entries; the limit LABELS_MAX is {}",
                map.len(),
                limits::LABELS_MAX
            ),
        ));
    }
    for (key, value) in map {
        if key.len() + value.len() > limits::LABEL_BYTES_MAX {
            return Err(LockError::over_limit(
                field,
                Limit::LabelBytesMax,
                format!(
                    "entry {key:?} is {} bytes; the limit LABEL_BYTES_MAX is {}",
                    key.len() + value.len(),
                    limits::LABEL_BYTES_MAX
                ),
            ));
        }
    }
    Ok(())
}
