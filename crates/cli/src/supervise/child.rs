//! `Supervised`: the command of `leasehold lock`, running as our child in a
//! process group of its own, bound to our life by a parent-death signal.
//!
//! Why each choice:
//! - its own group, so one `kill(-pgid)` reaches the command and everything
//!   it started, and we can wait until all of it is gone;
//! - `PR_SET_PDEATHSIG = SIGKILL`, so if we die (even by SIGKILL) the command
//!   dies too instead of working on under a lease nobody renews, and a
//!   [`Watchdog`] process that then kills the rest of its group (the
//!   parent-death signal reaches only the command, not what it started);
//! - killed on drop, for the same reason, if the caller lets go of it early;
//! - given the terminal while it runs, if we have it (see `terminal`): in a
//!   group of its own it would otherwise stop as soon as it read from the
//!   terminal or set its modes.

use super::error::{SpawnError, TerminateError, WaitError};
use super::group::ProcessGroup;
use super::terminal::{self, TerminalHandover};
use super::watchdog::Watchdog;
use std::ffi::{OsStr, OsString};
use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::process::{Child, Command};
use tokio::time::{sleep, timeout};

/// How often to look whether the group has emptied after the leader exited.
/// There is no event for "group empty", so this is a poll; a probe costs a
/// `kill(…, 0)` and, only while members remain, a `/proc` read.
const GROUP_POLL: Duration = Duration::from_millis(20);

/// How long to wait for the group to vanish after SIGKILL. Only a process
/// in uninterruptible sleep (stuck I/O) survives SIGKILL this long.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// A running command in its own process group.
///
/// Dropping it sends SIGKILL to whatever is left of the group: a command
/// must not outlive its supervision. To stop it gracefully, call
/// [`Supervised::terminate_group`] first.
#[derive(Debug)]
pub struct Supervised {
    /// The group leader: the command itself.
    child: Child,
    /// The command's process group (its pgid is the leader's pid).
    group: ProcessGroup,
    /// The command, lossily converted, for error messages.
    program: String,
    /// Kills the group if we die without stopping it first.
    watchdog: Watchdog,
    /// The terminal, lent to the command's group while it runs; given back
    /// when the command is done, and at the latest when this is dropped
    /// (fields drop after `drop` has killed the group).
    terminal: TerminalHandover,
}

/// How [`Supervised::terminate_group`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Termination {
    /// How the command (the group leader) ended; `None` only if it was still
    /// not reaped a while after SIGKILL (stuck in uninterruptible sleep).
    pub status: Option<ExitStatus>,
    /// True if the grace period ran out and the group got SIGKILL.
    pub killed: bool,
    /// True if no live member of the group remains. False only if some
    /// member survived SIGKILL for a while (stuck in the kernel).
    pub group_gone: bool,
}

impl Supervised {
    /// Starts `program` with `args`, our environment plus `env`, and our
    /// stdin, stdout and stderr, as the leader of a new process group that
    /// gets SIGKILL if we die. If stdin is a terminal and we are in its
    /// foreground, the new group becomes its foreground group until the
    /// command is done (see `terminal`).
    ///
    /// The kernel sends the parent-death signal when the *thread* that
    /// spawned the child exits, not only the process. Call this from the
    /// thread that lives as long as the supervision (the `block_on` thread
    /// or a runtime worker), never from `spawn_blocking`. The signal is also
    /// dropped if the command executes a set-user-ID program, and it reaches
    /// only the command, not processes the command started.
    pub fn spawn(
        program: &OsStr,
        args: &[OsString],
        env: &[(String, String)],
    ) -> Result<Supervised, SpawnError> {
        let display = program.to_string_lossy().into_owned();
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .process_group(0);
        // SAFETY: getpid has no preconditions and cannot fail.
        let parent = unsafe { libc::getpid() };
        // Decided before the fork, so both sides agree. If the spawn fails
        // after the child took the terminal, dropping this takes it back.
        let mut terminal = TerminalHandover::prepare(libc::STDIN_FILENO);
        let terminal_fd = terminal.child_fd();
        // SAFETY: the closure runs in the child between fork and exec (after
        // std's setpgid), where only async-signal-safe calls are allowed;
        // `die_with_parent` makes only prctl, getppid, raise and _exit calls,
        // `take_in_child` only sigprocmask, getpid and tcsetpgrp ones, and
        // neither allocates.
        unsafe {
            command.pre_exec(move || {
                die_with_parent(parent)?;
                if let Some(fd) = terminal_fd {
                    terminal::take_in_child(fd);
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|error| SpawnError::classify(display.clone(), error))?;
        // A freshly spawned child has a pid until it is reaped.
        let pid = child.id().and_then(|pid| libc::pid_t::try_from(pid).ok());
        let Some(pid) = pid else {
            let error = io::Error::other("the new process has no pid");
            return Err(SpawnError::Launch {
                program: display,
                error,
            });
        };
        let group = ProcessGroup::new(pid);
        let watchdog = match Watchdog::watch(pid) {
            Ok(watchdog) => watchdog,
            Err(error) => {
                // Unsupervisable: it must not run on without us.
                let _ = group.signal(libc::SIGKILL);
                return Err(SpawnError::Launch {
                    program: display,
                    error,
                });
            }
        };
        terminal.hand_over(pid);
        Ok(Supervised {
            child,
            group,
            program: display,
            watchdog,
            terminal,
        })
    }

    /// The command's process group: to forward signals to, or to signal
    /// directly.
    pub fn group(&self) -> ProcessGroup {
        self.group
    }

    /// Gives the terminal back now, for a test that leaks the handle on
    /// purpose (run from a terminal, it would leak the handover too).
    #[cfg(test)]
    pub(super) fn give_back_terminal(&mut self) {
        self.terminal.give_back();
    }

    /// Whether a live (non-zombie) member of the group remains; see
    /// [`ProcessGroup::alive`].
    pub fn group_alive(&self) -> bool {
        self.group.alive()
    }

    /// Waits until the command itself exits and reaps it; other members of
    /// its group may still run. Gives the terminal back once it has exited,
    /// as a shell does when its foreground job ends. Cancel safe; once it
    /// has returned, it returns the same status again at once.
    pub async fn wait(&mut self) -> Result<ExitStatus, WaitError> {
        let status = self.child.wait().await;
        if status.is_ok() {
            self.terminal.give_back();
        }
        status.map_err(|error| self.wait_error(error))
    }

    /// Stops the whole group: SIGTERM (and SIGCONT, so stopped members can
    /// act on it), then waits up to `grace` for the command to exit and the
    /// group to empty; if that does not happen, SIGKILL and a short wait.
    ///
    /// Errs only if no member could be signalled or the command could not
    /// be waited for. Either way the terminal is ours again afterwards.
    pub async fn terminate_group(
        &mut self,
        grace: Duration,
    ) -> Result<Termination, TerminateError> {
        let ended = self.stop_group(grace).await;
        self.terminal.give_back();
        ended
    }

    /// [`Supervised::terminate_group`] without the terminal.
    async fn stop_group(&mut self, grace: Duration) -> Result<Termination, TerminateError> {
        self.group.signal(libc::SIGTERM)?;
        self.group.signal(libc::SIGCONT)?;
        if let Ok(ended) = timeout(grace, self.until_group_gone()).await {
            return Ok(Termination {
                status: Some(ended?),
                killed: false,
                group_gone: true,
            });
        }
        self.group.signal(libc::SIGKILL)?;
        if let Ok(ended) = timeout(KILL_WAIT, self.until_group_gone()).await {
            return Ok(Termination {
                status: Some(ended?),
                killed: true,
                group_gone: true,
            });
        }
        let status = self.child.try_wait();
        Ok(Termination {
            status: status.map_err(|error| self.wait_error(error))?,
            killed: true,
            group_gone: false,
        })
    }

    /// Waits for the command to exit, then for the rest of its group to go.
    /// Cancel safe.
    async fn until_group_gone(&mut self) -> Result<ExitStatus, WaitError> {
        // The leader is a member, so the group cannot be gone before it
        // exits: wait for that event, then poll for the rest.
        let status = self.wait().await?;
        while self.group.alive() {
            sleep(GROUP_POLL).await;
        }
        Ok(status)
    }

    fn wait_error(&self, error: io::Error) -> WaitError {
        WaitError {
            program: self.program.clone(),
            error,
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        // Nothing may keep working once nobody supervises it. A group that
        // is already gone answers ESRCH, which `signal` ignores; EPERM
        // cannot be helped here. The terminal comes back after this, when
        // the `terminal` field drops.
        let _ = self.group.signal(libc::SIGKILL);
        self.watchdog.stand_down();
    }
}

/// Runs in the child between fork and exec: asks the kernel for SIGKILL when
/// the parent dies, and closes the race where it died before we asked.
/// Only async-signal-safe calls; no allocation. (`leasehold drill` binds its
/// worker processes to its life with it too.)
pub fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
    let signal = libc::SIGKILL as libc::c_ulong;
    // SAFETY: PR_SET_PDEATHSIG reads one integer argument and only sets a
    // flag on this process.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // If the parent died after fork but before prctl, no signal will come;
    // we were reparented, so getppid no longer names it.
    // SAFETY: getppid has no preconditions and cannot fail.
    if unsafe { libc::getppid() } != parent {
        // SAFETY: raise and _exit are async-signal-safe; _exit (as if killed)
        // runs only if SIGKILL somehow did not end us.
        unsafe {
            libc::raise(libc::SIGKILL);
            libc::_exit(128 + libc::SIGKILL);
        }
    }
    Ok(())
}
