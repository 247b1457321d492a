//! Leader election, as a lock: a campaign is an acquire that waits its
//! turn (FIFO), the leader is the lock's holder, its epoch is the grant's
//! fencing token (strictly increasing per election, like every lock's), and
//! resigning is releasing. What an election adds is the leader's *value*
//! (an address, an id: what followers need to reach it), kept as the
//! holder's metadata entry [`VALUE_KEY`], set at the campaign and changed
//! only by the leader of that epoch ([`Proclaim`]).
//!
//! Why a lock and not a table of its own: one queue, one grant rule, one
//! expiry path and one fencing rule serve both, and everything that shows
//! or explains a lock (get, ls, diagnose, events, the live page, force
//! release) shows an election without a line of its own.

use crate::command::check_map;
use crate::{LeaseId, LockError, LockName, RequestId, Token};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The holder metadata entry that carries an election's value.
pub const VALUE_KEY: &str = "value";

/// The leader of `name`, holding it under `token` (its epoch) with `lease`,
/// replaces its value. Refused to anyone else, and to an earlier epoch of
/// the same lease: a leader paused past its lease cannot overwrite the
/// value of the leader after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proclaim {
    pub lease: LeaseId,
    pub name: LockName,
    pub token: Token,
    pub value: String,
    pub request_id: Option<RequestId>,
}

impl Proclaim {
    /// Checks the value as the metadata entry it becomes (the entry's
    /// bytes against [`crate::limits::LABEL_BYTES_MAX`]).
    pub fn validate(&self) -> Result<(), LockError> {
        check_value(&self.value)
    }
}

/// Checks an election value as a metadata entry.
pub fn check_value(value: &str) -> Result<(), LockError> {
    let entry = BTreeMap::from([(VALUE_KEY.to_owned(), value.to_owned())]);
    check_map("value", &entry)
}
