//! What the lessor hands the leader when a deadline passes: a [`Due`] item,
//! which names the one command that acts on it.

use crate::{Command, LeaseId, LockName, Token};

/// Something that is due: the command the leader should propose.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Due {
    /// Propose `ExpireLease { lease, renewals }`.
    ExpireLease { lease: LeaseId, renewals: u64 },
    /// Propose `EndLockDelay { name, token }`.
    EndLockDelay { name: LockName, token: Token },
    /// Propose `EndHold { name, token }`.
    EndHold { name: LockName, token: Token },
    /// Propose `CancelWait { lease, name, timed_out: true }`: the queued
    /// acquire's wait ran out.
    CancelWait { name: LockName, lease: LeaseId },
}

impl Due {
    /// The command that acts on this item. Each is a no-op once moot (a
    /// renewal, release or grant applied first), so proposing it late or
    /// twice is harmless.
    pub fn command(&self) -> Command {
        match self {
            Due::ExpireLease { lease, renewals } => Command::ExpireLease {
                lease: *lease,
                renewals: *renewals,
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
        }
    }

    /// The one command for `items` proposed together: a single item's own
    /// command, or for several wait timeouts (as
    /// [`super::Lessor::take_due_waits`] hands them out) one
    /// `TimeOutWaits`.
    ///
    /// # Panics
    /// If `items` is empty, or several items are not all wait timeouts.
    pub fn command_for_all(items: &[Due]) -> Command {
        if let [one] = items {
            return one.command();
        }
        assert!(!items.is_empty(), "no item to propose");
        let waits = items.iter().map(|due| match due {
            Due::CancelWait { name, lease } => (*lease, name.clone()),
            other => panic!("only wait timeouts are proposed together, not {other:?}"),
        });
        Command::TimeOutWaits {
            waits: waits.collect(),
        }
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
