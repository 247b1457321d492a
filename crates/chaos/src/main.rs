//! `leasehold-chaos`: runs a real cluster under a seeded schedule of
//! faults with a recorded workload, checks the history, prints the report
//! (`--json`: one object), and exits 0 only with no violation (1: a
//! violation, 2: bad arguments, 3: the run itself failed; a fault that
//! could not be injected or undone stops the schedule, and what ran before
//! it is still checked and reported). Hidden:
//! `leasehold-chaos holder ...`, one holder process of a run
//! (`holder/`), started by the run itself.

use clap::{Parser, Subcommand};
use leasehold_chaos::fault;
use leasehold_chaos::holder::{self, child::HolderArgs};
use leasehold_chaos::run::{run, RunSpec};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Fault-injection harness for Leasehold: a real cluster on loopback, a
/// seeded schedule of faults, a recorded workload, and a checker.
#[derive(Parser, Debug)]
#[command(name = "leasehold-chaos", version)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Founding members of the cluster.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=7))]
    nodes: u64,
    /// Length of the whole schedule, shared equally by the faults.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Seeds the schedule and the workload (the report names it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Faults in schedule order, comma-separated, or `all` (every fault
    /// except clock-fast-beyond, which breaks the clock bound on purpose).
    #[arg(long, default_value = "all")]
    faults: String,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// Locks they share.
    #[arg(long, default_value_t = 4)]
    locks: usize,
    /// The workers' lease ttl, ms.
    #[arg(long, default_value_t = 2_000)]
    ttl_ms: u64,
    /// How much faster than this process's clock a server's may run: the
    /// documented bound (the client's margin, ttl/10, covers 1/0.9).
    #[arg(long, default_value_t = 1.1)]
    rate_max: f64,
    /// The `leasehold` binary (default: next to this one).
    #[arg(long)]
    leasehold: Option<PathBuf>,
    /// Keep the nodes' data dirs and logs in DIR (created if missing)
    /// instead of a temporary directory removed at the end, and write
    /// every operation there (`history.jsonl`: times, node, arguments,
    /// outcome).
    #[arg(long, value_name = "DIR")]
    keep_dir: Option<PathBuf>,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

/// What a run starts of itself.
#[derive(Subcommand, Debug)]
enum Command {
    /// One holder process of a run (`pause-holder-process`): its
    /// operations as JSON lines on stdout, until stdin closes.
    #[command(name = holder::SUBCOMMAND, hide = true)]
    Holder(HolderArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(Command::Holder(holder_args)) = args.command {
        return match holder::child::run(holder_args).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("leasehold-chaos holder: {message}");
                ExitCode::from(3)
            }
        };
    }
    let spec = match spec(&args) {
        Ok(spec) => spec,
        Err(message) => {
            eprintln!("leasehold-chaos: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&spec).await {
        Ok(outcome) => {
            let report = outcome.report;
            if args.json {
                println!("{}", report.json());
            } else {
                print!("{}", report.text());
            }
            if let Some(failure) = &report.failed {
                eprintln!("leasehold-chaos: the run failed: {failure}");
                return ExitCode::from(3);
            }
            ExitCode::from(u8::from(report.violations() > 0))
        }
        Err(message) => {
            eprintln!("leasehold-chaos: the run failed: {message}");
            ExitCode::from(3)
        }
    }
}

fn spec(args: &Args) -> Result<RunSpec, String> {
    let binary = match &args.leasehold {
        Some(path) => path.clone(),
        None => std::env::current_exe()
            .map_err(|e| format!("find this binary: {e}"))?
            .with_file_name("leasehold"),
    };
    if !binary.is_file() {
        return Err(format!(
            "no leasehold binary at {}: build it (cargo build -p leasehold-cli) or pass --leasehold PATH",
            binary.display()
        ));
    }
    if args.workers == 0 || args.locks == 0 {
        return Err("--workers and --locks must be at least 1".into());
    }
    Ok(RunSpec {
        nodes: args.nodes,
        seconds: args.seconds,
        seed: args.seed,
        faults: fault::parse(&args.faults)?,
        workers: args.workers,
        locks: args.locks,
        ttl: Duration::from_millis(args.ttl_ms),
        rate_max: args.rate_max,
        binary,
        keep_dir: args.keep_dir.clone(),
    })
}
