//! Every exit code of `leasehold`, in one place (docs/DESIGN.md §4). Scripts
//! branch on these, so they are part of the command line's contract: a code
//! never changes meaning.
//!
//! A closed stdout (`leasehold events | head -1`, `status | true`) is not
//! an error: the reader has what it wanted, and the command exits 0 at once,
//! quietly, never with a panic (`output::write_stdout`).

/// How `leasehold` ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: the command did what it was asked.
    Ok = 0,
    /// 1: any error not listed below (internal server error, I/O, a bug).
    Other = 1,
    /// 2: usage: a bad flag or value (clap), or the server answered
    /// `InvalidArgument` (a name, ttl or other field out of bounds), or
    /// `serve` refused to start as configured: inconsistent settings, or a
    /// start that would be unsafe (an empty data dir with `--peers` whose
    /// peers saw this node take part in their cluster before: it must
    /// rejoin with `--join`; or peers that belong to another cluster).
    Usage = 2,
    /// 3: the lock is busy (`Busy`) or the wait for it timed out (`WaitTimeout`).
    Busy = 3,
    /// 4: ownership error: `NotHolder`, `NoSuchLock`, `LeaseNotFound`,
    /// `LeaseExpired`, `StaleToken` (fenced store), and `Unfenced` (a
    /// `force-release` of a holder that did not declare `--fenced`, without
    /// `--allow-unfenced`: a safety refusal about who may still write, not a
    /// usage error). Retrying the same request will not help; the caller's
    /// idea of who holds what is wrong, or unsafe to act on.
    Ownership = 4,
    /// 5: the service is unavailable: no endpoint reachable, `Unavailable`,
    /// `NotLeader` with no reachable leader, or no reply within `--timeout`.
    /// Retrying later may help.
    Unavailable = 5,
    /// 6: `leasehold lock` (and `elect`): the lock (the lead) was lost while the command ran (the
    /// command's process group got SIGTERM, then SIGKILL after `--grace`).
    LockLost = 6,
    /// 7: permission: the server answered `PermissionDenied` (the principal
    /// lacks the verb on the name's prefix, or the lease is another
    /// principal's) or `Unauthenticated` (no identity while auth is
    /// enabled, or a bad, revoked or expired `--auth-token`). The sentence
    /// names the principal, the verb and the prefix.
    Permission = 7,
    /// 8: `diagnose` found a lock that is not healthy (or clock skew): the
    /// verdicts are printed as usual; the code lets a script gate on them.
    Unhealthy = 8,
    /// 9: `drill`: at least one drill failed (a skipped drill is not a
    /// failure); each drill's PASS/FAIL, what it measured and the bound it
    /// checked are printed as usual.
    DrillFailed = 9,
    /// 130 (128 + SIGINT, as a shell reports a command Ctrl-C stopped):
    /// interrupted while waiting (`acquire --wait`); nothing is left held.
    Interrupted = 130,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The code's name, the `reason` of a `--json` error that did not come
    /// from the server (a usage error found locally, an interruption).
    pub fn name(self) -> &'static str {
        match self {
            Exit::Ok => "Ok",
            Exit::Other => "Other",
            Exit::Usage => "Usage",
            Exit::Busy => "Busy",
            Exit::Ownership => "Ownership",
            Exit::Unavailable => "Unavailable",
            Exit::LockLost => "LockLost",
            Exit::Permission => "Permission",
            Exit::Unhealthy => "Unhealthy",
            Exit::DrillFailed => "DrillFailed",
            Exit::Interrupted => "Interrupted",
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}
