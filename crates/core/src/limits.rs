//! Every limit Leasehold enforces, in one place. Each is checked at the
//! boundary (validation of a command before it is proposed, or the core's
//! apply for limits that depend on state) and named in its error, so an
//! operator reading an error can find the limit here by its name. The
//! constants are the values; [`Limit`] names each of them as data, which an
//! error carries (`LockError::InvalidArgument::limit`,
//! `LockError::ResourceExhausted::limit`) and the server copies into
//! `ErrorDetail.limit` as the constant's name.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Longest lock name, in bytes.
pub const NAME_BYTES_MAX: usize = 512;
/// Shortest lease ttl: below this a keep-alive cannot reliably arrive in time.
pub const TTL_MS_MIN: u64 = 1_000;
/// Longest lease ttl (one day).
pub const TTL_MS_MAX: u64 = 86_400_000;
/// Longest time an acquire may wait in the queue (one hour).
pub const WAIT_MS_MAX: u64 = 3_600_000;
/// Longest lock delay after a holder's lease expires (one minute).
pub const LOCK_DELAY_MS_MAX: u64 = 60_000;
/// Longest server-enforced hold time (one day).
pub const MAX_HOLD_MS_MAX: u64 = 86_400_000;
/// Waiters queued on one lock.
pub const WAITERS_PER_LOCK_MAX: usize = 1_024;
/// Locks held plus waits queued by one lease.
pub const LOCKS_PER_LEASE_MAX: usize = 1_024;
/// Live leases in the whole state.
pub const LEASES_MAX: usize = 1_000_000;
/// Longest request id, in bytes.
pub const REQUEST_ID_BYTES_MAX: usize = 64;
/// Request ids remembered per lease for idempotent retries (oldest forgotten first).
pub const DEDUP_PER_LEASE_MAX: usize = 64;
/// Owner name, host name: bytes each.
pub const OWNER_FIELD_BYTES_MAX: usize = 256;
/// Labels on a lease owner, and metadata entries on a lock.
pub const LABELS_MAX: usize = 32;
/// Bytes of one label (or metadata) key plus its value.
pub const LABEL_BYTES_MAX: usize = 512;
/// Recently expired lease ids remembered, so a late keep-alive hears
/// "expired" rather than "not found".
pub const EXPIRED_LEASES_REMEMBERED: usize = 4_096;
/// Revokes (with a request id) remembered for idempotent retries.
pub const REVOCATIONS_REMEMBERED: usize = 4_096;
/// Failed releases remembered for diagnosis.
pub const FAILED_RELEASES_REMEMBERED: usize = 256;
/// Holds the server ended while their lease lived (force releases, max
/// hold), remembered per lease for its keep-alive replies, so the holder
/// hears how it lost the lock (oldest forgotten first).
pub const ENDED_HOLDS_REMEMBERED: usize = 16;
/// Force releases remembered for the incident record (oldest forgotten first).
pub const FORCE_RELEASES_REMEMBERED: usize = 256;
/// Longest reason given for a force release, in bytes.
pub const FORCE_REASON_BYTES_MAX: usize = 512;
/// Longest caller (`user@host`) named by a force release, in bytes.
pub const FORCE_CALLER_BYTES_MAX: usize = 256;
/// Permits of one semaphore; also a read-write lock's pool size, so the
/// most readers that can share one.
pub const PERMITS_MAX: u32 = 65_536;
/// Locks one all-or-nothing acquire names.
pub const LOCK_SET_MAX: usize = 64;
/// Names suggested in a NoSuchLock error.
pub const NEARBY_NAMES_MAX: usize = 3;
/// Largest gRPC request message, in bytes.
pub const REQUEST_BYTES_MAX: usize = 64 * 1024;
/// Open client connections to one server (fewer when the process's
/// open-files limit leaves less room: the server bounds them below it, so
/// a connection past the bound is refused cleanly instead of `accept`
/// failing with `EMFILE`).
pub const CONNECTIONS_MAX: usize = 16_384;
/// Longest a TLS handshake may take, from accepting the connection; a
/// client that is slower (or silent) is disconnected.
pub const TLS_HANDSHAKE_MS_MAX: u64 = 10_000;
/// Open connections from one remote address (default; `serve
/// --connections-per-address`), so that one host cannot take the whole of
/// [`CONNECTIONS_MAX`]. Raise it when clients reach the server through a
/// proxy or NAT, which gives them all one address.
pub const CONNECTIONS_PER_ADDRESS_MAX: usize = CONNECTIONS_MAX / 4;
/// Calls and streams open at once from one remote address (default;
/// `serve --requests-per-address`); one past it is refused, reason
/// `Unavailable` (it passes once the client holds less), naming this limit.
pub const REQUESTS_PER_ADDRESS_MAX: usize = 65_536;
/// Open TLS connections whose client certificate names one principal
/// (default; `serve --connections-per-principal`), counted across every
/// address, so that one tenant's fleet cannot take the whole of
/// [`CONNECTIONS_MAX`]. A connection without a certificate is counted by
/// its address only (a bearer token names a principal per call, not per
/// connection).
pub const CONNECTIONS_PER_PRINCIPAL_MAX: usize = CONNECTIONS_MAX / 4;
/// Calls and streams open at once for one principal (default; `serve
/// --requests-per-principal`), counted across every address it calls from,
/// so that one tenant's runaway fleet cannot take the server from the
/// others; one past it is refused like one past the address's share. Only
/// callers with an identity count (a verified token or certificate).
pub const REQUESTS_PER_PRINCIPAL_MAX: usize = 65_536;
/// Longest a new connection may take to send the first bytes of its
/// protocol (the HTTP/2 preface, or an HTTP/1 request line); a silent one
/// is closed, so idle sockets cannot hold connection slots (default;
/// `serve --handshake-timeout`).
pub const HANDSHAKE_MS_MAX: u64 = 5_000;
/// How long a connection with no call or stream open and nothing received
/// (not even a ping) is kept (default; `serve --idle-connection-timeout`).
pub const IDLE_CONNECTION_MS_MAX: u64 = 300_000;
/// Longest one request message may take to arrive once it started (and
/// a unary call's message, from the call's start): a slower sender
/// (slowloris) is cut.
pub const REQUEST_RECEIVE_MS_MAX: u64 = 10_000;
/// Largest block of headers (HTTP/2 header list, gRPC metadata included)
/// a request may carry, in bytes.
pub const HEADER_LIST_BYTES_MAX: u32 = 16 * 1024;
/// Concurrent gRPC calls and streams on one connection (HTTP/2
/// SETTINGS_MAX_CONCURRENT_STREAMS); a client past it waits for a slot.
pub const STREAMS_PER_CONNECTION_MAX: u32 = 1_024;
/// Events a `Watch.Events` follower may fall behind by before its stream is
/// ended with an error (it can reconnect and replay the recent ones).
pub const EVENTS_FOLLOW_BUFFER: usize = 4_096;
/// Per-interval samples of a node's own counters that the live page's
/// charts keep (a ring: the oldest is dropped), with the interval still
/// running: 60 samples of [`CHART_SAMPLE_MS`] are the last 5 minutes.
pub const CHART_SAMPLES_MAX: usize = 60;
/// Length of one chart sample's interval, in ms.
pub const CHART_SAMPLE_MS: u64 = 5_000;
/// Locks returned by one List call.
pub const LIST_LOCKS_MAX: usize = 10_000;
/// Leases returned by one `Lease.List` call.
pub const LIST_LEASES_MAX: usize = 10_000;
/// Longest fenced-store key, in bytes (same rules as lock names).
pub const FENCED_KEY_BYTES_MAX: usize = 512;
/// Largest fenced-store value, in bytes: a request must also carry the key,
/// the lock name, a request id and the framing, so the value gets
/// `REQUEST_BYTES_MAX` minus 4 KiB of headroom.
pub const FENCED_VALUE_BYTES_MAX: usize = REQUEST_BYTES_MAX - 4 * 1024;
/// Keys in the fenced store.
pub const FENCED_KEYS_MAX: usize = 100_000;
/// Free space on the data dir's filesystem, beyond one log segment, below
/// which a node refuses writes (and refuses to start): room for the next
/// segment and for the database's vote, purge and snapshot writes.
pub const DISK_HEADROOM_BYTES: u64 = 16 << 20;
/// Bytes of all fenced-store keys plus values. The store lives in memory
/// and in every snapshot; `FENCED_KEYS_MAX` full-size values would be
/// about 6 GiB, so the total has its own, smaller bound.
pub const FENCED_STORE_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Longest principal (certificate name or user), in bytes.
pub const PRINCIPAL_BYTES_MAX: usize = 256;
/// Longest role name, in bytes.
pub const ROLE_NAME_BYTES_MAX: usize = 64;
/// Roles in the auth tables.
pub const ROLES_MAX: usize = 1_024;
/// Prefix rules in one role.
pub const RULES_PER_ROLE_MAX: usize = 256;
/// Roles one user holds.
pub const ROLES_PER_USER_MAX: usize = 32;
/// Users in the auth tables.
pub const USERS_MAX: usize = 100_000;
/// Stored bearer tokens.
pub const TOKENS_MAX: usize = 100_000;
/// Longest token id (the public part of a secret), in bytes.
pub const TOKEN_ID_BYTES_MAX: usize = 32;
/// Audit records remembered (oldest forgotten first).
pub const AUDIT_RECORDS_REMEMBERED: usize = 4_096;
/// Longest principal, name or detail text of one audit record, in bytes
/// (longer texts are cut).
pub const AUDIT_TEXT_BYTES_MAX: usize = 512;
/// Refused requests one node sends to the audit trail per second; the rest
/// are only counted (a flood of refusals must not flood the log).
pub const REFUSALS_AUDITED_PER_SECOND: usize = 20;

// A put of the largest key and value under the longest lock name and
// request id fits in one request, with room for tags, lengths and the token.
const _: () = assert!(
    FENCED_VALUE_BYTES_MAX + FENCED_KEY_BYTES_MAX + NAME_BYTES_MAX + REQUEST_ID_BYTES_MAX + 64
        <= REQUEST_BYTES_MAX
);
const _: () = assert!(FENCED_KEY_BYTES_MAX + FENCED_VALUE_BYTES_MAX <= FENCED_STORE_BYTES_MAX);

/// Declares [`Limit`] from one list of (variant, constant), so each variant's
/// name is its constant's name and its value the constant's value.
macro_rules! limits {
    ($($variant:ident => $constant:ident,)+) => {
        /// A limit of this module, as data: an error carries the one it hit,
        /// so no reader parses the name back out of the message. Stored (in
        /// remembered outcomes, hence in snapshots) as its name, the form the
        /// limit had before it was typed.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(into = "&'static str", try_from = "String")]
        pub enum Limit {
            $(#[doc = concat!("[`", stringify!($constant), "`]")] $variant,)+
        }

        impl Limit {
            /// Every limit, in this module's order.
            pub const ALL: &'static [Limit] = &[$(Limit::$variant,)+];

            /// The constant's name (`NAME_BYTES_MAX`), as errors name it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Limit::$variant => stringify!($constant),)+
                }
            }

            /// The constant's value.
            pub const fn value(self) -> u64 {
                match self {
                    $(Limit::$variant => $constant as u64,)+
                }
            }
        }
    };
}

limits! {
    NameBytesMax => NAME_BYTES_MAX,
    TtlMsMin => TTL_MS_MIN,
    TtlMsMax => TTL_MS_MAX,
    WaitMsMax => WAIT_MS_MAX,
    LockDelayMsMax => LOCK_DELAY_MS_MAX,
    MaxHoldMsMax => MAX_HOLD_MS_MAX,
    WaitersPerLockMax => WAITERS_PER_LOCK_MAX,
    LocksPerLeaseMax => LOCKS_PER_LEASE_MAX,
    LeasesMax => LEASES_MAX,
    RequestIdBytesMax => REQUEST_ID_BYTES_MAX,
    DedupPerLeaseMax => DEDUP_PER_LEASE_MAX,
    OwnerFieldBytesMax => OWNER_FIELD_BYTES_MAX,
    LabelsMax => LABELS_MAX,
    LabelBytesMax => LABEL_BYTES_MAX,
    ExpiredLeasesRemembered => EXPIRED_LEASES_REMEMBERED,
    RevocationsRemembered => REVOCATIONS_REMEMBERED,
    FailedReleasesRemembered => FAILED_RELEASES_REMEMBERED,
    EndedHoldsRemembered => ENDED_HOLDS_REMEMBERED,
    ForceReleasesRemembered => FORCE_RELEASES_REMEMBERED,
    ForceReasonBytesMax => FORCE_REASON_BYTES_MAX,
    ForceCallerBytesMax => FORCE_CALLER_BYTES_MAX,
    NearbyNamesMax => NEARBY_NAMES_MAX,
    RequestBytesMax => REQUEST_BYTES_MAX,
    ConnectionsMax => CONNECTIONS_MAX,
    TlsHandshakeMsMax => TLS_HANDSHAKE_MS_MAX,
    ConnectionsPerAddressMax => CONNECTIONS_PER_ADDRESS_MAX,
    RequestsPerAddressMax => REQUESTS_PER_ADDRESS_MAX,
    RequestsPerPrincipalMax => REQUESTS_PER_PRINCIPAL_MAX,
    ConnectionsPerPrincipalMax => CONNECTIONS_PER_PRINCIPAL_MAX,
    HandshakeMsMax => HANDSHAKE_MS_MAX,
    IdleConnectionMsMax => IDLE_CONNECTION_MS_MAX,
    RequestReceiveMsMax => REQUEST_RECEIVE_MS_MAX,
    HeaderListBytesMax => HEADER_LIST_BYTES_MAX,
    StreamsPerConnectionMax => STREAMS_PER_CONNECTION_MAX,
    EventsFollowBuffer => EVENTS_FOLLOW_BUFFER,
    ListLocksMax => LIST_LOCKS_MAX,
    ListLeasesMax => LIST_LEASES_MAX,
    FencedKeyBytesMax => FENCED_KEY_BYTES_MAX,
    FencedValueBytesMax => FENCED_VALUE_BYTES_MAX,
    FencedKeysMax => FENCED_KEYS_MAX,
    FencedStoreBytesMax => FENCED_STORE_BYTES_MAX,
    PrincipalBytesMax => PRINCIPAL_BYTES_MAX,
    RoleNameBytesMax => ROLE_NAME_BYTES_MAX,
    RolesMax => ROLES_MAX,
    RulesPerRoleMax => RULES_PER_ROLE_MAX,
    RolesPerUserMax => ROLES_PER_USER_MAX,
    UsersMax => USERS_MAX,
    TokensMax => TOKENS_MAX,
    TokenIdBytesMax => TOKEN_ID_BYTES_MAX,
    AuditRecordsRemembered => AUDIT_RECORDS_REMEMBERED,
    AuditTextBytesMax => AUDIT_TEXT_BYTES_MAX,
    RefusalsAuditedPerSecond => REFUSALS_AUDITED_PER_SECOND,
    DiskHeadroomBytes => DISK_HEADROOM_BYTES,
    PermitsMax => PERMITS_MAX,
    LockSetMax => LOCK_SET_MAX,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Limit> for &'static str {
    fn from(limit: Limit) -> &'static str {
        limit.as_str()
    }
}

/// A limit name this build does not know (read from data written by a
/// build with a limit this one lacks).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown limit {0:?}: the data was written by a newer build")]
pub struct UnknownLimit(pub String);

impl FromStr for Limit {
    type Err = UnknownLimit;

    /// Parses a constant's name ([`Limit::as_str`]).
    fn from_str(name: &str) -> Result<Limit, UnknownLimit> {
        Limit::ALL
            .iter()
            .find(|limit| limit.as_str() == name)
            .copied()
            .ok_or_else(|| UnknownLimit(name.to_owned()))
    }
}

impl TryFrom<String> for Limit {
    type Error = UnknownLimit;

    fn try_from(name: String) -> Result<Limit, UnknownLimit> {
        name.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limit_round_trips_through_its_name() {
        for &limit in Limit::ALL {
            assert_eq!(limit.as_str().parse(), Ok(limit));
            assert_eq!(limit.to_string(), limit.as_str());
        }
        assert_eq!(Limit::NameBytesMax.as_str(), "NAME_BYTES_MAX");
        assert_eq!(Limit::NameBytesMax.value(), NAME_BYTES_MAX as u64);
        assert_eq!(Limit::TtlMsMin.value(), TTL_MS_MIN);
        assert!("NOT_A_LIMIT".parse::<Limit>().is_err());
    }

    /// A limit is stored as its name: exactly the bytes of the `String` it
    /// was before it was typed, so remembered outcomes written then decode.
    #[test]
    fn a_limit_is_stored_as_the_string_it_used_to_be() {
        for &limit in Limit::ALL {
            let typed = postcard::to_allocvec(&limit).unwrap();
            let named = postcard::to_allocvec(&limit.as_str().to_owned()).unwrap();
            assert_eq!(typed, named, "{limit}");
            assert_eq!(postcard::from_bytes::<Limit>(&named).unwrap(), limit);
        }
        let unknown = postcard::to_allocvec("NOT_A_LIMIT").unwrap();
        assert!(postcard::from_bytes::<Limit>(&unknown).is_err());
    }
}
