//! `ProcessGroup`: the command's process group, the unit we signal and wait
//! for, because the command may start helpers that outlive it.
//!
//! "Is the group still there?" has no event to wait for, so it is a probe:
//! `kill(-pgid, 0)` says whether any member exists, but zombies count as
//! members. Our own unreaped leader is one (the caller reaps it); orphaned
//! grandchildren whose new parent is slow to reap them are others (PID 1 of
//! a container often is; if `leasehold` *is* PID 1 nobody reaps them). A
//! zombie does no work, so when `kill` says "someone" we look in `/proc` for
//! a member that is not a zombie.

use super::error::SignalError;
use std::fs;
use std::io;

/// A process group created for the command (its pgid is the command's pid).
///
/// `Copy`, so the signal forwarder can hold one while the command is awaited.
/// Pgids are not reused while any member (zombies included) remains, so
/// signalling is safe until the group is gone; stop using it after that.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessGroup {
    /// The process group id; always > 1, because `kill(0, …)` would signal
    /// our own group and `kill(-1, …)` every process we may signal.
    pgid: libc::pid_t,
}

impl ProcessGroup {
    /// The group led by `pgid`.
    ///
    /// # Panics
    /// If `pgid <= 1`: a bug in the caller, and signalling such a "group"
    /// would hit our own group or every process we may signal.
    pub(super) fn new(pgid: libc::pid_t) -> ProcessGroup {
        assert!(
            pgid > 1,
            "process group id {pgid} would signal the wrong processes"
        );
        ProcessGroup { pgid }
    }

    /// The process group id (the command's pid).
    #[cfg(test)]
    pub fn id(self) -> i32 {
        self.pgid
    }

    /// Sends `signal` to every member of the group. A group that is already
    /// gone (ESRCH) is not an error: there is nobody left to tell.
    pub fn signal(self, signal: i32) -> Result<(), SignalError> {
        // SAFETY: kill has no memory-safety preconditions; `-pgid` is a
        // negative number below -1 (see `new`), so it names exactly this group.
        if unsafe { libc::kill(-self.pgid, signal) } == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::ESRCH) => Ok(()),
            _ => Err(SignalError {
                signal,
                pgid: self.pgid,
                error,
            }),
        }
    }

    /// Whether any member of the group that is not a zombie remains.
    ///
    /// The leader counts while it runs; once it has exited (reaped or not)
    /// the group is alive iff another live member remains.
    pub fn alive(self) -> bool {
        // Fast path while the leader runs: one small read, no scan.
        if let Some(leader) = read_stat(self.pgid) {
            if leader.pgrp == self.pgid && leader.is_live() {
                return true;
            }
        }
        // SAFETY: signal 0 only checks existence and permission.
        if unsafe { libc::kill(-self.pgid, 0) } != 0 {
            // ESRCH: no member at all. EPERM: a member exists that we may not
            // signal (it changed credentials); it is alive as far as we know.
            return io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
        }
        // Some member exists, maybe only zombies. Without /proc, assume live.
        live_member(self.pgid).unwrap_or(true)
    }
}

/// The fields of `/proc/PID/stat` we need.
struct Stat {
    /// One-letter state: R, S, D, T, Z (zombie), X (dead), …
    state: char,
    /// The process group.
    pgrp: libc::pid_t,
    /// Threads in the process: a process whose main thread exited shows 'Z'
    /// while its other threads still run.
    threads: u64,
}

impl Stat {
    /// Whether the process can still do work.
    fn is_live(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x') || self.threads > 1
    }
}

/// Whether a live process in group `pgid` exists; `None` if `/proc` cannot
/// be listed.
fn live_member(pgid: libc::pid_t) -> Option<bool> {
    let entries = fs::read_dir("/proc").ok()?;
    let found = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter_map(read_stat)
        .any(|stat| stat.pgrp == pgid && stat.is_live());
    Some(found)
}

/// Whether process `pid` exists and is not a zombie (per `/proc`).
#[cfg(test)]
pub(super) fn process_alive(pid: libc::pid_t) -> bool {
    read_stat(pid).is_some_and(|stat| stat.is_live())
}

/// Whether process `pid` is stopped (state `T`, per `/proc`): `leasehold
/// drill` waits for its SIGSTOP of a holder to land.
pub fn process_stopped(pid: libc::pid_t) -> bool {
    read_stat(pid).is_some_and(|stat| stat.state == 'T')
}

/// Reads `/proc/PID/stat`; `None` if the process is gone or the file does
/// not parse.
fn read_stat(pid: libc::pid_t) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Parses `pid (comm) state ppid pgrp … num_threads …`. The command name may
/// contain spaces and parentheses, so fields are counted after the last ')'.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3 of stat(5), pgrp 5, num_threads 20.
    Some(Stat {
        state: fields.first()?.chars().next()?,
        pgrp: fields.get(2)?.parse().ok()?,
        threads: fields.get(17)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZOMBIE: &str = "30377 (sh) Z 1 30376 27744 0 -1 4227084 96 0 1 0 0 0 0 0 20 0 1 0 558436";

    #[test]
    fn parses_a_zombie() {
        let stat = parse_stat(ZOMBIE).unwrap();
        assert_eq!(stat.state, 'Z');
        assert_eq!(stat.pgrp, 30376);
        assert_eq!(stat.threads, 1);
        assert!(!stat.is_live());
    }

    #[test]
    fn a_name_with_spaces_and_parens_does_not_shift_fields() {
        let text = ZOMBIE.replace("(sh) Z", "(a) b (c) S");
        let stat = parse_stat(&text).unwrap();
        assert_eq!((stat.state, stat.pgrp), ('S', 30376));
        assert!(stat.is_live());
    }

    #[test]
    fn a_zombie_leader_with_running_threads_is_live() {
        let text = ZOMBIE.replace(" 20 0 1 0 ", " 20 0 3 0 ");
        assert!(parse_stat(&text).unwrap().is_live());
    }

    #[test]
    fn truncated_stat_is_rejected() {
        assert!(parse_stat("1 (init) S 0 1").is_none());
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn our_own_process_parses() {
        // SAFETY: getpid and getpgrp cannot fail.
        let (pid, pgrp) = unsafe { (libc::getpid(), libc::getpgrp()) };
        let stat = read_stat(pid).unwrap();
        assert_eq!(stat.pgrp, pgrp);
        assert!(stat.is_live());
    }
}
