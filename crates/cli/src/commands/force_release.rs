//! `leasehold force-release NAME --token T --reason TEXT [--allow-unfenced]
//! [--revoke-lease]`: the break-glass release, for a holder that will not let
//! go (hung, or an orphan whose lease something keeps renewing).
//!
//! Before acting it prints the evidence it sees on stderr (holder lease,
//! owner, process, token, fenced, time left on the lease, last renewal,
//! waiters), so the operator's terminal and any incident log show what was
//! broken. The server refuses (exit 4) unless `--token` is still the
//! holder's token, and refuses a holder that did not declare `fenced` unless
//! `--allow-unfenced`: nothing would reject that holder's late writes. The
//! caller (`$USER@host`) and reason are kept in the server's incident record.

use super::{lock_name, Global};
use crate::error::CliError;
use crate::lock_view::{lock_human, lock_json};
use crate::output::print_json;
use leasehold_client::{Consistency, ForceRelease, Token};
use serde_json::json;

/// `leasehold force-release`
#[derive(clap::Args, Debug)]
pub struct ForceReleaseArgs {
    /// The lock name.
    pub name: String,
    /// The holder's fencing token, as `leasehold get` shows it: the release
    /// is refused if the lock has changed hands since.
    #[arg(long)]
    pub token: u64,
    /// Why (required; kept in the server's record of force releases).
    #[arg(long)]
    pub reason: String,
    /// Also free a holder that did not declare `--fenced`. Nothing rejects
    /// its late writes, so stop the holder first.
    #[arg(long)]
    pub allow_unfenced: bool,
    /// Revoke the holder's whole lease: every lock it holds is freed and its
    /// keep-alives fail, so a library holder sees the loss at its next renewal.
    #[arg(long)]
    pub revoke_lease: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Runs `force-release`.
pub async fn run(args: ForceReleaseArgs, global: &Global) -> Result<(), CliError> {
    let name = lock_name(&args.name)?;
    let force = ForceRelease {
        expected_token: Token(args.token),
        reason: args.reason.clone(),
        caller: caller(),
        allow_unfenced: args.allow_unfenced,
        revoke_lease: args.revoke_lease,
    };
    // Refuse a missing reason before showing evidence or touching the server.
    leasehold_core::command::check_force(&force.reason, &force.caller)
        .map_err(|e| CliError::usage(e.to_string()))?;
    let client = global.client().await?;
    let seen = client.get_lock(&name, Consistency::Linearizable).await?;
    let now_unix_ms = seen.header.as_ref().map_or(0, |h| h.server_time_unix_ms);
    let lock = seen.lock.unwrap_or_default();
    eprint!(
        "force-release: what it sees now:\n{}",
        lock_human(&lock, now_unix_ms, "  ")
    );
    let released = client.force_release(&name, &force).await?;
    if args.json {
        print_json(&json!({
            "lock": args.name,
            "token": args.token,
            "lease": released.lease.0,
            "revoked_lease": released.revoked_lease,
            "released": released.released,
            "caller": force.caller,
            "reason": args.reason,
            "revision": released.revision.0,
            "evidence": lock_json(&lock),
        }));
    } else if released.revoked_lease {
        println!(
            "force-released {} (token {}): revoked lease {}, freeing {}",
            args.name,
            args.token,
            released.lease,
            released.released.join(", ")
        );
    } else {
        println!(
            "force-released {} (token {}) from lease {}",
            args.name, args.token, released.lease
        );
    }
    Ok(())
}

/// Who is breaking the lock, as `$USER@host`.
fn caller() -> String {
    let host = leasehold_client::owner_info(None, vec![]).host;
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    format!("{user}@{host}")
}
