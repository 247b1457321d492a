//! # leasehold-chaos
//!
//! Leasehold's guarantees checked over a whole recorded history, the way
//! Jepsen's checkers and etcd's robustness tests do, rather than one
//! scenario at a time (issue 16).
//!
//! - [`cluster`]: real `leasehold serve` processes on loopback, each behind
//!   a [`proxy`] that injects network faults (also `leasehold drill --local`'s
//!   throwaway cluster).
//! - [`holder`]: workload clients in processes of their own (the hidden
//!   `leasehold-chaos holder`), so a holder can be SIGSTOPped for real.
//! - [`history`]: what was recorded — leases (granted, renewed, revoked),
//!   holds (acquired, released), fenced puts and reads, each operation with its invoke and
//!   complete times on one monotonic clock of the recorder.
//! - [`check`]: the rules, each a pure function of the history returning
//!   every violation with what proves it:
//!   1. per lock, acknowledged grants have distinct tokens, and a grant
//!      that completed before another was invoked has the lower token;
//!   2. no early grant: a grant completes no earlier than the previous
//!      holder's end could have come (its release was sent, or its lease
//!      could have expired: last acknowledged keep-alive's send time + ttl,
//!      shortened by the documented clock-rate bound);
//!   3. the fenced store is a register versioned by tokens: accepted puts
//!      never go back in version, a refusal is justified by a higher
//!      accepted token, a read sees only what an accepted put wrote.

pub mod check;
pub mod cluster;
pub mod fault;
pub mod history;
pub mod holder;
pub mod liveness;
pub mod probe;
pub mod proxy;
pub mod recorder;
pub mod report;
pub mod run;
pub mod tmpfs;
pub mod workload;
