//! The rules a history must keep, each returning every violation with the
//! operations that prove it (an empty list: the history keeps the rule).

use crate::history::{History, Hold, Put};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A broken promise, with its evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two acknowledged grants of one lock carry the same token.
    DuplicateToken { lock: String, token: u64 },
    /// `earlier` completed before `later` was invoked, yet its token is
    /// not lower.
    TokenOrder {
        lock: String,
        earlier: u64,
        later: u64,
    },
    /// Accepted puts to `key` went back in version: the put of `earlier`
    /// completed before the put of `later` was sent, and `later < earlier`.
    VersionRegressed {
        key: String,
        earlier: u64,
        later: u64,
    },
    /// A put of `token` to `key` was refused as stale, but no put with a
    /// higher token had been accepted by then.
    FalseRefusal { key: String, token: u64 },
    /// A read of `key` saw `(token, value)`, which no accepted put that
    /// began before the read ended wrote.
    PhantomRead {
        key: String,
        token: u64,
        value: String,
    },
    /// The grant of `token` completed at `granted_ms`, before the previous
    /// holder (`previous`) could have ended (`earliest_end_ms`).
    EarlyGrant {
        lock: String,
        previous: u64,
        token: u64,
        granted_ms: u64,
        earliest_end_ms: u64,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::DuplicateToken { lock, token } => {
                write!(f, "lock {lock}: token {token} was granted twice")
            }
            Violation::TokenOrder {
                lock,
                earlier,
                later,
            } => write!(
                f,
                "lock {lock}: the grant of token {earlier} completed before the grant of \
                 token {later} began, yet {earlier} >= {later}"
            ),
            Violation::VersionRegressed {
                key,
                earlier,
                later,
            } => write!(
                f,
                "key {key}: the put of token {earlier} was accepted before the put of token \
                 {later} began, and that later, lower put was accepted too"
            ),
            Violation::FalseRefusal { key, token } => write!(
                f,
                "key {key}: a put of token {token} was refused as stale though no higher \
                 token had been accepted"
            ),
            Violation::PhantomRead { key, token, value } => write!(
                f,
                "key {key}: a read saw token {token} with value {value:?}, which no accepted \
                 put wrote"
            ),
            Violation::EarlyGrant {
                lock,
                previous,
                token,
                granted_ms,
                earliest_end_ms,
            } => write!(
                f,
                "lock {lock}: token {token} was granted by {granted_ms} ms, but the holder \
                 of token {previous} could not have ended before {earliest_end_ms} ms"
            ),
        }
    }
}

/// Every rule over `history`; `rate_max` bounds how much faster than the
/// recorder's clock a server's may run (1.0: no drift allowed).
pub fn all(history: &History, rate_max: f64) -> Vec<Violation> {
    let mut found = tokens(history);
    found.extend(no_early_grant(history, rate_max));
    found.extend(fenced_register(history));
    found
}

/// Rule 3: the fenced store is a register versioned by tokens. Accepted
/// puts of a key never go back in version in real time; a refusal means a
/// higher token was accepted (at least begun) before the refusal came
/// back; a read sees only what an accepted put, begun before the read
/// ended, wrote.
pub fn fenced_register(history: &History) -> Vec<Violation> {
    let mut by_key: BTreeMap<&str, Vec<&Put>> = BTreeMap::new();
    for put in &history.puts {
        by_key.entry(put.key.as_str()).or_default().push(put);
    }
    let mut found = Vec::new();
    for (key, puts) in &by_key {
        let accepted: Vec<&&Put> = puts.iter().filter(|p| p.accepted).collect();
        for a in &accepted {
            for b in &accepted {
                if a.completed_ms < b.invoked_ms && b.token < a.token {
                    found.push(Violation::VersionRegressed {
                        key: (*key).to_owned(),
                        earlier: a.token,
                        later: b.token,
                    });
                }
            }
        }
        for refused in puts.iter().filter(|p| !p.accepted) {
            let justified = accepted
                .iter()
                .any(|a| a.token > refused.token && a.invoked_ms < refused.completed_ms);
            if !justified {
                found.push(Violation::FalseRefusal {
                    key: (*key).to_owned(),
                    token: refused.token,
                });
            }
        }
    }
    for read in &history.reads {
        let Some((token, value)) = &read.observed else {
            continue;
        };
        let written = by_key.get(read.key.as_str()).is_some_and(|puts| {
            puts.iter().any(|p| {
                p.accepted
                    && p.token == *token
                    && &p.value == value
                    && p.invoked_ms < read.completed_ms
            })
        });
        if !written {
            found.push(Violation::PhantomRead {
                key: read.key.clone(),
                token: *token,
                value: value.clone(),
            });
        }
    }
    found
}

/// Rule 1: per lock, distinct tokens, and real-time order implies token order.
pub fn tokens(history: &History) -> Vec<Violation> {
    let mut found = Vec::new();
    for (lock, holds) in by_lock(history) {
        let mut seen = HashMap::new();
        for hold in &holds {
            if seen.insert(hold.token, ()).is_some() {
                found.push(Violation::DuplicateToken {
                    lock: lock.clone(),
                    token: hold.token,
                });
            }
        }
        for a in &holds {
            for b in &holds {
                if a.acquire_completed_ms < b.acquire_invoked_ms && a.token >= b.token {
                    found.push(Violation::TokenOrder {
                        lock: lock.clone(),
                        earlier: a.token,
                        later: b.token,
                    });
                }
            }
        }
    }
    found
}

/// Rule 2: each grant completes no earlier than its predecessor (the next
/// lower token of the lock) could have ended.
pub fn no_early_grant(history: &History, rate_max: f64) -> Vec<Violation> {
    let leases: HashMap<u64, _> = history.leases.iter().map(|l| (l.id, l)).collect();
    let mut found = Vec::new();
    for (lock, mut holds) in by_lock(history) {
        holds.sort_by_key(|h| h.token);
        for pair in holds.windows(2) {
            let (previous, next) = (pair[0], pair[1]);
            let lease_end = leases
                .get(&previous.lease)
                .map_or(u64::MAX, |l| l.earliest_end_ms(rate_max));
            let earliest_end_ms = previous
                .release_invoked_ms
                .map_or(lease_end, |r| r.min(lease_end));
            if next.acquire_completed_ms < earliest_end_ms {
                found.push(Violation::EarlyGrant {
                    lock: lock.clone(),
                    previous: previous.token,
                    token: next.token,
                    granted_ms: next.acquire_completed_ms,
                    earliest_end_ms,
                });
            }
        }
    }
    found
}

fn by_lock(history: &History) -> BTreeMap<String, Vec<&Hold>> {
    let mut locks: BTreeMap<String, Vec<&Hold>> = BTreeMap::new();
    for hold in &history.holds {
        locks.entry(hold.lock.clone()).or_default().push(hold);
    }
    locks
}
