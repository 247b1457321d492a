//! A pool of permits granted first come, first served: the grant rule that
//! semaphores and read-write locks share (issue 18, "Fenced recipes").
//!
//! A semaphore is a pool of N permits; a holder asks for k of them. A
//! read-write lock is a pool of [`PERMITS_MAX`] permits in which a shared
//! holder asks for one ([`PermitPool::SHARED`]) and an exclusive holder for
//! all of them ([`PermitPool::exclusive`]): a writer excludes everyone,
//! readers share, and one rule serves both.
//!
//! **The rule**: an ask is granted at once only if nobody waits and its
//! permits are free; otherwise it waits at the back. Whenever permits come
//! free (a release, a lease's end) or the head leaves the queue, waiters are
//! granted from the head for as long as the head's ask fits, all in the
//! same command. So a waiter asking for k permits is never overtaken by a
//! later, smaller ask (Curator's and Redisson's semaphores let small asks
//! starve big ones), a writer at the head holds back the readers behind it
//! (no writer starvation), and consecutive readers at the head are granted
//! together. The price is head-of-line blocking: permits can sit free while
//! the head waits for more of them.
//!
//! **One grant per lease**: a lease holds at most one grant of a pool, or
//! waits for one. Asking again for the same count is answered with what the
//! lease has (a retry finds its grant or its place); asking for another
//! count while holding or waiting is refused, so nothing turns one grant
//! into another in place: a reader that wants to write releases and asks
//! again, at the back (no downgrade or upgrade race). A grant is named by
//! (lease, token), as a release names it.
//!
//! **Tokens** come from the caller: the state's revision, which every
//! command that grants moves first. Grants made by one command (a release
//! that lets several waiters in) share that command's token, as readers
//! granted together share theirs; every grant of a later command has a
//! higher one, so a writer's token is above every earlier holder's. The pool
//! asserts that tokens never go back.
//!
//! Pure, like the rest of the core: no clock (a wait's deadline is the
//! lessor's), no I/O, no names (the state keys pools by name).

use crate::{LeaseId, Token};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

pub use crate::limits::PERMITS_MAX;

/// Permits, who holds them and who waits, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermitPool {
    /// How many permits there are, fixed when the pool is made.
    permits: u32,
    /// Grants in the order they were made (so tokens never decrease).
    holds: Vec<PermitHold>,
    /// Waiters in FIFO order; the head's ask does not fit (else it would
    /// hold).
    waiters: VecDeque<PermitWait>,
}

/// One grant: `count` permits held by `lease` under `token`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermitHold {
    pub lease: LeaseId,
    pub token: Token,
    pub count: u32,
    /// Proposer's wall time of the grant (display only).
    pub acquired_unix_ms: u64,
    /// The holder declared that the protected resource checks tokens.
    pub fenced: bool,
}

/// What a grant made by the current command carries: its token (the
/// command's revision) and the proposer's wall time (display only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub token: Token,
    pub at_unix_ms: u64,
}

/// One queued ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermitWait {
    pub lease: LeaseId,
    pub count: u32,
    /// How long it waits at most (the deadline is the leader's lessor's,
    /// re-armed from this after a failover).
    pub wait_ms: u64,
    /// Proposer's wall time of the ask (display only).
    pub since_unix_ms: u64,
    /// As [`PermitHold::fenced`], kept until the grant.
    pub fenced: bool,
}

/// An ask for permits: who, how many, how long it may wait (0: not at
/// all), and whether the holder's resource checks tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ask {
    pub lease: LeaseId,
    pub count: u32,
    pub wait_ms: u64,
    pub fenced: bool,
}

/// What an ask got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asked {
    /// The permits are the lease's; `already_held` if they were before
    /// this ask (a retry), with the token they were granted under.
    Granted { token: Token, already_held: bool },
    /// Waiting, at this 1-based place in the queue.
    Queued { position: u32 },
}

/// Why an ask, a release or a pool was refused; the state names the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PermitRefusal {
    /// A pool needs 1 to [`PERMITS_MAX`] permits.
    #[error("a pool has 1 to {max} permits, not {permits}", max = PERMITS_MAX)]
    PermitsOutOfRange { permits: u32 },
    /// An ask is for 1 to the pool's permits.
    #[error("asked for {count} permits of a pool of {permits}: ask for 1 to {permits}")]
    CountOutOfRange { count: u32, permits: u32 },
    /// The ask would not wait and its permits are not free now (or others
    /// wait first).
    #[error(
        "{free} of {permits} permits are free and {waiting} asks wait first: asked for {count}"
    )]
    Busy {
        count: u32,
        free: u32,
        permits: u32,
        waiting: u32,
    },
    /// The lease holds a grant of another count, or waits for one.
    #[error(
        "the lease already {} {held} permits: release them (or stop waiting) before asking for {count}",
        if *.waiting { "waits for" } else { "holds" }
    )]
    OtherCount {
        held: u32,
        count: u32,
        waiting: bool,
    },
    /// No grant of the pool is (lease, token).
    #[error("lease {lease} holds no permits under token {token}")]
    NotHolder { lease: LeaseId, token: Token },
}

impl PermitPool {
    /// A shared holder's ask in a read-write pool.
    pub const SHARED: u32 = 1;

    /// A pool of `permits` permits, none held.
    pub fn new(permits: u32) -> Result<PermitPool, PermitRefusal> {
        if !(1..=PERMITS_MAX).contains(&permits) {
            return Err(PermitRefusal::PermitsOutOfRange { permits });
        }
        Ok(PermitPool {
            permits,
            holds: Vec::new(),
            waiters: VecDeque::new(),
        })
    }

    /// A read-write lock's pool: [`PERMITS_MAX`] permits.
    pub fn read_write() -> PermitPool {
        PermitPool::new(PERMITS_MAX).expect("PERMITS_MAX is in range")
    }

    /// An exclusive holder's ask: every permit of the pool.
    pub fn exclusive(&self) -> u32 {
        self.permits
    }

    /// `ask.lease` asks for `ask.count` permits, to be granted under
    /// `stamp` (the asking command's) if they are free now; if not, it
    /// waits at the back for up to `ask.wait_ms`, or with 0 is refused as
    /// busy.
    pub fn ask(&mut self, ask: Ask, stamp: Stamp) -> Result<Asked, PermitRefusal> {
        let Ask {
            lease,
            count,
            wait_ms,
            fenced,
        } = ask;
        if !(1..=self.permits).contains(&count) {
            let permits = self.permits;
            return Err(PermitRefusal::CountOutOfRange { count, permits });
        }
        if let Some(asked) = self.asked_before(lease, count)? {
            return Ok(asked);
        }
        if self.fits_now(count) {
            self.grant(lease, count, fenced, stamp);
            return Ok(Asked::Granted {
                token: stamp.token,
                already_held: false,
            });
        }
        if wait_ms == 0 {
            return Err(PermitRefusal::Busy {
                count,
                free: self.free(),
                permits: self.permits,
                waiting: self.waiters.len() as u32,
            });
        }
        self.waiters.push_back(PermitWait {
            lease,
            count,
            wait_ms,
            since_unix_ms: stamp.at_unix_ms,
            fenced,
        });
        Ok(Asked::Queued {
            position: self.waiters.len() as u32,
        })
    }

    /// What `lease` already has of this pool, if anything: its grant or
    /// its place for an ask of the same `count`; a refusal for another.
    fn asked_before(&self, lease: LeaseId, count: u32) -> Result<Option<Asked>, PermitRefusal> {
        let other = |held, waiting| PermitRefusal::OtherCount {
            held,
            count,
            waiting,
        };
        if let Some(hold) = self.holds.iter().find(|h| h.lease == lease) {
            if hold.count != count {
                return Err(other(hold.count, false));
            }
            return Ok(Some(Asked::Granted {
                token: hold.token,
                already_held: true,
            }));
        }
        let Some(at) = self.waiters.iter().position(|w| w.lease == lease) else {
            return Ok(None);
        };
        if self.waiters[at].count != count {
            return Err(other(self.waiters[at].count, true));
        }
        Ok(Some(Asked::Queued {
            position: at as u32 + 1,
        }))
    }

    /// Releases the grant (`lease`, `token`) and returns it. Call
    /// [`PermitPool::grant_waiting`] after, with the releasing command's
    /// stamp.
    pub fn release(&mut self, lease: LeaseId, token: Token) -> Result<PermitHold, PermitRefusal> {
        let at = self
            .holds
            .iter()
            .position(|h| (h.lease, h.token) == (lease, token))
            .ok_or(PermitRefusal::NotHolder { lease, token })?;
        Ok(self.holds.remove(at))
    }

    /// Takes `lease` out of the queue; whether it was there. Call
    /// [`PermitPool::grant_waiting`] after: the asks behind it may fit.
    pub fn cancel_wait(&mut self, lease: LeaseId) -> bool {
        let before = self.waiters.len();
        self.waiters.retain(|w| w.lease != lease);
        self.waiters.len() < before
    }

    /// `lease` ended: its grant and its wait go. Returns the grant it
    /// held, if any, and whether it was waiting. Call
    /// [`PermitPool::grant_waiting`] after.
    pub fn leave(&mut self, lease: LeaseId) -> (Option<PermitHold>, bool) {
        let held = self.holds.iter().position(|h| h.lease == lease);
        let held = held.map(|at| self.holds.remove(at));
        (held, self.cancel_wait(lease))
    }

    /// Grants waiters from the head under `stamp` for as long as the
    /// head's ask fits; returns the grants, in queue order.
    pub fn grant_waiting(&mut self, stamp: Stamp) -> Vec<PermitHold> {
        let mut granted = Vec::new();
        while let Some(&PermitWait {
            lease,
            count,
            fenced,
            ..
        }) = self.waiters.front()
        {
            if count > self.free() {
                break;
            }
            self.waiters.pop_front();
            granted.push(self.grant(lease, count, fenced, stamp));
        }
        granted
    }

    fn grant(&mut self, lease: LeaseId, count: u32, fenced: bool, stamp: Stamp) -> PermitHold {
        let latest = self.holds.last().map(|h| h.token);
        assert!(latest <= Some(stamp.token), "a grant's token went back");
        let hold = PermitHold {
            lease,
            token: stamp.token,
            count,
            acquired_unix_ms: stamp.at_unix_ms,
            fenced,
        };
        self.holds.push(hold);
        hold
    }

    /// Whether an ask for `count` permits made now would be granted at
    /// once: nobody waits and they are free.
    pub fn fits_now(&self, count: u32) -> bool {
        self.waiters.is_empty() && count <= self.free()
    }

    /// Whether `count` permits are free, whoever waits.
    pub fn has_free(&self, count: u32) -> bool {
        count <= self.free()
    }

    /// How many permits the pool has.
    pub fn permits(&self) -> u32 {
        self.permits
    }

    /// How many permits nobody holds (none, for a pool whose grants hold
    /// more than it has, which only a damaged snapshot could say; see
    /// [`PermitPool::overdrawn`]).
    pub fn free(&self) -> u32 {
        self.permits.saturating_sub(self.held())
    }

    /// How many permits are held.
    pub fn held(&self) -> u32 {
        self.holds
            .iter()
            .fold(0, |held, h| held.saturating_add(h.count))
    }

    /// Whether the grants hold more permits than the pool has (never, by
    /// the grant rule; a decoded snapshot is checked for it).
    pub fn overdrawn(&self) -> bool {
        let held: u64 = self.holds.iter().map(|h| u64::from(h.count)).sum();
        held > u64::from(self.permits)
    }

    /// The grants, oldest first.
    pub fn holds(&self) -> &[PermitHold] {
        &self.holds
    }

    /// The waiters, head first.
    pub fn waiters(&self) -> impl ExactSizeIterator<Item = &PermitWait> {
        self.waiters.iter()
    }

    /// Whether nobody holds or waits (the state then drops the pool).
    pub fn is_idle(&self) -> bool {
        self.holds.is_empty() && self.waiters.is_empty()
    }
}

#[cfg(test)]
#[path = "permits_tests.rs"]
mod tests;
