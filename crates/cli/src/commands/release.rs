//! `leasehold release NAME --lease ID --token T`: releases a lock held by
//! (lease, token). A release of a lock that does not exist or is held under
//! another token fails loudly (exit 4) and says which (docs/DESIGN.md §2.7).

use super::{lock_name, Global};
use crate::error::CliError;
use crate::output::print_json;
use leasehold_client::{LeaseId, Token};
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
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Runs `release`.
pub async fn run(args: ReleaseArgs, global: &Global) -> Result<(), CliError> {
    let name = lock_name(&args.name)?;
    let client = global.client().await?;
    let revision = client
        .release(LeaseId(args.lease), &name, Token(args.token))
        .await?;
    if args.json {
        print_json(&json!({
            "lock": args.name,
            "lease": args.lease,
            "token": args.token,
            "revision": revision.0,
        }));
    } else {
        println!("released {} (token {})", args.name, args.token);
    }
    Ok(())
}
