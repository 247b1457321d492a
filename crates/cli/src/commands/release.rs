//! `leasehold release NAME --lease ID --token T`: releases a lock held by
//! (lease, token). A release of a lock that does not exist or is held under
//! another token fails loudly (exit 4) and says which (docs/DESIGN.md §2.7).
//!
//! The lease `leasehold acquire` granted for this lock (its label
//! `leasehold.acquired-for` names the lock) goes with it: once the lock is
//! released, the lease is revoked if it holds and waits for nothing else,
//! instead of living on for its whole ttl. `--keep-lease` keeps it; a lease
//! granted otherwise (`lease grant`, `acquire --lease`) is never revoked.

use super::{lock_name, Global};
use crate::error::CliError;
use crate::output::print_json;
use crate::owner::ACQUIRED_FOR_LABEL;
use leasehold_client::{Client, LeaseId, Token};
use serde_json::json;

/// `leasehold release`
#[derive(clap::Args, Debug)]
pub struct ReleaseArgs {
    /// The lock name.
    pub name: String,
    /// The lease that holds the lock.
    #[arg(long)]
    pub lease: u64,
    /// The fencing token the lock was acquired with.
    #[arg(long)]
    pub token: u64,
    /// Keep the lease that `acquire` granted for this lock (default: it is
    /// revoked with the lock when it holds nothing else).
    #[arg(long)]
    pub keep_lease: bool,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Runs `release`.
pub async fn run(args: ReleaseArgs, global: &Global) -> Result<(), CliError> {
    let name = lock_name(&args.name)?;
    let client = global.client().await?;
    let lease = LeaseId(args.lease);
    let revision = client.release(lease, &name, Token(args.token)).await?;
    let lease_revoked =
        !args.keep_lease && revoke_if_acquired_for(&client, lease, &args.name).await;
    if args.json {
        print_json(&json!({
            "lock": args.name,
            "lease": args.lease,
            "token": args.token,
            "revision": revision.0,
            "lease_revoked": lease_revoked,
        }));
    } else if lease_revoked {
        println!(
            "released {} (token {}) and revoked lease {lease}, which `acquire` granted for it",
            args.name, args.token
        );
    } else {
        println!("released {} (token {})", args.name, args.token);
    }
    Ok(())
}

/// Revokes `lease` if `acquire` granted it for lock `name` and it now holds
/// and waits for nothing; true if it did. Best effort: a lease that cannot
/// be read or revoked expires after its ttl anyway.
async fn revoke_if_acquired_for(client: &Client, lease: LeaseId, name: &str) -> bool {
    let Ok(info) = client.lease_info(lease).await else {
        return false;
    };
    let acquired_for = info
        .owner
        .as_ref()
        .and_then(|owner| owner.labels.get(ACQUIRED_FOR_LABEL))
        .is_some_and(|lock| lock == name);
    if !acquired_for || !info.holds.is_empty() || !info.waits.is_empty() {
        return false;
    }
    client.revoke_lease(lease).await.is_ok()
}
