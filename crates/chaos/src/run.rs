//! One run of the harness: a cluster, the workload, the schedule of fault
//! windows drawn from the seed, a final audit once everything is healed,
//! then the checker over the whole history and the report per window.

use crate::check::{self, Violation};
use crate::cluster::{Cluster, ClusterSpec};
use crate::fault::Window;
use crate::history::History;
use crate::liveness;
use crate::recorder::Recorder;
use crate::report::{Report, WindowReport};
use crate::workload::ops::Ops;
use crate::workload::{Workload, WorkloadSpec};
use leasehold_server::storage::POWER_LOSS_ENV;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::path::PathBuf;
use std::time::Duration;

/// What to run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// Founding members (3 or 5).
    pub nodes: u64,
    /// The whole schedule's length; each fault gets an equal share.
    pub seconds: u64,
    /// Seeds the targets of the faults and every worker's choices.
    pub seed: u64,
    /// Faults, in schedule order (see [`crate::fault::ALL`]).
    pub faults: Vec<String>,
    /// Concurrent clients and the locks they share.
    pub workers: usize,
    pub locks: usize,
    /// The workers' lease ttl.
    pub ttl: Duration,
    /// How much faster than the recorder's a server's clock may run.
    pub rate_max: f64,
    /// The `leasehold` binary.
    pub binary: PathBuf,
    /// Where the nodes' data dirs and logs go, kept after the run (for
    /// diagnosing a violation); `None`: a temporary directory, removed.
    pub keep_dir: Option<PathBuf>,
}

/// What a run found, and the history it found it in.
pub struct Outcome {
    pub report: Report,
    pub history: History,
}

/// Share of a window the fault is held (the rest is recovery).
const HOLD_SHARE: f64 = 0.6;

/// Runs the schedule and checks it.
pub async fn run(spec: &RunSpec) -> Result<Outcome, String> {
    let temporary = tempfile::tempdir().map_err(|e| format!("a temporary directory: {e}"))?;
    let dir = spec.keep_dir.as_deref().unwrap_or(temporary.path());
    let mut cluster = Cluster::start(ClusterSpec {
        nodes: spec.nodes,
        binary: spec.binary.clone(),
        dir: dir.to_path_buf(),
        serve_args: Vec::new(),
        // The power-cut model, for the power-loss faults (test-only hook).
        env: vec![(POWER_LOSS_ENV.to_owned(), "1".to_owned())],
    })
    .await?;
    let recorder = Recorder::new();
    let workload_spec = WorkloadSpec {
        workers: spec.workers,
        locks: spec.locks,
        ttl: spec.ttl,
        seed: spec.seed,
        prefix: "chaos/".into(),
    };
    let workload = Workload::start(workload_spec, cluster.endpoints(), recorder.clone()).await?;
    let auditor = Ops {
        client: cluster.client().await?,
        recorder: recorder.clone(),
    };
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let share = Duration::from_secs(spec.seconds) / spec.faults.len().max(1) as u32;
    let mut windows = Vec::new();
    let mut failed = None;
    for fault in &spec.faults {
        let from_ms = recorder.now_ms();
        let mut window = Window {
            cluster: &mut cluster,
            workload: &workload,
            recorder: &recorder,
            rng: &mut rng,
            hold: share.mul_f64(HOLD_SHARE),
        };
        let detail = match window.run(fault).await {
            Ok(detail) => detail,
            Err(e) => {
                // The schedule stops here, but what ran is still checked
                // and reported: an hour's history is not thrown away.
                let failure = format!("fault {fault}: {e}");
                windows.push((fault.clone(), failure.clone(), from_ms, recorder.now_ms()));
                failed = Some(failure);
                break;
            }
        };
        let rest = share.saturating_sub(Duration::from_millis(recorder.now_ms() - from_ms));
        tokio::time::sleep(rest).await;
        auditor.list_leases().await;
        windows.push((fault.clone(), detail, from_ms, recorder.now_ms()));
    }
    let locks = workload.locks().to_vec();
    workload.stop().await;
    audit(&auditor, &locks).await;
    if let Some(last) = windows.last_mut() {
        last.3 = recorder.now_ms() + 1;
    }
    let history = recorder.history();
    if let Some(dir) = &spec.keep_dir {
        write_op_log(&dir.join(OP_LOG), &history)?;
    }
    Ok(Outcome {
        report: Report {
            failed,
            ..report(spec, &recorder, &history, windows)
        },
        history,
    })
}

/// The file, in `--keep-dir`, of every operation as one JSON object a line.
pub const OP_LOG: &str = "history.jsonl";

/// Writes the run's operations to `path`, one JSON object a line.
fn write_op_log(path: &std::path::Path, history: &History) -> Result<(), String> {
    let mut lines = String::new();
    for op in &history.ops {
        let line = serde_json::to_string(op).map_err(|e| format!("encode an operation: {e}"))?;
        lines.push_str(&line);
        lines.push('\n');
    }
    std::fs::write(path, lines).map_err(|e| format!("write {}: {e}", path.display()))
}

/// After the last window, with everything healed: read every lock and key.
async fn audit(auditor: &Ops, locks: &[leasehold_client::LockName]) {
    for lock in locks {
        auditor.get(lock).await;
        auditor.read(lock).await;
    }
    auditor.list_leases().await;
}

fn report(
    spec: &RunSpec,
    recorder: &Recorder,
    history: &History,
    windows: Vec<(String, String, u64, u64)>,
) -> Report {
    let mut violations = check::all(history, spec.rate_max);
    let windows = windows
        .into_iter()
        .map(|(fault, detail, from_ms, to_ms)| {
            let (mine, rest) = violations
                .drain(..)
                .partition(|v| (..to_ms).contains(&at_ms(v, history)));
            violations = rest;
            WindowReport {
                fault,
                detail,
                from_ms,
                to_ms,
                ops: recorder.ops_between(from_ms, to_ms),
                violations: mine,
                liveness: liveness::of_window(history, from_ms, to_ms),
            }
        })
        .collect();
    Report {
        seed: spec.seed,
        nodes: spec.nodes,
        windows,
        failed: None,
    }
}

/// When a violation happened (the later operation of its evidence), to
/// tell which window it belongs to.
fn at_ms(violation: &Violation, history: &History) -> u64 {
    let hold = |lock: &str, token: u64| {
        let holds = history
            .holds
            .iter()
            .filter(|h| h.lock == lock && h.token == token);
        holds.map(|h| h.acquire_completed_ms).max().unwrap_or(0)
    };
    let put = |key: &str, token: u64| {
        let puts = history
            .puts
            .iter()
            .filter(|p| p.key == key && p.token == token);
        puts.map(|p| p.completed_ms).max().unwrap_or(0)
    };
    match violation {
        Violation::DuplicateToken { lock, token, .. } => hold(lock, *token),
        Violation::TokenOrder { lock, later, .. } => hold(lock, *later),
        Violation::EarlyGrant { granted_ms, .. } => *granted_ms,
        Violation::VersionRegressed { key, later, .. } => put(key, *later),
        Violation::FalseRefusal { key, token } => put(key, *token),
        Violation::PhantomRead { key, token, .. } => {
            let reads = history
                .reads
                .iter()
                .filter(|r| r.key == *key && r.observed.as_ref().is_some_and(|(t, _)| t == token));
            reads.map(|r| r.completed_ms).max().unwrap_or(0)
        }
        Violation::LostPut { read_ms, .. } | Violation::HolderRead { read_ms, .. } => *read_ms,
        Violation::PutByNonHolder { at_ms, .. }
        | Violation::MinorityWrite { at_ms, .. }
        | Violation::OrphanLease { at_ms, .. } => *at_ms,
    }
}
