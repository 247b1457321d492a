//! Forwards the signals `leasehold lock` receives to the command's process
//! group.
//!
//! The command runs in its own group, so whatever is sent to our pid
//! (SIGTERM from `kill`, systemd or Kubernetes) or to *our* group (a shell
//! passing on SIGHUP; the terminal's Ctrl-C, Ctrl-\ and SIGWINCH when the
//! terminal was not handed over, say because stdin is not a terminal) would
//! not reach it. When the terminal was handed over (see `terminal`), its
//! Ctrl-C and the like go to the command's group directly and never reach
//! us, so nothing arrives twice. Installing the handlers also means those
//! signals no longer kill us: we stay to release the lock after the command
//! has reacted.
//!
//! Not forwarded: SIGKILL and SIGSTOP cannot be caught (the parent-death
//! signal covers SIGKILL); job-control signals (SIGTSTP, SIGTTIN, SIGCONT)
//! are not forwarded and keep their default action on us: a suspended
//! `lock` stops renewing and loses the lock. (SIGTTOU is ignored while the
//! command has the terminal, so that writing to it cannot stop us.)

use super::error::ListenError;
use std::future::poll_fn;
use std::task::Poll;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// The signals [`Forwarder::install`] listens for, most urgent first (when
/// several are pending, earlier ones are forwarded first).
pub const FORWARDED: [i32; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

/// Listens for signals sent to this process; the caller sends each one on
/// with [`ProcessGroup::signal`](super::group::ProcessGroup::signal), in the same
/// `select!` loop that waits for the command.
///
/// Install it before spawning the command, so a signal that arrives in
/// between is held for forwarding instead of killing us. tokio never
/// uninstalls a handler: after the forwarder is dropped these signals are
/// still caught (and ignored) for the rest of the process. Stop forwarding
/// once the command's group is gone: its pgid may then be reused.
#[derive(Debug)]
pub struct Forwarder {
    /// One tokio listener per signal, with its number.
    listeners: Vec<(i32, Signal)>,
}

impl Forwarder {
    /// Listens for every signal in [`FORWARDED`]. Needs a tokio runtime with
    /// signals enabled.
    pub fn install() -> Result<Forwarder, ListenError> {
        Forwarder::install_for(&FORWARDED)
    }

    /// Listens for `signals` only (tests use a harmless one).
    pub fn install_for(signals: &[i32]) -> Result<Forwarder, ListenError> {
        let listeners = signals
            .iter()
            .map(|&number| {
                signal(SignalKind::from_raw(number))
                    .map(|listener| (number, listener))
                    .map_err(|error| ListenError {
                        signal: number,
                        error,
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Forwarder { listeners })
    }

    /// The next signal that arrived; `None` once the runtime shuts down.
    /// Cancel safe: a signal is consumed only when returned.
    pub async fn recv(&mut self) -> Option<i32> {
        poll_fn(|cx| {
            for (number, listener) in &mut self.listeners {
                match listener.poll_recv(cx) {
                    Poll::Ready(Some(())) => return Poll::Ready(Some(*number)),
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => {}
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// A signal's name for messages: "SIGTERM", or "signal 42" for one without
/// a common name.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGWINCH => "SIGWINCH",
        _ => return format!("signal {signal}"),
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_known_signals_and_numbers_the_rest() {
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(libc::SIGWINCH), "SIGWINCH");
        assert_eq!(signal_name(42), "signal 42");
    }

    #[tokio::test]
    async fn refuses_a_signal_that_cannot_be_caught() {
        let err = Forwarder::install_for(&[libc::SIGKILL]).unwrap_err();
        assert_eq!(err.signal, libc::SIGKILL);
        assert!(
            err.to_string().starts_with("cannot listen for SIGKILL"),
            "{err}"
        );
    }
}
