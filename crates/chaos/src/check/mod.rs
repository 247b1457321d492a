//! The rules a history must keep, each returning every violation with the
//! operations that prove it (an empty list: the history keeps the rule).
//! Rules 1-3 are here; the durability of acknowledged writes and the
//! linearizability of reads are in `reads.rs`; what a cut-off minority and
//! retried requests may do, in `minority.rs`.

mod minority;
mod reads;
mod running_max;

use running_max::RunningMax;

pub use minority::{minority_writes, orphan_leases};
pub use reads::{holder_reads, lost_puts, puts_by_holders};

use crate::history::{History, Hold, Put};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A broken promise, with its evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two acknowledged grants of one lock carry the same token.
    DuplicateToken {
        lock: String,
        token: u64,
        grants: [GrantSeen; 2],
    },
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
    /// A read of `key` begun at `read_ms` saw token `seen` (0: nothing),
    /// though a put of `acknowledged` had been acknowledged before it.
    LostPut {
        key: String,
        acknowledged: u64,
        seen: u64,
        read_ms: u64,
    },
    /// A put of `token` to `key` was accepted at `at_ms` although that
    /// token's holder had ended (a newer grant, or a release) before it
    /// was sent.
    PutByNonHolder { key: String, token: u64, at_ms: u64 },
    /// A view of `lock` begun at `read_ms` saw token `seen` (0: free),
    /// which was not the holder at any point of the call: `why`.
    HolderRead {
        lock: String,
        seen: u64,
        read_ms: u64,
        why: String,
    },
    /// A `op` sent to node `node` while it was cut off from the majority
    /// succeeded (sent at `at_ms`).
    MinorityWrite { node: u64, op: String, at_ms: u64 },
    /// The cluster listed `unknown` leases the workload was never granted,
    /// more than its `pending` unanswered grants explain (a retry with one
    /// request id had two effects).
    OrphanLease {
        unknown: usize,
        pending: usize,
        at_ms: u64,
    },
}

impl Violation {
    /// The property it breaks, by the numbering: `tokens` (1),
    /// `no-early-grant` (2), `fenced-register` (3), `durability` (4),
    /// `minority-and-retries` (5), `linearizable-reads` (6).
    pub fn property(&self) -> &'static str {
        match self {
            Violation::DuplicateToken { .. } | Violation::TokenOrder { .. } => "tokens",
            Violation::EarlyGrant { .. } => "no-early-grant",
            Violation::VersionRegressed { .. }
            | Violation::FalseRefusal { .. }
            | Violation::PhantomRead { .. }
            | Violation::PutByNonHolder { .. } => "fenced-register",
            Violation::LostPut { .. } => "durability",
            Violation::MinorityWrite { .. } | Violation::OrphanLease { .. } => {
                "minority-and-retries"
            }
            Violation::HolderRead { .. } => "linearizable-reads",
        }
    }
}

/// One acknowledged grant, as a violation names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantSeen {
    /// The lease it was granted to.
    pub lease: u64,
    /// When the acquire was sent.
    pub invoked_ms: u64,
    /// When its grant came back.
    pub completed_ms: u64,
}

impl GrantSeen {
    fn of(hold: &Hold) -> Self {
        Self {
            lease: hold.lease,
            invoked_ms: hold.acquire_invoked_ms,
            completed_ms: hold.acquire_completed_ms,
        }
    }
}

impl fmt::Display for GrantSeen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lease {:x}, sent {} ms, answered {} ms",
            self.lease, self.invoked_ms, self.completed_ms
        )
    }
}

/// Every property, in the order.
pub const PROPERTIES: [&str; 6] = [
    "tokens",
    "no-early-grant",
    "fenced-register",
    "durability",
    "minority-and-retries",
    "linearizable-reads",
];

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::DuplicateToken {
                lock,
                token,
                grants: [first, second],
            } => {
                write!(
                    f,
                    "lock {lock}: token {token} was granted twice ({first}; {second})"
                )
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
            _ => self.fmt_later_rules(f),
        }
    }
}

impl Violation {
    /// Display of the violations of properties 3 (holders) to 6.
    fn fmt_later_rules(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::LostPut {
                key,
                acknowledged,
                seen,
                read_ms,
            } => write!(
                f,
                "key {key}: a read begun at {read_ms} ms saw token {seen}, though a put of \
                 token {acknowledged} had been acknowledged before"
            ),
            Violation::PutByNonHolder { key, token, at_ms } => write!(
                f,
                "key {key}: a put of token {token} sent at {at_ms} ms was accepted after \
                 that token's hold had ended"
            ),
            Violation::HolderRead {
                lock,
                seen,
                read_ms,
                why,
            } => write!(
                f,
                "lock {lock}: a view begun at {read_ms} ms saw token {seen} (0: free): {why}"
            ),
            Violation::MinorityWrite { node, op, at_ms } => write!(
                f,
                "node {node}, cut off from the majority, acknowledged a {op} sent at {at_ms} ms"
            ),
            Violation::OrphanLease {
                unknown,
                pending,
                at_ms,
            } => write!(
                f,
                "a lease listing at {at_ms} ms held {unknown} leases nobody was granted, \
                 more than the {pending} unanswered grants explain"
            ),
            _ => Ok(()),
        }
    }
}

/// Every rule over `history`; `rate_max` bounds how much faster than the
/// recorder's clock a server's may run (1.0: no drift allowed).
pub fn all(history: &History, rate_max: f64) -> Vec<Violation> {
    let mut found = tokens(history);
    found.extend(no_early_grant(history, rate_max));
    found.extend(fenced_register(history));
    found.extend(puts_by_holders(history));
    found.extend(lost_puts(history));
    found.extend(minority_writes(history));
    found.extend(orphan_leases(history));
    found.extend(holder_reads(history, rate_max));
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
    let mut maybe_by_key: HashMap<&str, Vec<&Put>> = HashMap::new();
    for put in &history.unknown_puts {
        maybe_by_key.entry(put.key.as_str()).or_default().push(put);
    }
    let mut found = Vec::new();
    for (key, puts) in &by_key {
        let accepted: Vec<&&Put> = puts.iter().filter(|p| p.accepted).collect();
        let completed = RunningMax::new(accepted.iter().map(|p| (p.completed_ms, p.token)));
        for later in &accepted {
            if let Some(earlier) = completed
                .before(later.invoked_ms)
                .filter(|e| *e > later.token)
            {
                found.push(Violation::VersionRegressed {
                    key: (*key).to_owned(),
                    earlier,
                    later: later.token,
                });
            }
        }
        let maybe = maybe_by_key.get(key).into_iter().flatten();
        let begun = RunningMax::new(
            accepted
                .iter()
                .map(|p| **p)
                .chain(maybe.copied())
                .map(|p| (p.invoked_ms, p.token)),
        );
        for refused in puts.iter().filter(|p| !p.accepted) {
            let justified = begun
                .before(refused.completed_ms)
                .is_some_and(|highest| highest > refused.token);
            if !justified {
                found.push(Violation::FalseRefusal {
                    key: (*key).to_owned(),
                    token: refused.token,
                });
            }
        }
    }
    found.extend(phantom_reads(history));
    found
}

/// A read sees only what an accepted (or maybe accepted) put, begun before
/// the read ended, wrote.
fn phantom_reads(history: &History) -> Vec<Violation> {
    let mut first_sent: HashMap<(&str, u64, &str), u64> = HashMap::new();
    let accepted = history.puts.iter().filter(|p| p.accepted);
    for put in accepted.chain(&history.unknown_puts) {
        let sent = first_sent
            .entry((put.key.as_str(), put.token, put.value.as_str()))
            .or_insert(u64::MAX);
        *sent = (*sent).min(put.invoked_ms);
    }
    let mut found = Vec::new();
    for read in &history.reads {
        let Some((token, value)) = &read.observed else {
            continue;
        };
        let sent = first_sent.get(&(read.key.as_str(), *token, value.as_str()));
        if sent.is_none_or(|sent| *sent >= read.completed_ms) {
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
            if let Some(first) = seen.insert(hold.token, *hold) {
                found.push(Violation::DuplicateToken {
                    lock: lock.clone(),
                    token: hold.token,
                    grants: [GrantSeen::of(first), GrantSeen::of(hold)],
                });
            }
        }
        let completed = RunningMax::new(holds.iter().map(|h| (h.acquire_completed_ms, h.token)));
        for later in &holds {
            let before = completed.before(later.acquire_invoked_ms);
            if let Some(earlier) = before.filter(|e| *e >= later.token) {
                found.push(Violation::TokenOrder {
                    lock: lock.clone(),
                    earlier,
                    later: later.token,
                });
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

pub(crate) fn by_lock(history: &History) -> BTreeMap<String, Vec<&Hold>> {
    let mut locks: BTreeMap<String, Vec<&Hold>> = BTreeMap::new();
    for hold in &history.holds {
        locks.entry(hold.lock.clone()).or_default().push(hold);
    }
    locks
}
