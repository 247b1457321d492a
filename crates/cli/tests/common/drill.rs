//! The parts of the client drills (`t70_client_drills.rs`) that run real
//! client *processes* without a binary target of their own:
//!
//! - [`resource::Resource`]: the fenced resource, inside the test process
//!   (`resource.rs`), recording every attempt for the test to assert on.
//! - [`WorkerSpec`] and [`Worker`]: a worker is the test binary itself,
//!   re-executed to run only its ignored `drill_worker_process` test, which
//!   reads its role from `LEASEHOLD_DRILL*` variables. The test talks to it
//!   through its stdout, one `DRILL <KIND> ...` line per event (the marker
//!   tells them apart from libtest's own chatter on the same stream), and
//!   releases its one pause point with a line on its stdin.
//! - [`PostgresTable`]: the other fenced resource (`t75_fenced_postgres_drill`),
//!   a real PostgreSQL table the workers insert into through
//!   `leasehold_fence::postgres::fenced_transaction`. Set it in
//!   [`WorkerSpec::postgres`] and the writing modes write there instead.
//!
//! What a worker does inside its process is in `t70_client_drills.rs`,
//! beside the drills that read what it prints.

use leasehold_client::clock::{BootClock, Clock};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write as _};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The name of the re-executed test that runs a worker.
pub const WORKER_TEST: &str = "drill_worker_process";

/// Set (to `worker`) only in a worker process.
const ENV_ROLE: &str = "LEASEHOLD_DRILL";

/// Marks the protocol lines on a worker's stdout.
pub const MARKER: &str = "DRILL ";

/// Boot-clock time in µs: comparable between the test and its workers
/// (CLOCK_BOOTTIME is one clock for the whole machine).
pub fn boot_us() -> u64 {
    BootClock.now().since_boot().as_micros() as u64
}

pub mod resource;

/// A PostgreSQL table as the fenced resource: each write of a worker
/// inserts one `(writer, token)` row inside
/// `leasehold_fence::postgres::fenced_transaction`, so a stale token rolls
/// the insert back and leaves a row in `leasehold_fence_rejections`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostgresTable {
    /// Where the database is (a libpq-style connection string).
    pub dsn: String,
    /// The table, with columns `writer text` and `token bigint` (and any
    /// others with defaults). Also the fence's resource name, so each test
    /// run's unique table has a fence of its own.
    pub table: String,
}

// ---------------------------------------------------------------------------
// Worker processes, seen from the test.

/// What a worker does once it holds the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Write every 50 ms, each after a `fence()`; at the loss, print `LOST`,
    /// then try one more write with the old token anyway, print the
    /// resource's answer (`STUBBORN`) and exit.
    Stubborn,
    /// Write once, release, print `DONE` and exit.
    Once,
    /// No writes: ask `fence()` every 20 ms (`FENCE_OK`, with the time the
    /// lease has left), print `LOST` when
    /// `fence()` or `lost()` reports the loss, keep asking for 500 ms
    /// (`FENCE_OK_AFTER_LOSS` if one said Ok), print `END` and exit.
    Watch,
}

impl Mode {
    fn as_str(self) -> &'static str {
        match self {
            Mode::Stubborn => "stubborn",
            Mode::Once => "once",
            Mode::Watch => "watch",
        }
    }

    fn parse(text: &str) -> Mode {
        match text {
            "stubborn" => Mode::Stubborn,
            "once" => Mode::Once,
            "watch" => Mode::Watch,
            other => panic!("unknown drill mode {other:?}"),
        }
    }
}

/// A worker's role, passed to it in `LEASEHOLD_DRILL_*` variables.
#[derive(Clone, Debug)]
pub struct WorkerSpec {
    pub mode: Mode,
    /// The server's URL.
    pub endpoint: String,
    /// The lock to hold.
    pub lock: String,
    /// The writer id the resource records.
    pub writer: String,
    /// The fenced resource, for modes that write.
    pub resource: Option<SocketAddr>,
    /// A PostgreSQL table to write to instead of `resource`.
    pub postgres: Option<PostgresTable>,
    /// The lease's ttl.
    pub ttl: Duration,
    /// How long to queue for the lock.
    pub wait: Duration,
    /// Stop after this many accepted writes (`stubborn`), print `AT_GATE`,
    /// and go on only when a line arrives on stdin.
    pub gate_after_writes: Option<u32>,
}

impl WorkerSpec {
    /// A worker of `mode` holding `lock` on `endpoint`, with a 2 s lease.
    pub fn new(mode: Mode, endpoint: &str, lock: &str, writer: &str) -> WorkerSpec {
        WorkerSpec {
            mode,
            endpoint: endpoint.to_owned(),
            lock: lock.to_owned(),
            writer: writer.to_owned(),
            resource: None,
            postgres: None,
            ttl: Duration::from_secs(2),
            wait: Duration::ZERO,
            gate_after_writes: None,
        }
    }

    fn apply_env(&self, cmd: &mut Command) {
        cmd.env(ENV_ROLE, "worker")
            .env("LEASEHOLD_DRILL_MODE", self.mode.as_str())
            .env("LEASEHOLD_DRILL_ENDPOINT", &self.endpoint)
            .env("LEASEHOLD_DRILL_LOCK", &self.lock)
            .env("LEASEHOLD_DRILL_WRITER", &self.writer)
            .env("LEASEHOLD_DRILL_TTL_MS", self.ttl.as_millis().to_string())
            .env("LEASEHOLD_DRILL_WAIT_MS", self.wait.as_millis().to_string());
        if let Some(addr) = self.resource {
            cmd.env("LEASEHOLD_DRILL_RESOURCE", addr.to_string());
        }
        if let Some(writes) = self.gate_after_writes {
            cmd.env("LEASEHOLD_DRILL_GATE_AFTER", writes.to_string());
        }
        if let Some(postgres) = &self.postgres {
            cmd.env("LEASEHOLD_DRILL_POSTGRES_DSN", &postgres.dsn)
                .env("LEASEHOLD_DRILL_POSTGRES_TABLE", &postgres.table);
        }
    }

    /// The spec of this process, if it was started as a worker.
    pub fn from_env() -> Option<WorkerSpec> {
        std::env::var(ENV_ROLE)
            .ok()
            .filter(|role| role == "worker")?;
        let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} unset"));
        let ms = |name: &str| Duration::from_millis(var(name).parse().expect(name));
        let opt = |name: &str| std::env::var(name).ok();
        Some(WorkerSpec {
            mode: Mode::parse(&var("LEASEHOLD_DRILL_MODE")),
            endpoint: var("LEASEHOLD_DRILL_ENDPOINT"),
            lock: var("LEASEHOLD_DRILL_LOCK"),
            writer: var("LEASEHOLD_DRILL_WRITER"),
            resource: opt("LEASEHOLD_DRILL_RESOURCE").map(|a| a.parse().expect("resource")),
            postgres: opt("LEASEHOLD_DRILL_POSTGRES_DSN").map(|dsn| PostgresTable {
                dsn,
                table: var("LEASEHOLD_DRILL_POSTGRES_TABLE"),
            }),
            ttl: ms("LEASEHOLD_DRILL_TTL_MS"),
            wait: ms("LEASEHOLD_DRILL_WAIT_MS"),
            gate_after_writes: opt("LEASEHOLD_DRILL_GATE_AFTER").map(|n| n.parse().expect("gate")),
        })
    }
}

/// One protocol line of a worker: `KIND arg... key=value...`.
#[derive(Clone, Debug)]
pub struct Line {
    /// When the test read it.
    pub at: Instant,
    /// The first word (`HOLDING`, `LOST`, ...).
    pub kind: String,
    /// The words without `=`, in order.
    pub args: Vec<String>,
    /// The `key=value` words.
    pub fields: HashMap<String, String>,
    /// The whole line after the marker.
    pub text: String,
}

impl Line {
    fn parse(text: &str) -> Line {
        let mut words = text.split_whitespace();
        let kind = words.next().unwrap_or_default().to_owned();
        let (mut args, mut fields) = (Vec::new(), HashMap::new());
        for word in words {
            if let Some((key, value)) = word.split_once('=') {
                fields.insert(key.to_owned(), value.to_owned());
            } else {
                args.push(word.to_owned());
            }
        }
        Line {
            at: Instant::now(),
            kind,
            args,
            fields,
            text: text.to_owned(),
        }
    }

    /// The field `key` as a number.
    pub fn u64(&self, key: &str) -> u64 {
        let value = self.fields.get(key);
        let parsed = value.and_then(|v| v.parse().ok());
        parsed.unwrap_or_else(|| panic!("no number {key}= in {:?}", self.text))
    }

    /// The field `key` as text.
    pub fn field(&self, key: &str) -> &str {
        let value = self.fields.get(key);
        value.unwrap_or_else(|| panic!("no {key}= in {:?}", self.text))
    }
}

/// A running worker process. Dropping it kills the process (stopped or
/// not) and, if the test is failing, prints what the worker said.
pub struct Worker {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Line>,
    /// Everything the worker printed, for the failure report.
    transcript: Arc<Mutex<String>>,
}

impl Worker {
    /// Starts a worker: this test binary, running only [`WORKER_TEST`].
    pub fn spawn(name: &str, spec: &WorkerSpec) -> Worker {
        let exe = std::env::current_exe().expect("the test binary");
        let mut cmd = Command::new(exe);
        cmd.args(["--exact", WORKER_TEST, "--nocapture", "--ignored"])
            .arg("--test-threads=1");
        spec.apply_env(&mut cmd);
        let stdin = match spec.gate_after_writes {
            Some(_) => Stdio::piped(),
            None => Stdio::null(),
        };
        let mut child = cmd
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn a worker");
        let transcript = Arc::new(Mutex::new(String::new()));
        let (sender, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("worker stdout");
        let stderr = child.stderr.take().expect("worker stderr");
        let log = transcript.clone();
        std::thread::spawn(move || {
            for text in BufReader::new(stdout).lines().map_while(Result::ok) {
                log.lock()
                    .expect("transcript")
                    .push_str(&format!("{text}\n"));
                if let Some(at) = text.find(MARKER) {
                    let _ = sender.send(Line::parse(&text[at + MARKER.len()..]));
                }
            }
        });
        let log = transcript.clone();
        std::thread::spawn(move || {
            for text in BufReader::new(stderr).lines().map_while(Result::ok) {
                log.lock()
                    .expect("transcript")
                    .push_str(&format!("! {text}\n"));
            }
        });
        Worker {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines,
            transcript,
        }
    }

    /// The process id.
    pub fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// The next protocol line, within `limit`.
    pub fn next_line(&mut self, limit: Duration) -> Line {
        match self.lines.recv_timeout(limit) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                panic!("{}: no line within {limit:?}", self.name)
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().ok();
                panic!(
                    "{}: exited ({status:?}) without the expected line",
                    self.name
                )
            }
        }
    }

    /// The next protocol line, which must be of `kind`.
    pub fn expect(&mut self, kind: &str, limit: Duration) -> Line {
        let line = self.next_line(limit);
        assert_eq!(
            line.kind, kind,
            "{}: unexpected line {:?}",
            self.name, line.text
        );
        line
    }

    /// Sends `signal` to the worker.
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) with a child's pid (not yet reaped: `self.child`
        // is waited for only in `finish` and drop) and a valid signal.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "{}: kill({signal}) failed", self.name);
    }

    /// Whether the kernel reports the process stopped (state `T`).
    pub fn is_stopped(&self) -> bool {
        super::process::is_stopped(self.pid())
    }

    /// Stops the worker with SIGSTOP and waits (within `limit`) until the
    /// kernel reports it stopped; returns when the signal was sent.
    pub fn pause(&self, limit: Duration) -> Instant {
        self.signal(libc::SIGSTOP);
        let stopped_at = Instant::now();
        let what = format!("{} to be stopped", self.name);
        super::wait_for(&what, limit, || self.is_stopped().then_some(()));
        stopped_at
    }

    /// Reads lines (each within `limit`) until `LOST`, passing over
    /// `FENCE_OK`; any other line fails the test.
    pub fn await_lost(&mut self, limit: Duration) -> Line {
        loop {
            let line = self.next_line(limit);
            match line.kind.as_str() {
                "FENCE_OK" => {}
                "LOST" => return line,
                _ => panic!("{}: unexpected line {:?}", self.name, line.text),
            }
        }
    }

    /// Lets a worker waiting at its gate go on.
    pub fn open_gate(&mut self) {
        let stdin = self.stdin.as_mut().expect("a worker with a gate");
        writeln!(stdin, "go").expect("write to the worker's stdin");
    }

    /// Waits for the worker to exit, within `limit`.
    pub fn finish(&mut self, limit: Duration) -> ExitStatus {
        let child = &mut self.child;
        super::wait_for(&format!("{} to exit", self.name), limit, || {
            child.try_wait().expect("try_wait")
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            let transcript = self.transcript.lock().map(|t| t.clone());
            eprintln!(
                "--- {} said ---\n{}",
                self.name,
                transcript.unwrap_or_default()
            );
        }
    }
}
