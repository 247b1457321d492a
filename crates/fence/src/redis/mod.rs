//! Fencing in Redis: the token check and the write it guards run in one
//! Lua script ([`SCRIPT`], `fence.lua`), which Redis executes atomically.
//!
//! - [`RedisFence`] (`fence.rs`) — the API: fenced `set` / `hset` / `del`,
//!   `rejections` to read the refusal log, `highest` to read a fence.
//! - [`invocation`](mod@invocation) — the script's `KEYS` and `ARGV` for one write, the
//!   keys a reader needs, the rejection record: pure and public, so the
//!   Python adapter calls the script exactly as [`RedisFence`] does.
//! - `keys.rs` — where the fence (highest token per (key, lock)) and the
//!   rejection log live: *beside* the data, in its hash slot, so the script
//!   is valid on a Redis Cluster too.
//! - [`resp`] — the client.
//! - [`FenceError`] (`error.rs`).
//!
//! ## Why a hand-written RESP2 client
//!
//! The adapter sends a handful of commands, one at a time, as arrays of
//! bulk strings, and reads back integers, bulk strings and flat arrays.
//! RESP2 covers that in ~200 lines with bounded replies and a deadline per
//! command; the `redis` crate (even with default features off) would add
//! its own dependency tree, connection-manager and type-conversion layers
//! we would not use, and version churn to track. The only dependency here
//! is tokio, which the workspace already builds. Pipelining, pub/sub,
//! cluster redirection (`MOVED`/`ASK`), TLS and AUTH are not supported:
//! connect to the node that owns the keys, on a trusted network.
//!
//! ## Tokens above 2^53 are refused
//!
//! Redis Lua numbers are doubles; above 2^53 distinct integers collapse
//! (2^53 + 1 reads as 2^53), so a stale token could compare as equal and
//! be accepted. Rather than compare long decimal strings in Lua, tokens
//! above [`TOKEN_MAX`] are refused — by the client before sending
//! ([`FenceError::TokenOutOfRange`]) and again by the script (error reply
//! `LEASEHOLD_TOKEN_RANGE`) for any other client using it. 2^53 tokens is
//! far more than a lock service issues.
//!
//! ## Format
//!
//! A fence value is format v1 ([`FENCE_FORMAT`]): the token as a bare
//! decimal string. A later format will start its values with `v<N>:`, so
//! this adapter (the script, and [`RedisFence::highest`]) refuses such a
//! value with [`FenceError::NewerFormat`] naming both formats instead of
//! misreading it, and a later adapter tells a v1 value by its first byte.
//!
//! ## Names
//!
//! Every valid Leasehold lock name is accepted: up to
//! [`leasehold_core::limits::NAME_BYTES_MAX`] bytes, the limit the server
//! itself enforces, taken from core so the two cannot drift apart. Neither
//! Redis (keys up to 512 MB), the derived keys, the script nor the
//! rejection records (the lock goes last, so any text fits) need a lower
//! one. Data keys are bounded by [`KEY_BYTES_MAX`].
//!
//! ## Rejection log
//!
//! Each refusal is pushed by the script onto a per-key list (newest first,
//! trimmed to [`REJECTIONS_KEPT`]) as `presented highest at_unix_ms lock`,
//! with the Redis server's `TIME`, so "a lower token followed a higher one"
//! is a query even across clients. The client also records it in its
//! in-process [`crate::Audit`] (metric label `redis`).

mod error;
mod fence;
pub mod invocation;
mod keys;
pub mod resp;

pub use error::FenceError;
pub use fence::RedisFence;
pub use invocation::{invocation, Invocation, Op};

/// The fencing script. Public so other clients can run the same rule.
pub const SCRIPT: &str = include_str!("fence.lua");

/// The format of the fence values this adapter writes, and the newest it
/// reads (see "Format" above).
pub const FENCE_FORMAT: u32 = 1;

/// Highest token accepted: 2^53, the largest integer below which every
/// integer is exact as a Lua number (double).
pub const TOKEN_MAX: u64 = 1 << 53;

/// Refusals kept per data key in Redis.
pub const REJECTIONS_KEPT: usize = crate::audit::REJECTIONS_REMEMBERED;

/// Longest data key accepted.
pub const KEY_BYTES_MAX: usize = 1024;

/// Largest value or hash field accepted in one fenced write (readable back
/// within [`resp::REPLY_BULK_BYTES_MAX`]).
pub const VALUE_BYTES_MAX: usize = resp::REPLY_BULK_BYTES_MAX;
