//! `leasehold drill-worker` (hidden): the holder process of `leasehold
//! drill`. The drill re-executes its own binary as this subcommand so that
//! a holder is a real, separate process it can SIGKILL, SIGSTOP, cut off
//! behind a proxy or run under a shifted wall clock.
//!
//! The worker holds one lock through the client library (a kept lease,
//! `fence()` before each write, `lost()` watched throughout) and writes to
//! the built-in fenced store with its token. It reports each event as one
//! line on stdout, `KIND key=value ...`, which the drill reads to
//! synchronise (see `process.rs`); it takes commands, one per line, on
//! stdin: `go` (after a loss, make one write with the old token anyway,
//! as a stale holder would) and `stop` (release and exit).
//!
//! `--fault` plants a bug for the drill's own tests, so that a PASS is
//! shown not to be vacuous: `ignore-fence` writes without asking `fence()`
//! or watching `lost()`; `keep-renewing` keeps the lease renewed after the
//! work is done.

use super::super::{lock_name, Global};
use super::ctx::boot_us;
use super::store;
use crate::error::CliError;
use crate::exit::Exit;
use leasehold_client::{Client, Error, FencedKey, Lease, LockGuard, LockName, Token};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// A worker exits on its own after this long, so a drill that died
/// before its cleanup leaves no holder behind for long.
const WORKER_LIFETIME_MAX: Duration = Duration::from_secs(120);
/// Time between two protected writes.
const WRITE_EVERY: Duration = Duration::from_millis(100);
/// Writes made by `work-then-linger` before its work ends.
const WORK_WRITES: u64 = 3;

/// `leasehold drill-worker`
#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    /// The lock to hold.
    #[arg(long)]
    pub lock: String,
    /// The fenced-store key to write as its holder (not `--key`, the
    /// global TLS key flag).
    #[arg(long)]
    pub store_key: String,
    /// Who writes (the lease's owner name and the written value).
    #[arg(long)]
    pub writer: String,
    /// Ttl of the lease.
    #[arg(long, value_parser = crate::duration::ttl)]
    pub ttl: Duration,
    /// How long to queue for the lock.
    #[arg(long, value_parser = crate::duration::wait, default_value = "0s")]
    pub wait: Duration,
    /// What to do once holding.
    #[arg(long, value_enum, default_value = "write")]
    pub mode: WorkerMode,
    /// A planted bug (the drill's own tests).
    #[arg(long, value_enum)]
    pub fault: Option<Fault>,
}

/// What a worker does once it holds the lock.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerMode {
    /// Write every 100 ms until the lock is lost or `stop`.
    Write,
    /// Write a few times, release, end the work, and stay alive.
    WorkThenLinger,
}

/// A planted bug, so the drill's tests can show a drill failing.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Write without `fence()` and without watching `lost()`.
    IgnoreFence,
    /// Keep the lease renewed after the work is done.
    KeepRenewing,
}

impl Fault {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::IgnoreFence => "ignore-fence",
            Fault::KeepRenewing => "keep-renewing",
        }
    }
}

/// A command from the drill, on stdin.
#[derive(Debug, PartialEq, Eq)]
enum Command {
    Go,
    Stop,
}

/// Runs the worker, bounded by [`WORKER_LIFETIME_MAX`].
pub async fn run(args: WorkerArgs, global: &Global) -> Result<(), CliError> {
    let commands = read_commands();
    tokio::time::timeout(WORKER_LIFETIME_MAX, work(args, global, commands))
        .await
        .map_err(|_| CliError::new(Exit::Other, "the drill worker outlived its bound"))?
}

/// Prints one protocol line (stdout is line-buffered: it leaves at once).
fn say(line: String) {
    println!("{line}");
}

/// This process's wall clock, Unix ms (shifted under libfaketime).
fn wall_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// Forwards stdin's lines as commands, from a thread of its own (a
/// blocking read); the channel closes with stdin.
fn read_commands() -> mpsc::UnboundedReceiver<Command> {
    let (send, commands) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines().map_while(Result::ok) {
            let command = match line.trim() {
                "go" => Command::Go,
                "stop" => Command::Stop,
                _ => continue,
            };
            if send.send(command).is_err() {
                return;
            }
        }
    });
    commands
}

/// What a worker writes with: the client, the key and the lock.
struct Writer {
    client: Client,
    key: FencedKey,
    lock: LockName,
    name: String,
    writes: u64,
}

impl Writer {
    /// One write with `token`, reported as a `kind` line: when it was
    /// sent (`sent_us`) and answered (`at_us`), on the boot clock.
    async fn put_and_say(&mut self, kind: &str, token: Token) {
        self.writes += 1;
        let value = format!("{}#{}", self.name, self.writes).into_bytes();
        let sent_us = boot_us();
        let answer = store::write(&self.client, &self.key, &self.lock, token, value).await;
        say(format!(
            "{kind} token={} n={} wall_ms={} sent_us={sent_us} at_us={} {answer}",
            token.0,
            self.writes,
            wall_ms(),
            boot_us()
        ));
    }
}

async fn work(
    args: WorkerArgs,
    global: &Global,
    mut commands: mpsc::UnboundedReceiver<Command>,
) -> Result<(), CliError> {
    let client = global.keeper_client().await?;
    let lock = lock_name(&args.lock)?;
    let key = FencedKey::parse(&args.store_key).map_err(Error::from)?;
    let lease = client
        .lease(args.ttl)
        .owner(format!("leasehold-drill:{}", args.writer))
        .grant()
        .await?;
    let guard = lease
        .lock(&lock)
        .wait(args.wait)
        .fenced(true)
        .acquire()
        .await?;
    let timing = lease.timing();
    say(format!(
        "HOLDING token={} lease={} ttl_ms={} interval_ms={} margin_ms={} wall_ms={}",
        guard.token().0,
        lease.id().0,
        timing.ttl.as_millis(),
        timing.interval.as_millis(),
        timing.margin.as_millis(),
        wall_ms(),
    ));
    let mut writer = Writer {
        client: client.clone(),
        key,
        lock,
        name: args.writer.clone(),
        writes: 0,
    };
    match args.mode {
        WorkerMode::Write if args.fault == Some(Fault::IgnoreFence) => {
            write_ignoring_fence(&mut writer, guard, &mut commands).await
        }
        WorkerMode::Write => write_until_lost(&mut writer, guard, &mut commands).await,
        WorkerMode::WorkThenLinger => {
            let keep = args.fault == Some(Fault::KeepRenewing);
            work_then_linger(&mut writer, lease, guard, keep, &mut commands).await
        }
    }
}

/// Writes (each after `fence()`) until the lock is lost or `stop`; after a
/// loss, waits for `go` and writes once more with the old token.
async fn write_until_lost(
    writer: &mut Writer,
    guard: LockGuard,
    commands: &mut mpsc::UnboundedReceiver<Command>,
) -> Result<(), CliError> {
    let lost = loop {
        let token = match guard.fence() {
            Ok(token) => token,
            Err(lost) => break lost,
        };
        tokio::select! {
            lost = guard.lost() => break lost,
            () = writer.put_and_say("WROTE", token) => {}
        }
        tokio::select! {
            lost = guard.lost() => break lost,
            command = commands.recv() => if command != Some(Command::Go) {
                return stop(guard).await;
            },
            () = tokio::time::sleep(WRITE_EVERY) => {}
        }
    };
    say(format!(
        "LOST cause={} at_us={}",
        lost.cause.label(),
        boot_us()
    ));
    if commands.recv().await == Some(Command::Go) {
        writer.put_and_say("STALE", guard.token()).await;
    }
    Ok(())
}

/// The planted bug: writes with the token it was granted, never asking
/// whether the lock is still its own, until `stop`.
async fn write_ignoring_fence(
    writer: &mut Writer,
    guard: LockGuard,
    commands: &mut mpsc::UnboundedReceiver<Command>,
) -> Result<(), CliError> {
    loop {
        writer.put_and_say("WROTE", guard.token()).await;
        tokio::select! {
            command = commands.recv() => if command != Some(Command::Go) {
                return stop(guard).await;
            },
            () = tokio::time::sleep(WRITE_EVERY) => {}
        }
    }
}

/// Releases the lock on `stop` (or a closed stdin), reporting `RELEASED`.
async fn stop(guard: LockGuard) -> Result<(), CliError> {
    let outcome = guard.release().await;
    say(format!("RELEASED ok={}", outcome.is_ok()));
    Ok(())
}

/// A few writes, then the work ends: the lock is released and the lease
/// let go (or, with `keep`, kept renewing: the planted bug), and the
/// process stays alive until `stop`, as a service moves on to other work.
async fn work_then_linger(
    writer: &mut Writer,
    lease: Lease,
    guard: LockGuard,
    keep: bool,
    commands: &mut mpsc::UnboundedReceiver<Command>,
) -> Result<(), CliError> {
    for _ in 0..WORK_WRITES {
        let token = guard.fence().map_err(Error::from)?;
        writer.put_and_say("WROTE", token).await;
        tokio::time::sleep(WRITE_EVERY).await;
    }
    guard.release().await?;
    let kept = keep.then_some(lease);
    say(format!(
        "WORK_DONE at_us={} lease_kept={}",
        boot_us(),
        kept.is_some()
    ));
    while commands.recv().await == Some(Command::Go) {}
    drop(kept);
    Ok(())
}
