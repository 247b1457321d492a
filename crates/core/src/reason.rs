//! [`Reason`]: why a Leasehold call failed, as one closed set. The server
//! picks it for every error it sends, the wire contract carries it (the
//! `leasehold.v1.Reason` enum, converted in `leasehold-proto`, since the core
//! has no wire dependency), the client turns it into its typed errors and the
//! CLI into an exit code. Each of them matches it exhaustively, so a new
//! reason is a compile error wherever it must be handled rather than a string
//! literal that nobody matches. Its name ([`Reason::as_str`]) is the word on
//! the wire for readers that only see `ErrorInfo.reason`; its label
//! ([`Reason::label`]) is the value of the `reason` metric label.

use std::fmt;
use std::str::FromStr;

/// Declares [`Reason`] from one list, so the set, [`Reason::ALL`], the names
/// (the variant names themselves) and the metric labels cannot drift apart.
macro_rules! reasons {
    ($($(#[$doc:meta])* $variant:ident => $label:literal,)+) => {
        /// Why a call failed: the machine-readable reason of every Leasehold
        /// error (see the module doc). The order is the wire enum's.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Reason {
            $($(#[$doc])* $variant,)+
        }

        impl Reason {
            /// Every reason, in declaration (and wire number) order.
            pub const ALL: &'static [Reason] = &[$(Reason::$variant,)+];

            /// The canonical name (`NotHolder`): `ErrorDetail.reason`,
            /// `ErrorInfo.reason` and the `leasehold-reason` metadata.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$variant => stringify!($variant),)+
                }
            }

            /// The value of the `reason` metric label: the name in snake case
            /// (`not_holder`), bounded by the number of reasons.
            pub const fn label(self) -> &'static str {
                match self {
                    $(Reason::$variant => $label,)+
                }
            }
        }
    };
}

reasons! {
    /// No live lease has the id (never granted, revoked, or expired long ago).
    LeaseNotFound => "lease_not_found",
    /// The lease expired; its locks were released.
    LeaseExpired => "lease_expired",
    /// The caller does not hold the lock under the token it gave.
    NotHolder => "not_holder",
    /// No lock has the name (nobody holds or waits for it).
    NoSuchLock => "no_such_lock",
    /// The lock is held (or in its lock delay) and the caller did not wait.
    Busy => "busy",
    /// A queued acquire's wait ran out.
    WaitTimeout => "wait_timeout",
    /// The node that answered does not lead; the detail names the leader.
    NotLeader => "not_leader",
    /// A field is malformed or out of bounds; the detail names the field
    /// and, where one was crossed, the limit.
    InvalidArgument => "invalid_argument",
    /// A limit of the server's state was reached; the detail names it.
    ResourceExhausted => "resource_exhausted",
    /// The service cannot answer now (no quorum, shutting down, ...).
    Unavailable => "unavailable",
    /// The server failed in a way that is its own bug (not sent today;
    /// reserved so clients handle it).
    Internal => "internal",
    /// A fenced write's token is below the highest that wrote the key.
    StaleToken => "stale_token",
    /// A force release of a holder that did not declare fencing, without
    /// the override.
    Unfenced => "unfenced",
    /// The caller is known but may not do this (no role grants the verb on
    /// a prefix of the name, a rule denies it, or the lease belongs to
    /// another principal).
    PermissionDenied => "permission_denied",
    /// Auth is enabled and the caller presented no identity, or a token
    /// that is malformed, unknown, revoked or expired.
    Unauthenticated => "unauthenticated",
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reason name this build does not know: sent by a newer server, or not a
/// Leasehold reason at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown reason {0:?} (a newer server than this build may have sent it)")]
pub struct UnknownReason(pub String);

impl FromStr for Reason {
    type Err = UnknownReason;

    /// Parses a canonical name ([`Reason::as_str`]).
    fn from_str(name: &str) -> Result<Reason, UnknownReason> {
        Reason::ALL
            .iter()
            .find(|reason| reason.as_str() == name)
            .copied()
            .ok_or_else(|| UnknownReason(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_round_trips_through_its_name() {
        for &reason in Reason::ALL {
            assert_eq!(reason.as_str().parse(), Ok(reason));
            assert_eq!(reason.to_string(), reason.as_str());
        }
        assert_eq!(
            "NoLongerAReason".parse::<Reason>(),
            Err(UnknownReason("NoLongerAReason".into()))
        );
    }

    #[test]
    fn all_lists_every_variant_once_in_order() {
        for (index, &reason) in Reason::ALL.iter().enumerate() {
            assert_eq!(reason as usize, index, "{reason}");
        }
        assert_eq!(Reason::ALL.len(), Reason::Unauthenticated as usize + 1);
        assert_eq!(Reason::ALL.len(), 15);
    }

    #[test]
    fn labels_are_the_names_in_snake_case() {
        for &reason in Reason::ALL {
            let mut snake = String::new();
            for (i, c) in reason.as_str().chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    snake.push('_');
                }
                snake.push(c.to_ascii_lowercase());
            }
            assert_eq!(reason.label(), snake);
        }
    }
}
