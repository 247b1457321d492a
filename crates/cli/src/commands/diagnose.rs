//! `leasehold diagnose [PREFIX] [--interval D] [--json]`: the stale-lock
//! runbook as one command. Lists the locks twice, an interval apart (by
//! default one renewal interval of the longest lease seen, ttl/3, at least
//! 1 s and at most a minute), reads the server's memory of failed releases,
//! checks each owner's process on this host and the server's wall clock
//! against ours, and prints a verdict per lock with the evidence behind it
//! (the verdicts themselves are the client library's `diagnose`, shared by
//! every client). It exits 8 (`Exit::Unhealthy`) when any verdict is not
//! `healthy`, so it can gate a script; 0 when all are (or none match).

use super::Global;
use crate::duration;
use crate::error::CliError;
use crate::exit::Exit;
use crate::output::print_json;
use leasehold_client::diagnose::{self, Diagnosis, Observed, Thresholds, Verdict};
use leasehold_client::show::approx;
use leasehold_client::wire::{FailedRelease, ListLocksResponse, LockInfo};
use leasehold_client::{owner_process, Client, Consistency};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Shortest default sampling interval.
const INTERVAL_MIN: Duration = Duration::from_secs(1);
/// Longest default sampling interval (pass `--interval` for longer).
const INTERVAL_DEFAULT_MAX: Duration = Duration::from_secs(60);

/// `leasehold diagnose`
#[derive(clap::Args, Debug)]
pub struct DiagnoseArgs {
    /// Only locks whose name starts with this.
    #[arg(default_value = "")]
    pub prefix: String,
    /// Time between the two samples (default: one renewal interval, ttl/3,
    /// of the longest lease seen; at least 1s, at most 1m).
    #[arg(long, value_parser = duration::parse)]
    pub interval: Option<Duration>,
    /// Waiters are starving once queued this many times the holder's ttl.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub starve_ttls: u64,
    /// Wall clocks further apart than this are reported as clock skew.
    #[arg(long, default_value = "1s", value_parser = duration::parse)]
    pub max_skew: Duration,
    /// Print one JSON document: an array of {lock, verdict, evidence, ...}.
    #[arg(long)]
    pub json: bool,
}

/// One `List` and what this host's wall clock said around it.
struct Sample {
    reply: ListLocksResponse,
    /// Server − this host's wall time at the call's midpoint, ms.
    offset_ms: i64,
    /// Half the call's round trip, ms: the offset's uncertainty.
    uncertainty_ms: u64,
    taken: Instant,
}

/// Runs `diagnose`; returns the exit code (0, or 8 if anything is not
/// healthy).
pub async fn run(args: DiagnoseArgs, global: &Global) -> Result<u8, CliError> {
    let limits = Thresholds {
        starve_ttls: args.starve_ttls,
        max_skew_ms: duration::ms(args.max_skew),
        ..Thresholds::default()
    };
    let client = global.client().await?;
    let first = sample(&client, &args.prefix).await?;
    let interval = args
        .interval
        .unwrap_or_else(|| default_interval(&first.reply.locks));
    if !args.json {
        eprintln!(
            "diagnose: {} lock(s) under {:?}; sampling again in {} to tell live renewers from orphans",
            first.reply.locks.len(),
            args.prefix,
            approx(duration::ms(interval))
        );
    }
    tokio::time::sleep(interval).await;
    let second = sample(&client, &args.prefix).await?;
    let incidents = client.incidents().await?;
    let elapsed_ms = duration::ms(second.taken - first.taken);
    let found = verdicts(&first, &second, &incidents.failed_releases, &limits);
    if args.json {
        print_json(&Value::Array(found.iter().map(to_json).collect()));
    } else if found.is_empty() {
        eprintln!("no locks match {:?}", args.prefix);
    } else {
        print!("{}", human(&found, elapsed_ms));
    }
    let unhealthy = found.iter().any(|d| d.verdict != Verdict::Healthy);
    Ok(if unhealthy { Exit::Unhealthy } else { Exit::Ok }.code())
}

/// A verdict per lock of the second sample (compared with the first), and
/// the clock-skew finding from the sample with the smaller uncertainty.
fn verdicts(
    first: &Sample,
    second: &Sample,
    failed: &[FailedRelease],
    limits: &Thresholds,
) -> Vec<Diagnosis> {
    let elapsed_ms = duration::ms(second.taken - first.taken);
    let now_unix_ms = second
        .reply
        .header
        .as_ref()
        .map_or(0, |h| h.server_time_unix_ms);
    let before: HashMap<&str, &LockInfo> = first
        .reply
        .locks
        .iter()
        .map(|lock| (lock.name.as_str(), lock))
        .collect();
    let mut found: Vec<Diagnosis> = second
        .reply
        .locks
        .iter()
        .map(|lock| {
            let seen = Observed {
                first: before.get(lock.name.as_str()).copied(),
                second: lock,
                elapsed_ms,
                now_unix_ms,
            };
            diagnose::classify(&seen, failed, limits, &owner_process)
        })
        .collect();
    let best = [first, second]
        .into_iter()
        .min_by_key(|sample| sample.uncertainty_ms)
        .expect("two samples");
    let node_id = best.reply.header.as_ref().map_or(0, |h| h.node_id);
    found.extend(diagnose::clock_skew(
        best.offset_ms,
        best.uncertainty_ms,
        node_id,
        limits,
    ));
    found
}

/// Lists the locks, noting this host's wall clock around the call.
async fn sample(client: &Client, prefix: &str) -> Result<Sample, CliError> {
    let before = unix_ms_now();
    let reply = client.list_locks(prefix, Consistency::Linearizable).await?;
    let after = unix_ms_now();
    let server = reply.header.as_ref().map_or(0, |h| h.server_time_unix_ms);
    Ok(Sample {
        reply,
        offset_ms: server - (before + after) / 2,
        uncertainty_ms: ((after - before).max(0) / 2) as u64,
        taken: Instant::now(),
    })
}

/// One renewal interval (ttl/3) of the longest lease among `locks`,
/// within [`INTERVAL_MIN`, `INTERVAL_DEFAULT_MAX`].
fn default_interval(locks: &[LockInfo]) -> Duration {
    let longest_ttl_ms = locks
        .iter()
        .filter_map(|l| l.holder.as_ref())
        .map(|h| h.lease_ttl_ms)
        .max()
        .unwrap_or(0);
    Duration::from_millis(longest_ttl_ms / 3).clamp(INTERVAL_MIN, INTERVAL_DEFAULT_MAX)
}

fn unix_ms_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn to_json(d: &Diagnosis) -> Value {
    json!({
        "lock": d.lock,
        "verdict": d.verdict.as_str(),
        "findings": d.findings.iter().map(|f| f.as_str()).collect::<Vec<_>>(),
        "evidence": d.evidence,
        "advice": d.advice,
        "token": d.token,
        "lease": d.lease,
        "owner": d.owner,
    })
}

fn human(found: &[Diagnosis], elapsed_ms: u64) -> String {
    let mut out = format!("sampled twice, {} apart\n", approx(elapsed_ms));
    for d in found {
        let also: Vec<&str> = d.findings[1..].iter().map(|f| f.as_str()).collect();
        out.push_str(&format!(
            "\n{}  {}{}\n",
            d.lock.as_deref().unwrap_or("(server)"),
            d.verdict.as_str().to_uppercase(),
            if also.is_empty() {
                String::new()
            } else {
                format!(" (also: {})", also.join(", "))
            }
        ));
        for fact in &d.evidence {
            out.push_str(&format!("    {fact}\n"));
        }
        if !d.advice.is_empty() {
            out.push_str(&format!("    what to do: {}\n", d.advice));
        }
    }
    out
}
