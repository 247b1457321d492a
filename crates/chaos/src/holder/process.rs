//! [`HolderProcess`]: the run's side of one holder process. It starts
//! `leasehold-chaos holder` on the run's clock, checks that clock on the
//! first line, hands over the operations the holder reports as they come,
//! signals it (SIGSTOP, SIGCONT), and at the end closes its stdin and
//! takes its history. Every wait is bounded; a holder process is killed
//! (SIGKILL, which also ends a stopped one) whenever its handle is
//! dropped, so a failed run leaves none behind.

use super::child::HolderArgs;
use super::{Report, SUBCOMMAND};
use crate::history::{History, OpRecord};
use crate::recorder::Recorder;
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// Bound on a holder process's first line.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// Lines of a holder's stderr kept to explain its failure.
const STDERR_LINES_MAX: usize = 8;

/// How far (ms) a holder's first reading may lie outside the interval in
/// which the run saw it: the clocks are one, so only rounding.
const CLOCK_SLACK_MS: u64 = 1;

/// One running holder process.
pub struct HolderProcess {
    name: String,
    child: Child,
    /// Closed to tell it to finish.
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<Result<Report, String>>,
    /// A report `reported` met and left for `next` (its history).
    unread: Option<Report>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl HolderProcess {
    /// Starts `exe holder` with `args` (whose `epoch_ns` must be
    /// `recorder`'s) and waits for its first line, checking that its clock
    /// reads as the run's.
    pub async fn spawn(
        exe: &Path,
        args: &HolderArgs,
        recorder: &Recorder,
    ) -> Result<HolderProcess, String> {
        let mut command = Command::new(exe);
        command
            .arg(SUBCOMMAND)
            .arg(format!("--endpoints={}", args.endpoints.join(",")))
            .args(["--lock", &args.lock, "--name", &args.name])
            .arg(format!("--ttl-ms={}", args.ttl_ms))
            .arg(format!("--epoch-ns={}", args.epoch_ns))
            .arg(format!("--lifetime-ms={}", args.lifetime_ms))
            .arg(format!("--parent-pid={}", args.parent_pid))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let spawned_ms = recorder.now_ms();
        let mut child = command
            .spawn()
            .map_err(|e| format!("start holder process {}: {e}", exe.display()))?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let mut holder = HolderProcess {
            name: args.name.clone(),
            stdin: child.stdin.take(),
            lines: forward_reports(child.stdout.take()),
            unread: None,
            child,
            stderr: stderr.clone(),
        };
        keep_stderr(holder.child.stderr.take(), stderr);
        let hello = holder.next(HELLO_TIMEOUT).await?;
        let seen_ms = recorder.now_ms();
        match hello {
            Report::Hello { now_ms }
                if now_ms + CLOCK_SLACK_MS >= spawned_ms && now_ms <= seen_ms + CLOCK_SLACK_MS =>
            {
                Ok(holder)
            }
            other => Err(format!(
                "{} began with {other:?}, not its clock reading between {spawned_ms} and \
                 {seen_ms} ms: its clock is not the run's",
                holder.name
            )),
        }
    }

    /// Its name (`holder-N`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its process id, while it has not been reaped.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The next line it writes, within `limit`.
    pub async fn next(&mut self, limit: Duration) -> Result<Report, String> {
        if let Some(report) = self.unread.take() {
            return Ok(report);
        }
        match tokio::time::timeout(limit, self.lines.recv()).await {
            Ok(Some(report)) => report,
            Ok(None) => Err(format!("{} exited{}", self.name, self.said())),
            Err(_) => Err(format!(
                "{} said nothing for {limit:?}{}",
                self.name,
                self.said()
            )),
        }
    }

    /// Operations it reported so far, without waiting (up to its
    /// history, left for [`HolderProcess::finish`]).
    pub fn reported(&mut self) -> Result<Vec<OpRecord>, String> {
        let mut ops = Vec::new();
        while self.unread.is_none() {
            let Ok(report) = self.lines.try_recv() else {
                break;
            };
            match report? {
                Report::Op(op) => ops.push(op),
                other => self.unread = Some(other),
            }
        }
        Ok(ops)
    }

    /// Sends it `signal` (SIGSTOP, SIGCONT).
    pub fn signal(&self, signal: libc::c_int) -> Result<(), String> {
        let pid = self
            .pid()
            .ok_or_else(|| format!("{} has exited", self.name))?;
        // SAFETY: kill(2) on our own child, not yet reaped (it is waited
        // for only in `finish`, which consumes the handle).
        if unsafe { libc::kill(pid as libc::pid_t, signal) } != 0 {
            return Err(format!(
                "signal {signal} to {} (pid {pid}): {}",
                self.name,
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// Closes its stdin: it finishes its current hold and ends.
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Closes its stdin and waits, within `limit`, for its history and its
    /// exit.
    pub async fn finish(mut self, limit: Duration) -> Result<History, String> {
        self.close_stdin();
        let until = tokio::time::Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await? {
                Report::Op(_) => {}
                Report::History(history) => {
                    let exit = tokio::time::timeout(left, self.child.wait()).await;
                    return match exit {
                        Ok(Ok(status)) if status.success() => Ok(history),
                        other => Err(format!(
                            "{} sent its history but exited with {other:?}{}",
                            self.name,
                            self.said()
                        )),
                    };
                }
                other => return Err(format!("{} said {other:?} at its end", self.name)),
            }
        }
    }

    /// Its last stderr lines, as the tail of an error.
    fn said(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.is_empty() {
            String::new()
        } else {
            let joined: Vec<&str> = lines.iter().map(String::as_str).collect();
            format!(": {}", joined.join(" | "))
        }
    }
}

/// Parses each stdout line into a report, in a task of its own.
fn forward_reports(
    stdout: Option<impl AsyncRead + Unpin + Send + 'static>,
) -> mpsc::UnboundedReceiver<Result<Report, String>> {
    let (sender, receiver) = mpsc::unbounded_channel();
    if let Some(stdout) = stdout {
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if sender.send(Report::parse(&line)).is_err() {
                    return;
                }
            }
        });
    }
    receiver
}

/// Keeps the last lines of stderr, in a task of its own.
fn keep_stderr(
    stderr: Option<impl AsyncRead + Unpin + Send + 'static>,
    kept: Arc<Mutex<VecDeque<String>>>,
) {
    let Some(stderr) = stderr else { return };
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() == STDERR_LINES_MAX {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    });
}
