//! The core's typed errors. Each variant has one [`Reason`]
//! ([`LockError::reason`]); the server maps it to a gRPC status in one place;
//! the wording here is what users read.
//!
//! A `LockError` is stored: remembered outcomes (for idempotent retries) keep
//! it in the state, hence in snapshots, encoded with postcard, which relies on
//! the variants' order and fields. New variants go last; a field change
//! changes the stored form of its variant (see `InvalidArgument`).

use crate::auth::{QuotaKind, Verb};
use crate::limits::Limit;
use crate::{FencedKey, LeaseId, LockName, Reason, Token};
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
    /// A field of the request is malformed or out of bounds (checked before
    /// a command is proposed, and again, identically, at apply), or names
    /// something that is not what the request takes it for (a semaphore
    /// asked for as a lock). It is never among the stored outcomes (a
    /// request id does not remember it), so its `limit` field, added after
    /// the variant was first stored, does not break an older snapshot.
    #[error("invalid {field}: {reason}")]
    InvalidArgument {
        field: String,
        /// The limit the field crossed, if a limit is what it broke.
        limit: Option<Limit>,
        reason: String,
    },
    /// A limit from [`crate::limits`] would be exceeded.
    #[error("limit {limit} ({max}) reached: {what}")]
    ResourceExhausted {
        /// Stored as its name: the same bytes as the `String` it once was.
        limit: Limit,
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
    /// Auth is enabled and the principal may not do `verb` on `name`.
    #[error("principal {principal} may not {verb} {}: {}", shown_name(.name), denial_hint(.verb, .name, .denied_by))]
    PermissionDenied {
        principal: String,
        verb: Verb,
        /// The lock name (or, for admin operations, the empty prefix).
        name: String,
        /// The prefix of the deny rule that decided, if one did (else no
        /// rule granted the verb).
        denied_by: Option<String>,
    },
    /// Auth is enabled and the lease belongs to another principal: only
    /// its principal or an admin may renew, revoke or use it.
    #[error("lease {lease} belongs to principal {owner}, not {principal}: only its principal or an admin may renew, revoke or use it; grant your own lease")]
    NotLeaseOwner {
        lease: LeaseId,
        principal: String,
        /// The lease's principal (`anonymous` if it was granted without one).
        owner: String,
    },
    /// A per-principal quota would be exceeded.
    #[error("principal {principal} reached its {quota} quota ({max}); free some, or ask an admin: leasehold user quota {principal} --{quota} N")]
    QuotaExceeded {
        principal: String,
        quota: QuotaKind,
        max: u64,
    },
    /// Auth is enabled and the caller is anonymous (or its identity could
    /// not be verified).
    #[error("{why}")]
    Unauthenticated { why: String },
}

impl LockError {
    /// An [`LockError::InvalidArgument`] that no limit bounds (an empty or
    /// malformed field).
    pub fn invalid(field: &str, reason: impl Into<String>) -> LockError {
        LockError::InvalidArgument {
            field: field.to_owned(),
            limit: None,
            reason: reason.into(),
        }
    }

    /// An [`LockError::InvalidArgument`] for a field past `limit`.
    pub fn over_limit(field: &str, limit: Limit, reason: impl Into<String>) -> LockError {
        LockError::InvalidArgument {
            field: field.to_owned(),
            limit: Some(limit),
            reason: reason.into(),
        }
    }

    /// A [`LockError::ResourceExhausted`] of `limit` (its value is the max).
    pub fn exhausted(limit: Limit, what: impl Into<String>) -> LockError {
        LockError::ResourceExhausted {
            limit,
            max: limit.value(),
            what: what.into(),
        }
    }

    /// The machine-readable reason of this error.
    pub fn reason(&self) -> Reason {
        match self {
            LockError::LeaseNotFound { .. } => Reason::LeaseNotFound,
            LockError::LeaseExpired { .. } => Reason::LeaseExpired,
            LockError::NotHolder { .. } => Reason::NotHolder,
            LockError::NoSuchLock { .. } => Reason::NoSuchLock,
            LockError::Busy { .. } => Reason::Busy,
            LockError::InvalidArgument { .. } => Reason::InvalidArgument,
            LockError::ResourceExhausted { .. } => Reason::ResourceExhausted,
            LockError::StaleToken { .. } => Reason::StaleToken,
            LockError::Unfenced { .. } => Reason::Unfenced,
            LockError::PermissionDenied { .. } | LockError::NotLeaseOwner { .. } => {
                Reason::PermissionDenied
            }
            LockError::QuotaExceeded { .. } => Reason::ResourceExhausted,
            LockError::Unauthenticated { .. } => Reason::Unauthenticated,
        }
    }

    /// The error of an anonymous caller while auth is enabled.
    pub fn anonymous() -> LockError {
        LockError::Unauthenticated {
            why: "auth is enabled and this call carried no identity: pass --auth-token (or LEASEHOLD_AUTH_TOKEN), or a client certificate".into(),
        }
    }
}

fn shown_name(name: &str) -> String {
    if name.is_empty() {
        "\"\" (everything)".into()
    } else {
        name.to_owned()
    }
}

fn denial_hint(verb: &Verb, name: &str, denied_by: &Option<String>) -> String {
    match denied_by {
        Some(prefix) => format!(
            "a rule denies `{verb}` on prefix {prefix:?}; ask an admin to lift it: leasehold role revoke ROLE {prefix:?} {verb}"
        ),
        None => {
            let prefix = crate::auth::suggested_prefix(name);
            format!(
                "no role grants `{verb}` on a prefix of it (such as {prefix:?}); ask an admin: leasehold role grant ROLE {prefix:?} {verb}"
            )
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// The stored form of a `ResourceExhausted` written before the limit was
    /// typed (the seventh variant, its limit a `String`) decodes unchanged.
    #[test]
    fn a_resource_exhausted_stored_with_a_string_limit_still_decodes() {
        #[derive(Serialize)]
        #[allow(dead_code)]
        enum Before {
            LeaseNotFound,
            LeaseExpired,
            NotHolder,
            NoSuchLock,
            Busy,
            InvalidArgument,
            ResourceExhausted {
                limit: String,
                max: u64,
                what: String,
            },
        }
        let stored = postcard::to_allocvec(&Before::ResourceExhausted {
            limit: "LOCKS_PER_LEASE_MAX".into(),
            max: 1_024,
            what: "lease 7 holds or waits for 1024 locks".into(),
        })
        .unwrap();
        let read: LockError = postcard::from_bytes(&stored).unwrap();
        let now = LockError::exhausted(
            Limit::LocksPerLeaseMax,
            "lease 7 holds or waits for 1024 locks",
        );
        assert_eq!(read, now);
        assert_eq!(postcard::to_allocvec(&now).unwrap(), stored);
    }
}
