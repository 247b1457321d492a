//! `TerminalHandover`: while the command runs, its process group is the
//! terminal's foreground group, as a shell's job control does for a
//! foreground job; when it is done, the terminal comes back to us.
//!
//! Why: the command runs in a process group of its own (see `child`), and
//! the kernel stops a group that is not in the terminal's foreground when it
//! reads the terminal (SIGTTIN) or changes its settings (SIGTTOU: editors,
//! password prompts, shells). Without the handover `leasehold lock x -- bash`
//! stops at its first prompt and its `wait` never returns.
//!
//! When: only if stdin is a terminal and our process group is its
//! foreground group. Otherwise (stdin redirected, `leasehold lock … &`)
//! nothing changes: there is no terminal to give, or it is not ours.
//!
//! How, like a shell, on both sides of the fork: the child makes its new
//! group the foreground group in `pre_exec` (std creates the group first),
//! so it owns the terminal before the command runs; the parent does the same
//! right after the spawn, so the handover does not rest on the child's call
//! alone. The terminal comes back when the command has exited (even if
//! processes it started remain in its group, as with a shell), when the
//! group was terminated, and at the latest when the handle is dropped.
//!
//! SIGTTOU: `tcsetpgrp` from a background group is answered with SIGTTOU,
//! which stops the caller, unless the caller blocks or ignores it. The child
//! blocks it around its call and restores its signal mask before exec. We
//! ignore it from the handover until the terminal is back, not just around
//! the calls: meanwhile we are a background process, and with `stty tostop`
//! our own messages (say, that the lock was lost) would stop us, and a
//! stopped `lock` renews nothing and stops nobody. It is ignored only after
//! the spawn, so the command inherits our previous disposition, which is
//! restored when the terminal comes back.
//!
//! Limits:
//! - Ctrl-Z stops the command's group but not us: we do not see stops, and
//!   a stopped `lock` would lose its lock. So the shell that started us gets
//!   no prompt back, the terminal seems to hang, and we keep renewing: the
//!   lock stays held while the command is stopped. Ctrl-C then does nothing
//!   (SIGINT waits, pending, in the stopped group) until someone resumes it
//!   from elsewhere with `kill -CONT -- -PGID`. Loss of the lock still ends
//!   it, since terminating sends SIGCONT too.
//! - Only stdin is considered: a command whose stdin is redirected but that
//!   sets terminal modes through stdout or reads `/dev/tty` still stops.
//! - If we die by SIGKILL nobody gives the terminal back here; the command
//!   dies with us, and an interactive shell takes its terminal back itself
//!   when its foreground job ends.

use std::fmt;
use std::mem;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set while a [`TerminalHandover`] owns the terminal's foreground group and
/// SIGTTOU's disposition, both process-wide: only one handover at a time.
/// A second spawn while one command holds the terminal finds us in the
/// background anyway; the flag closes the race of two threads checking at
/// once.
static CLAIMED: AtomicBool = AtomicBool::new(false);

/// The terminal on `fd`, lent to the command's group from
/// [`hand_over`](TerminalHandover::hand_over) until
/// [`give_back`](TerminalHandover::give_back) or drop.
pub struct TerminalHandover {
    /// `None` if there is nothing to hand over (see
    /// [`prepare`](TerminalHandover::prepare)) or it has been given back.
    claim: Option<Claim>,
}

/// What a handover that applies needs to undo itself.
struct Claim {
    /// The terminal's descriptor; the same number in the child.
    fd: RawFd,
    /// Our process group: the foreground group before and after.
    ours: libc::pid_t,
    /// SIGTTOU's disposition before we ignored it; `None` until the parent
    /// has handed the terminal over.
    saved: Option<libc::sigaction>,
}

impl TerminalHandover {
    /// Decides, before the spawn, whether the command gets the terminal on
    /// `fd`: only if `fd` is a terminal whose foreground group is ours (so
    /// it is our controlling terminal, and we are in the foreground), and no
    /// other handover holds it.
    pub fn prepare(fd: RawFd) -> TerminalHandover {
        // SAFETY: isatty, tcgetpgrp and getpgrp only query; a descriptor
        // that is not open or not a terminal makes them fail, nothing else.
        let foreground = unsafe { libc::isatty(fd) == 1 && libc::tcgetpgrp(fd) == libc::getpgrp() };
        let claimed = foreground
            && CLAIMED
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        let claim = claimed.then(|| Claim {
            fd,
            // SAFETY: getpgrp cannot fail.
            ours: unsafe { libc::getpgrp() },
            saved: None,
        });
        TerminalHandover { claim }
    }

    /// The descriptor the child must make its group the foreground group
    /// of (with [`take_in_child`]), if the handover applies.
    pub fn child_fd(&self) -> Option<RawFd> {
        self.claim.as_ref().map(|claim| claim.fd)
    }

    /// Whether the terminal is (or is about to be) lent to the command.
    #[cfg(test)]
    pub fn applies(&self) -> bool {
        self.claim.is_some()
    }

    /// After the spawn: makes `pgid` (the command's group) the foreground
    /// group, and ignores SIGTTOU until the terminal is given back.
    ///
    /// A failure leaves the command in the background, as before the
    /// handover existed; there is nothing better to do, so it is not
    /// reported.
    pub fn hand_over(&mut self, pgid: libc::pid_t) {
        let Some(claim) = &mut self.claim else {
            return;
        };
        assert!(claim.saved.is_none(), "the terminal was handed over twice");
        claim.saved = Some(ignore_sigttou());
        // SAFETY: tcsetpgrp only changes the terminal's foreground group;
        // with SIGTTOU ignored it cannot stop us.
        unsafe { libc::tcsetpgrp(claim.fd, pgid) };
    }

    /// Makes our group the foreground group again and restores SIGTTOU's
    /// disposition. Also right if the child took the terminal and then
    /// failed to exec. Does nothing the second time.
    pub fn give_back(&mut self) {
        let Some(claim) = self.claim.take() else {
            return;
        };
        // Not handed over by us (spawn failed): ignore SIGTTOU just for the
        // call, since the child may have taken the terminal before it died.
        let saved = claim.saved.unwrap_or_else(ignore_sigttou);
        // SAFETY: as in `hand_over`. It fails only if the terminal is gone
        // (hung up), and then there is nothing to give back.
        unsafe { libc::tcsetpgrp(claim.fd, claim.ours) };
        restore_sigttou(&saved);
        CLAIMED.store(false, Ordering::Release);
    }
}

impl Drop for TerminalHandover {
    fn drop(&mut self) {
        self.give_back();
    }
}

impl fmt::Debug for TerminalHandover {
    // By hand: `libc::sigaction` has no `Debug` without libc's extra traits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("TerminalHandover");
        if let Some(claim) = &self.claim {
            out.field("fd", &claim.fd)
                .field("ours", &claim.ours)
                .field("handed_over", &claim.saved.is_some());
        }
        out.finish()
    }
}

/// Runs in the child between fork and exec, after std made it the leader of
/// a new group: makes that group the foreground group of the terminal on
/// `fd`, with SIGTTOU blocked for the call. Only async-signal-safe calls; no
/// allocation. Errors are ignored: the parent makes the same call.
pub(super) fn take_in_child(fd: RawFd) {
    // SAFETY: sigset_t is plain data and sigemptyset initialises it; every
    // call here is async-signal-safe, and the child has one thread, so
    // sigprocmask is well defined. The old mask is restored before exec,
    // so the command starts with the mask it inherited.
    unsafe {
        let mut block: libc::sigset_t = mem::zeroed();
        let mut old: libc::sigset_t = mem::zeroed();
        libc::sigemptyset(&mut block);
        libc::sigaddset(&mut block, libc::SIGTTOU);
        libc::sigprocmask(libc::SIG_BLOCK, &block, &mut old);
        libc::tcsetpgrp(fd, libc::getpid());
        libc::sigprocmask(libc::SIG_SETMASK, &old, ptr::null_mut());
    }
}

/// Ignores SIGTTOU process-wide; returns the disposition it replaced.
fn ignore_sigttou() -> libc::sigaction {
    // SAFETY: sigaction is plain data; zeroed it has no flags, and
    // sigemptyset initialises its mask. sigaction(SIGTTOU) with valid
    // pointers cannot fail, which the assertion checks.
    unsafe {
        let mut ignore: libc::sigaction = mem::zeroed();
        ignore.sa_sigaction = libc::SIG_IGN;
        libc::sigemptyset(&mut ignore.sa_mask);
        let mut old: libc::sigaction = mem::zeroed();
        let status = libc::sigaction(libc::SIGTTOU, &ignore, &mut old);
        assert_eq!(status, 0, "sigaction(SIGTTOU) failed");
        old
    }
}

/// Puts back a disposition [`ignore_sigttou`] returned.
fn restore_sigttou(saved: &libc::sigaction) {
    // SAFETY: `saved` is what sigaction itself returned for SIGTTOU.
    let status = unsafe { libc::sigaction(libc::SIGTTOU, saved, ptr::null_mut()) };
    assert_eq!(status, 0, "sigaction(SIGTTOU) failed");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::os::fd::{AsRawFd, FromRawFd};

    /// A pipe's two ends, closed on drop.
    fn pipe() -> (File, File) {
        let mut fds = [0; 2];
        // SAFETY: pipe writes two new descriptors into the array; each is
        // then owned by exactly one File.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        }
    }

    /// A new pseudo-terminal's master and slave, closed on drop. glibc's
    /// openpty opens the slave with O_NOCTTY, so it is nobody's
    /// controlling terminal.
    fn pty() -> (File, File) {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two new descriptors; null name, termios
        // and window size are allowed. Each descriptor goes to one File.
        unsafe {
            let status = libc::openpty(
                &mut master,
                &mut slave,
                ptr::null_mut(),
                ptr::null(),
                ptr::null(),
            );
            assert_eq!(status, 0, "openpty: {}", std::io::Error::last_os_error());
            (File::from_raw_fd(master), File::from_raw_fd(slave))
        }
    }

    /// What SIGTTOU's handler is now.
    fn sigttou_handler() -> libc::sighandler_t {
        // SAFETY: a null new action only reads the current one.
        unsafe {
            let mut now: libc::sigaction = mem::zeroed();
            assert_eq!(libc::sigaction(libc::SIGTTOU, ptr::null(), &mut now), 0);
            now.sa_sigaction
        }
    }

    #[test]
    fn a_descriptor_that_is_not_a_terminal_is_not_handed_over() {
        let (read, _write) = pipe();
        let before = sigttou_handler();
        let mut handover = TerminalHandover::prepare(read.as_raw_fd());
        assert!(!handover.applies(), "{handover:?}");
        assert_eq!(handover.child_fd(), None);
        // Both are no-ops: SIGTTOU is left as it was.
        // SAFETY: getpid cannot fail.
        handover.hand_over(unsafe { libc::getpid() });
        handover.give_back();
        assert_eq!(sigttou_handler(), before);
    }

    #[test]
    fn a_terminal_that_is_not_our_controlling_terminal_is_not_handed_over() {
        // isatty alone would say yes; tcgetpgrp refuses (ENOTTY), since
        // it is not our terminal to give.
        let (_master, slave) = pty();
        // SAFETY: isatty only queries.
        assert_eq!(unsafe { libc::isatty(slave.as_raw_fd()) }, 1);
        let handover = TerminalHandover::prepare(slave.as_raw_fd());
        assert!(!handover.applies(), "{handover:?}");
        assert_eq!(handover.child_fd(), None);
    }
}
