//! The commit path on a thread of its own.
//!
//! openraft's tasks (its core, the state machine's apply, replication to
//! each member) and the proposer run on a single-threaded runtime on one
//! OS thread, not among the API's tasks. **Why**: every command waits for
//! its batch to go round proposer → core → log → core → apply → proposer,
//! and on the API's runtime each of those steps queued behind the
//! connection, stream and response tasks of the batch before, so the log
//! sat idle between batches while the machine had a third of its CPU
//! spare. On its own thread the path runs as soon as its step is ready:
//! one node went from 28,000 to 38,000-40,000 uncontended cycles a second
//! on the 2-core machine of docs/DESIGN.md §6d, with the API on the other
//! core (`serve` gives the API one worker fewer than the cores by default).
//!
//! The API's tasks talk to this thread through channels (the proposer's
//! queue, openraft's handle), which work across runtimes. Dropping the
//! [`CommitThread`] stops its runtime; `serve` does so after Raft has shut
//! down, so what is left there (the proposer, idle replication streams)
//! is simply cancelled.

use std::future::Future;
use std::io;
use std::time::Duration;
use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

/// How long a stopping commit thread waits for blocking work it started
/// (a snapshot being written) before it lets go of it.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// The commit path's runtime and thread; the thread ends when this drops.
pub struct CommitThread {
    handle: Handle,
    /// Dropped with `self`: the thread's `block_on` then returns.
    _stop: oneshot::Sender<()>,
}

impl CommitThread {
    /// Starts the thread ("leasehold-commit") and its runtime.
    pub fn start() -> io::Result<CommitThread> {
        let runtime = Builder::new_current_thread().enable_all().build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("leasehold-commit".into())
            .spawn(move || {
                let _ = runtime.block_on(stopped);
                runtime.shutdown_timeout(STOP_GRACE);
            })?;
        Ok(CommitThread {
            handle,
            _stop: stop,
        })
    }

    /// Runs `task` on the commit thread, so that whatever it spawns lives
    /// there too, and waits for its output. `None` if the task panicked or
    /// the thread stopped first.
    pub async fn run<F>(&self, task: F) -> Option<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(task).await.ok()
    }

    /// Starts `task` on the commit thread and leaves it running there.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        drop(self.handle.spawn(task));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_name() -> Option<String> {
        std::thread::current().name().map(str::to_owned)
    }

    #[tokio::test]
    async fn tasks_and_what_they_spawn_run_on_the_commit_thread() {
        let commit = CommitThread::start().unwrap();
        let names = commit
            .run(async {
                let spawned = tokio::spawn(async { thread_name() }).await.unwrap();
                (thread_name(), spawned)
            })
            .await
            .unwrap();
        let expected = Some("leasehold-commit".to_owned());
        assert_eq!(names, (expected.clone(), expected));
    }

    #[tokio::test]
    async fn dropping_it_stops_the_thread_and_cancels_its_tasks() {
        let commit = CommitThread::start().unwrap();
        let (_never, waits) = oneshot::channel::<()>();
        let (dropped_tx, dropped) = oneshot::channel::<()>();
        commit.spawn(async move {
            let _tell_when_dropped = dropped_tx;
            let _ = waits.await;
        });
        drop(commit);
        let outcome = tokio::time::timeout(Duration::from_secs(10), dropped).await;
        assert!(
            matches!(outcome, Ok(Err(_))),
            "the task was cancelled: {outcome:?}"
        );
    }

    #[tokio::test]
    async fn a_panicking_task_is_reported_as_none() {
        let commit = CommitThread::start().unwrap();
        let outcome = commit.run(async { panic!("on purpose") }).await;
        assert_eq!(outcome, None::<()>);
        assert_eq!(
            commit.run(async { 7 }).await,
            Some(7),
            "the thread lives on"
        );
    }
}
