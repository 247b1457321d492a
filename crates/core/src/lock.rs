//! The lock table's row: holder, FIFO queue, lock delay. The row does not
//! keep its name: the table's key is the name (a million held locks would
//! otherwise pay for it twice); [`LockView`] pairs the two for readers.

use crate::{LeaseId, LockName, Metadata, Token, WaitQueue};
use serde::{Deserialize, Serialize};

/// A lock that is held, waited for, or in its lock delay. A lock with none of
/// these is removed from the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lock {
    /// The current holder, if any.
    pub holder: Option<Holder>,
    /// Waiters in FIFO order; only the head is granted next.
    pub waiters: WaitQueue,
    /// Set while the lock is unavailable after its holder's lease expired
    /// (boxed: rare, and a held lock should not pay for its room).
    pub delay: Option<Box<LockDelay>>,
}

/// A lock row with its name, as the state's readers see it: the row's
/// fields, borrowed from the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockView<'a> {
    /// The lock's name.
    pub name: &'a LockName,
    /// The current holder, if any.
    pub holder: &'a Option<Holder>,
    /// Waiters in FIFO order.
    pub waiters: &'a WaitQueue,
    /// Set while the lock is in its lock delay.
    pub delay: &'a Option<Box<LockDelay>>,
}

impl<'a> LockView<'a> {
    /// The row `lock` named `name`.
    pub fn new(name: &'a LockName, lock: &'a Lock) -> LockView<'a> {
        LockView {
            name,
            holder: &lock.holder,
            waiters: &lock.waiters,
            delay: &lock.delay,
        }
    }

    /// An owned copy of the row (tests compare states with it).
    pub fn to_lock(&self) -> Lock {
        Lock {
            holder: self.holder.clone(),
            waiters: self.waiters.clone(),
            delay: self.delay.clone(),
        }
    }
}

/// Who holds a lock and on what terms.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub lease: LeaseId,
    /// Fencing token (revision of this grant).
    pub token: Token,
    /// Proposer's wall time of the grant (display only).
    pub acquired_unix_ms: u64,
    pub fenced: bool,
    /// Kept in 32 bits, as [`term_ms`] says.
    pub lock_delay_ms: u32,
    /// Kept in 32 bits, as [`term_ms`] says.
    pub max_hold_ms: u32,
    pub metadata: Metadata,
}

/// A lock delay or max hold as a holder or waiter keeps it: 32 bits, so a
/// lock row takes 64 bytes instead of 72 (docs/DESIGN.md §6d; a size class
/// down in allocators with classes 8-16 bytes apart, though glibc's block
/// header and 16-byte rounding put both in 80). Both limits are far below
/// `u32::MAX` ms (49 days), and an acquire is checked against them before
/// it is proposed, so nothing saturates; the encoding (a varint) is the
/// same as the `u64`'s, so stored rows read unchanged.
pub fn term_ms(ms: u64) -> u32 {
    u32::try_from(ms).unwrap_or(u32::MAX)
}

const _: () = assert!(crate::limits::LOCK_DELAY_MS_MAX <= u32::MAX as u64);
const _: () = assert!(crate::limits::MAX_HOLD_MS_MAX <= u32::MAX as u64);

/// A queued acquire, granted with the terms it asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiter {
    pub lease: LeaseId,
    /// Proposer's wall time of the enqueue (display only).
    pub since_unix_ms: u64,
    pub wait_ms: u64,
    pub fenced: bool,
    /// As [`Holder::lock_delay_ms`].
    pub lock_delay_ms: u32,
    /// As [`Holder::max_hold_ms`].
    pub max_hold_ms: u32,
    pub metadata: Metadata,
}

/// The lock is unavailable until `EndLockDelay { token }` applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockDelay {
    /// Token of the holder whose expiry started the delay.
    pub token: Token,
    pub delay_ms: u64,
    /// Proposer's wall time when the delay began (display only).
    pub since_unix_ms: u64,
}
