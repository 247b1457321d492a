//! Seed 001, drill 5: an operator force-releases the lock while its holder
//! is alive and renewing. The holder must hear of it within one renewal
//! interval (plus slack) and its next write, made anyway with the old
//! token, must be refused.

use super::ctx::{boot_us, Ctx, STEP};
use super::report::Outcome;
use super::{check, ms};
use leasehold_client::{ForceRelease, Token};

/// The drill's name.
pub const NAME: &str = "force-released";
/// What it proves.
pub const CLAIM: &str =
    "a lock force-released while its holder lives: the holder hears it within one renewal interval, its next write is refused";

/// Runs the drill.
pub async fn run(ctx: &Ctx, out: &mut Outcome) -> Result<(), String> {
    let (mut worker, held) = ctx.holder("holder", &ctx.spec(NAME, "w1")).await?;
    let bound = held.interval + ctx.slack;
    out.bound = format!(
        "loss heard within one renewal interval {}",
        ctx.plus_slack(held.interval)
    );
    let force = ForceRelease {
        expected_token: Token(held.token),
        reason: "leasehold drill: force release while the holder lives".to_owned(),
        caller: "leasehold-drill".to_owned(),
        allow_unfenced: false,
        revoke_lease: false,
    };
    let started_us = boot_us();
    let name = ctx.lock_name(NAME)?;
    ctx.client
        .force_release(&name, &force)
        .await
        .map_err(|e| format!("the force release failed: {e}"))?;
    let lost = worker.await_lost(bound + STEP, started_us, true).await?;
    let heard = lost.u64("at_us")?.saturating_sub(started_us) / 1_000;
    out.set("heard_after_ms", heard);
    out.set("lost_cause", lost.field("cause"));
    worker.send("go").await?;
    let stale = worker.expect("STALE", STEP).await?;
    out.set("next_write", stale.answer());
    check(lost.field("cause") == "released_by_server", || {
        format!(
            "the holder lost the lock for another cause: {:?}",
            lost.text
        )
    })?;
    check(stale.refused(), || {
        format!(
            "the store did not refuse the holder's next write: {:?}",
            stale.text
        )
    })?;
    check(heard <= ms(bound), || {
        format!("the holder heard of the force release {heard} ms after it")
    })
}
