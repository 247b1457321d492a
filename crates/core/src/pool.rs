//! Semaphores and read-write locks as the state keeps them: a name's
//! [`Pool`] (its kind and its [`PermitPool`]), and what an ask for permits
//! says ([`PermitAsk`]).
//!
//! They live in the lock namespace: while anyone holds or waits on a name
//! it is a lock, a semaphore or a read-write lock, and using it as another
//! is refused with a sentence that says what it is. A pool with nobody
//! holding or waiting is removed, as a free lock is, so the name is free
//! for any use again.

use crate::limits::{self, Limit};
use crate::permits::{PermitPool, PERMITS_MAX};
use crate::{LeaseId, LockError, LockName, RequestId};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a pooled name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PoolKind {
    /// N permits; each holder takes k of them.
    Semaphore,
    /// Shared holders, or one exclusive holder.
    ReadWrite,
}

/// A semaphore or a read-write lock that someone holds or waits on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pool {
    pub kind: PoolKind,
    pub permits: PermitPool,
}

/// A pool with its name, as the state's readers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolView<'a> {
    pub name: &'a LockName,
    pub pool: &'a Pool,
}

/// What an ask for permits wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PermitAsk {
    /// `count` of a semaphore of `permits` (the first asker sets the
    /// size; a later ask naming another size is refused).
    Semaphore { permits: u32, count: u32 },
    /// A shared hold of a read-write lock.
    Shared,
    /// The exclusive hold of a read-write lock.
    Exclusive,
}

impl PermitAsk {
    /// The kind of pool the ask is for.
    pub fn kind(self) -> PoolKind {
        match self {
            PermitAsk::Semaphore { .. } => PoolKind::Semaphore,
            PermitAsk::Shared | PermitAsk::Exclusive => PoolKind::ReadWrite,
        }
    }

    /// A new, empty pool the ask fits.
    pub fn new_pool(self) -> Result<Pool, LockError> {
        let permits = match self {
            PermitAsk::Semaphore { permits, .. } => {
                PermitPool::new(permits).map_err(|refusal| {
                    LockError::over_limit("permits", Limit::PermitsMax, refusal.to_string())
                })?
            }
            PermitAsk::Shared | PermitAsk::Exclusive => PermitPool::read_write(),
        };
        Ok(Pool {
            kind: self.kind(),
            permits,
        })
    }

    /// How many of `pool`'s permits the ask takes.
    pub fn count(self, pool: &PermitPool) -> u32 {
        match self {
            PermitAsk::Semaphore { count, .. } => count,
            PermitAsk::Shared => PermitPool::SHARED,
            PermitAsk::Exclusive => pool.exclusive(),
        }
    }

    /// Checks sizes against [`limits`] (before proposing, and at apply).
    pub fn validate(self) -> Result<(), LockError> {
        let PermitAsk::Semaphore { permits, count } = self else {
            return Ok(());
        };
        if !(1..=PERMITS_MAX).contains(&permits) {
            let reason = format!("{permits} is outside 1..=PERMITS_MAX (1..={PERMITS_MAX})");
            return Err(LockError::over_limit("permits", Limit::PermitsMax, reason));
        }
        if !(1..=permits).contains(&count) {
            let reason = format!(
                "{count} is outside 1..={permits}: ask for 1 to the semaphore's {permits} permits"
            );
            return Err(LockError::invalid("count", reason));
        }
        Ok(())
    }
}

impl fmt::Display for PoolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PoolKind::Semaphore => "a semaphore",
            PoolKind::ReadWrite => "a read-write lock",
        })
    }
}

/// Arguments of an ask for permits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcquirePermits {
    /// The lease that will hold the permits.
    pub lease: LeaseId,
    /// The semaphore or read-write lock.
    pub name: LockName,
    pub ask: PermitAsk,
    /// 0: fail with Busy if the permits are not free. >0: queue FIFO (the
    /// deadline is the server's).
    pub wait_ms: u64,
    /// Idempotency key.
    pub request_id: Option<RequestId>,
    /// The holder declares that the protected resource checks tokens (a
    /// force release of an unfenced grant needs `allow_unfenced`).
    pub fenced: bool,
}

impl AcquirePermits {
    /// Checks bounds against [`limits`].
    pub fn validate(&self) -> Result<(), LockError> {
        if self.wait_ms > limits::WAIT_MS_MAX {
            let reason = format!(
                "{} exceeds the limit WAIT_MS_MAX ({})",
                self.wait_ms,
                limits::WAIT_MS_MAX
            );
            return Err(LockError::over_limit("wait_ms", Limit::WaitMsMax, reason));
        }
        self.ask.validate()
    }
}
