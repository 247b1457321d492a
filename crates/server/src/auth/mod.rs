//! Who is calling and whether they may: the one module that owns the
//! caller's identity and the permission check of every API operation.
//!
//! - [`Caller`] ([`caller`]): the principal of a request, from its
//!   `authorization: Bearer <secret>` metadata, else its client
//!   certificate, else anonymous; checked against the replicated auth
//!   tables (`leasehold_core::auth`) with one call per operation.
//! - [`secret`]: making a token's secret and the digest the state keeps.
//! - [`refusals`]: refused requests reach the replicated audit trail
//!   through the log, at most `REFUSALS_AUDITED_PER_SECOND` per node.

pub mod caller;
pub mod refusals;
pub mod secret;

pub use caller::Caller;
pub use refusals::Refusals;
