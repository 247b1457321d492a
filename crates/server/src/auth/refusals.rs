//! Refused requests reach the replicated audit trail as `Command::Audit`
//! entries proposed in the background, never on the request path: at most
//! [`limits::REFUSALS_AUDITED_PER_SECOND`] per node and second; the rest
//! are only counted (`leasehold_audit_refusals_dropped_total`), so a flood
//! of refused calls cannot flood the log.

use crate::proposer::Proposer;
use leasehold_core::auth::AuditEntry;
use leasehold_core::{limits, Command};
use std::sync::Mutex;
use std::time::Instant;

/// The per-node budget of audited refusals.
pub struct Refusals {
    /// Where audit entries are proposed.
    proposer: Proposer,
    /// The start of the current one-second window and the refusals sent
    /// in it.
    window: Mutex<(Instant, usize)>,
}

impl Refusals {
    /// A budget that proposes through `proposer`.
    pub fn new(proposer: Proposer) -> Refusals {
        Refusals {
            proposer,
            window: Mutex::new((Instant::now(), 0)),
        }
    }

    /// Sends `entry` to the audit trail if this second's budget allows,
    /// else counts it as dropped. Never waits.
    pub fn report(&self, entry: AuditEntry) {
        metrics::counter!("leasehold_requests_refused_total").increment(1);
        if !self.admit(Instant::now()) {
            metrics::counter!("leasehold_audit_refusals_dropped_total").increment(1);
            return;
        }
        let proposer = self.proposer.clone();
        tokio::spawn(async move {
            if let Err(error) = proposer.propose(Command::Audit(entry)).await {
                tracing::debug!(%error, "a refusal did not reach the audit trail");
            }
        });
    }

    /// Whether one more refusal fits in the window of `now`.
    fn admit(&self, now: Instant) -> bool {
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        if now.duration_since(window.0).as_secs() >= 1 {
            *window = (now, 0);
        }
        if window.1 >= limits::REFUSALS_AUDITED_PER_SECOND {
            return false;
        }
        window.1 += 1;
        true
    }
}
