//! A fenced workload for cluster tests: `leasehold-client` workers in the
//! test process that, each under a lease of its own (granted again when
//! lost), acquire one of a few locks, `fence()`, write once to that lock's
//! fenced [`Resource`], and release, until stopped. Every grant and every
//! failed call is journaled, so a test can cut the cluster up meanwhile and
//! then check that the resources never saw two holders at once
//! ([`Workload::check_fencing`]) and that the replicated state agrees with
//! the last grant ([`Workload::check_state`]).
//!
//! Also here: [`watch`], which asks a held lock's `fence()` every 20 ms and
//! records the first failure, for a lock that must survive the faults.

use super::super::drill::resource::Resource;
use super::Cluster;
use leasehold_client::{CancellationToken, Client, Error, Lease, LockGuard, LockHandle};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

/// Bound on the workers stopping once asked.
const STOP_LIMIT: Duration = Duration::from_secs(15);
/// Pause after a failed call before the next one.
const AFTER_FAILURE: Duration = Duration::from_millis(20);
/// Time between two `fence()` calls of [`watch`].
const WATCH_EVERY: Duration = Duration::from_millis(20);

/// How many workers and locks, and how they hold them.
#[derive(Clone, Debug)]
pub struct Shape {
    pub workers: usize,
    pub locks: usize,
    /// Each worker's lease ttl.
    pub ttl: Duration,
    /// How long an acquire queues.
    pub wait: Duration,
    /// Lock names are `<prefix>-<n>`.
    pub prefix: &'static str,
}

impl Shape {
    /// The name of lock number `lock`.
    pub fn lock_name(&self, lock: usize) -> String {
        format!("{}-{lock}", self.prefix)
    }
}

/// The resource's answer to a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Accepted,
    Rejected { highest: u64 },
}

/// One grant a worker got, and what it did with it.
#[derive(Clone, Debug)]
pub struct Grant {
    pub writer: String,
    pub lock: usize,
    pub token: u64,
    /// When the acquire was sent.
    pub asked: Instant,
    /// When it returned the grant.
    pub granted: Instant,
    /// The one write made under it (`None`: `fence()` said lost first).
    pub write: Option<Answer>,
}

/// What the workers did.
#[derive(Default)]
pub struct Journal {
    pub grants: Vec<Grant>,
    /// Failed calls by kind (expected while the cluster is faulted).
    pub errors: BTreeMap<&'static str, u64>,
}

type SharedJournal = Arc<Mutex<Journal>>;

/// Running workers, their resources and their journal.
pub struct Workload {
    pub shape: Shape,
    /// One fenced resource per lock.
    pub resources: Vec<Resource>,
    journal: SharedJournal,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl Workload {
    /// Starts `shape.workers` workers on `runtime`, each with its own
    /// client of `endpoints`.
    pub fn start(
        runtime: &tokio::runtime::Runtime,
        shape: Shape,
        endpoints: &[String],
    ) -> Workload {
        let resources: Vec<Resource> = (0..shape.locks).map(|_| Resource::start()).collect();
        let addrs: Vec<SocketAddr> = resources.iter().map(|r| r.addr).collect();
        let journal = SharedJournal::default();
        let stop = CancellationToken::new();
        let tasks = (0..shape.workers)
            .map(|ix| {
                let worker = Worker {
                    ix,
                    shape: shape.clone(),
                    resources: addrs.clone(),
                    journal: journal.clone(),
                    stop: stop.clone(),
                };
                runtime.spawn(worker.run(endpoints.to_vec()))
            })
            .collect();
        Workload {
            shape,
            resources,
            journal,
            stop,
            tasks,
        }
    }

    /// The grants journaled so far that `keep` selects.
    pub fn grants_where(&self, keep: impl Fn(&Grant) -> bool) -> Vec<Grant> {
        let journal = self.journal.lock().expect("journal");
        journal.grants.iter().filter(|g| keep(g)).cloned().collect()
    }

    /// Failed calls so far, by kind.
    pub fn errors(&self) -> BTreeMap<&'static str, u64> {
        self.journal.lock().expect("journal").errors.clone()
    }

    /// Stops the workers and waits for them (bounded); their leases are
    /// revoked as they drop.
    pub fn stop(&mut self, runtime: &tokio::runtime::Runtime) {
        self.stop.cancel();
        let tasks = std::mem::take(&mut self.tasks);
        runtime.block_on(async {
            for task in tasks {
                tokio::time::timeout(STOP_LIMIT, task)
                    .await
                    .expect("a worker did not stop")
                    .expect("a worker panicked");
            }
        });
    }

    /// Each grant wrote once, so the tokens a resource accepted for its
    /// lock must strictly increase, none may be refused (a refusal means a
    /// holder's `fence()` said Ok after a later holder had written: two
    /// holders overlapped), and the accepted writes must be exactly those
    /// the workers journaled.
    pub fn check_fencing(&self) {
        let grants = self.grants_where(|_| true);
        for (lock, resource) in self.resources.iter().enumerate() {
            let attempts = resource.attempts();
            let refused: Vec<_> = attempts.iter().filter(|a| !a.accepted).collect();
            assert!(
                refused.is_empty(),
                "lock {lock}: writes refused as stale (two holders overlapped): {refused:?}"
            );
            let tokens: Vec<u64> = attempts.iter().map(|a| a.token).collect();
            assert!(
                tokens.windows(2).all(|w| w[0] < w[1]),
                "lock {lock}: accepted tokens do not strictly increase: {tokens:?}"
            );
            let accepted: BTreeSet<(String, u64)> = attempts
                .iter()
                .map(|a| (a.writer.clone(), a.token))
                .collect();
            let journaled: BTreeSet<(String, u64)> = grants
                .iter()
                .filter(|g| g.lock == lock && g.write == Some(Answer::Accepted))
                .map(|g| (g.writer.clone(), g.token))
                .collect();
            assert_eq!(
                accepted, journaled,
                "lock {lock}: resource and workers disagree"
            );
        }
    }

    /// Once stopped: each lock is free (or gone), or held by its latest
    /// grant (whose release may have failed), never by an earlier one.
    pub fn check_state(&self, cluster: &Cluster) {
        for lock in 0..self.shape.locks {
            let name = self.shape.lock_name(lock);
            let grants = self.grants_where(|g| g.lock == lock);
            let Some(latest) = grants.iter().map(|g| g.token).max() else {
                continue;
            };
            let run = cluster.cli(&["get", &name, "--json"]);
            if run.code == 4 && run.stderr.contains("no lock named") {
                continue;
            }
            let got = run.expect_code(0).json();
            if got["held"] == true {
                assert_eq!(got["token"], latest, "{name} held by a stale grant: {got}");
            }
        }
    }
}

/// One worker's loop (see the module doc).
struct Worker {
    ix: usize,
    shape: Shape,
    resources: Vec<SocketAddr>,
    journal: SharedJournal,
    stop: CancellationToken,
}

impl Worker {
    async fn run(self, endpoints: Vec<String>) {
        let client = Client::connect(&endpoints).await.expect("connect");
        let writer = format!("w{}", self.ix);
        let mut lease: Option<Lease> = None;
        for round in 0.. {
            if self.stop.is_cancelled() {
                break;
            }
            let current = match lease.as_ref().filter(|l| l.check().is_ok()) {
                Some(current) => current.clone(),
                None => match client
                    .lease(self.shape.ttl)
                    .owner(writer.as_str())
                    .grant()
                    .await
                {
                    Ok(granted) => lease.insert(granted).clone(),
                    Err(error) => {
                        self.failed(&error).await;
                        continue;
                    }
                },
            };
            let lock = (self.ix + round) % self.shape.locks;
            let asked = Instant::now();
            let request = current.lock(self.shape.lock_name(lock));
            let request = request.wait(self.shape.wait).fenced(true);
            let acquired = tokio::select! {
                acquired = request.acquire() => acquired,
                () = self.stop.cancelled() => break,
            };
            let guard = match acquired {
                Ok(guard) => guard,
                Err(error) => {
                    self.failed(&error).await;
                    continue;
                }
            };
            let granted = Instant::now();
            let answer = match guard.fence() {
                Ok(token) => Some(write(self.resources[lock], token.0, &writer).await),
                Err(_) => None,
            };
            let grant = Grant {
                writer: writer.clone(),
                lock,
                token: guard.token().0,
                asked,
                granted,
                write: answer,
            };
            self.journal.lock().expect("journal").grants.push(grant);
            if let Err(error) = guard.release().await {
                self.failed(&error).await;
            }
        }
    }

    /// Journals a failed call by kind, and pauses.
    async fn failed(&self, error: &Error) {
        let kind = match error {
            Error::Busy { .. } => "busy",
            Error::WaitTimeout { .. } => "wait_timeout",
            Error::LeaseNotFound { .. } | Error::LeaseExpired { .. } => "lease_gone",
            Error::Unavailable { .. } => "unavailable",
            Error::Timeout { .. } => "timeout",
            Error::Lost(_) => "lost",
            _ => "other",
        };
        *self
            .journal
            .lock()
            .expect("journal")
            .errors
            .entry(kind)
            .or_default() += 1;
        tokio::time::sleep(AFTER_FAILURE).await;
    }
}

/// One fenced write: `WRITE <token> <writer>` → `OK` | `STALE <highest>`.
async fn write(resource: SocketAddr, token: u64, writer: &str) -> Answer {
    let stream = tokio::net::TcpStream::connect(resource)
        .await
        .expect("connect to the resource");
    let (read, mut send) = stream.into_split();
    let request = format!("WRITE {token} {writer}\n");
    send.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    let mut read = tokio::io::BufReader::new(read);
    read.read_line(&mut answer).await.expect("the answer");
    match answer.split_whitespace().collect::<Vec<_>>()[..] {
        ["OK"] => Answer::Accepted,
        ["STALE", highest] => Answer::Rejected {
            highest: highest.parse().expect("highest"),
        },
        _ => panic!("the resource answered {answer:?}"),
    }
}

/// The long-lived holder a cluster test watches across a fault: a lease of
/// `ttl` renewed every `interval` (owner "kept"), holding `lock` fenced,
/// taken through `endpoints`.
pub async fn hold_kept(
    endpoints: &[String],
    ttl: Duration,
    interval: Duration,
    lock: &str,
) -> (Lease, LockGuard) {
    let client = Client::connect(endpoints).await.expect("connect");
    let lease = client
        .lease(ttl)
        .keep_alive_interval(interval)
        .owner("kept")
        .grant()
        .await
        .expect("grant");
    let guard = lease
        .lock(lock)
        .fenced(true)
        .acquire()
        .await
        .expect("acquire");
    (lease, guard)
}

/// What [`watch`] saw.
#[derive(Debug, Default)]
pub struct Watch {
    /// `fence()` calls that said Ok.
    pub oks: u64,
    /// When the last of them was.
    pub last_ok: Option<Instant>,
    /// The first `fence()` that failed: when, and why.
    pub failed: Option<(Instant, String)>,
}

/// Asks `lock`'s `fence()` every 20 ms until `stop`, recording in `seen`.
pub async fn watch(lock: LockHandle, seen: Arc<Mutex<Watch>>, stop: CancellationToken) {
    while !stop.is_cancelled() {
        let outcome = lock.fence();
        {
            let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
            match outcome {
                Ok(_) => {
                    seen.oks += 1;
                    seen.last_ok = Some(Instant::now());
                }
                Err(lost) if seen.failed.is_none() => {
                    seen.failed = Some((Instant::now(), lost.to_string()));
                }
                Err(_) => {}
            }
        }
        tokio::time::sleep(WATCH_EVERY).await;
    }
}
