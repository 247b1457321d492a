//! The drill's side of a worker process (`worker.rs`): spawning the
//! re-executed binary with the drill's connection options, reading its
//! event lines with deadlines, sending it commands, and signalling it. A
//! drill never sleeps "long enough": it awaits a line or a condition,
//! each bounded.

use super::worker::{Fault, WorkerMode};
use crate::supervise::die_with_parent;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Lines of a worker's stderr quoted in a failure's explanation (the
/// first: an error or a panic's message).
const STDERR_LINES_MAX: usize = 4;

/// One event line of a worker: `KIND key=value ...`, and when it was read.
#[derive(Clone, Debug)]
pub struct Line {
    /// The event (`HOLDING`, `WROTE`, `LOST`, ...).
    pub kind: String,
    /// Its `key=value` fields.
    pub fields: HashMap<String, String>,
    /// The whole line, for reports.
    pub text: String,
    /// When the drill read it.
    pub at: Instant,
}

impl Line {
    fn parse(text: String) -> Line {
        let mut words = text.split_whitespace();
        let kind = words.next().unwrap_or_default().to_owned();
        let fields = words
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Line {
            kind,
            fields,
            text,
            at: Instant::now(),
        }
    }

    /// A field, or "" if absent.
    pub fn field(&self, key: &str) -> &str {
        self.fields.get(key).map_or("", String::as_str)
    }

    /// A numeric field, or an error naming the line.
    pub fn u64(&self, key: &str) -> Result<u64, String> {
        self.field(key)
            .parse()
            .map_err(|_| format!("worker line without a number {key}=: {:?}", self.text))
    }

    /// A write line's answer as a measured figure: `accepted`,
    /// `refused: not_holder`, ... (as [`Answer::figure`](super::store::Answer::figure)).
    pub fn answer(&self) -> String {
        match self.field("reason") {
            "" => self.field("result").to_owned(),
            reason => format!("{}: {reason}", self.field("result")),
        }
    }

    /// Whether this is a write the store refused.
    pub fn refused(&self) -> bool {
        self.field("result") == "refused"
    }

    /// Whether this is a write the store accepted.
    pub fn accepted(&self) -> bool {
        self.field("result") == "accepted"
    }
}

/// How to start a worker: what it holds and writes, and how.
#[derive(Clone, Debug)]
pub struct WorkerSpec {
    /// The lock.
    pub lock: String,
    /// The fenced-store key.
    pub key: String,
    /// The writer's name.
    pub writer: String,
    /// Lease ttl.
    pub ttl: Duration,
    /// Queueing time for the lock.
    pub wait: Duration,
    /// What it does once holding.
    pub mode: WorkerMode,
    /// A planted bug, if any.
    pub fault: Option<Fault>,
    /// Endpoints, if not the drill's own (through a proxy).
    pub endpoints: Option<String>,
    /// Extra environment (libfaketime).
    pub env: Vec<(String, String)>,
}

/// A running worker. Dropping it kills the process.
pub struct Worker {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<Line>,
    stderr: mpsc::UnboundedReceiver<String>,
}

impl Worker {
    /// Starts `exe drill-worker ...` with `connection` (the global flags
    /// every client command takes, `spec.endpoints` among them) and `spec`.
    pub fn spawn(
        name: &str,
        exe: &PathBuf,
        connection: &[String],
        spec: &WorkerSpec,
    ) -> Result<Worker, String> {
        let mut cmd = Command::new(exe);
        cmd.args(connection);
        cmd.arg("drill-worker")
            .args(["--lock", &spec.lock, "--store-key", &spec.key])
            .args(["--writer", &spec.writer])
            .arg(format!("--ttl={}ms", spec.ttl.as_millis()))
            .arg(format!("--wait={}ms", spec.wait.as_millis()))
            .arg(format!("--mode={}", mode_flag(spec.mode)));
        if let Some(fault) = spec.fault {
            cmd.arg(format!("--fault={}", fault.as_str()));
        }
        // A worker dies with the drill, however the drill ends: a holder
        // left stopped by SIGSTOP would otherwise stay behind for good.
        // SAFETY: the closure runs in the child between fork and exec;
        // `die_with_parent` makes only async-signal-safe calls (prctl,
        // getppid, raise, _exit) and does not allocate.
        let parent = std::process::id() as libc::pid_t;
        unsafe {
            cmd.pre_exec(move || die_with_parent(parent));
        }
        cmd.envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the worker {}: {e}", exe.display()))?;
        let lines = forward(child.stdout.take(), Line::parse);
        let stderr = forward(child.stderr.take(), |text| text);
        Ok(Worker {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
        })
    }

    /// The process id.
    pub fn pid(&self) -> Option<libc::pid_t> {
        self.child.id().map(|id| id as libc::pid_t)
    }

    /// The next event line, within `limit`.
    pub async fn next(&mut self, limit: Duration) -> Result<Line, String> {
        let received = tokio::time::timeout(limit, self.lines.recv()).await;
        if let Ok(Some(line)) = received {
            return Ok(line);
        }
        let said = self.said();
        Err(match received {
            Ok(_) => format!("{} exited without the expected line{said}", self.name),
            Err(_) => format!(
                "{} said nothing within {} ms{said}",
                self.name,
                limit.as_millis()
            ),
        })
    }

    /// The next line that is not a `WROTE`, within `limit` in all; the
    /// `WROTE` lines passed over are returned with it.
    pub async fn next_event(&mut self, limit: Duration) -> Result<(Line, Vec<Line>), String> {
        let until = Instant::now() + limit;
        let mut writes = Vec::new();
        loop {
            let line = self
                .next(until.saturating_duration_since(Instant::now()))
                .await?;
            if line.kind != "WROTE" {
                return Ok((line, writes));
            }
            writes.push(line);
        }
    }

    /// The next line of `kind` (passing over writes), within `limit`.
    pub async fn expect(&mut self, kind: &str, limit: Duration) -> Result<Line, String> {
        let (line, _) = self.next_event(limit).await?;
        if line.kind == kind {
            Ok(line)
        } else {
            Err(format!(
                "{} said {:?} where {kind} was expected",
                self.name, line.text
            ))
        }
    }

    /// The next accepted write, within `limit`.
    pub async fn accepted_write(&mut self, limit: Duration) -> Result<Line, String> {
        let until = Instant::now() + limit;
        loop {
            let line = self
                .next(until.saturating_duration_since(Instant::now()))
                .await?;
            match line.kind.as_str() {
                "WROTE" if line.accepted() => return Ok(line),
                "WROTE" => {}
                _ => return Err(format!("{} said {:?} before writing", self.name, line.text)),
            }
        }
    }

    /// Reads until the worker reports `LOST`, within `limit` in all, and
    /// returns that line. Writes before it are passed over, unless
    /// `writes_allowed` is false: then a write the worker sent after
    /// `since_us` (boot clock) is an error, as the holder wrote without
    /// noticing its loss (one sent before, answered after, is not).
    pub async fn await_lost(
        &mut self,
        limit: Duration,
        since_us: u64,
        writes_allowed: bool,
    ) -> Result<Line, String> {
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let line = match self.next(left).await {
                Ok(line) => line,
                Err(_) if Instant::now() >= until => {
                    return Err(format!(
                        "{} did not report the loss within {} ms",
                        self.name,
                        limit.as_millis()
                    ))
                }
                Err(other) => return Err(other),
            };
            match line.kind.as_str() {
                "LOST" => return Ok(line),
                "WROTE" if writes_allowed || line.u64("sent_us")? < since_us => {}
                "WROTE" => {
                    return Err(format!(
                        "{} wrote without noticing it had lost the lock: {:?}",
                        self.name, line.text
                    ))
                }
                _ => return Err(format!("{} said {:?} before LOST", self.name, line.text)),
            }
        }
    }

    /// Sends a command line (`go`, `stop`).
    pub async fn send(&mut self, command: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("the worker's stdin is closed")?;
        let line = format!("{command}\n");
        stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("cannot command {}: {e}", self.name))
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: libc::c_int) -> Result<(), String> {
        let pid = self
            .pid()
            .ok_or_else(|| format!("{} has exited", self.name))?;
        // SAFETY: kill(2) on our own child, not yet reaped (`child` is only
        // waited for in `reaped` and on drop), with a valid signal.
        let rc = unsafe { libc::kill(pid, signal) };
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("kill({signal}) of {} failed", self.name))
        }
    }

    /// SIGKILLs the process and waits (within `limit`) until it is reaped:
    /// verifiably gone.
    pub async fn kill(&mut self, limit: Duration) -> Result<Instant, String> {
        self.signal(libc::SIGKILL)?;
        let killed_at = Instant::now();
        tokio::time::timeout(limit, self.child.wait())
            .await
            .map_err(|_| format!("{} was not gone within {limit:?} of SIGKILL", self.name))?
            .map_err(|e| format!("cannot reap {}: {e}", self.name))?;
        Ok(killed_at)
    }

    /// Waits (within `limit`) for the process to exit on its own.
    pub async fn exited(&mut self, limit: Duration) -> Result<(), String> {
        drop(self.stdin.take());
        match tokio::time::timeout(limit, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => {
                let said = self.said();
                Err(format!("{} ended with {status}{said}", self.name))
            }
            Ok(Err(e)) => Err(format!("cannot reap {}: {e}", self.name)),
            Err(_) => Err(format!("{} did not exit within {limit:?}", self.name)),
        }
    }

    /// The first lines of the worker's stderr, for an error message.
    fn said(&mut self) -> String {
        let mut lines = Vec::new();
        while let Ok(line) = self.stderr.try_recv() {
            lines.push(line);
        }
        let tail = &lines[..lines.len().min(STDERR_LINES_MAX)];
        if tail.is_empty() {
            String::new()
        } else {
            format!("; its stderr: {}", tail.join(" | "))
        }
    }
}

/// The `--mode` value of `mode`.
fn mode_flag(mode: WorkerMode) -> &'static str {
    match mode {
        WorkerMode::Write => "write",
        WorkerMode::WorkThenLinger => "work-then-linger",
    }
}

/// Reads `stream` line by line into a channel, each through `parse`.
fn forward<R, T>(stream: Option<R>, parse: fn(String) -> T) -> mpsc::UnboundedReceiver<T>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    T: Send + 'static,
{
    let (send, receive) = mpsc::unbounded_channel();
    if let Some(stream) = stream {
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stream).lines();
            while let Ok(Some(text)) = lines.next_line().await {
                if send.send(parse(text)).is_err() {
                    return;
                }
            }
        });
    }
    receive
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_line_parses_into_kind_and_fields() {
        let line = Line::parse("STALE token=7 n=3 result=refused reason=not_holder".into());
        assert_eq!(line.kind, "STALE");
        assert_eq!(line.u64("token"), Ok(7));
        assert!(line.refused() && !line.accepted());
        assert_eq!(line.answer(), "refused: not_holder");
        assert_eq!(line.field("missing"), "");
        assert!(line.u64("missing").is_err());
    }
}
