//! Every limit Leasehold enforces, in one place. Each is checked at the
//! boundary (validation of a command before it is proposed, or the core's
//! apply for limits that depend on state) and named in its error, so an
//! operator reading an error can find the limit here by its name.

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
/// Names suggested in a NoSuchLock error.
pub const NEARBY_NAMES_MAX: usize = 3;
/// Largest gRPC request message, in bytes.
pub const REQUEST_BYTES_MAX: usize = 64 * 1024;
/// Open client connections to one server.
pub const CONNECTIONS_MAX: usize = 4_096;
/// Concurrent gRPC calls and streams on one connection (HTTP/2
/// SETTINGS_MAX_CONCURRENT_STREAMS); a client past it waits for a slot.
pub const STREAMS_PER_CONNECTION_MAX: u32 = 1_024;
/// Locks returned by one List call.
pub const LIST_LOCKS_MAX: usize = 10_000;
/// Longest fenced-store key, in bytes (same rules as lock names).
pub const FENCED_KEY_BYTES_MAX: usize = 512;
/// Largest fenced-store value, in bytes: a request must also carry the key,
/// the lock name, a request id and the framing, so the value gets
/// `REQUEST_BYTES_MAX` minus 4 KiB of headroom.
pub const FENCED_VALUE_BYTES_MAX: usize = REQUEST_BYTES_MAX - 4 * 1024;
/// Keys in the fenced store.
pub const FENCED_KEYS_MAX: usize = 100_000;
/// Bytes of all fenced-store keys plus values. The store lives in memory
/// and in every snapshot; `FENCED_KEYS_MAX` full-size values would be
/// about 6 GiB, so the total has its own, smaller bound.
pub const FENCED_STORE_BYTES_MAX: usize = 64 * 1024 * 1024;

// A put of the largest key and value under the longest lock name and
// request id fits in one request, with room for tags, lengths and the token.
const _: () = assert!(
    FENCED_VALUE_BYTES_MAX + FENCED_KEY_BYTES_MAX + NAME_BYTES_MAX + REQUEST_ID_BYTES_MAX + 64
        <= REQUEST_BYTES_MAX
);
const _: () = assert!(FENCED_KEY_BYTES_MAX + FENCED_VALUE_BYTES_MAX <= FENCED_STORE_BYTES_MAX);
