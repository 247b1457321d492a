//! The log's fsyncs, on a thread of their own.
//!
//! An append writes its entries inline (one `pwrite` into the page cache)
//! and hands the `fdatasync` here; openraft hears that the entries are
//! flushed (its `LogFlushed` callback, which is what a commit and a reply
//! wait for) only once the fsync returned. Jobs waiting when the thread
//! wakes are synced together, one fsync per segment, and completed in the
//! order they were submitted (openraft 0.9 awaits each flush before its
//! next log write, so in practice there is one job at a time).
//!
//! **Why not inline.** The fsync used to run on openraft's core task, so
//! one of the runtime's workers slept in the kernel for the 200-300 µs of
//! every batch under load while the replies of the batch before waited for
//! a worker: per-stage timings of the proposer put about 280 µs between a batch's
//! apply and its handlers running again (docs/DESIGN.md §6d, "Where a
//! command's time goes"). Here the runtime never blocks on the disk.

use super::wal::{Wal, Written};
use super::DbError;
use std::io;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

/// What to call once a write is durable (or failed to become so).
pub(crate) type Done = Box<dyn FnOnce(io::Result<()>) + Send>;

/// One write waiting for its fsync.
struct Job {
    written: Written,
    started: Instant,
    done: Done,
}

/// Handle to the log's sync thread; the thread ends when every handle is
/// dropped.
#[derive(Clone)]
pub(crate) struct LogSync {
    jobs: mpsc::Sender<Job>,
}

impl LogSync {
    /// Starts the sync thread of `wal`.
    pub(crate) fn spawn(wal: Arc<Wal>) -> io::Result<LogSync> {
        let (jobs, queue) = mpsc::channel();
        std::thread::Builder::new()
            .name("leasehold-log-sync".into())
            .spawn(move || run(&wal, &queue))?;
        Ok(LogSync { jobs })
    }

    /// Fsyncs `written` (written at `started`), then calls `done` with the
    /// outcome. Jobs complete in the order submitted.
    pub(crate) fn submit(&self, written: Written, started: Instant, done: Done) {
        let job = Job {
            written,
            started,
            done,
        };
        if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
            // Only if the thread panicked: nothing is durable, say so.
            (job.done)(Err(io::Error::other("the log's sync thread has stopped")));
        }
    }
}

fn run(wal: &Wal, queue: &mpsc::Receiver<Job>) {
    // Looked up once: the registry lookup is per call, and this is per batch.
    let append_seconds = metrics::histogram!("leasehold_log_append_seconds");
    while let Ok(first) = queue.recv() {
        let jobs: Vec<Job> = std::iter::once(first).chain(queue.try_iter()).collect();
        let synced = sync_each_segment(wal, &jobs);
        for job in jobs {
            append_seconds.record(job.started.elapsed().as_secs_f64());
            let outcome = match &synced {
                Ok(()) => Ok(()),
                Err(error) => Err(io::Error::other(error.to_string())),
            };
            (job.done)(outcome);
        }
    }
}

/// One fsync per segment the jobs wrote to, in order; the first failure
/// stops (it poisoned the log: nothing later can be durable).
fn sync_each_segment(wal: &Wal, jobs: &[Job]) -> Result<(), DbError> {
    for (i, job) in jobs.iter().enumerate() {
        let synced_later = jobs[i + 1..]
            .iter()
            .any(|later| later.written.same_segment(&job.written));
        if !synced_later {
            wal.sync(&job.written)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "log_sync_tests.rs"]
mod tests;
