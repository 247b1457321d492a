//! Shared helpers of the CLI integration tests: start a real `leasehold
//! serve` on an ephemeral port with a fresh data directory, run client
//! commands against it, and poll for conditions with a deadline (never a
//! fixed sleep: `wait_for`, from the testkit). The server is killed when its handle drops; if the test is
//! failing, its log is printed. [`drill`] holds what the client drills add:
//! worker processes and a fenced resource; [`browser`] runs headless
//! Chromium on the live page.

#![allow(dead_code)]

pub mod browser;
pub mod cluster;
pub mod drill;
pub mod drill_worker;
pub mod process;

pub use leasehold_testkit::{free_port, wait_for};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `leasehold` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_leasehold");

/// Bound on server start-up (election of the single node included).
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Announces a test phase in the output (read with the logs on failure).
pub fn phase(what: &str) {
    eprintln!("phase: {what}");
}

/// The number `key` of a JSON object, or a panic naming what is missing.
pub fn u64_of(value: &Value, key: &str) -> u64 {
    value[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no number {key} in {value}"))
}

/// One finished CLI invocation.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A `leasehold` command with `endpoints` (comma-separated) and `args`,
/// ignoring any `LEASEHOLD_ENDPOINTS` of the test's own environment.
pub fn command_to(endpoints: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--endpoints").arg(endpoints).args(args);
    cmd.env_remove("LEASEHOLD_ENDPOINTS").stdin(Stdio::null());
    cmd
}

/// Starts `command` in the background with its output captured.
pub fn spawn_captured(mut command: Command) -> Child {
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn leasehold")
}

impl Run {
    /// Runs `command` (a `leasehold` invocation with `args`) to completion.
    pub fn of(mut command: Command, args: &[&str]) -> Run {
        let out = command.output().expect("run leasehold");
        Run::from_output(args, out)
    }

    fn from_output(args: &[&str], out: Output) -> Run {
        let run = Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        let shown: Vec<String> = args.iter().map(|a| abbreviate(a)).collect();
        eprintln!("$ leasehold {} -> exit {}", shown.join(" "), run.code);
        if !run.stderr.is_empty() {
            eprintln!("  stderr: {}", abbreviate(run.stderr.trim()));
        }
        run
    }

    /// Stdout as exactly one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {:?}", self.stdout))
    }

    /// Asserts the exit code, showing the output if it differs.
    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(self.code, code, "unexpected exit code; {self:?}");
        self
    }
}

fn abbreviate(text: &str) -> String {
    if text.len() > 200 {
        let cut = (0..=200)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        format!("{}...({} bytes)", &text[..cut], text.len())
    } else {
        text.to_owned()
    }
}

/// Every decimal number in `text` (to check that a message names a token
/// without matching a digit inside another number).
pub fn numbers(text: &str) -> Vec<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// A running `leasehold serve`.
pub struct Server {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its data directory.
    pub data_dir: PathBuf,
    /// Where its stderr goes.
    log: PathBuf,
    /// Owns the data directory when the server made it.
    _data: Option<tempfile::TempDir>,
    /// Owns the log directory.
    _logs: tempfile::TempDir,
    /// `https` for a TLS server ([`start_tls`](Self::start_tls)), else `http`.
    scheme: &'static str,
    /// The environment of commands aimed at it (`LEASEHOLD_CACERT`, ...).
    client_env: Vec<(String, String)>,
}

impl Server {
    /// Starts a server on a free port with a fresh data directory.
    pub fn start() -> Server {
        Server::start_with_env(&[])
    }

    /// Starts a server on a free port with a fresh data directory and
    /// these extra environment variables.
    pub fn start_with_env(env: &[(&str, &str)]) -> Server {
        let data = tempfile::tempdir().expect("tempdir");
        let mut server = Server::launch(data.path(), free_port(), env);
        server._data = Some(data);
        server
    }

    /// Starts a server on `port` with the data directory `data_dir` (which
    /// may hold the state of an earlier run), and waits until it answers.
    pub fn start_in(data_dir: &Path, port: u16) -> Server {
        Server::launch(data_dir, port, &[])
    }

    /// [`start_in`](Self::start_in) with extra environment variables.
    pub fn start_in_with_env(data_dir: &Path, port: u16, env: &[(&str, &str)]) -> Server {
        Server::launch(data_dir, port, env)
    }

    /// Starts a TLS server (`serve_args`: `--tls-cert FILE ...`) on a free
    /// port with a fresh data directory; its commands get `client_env`
    /// (`LEASEHOLD_CACERT`, `LEASEHOLD_CERT`, `LEASEHOLD_KEY`).
    pub fn start_tls(serve_args: &[String], client_env: &[(&str, String)]) -> Server {
        let data = tempfile::tempdir().expect("tempdir");
        let client_env = client_env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        let mut server = Server::spawn_serve(data.path(), free_port(), &[], serve_args);
        server.scheme = "https";
        server.client_env = client_env;
        server._data = Some(data);
        server.await_ready();
        server
    }

    fn launch(data_dir: &Path, port: u16, env: &[(&str, &str)]) -> Server {
        let mut server = Server::spawn_serve(data_dir, port, env, &[]);
        server.await_ready();
        server
    }

    fn spawn_serve(data_dir: &Path, port: u16, env: &[(&str, &str)], args: &[String]) -> Server {
        let logs = tempfile::tempdir().expect("tempdir");
        let log = logs.path().join("server.log");
        let log_file = std::fs::File::create(&log).expect("create log");
        let listen = format!("127.0.0.1:{port}");
        let child = Command::new(BIN)
            .args(["serve", "--listen", &listen, "--data-dir"])
            .arg(data_dir)
            .args(args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("spawn leasehold serve");
        Server {
            child: Some(child),
            port,
            data_dir: data_dir.to_owned(),
            log,
            _data: None,
            _logs: logs,
            scheme: "http",
            client_env: Vec::new(),
        }
    }

    fn await_ready(&mut self) {
        let started = Instant::now();
        wait_for(
            "the server to answer status with a leader",
            START_TIMEOUT,
            || {
                if let Some(exit) = self
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten())
                {
                    panic!(
                        "leasehold serve exited early ({exit}); log:\n{}",
                        self.log_text()
                    );
                }
                let out = self
                    .command(&["--timeout", "1s", "status", "--json"])
                    .output()
                    .ok()?;
                if !out.status.success() {
                    return None;
                }
                let status: Value = serde_json::from_slice(&out.stdout).ok()?;
                (status["leader"].as_u64().unwrap_or(0) != 0).then_some(())
            },
        );
        eprintln!(
            "server on port {} ready after {:?}",
            self.port,
            started.elapsed()
        );
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("{}://127.0.0.1:{}", self.scheme, self.port)
    }

    /// A `leasehold` command aimed at this server.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = command_to(&self.endpoint(), args);
        command.envs(self.client_env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Runs a command to completion.
    pub fn cli(&self, args: &[&str]) -> Run {
        Run::of(self.command(args), args)
    }

    /// Runs a command that must exit 0 and print one JSON document.
    pub fn ok_json(&self, args: &[&str]) -> Value {
        self.cli(args).expect_code(0).json()
    }

    /// Starts a command in the background with its output captured.
    pub fn spawn(&self, args: &[&str]) -> Child {
        spawn_captured(self.command(args))
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server running").id()
    }

    /// Sends `signal` to the server process (SIGSTOP freezes it with its
    /// connections open, as a hung host would).
    pub fn signal(&self, signal: i32) {
        let pid = self.pid() as i32;
        assert_eq!(
            unsafe { libc::kill(pid, signal) },
            0,
            "kill({pid}, {signal})"
        );
    }

    /// Kills the server with SIGKILL (no shutdown path runs) and reaps it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits up to `limit` for the server to exit by itself; its exit
    /// status (None if it is still running).
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = child.try_wait().ok().flatten() {
                self.child = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// The server's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            let log = self.log_text();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            eprintln!("--- server log (last 60 lines) ---");
            for line in tail.into_iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

/// Waits for a background command to finish, bounded by `limit`.
pub fn finish(mut child: Child, what: &str, limit: Duration) -> Run {
    wait_for(what, limit, || child.try_wait().ok().flatten());
    let out = child.wait_with_output().expect("collect output");
    Run::from_output(&[what], out)
}

/// The answer (status line, headers, body) to a plain HTTP/1.1 GET of `path` at `addr` (`host:port`).
pub fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the answer");
    answer
}

/// Keeps `count` processes made by `start` running until `refused` (a
/// probe run meanwhile) returns `Some`, for tests that fill a share with
/// long-lived calls: a probe and a process starting at the same moment can
/// take the share from each other, and a process refused that way exits and
/// is started again. Returns the processes (the caller ends them) and what
/// `refused` returned.
pub fn fill_share<T>(
    what: &str,
    limit: Duration,
    count: usize,
    start: impl Fn() -> Child,
    mut refused: impl FnMut() -> Option<T>,
) -> (Vec<Child>, T) {
    let mut running: Vec<Child> = (0..count).map(|_| start()).collect();
    let found = wait_for(what, limit, || {
        for process in &mut running {
            if process.try_wait().expect("a process's state").is_some() {
                *process = start();
            }
        }
        refused()
    });
    (running, found)
}
