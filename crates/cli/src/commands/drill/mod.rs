//! `leasehold drill`: rehearses the stale-owner incidents against a
//! deployment (`--endpoints`) or a throwaway local cluster (`--local`), and
//! says, per drill, PASS or FAIL with what it measured and the bound it
//! checked. The drills are the "prove the fix" lists of the stale-lock
//! runbooks (seed 001: a holder SIGKILLed, paused, partitioned, its wall
//! clock stepped, its lock force-released, the lock re-acquired after it is
//! gone; seed 003: renewal stops when the work ends, a release to a
//! near-miss key fails loudly and `diagnose` names it, a lock abandoned
//! passes on within its ttl).
//!
//! Holders are separate processes (`worker.rs`, the hidden `drill-worker`
//! subcommand of this same binary) so they can be killed and paused; the
//! drill reads their event lines (`process.rs`). The protected resource is
//! the built-in fenced store (`store.rs`). Every lock and key lives under
//! `--prefix` and a name unique to the run, so a run never meets another's
//! state. One file per drill; [`Ctx`] (`ctx.rs`) is what they share;
//! `report.rs` prints the outcomes. Exit 0 only if no drill failed
//! (`Exit::DrillFailed` otherwise).

mod abandoned;
mod ctx;
mod force_released;
mod killed;
mod local;
mod near_miss;
mod partitioned;
mod paused;
mod process;
mod reacquire;
mod renewal_stops;
mod report;
mod store;
mod wall_step;
pub mod worker;

use super::Global;
use crate::duration;
use crate::error::CliError;
use crate::exit::Exit;
use crate::output::print_json;
use ctx::Ctx;
use report::Outcome;
use serde_json::Value;
use std::time::Duration;
use worker::Fault;

/// Bound on one drill, whatever it waits for.
const DRILL_TIME_MAX: Duration = Duration::from_secs(90);

/// `leasehold drill`
#[derive(clap::Args, Debug)]
pub struct DrillArgs {
    /// Start a throwaway local cluster (in a temporary directory, removed
    /// afterwards) instead of using --endpoints.
    #[arg(long)]
    pub local: bool,
    /// Nodes of the --local cluster.
    #[arg(long, default_value_t = 3, requires = "local", value_name = "N")]
    pub nodes: u64,
    /// Name prefix of the drill's locks and fenced-store keys.
    #[arg(long, default_value = "drill/")]
    pub prefix: String,
    /// Run only these drills, comma-separated: killed, paused, partitioned,
    /// wall-step, force-released, reacquire, renewal-stops, near-miss,
    /// abandoned.
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub only: Vec<String>,
    /// Lease ttl of the drill's holders (short, so the run is quick).
    #[arg(long, default_value = "2s", value_parser = duration::ttl, value_name = "DURATION")]
    pub ttl: Duration,
    /// Allowance on top of each promised latency: timers, the commit, the
    /// scheduler of a busy machine.
    #[arg(long, default_value = "1s", value_parser = duration::parse, value_name = "DURATION")]
    pub slack: Duration,
    /// Print one JSON array: per drill `drill`, `pass`, `measured`, ...
    #[arg(long)]
    pub json: bool,
    /// Test only: plant this bug in every worker, to see drills fail.
    #[arg(long, hide = true, value_enum)]
    pub worker_fault: Option<Fault>,
}

/// The drills, in the order they run: name and what each proves.
const DRILLS: [(&str, &str); 9] = [
    (killed::NAME, killed::CLAIM),
    (paused::NAME, paused::CLAIM),
    (partitioned::NAME, partitioned::CLAIM),
    (wall_step::NAME, wall_step::CLAIM),
    (force_released::NAME, force_released::CLAIM),
    (reacquire::NAME, reacquire::CLAIM),
    (renewal_stops::NAME, renewal_stops::CLAIM),
    (near_miss::NAME, near_miss::CLAIM),
    (abandoned::NAME, abandoned::CLAIM),
];

/// Runs the drills; returns the exit code (0, or `DrillFailed`).
pub async fn run(args: DrillArgs, global: &Global) -> Result<u8, CliError> {
    let chosen = chosen(&args.only)?;
    let ctx = Ctx::new(&args, global).await?;
    let mut outcomes = Vec::new();
    for (name, claim) in chosen {
        let outcome = run_one(&ctx, name, claim).await;
        if !args.json {
            print!("{}", outcome.human());
        }
        outcomes.push(outcome);
    }
    ctx.finish();
    if args.json {
        print_json(&Value::Array(
            outcomes.iter().map(Outcome::to_json).collect(),
        ));
    } else {
        println!("{}", report::summary(&outcomes));
    }
    let failed = outcomes.iter().any(Outcome::failed);
    Ok(if failed { Exit::DrillFailed } else { Exit::Ok }.code())
}

/// The drills `--only` names (all without it); an unknown name is a usage
/// error listing the known ones.
fn chosen(only: &[String]) -> Result<Vec<(&'static str, &'static str)>, CliError> {
    let known: Vec<&str> = DRILLS.iter().map(|(name, _)| *name).collect();
    if let Some(unknown) = only.iter().find(|n| !known.contains(&n.as_str())) {
        return Err(CliError::usage(format!(
            "--only: no drill named {unknown:?}; the drills are {}",
            known.join(", ")
        )));
    }
    Ok(DRILLS
        .into_iter()
        .filter(|(name, _)| only.is_empty() || only.iter().any(|n| n == name))
        .collect())
}

/// Runs one drill, bounded by [`DRILL_TIME_MAX`]; its error is its FAIL.
async fn run_one(ctx: &Ctx, name: &'static str, claim: &'static str) -> Outcome {
    let mut outcome = Outcome::new(name, claim);
    let result = tokio::time::timeout(DRILL_TIME_MAX, dispatch(ctx, name, &mut outcome)).await;
    let result = result.unwrap_or_else(|_| {
        Err(format!(
            "did not finish within {} s",
            DRILL_TIME_MAX.as_secs()
        ))
    });
    match result {
        Ok(()) if outcome.failure.is_some() => outcome.pass = None,
        Ok(()) => outcome.pass = Some(true),
        Err(why) => {
            outcome.pass = Some(false);
            outcome.failure = Some(why);
        }
    }
    outcome
}

async fn dispatch(ctx: &Ctx, name: &str, out: &mut Outcome) -> Result<(), String> {
    match name {
        killed::NAME => killed::run(ctx, out).await,
        paused::NAME => paused::run(ctx, out).await,
        partitioned::NAME => partitioned::run(ctx, out).await,
        wall_step::NAME => wall_step::run(ctx, out).await,
        force_released::NAME => force_released::run(ctx, out).await,
        reacquire::NAME => reacquire::run(ctx, out).await,
        renewal_stops::NAME => renewal_stops::run(ctx, out).await,
        near_miss::NAME => near_miss::run(ctx, out).await,
        abandoned::NAME => abandoned::run(ctx, out).await,
        _ => Err(format!("no drill named {name}")),
    }
}

/// `Err(why())` unless `holds`: a drill's checks read as sentences.
fn check(holds: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if holds {
        Ok(())
    } else {
        Err(why())
    }
}

/// Milliseconds of `d`, for measured figures.
fn ms(d: Duration) -> u64 {
    duration::ms(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        drill: DrillArgs,
    }

    #[test]
    fn only_keeps_the_run_order_and_refuses_unknown_names() {
        let names = |only: &[&str]| {
            let only: Vec<String> = only.iter().map(|s| s.to_string()).collect();
            chosen(&only).map(|c| c.into_iter().map(|(n, _)| n).collect::<Vec<_>>())
        };
        assert_eq!(names(&[]).unwrap().len(), DRILLS.len());
        assert_eq!(
            names(&["abandoned", "killed"]).unwrap(),
            ["killed", "abandoned"]
        );
        let error = names(&["kiled"]).unwrap_err();
        assert_eq!(error.exit, Exit::Usage);
        assert!(error.message.contains("kiled"), "{}", error.message);
    }

    #[test]
    fn the_help_of_only_names_every_drill() {
        let help = Cli::command().render_long_help().to_string();
        for (name, _) in DRILLS {
            assert!(help.contains(name), "--only's help lacks {name}: {help}");
        }
    }

    #[test]
    fn an_outcome_in_json_has_drill_pass_and_measured() {
        let mut outcome = Outcome::new("killed", "claim");
        outcome.set("pass_on_ms", 1_900);
        outcome.pass = Some(true);
        let json = outcome.to_json();
        assert_eq!(json["drill"], "killed");
        assert_eq!(json["pass"], true);
        assert_eq!(json["measured"]["pass_on_ms"], 1_900);
        let mut skipped = Outcome::new("wall-step", "claim");
        skipped.skip("no libfaketime");
        assert!(!skipped.failed());
        assert_eq!(skipped.verdict(), "SKIP");
    }
}
