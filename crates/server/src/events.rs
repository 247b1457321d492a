//! The event log: what happened to locks, as operators ask about it
//! ("who held it when, who released what, whose wait ran out").
//!
//! The apply hub records an event for each grant, release, expiry, force
//! release, timed-out waiter and refused release, in log order, on every
//! node (each node applies the same log, so any node can answer). The
//! last [`EVENTS_REMEMBERED`] events are kept in memory for the live page
//! and for `leasehold events` without `--follow`; followers subscribe to a
//! broadcast channel that carries each new event once. Events are not
//! replicated state: a restarted node remembers the events of the entries it
//! re-applied since its latest snapshot.

use crate::sinks::telemetry::force_detail;
use crate::sinks::{Freed, Refusal};
use leasehold_core::{FreeCause, LeaseId, LockError, LockName};
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::broadcast;

/// Events kept for replay (oldest forgotten first).
pub const EVENTS_REMEMBERED: usize = 1_024;
pub use leasehold_core::limits::EVENTS_FOLLOW_BUFFER;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A lease was granted the lock (at once or from the queue).
    Acquired,
    /// The holder released the lock, or revoked its lease.
    Released,
    /// The holder's lease expired, or it exceeded its max-hold.
    Expired,
    /// An operator freed the lock from its holder (break-glass).
    ForceReleased,
    /// A queued acquire's wait ran out before it was granted.
    WaiterTimedOut,
    /// A release was refused (no such lock, not the holder, lease gone).
    ReleaseFailed,
    /// A fenced-store write was refused (stale token, not the holder, no
    /// such lock, a store limit): the trace a stale writer leaves.
    FencedPutRefused,
    /// A record joined the audit trail: a refused request, an auth or
    /// membership change (`detail` says which and why; force releases are
    /// `ForceReleased` events).
    Audit,
    /// An election's leader set its value.
    Proclaimed,
}

impl EventKind {
    /// The kind's stable name, as shown and sent: `force-released`, ….
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Acquired => "acquired",
            EventKind::Released => "released",
            EventKind::Expired => "expired",
            EventKind::ForceReleased => "force-released",
            EventKind::WaiterTimedOut => "waiter-timed-out",
            EventKind::ReleaseFailed => "release-failed",
            EventKind::FencedPutRefused => "fenced-put-refused",
            EventKind::Audit => "audit",
            EventKind::Proclaimed => "proclaimed",
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockEvent {
    pub kind: EventKind,
    /// The lock's name.
    pub lock: String,
    /// The lease concerned: holder, waiter or releaser.
    pub lease: u64,
    /// That lease's owner name (empty if unknown).
    pub owner: String,
    /// The fencing token concerned (0 for a waiter).
    pub token: u64,
    /// The revision after the command that caused the event.
    pub revision: u64,
    /// The proposer's wall time of that command, Unix ms.
    pub at_unix_ms: u64,
    /// More about it: how a lock was freed (`lease revoked`, `max hold
    /// exceeded`), a force release's reason and caller, a release's error.
    pub detail: String,
    /// A refused fenced put: the key it named (empty for other kinds).
    pub key: String,
    /// A refused fenced put: the key's highest token (0 if never written).
    pub highest_token: u64,
    /// A refused fenced put: the lock whose holder wrote the highest token.
    pub highest_lock: String,
    /// A grant or a proclaim: the holder's election value (empty if none).
    pub value: String,
}

/// The log position and proposer's time of the command an event comes from.
#[derive(Clone, Copy, Debug)]
pub struct Stamp {
    /// The revision after the command.
    pub revision: u64,
    /// The proposer's wall time, Unix ms.
    pub at_unix_ms: u64,
    /// Applied again at start-up (replaying what this node applied
    /// before it restarted): rebuilds the record, is not news.
    pub replayed: bool,
}

/// What an event is about: the lock, the lease and its owner, the token.
pub struct About<'a> {
    /// The lock.
    pub name: &'a LockName,
    /// The lease concerned, and its owner name.
    pub lease: LeaseId,
    pub owner: &'a str,
    /// The token concerned (0 for a waiter).
    pub token: u64,
}

impl LockEvent {
    /// An event of `kind` at `at` about `about`, with `detail` (fields of
    /// refused fenced puts left empty).
    fn new(at: Stamp, kind: EventKind, about: About, detail: String) -> LockEvent {
        LockEvent {
            // Copied, not formatted: a storm records a million of these.
            lock: about.name.as_str().to_owned(),
            lease: about.lease.0,
            owner: about.owner.to_owned(),
            token: about.token,
            ..LockEvent::bare(at, kind, detail)
        }
    }

    /// An event of `kind` at `at` with `detail` and every other field empty.
    fn bare(at: Stamp, kind: EventKind, detail: String) -> LockEvent {
        LockEvent {
            kind,
            lock: String::new(),
            lease: 0,
            owner: String::new(),
            token: 0,
            revision: at.revision,
            at_unix_ms: at.at_unix_ms,
            detail,
            key: String::new(),
            highest_token: 0,
            highest_lock: String::new(),
            value: String::new(),
        }
    }
}

/// The event a lock free is: its kind and, unless the kind says it all,
/// how it ended.
pub fn freed_kind_and_detail(freed: &Freed) -> (EventKind, String) {
    match (freed.forced, freed.cause) {
        (Some(by), _) => (EventKind::ForceReleased, force_detail(by)),
        (None, FreeCause::Released) => (EventKind::Released, String::new()),
        (None, FreeCause::LeaseExpired) => (EventKind::Expired, String::new()),
        (None, FreeCause::LeaseRevoked) => (EventKind::Released, cause_words(freed.cause)),
        (None, FreeCause::MaxHoldExceeded) => (EventKind::Expired, cause_words(freed.cause)),
    }
}

/// `lease revoked`, `max hold exceeded`.
fn cause_words(cause: FreeCause) -> String {
    cause.label().replace('_', " ")
}

/// The event sink: what the hub routes here becomes a [`LockEvent`].
impl EventLog {
    /// A lease got a lock (`from_queue`: a waiter was granted), with its
    /// election value if it gave one.
    pub fn lock_granted(&self, at: Stamp, about: About, from_queue: bool, value: Option<&str>) {
        let detail = match from_queue {
            true => "granted from the queue".into(),
            false => String::new(),
        };
        let mut event = LockEvent::new(at, EventKind::Acquired, about, detail);
        event.value = value.unwrap_or_default().to_owned();
        self.record(event);
    }

    /// An election's leader set its value.
    pub fn proclaimed(&self, at: Stamp, about: About, value: &str) {
        let mut event = LockEvent::new(at, EventKind::Proclaimed, about, String::new());
        event.value = value.to_owned();
        self.record(event);
    }

    /// A lock was freed.
    pub fn lock_freed(&self, at: Stamp, freed: &Freed) {
        let (kind, detail) = freed_kind_and_detail(freed);
        let about = About {
            name: freed.name,
            lease: freed.lease,
            owner: freed.owner,
            token: freed.token.0,
        };
        self.record(LockEvent::new(at, kind, about, detail));
    }

    /// A queued acquire's wait ran out.
    pub fn waiter_timed_out(&self, at: Stamp, about: About) {
        let kind = EventKind::WaiterTimedOut;
        self.record(LockEvent::new(at, kind, about, String::new()));
    }

    /// A release was refused with `error`.
    pub fn release_failed(&self, at: Stamp, about: About, error: &LockError) {
        let kind = EventKind::ReleaseFailed;
        self.record(LockEvent::new(at, kind, about, error.to_string()));
    }

    /// A record joined the audit trail: its name as the lock, its
    /// principal as the owner, and kind, verb and detail as the detail (a
    /// force release is a `force-released` event, not this one).
    pub fn audited(&self, at: Stamp, record: &leasehold_core::auth::AuditRecord) {
        let entry = &record.entry;
        let verb = entry.verb.map_or("-", |v| v.as_str());
        let detail = format!("{} {verb}: {}", entry.kind.as_str(), entry.detail);
        let event = LockEvent {
            lock: entry.name.clone(),
            owner: entry.principal.clone(),
            ..LockEvent::bare(at, EventKind::Audit, detail)
        };
        self.record(event);
    }

    /// A fenced put was refused: the key, the writer and the key's highest
    /// token, so a stale writer leaves a trace.
    pub fn fenced_put_refused(&self, at: Stamp, refusal: &Refusal) {
        let about = About {
            name: refusal.lock,
            lease: refusal.lease,
            owner: refusal.owner,
            token: refusal.presented.0,
        };
        let detail = refusal.error.to_string();
        let mut event = LockEvent::new(at, EventKind::FencedPutRefused, about, detail);
        event.key = refusal.key.to_string();
        event.highest_token = refusal.highest_token;
        event.highest_lock = refusal.highest_lock.to_owned();
        self.record(event);
    }
}

/// Recent events, and a channel for new ones.
pub struct EventLog {
    recent: Mutex<VecDeque<LockEvent>>,
    sender: broadcast::Sender<LockEvent>,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog::new()
    }
}

impl EventLog {
    /// An empty log.
    pub fn new() -> EventLog {
        let (sender, _) = broadcast::channel(EVENTS_FOLLOW_BUFFER);
        EventLog {
            recent: Mutex::new(VecDeque::with_capacity(EVENTS_REMEMBERED)),
            sender,
        }
    }

    /// Keeps `event` and sends it to every follower. A benchmark's events
    /// ([`leasehold_core::BENCH_PREFIX`]) are only sent: a run makes
    /// thousands, and would push every real lock's history out.
    pub fn record(&self, event: LockEvent) {
        let mut recent = self.recent.lock().expect("event log poisoned");
        if !event.lock.starts_with(leasehold_core::BENCH_PREFIX) {
            if recent.len() == EVENTS_REMEMBERED {
                recent.pop_front();
            }
            recent.push_back(event.clone());
        }
        // Sent under the lock, so a follower that subscribes and then reads
        // the recent events sees each event exactly once (see `follow`).
        let _no_followers_is_fine = self.sender.send(event);
    }

    /// The last `limit` remembered events whose lock starts with `prefix`,
    /// oldest first.
    pub fn recent(&self, prefix: &str, limit: usize) -> Vec<LockEvent> {
        last_matching(
            &self.recent.lock().expect("event log poisoned"),
            prefix,
            limit,
        )
    }

    /// The last `replay` matching events and a receiver of every later
    /// event (not yet filtered by prefix), with no gap and no repeat.
    pub fn follow(
        &self,
        prefix: &str,
        replay: usize,
    ) -> (Vec<LockEvent>, broadcast::Receiver<LockEvent>) {
        let recent = self.recent.lock().expect("event log poisoned");
        let receiver = self.sender.subscribe();
        (last_matching(&recent, prefix, replay), receiver)
    }
}

/// The last `limit` of `events` whose lock starts with `prefix`, oldest first.
fn last_matching(events: &VecDeque<LockEvent>, prefix: &str, limit: usize) -> Vec<LockEvent> {
    let mut matching: Vec<LockEvent> = events
        .iter()
        .rev()
        .filter(|event| event.lock.starts_with(prefix))
        .take(limit)
        .cloned()
        .collect();
    matching.reverse();
    matching
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(lock: &str, token: u64) -> LockEvent {
        LockEvent {
            kind: EventKind::Acquired,
            lock: lock.into(),
            lease: 1,
            owner: "me".into(),
            token,
            revision: token,
            at_unix_ms: 0,
            detail: String::new(),
            key: String::new(),
            highest_token: 0,
            highest_lock: String::new(),
            value: String::new(),
        }
    }

    #[test]
    fn recent_is_bounded_filtered_and_oldest_first() {
        let log = EventLog::new();
        for token in 0..(EVENTS_REMEMBERED as u64 + 5) {
            log.record(event(if token % 2 == 0 { "a/x" } else { "b/x" }, token));
        }
        let a = log.recent("a/", 3);
        let tokens: Vec<u64> = a.iter().map(|e| e.token).collect();
        let last_even = EVENTS_REMEMBERED as u64 + 4;
        assert_eq!(tokens, vec![last_even - 4, last_even - 2, last_even]);
        assert_eq!(log.recent("", usize::MAX).len(), EVENTS_REMEMBERED);
    }

    #[tokio::test]
    async fn follow_replays_then_streams_without_gap_or_repeat() {
        let log = EventLog::new();
        log.record(event("a", 1));
        let (replayed, mut receiver) = log.follow("", 10);
        log.record(event("a", 2));
        assert_eq!(replayed.iter().map(|e| e.token).collect::<Vec<_>>(), [1]);
        assert_eq!(receiver.recv().await.unwrap().token, 2);
        assert!(receiver.try_recv().is_err());
    }
}
