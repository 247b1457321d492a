//! The holder process itself (`leasehold-chaos holder`): one workload
//! client in a process of its own, writing its [`Report`]s on stdout (see
//! the module doc of `holder`).

use super::Report;
use crate::recorder::Recorder;
use crate::workload::client_options;
use crate::workload::keeper::Keeper;
use crate::workload::ops::Ops;
use leasehold_client::{Client, LockName};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Fenced puts per hold, spread over about a ttl: a holder is paused in
/// the middle of them, and writes the rest with its old token on waking.
const PUTS_PER_HOLD: u32 = 6;

/// Pause after a failed grant or acquire, so a dead cluster is not hammered.
const BACKOFF: Duration = Duration::from_millis(50);

/// What one holder process does.
#[derive(clap::Args, Debug, Clone)]
pub struct HolderArgs {
    /// The cluster's endpoints, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub endpoints: Vec<String>,
    /// The lock it holds, again and again.
    #[arg(long)]
    pub lock: String,
    /// Its lease's ttl, ms.
    #[arg(long)]
    pub ttl_ms: u64,
    /// The run's clock epoch (`CLOCK_MONOTONIC`, ns): its times are the
    /// run's.
    #[arg(long)]
    pub epoch_ns: u64,
    /// Its name: the lease's owner and the values' prefix.
    #[arg(long)]
    pub name: String,
    /// The run's process id: the holder is killed when that process ends.
    #[arg(long)]
    pub parent_pid: u32,
    /// It ends by itself after this long, ms, if its stdin is still open.
    #[arg(long, default_value_t = 300_000)]
    pub lifetime_ms: u64,
}

/// Runs the holder until its stdin closes or its lifetime ends, then
/// writes its history; the error says why it could not run.
pub async fn run(args: HolderArgs) -> Result<(), String> {
    die_with_run(args.parent_pid)?;
    let lock = LockName::parse(&args.lock).map_err(|e| format!("lock {:?}: {e}", args.lock))?;
    let recorder = Recorder::on_monotonic_epoch(args.epoch_ns)?
        .with_tap(|op| write_report(&Report::Op(op.clone())));
    write_report(&Report::Hello {
        now_ms: recorder.now_ms(),
    });
    let client = Client::connect_with(args.endpoints.clone(), client_options())
        .await
        .map_err(|e| format!("connect to {:?}: {e}", args.endpoints))?;
    let ops = Ops {
        client,
        recorder: recorder.clone(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    stop_at_end_of_stdin(stop.clone());
    let until = Instant::now() + Duration::from_millis(args.lifetime_ms);
    let running = || !stop.load(Ordering::SeqCst) && Instant::now() < until;
    let holder = Holder {
        ops: &ops,
        lock: &lock,
        name: &args.name,
        ttl: Duration::from_millis(args.ttl_ms),
    };
    holder.run(running).await;
    write_report(&Report::History(recorder.history()));
    Ok(())
}

/// One holder's loop.
struct Holder<'a> {
    ops: &'a Ops,
    lock: &'a LockName,
    name: &'a str,
    ttl: Duration,
}

impl Holder<'_> {
    /// Holds the lock again and again while `running`, then revokes its
    /// lease if it still has one.
    async fn run(&self, running: impl Fn() -> bool) {
        let mut lease: Option<Keeper> = None;
        let mut writes = 0u64;
        while running() {
            let keeper = match lease.take().filter(Keeper::alive) {
                Some(keeper) => keeper,
                None => match Keeper::grant(self.ops, self.ttl, self.name).await {
                    Some(keeper) => keeper,
                    None => {
                        tokio::time::sleep(BACKOFF).await;
                        continue;
                    }
                },
            };
            let Some(token) = self.ops.acquire(keeper.id, self.lock, self.ttl).await else {
                tokio::time::sleep(BACKOFF).await;
                lease = Some(keeper);
                continue;
            };
            // Like a naive holder (a paused JVM), it does not check its
            // lease between writes: the fenced store must refuse them. A
            // hold is finished even once told to stop (so a holder
            // resumed then still writes late), which takes a ttl at most.
            for _ in 0..PUTS_PER_HOLD {
                writes += 1;
                let value = format!("{}-{writes}", self.name);
                self.ops.put(self.lock, token, value).await;
                tokio::time::sleep(self.ttl / PUTS_PER_HOLD).await;
            }
            self.ops.release(keeper.id, self.lock, token).await;
            lease = Some(keeper);
        }
        if let Some(keeper) = lease.filter(Keeper::alive) {
            keeper.stop();
            self.ops.revoke(keeper.id).await;
        }
    }
}

/// Has the kernel SIGKILL this process when the run's process ends: a
/// holder stopped by SIGSTOP cannot see its stdin close.
fn die_with_run(parent_pid: u32) -> Result<(), String> {
    // SAFETY: PR_SET_PDEATHSIG takes one integer argument and only sets a
    // flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } != 0 {
        return Err(format!(
            "prctl(PR_SET_PDEATHSIG): {}",
            std::io::Error::last_os_error()
        ));
    }
    // The run may have ended before the flag was set.
    if std::os::unix::process::parent_id() != parent_pid {
        return Err(format!(
            "the run (pid {parent_pid}) that started this holder has ended"
        ));
    }
    Ok(())
}

/// Sets `stop` once stdin reaches its end (the run closed it, or died),
/// watched by a thread of its own (a blocking read).
fn stop_at_end_of_stdin(stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buffer = [0u8; 256];
        while matches!(stdin.read(&mut buffer), Ok(n) if n > 0) {}
        stop.store(true, Ordering::SeqCst);
    });
}

/// Writes one report line on stdout, at once (the run reads it live).
fn write_report(report: &Report) {
    let mut stdout = std::io::stdout().lock();
    // A run that stopped reading has ended; the holder ends with its stdin.
    let _ = writeln!(stdout, "{}", report.line()).and_then(|()| stdout.flush());
}
