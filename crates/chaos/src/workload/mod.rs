//! The workload: `workers` concurrent clients (the Rust client library,
//! each with its own connections to every node's proxy) over `locks`
//! locks, every operation recorded (`ops.rs`). Each worker keeps one lease
//! alive with unary keep-alives at ttl/3 (`keeper.rs`) and loops, from its
//! own seeded random stream:
//!
//! - mostly a **hold cycle**: acquire a lock (half without waiting, half
//!   waiting up to a ttl), one to three fenced puts to the key named as the
//!   lock with its token, then a release, or (rarely) a revoke of the whole
//!   lease, or a **stall**: the holder stops renewing, sleeps past its ttl
//!   while another worker may take the lock, then writes with its old token
//!   anyway (which the fenced store must refuse once a newer holder wrote);
//! - sometimes a read: `get` of a lock, `ls` of them all, a fenced read.
//!
//! [`Workload::stall_holders`] makes the next holders stall (the
//! `pause-holder` fault). [`Workload::stop`] ends every worker after its
//! current operation.

pub(crate) mod keeper;
pub mod ops;
mod worker;

use crate::recorder::Recorder;
use leasehold_client::{Client, ClientOptions, LockName};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// The shape of a workload.
#[derive(Clone, Debug)]
pub struct WorkloadSpec {
    /// Concurrent clients.
    pub workers: usize,
    /// Locks they contend for.
    pub locks: usize,
    /// Every lease's ttl.
    pub ttl: Duration,
    /// Seeds every worker's random stream.
    pub seed: u64,
    /// The locks' common prefix (`chaos/`).
    pub prefix: String,
}

/// What the workers share with the run.
pub(crate) struct Shared {
    spec: WorkloadSpec,
    locks: Vec<LockName>,
    stop: AtomicBool,
    /// Holders that should stall at their next grant.
    stalls: AtomicU64,
}

/// Running workers.
pub struct Workload {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

/// Client settings for the workers (and the holder processes): fail over
/// quickly, give up on a call within a few seconds (its outcome is then
/// unknown, and recorded so).
pub(crate) fn client_options() -> ClientOptions {
    ClientOptions {
        call_timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_secs(1),
        retry_budget: Duration::from_secs(4),
        keep_alive_interval: Some(Duration::from_secs(1)),
        ..ClientOptions::default()
    }
}

impl Workload {
    /// Connects the workers to `endpoints` and starts them.
    pub async fn start(
        spec: WorkloadSpec,
        endpoints: Vec<String>,
        recorder: Recorder,
    ) -> Result<Workload, String> {
        let locks = (0..spec.locks)
            .map(|i| LockName::parse(&format!("{}lock-{i}", spec.prefix)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("lock names under {:?}: {e}", spec.prefix))?;
        let shared = Arc::new(Shared {
            spec,
            locks,
            stop: AtomicBool::new(false),
            stalls: AtomicU64::new(0),
        });
        let mut tasks = Vec::new();
        for index in 0..shared.spec.workers {
            let client = Client::connect_with(endpoints.clone(), client_options())
                .await
                .map_err(|e| format!("connect worker {index}: {e}"))?;
            let ops = ops::Ops {
                client,
                recorder: recorder.clone(),
            };
            tasks.push(tokio::spawn(worker::run(index, ops, shared.clone())));
        }
        Ok(Workload { shared, tasks })
    }

    /// Makes the next `count` holders stall past their ttl.
    pub fn stall_holders(&self, count: u64) {
        self.shared.stalls.fetch_add(count, Ordering::SeqCst);
    }

    /// What the workload was started with.
    pub fn spec(&self) -> &WorkloadSpec {
        &self.shared.spec
    }

    /// The locks the workers use.
    pub fn locks(&self) -> &[LockName] {
        &self.shared.locks
    }

    /// Stops every worker (after its current operation) and waits for them.
    pub async fn stop(self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Takes one pending stall, if any.
    fn take_stall(&self) -> bool {
        self.stalls
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}
