//! `leasehold get NAME`: describes one lock (linearizable read; with
//! `--stale`, any node's applied state, which may be behind): holder,
//! owner, time left on the holder's lease, and the waiters in queue order.

use super::{revision, Global};
use crate::duration;
use crate::error::CliError;
use crate::output::{lock_json, owner_human, print_json, waiters_human};
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
        print!("{}", human(&lock));
    }
    Ok(())
}

fn human(lock: &LockInfo) -> String {
    let mut out = format!("lock {}\n", lock.name);
    match &lock.holder {
        Some(h) => {
            let owner = h
                .owner
                .as_ref()
                .map(owner_human)
                .unwrap_or_else(|| "-".into());
            out.push_str(&format!(
                "holder: lease {} token {}{} owner {owner}, lease remaining {} of {}\n",
                h.lease,
                h.token,
                if h.fenced { " (fenced)" } else { "" },
                duration::approx(h.lease_remaining_ms),
                duration::human(h.lease_ttl_ms),
            ));
        }
        None if lock.lock_delay_remaining_ms > 0 => out.push_str(&format!(
            "holder: none (lock delay, {} left)\n",
            duration::approx(lock.lock_delay_remaining_ms)
        )),
        None => out.push_str("holder: none\n"),
    }
    out.push_str(&waiters_human(&lock.waiters, "  "));
    out
}
