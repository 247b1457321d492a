//! The sinks of applied effects. The apply hub ([`crate::hub`]) routes each
//! effect of each applied command to the sinks that act on it; each sink
//! owns one concern and gets everything it needs from the effect itself
//! (owners, renewal counts, who forced a release), never from the state.
//!
//! - [`crate::waiters`]: wakes blocked acquires (and times their waits);
//! - [`crate::timers`]: the deadlines (the core's lessor);
//! - [`telemetry`]: metrics and log lines (the per-lock ones written by
//!   [`lock_lines`]' thread);
//! - [`crate::events`]: the event log behind `Events` and the live page;
//! - [`holders`]: since when each current holder holds, on this node's clock;
//! - [`crate::hold_stats`]: finished holds by prefix, for `diagnose`;
//! - [`crate::ended_holds`]: holds the server ended while their lease lived;
//! - [`crate::samples`]: per-interval counts for the live page's charts;
//! - [`crate::leaders`]: each election's leader, command by command, for
//!   observers.
//!
//! [`Sinks`] bundles one handle to each; the hub and the API's `Node` share
//! the same bundle, so each is reachable one way.

pub mod holders;
pub mod lease_end_lines;
pub mod lock_lines;
pub mod telemetry;

use crate::clock::Clock;
use crate::ended_holds::EndedHolds;
use crate::events::EventLog;
use crate::hold_stats::HoldStats;
use crate::leaders::LeaderWatch;
use crate::samples::Samples;
use crate::timers::Timers;
use crate::waiters::Waiters;
use holders::Holders;
use leasehold_core::{FencedKey, ForcedBy, FreeCause, LeaseId, LockError, LockName, Token};
use std::sync::Arc;
use std::time::Duration;

/// One handle to each sink.
#[derive(Clone)]
pub struct Sinks {
    /// Blocked acquires, woken by grants and removals.
    pub waiters: Arc<Waiters>,
    /// Deadlines (lease expiry, lock delay, max hold, waits), and the
    /// remaining times replies show.
    pub timers: Arc<Timers>,
    /// Since when each current holder holds.
    pub holders: Arc<Holders>,
    /// Recent events, and their followers.
    pub events: Arc<EventLog>,
    /// Recent hold times by prefix.
    pub holds: Arc<HoldStats>,
    /// Holds the server ended while their lease lived, for the holder's
    /// next keep-alive reply.
    pub ended: Arc<EndedHolds>,
    /// Grants, releases, expiries and keep-alive margins per interval, for
    /// the live page's charts.
    pub samples: Arc<Samples>,
    /// Leader changes of elections, for `Watch.Observe`.
    pub leaders: Arc<LeaderWatch>,
}

impl Sinks {
    /// Empty sinks on `clock`; deadlines that fall just after this node
    /// takes over get `failover_margin`.
    pub fn new(clock: Arc<dyn Clock>, failover_margin: Duration) -> Sinks {
        Sinks {
            waiters: Arc::new(Waiters::new()),
            timers: Arc::new(Timers::new(clock.clone(), failover_margin)),
            holders: Arc::new(Holders::new(clock.clone())),
            samples: Arc::new(Samples::new(clock)),
            events: Arc::new(EventLog::new()),
            holds: Arc::new(HoldStats::default()),
            ended: Arc::new(EndedHolds::default()),
            leaders: Arc::new(LeaderWatch::default()),
        }
    }
}

/// What a lock free is: which lock, whose, and how.
#[derive(Clone, Copy)]
pub struct Freed<'a> {
    /// The lock.
    pub name: &'a LockName,
    /// The lease that held it, and its owner name.
    pub lease: LeaseId,
    pub owner: &'a str,
    /// The holder's token.
    pub token: Token,
    /// How it was freed.
    pub cause: FreeCause,
    /// Who forced it free and why, for a force release.
    pub forced: Option<&'a ForcedBy>,
    /// How long this node saw it held (`None` if it never saw the grant).
    pub held_for: Option<Duration>,
}

/// What a refused fenced put names, as logged and recorded.
#[derive(Clone, Copy)]
pub struct Refusal<'a> {
    /// The key the put named.
    pub key: &'a FencedKey,
    /// The lock the writer named.
    pub lock: &'a LockName,
    /// The writer's lease (0 without one) and its owner.
    pub lease: LeaseId,
    pub owner: &'a str,
    /// The token the writer presented.
    pub presented: Token,
    /// The key's highest token (0 if never written) and the lock that wrote it.
    pub highest_token: u64,
    pub highest_lock: &'a str,
    /// The error the writer was told.
    pub error: &'a LockError,
}
