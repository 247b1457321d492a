//! The core's typed errors. The server maps each variant to a gRPC status and
//! a machine-readable reason in one place; the wording here is what users read.

use crate::{FencedKey, LeaseId, LockName, Token};
use serde::{Deserialize, Serialize};

/// Why a command was refused. Every variant says what happened and carries
/// what the caller needs to act on it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum LockError {
    /// No live lease has this id (never granted, revoked, or expired long ago).
    #[error("lease {lease} not found: grant a new lease")]
    LeaseNotFound { lease: LeaseId },
    /// The lease expired (its holder stopped renewing it within its ttl).
    #[error("lease {lease} expired: its locks were released; grant a new lease")]
    LeaseExpired { lease: LeaseId },
    /// Release, keep-alive or fenced put by someone who does not hold the
    /// lock under that token.
    #[error("lock {name} is not held {}with token {token}; {}", lease_hint(.lease), holder_hint(.holder_token))]
    NotHolder {
        name: LockName,
        /// The lease the caller named (a fenced put names none).
        lease: Option<LeaseId>,
        token: Token,
        /// The token of the lock's current holder, if the lock is held.
        holder_token: Option<Token>,
    },
    /// The named lock does not exist (nobody holds or waits for it).
    #[error("no lock named \"{name}\"{}", nearby_hint(.nearby))]
    NoSuchLock {
        name: LockName,
        /// Existing names that look like the one asked for (a release sent
        /// to the wrong key is a common incident).
        nearby: Vec<String>,
    },
    /// The lock is held (or in its lock-delay) and the caller did not ask to wait.
    #[error("lock {name} is busy ({}); retry later or pass a wait", busy_hint(.holder_token))]
    Busy {
        name: LockName,
        holder_token: Option<Token>,
    },
    /// A field of the request is malformed or out of bounds.
    #[error("invalid {field}: {reason}")]
    InvalidArgument { field: String, reason: String },
    /// A limit from [`crate::limits`] would be exceeded.
    #[error("limit {limit} ({max}) reached: {what}")]
    ResourceExhausted {
        limit: String,
        max: u64,
        what: String,
    },
    /// A fenced-store write whose token is below the highest token that has
    /// already written the key. The writer holds `lock`, but the key was
    /// written since by the holder of `highest_lock` with a newer token
    /// (tokens are revisions shared by every lock, so a key written under
    /// one lock refuses the holders of older tokens of any lock).
    #[error("stale token {presented} for fenced key \"{key}\": the key was written with token {highest} by the holder of lock {highest_lock}, newer than this writer's lock {lock}; a key takes writes only in token order, so stop writing it under {lock} (guard each key with one lock)")]
    StaleToken {
        key: FencedKey,
        /// The lock the writer holds.
        lock: LockName,
        /// The token the writer presented.
        presented: Token,
        /// The highest token that has written the key.
        highest: Token,
        /// The lock whose holder wrote the key with `highest`.
        highest_lock: LockName,
    },
    /// A force release of a lock whose holder did not declare `fenced`,
    /// without `allow_unfenced`. Appended last so stored errors still decode.
    #[error("lock {name} is held without fencing: no resource checks its tokens, so the old holder could still write after a force release and two writers would overlap; stop the holder first, then pass allow_unfenced (leasehold force-release --allow-unfenced)")]
    Unfenced { name: LockName },
}

impl LockError {
    /// Shorthand for an [`LockError::InvalidArgument`].
    pub fn invalid(field: &str, reason: impl Into<String>) -> LockError {
        LockError::InvalidArgument {
            field: field.to_owned(),
            reason: reason.into(),
        }
    }

    /// Shorthand for a [`LockError::ResourceExhausted`].
    pub fn exhausted(limit: &str, max: usize, what: impl Into<String>) -> LockError {
        LockError::ResourceExhausted {
            limit: limit.to_owned(),
            max: max as u64,
            what: what.into(),
        }
    }
}

fn nearby_hint(nearby: &[String]) -> String {
    if nearby.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", nearby.join(", "))
    }
}

fn lease_hint(lease: &Option<LeaseId>) -> String {
    match lease {
        Some(lease) => format!("by lease {lease} "),
        None => String::new(),
    }
}

fn holder_hint(holder_token: &Option<Token>) -> String {
    match holder_token {
        Some(token) => format!("the current holder's token is {token}"),
        None => "nobody holds it now".into(),
    }
}

fn busy_hint(holder_token: &Option<Token>) -> String {
    match holder_token {
        Some(token) => format!("held with token {token}"),
        None => "in its lock delay after the holder expired".into(),
    }
}
