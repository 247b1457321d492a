//! What a lease's handle, its guards and its keeper share: the validity
//! (deadline), the loss (first cause wins, once), the cancellation token
//! that fires at the loss, and the registry of locks live guards hold.
//!
//! There is no cached "held" flag: every question about ownership reads the
//! clock and compares it with the deadline (docs/DESIGN.md guarantee 6).

use super::hold::Hold;
use super::validity::{Lapsed, Validity};
use crate::clock::{BootInstant, Clock};
use crate::error::Error;
use crate::loss::{LockLost, LossCause};
use crate::metrics;
use leasehold_core::{LeaseId, LockName, Token};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A lock's place in the registry.
#[derive(Clone, Debug)]
pub(crate) enum Holding {
    /// An acquire is in flight.
    Acquiring,
    /// A live guard holds it.
    Held {
        /// The guard's hold (token, loss, claim on renewal).
        hold: Arc<Hold>,
        /// When the grant became known, in registrations: a keep-alive sent
        /// later than this was applied after the grant, so its reply must
        /// list the lock while it is ours.
        known_at: u64,
    },
}

/// The locks live guards hold or are acquiring.
#[derive(Debug, Default)]
struct Registry {
    locks: HashMap<LockName, Holding>,
    /// Grants registered so far (the `known_at` of the newest).
    registered: u64,
}

/// The latest acknowledged renewal of a lease.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Renewed {
    /// Renewals acknowledged so far by this process (0: none yet).
    pub count: u64,
    /// The server's revision in the latest acknowledgement.
    pub revision: u64,
}

/// The shared state of one lease.
#[derive(Debug)]
pub(crate) struct LeaseState {
    /// The lease.
    pub id: LeaseId,
    /// What validity is measured on.
    pub clock: Arc<dyn Clock>,
    /// ttl − margin from the last acknowledged send.
    validity: Mutex<Validity>,
    /// Why ownership ended; set once.
    loss: OnceLock<LossCause>,
    /// Cancelled at the loss.
    cancel: CancellationToken,
    /// Locks live guards hold or are acquiring, so reconciliation can tell
    /// an orphan (held on the server, known to no guard) from ours.
    registry: Mutex<Registry>,
    /// Set when the server may hold a lock no guard knows of (a reconnect,
    /// an acquire whose outcome is unknown, a release that failed).
    reconcile_wanted: AtomicBool,
    /// The latest acknowledged renewal, for followers (`Lease::renewals`).
    renewals: tokio::sync::watch::Sender<Renewed>,
}

impl LeaseState {
    /// The state of lease `id`, granted by a request sent at `grant_sent`.
    pub fn new(
        id: LeaseId,
        clock: Arc<dyn Clock>,
        grant_sent: BootInstant,
        ttl: Duration,
        margin: Duration,
    ) -> LeaseState {
        LeaseState {
            id,
            clock,
            validity: Mutex::new(Validity::new(grant_sent, ttl, margin)),
            loss: OnceLock::new(),
            cancel: CancellationToken::new(),
            registry: Mutex::new(Registry::default()),
            reconcile_wanted: AtomicBool::new(false),
            renewals: tokio::sync::watch::Sender::new(Renewed::default()),
        }
    }

    /// A renewal was acknowledged at the server's `revision`.
    pub fn renewed(&self, revision: u64) {
        self.renewals.send_modify(|renewed| {
            renewed.count += 1;
            renewed.revision = revision;
        });
    }

    /// Follows the acknowledged renewals.
    pub fn renewals(&self) -> tokio::sync::watch::Receiver<Renewed> {
        self.renewals.subscribe()
    }

    /// Ok with the time left, or the loss. Reading this at the deadline is
    /// what declares a lapse lost, so it is never reported held past it.
    pub fn check(&self) -> Result<Duration, LossCause> {
        if let Some(cause) = self.loss() {
            return Err(cause);
        }
        let checked = self.validity().check(self.clock.now());
        checked.map_err(|lapsed| self.lapse(lapsed))
    }

    /// A keep-alive sent at `sent` was acknowledged now. Returns the time
    /// that was left, or the loss if it came too late or after a loss.
    pub fn acknowledged(&self, sent: BootInstant) -> Result<Duration, LossCause> {
        if let Some(cause) = self.loss() {
            return Err(cause);
        }
        let acked = self.validity().acknowledged(sent, self.clock.now());
        acked.map_err(|lapsed| self.lapse(lapsed))
    }

    /// The local deadline.
    pub fn deadline(&self) -> BootInstant {
        self.validity().deadline()
    }

    /// Ends ownership for `cause`, unless it already ended; returns the
    /// cause that stands. Fires the cancellation token.
    pub fn lose(&self, cause: LossCause) -> LossCause {
        let mut first = false;
        let standing = self.loss.get_or_init(|| {
            first = true;
            cause
        });
        // Ending it ourselves is not a loss worth counting or warning about.
        if first && !standing.is_voluntary() {
            metrics::lost(standing);
            tracing::warn!(lease = %self.id, cause = %standing, "lease lost");
        }
        self.cancel.cancel();
        standing.clone()
    }

    /// The loss, if ownership ended. Whoever sees the loss also fires the
    /// token (a no-op if it already fired), so no caller can learn of the
    /// loss before the token says so — not even while the thread that
    /// recorded it is still on its way to `cancel()`.
    pub fn loss(&self) -> Option<LossCause> {
        let cause = self.loss.get().cloned();
        if cause.is_some() {
            self.cancel.cancel();
        }
        cause
    }

    /// The loss as an error about `lock`.
    pub fn lost_error(&self, lock: Option<&LockName>, cause: LossCause) -> LockLost {
        LockLost {
            lease: self.id,
            lock: lock.cloned(),
            cause,
        }
    }

    /// Fires at the loss.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    fn lapse(&self, lapsed: Lapsed) -> LossCause {
        self.lose(LossCause::DeadlineReached {
            since_last_ack: lapsed.since_last_ack,
        })
    }

    fn validity(&self) -> std::sync::MutexGuard<'_, Validity> {
        self.validity.lock().expect("validity lock")
    }

    /// Registers an acquire of `name`; refused if a live guard (or another
    /// acquire) of this lease already has it.
    pub fn begin_acquire(&self, name: &LockName) -> Result<(), Error> {
        let mut registry = self.registry();
        if registry.locks.contains_key(name) {
            return Err(Error::AlreadyHeld {
                name: name.to_string(),
            });
        }
        registry.locks.insert(name.clone(), Holding::Acquiring);
        Ok(())
    }

    /// The acquire of `name` was granted: a guard now holds it with `hold`.
    pub fn acquired(&self, name: &LockName, hold: Arc<Hold>) {
        let mut registry = self.registry();
        registry.registered += 1;
        let known_at = registry.registered;
        registry
            .locks
            .insert(name.clone(), Holding::Held { hold, known_at });
    }

    /// The registrations so far: the mark a keep-alive takes when it is
    /// sent, for [`LeaseState::holds_missing_from`].
    pub fn registered(&self) -> u64 {
        self.registry().registered
    }

    /// The digest of the holds a keep-alive sent now knows
    /// ([`leasehold_core::holdings_digest`]): when the server's digest of
    /// the lease's holds is the same, none was taken, and its reply leaves
    /// the list out.
    pub fn holdings_digest(&self) -> u64 {
        let registry = self.registry();
        let held = registry
            .locks
            .iter()
            .filter_map(|(name, holding)| match holding {
                Holding::Held { hold, .. } => Some((name.as_str(), hold.token.0)),
                Holding::Acquiring => None,
            });
        leasehold_core::holdings_digest(held)
    }

    /// Takes out of the registry every hold that was known before `mark`
    /// and whose (name, token) `is_held` says the server no longer holds
    /// for this lease; the caller ends them. Holds registered after the
    /// mark are left alone: their grant may postdate the server's answer.
    pub fn holds_missing_from(
        &self,
        mark: u64,
        is_held: impl Fn(&LockName, Token) -> bool,
    ) -> Vec<(LockName, Arc<Hold>)> {
        let mut registry = self.registry();
        let missing: Vec<LockName> = registry
            .locks
            .iter()
            .filter_map(|(name, holding)| match holding {
                Holding::Held { hold, known_at } if *known_at <= mark => {
                    (!is_held(name, hold.token)).then(|| name.clone())
                }
                _ => None,
            })
            .collect();
        missing
            .into_iter()
            .filter_map(|name| match registry.locks.remove(&name) {
                Some(Holding::Held { hold, .. }) => Some((name, hold)),
                _ => None,
            })
            .collect()
    }

    /// No live guard has `name` any more (released, dropped, or the acquire
    /// failed). With `uncertain`, the server may still hold it for us:
    /// reconciliation will release it.
    pub fn forget(&self, name: &LockName, uncertain: bool) {
        self.registry().locks.remove(name);
        if uncertain {
            self.want_reconcile();
        }
    }

    /// Whether a live guard or acquire knows `name`.
    pub fn knows(&self, name: &str) -> bool {
        self.registry().locks.contains_key(name)
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().expect("registry lock")
    }

    /// Asks the keeper to reconcile after its next acknowledged keep-alive.
    pub fn want_reconcile(&self) {
        self.reconcile_wanted.store(true, Ordering::Release);
    }

    /// Takes the reconcile request, if any.
    pub fn take_reconcile(&self) -> bool {
        self.reconcile_wanted.swap(false, Ordering::AcqRel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn state(clock: &Arc<ManualClock>) -> LeaseState {
        let clock_dyn: Arc<dyn Clock> = clock.clone();
        LeaseState::new(
            LeaseId(7),
            clock_dyn,
            clock.now(),
            Duration::from_secs(10),
            Duration::from_secs(1),
        )
    }

    #[test]
    fn reading_past_the_deadline_is_the_loss_and_fires_the_token() {
        let clock = Arc::new(ManualClock::new(Duration::from_secs(50), 0));
        let lease = state(&clock);
        clock.jump_wall_ms(-86_400_000);
        assert_eq!(lease.check(), Ok(Duration::from_secs(9)));
        assert!(!lease.cancellation().is_cancelled());
        clock.advance(Duration::from_secs(9));
        assert!(matches!(
            lease.check(),
            Err(LossCause::DeadlineReached { .. })
        ));
        assert!(lease.cancellation().is_cancelled());
        // Once lost, a late acknowledgement does not bring it back.
        assert!(lease.acknowledged(clock.now()).is_err());
        assert!(lease.check().is_err());
    }

    #[test]
    fn the_first_cause_stands() {
        let clock = Arc::new(ManualClock::new(Duration::from_secs(50), 0));
        let lease = state(&clock);
        assert_eq!(
            lease.lose(LossCause::LeaseNotFound),
            LossCause::LeaseNotFound
        );
        assert_eq!(
            lease.lose(LossCause::LeaseExpired),
            LossCause::LeaseNotFound
        );
        assert_eq!(lease.check(), Err(LossCause::LeaseNotFound));
    }

    fn hold(token: Token) -> Arc<Hold> {
        let claim = Arc::new(super::super::RenewalClaim::new(CancellationToken::new()));
        Arc::new(Hold::new(token, CancellationToken::new(), None, claim))
    }

    #[test]
    fn holds_known_before_the_mark_and_not_held_are_taken_out() {
        let clock = Arc::new(ManualClock::new(Duration::from_secs(50), 0));
        let lease = state(&clock);
        let name = |raw| LockName::parse(raw).unwrap();
        lease.acquired(&name("kept"), hold(Token(3)));
        lease.acquired(&name("taken"), hold(Token(4)));
        lease.acquired(&name("retaken"), hold(Token(5)));
        let mark = lease.registered();
        lease.acquired(&name("late"), hold(Token(9)));
        lease.begin_acquire(&name("acquiring")).unwrap();
        // The server holds "kept" under 3 and "retaken" under a newer token
        // (another holder got it in between): only (name, token) counts.
        let held = |n: &LockName, t: Token| (n.as_str(), t.0) == ("kept", 3);
        let mut missing: Vec<String> = lease
            .holds_missing_from(mark, held)
            .into_iter()
            .map(|(name, _)| name.to_string())
            .collect();
        missing.sort();
        assert_eq!(missing, ["retaken", "taken"]);
        for known in ["kept", "late", "acquiring"] {
            assert!(lease.knows(known), "{known}");
        }
        assert!(!lease.knows("taken"));
        // Once taken out, a hold is not reported again.
        assert!(lease.holds_missing_from(mark, held).is_empty());
    }

    #[test]
    fn one_guard_per_lock_and_forgetting_can_ask_for_reconciliation() {
        let clock = Arc::new(ManualClock::new(Duration::from_secs(50), 0));
        let lease = state(&clock);
        let name = LockName::parse("a").unwrap();
        lease.begin_acquire(&name).unwrap();
        assert!(matches!(
            lease.begin_acquire(&name),
            Err(Error::AlreadyHeld { .. })
        ));
        lease.acquired(&name, hold(Token(3)));
        assert!(lease.knows("a"));
        lease.forget(&name, true);
        assert!(!lease.knows("a"));
        assert!(lease.take_reconcile());
        assert!(!lease.take_reconcile());
    }
}
