//! Seed 003, drills 1 and 2: renewal stops when the work ends. The holder
//! writes, releases and lets its lease go, then lives on (as a service
//! that moves on to other work). Sampled from outside, its lease must not
//! be renewed later than one renewal interval (plus slack) after the work
//! ended, and must end by itself within the ttl (plus slack): no stray
//! renewer keeps it alive.

use super::ctx::{Ctx, STEP};
use super::report::Outcome;
use super::worker::WorkerMode;
use super::{check, ms};
use leasehold_client::{Error, LeaseId};
use std::time::Duration;
use tokio::time::Instant;

/// The drill's name.
pub const NAME: &str = "renewal-stops";
/// What it proves.
pub const CLAIM: &str =
    "when the work ends, renewal stops within one interval and the lease ends by itself";

/// Time between two samples of the lease.
const POLL_EVERY: Duration = Duration::from_millis(50);
/// A rise of the lease's time left by more than this is a renewal (between
/// samples it only falls).
const RENEWAL_RISE_MS: u64 = 50;

/// What sampling the lease after the work saw.
struct Seen {
    /// When a renewal was last seen.
    last_renewal: Option<Instant>,
    /// When the lease was first found gone.
    gone: Option<Instant>,
}

/// Runs the drill.
pub async fn run(ctx: &Ctx, out: &mut Outcome) -> Result<(), String> {
    let mut spec = ctx.spec(NAME, "w1");
    spec.mode = WorkerMode::WorkThenLinger;
    let (mut worker, held) = ctx.holder("holder", &spec).await?;
    let renew_bound = held.interval + ctx.slack;
    let end_bound = held.ttl + ctx.slack;
    out.bound = format!(
        "no renewal later than one interval {} after the work; lease gone within ttl {}",
        ctx.plus_slack(held.interval),
        ctx.plus_slack(held.ttl)
    );
    let done = worker.expect("WORK_DONE", STEP).await?;
    let seen = sample(
        ctx,
        LeaseId(held.lease),
        done.at + end_bound + held.interval,
    )
    .await?;
    worker.send("stop").await?;
    worker.exited(STEP).await?;
    let renewed = seen.last_renewal.map(|at| at - done.at);
    let gone = seen.gone.map(|at| at - done.at);
    out.set("last_renewal_after_work_ms", renewed.map(ms));
    out.set("lease_gone_after_work_ms", gone.map(ms));
    check(renewed.is_none_or(|after| after <= renew_bound), || {
        format!(
            "the lease was still renewed {} ms after the work ended",
            renewed.map_or(0, ms)
        )
    })?;
    check(gone.is_some_and(|after| after <= end_bound), || {
        format!(
            "the lease was still there {} ms after the work ended",
            ms(end_bound + held.interval)
        )
    })
}

/// Samples `lease` until it is gone or `until`.
async fn sample(ctx: &Ctx, lease: LeaseId, until: Instant) -> Result<Seen, String> {
    let mut seen = Seen {
        last_renewal: None,
        gone: None,
    };
    let mut remaining_before: Option<u64> = None;
    while Instant::now() < until {
        match ctx.client.lease_info(lease).await {
            Ok(info) => {
                if remaining_before.is_some_and(|r| info.remaining_ms > r + RENEWAL_RISE_MS) {
                    seen.last_renewal = Some(Instant::now());
                }
                remaining_before = Some(info.remaining_ms);
            }
            Err(Error::LeaseNotFound { .. } | Error::LeaseExpired { .. }) => {
                seen.gone = Some(Instant::now());
                break;
            }
            Err(error) => return Err(format!("cannot read lease {lease}: {error}")),
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
    Ok(seen)
}
