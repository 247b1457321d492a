//! Several locks at once, all or nothing: [`AcquireAll`].
//!
//! One command asks for every lock of a set. If all are free they are
//! granted together, each with its own token (the command's revision, as
//! every grant). Otherwise the lease waits in the queue of each, as one
//! waiter of a *set*: it is granted when it heads every queue and every
//! lock is free, in one command, so nobody ever sees it holding some of
//! its locks. While it waits at the head of a queue whose lock is free, it
//! keeps that lock for itself (later asks queue behind it), so a set is
//! not starved by single locks that come and go.
//!
//! No order of names can deadlock: a set joins all its queues in one
//! command, so any two waiters stand in the same order in every queue
//! they share (the order their commands applied), and a waiter only ever
//! waits for holders and for waiters ahead of it. Holders end (released,
//! expired), so the first waiter of all heads its queues in the end.

use crate::limits::{self, Limit};
use crate::{LeaseId, LockError, LockName, RequestId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Acquire every lock of `names` for `lease`, or wait for all of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcquireAll {
    pub lease: LeaseId,
    /// The locks, 2 to [`limits::LOCK_SET_MAX`], each named once; their
    /// order does not matter.
    pub names: Vec<LockName>,
    /// Wait up to this long for all of them; 0: all now or `Busy`.
    pub wait_ms: u64,
    pub request_id: Option<RequestId>,
    /// The protected resources check tokens (as [`crate::Acquire`]'s).
    pub fenced: bool,
}

impl AcquireAll {
    /// Checks the set and the wait against [`limits`].
    pub fn validate(&self) -> Result<(), LockError> {
        let max = Limit::WaitMsMax.value();
        if self.wait_ms > max {
            return Err(LockError::over_limit(
                "wait_ms",
                Limit::WaitMsMax,
                format!(
                    "{} exceeds the limit {} ({max})",
                    self.wait_ms,
                    Limit::WaitMsMax
                ),
            ));
        }
        check_names(&self.names)
    }
}

/// A set of 2 to [`limits::LOCK_SET_MAX`] distinct names.
pub fn check_names(names: &[LockName]) -> Result<(), LockError> {
    if names.len() < 2 {
        return Err(LockError::invalid(
            "names",
            "name at least two locks to take them all at once (one lock is an ordinary acquire)",
        ));
    }
    if names.len() > limits::LOCK_SET_MAX {
        return Err(LockError::over_limit(
            "names",
            Limit::LockSetMax,
            format!(
                "names {} locks; the limit LOCK_SET_MAX is {}",
                names.len(),
                limits::LOCK_SET_MAX
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    if let Some(twice) = names.iter().find(|name| !seen.insert(*name)) {
        return Err(LockError::invalid(
            "names",
            format!("{twice} is named twice; name each lock once"),
        ));
    }
    Ok(())
}
