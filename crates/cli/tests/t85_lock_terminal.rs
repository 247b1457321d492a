//! `leasehold lock NAME -- CMD` from a terminal: CMD's process group is the
//! terminal's foreground group while it runs, so an interactive command can
//! read the terminal (instead of stopping on SIGTTIN) and the terminal's
//! Ctrl-C reaches it; when it is done the terminal comes back, so whatever
//! ran `lock` can read it again.
//!
//! Each test runs its process as the session leader of a fresh
//! pseudo-terminal (setsid + TIOCSCTTY), in the foreground, as a login
//! shell would, and types into the master side.

mod common;

use common::{wait_for, Server, BIN};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// Bound on anything a test awaits (the lock needs a server round trip).
const PATIENCE: Duration = Duration::from_secs(15);

/// The reading command: one line from the terminal, echoed back.
const READ_A_LINE: &str = "IFS= read -r line; echo got:$line";

/// A pseudo-terminal with a process as the session leader on its slave
/// side; what the session writes is collected from the master side by a
/// thread, so no read here can block without bound.
struct Terminal {
    /// The master side, to type into.
    master: File,
    /// Chunks the reader thread got from the master.
    output: Receiver<Vec<u8>>,
    /// Everything read so far.
    seen: String,
    /// The session leader; its whole session is killed on drop.
    leader: Child,
}

impl Terminal {
    /// Runs `command` as the session leader of a new pseudo-terminal, with
    /// the slave as its stdin, stdout, stderr and controlling terminal.
    fn run(mut command: Command) -> Terminal {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two new descriptors (null name, termios and
        // size are allowed); each then belongs to exactly one File.
        let (master, slave) = unsafe {
            let status = libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            );
            assert_eq!(status, 0, "openpty: {}", std::io::Error::last_os_error());
            (File::from_raw_fd(master), File::from_raw_fd(slave))
        };
        command
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave.try_clone().unwrap());
        // SAFETY: runs between fork and exec; setsid and ioctl are
        // async-signal-safe and nothing allocates. After setsid we lead a new
        // session with no terminal, so TIOCSCTTY makes stdin (the slave) our
        // controlling terminal, with our group in its foreground.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let leader = command.spawn().expect("spawn the session leader");
        // Our copies of the slave must go, or the master never sees EOF.
        drop(command);
        drop(slave);
        let (sender, output) = mpsc::channel();
        let mut reader = master.try_clone().unwrap();
        std::thread::spawn(move || {
            let mut buffer = [0; 4096];
            // Ends with EIO once the session has closed the slave.
            while let Ok(read @ 1..) = reader.read(&mut buffer) {
                if sender.send(buffer[..read].to_vec()).is_err() {
                    break;
                }
            }
        });
        Terminal {
            master,
            output,
            seen: String::new(),
            leader,
        }
    }

    /// Types `text` as a user would.
    fn type_in(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
    }

    /// Waits until the terminal has shown `needle`; fails after
    /// [`PATIENCE`], showing the screen and who was in the foreground.
    fn expect(&mut self, needle: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !self.seen.contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(chunk) => self.seen.push_str(&String::from_utf8_lossy(&chunk)),
                Err(error) => panic!(
                    "the terminal did not show {needle:?} ({error}); it shows {:?}; \
                     session leader {}, foreground group {:?}",
                    self.seen,
                    self.leader.id(),
                    self.foreground()
                ),
            }
        }
    }

    /// The slave's foreground process group, read through the master
    /// (Linux answers TIOCGPGRP on a master for its slave).
    fn foreground(&self) -> Option<i32> {
        // SAFETY: tcgetpgrp only queries.
        let pgid = unsafe { libc::tcgetpgrp(self.master.as_raw_fd()) };
        (pgid > 0).then_some(pgid)
    }

    /// Waits for the session leader to exit, bounded by [`PATIENCE`].
    fn exit_status(&mut self) -> ExitStatus {
        let leader = &mut self.leader;
        wait_for("the session leader to exit", PATIENCE, || {
            leader.try_wait().unwrap()
        })
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // A failed test leaves a stopped or waiting session: kill the
        // leader's group (the command dies with `lock`, by its parent-death
        // signal). Only while the leader is unreaped, so the group id
        // cannot have been reused.
        if let Ok(None) = self.leader.try_wait() {
            let pid = self.leader.id() as i32;
            // SAFETY: kill only sends a signal; the leader lives, so -pid
            // names its group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = self.leader.wait();
        }
    }
}

/// The name of the program running as `pid`, if it runs.
fn program_of(pid: i32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(comm.trim_end().to_owned())
}

#[test]
fn t85_an_interactive_command_reads_the_terminal() {
    let server = Server::start();
    let lock = server.command(&["lock", "term/x", "--", "sh", "-c", READ_A_LINE]);
    let mut terminal = Terminal::run(lock);
    // Typed ahead: the line waits in the terminal until the command reads
    // it; a command in a background group would stop (SIGTTIN) instead.
    terminal.type_in("hello\n");
    terminal.expect("got:hello");
    assert_eq!(terminal.exit_status().code(), Some(0));
}

#[test]
fn t85_ctrl_c_from_the_terminal_reaches_the_command() {
    let server = Server::start();
    let lock = server.command(&["lock", "term/int", "--", "sh", "-c", READ_A_LINE]);
    let mut terminal = Terminal::run(lock);
    let ours = terminal.leader.id() as i32;
    // The command (not `lock`, not a child that has yet to exec) leads the
    // foreground group.
    let command = wait_for("the command to get the terminal", PATIENCE, || {
        let group = terminal.foreground().filter(|&group| group != ours)?;
        (program_of(group)? == "sh").then_some(group)
    });
    terminal.type_in("\x03");
    // sh died of SIGINT, which `lock` reports the shell's way.
    assert_eq!(terminal.exit_status().code(), Some(130));
    assert!(program_of(command).is_none(), "the command still runs");
}

#[test]
fn t85_the_terminal_comes_back_when_the_command_is_done() {
    let server = Server::start();
    // A script in the foreground runs `lock` (in the script's own process
    // group: a non-interactive shell has no job control) and then reads the
    // terminal itself. Only if `lock` gave the terminal back is the script
    // in the foreground again; otherwise its read fails (EIO) or stops it.
    // (An interactive shell would take the terminal back on its own.)
    let script = format!(
        r#""$LEASEHOLD" --endpoints "$ENDPOINT" lock term/back -- sh -c '{READ_A_LINE}'
        echo lock-exit:$?
        IFS= read -r after; echo after:$after"#
    );
    let mut wrapper = Command::new("sh");
    wrapper
        .args(["-c", &script])
        .env("LEASEHOLD", BIN)
        .env("ENDPOINT", server.endpoint())
        .env_remove("LEASEHOLD_ENDPOINTS");
    let mut terminal = Terminal::run(wrapper);
    terminal.type_in("hello\n");
    terminal.expect("got:hello");
    terminal.expect("lock-exit:0");
    terminal.type_in("world\n");
    terminal.expect("after:world");
    assert_eq!(terminal.exit_status().code(), Some(0));
}

#[test]
fn t85_under_job_control_a_lock_lost_in_the_background_still_stops_the_command() {
    let mut server = Server::start();
    // A shell with job control, as a user's: `lock` runs as a foreground job
    // in a group of its own, which the shell hands the terminal to. Unlike
    // the other tests' sessions, that group is not orphaned, so the kernel
    // stops (SIGTTOU) a member that sets the terminal's foreground group or,
    // with `tostop`, writes to it from the background. `lock` does both
    // after the lock is lost; stopped there, it would stop nobody.
    let script = format!(
        r#"set -m; stty tostop
        "$LEASEHOLD" --endpoints "$ENDPOINT" lock term/job --ttl 2s --grace 1s \
            -- sh -c 'echo ready; {READ_A_LINE}'
        echo lock-exit:$?"#
    );
    let mut wrapper = Command::new("sh");
    wrapper
        .args(["-c", &script])
        .env("LEASEHOLD", BIN)
        .env("ENDPOINT", server.endpoint())
        .env_remove("LEASEHOLD_ENDPOINTS");
    let mut terminal = Terminal::run(wrapper);
    terminal.expect("ready");
    // No renewals from now on: the lock is lost within the ttl.
    server.kill9();
    // 6: lock lost, reported (from the background) and the command stopped.
    terminal.expect("lock-exit:6");
    assert!(
        terminal.seen.contains("stopping the command"),
        "{}",
        terminal.seen
    );
    assert_eq!(terminal.exit_status().code(), Some(0));
}
