//! Seed 003, drill 3: a release sent to a near-miss key (`job_1` for
//! `job-1`, as a prefix or separator drift makes it) must fail loudly,
//! naming the real lock, and `leasehold diagnose` must name the near miss
//! (verdict `wrong-key-release`).

use super::check;
use super::ctx::{Ctx, STEP};
use super::report::Outcome;
use leasehold_client::Error;
use serde_json::Value;

/// The drill's name.
pub const NAME: &str = "near-miss";
/// What it proves.
pub const CLAIM: &str =
    "a release to a near-miss key fails loudly, naming the lock, and diagnose names the near miss";

/// The verdict `diagnose` must give the held lock.
const VERDICT: &str = "wrong-key-release";

/// Runs the drill.
pub async fn run(ctx: &Ctx, out: &mut Outcome) -> Result<(), String> {
    let held = format!("{NAME}/job-1");
    let near = ctx.lock_name(&format!("{NAME}/job_1"))?;
    let holding = ctx.acquire(&held, STEP).await?;
    let real = ctx.lock(&held);
    out.bound = format!("release of {near} fails naming {real}; diagnose says {VERDICT}");
    let token = holding.guard.token();
    let released = ctx.client.release(holding.lease.id(), &near, token).await;
    let loud = match &released {
        Err(Error::NoSuchLock { nearby, .. }) => nearby.contains(&real),
        _ => false,
    };
    out.set(
        "release_error",
        released.as_ref().err().map(ToString::to_string),
    );
    let diagnosis = ctx
        .cli(&[
            "diagnose",
            &ctx.lock(&format!("{NAME}/")),
            "--json",
            "--interval=1s",
        ])
        .await?;
    let verdict = verdict_of(&diagnosis, &real);
    out.set("diagnose_verdict", verdict.clone());
    drop(holding);
    check(loud, || {
        format!("the release to {near} did not fail naming {real}: {released:?}")
    })?;
    check(verdict.as_deref() == Some(VERDICT), || {
        format!("diagnose said {verdict:?} about {real}, not {VERDICT}: {diagnosis}")
    })
}

/// The verdict of `lock` in `diagnose --json`'s output, if listed.
fn verdict_of(output: &str, lock: &str) -> Option<String> {
    let found: Value = serde_json::from_str(output.trim()).ok()?;
    found
        .as_array()?
        .iter()
        .find(|d| d["lock"] == lock)
        .and_then(|d| d["verdict"].as_str())
        .map(str::to_owned)
}
