//! `leasehold release NAME --lease ID --token T`: releases a lock held by
//! (lease, token). A release of a lock that does not exist or is held under
//! another token fails loudly (exit 4) and says which (docs/DESIGN.md §2.7).

use super::{revision, Global};
use crate::connect::request_id;
use crate::error::CliError;
use crate::output::print_json;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::ReleaseRequest;
use serde_json::json;
use std::time::Duration;

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
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Runs `release`.
pub async fn run(args: ReleaseArgs, global: &Global) -> Result<(), CliError> {
    let mut conn = global.connect().await?;
    let request = ReleaseRequest {
        lease: args.lease,
        name: args.name.clone(),
        token: args.token,
        request_id: request_id(),
    };
    let reply = conn
        .call(Duration::ZERO, |ch| {
            let request = request.clone();
            async move { LockClient::new(ch).release(request).await }
        })
        .await?;
    if args.json {
        print_json(&json!({
            "lock": args.name,
            "lease": args.lease,
            "token": args.token,
            "revision": revision(reply.header.as_ref()),
        }));
    } else {
        println!("released {} (token {})", args.name, args.token);
    }
    Ok(())
}
