//! # leasehold-fence
//!
//! The checking side of fencing tokens. A lock service can only promise
//! that the *lock table* has one holder; a holder that was paused past its
//! lease may still write. The protected resource closes that gap: for each
//! (resource, lock) it remembers the highest token it has accepted and
//! refuses any write carrying a lower one — in the same atomic step as the
//! write, so no check-then-write race lets a stale writer through.
//!
//! - [`check`] is the rule itself, as a pure function.
//! - [`StaleToken`] is the refusal, naming the presented and highest token.
//! - [`Rejection`] / [`audit`] record refusals so "a lower token followed a
//!   higher one" is a query, not a log dig; every refusal is also counted
//!   (`leasehold_fence_rejections_total{adapter}`) and logged.
//! - Adapters apply the rule where the data lives: [`memory`] (in process,
//!   optionally persisted to a file), and — in their own modules — PostgreSQL
//!   and Redis.
//!
//! Equal tokens are accepted: the same holder writing again.

pub mod audit;
mod check;
pub mod file;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod redis;

pub use audit::{Audit, Rejection};
pub use check::{check, StaleToken};
