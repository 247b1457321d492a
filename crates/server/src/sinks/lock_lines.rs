//! The per-lock log lines ("lock acquired", "lock freed", "lease expired",
//! "lease revoked"), formatted and written by a thread of their own.
//!
//! **Why**: every grant and every free is an info line, and the apply made
//! them: formatting about fifty lines per batch inside the state's write
//! lock lay on every request's path. `bench --workload uncontended --clients
//! 64` ran 11 % faster with those lines switched off (`RUST_LOG=warn`,
//! docs/DESIGN.md §6d). Here the apply only collects each line's fields
//! ([`held`]: one message per apply, so one wake-up of the thread) into a
//! queue of [`BURSTS_QUEUED_MAX`]; the thread formats them through the same
//! `tracing` subscriber (same target, fields, levels and filter, so text and
//! JSON logs read as before) and writes each burst with one `write`.
//!
//! Lines keep their order among themselves; a line made elsewhere (a
//! forced free's warning, a refused fenced put) may come out a moment
//! before per-lock lines applied earlier. A full queue makes the apply
//! wait, as a slow stderr did before. [`flush`] writes what is queued; the
//! server calls it when it stops, so a clean stop loses no line (a killed
//! process loses at most the lines of its last moments, as any buffered
//! log does).

use crate::held::{Held, Slot};
use leasehold_core::{LeaseId, LockName, Token};
use std::cell::RefCell;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::OnceLock;
use std::time::Duration;

/// Bursts of lines (an apply's, or a line sent alone) queued for the
/// thread before the apply waits for room.
pub const BURSTS_QUEUED_MAX: usize = 4_096;

/// The target the lines carry: the telemetry sink's, as when the apply
/// wrote them itself, so filters such as
/// `RUST_LOG=leasehold_server::sinks::telemetry=warn` still apply.
const TARGET: &str = "leasehold_server::sinks::telemetry";

/// One per-lock line's fields.
#[derive(Debug, PartialEq)]
pub enum LockLine {
    /// "lock acquired" or "lock freed".
    Hold {
        event: HoldEvent,
        lock: LockName,
        lease: LeaseId,
        owner: Box<str>,
        token: Token,
    },
    /// "lease expired", or "lease revoked" when some of its frees had no
    /// line of their own.
    LeaseEnded {
        lease: LeaseId,
        expired: bool,
        locks_freed: u64,
        lock_lines_skipped: u64,
    },
}

/// What happened to a hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HoldEvent {
    /// "lock acquired", straight away or `from_queue`.
    Acquired { from_queue: bool },
    /// "lock freed" (not forced: a force release warns in place).
    Freed { cause: &'static str },
}

/// Whether info lines of the telemetry target are wanted at all (checked
/// before a line's fields are copied).
pub fn wanted() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::INFO)
}

thread_local! {
    /// The lines of this thread's open [`held`] call, if any.
    static HELD: Slot<LockLine> = const { RefCell::new(None) };
}

/// This thread's held lines.
const HELD_LINES: Held<LockLine> = Held::new(&HELD);

/// Queues `line` for the process's line thread (started on first use); held
/// until the end of an open [`held`] call.
pub fn send(line: LockLine) {
    if let Err(line) = HELD_LINES.add(line) {
        writer().send(Queued::Lines(vec![line]));
    }
}

/// Runs `f` (an apply), then queues the lines it sent as one burst.
pub fn held<T>(f: impl FnOnce() -> T) -> T {
    HELD_LINES.scope(f, |lines| writer().send(Queued::Lines(lines)))
}

/// Writes every line queued so far, waiting at most `timeout`.
pub fn flush(timeout: Duration) {
    if let Some(writer) = WRITER.get() {
        writer.flush(timeout);
    }
}

static WRITER: OnceLock<LineThread> = OnceLock::new();

fn writer() -> &'static LineThread {
    WRITER.get_or_init(|| LineThread::spawn(emit))
}

/// What the queue carries: lines, or a request to say when all before it
/// are out.
enum Queued {
    Lines(Vec<LockLine>),
    Flushed(SyncSender<()>),
}

/// A thread writing lines with `emit`, in the order sent.
struct LineThread {
    queue: SyncSender<Queued>,
}

impl LineThread {
    fn spawn(emit: impl FnMut(LockLine) + Send + 'static) -> LineThread {
        let (queue, lines) = mpsc::sync_channel(BURSTS_QUEUED_MAX);
        let spawned = std::thread::Builder::new()
            .name("leasehold-lock-lines".into())
            .spawn(move || run(&lines, emit));
        if let Err(error) = spawned {
            // Lines are lost (sends fail quietly), requests are not.
            tracing::error!(%error, "cannot start the lock lines' thread: per-lock log lines are off");
        }
        LineThread { queue }
    }

    fn send(&self, queued: Queued) {
        // Fails only if the thread is gone: the line is lost, nothing else.
        let _ = self.queue.send(queued);
    }

    fn flush(&self, timeout: Duration) {
        let (done, flushed) = mpsc::sync_channel(1);
        self.send(Queued::Flushed(done));
        let _ = flushed.recv_timeout(timeout);
    }
}

/// Writes each burst of queued lines as one held batch (one `write`).
fn run(lines: &Receiver<Queued>, mut emit: impl FnMut(LockLine)) {
    while let Ok(first) = lines.recv() {
        let mut flushed = Vec::new();
        crate::log_lines::batched(|| {
            for queued in std::iter::once(first).chain(lines.try_iter()) {
                match queued {
                    Queued::Lines(burst) => burst.into_iter().for_each(&mut emit),
                    Queued::Flushed(done) => flushed.push(done),
                }
            }
        });
        for done in flushed {
            let _ = done.send(());
        }
    }
}

/// One line through the `tracing` subscriber (a field that is `None` is
/// left out, so each message has the fields it always had).
fn emit(line: LockLine) {
    match line {
        LockLine::Hold {
            event,
            lock,
            lease,
            owner,
            token,
        } => {
            let (message, from_queue, cause) = match event {
                HoldEvent::Acquired { from_queue } => ("lock acquired", Some(from_queue), None),
                HoldEvent::Freed { cause } => ("lock freed", None, Some(cause)),
            };
            tracing::info!(
                target: TARGET,
                lock = %lock,
                lease = lease.0,
                owner = &*owner,
                token = token.0,
                from_queue,
                cause = cause.map(tracing::field::display),
                "{message}"
            );
        }
        LockLine::LeaseEnded {
            lease,
            expired,
            locks_freed,
            lock_lines_skipped,
        } => {
            let message = if expired {
                "lease expired"
            } else {
                "lease revoked"
            };
            tracing::info!(
                target: TARGET,
                lease = lease.0,
                locks_freed,
                lock_lines_skipped,
                "{message}"
            );
        }
    }
}

#[cfg(test)]
#[path = "lock_lines_tests.rs"]
mod tests;
