//! What every drill shares: the drill's own client (for the new holders,
//! the operator's force release, the store's reads), how to start a worker
//! with the same connection options, the names of a drill's lock and key
//! (unique to the run), and the ttl and slack the bounds are made of.

use super::local::LocalCluster;
use super::process::{Line, Worker, WorkerSpec};
use super::store::{self, Answer};
use super::worker::{Fault, WorkerMode};
use super::DrillArgs;
use crate::commands::{lock_name, Global};
use crate::error::CliError;
use leasehold_client::{Client, Consistency, FencedKey, Lease, LockGuard, LockName, Token};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// Bound on a worker's start: process, connect, grant, acquire.
pub const START: Duration = Duration::from_secs(20);
/// Bound on any other single step.
pub const STEP: Duration = Duration::from_secs(5);

/// Bound on one CLI command the drill runs.
const CLI_TIME_MAX: Duration = Duration::from_secs(30);

/// A worker's `HOLDING` line, read.
#[derive(Clone, Copy, Debug)]
pub struct Held {
    /// Its fencing token.
    pub token: u64,
    /// Its lease.
    pub lease: u64,
    /// The lease's ttl.
    pub ttl: Duration,
    /// Its renewal interval.
    pub interval: Duration,
}

impl Held {
    fn read(line: &Line) -> Result<Held, String> {
        Ok(Held {
            token: line.u64("token")?,
            lease: line.u64("lease")?,
            ttl: Duration::from_millis(line.u64("ttl_ms")?),
            interval: Duration::from_millis(line.u64("interval_ms")?),
        })
    }
}

/// A lock the drill itself holds (as the next holder), and when it got it.
pub struct Holding {
    /// Keeps the lease renewed until dropped.
    pub lease: Lease,
    /// The lock; dropping it releases.
    pub guard: LockGuard,
    /// When the acquire returned.
    pub at: Instant,
}

/// What the drills share.
pub struct Ctx {
    /// The drill's own calls.
    pub client: Client,
    /// The connection options, as the workers get them.
    pub global: Global,
    /// This binary, re-executed as the workers.
    exe: PathBuf,
    /// Names are `<prefix><run>/<drill>`.
    base: String,
    /// The holders' ttl.
    pub ttl: Duration,
    /// Allowance on top of each promised latency.
    pub slack: Duration,
    /// A planted bug for every worker (tests only).
    fault: Option<Fault>,
    /// The `--local` cluster, stopped and removed with the context.
    local: Option<LocalCluster>,
}

impl Ctx {
    /// The context of a run: against `global`'s endpoints, or with
    /// `--local` a cluster started here (its endpoints replace them).
    pub async fn new(args: &DrillArgs, global: &Global) -> Result<Ctx, CliError> {
        let exe = std::env::current_exe().map_err(|e| {
            CliError::new(
                crate::exit::Exit::Other,
                format!("cannot find this binary to start the drill's workers: {e}"),
            )
        })?;
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let mut global = global.clone();
        let local = if args.local {
            let local = LocalCluster::start(&exe, args.nodes)
                .await
                .map_err(|e| CliError::new(crate::exit::Exit::Other, e))?;
            global.endpoints = local.endpoints();
            Some(local)
        } else {
            None
        };
        Ok(Ctx {
            client: global.keeper_client().await?,
            global,
            exe,
            base: format!("{}{started:x}-{}/", args.prefix, std::process::id()),
            ttl: args.ttl,
            slack: args.slack,
            fault: args.worker_fault,
            local,
        })
    }

    /// Ends the run: a `--local` cluster is stopped and removed.
    pub fn finish(self) {
        drop(self.local);
    }

    /// `d` and the slack on top, as a bound reads: `2000 ms + slack 1000 ms`.
    pub fn plus_slack(&self, d: Duration) -> String {
        format!("{} ms + slack {} ms", d.as_millis(), self.slack.as_millis())
    }

    /// The lock of `drill`.
    pub fn lock(&self, drill: &str) -> String {
        format!("{}{drill}", self.base)
    }

    /// The fenced-store key `drill`'s holders write.
    pub fn key(&self, drill: &str) -> String {
        format!("{}{drill}/store", self.base)
    }

    /// A worker of `drill` named `writer`: writes every 100 ms, no wait.
    pub fn spec(&self, drill: &str, writer: &str) -> WorkerSpec {
        WorkerSpec {
            lock: self.lock(drill),
            key: self.key(drill),
            writer: writer.to_owned(),
            ttl: self.ttl,
            wait: Duration::ZERO,
            mode: WorkerMode::Write,
            fault: self.fault,
            endpoints: None,
            env: self.auth_env(),
        }
    }

    /// Starts a worker.
    pub fn spawn(&self, name: &str, spec: &WorkerSpec) -> Result<Worker, String> {
        let endpoints = spec.endpoints.as_deref().unwrap_or(&self.global.endpoints);
        Worker::spawn(name, &self.exe, &self.connection(endpoints), spec)
    }

    /// Starts a worker and waits until it holds the lock and the store
    /// accepted a first write.
    pub async fn holder(&self, name: &str, spec: &WorkerSpec) -> Result<(Worker, Held), String> {
        let mut worker = self.spawn(name, spec)?;
        let held = Held::read(&worker.expect("HOLDING", START).await?)?;
        if spec.mode == WorkerMode::Write {
            worker.accepted_write(STEP).await?;
        }
        Ok((worker, held))
    }

    /// The drill itself acquires `drill`'s lock (a kept lease of the
    /// holders' ttl), queueing up to `wait`.
    pub async fn acquire(&self, drill: &str, wait: Duration) -> Result<Holding, String> {
        let name = self.lock_name(drill)?;
        let lease = self
            .client
            .lease(self.ttl)
            .owner("leasehold-drill")
            .grant()
            .await
            .map_err(|e| format!("the drill could not grant its own lease: {e}"))?;
        let guard = lease
            .lock(&name)
            .wait(wait)
            .fenced(true)
            .acquire()
            .await
            .map_err(|e| format!("the next holder did not get {name}: {e}"))?;
        Ok(Holding {
            lease,
            guard,
            at: Instant::now(),
        })
    }

    /// The drill writes `drill`'s key with `token`.
    pub async fn write(&self, drill: &str, token: u64) -> Result<Answer, String> {
        let key = FencedKey::parse(&self.key(drill)).map_err(|e| e.to_string())?;
        let lock = self.lock_name(drill)?;
        let value = format!("drill#{token}").into_bytes();
        Ok(store::write(&self.client, &key, &lock, Token(token), value).await)
    }

    /// The token the server lists as `drill`'s lock's holder (`None`: free).
    pub async fn holder_token(&self, drill: &str) -> Result<Option<u64>, String> {
        let name = self.lock_name(drill)?;
        let reply = self.client.get_lock(&name, Consistency::Linearizable).await;
        let reply = reply.map_err(|e| format!("cannot read {name}: {e}"))?;
        Ok(reply.lock.and_then(|l| l.holder).map(|h| h.token))
    }

    /// `drill`'s lock, parsed.
    pub fn lock_name(&self, drill: &str) -> Result<LockName, String> {
        lock_name(&self.lock(drill)).map_err(|e| e.message)
    }

    /// Runs this binary's `args` (a command such as `diagnose`) with the
    /// drill's connection options, bounded by [`CLI_TIME_MAX`]; returns its
    /// stdout whatever its exit code (`diagnose` exits 8 when it finds
    /// something).
    pub async fn cli(&self, args: &[&str]) -> Result<String, String> {
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.args(self.connection(&self.global.endpoints))
            .args(args)
            .envs(self.auth_env())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(CLI_TIME_MAX, cmd.output())
            .await
            .map_err(|_| format!("leasehold {} took over {CLI_TIME_MAX:?}", args.join(" ")))?
            .map_err(|e| format!("cannot run leasehold {}: {e}", args.join(" ")))?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The global flags a worker gets: the drill's endpoints, timeouts and
    /// TLS files (the bearer token goes by environment: [`Ctx::auth_env`]).
    fn connection(&self, endpoints: &str) -> Vec<String> {
        let g = &self.global;
        let mut args = vec![
            format!("--endpoints={endpoints}"),
            format!("--timeout={}ms", g.timeout.as_millis()),
            format!("--connect-timeout={}ms", g.connect_timeout.as_millis()),
        ];
        let files = [
            ("--cacert", &g.client_cacert),
            ("--cert", &g.client_cert),
            ("--key", &g.client_key),
        ];
        for (flag, file) in files {
            if let Some(path) = file {
                args.push(format!("{flag}={}", path.display()));
            }
        }
        args
    }

    /// The bearer token for the workers' environment, if any.
    fn auth_env(&self) -> Vec<(String, String)> {
        let token = self.global.auth_token.clone();
        token
            .map(|t| vec![("LEASEHOLD_AUTH_TOKEN".to_owned(), t)])
            .unwrap_or_default()
    }
}

/// Now on the boot clock, µs: the clock the workers' `at_us` is on.
pub fn boot_us() -> u64 {
    use leasehold_client::clock::{BootClock, Clock};
    BootClock.now().since_boot().as_micros() as u64
}
