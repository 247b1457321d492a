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
    let pid = owner_pid.unwrap_or_else(std::os::unix::process::parent_id);
    leasehold_client::owner_info_of(pid, owner, labels).ok_or_else(|| {
        CliError::usage(format!(
            "--owner-pid {pid}: no such process runs on this host; give the pid of the process that uses the lock"
        ))
    })
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
