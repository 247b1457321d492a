//! `Watchdog`: a tiny process that kills the command's whole process group
//! when `leasehold lock` dies, however it dies.
//!
//! Why a process of its own: the parent-death signal (`PR_SET_PDEATHSIG`)
//! reaches only the command itself, not what the command started, and a
//! SIGKILLed `lock` runs no code at all. So at spawn we fork a watchdog
//! that holds one end of a socket pair whose other end only we hold. The
//! kernel closes our end when we die (SIGKILL included), the watchdog's
//! `read` returns end-of-file, and it sends SIGKILL to the command's group:
//! grandchildren included, within milliseconds. When we finish normally we
//! first send one byte ("stand down"), so a group id reused after the
//! group is gone is never signalled. (A socket rather than a pipe: sending
//! with `MSG_NOSIGNAL` cannot raise SIGPIPE if the watchdog is gone.)
//!
//! Why not a cgroup: putting the command in a cgroup of its own (and
//! `cgroup.kill`) would also catch processes that leave the group with
//! `setsid`, but it needs a delegated, writable cgroup v2 subtree, which an
//! unprivileged user or a typical container does not have. The watchdog
//! needs nothing and covers what `lock` promises: the command's process
//! group. A member that deliberately leaves the group (a daemonizing
//! `setsid`) is outside that promise, as it is for a shell's job control.
//!
//! The watchdog is forked, not executed: between `fork` and `_exit` the
//! child makes only async-signal-safe system calls (`setsid`, `prctl`,
//! `close_range`/`close`, `read`, `kill`, `_exit`), which is what a fork of
//! a multi-threaded process allows. It starts its own session, so signals
//! aimed at our process group or terminal (Ctrl-C, `kill -- -PGID`) do not
//! stop it, and it closes every other file descriptor, so it holds no copy
//! of our sockets or of the terminal and pipes we write to.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The byte that tells the watchdog we ended normally.
const STAND_DOWN: u8 = b'.';

/// The name the watchdog shows in `ps` (at most 15 bytes).
const NAME: &[u8] = b"leasehold-watch\0";

/// A running watchdog over one process group.
#[derive(Debug)]
pub struct Watchdog {
    /// Our end of the socket pair; closing it (or dying) wakes the watchdog.
    alarm: Option<OwnedFd>,
    /// The watchdog's pid (the tests reap it; `lock` leaves that to init).
    #[cfg_attr(not(test), allow(dead_code))]
    pid: libc::pid_t,
}

impl Watchdog {
    /// Forks a watchdog that sends SIGKILL to process group `pgid` when
    /// this process dies without standing it down.
    pub fn watch(pgid: libc::pid_t) -> io::Result<Watchdog> {
        assert!(
            pgid > 1,
            "process group id {pgid} would signal the wrong processes"
        );
        let mut fds = [0; 2];
        let kind = libc::SOCK_STREAM | libc::SOCK_CLOEXEC;
        // SAFETY: socketpair writes two descriptors into the array it is given.
        if unsafe { libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()) } == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: socketpair just created both descriptors; nobody else owns them.
        let (listen, alarm) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the child runs only `watch_in_child`, which makes only
        // async-signal-safe calls and never returns.
        match unsafe { libc::fork() } {
            -1 => Err(io::Error::last_os_error()),
            0 => watch_in_child(listen.as_raw_fd(), pgid),
            pid => Ok(Watchdog {
                alarm: Some(alarm),
                pid,
            }),
        }
    }

    /// We are ending normally and the group is stopped: the watchdog exits
    /// without signalling anything. (It is not waited for: `lock` exits
    /// right after, and the orphaned watchdog is reaped by init.)
    pub fn stand_down(&mut self) {
        let Some(alarm) = self.alarm.take() else {
            return;
        };
        let byte = [STAND_DOWN];
        // SAFETY: sends one byte from a valid buffer on a socket we own.
        let _ = unsafe {
            libc::send(
                alarm.as_raw_fd(),
                byte.as_ptr().cast(),
                1,
                libc::MSG_NOSIGNAL,
            )
        };
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stand_down();
    }
}

/// The watchdog's whole life, in the forked child: wait for our end of the
/// pipe to close; unless we said to stand down first, kill the group.
fn watch_in_child(listen: libc::c_int, pgid: libc::pid_t) -> ! {
    // SAFETY: every call below is async-signal-safe and touches only this
    // process: its session, its name, its descriptors, one read, one kill.
    unsafe {
        libc::setsid();
        libc::prctl(libc::PR_SET_NAME, NAME.as_ptr() as libc::c_ulong, 0, 0, 0);
        close_all_but(listen);
        let mut byte = 0u8;
        let read = loop {
            let read = libc::read(listen, (&mut byte as *mut u8).cast(), 1);
            if read != -1 || *libc::__errno_location() != libc::EINTR {
                break read;
            }
        };
        if !(read == 1 && byte == STAND_DOWN) {
            libc::kill(-pgid, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}

/// Closes every descriptor except `keep` (async-signal-safe).
///
/// # Safety
/// Only for the forked watchdog, which owns nothing else it needs.
unsafe fn close_all_but(keep: libc::c_int) {
    let keep = keep as libc::c_uint;
    let below = keep == 0 || libc::syscall(libc::SYS_close_range, 0, keep - 1, 0) == 0;
    let above = libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0) == 0;
    if below && above {
        return;
    }
    // Kernels before 5.9 lack close_range: close them one by one.
    for fd in 0..65_536 {
        if fd != keep as libc::c_int {
            libc::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};
    use std::time::{Duration, Instant};

    /// A `sleep` leading a process group of its own, as the command would.
    fn group_leader() -> Child {
        Command::new("sleep")
            .arg("100")
            .process_group(0)
            .spawn()
            .expect("spawn sleep")
    }

    /// Waits (bounded) for the watchdog to exit, reaping it.
    fn reap(watchdog: &Watchdog) {
        // SAFETY: waitpid on our own forked child.
        let reaped = unsafe { libc::waitpid(watchdog.pid, std::ptr::null_mut(), 0) };
        assert_eq!(reaped, watchdog.pid);
    }

    #[test]
    fn our_death_kills_the_group() {
        let mut leader = group_leader();
        let mut watchdog = Watchdog::watch(leader.id() as libc::pid_t).unwrap();
        let started = Instant::now();
        // Closing our end without a word is what dying looks like.
        drop(watchdog.alarm.take());
        reap(&watchdog);
        let status = leader.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn standing_down_leaves_the_group_alone() {
        let mut leader = group_leader();
        let mut watchdog = Watchdog::watch(leader.id() as libc::pid_t).unwrap();
        watchdog.stand_down();
        reap(&watchdog);
        assert!(
            leader.try_wait().unwrap().is_none(),
            "the group was signalled"
        );
        leader.kill().unwrap();
        leader.wait().unwrap();
    }
}
