//! What the lessor hands the leader when a deadline passes: a [`Due`] item,
//! which names the one command that acts on it.

use crate::{Command, LeaseId, LockName, Token};

/// What the lessor keeps of a lease's renewal count: its low 24 bits, so a
/// lease's timer fits one word (docs/DESIGN.md §6d, "Ninth pass").
///
/// An expiry proposal carries the full count, read from the applied state
/// as it is proposed ([`Due::command_for_all`]), and only if that count
/// ends in the item's mark. A count that does not is a renewal applied
/// after the lessor handed the item out (the lessor hears of it as it
/// applies, and re-arms the lease): the lease is not due. The two could
/// agree wrongly only if 2^24 renewals of one lease applied between the
/// hand-out and the read, microseconds apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenewalMark(u32);

impl RenewalMark {
    /// The bits of the count kept.
    pub const BITS: u32 = 24;

    /// The mark of the `renewals`-th renewal.
    pub fn of(renewals: u64) -> RenewalMark {
        RenewalMark((renewals & ((1 << Self::BITS) - 1)) as u32)
    }

    /// The mark as a number below 2^24.
    pub fn get(self) -> u32 {
        self.0
    }

    /// Whether the full count `renewals` ends in this mark.
    pub fn matches(self, renewals: u64) -> bool {
        RenewalMark::of(renewals) == self
    }
}

/// Something that is due: the command the leader should propose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Due {
    /// Propose `ExpireLease { lease, renewals }`, the count being the
    /// state's, if it ends in `mark`.
    ExpireLease { lease: LeaseId, mark: RenewalMark },
    /// Propose `EndLockDelay { name, token }`.
    EndLockDelay { name: LockName, token: Token },
    /// Propose `EndHold { name, token }`.
    EndHold { name: LockName, token: Token },
    /// Propose `CancelWait { lease, name, timed_out: true }`: the queued
    /// acquire's wait ran out.
    CancelWait { name: LockName, lease: LeaseId },
}

impl Due {
    /// The command that acts on this item; `renewals_of` reads a lease's
    /// renewal count from the applied state. Each is a no-op once moot (a
    /// renewal, release or grant applied first), so proposing it late or
    /// twice is harmless. `None` for a lease the state no longer has, or
    /// whose count does not end in the item's mark (a renewal the lessor
    /// has not heard of yet): nothing to propose.
    fn command(&self, renewals_of: impl Fn(LeaseId) -> Option<u64>) -> Option<Command> {
        Some(match self {
            Due::ExpireLease { lease, mark } => Command::ExpireLease {
                lease: *lease,
                renewals: renewals_of(*lease).filter(|count| mark.matches(*count))?,
            },
            Due::EndLockDelay { name, token } => Command::EndLockDelay {
                name: name.clone(),
                token: *token,
            },
            Due::EndHold { name, token } => Command::EndHold {
                name: name.clone(),
                token: *token,
            },
            Due::CancelWait { name, lease } => Command::CancelWait {
                lease: *lease,
                name: name.clone(),
                timed_out: true,
            },
        })
    }

    /// The one command for `items` proposed together: a single item's own
    /// command (see `command`: `None` if it is moot), or for several wait
    /// timeouts (as [`super::Lessor::take_due_waits`] hands them out) one
    /// `TimeOutWaits`. `renewals_of` reads a lease's renewal count from
    /// the applied state.
    ///
    /// # Panics
    /// If `items` is empty, or several items are not all wait timeouts.
    pub fn command_for_all(
        items: &[Due],
        renewals_of: impl Fn(LeaseId) -> Option<u64>,
    ) -> Option<Command> {
        if let [one] = items {
            return one.command(renewals_of);
        }
        assert!(!items.is_empty(), "no item to propose");
        let waits = items.iter().map(|due| match due {
            Due::CancelWait { name, lease } => (*lease, name.clone()),
            other => panic!("only wait timeouts are proposed together, not {other:?}"),
        });
        Some(Command::TimeOutWaits {
            waits: waits.collect(),
        })
    }

    /// The key of the lock timer this item came from (`None` for a lease).
    pub(super) fn timer_key(&self) -> Option<TimerKey> {
        Some(match self {
            Due::ExpireLease { .. } => return None,
            Due::EndLockDelay { name, token } => TimerKey::Delay(name.clone(), *token),
            Due::EndHold { name, token } => TimerKey::Hold(name.clone(), *token),
            Due::CancelWait { name, lease } => TimerKey::Wait(name.clone(), *lease),
        })
    }
}

/// A lock timer's identity: at most one timer per key. The order of the
/// variants breaks ties between timers due at the same millisecond.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum TimerKey {
    /// The lock delay begun when the holder with this token expired.
    Delay(LockName, Token),
    /// The max hold of the holder with this token.
    Hold(LockName, Token),
    /// The wait of this lease in the lock's queue.
    Wait(LockName, LeaseId),
}

impl TimerKey {
    /// The item to hand out when this timer is due.
    pub(super) fn due(&self) -> Due {
        match self {
            TimerKey::Delay(name, token) => Due::EndLockDelay {
                name: name.clone(),
                token: *token,
            },
            TimerKey::Hold(name, token) => Due::EndHold {
                name: name.clone(),
                token: *token,
            },
            TimerKey::Wait(name, lease) => Due::CancelWait {
                name: name.clone(),
                lease: *lease,
            },
        }
    }
}
