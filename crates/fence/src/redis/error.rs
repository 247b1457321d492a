//! Errors of the Redis adapter.

use crate::StaleToken;

/// Why a fenced Redis write or read did not happen.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    /// Refused: a newer holder has written. Stop writing; nothing changed.
    #[error(transparent)]
    Stale(#[from] StaleToken),
    /// The token is above 2^53: the script compares tokens as Lua numbers
    /// (doubles), which are not exact there, so it refuses rather than
    /// risk letting a stale write through. Nothing changed.
    #[error("token {token} exceeds 2^53 (9007199254740992, TOKEN_MAX): Redis Lua compares numbers as doubles, which cannot tell such tokens apart, so the write is refused")]
    TokenOutOfRange {
        /// The token presented.
        token: u64,
    },
    /// The data key cannot be fenced: empty, too long, or holding `}` without
    /// a hash tag (its fence could not share its hash slot).
    #[error("key {key:?} cannot be fenced: {reason}")]
    InvalidKey {
        /// The key given.
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The lock name is empty or longer than
    /// [`NAME_BYTES_MAX`](leasehold_core::limits::NAME_BYTES_MAX): no
    /// Leasehold lock has that name, so no token for it can be valid.
    #[error(
        "lock name {lock:?} is empty or longer than the limit NAME_BYTES_MAX ({} bytes); Leasehold issues no tokens for such a name",
        leasehold_core::limits::NAME_BYTES_MAX
    )]
    InvalidLock {
        /// The lock name given.
        lock: String,
    },
    /// A value or hash field is larger than [`super::VALUE_BYTES_MAX`].
    #[error(
        "value of {bytes} bytes exceeds the limit VALUE_BYTES_MAX ({} bytes)",
        super::VALUE_BYTES_MAX
    )]
    TooLarge {
        /// The size given.
        bytes: usize,
    },
    /// The fence key holds a value of a newer format than this adapter
    /// reads (see `fence.lua`); nothing was written.
    #[error(
        "the fence key is format v{found}, newer than this adapter reads (v{}): use the \
         leasehold-fence release that wrote it, or a newer one; nothing was written",
        super::FENCE_FORMAT
    )]
    NewerFormat {
        /// The format the value names.
        found: u32,
    },
    /// Redis answered with an error reply (e.g. `WRONGTYPE`).
    #[error("redis refused the command: {0}")]
    Server(String),
    /// The server's reply made no sense to this client.
    #[error("redis protocol error: {0}")]
    Protocol(String),
    /// Connecting, sending or receiving failed.
    #[error("redis connection: {0}")]
    Io(#[from] std::io::Error),
    /// No reply within the deadline; the connection is now unusable.
    #[error("redis did not answer within {timeout_ms} ms")]
    Timeout {
        /// The deadline that passed.
        timeout_ms: u64,
    },
    /// An earlier error left the connection mid-reply; reconnect.
    #[error("redis connection is unusable after an earlier error; reconnect")]
    Broken,
}
