//! Seed 001, drill 6: once the holder is verifiably gone (SIGKILLed and
//! reaped), a new owner process can acquire the lock within one lease, and
//! the store records its newer token.

use super::ctx::{Ctx, START, STEP};
use super::report::Outcome;
use super::{check, ms};
use leasehold_client::{Consistency, FencedKey};

/// The drill's name.
pub const NAME: &str = "reacquire";
/// What it proves.
pub const CLAIM: &str =
    "a new owner acquires within one lease of the old one being gone; the store records its newer token";

/// Runs the drill.
pub async fn run(ctx: &Ctx, out: &mut Outcome) -> Result<(), String> {
    let (mut old, held) = ctx.holder("old owner", &ctx.spec(NAME, "w1")).await?;
    let bound = held.ttl + ctx.slack;
    out.bound = format!(
        "acquired within one lease {} of the old owner being gone",
        ctx.plus_slack(held.ttl)
    );
    out.set("old_token", held.token);
    let gone_at = old.kill(STEP).await?;
    let mut spec = ctx.spec(NAME, "w2");
    spec.wait = bound + STEP;
    let mut new = ctx.spawn("new owner", &spec)?;
    let holding = new.expect("HOLDING", START + bound).await?;
    let new_token = holding.u64("token")?;
    let reacquired = holding.at - gone_at;
    out.set("reacquired_ms", ms(reacquired));
    out.set("new_token", new_token);
    new.accepted_write(STEP).await?;
    let key = FencedKey::parse(&ctx.key(NAME)).map_err(|e| e.to_string())?;
    let stored = ctx.client.fenced_get(&key, Consistency::Linearizable).await;
    let stored = stored.map_err(|e| format!("cannot read the store: {e}"))?;
    let stored_token = stored.map_or(0, |value| value.token.0);
    out.set("store_token", stored_token);
    new.send("stop").await?;
    new.expect("RELEASED", STEP).await?;
    check(new_token > held.token, || {
        format!(
            "the new token {new_token} is not above the old {}",
            held.token
        )
    })?;
    check(stored_token == new_token, || {
        format!("the store's highest token is {stored_token}, not the new owner's {new_token}")
    })?;
    check(reacquired <= bound, || {
        format!(
            "re-acquired {} ms after the old owner was gone",
            ms(reacquired)
        )
    })
}
