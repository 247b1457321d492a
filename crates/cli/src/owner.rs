//! `KEY=VALUE` flags (`--label`, `--metadata`), and the owner of the leases
//! the one-shot commands grant (`acquire`, `lease grant`). The owner itself
//! is built by the client library (`leasehold_client::owner_info_of`); what
//! is decided here is *whose* process it names: the invoking one (the
//! CLI's parent: the script that will use the token), since the CLI itself
//! exits at once and `get` would show the owner gone.

use crate::error::CliError;
use leasehold_client::wire::OwnerInfo;

/// The label `acquire` puts on the lease it grants for a lock: the lock's
/// name. `release` of that lock revokes such a lease too (unless
/// `--keep-lease`), when it holds and waits for nothing else.
pub const ACQUIRED_FOR_LABEL: &str = "leasehold.acquired-for";

/// The owner of a lease granted for a script: process `owner_pid`
/// (`--owner-pid`), else the invoking process. A pid that does not run
/// here is a usage error.
pub fn invoking_owner(
    owner: Option<String>,
    labels: Vec<(String, String)>,
    owner_pid: Option<u32>,
) -> Result<OwnerInfo, CliError> {
    let pid = owner_pid.unwrap_or_else(|| script_pid(std::os::unix::process::parent_id()));
    leasehold_client::owner_info_of(pid, owner, labels).ok_or_else(|| {
        CliError::usage(format!(
            "--owner-pid {pid}: no such process runs on this host; give the pid of the process that uses the lock"
        ))
    })
}

/// The script behind `parent`: `L=$(leasehold lease grant ...)` runs the
/// CLI in a command-substitution subshell, a fork of the script that exits
/// as soon as the CLI does. Such a fork has its parent's executable and
/// command line; the script is the first ancestor that is not one.
fn script_pid(parent: u32) -> u32 {
    let mut pid = parent;
    // A few levels at most: `$( ( ... ) )` nests, but not forever.
    for _ in 0..SUBSHELL_LEVELS_MAX {
        match grandparent_if_fork(pid) {
            Some(above) => pid = above,
            None => break,
        }
    }
    pid
}

/// How many nested subshells [`script_pid`] looks through.
const SUBSHELL_LEVELS_MAX: usize = 4;

/// `pid`'s parent, if `pid` is a fork of it that did not exec (same
/// executable, same command line).
fn grandparent_if_fork(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let ppid: u32 = after_comm.split_whitespace().nth(1)?.parse().ok()?;
    let same = |what: &str| {
        let mine = std::fs::read(format!("/proc/{pid}/{what}")).ok();
        let theirs = std::fs::read(format!("/proc/{ppid}/{what}")).ok();
        mine.is_some() && mine == theirs
    };
    let exe = |p: u32| std::fs::read_link(format!("/proc/{p}/exe")).ok();
    (ppid > 1 && exe(pid).is_some() && exe(pid) == exe(ppid) && same("cmdline")).then_some(ppid)
}

/// Parses a `--label` / `--metadata` value `KEY=VALUE`.
pub fn parse_key_value(raw: &str) -> Result<(String, String), String> {
    match raw.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{raw:?} is not KEY=VALUE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_values_need_a_key_and_an_equals_sign() {
        assert_eq!(parse_key_value("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_key_value("=x").is_err());
        assert!(parse_key_value("x").is_err());
    }
}
