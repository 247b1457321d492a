//! Runs the command of `leasehold lock NAME -- CMD ARGS…` and keeps it on a
//! short leash (docs/DESIGN.md §4).
//!
//! Why a module of its own: the lock is only worth something if nothing keeps
//! working under it once it is gone. So the command runs in its own process
//! group (one `kill(-pgid)` reaches everything it started, grandchildren
//! included); if `leasehold` itself dies, even by `kill -9`, the command gets
//! SIGKILL from the kernel (a parent-death signal) and the rest of its group
//! from a watchdog process (see [`watchdog`]), so no orphan works on a lease
//! nobody renews; and on loss of the lock the whole group gets SIGTERM, then SIGKILL
//! after a grace period. Signals sent to us (`kill`, systemd, a shell
//! passing on SIGHUP) would not reach the command's group, so we forward
//! them. When we are the terminal's foreground job, the command's group
//! becomes the foreground group while it runs, as a shell does for its
//! jobs: otherwise an interactive command would stop (SIGTTIN, SIGTTOU) the
//! moment it used the terminal. The terminal's own signals (Ctrl-C's SIGINT,
//! Ctrl-\'s SIGQUIT, SIGWINCH) then go straight to the command's group, not
//! to us, and Ctrl-Z stops the command but not us (see [`terminal`]).
//!
//! This half knows nothing about locks: the caller acquires, spawns with the
//! lock's variables in the environment, forwards signals while it waits, and
//! maps how the command ended to an exit code.
//!
//! Layout: [`child`] (spawn, wait, terminate), [`group`] (signal and probe a
//! process group), [`watchdog`] (kills the group when we die), [`runnable`]
//! (can the command be run, checked before acquiring), [`signals`] (forwarding), [`terminal`] (lend the terminal
//! to the command), [`exit_code`](mod@exit_code) (how the command ended →
//! our exit code), [`error`] (what can fail, in words for the user).
//!
//! Linux only: the parent-death signal is `prctl(PR_SET_PDEATHSIG)` and the
//! zombie check reads `/proc`.

mod child;
mod error;
mod exit_code;
mod group;
mod runnable;
mod signals;
mod terminal;
#[cfg(test)]
mod tests;
mod watchdog;

// What `commands::lock` names; the other public types (`Termination`,
// `ProcessGroup`, the errors) reach it as return values.
pub use child::{die_with_parent, Supervised};
pub use error::WaitError;
pub use exit_code::exit_code;
pub use group::process_stopped;
pub use runnable::check_runnable;
pub use signals::{signal_name, Forwarder};
