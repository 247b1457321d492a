//! `leasehold get NAME`: describes one lock (linearizable read; with
//! `--stale`, any node's applied state, which may be behind): holder,
//! owner and whether its process runs, acquired at and held for, lease time
//! left, renewals and last renewal, lock delay and max hold, the usual hold
//! under its prefix, and the waiters in queue order (see `lock_view.rs`).

use super::{revision, Global};
use crate::error::CliError;
use crate::lock_view::{lock_human, lock_json};
use crate::output::print_json;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{GetLockRequest, LockInfo};
use std::time::Duration;

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
    let mut conn = global.connect().await?;
    let request = GetLockRequest {
        name: args.name.clone(),
        stale: args.stale,
    };
    let reply = conn
        .call(Duration::ZERO, |ch| {
            let request = request.clone();
            async move { LockClient::new(ch).get(request).await }
        })
        .await?;
    let lock = reply.lock.unwrap_or_else(|| LockInfo {
        name: args.name.clone(),
        ..Default::default()
    });
    if args.json {
        let mut value = lock_json(&lock);
        value["revision"] = revision(reply.header.as_ref()).into();
        print_json(&value);
    } else {
        let now_unix_ms = reply.header.as_ref().map_or(0, |h| h.server_time_unix_ms);
        print!("{}", lock_human(&lock, now_unix_ms, ""));
    }
    Ok(())
}
