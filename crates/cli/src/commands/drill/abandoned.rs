//! Seed 003, drill 5: acquisition latency after abandonment. A waiter is
//! already queued when the holder is SIGKILLed (it abandons the lock
//! without releasing); the waiter must get the lock within the ttl (plus
//! slack) of the abandonment, and not before it.

use super::ctx::{Ctx, STEP};
use super::report::Outcome;
use super::{check, ms};
use leasehold_client::Consistency;
use std::time::Duration;

/// The drill's name.
pub const NAME: &str = "abandoned";
/// What it proves.
pub const CLAIM: &str =
    "a lock abandoned by a killed holder reaches the queued waiter within the ttl";

/// Time between two looks at the queue.
const POLL_EVERY: Duration = Duration::from_millis(50);

/// Runs the drill.
pub async fn run(ctx: &Ctx, out: &mut Outcome) -> Result<(), String> {
    let (mut worker, held) = ctx.holder("holder", &ctx.spec(NAME, "w1")).await?;
    let bound = held.ttl + ctx.slack;
    out.bound = format!(
        "the queued waiter gets the lock within ttl {} of the abandonment",
        ctx.plus_slack(held.ttl)
    );
    let acquire = ctx.acquire(NAME, bound + STEP);
    tokio::pin!(acquire);
    tokio::select! {
        got = &mut acquire => {
            let token = got.map(|h| h.guard.token().0);
            return Err(format!("the waiter was answered while the holder lived: {token:?}"));
        }
        queued = tokio::time::timeout(STEP, queued(ctx)) => {
            queued.map_err(|_| "the waiter never showed in the lock's queue".to_owned())??;
        }
    }
    let (next, killed_at) = tokio::join!(&mut acquire, worker.kill(STEP));
    let (next, killed_at) = (next?, killed_at?);
    let latency = next.at.saturating_duration_since(killed_at);
    out.set("abandoned_to_acquired_ms", ms(latency));
    out.set("ttl_ms", ms(held.ttl));
    out.set("new_token", next.guard.token().0);
    check(next.at >= killed_at, || {
        "the waiter got the lock before the holder was killed".to_owned()
    })?;
    check(latency <= bound, || {
        format!("acquired {} ms after the abandonment", ms(latency))
    })
}

/// Returns once `NAME`'s lock has a waiter.
async fn queued(ctx: &Ctx) -> Result<(), String> {
    let name = ctx.lock_name(NAME)?;
    loop {
        let reply = ctx.client.get_lock(&name, Consistency::Linearizable).await;
        let reply = reply.map_err(|e| format!("cannot read the lock's queue: {e}"))?;
        if reply.lock.is_some_and(|lock| !lock.waiters.is_empty()) {
            return Ok(());
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}
