//! `leasehold lock NAME -- CMD ARGS…`: runs a command while holding a lock,
//! and stops it the moment the lock is lost (docs/DESIGN.md §4).
//!
//! The lock is held through the client library, so "lost" means what it
//! means there: the lease's local deadline passed (send time of the last
//! acknowledged keep-alive + ttl − margin, on the boot clock), the server
//! said the lease is gone, or a keep-alive reply no longer lists the lock
//! (an operator force-released it, or its max hold ran out, while the
//! lease lived) — the first two always before the server can hand the lock
//! to someone else, the last within one renewal interval of it. At that moment the command's whole process group gets
//! SIGTERM, then SIGKILL after `--grace`, and `lock` exits 6 naming the
//! cause. Otherwise, when the command exits, whatever it left running in
//! its group is stopped the same way, the lock is released, and `lock`
//! exits with the command's code.

use super::{lock_name, Global, HoldFlags};
use crate::duration;
use crate::error::CliError;
use crate::exit::Exit;
use crate::supervise::{check_runnable, exit_code, signal_name, Forwarder, Supervised};
use leasehold_client::show::human;
use leasehold_client::{Lease, LeaseId, LockGuard, LockLost, ReleaseOutcome};
use std::ffi::OsString;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::sync::mpsc;

/// `leasehold lock`
#[derive(clap::Args, Debug)]
pub struct LockArgs {
    /// The lock to hold while the command runs. Several names take them
    /// all at once, all or none (no order of names can deadlock).
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// Ttl of the lease that holds the lock; it is renewed every ttl/3.
    #[arg(long, value_parser = duration::ttl, default_value = "10s", conflicts_with = "lease")]
    pub ttl: Duration,
    /// Wait up to this long in the lock's FIFO queue (exit 3 if not had).
    #[arg(long, value_parser = duration::wait, default_value = "30s")]
    pub wait: Duration,
    /// The protected resource checks fencing tokens (LEASEHOLD_TOKEN).
    #[arg(long)]
    pub fenced: bool,
    /// After SIGTERM on loss of the lock, wait this long before SIGKILL.
    #[arg(long, value_parser = duration::parse, default_value = "5s")]
    pub grace: Duration,
    /// Owner name of the lease (default: user@host:leasehold).
    #[arg(long, conflicts_with = "lease")]
    pub owner: Option<String>,
    /// Hold the lock under this existing lease (renewed while `lock` runs,
    /// left to its ttl afterwards) instead of granting a fresh one.
    #[arg(long, value_name = "ID")]
    pub lease: Option<u64>,
    /// Lock delay, max hold and metadata.
    #[command(flatten)]
    pub hold: HoldFlags,
    /// The command and its arguments, after `--`. Without one, `lock`
    /// prints the lock's variables and holds it until SIGINT or SIGTERM.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Runs `lock`; returns the exit code.
pub async fn run(args: LockArgs, global: &Global) -> Result<u8, CliError> {
    let names = args
        .names
        .iter()
        .map(|name| lock_name(name))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(program) = args.command.first() {
        if let Err(error) = check_runnable(program) {
            eprintln!("error: {error}; the lock was not acquired");
            return Ok(error.exit_code());
        }
    }
    let client = global.keeper_client().await?;
    let lease = match args.lease {
        Some(id) => client.keep_alive(LeaseId(id)).start().await?,
        None => {
            let mut lease = client.lease(args.ttl);
            if let Some(owner) = &args.owner {
                lease = lease.owner(owner.clone());
            }
            lease.grant().await?
        }
    };
    let guards = match <[_; 1]>::try_from(names) {
        Ok([name]) => {
            let options = args.hold.options(args.wait, args.fenced);
            vec![lease.lock(name).options(options).acquire().await?]
        }
        Err(names) => {
            args.hold.check_for_a_set()?;
            let set = lease.lock_all(names).wait(args.wait).fenced(args.fenced);
            set.acquire().await?
        }
    };
    let env = variables(&guards, &lease);
    let held = Held::new(guards, lease);
    if args.command.is_empty() {
        return hold_until_signal(held, &args, &env, global).await;
    }
    run_command(held, &args, &env, global).await
}

/// The command's variables: `LEASEHOLD_LOCK` (the names, space
/// separated), `LEASEHOLD_TOKEN` (the first lock's token: a set's locks
/// share it), `LEASEHOLD_LEASE`, and for a set `LEASEHOLD_TOKENS` (`NAME=T`
/// for each, space separated).
fn variables(guards: &[LockGuard], lease: &Lease) -> Vec<(String, String)> {
    let names: Vec<String> = guards.iter().map(|g| g.name().to_string()).collect();
    let mut env = vec![
        ("LEASEHOLD_LOCK".to_owned(), names.join(" ")),
        (
            "LEASEHOLD_TOKEN".to_owned(),
            guards[0].token().0.to_string(),
        ),
        ("LEASEHOLD_LEASE".to_owned(), lease.id().0.to_string()),
    ];
    if guards.len() > 1 {
        let tokens: Vec<String> = guards
            .iter()
            .map(|g| format!("{}={}", g.name(), g.token().0))
            .collect();
        env.push(("LEASEHOLD_TOKENS".to_owned(), tokens.join(" ")));
    }
    env
}

/// The locks and the lease they are held under, until `lock` lets go.
struct Held {
    guards: Vec<LockGuard>,
    lease: Lease,
    /// The first loss of any of the locks (one watcher per lock).
    losses: mpsc::Receiver<LockLost>,
}

impl Held {
    fn new(guards: Vec<LockGuard>, lease: Lease) -> Held {
        let (sender, losses) = mpsc::channel(guards.len());
        for guard in &guards {
            let (handle, sender) = (guard.handle(), sender.clone());
            tokio::spawn(async move {
                let _ending_is_fine = sender.send(handle.lost().await).await;
            });
        }
        Held {
            guards,
            lease,
            losses,
        }
    }

    /// Resolves when any of the locks is lost.
    async fn any_lost(&mut self) -> LockLost {
        self.losses
            .recv()
            .await
            .expect("a watcher per lock, kept by its guard")
    }

    /// A lock was lost: stop renewing the lease now (the keeper revokes a
    /// lease it granted), not after the command's grace period; the other
    /// locks go with it.
    fn lost(self) {
        drop(self.guards);
        drop(self.lease);
    }

    /// Releases the locks, then revokes the lease if `lock` granted it (a
    /// `--lease` is left to its ttl, as its owner expects).
    async fn let_go(self, args: &LockArgs, global: &Global) {
        for guard in self.guards {
            release(guard).await;
        }
        if args.lease.is_none() {
            // Bounded: a server that just went away must not delay our exit.
            let _ = tokio::time::timeout(global.timeout, self.lease.revoke()).await;
        }
    }
}

/// `lock NAME` without a command (like `etcdctl lock NAME`): prints the
/// lock's variables as `KEY=VALUE` lines (for `eval`) and holds the lock
/// until SIGINT or SIGTERM (exit 0) or its loss (exit 6). The signals are
/// listened for before the variables are printed: a script that reads them
/// and then stops `lock` always gets the release.
async fn hold_until_signal(
    mut held: Held,
    args: &LockArgs,
    env: &[(String, String)],
    global: &Global,
) -> Result<u8, CliError> {
    use tokio::signal::unix::{signal, SignalKind};
    let cannot_listen =
        |e: std::io::Error| CliError::new(Exit::Other, format!("cannot listen for signals: {e}"));
    let mut interrupt = signal(SignalKind::interrupt()).map_err(cannot_listen)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(cannot_listen)?;
    for (key, value) in env {
        println!("{key}={value}");
    }
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
        lost = held.any_lost() => {
            eprintln!("error: {lost}");
            held.lost();
            return Ok(Exit::LockLost.code());
        }
    }
    held.let_go(args, global).await;
    Ok(Exit::Ok.code())
}

/// Runs the command while the lock is held; its exit code, or 6 if the
/// lock was lost (the command then stopped).
async fn run_command(
    mut held: Held,
    args: &LockArgs,
    env: &[(String, String)],
    global: &Global,
) -> Result<u8, CliError> {
    // Listen before spawning: a signal in between is then held for the
    // command instead of killing us with the lock still held.
    let mut signals =
        Forwarder::install().map_err(|e| CliError::new(Exit::Other, e.to_string()))?;
    let (program, rest) = args.command.split_first().expect("checked by run");
    let mut child = match Supervised::spawn(program, rest, env) {
        Ok(child) => child,
        Err(error) => {
            held.let_go(args, global).await;
            eprintln!("error: {error}");
            return Ok(error.exit_code());
        }
    };
    let group = child.group();
    let ended = loop {
        tokio::select! {
            biased;
            lost = held.any_lost() => break Ended::Lost(lost),
            status = child.wait() => break Ended::Exited(status),
            Some(signal) = signals.recv() => {
                if let Err(error) = group.signal(signal) {
                    eprintln!("warning: cannot forward {} to the command: {error}", signal_name(signal));
                }
            }
        }
    };
    match ended {
        Ended::Lost(lost) => {
            held.lost();
            Ok(on_loss(&mut child, lost, args.grace).await)
        }
        Ended::Exited(status) => {
            let status = status.map_err(|e| CliError::new(Exit::Other, e.to_string()))?;
            stop_stragglers(&mut child, args.grace).await;
            held.let_go(args, global).await;
            Ok(exit_code(status))
        }
    }
}

/// How the wait for the command ended.
enum Ended {
    Lost(LockLost),
    Exited(Result<ExitStatus, crate::supervise::WaitError>),
}

/// The lock is gone: stop the whole group; exit 6.
async fn on_loss(child: &mut Supervised, lost: LockLost, grace: Duration) -> u8 {
    eprintln!(
        "error: {lost}; stopping the command (SIGTERM to its process group, SIGKILL after {})",
        human(duration::ms(grace))
    );
    match child.terminate_group(grace).await {
        Ok(ended) if ended.killed => {
            eprintln!("the command did not stop within the grace period and was killed (SIGKILL)")
        }
        Ok(_) => {}
        Err(error) => eprintln!("warning: could not stop the command: {error}"),
    }
    Exit::LockLost.code()
}

/// The command exited but left processes in its group: they must not work
/// on after the release, so they get the same SIGTERM-then-SIGKILL.
async fn stop_stragglers(child: &mut Supervised, grace: Duration) {
    if child.group_alive() {
        eprintln!("warning: the command exited but left processes in its group; stopping them before releasing the lock");
        if let Err(error) = child.terminate_group(grace).await {
            eprintln!("warning: could not stop them: {error}");
        }
    }
}

/// Releases a lock, saying so when it was no longer ours.
async fn release(guard: LockGuard) {
    let name = guard.name().to_string();
    match guard.release().await {
        Ok(ReleaseOutcome::Released) => {}
        Ok(other) => eprintln!(
            "warning: releasing {name}: {other:?}: the lock was no longer held by this command"
        ),
        Err(error) => {
            eprintln!("warning: releasing {name} failed ({error}); the lease's expiry will free it")
        }
    }
}
