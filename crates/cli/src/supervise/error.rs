//! What can go wrong while supervising the command, each error a sentence
//! that names the cause and, where the user can act, what to do.
//!
//! Spawn failures carry the exit code a shell would use (127 not found, 126
//! cannot execute), so `leasehold lock … -- CMD` fails like `CMD` would.

use super::signals::signal_name;
use std::io;
use thiserror::Error;

/// Exit code a shell uses when the command does not exist.
const EXIT_NOT_FOUND: u8 = 127;
/// Exit code a shell uses when the command exists but cannot be executed.
const EXIT_NOT_EXECUTABLE: u8 = 126;
/// Exit code `env`, `timeout` and `nice` use when they themselves fail
/// before the command could run.
const EXIT_LAUNCH_FAILED: u8 = 125;

/// The command could not be started.
#[derive(Debug, Error)]
pub enum SpawnError {
    /// No such file, or not on PATH (or a script's `#!` interpreter is missing).
    #[error(
        "cannot run `{program}`: {error}; check the command and PATH \
         (and, for a script, the interpreter on its #! line)"
    )]
    NotFound {
        /// The command as given, lossily converted for display.
        program: String,
        /// The error `execve` reported.
        error: io::Error,
    },
    /// It exists but cannot be executed (no execute permission, a directory,
    /// an unknown binary format).
    #[error("cannot run `{program}`: {error}; check that it is an executable file (chmod +x)")]
    NotExecutable {
        /// The command as given, lossily converted for display.
        program: String,
        /// The error `execve` reported.
        error: io::Error,
    },
    /// Starting a process failed for another reason (process or memory
    /// limits, a NUL byte in an argument or variable).
    #[error(
        "cannot start `{program}`: {error}; check the arguments and system limits (ulimit -u)"
    )]
    Launch {
        /// The command as given, lossily converted for display.
        program: String,
        /// The error from `fork`, `setpgid`, `prctl` or `execve`.
        error: io::Error,
    },
}

impl SpawnError {
    /// Sorts a spawn failure by its errno, the way a shell tells
    /// "not found" from "cannot execute".
    pub(super) fn classify(program: String, error: io::Error) -> SpawnError {
        match error.raw_os_error() {
            Some(libc::ENOENT | libc::ENOTDIR) => SpawnError::NotFound { program, error },
            Some(libc::EACCES | libc::EPERM | libc::ENOEXEC | libc::EISDIR | libc::ETXTBSY) => {
                SpawnError::NotExecutable { program, error }
            }
            _ => SpawnError::Launch { program, error },
        }
    }

    /// The exit code to leave with: 127 not found, 126 not executable,
    /// 125 for any other failure to launch.
    pub fn exit_code(&self) -> u8 {
        match self {
            SpawnError::NotFound { .. } => EXIT_NOT_FOUND,
            SpawnError::NotExecutable { .. } => EXIT_NOT_EXECUTABLE,
            SpawnError::Launch { .. } => EXIT_LAUNCH_FAILED,
        }
    }
}

/// Waiting for the command failed (`waitpid` refused; in practice only if
/// something else in this process reaped it).
#[derive(Debug, Error)]
#[error("cannot learn how `{program}` ended: {error}")]
pub struct WaitError {
    /// The command, lossily converted for display.
    pub program: String,
    /// The error from `waitpid`.
    pub error: io::Error,
}

/// A signal could not be sent to the command's process group.
#[derive(Debug, Error)]
#[error("cannot send {} to process group {pgid}: {error}", signal_name(*.signal))]
pub struct SignalError {
    /// The signal number.
    pub signal: i32,
    /// The process group.
    pub pgid: i32,
    /// The error from `kill`: EPERM (no member we may signal) or EINVAL
    /// (not a signal number).
    pub error: io::Error,
}

/// A handler for a signal to forward could not be installed.
#[derive(Debug, Error)]
#[error("cannot listen for {}: {error}", signal_name(*.signal))]
pub struct ListenError {
    /// The signal number.
    pub signal: i32,
    /// The error from tokio's signal registration (SIGKILL, SIGSTOP and
    /// other forbidden signals, or no tokio runtime with signals enabled).
    pub error: io::Error,
}

/// Terminating the command's group failed.
#[derive(Debug, Error)]
pub enum TerminateError {
    /// No member of the group could be signalled (EPERM: they all changed
    /// credentials), so it cannot be stopped from here.
    #[error(transparent)]
    Signal(#[from] SignalError),
    /// Waiting for the command failed.
    #[error(transparent)]
    Wait(#[from] WaitError),
}
