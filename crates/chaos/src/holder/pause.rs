//! The `pause-holder-process` fault: [`HOLDERS`] holder processes started
//! for the window on one of the workload's locks; the first to report a
//! grant is SIGSTOPped for 1.5 x ttl (past its lease) while it holds, then
//! SIGCONTed, and goes on writing with its old token as a paused JVM
//! would. The rules then hold the merged history to what must follow: the
//! lock passed on only once its lease could have ended, its late puts
//! refused, tokens in order.
//!
//! The processes live for the window only, not the whole run: the other
//! faults' runs stay as they were, and a holder never outlives the window
//! that needs it (its history is merged before the window ends).

use super::child::HolderArgs;
use super::field;
use super::process::HolderProcess;
use crate::fault::Window;
use crate::history::OpRecord;
use rand::Rng;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::time::Instant;

/// The binary holder processes run (its hidden `holder` subcommand).
const BINARY: &str = "leasehold-chaos";

/// Holder processes per window: one to pause, one to take the lock over.
pub const HOLDERS: usize = 2;

/// How often the reports are looked at while awaiting a grant or a write.
const POLL: Duration = Duration::from_millis(5);

/// Bound on a holder process's end once its stdin is closed: its current
/// call (a few seconds at most, `client_options`), a release, a revoke.
const FINISH_TIMEOUT: Duration = Duration::from_secs(20);

/// A holder process ends by itself after this long, whatever the run does.
const LIFETIME_MS: u64 = 300_000;

/// A grant a holder process reported.
#[derive(Clone, Copy, Debug)]
struct Grant {
    token: u64,
    lease: u64,
}

impl Grant {
    /// The grant an operation reports, if it is an acknowledged acquire.
    fn of(op: &OpRecord) -> Option<Grant> {
        if op.op != "acquire" || !op.outcome.starts_with("ok ") {
            return None;
        }
        Some(Grant {
            token: field(&op.outcome, "token")?.parse().ok()?,
            lease: u64::from_str_radix(field(&op.args, "lease")?, 16).ok()?,
        })
    }
}

/// Runs the fault in `window`; returns what it did, in words.
pub async fn pause_holder_process(window: &mut Window<'_>) -> Result<String, String> {
    let ttl = window.workload.spec().ttl;
    let locks = window.workload.locks();
    let lock = locks[window.rng.random_range(0..locks.len())].to_string();
    let exe = holder_binary()?;
    let mut holders = Vec::new();
    for index in 0..HOLDERS {
        let args = HolderArgs {
            endpoints: window.cluster.endpoints(),
            lock: lock.clone(),
            ttl_ms: ttl.as_millis() as u64,
            epoch_ns: window.recorder.monotonic_epoch_ns(),
            name: format!("holder-{index}"),
            lifetime_ms: LIFETIME_MS,
            parent_pid: std::process::id(),
        };
        holders.push(HolderProcess::spawn(&exe, &args, window.recorder).await?);
    }
    let (index, grant) = first_grant(&mut holders, ttl * 5).await?;
    let pause = ttl * 3 / 2;
    let paused = &mut holders[index];
    let pid = paused.pid().unwrap_or(0);
    let name = paused.name().to_owned();
    let paused_ms = window.recorder.now_ms();
    paused.signal(libc::SIGSTOP)?;
    tokio::time::sleep(pause).await;
    paused.signal(libc::SIGCONT)?;
    let resumed_ms = window.recorder.now_ms();
    // Each finishes its current hold (the resumed one writing late), then
    // ends: the window is not held longer than a ttl for them.
    holders.iter_mut().for_each(HolderProcess::close_stdin);
    let paused = &mut holders[index];
    let late = late_puts(paused, grant.token, resumed_ms, ttl * 2 + FINISH_TIMEOUT).await?;
    for holder in holders {
        window.recorder.merge(holder.finish(FINISH_TIMEOUT).await?);
    }
    window
        .recorder
        .lease(grant.lease, |l| l.abandoned_ms = Some(paused_ms));
    let history = window.recorder.history();
    let next = history
        .holds
        .iter()
        .filter(|h| h.lock == lock && h.token > grant.token)
        .min_by_key(|h| h.token);
    let passed = next.map_or("not passed on in the window".to_owned(), |h| {
        let after_ms = h.acquire_completed_ms.saturating_sub(paused_ms);
        format!(
            "passed on to token {} {after_ms} ms after the pause",
            h.token
        )
    });
    Ok(format!(
        "SIGSTOP of holder process {name} (pid {pid}) holding {lock} with token {} for \
         {pause:?}; {passed}; {}",
        grant.token,
        late_summary(grant.token, &late)
    ))
}

/// The late puts in a few words: how many, how many refused, the first
/// answer.
fn late_summary(token: u64, late: &[OpRecord]) -> String {
    let Some(first) = late.first() else {
        return format!("no put with token {token} after SIGCONT (its hold had ended)");
    };
    let refused = late
        .iter()
        .filter(|op| op.outcome.starts_with("refused"))
        .count();
    format!(
        "{} puts with token {token} after SIGCONT, {refused} refused (first, sent at {} ms: {})",
        late.len(),
        first.invoked_ms,
        first.outcome
    )
}

/// The `leasehold-chaos` binary a holder process runs: this one, or, when
/// the run is a test's (`crates/cli/tests/t230_chaos.rs` calls `run`
/// in-process from `target/<profile>/deps/`), the one beside that test in
/// the same target directory, which `cargo test --workspace` builds
/// with it.
fn holder_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("find this binary: {e}"))?;
    if exe.file_name().is_some_and(|n| n == BINARY) {
        return Ok(exe);
    }
    let dir = exe.parent();
    let found = [dir, dir.and_then(Path::parent)]
        .into_iter()
        .flatten()
        .map(|dir| dir.join(BINARY))
        .find(|candidate| candidate.is_file());
    found.ok_or_else(|| {
        format!(
            "pause-holder-process runs `{BINARY} holder` processes, but {} is not \
                 {BINARY} and none is beside it: build it (cargo build -p leasehold-chaos)",
            exe.display()
        )
    })
}

/// The first holder to report an acknowledged grant, within `limit`.
async fn first_grant(
    holders: &mut [HolderProcess],
    limit: Duration,
) -> Result<(usize, Grant), String> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        for (index, holder) in holders.iter_mut().enumerate() {
            // The latest grant not yet released: the holder holds it now.
            let ops = holder.reported()?;
            let since_release = ops.iter().rev().take_while(|op| op.op != "release");
            if let Some(grant) = since_release.filter_map(Grant::of).next() {
                return Ok((index, grant));
            }
        }
        tokio::time::sleep(POLL).await;
    }
    Err(format!(
        "no holder process was granted the lock within {limit:?}"
    ))
}

/// The puts with `token` that `holder` sent from `since_ms` on, until it
/// releases that hold or `limit` passes.
async fn late_puts(
    holder: &mut HolderProcess,
    token: u64,
    since_ms: u64,
    limit: Duration,
) -> Result<Vec<OpRecord>, String> {
    let until = Instant::now() + limit;
    let with_token = |op: &OpRecord| field(&op.args, "token") == Some(&token.to_string());
    let mut late = Vec::new();
    while Instant::now() < until {
        for op in holder.reported()? {
            if op.op == "put" && with_token(&op) && op.invoked_ms >= since_ms {
                late.push(op.clone());
            }
            if op.op == "release" && with_token(&op) {
                return Ok(late);
            }
        }
        tokio::time::sleep(POLL).await;
    }
    Err(format!(
        "{} did not end its hold of token {token} within {limit:?} of SIGCONT",
        holder.name()
    ))
}
