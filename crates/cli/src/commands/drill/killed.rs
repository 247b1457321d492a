//! Seed 001, drill 1: the holder is SIGKILLed in the middle of its
//! section. The lock must pass on within the ttl (plus slack) of the kill,
//! to a higher token, and the store must refuse the dead holder's token
//! afterwards.

use super::ctx::{Ctx, STEP};
use super::report::Outcome;
use super::store::Answer;
use super::{check, ms};

/// The drill's name.
pub const NAME: &str = "killed";
/// What it proves.
pub const CLAIM: &str =
    "a holder SIGKILLed mid-section: the lock passes on within its ttl, the dead token is refused";

/// Runs the drill.
pub async fn run(ctx: &Ctx, out: &mut Outcome) -> Result<(), String> {
    let (mut worker, held) = ctx.holder("holder", &ctx.spec(NAME, "w1")).await?;
    let bound = held.ttl + ctx.slack;
    out.bound = format!(
        "passes on within ttl {} of SIGKILL",
        ctx.plus_slack(held.ttl)
    );
    out.set("dead_token", held.token);
    let killed_at = worker.kill(STEP).await?;
    let next = ctx.acquire(NAME, bound + STEP).await?;
    let pass_on = next.at - killed_at;
    let new_token = next.guard.token().0;
    out.set("pass_on_ms", ms(pass_on));
    out.set("new_token", new_token);
    let stale = ctx.write(NAME, held.token).await?;
    out.set("dead_token_write", stale.figure());
    check(new_token > held.token, || {
        format!(
            "the new token {new_token} is not above the dead holder's {}",
            held.token
        )
    })?;
    check(matches!(stale, Answer::Refused(_)), || {
        format!("the store did not refuse the dead holder's token: {stale}")
    })?;
    check(pass_on <= bound, || {
        format!("the lock passed on {} ms after SIGKILL", ms(pass_on))
    })
}
