//! Seed 001, drill 2: a stop-the-world pause longer than the lease. The
//! holder is SIGSTOPped; the lock passes to the drill (a higher token),
//! which writes; after SIGCONT the holder must learn of its loss before it
//! writes, and the store must refuse the write it makes anyway with its old
//! token.

use super::ctx::{boot_us, Ctx, STEP};
use super::report::Outcome;
use super::store::Answer;
use super::{check, ms};
use crate::supervise::process_stopped;
use std::time::Duration;
use tokio::time::Instant;

/// The drill's name.
pub const NAME: &str = "paused";
/// What it proves.
pub const CLAIM: &str =
    "a holder paused past its ttl loses the lock; after resuming it notices before writing, and its stale write is refused";

/// Time between two looks at whether the holder has stopped.
const POLL_EVERY: Duration = Duration::from_millis(10);

/// Runs the drill.
pub async fn run(ctx: &Ctx, out: &mut Outcome) -> Result<(), String> {
    let (mut worker, held) = ctx.holder("holder", &ctx.spec(NAME, "w1")).await?;
    let bound = held.ttl + ctx.slack;
    out.bound = format!("lock passes on within ttl {} of SIGSTOP; no write sent after resuming before the loss is seen", ctx.plus_slack(held.ttl));
    out.set("old_token", held.token);
    worker.signal(libc::SIGSTOP)?;
    let stopped_at = Instant::now();
    stopped(worker.pid(), STEP).await?;
    let next = ctx.acquire(NAME, bound + STEP).await?;
    let new_token = next.guard.token().0;
    let pass_on = next.at - stopped_at;
    out.set("pass_on_ms", ms(pass_on));
    out.set("new_token", new_token);
    let written = ctx.write(NAME, new_token).await?;
    check(written == Answer::Accepted, || {
        format!("the new holder's write was not accepted: {written}")
    })?;
    // The pause itself: a deliberate length, past the ttl.
    tokio::time::sleep_until(stopped_at + held.ttl + held.interval).await;
    let resumed_us = boot_us();
    worker.signal(libc::SIGCONT)?;
    out.set("paused_ms", ms(stopped_at.elapsed()));
    let lost = worker.await_lost(STEP, resumed_us, false).await?;
    out.set("lost_cause", lost.field("cause"));
    out.set(
        "lost_after_resume_ms",
        lost.u64("at_us")?.saturating_sub(resumed_us) / 1_000,
    );
    worker.send("go").await?;
    let stale = worker.expect("STALE", STEP).await?;
    out.set("stale_write", stale.answer());
    drop(next);
    check(new_token > held.token, || {
        format!(
            "the new token {new_token} is not above the paused holder's {}",
            held.token
        )
    })?;
    check(stale.refused(), || {
        format!("the store did not refuse the stale write: {:?}", stale.text)
    })?;
    check(pass_on <= bound, || {
        format!("the lock passed on {} ms after SIGSTOP", ms(pass_on))
    })
}

/// Waits, within `limit`, until the kernel reports `pid` stopped.
async fn stopped(pid: Option<libc::pid_t>, limit: Duration) -> Result<(), String> {
    let pid = pid.ok_or("the holder exited before its pause")?;
    let wait = async {
        while !process_stopped(pid) {
            tokio::time::sleep(POLL_EVERY).await;
        }
    };
    tokio::time::timeout(limit, wait)
        .await
        .map_err(|_| format!("the holder was not stopped within {limit:?} of SIGSTOP"))
}
