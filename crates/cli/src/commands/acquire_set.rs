//! `leasehold acquire A B ...`: several locks at once, all or none, under
//! a fresh lease (or `--lease`), not renewed: as `acquire` of one lock,
//! except that the fresh lease carries no `leasehold.acquired-for` label
//! (releasing one lock of the set must not revoke the lease that holds the
//! others): release each, or revoke the lease.

use super::acquire::AcquireArgs;
use super::{lock_name, Global};
use crate::duration;
use crate::error::CliError;
use crate::exit::Exit;
use crate::output::print_json;
use crate::owner::invoking_owner;
use leasehold_client::{AcquiredAll, LeaseId, LockName};
use serde_json::json;
use std::time::Duration;

const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// Runs `acquire` of several names.
pub async fn run(args: AcquireArgs, global: &Global) -> Result<(), CliError> {
    args.hold.check_for_a_set()?;
    let names = args
        .names
        .iter()
        .map(|name| lock_name(name))
        .collect::<Result<Vec<_>, _>>()?;
    leasehold_core::lock_set::check_names(&names).map_err(leasehold_client::Error::from)?;
    let client = global.client().await?;
    let (lease, fresh) = match args.lease {
        Some(lease) => (LeaseId(lease), false),
        None => {
            let ttl = args.ttl.unwrap_or(DEFAULT_TTL);
            let owner = invoking_owner(args.owner.clone(), Vec::new(), args.owner_pid)?;
            (client.grant_lease(ttl, owner).await?.lease, true)
        }
    };
    let outcome = tokio::select! {
        outcome = client.acquire_all(lease, &names, args.wait, args.fenced) => outcome.map_err(CliError::from),
        _ = tokio::signal::ctrl_c() => Err(CliError::new(Exit::Interrupted, "interrupted while acquiring the set; nothing is held")),
    };
    match outcome {
        Ok(acquired) => {
            print(&args, &names, lease, &acquired);
            Ok(())
        }
        Err(error) => {
            if fresh {
                // Best effort: the lease would expire after its ttl anyway.
                let _ = client.revoke_lease(lease).await;
            }
            Err(error)
        }
    }
}

fn print(args: &AcquireArgs, names: &[LockName], lease: LeaseId, acquired: &AcquiredAll) {
    let held = names.iter().zip(&acquired.tokens);
    if args.json {
        let locks: Vec<_> = held
            .map(|(name, token)| json!({ "lock": name.as_str(), "token": token.0 }))
            .collect();
        print_json(&json!({
            "locks": locks,
            "lease": lease.0,
            "revision": acquired.revision.0,
            "already_held": acquired.already_held,
            "waited_ms": duration::ms(acquired.waited),
            "fenced": args.fenced,
        }));
    } else {
        let listed: Vec<String> = held
            .map(|(name, token)| format!("{name} (token {token})"))
            .collect();
        println!(
            "acquired {} under lease {lease}; the lease is not renewed: release each lock, or `leasehold lease revoke {lease}`",
            listed.join(", ")
        );
    }
}
