//! `leasehold get NAME`: describes one lock (linearizable read; with
//! `--stale`, any node's applied state, which may be behind): holder,
//! owner and whether its process runs, acquired at and held for, lease time
//! left, renewals and last renewal, lock delay and max hold, the usual hold
//! under its prefix, and the waiters in queue order (see `lock_view.rs`).

use super::{consistency, lock_name, Global};
use crate::error::CliError;
use crate::lock_view::{lock_human, lock_json};
use crate::output::print_json;
use leasehold_client::wire::LockInfo;

/// `leasehold get`
#[derive(clap::Args, Debug)]
pub struct GetArgs {
    /// The lock name.
    pub name: String,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Answer from the node reached, without a read barrier: any node
    /// answers (no leader needed), but the answer may be behind the leader's.
    #[arg(long)]
    pub stale: bool,
}

/// Runs `get`.
pub async fn run(args: GetArgs, global: &Global) -> Result<(), CliError> {
    let name = lock_name(&args.name)?;
    let client = global.client().await?;
    let reply = client.get_lock(&name, consistency(args.stale)).await?;
    crate::lock_view::warn_if_removed(reply.header.as_ref());
    let lock = reply.lock.unwrap_or_else(|| LockInfo {
        name: args.name.clone(),
        ..Default::default()
    });
    let header = reply.header.unwrap_or_default();
    if args.json {
        let mut value = lock_json(&lock);
        value["revision"] = header.revision.into();
        print_json(&value);
    } else {
        print!("{}", lock_human(&lock, header.server_time_unix_ms, ""));
    }
    Ok(())
}
