//! `leasehold acquire NAME`: acquires a lock once and exits without renewing
//! it. Without `--lease` it grants a fresh lease first (revoked again if the
//! acquire fails, so a failed attempt leaves nothing behind); the lock then
//! lives as long as that lease: renew it with `leasehold lease keepalive`.
//! That lease's owner is the invoking process (`--owner-pid` to name
//! another), and its label `leasehold.acquired-for` names the lock, so that
//! `release` of the lock revokes it too.
//!
//! Several names take them all at once, all or none (`acquire_set.rs`).

use super::{lock_name, Global, HoldFlags};
use crate::duration;
use crate::error::CliError;
use crate::exit::Exit;
use crate::output::print_json;
use crate::owner::{invoking_owner, ACQUIRED_FOR_LABEL};
use leasehold_client::show::human;
use leasehold_client::{Acquired, Client, LeaseId, LockName};
use serde_json::json;
use std::time::Duration;

/// `leasehold acquire`
#[derive(clap::Args, Debug)]
pub struct AcquireArgs {
    /// The lock name. Several names take them all at once, all or none.
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// Ttl of the fresh lease granted for this lock (default 10s).
    #[arg(long, value_parser = duration::ttl, conflicts_with = "lease")]
    pub ttl: Option<Duration>,
    /// Wait up to this long in the lock's FIFO queue (default: fail if busy).
    #[arg(long, value_parser = duration::wait, default_value = "0")]
    pub wait: Duration,
    /// Acquire for this existing lease instead of granting a fresh one.
    #[arg(long)]
    pub lease: Option<u64>,
    /// The protected resource checks fencing tokens.
    #[arg(long)]
    pub fenced: bool,
    /// Lock delay, max hold and metadata.
    #[command(flatten)]
    pub hold: HoldFlags,
    /// Owner name of the fresh lease (default: $USER@host).
    #[arg(long, conflicts_with = "lease")]
    pub owner: Option<String>,
    /// The process that uses the lock, recorded as the fresh lease's owner
    /// (default: the one that ran `leasehold acquire`, e.g. the script).
    #[arg(long, conflicts_with = "lease", value_name = "PID")]
    pub owner_pid: Option<u32>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// Runs `acquire`.
pub async fn run(args: AcquireArgs, global: &Global) -> Result<(), CliError> {
    if args.names.len() > 1 {
        return super::acquire_set::run(args, global).await;
    }
    let name = lock_name(&args.names[0])?;
    let client = global.client().await?;
    let (lease, fresh_ttl) = match args.lease {
        Some(lease) => (LeaseId(lease), None),
        None => {
            let ttl = args.ttl.unwrap_or(DEFAULT_TTL);
            let label = (ACQUIRED_FOR_LABEL.to_owned(), name.as_str().to_owned());
            let owner = invoking_owner(args.owner.clone(), vec![label], args.owner_pid)?;
            let granted = client.grant_lease(ttl, owner).await?;
            (granted.lease, Some(granted.ttl))
        }
    };
    let options = args.hold.options(args.wait, args.fenced);
    let outcome = tokio::select! {
        outcome = client.acquire(lease, &name, &options) => outcome.map_err(CliError::from),
        _ = tokio::signal::ctrl_c() => Err(CliError::new(Exit::Interrupted, format!("interrupted while acquiring {name}; nothing is held"))),
    };
    let acquired = match outcome {
        Ok(acquired) => acquired,
        Err(err) => {
            if fresh_ttl.is_some() {
                // Best effort: the lease would expire after its ttl anyway.
                let _ = client.revoke_lease(lease).await;
            }
            return Err(err);
        }
    };
    let ttl = match fresh_ttl {
        Some(ttl) => Some(ttl),
        None => lease_ttl(&client, lease).await,
    };
    print(&args, &name, lease, ttl, &acquired);
    Ok(())
}

fn print(
    args: &AcquireArgs,
    name: &LockName,
    lease: LeaseId,
    ttl: Option<Duration>,
    acquired: &Acquired,
) {
    let ttl_ms = ttl.map(duration::ms);
    if args.json {
        print_json(&json!({
            "lock": name.as_str(),
            "lease": lease.0,
            "token": acquired.token.0,
            "revision": acquired.revision.0,
            "ttl_ms": ttl_ms,
            "already_held": acquired.already_held,
            "waited_ms": duration::ms(acquired.waited),
            "fenced": args.fenced,
        }));
    } else {
        let ttl = ttl_ms.map(human).unwrap_or_else(|| "its ttl".into());
        println!(
            "acquired {name} with token {} under lease {lease}; the lease is not renewed: it expires after {ttl} unless renewed with `leasehold lease keepalive {lease}`",
            acquired.token
        );
    }
}

/// The ttl of an existing lease, for the output (None if it cannot be read).
async fn lease_ttl(client: &Client, lease: LeaseId) -> Option<Duration> {
    let info = client.lease_info(lease).await.ok()?;
    Some(Duration::from_millis(info.ttl_ms))
}
