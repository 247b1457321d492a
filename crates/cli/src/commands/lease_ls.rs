//! `leasehold lease ls` (etcd's `lease list`): the live leases with their
//! owner, ttl, time left and the locks they hold (with tokens), as an
//! aligned table or one JSON array.

use super::consistency;
use crate::error::CliError;
use crate::output::{print_json, table};
use leasehold_client::show::{approx, human, owner};
use leasehold_client::wire::{owner_json, LeaseInfo};
use serde_json::{json, Value};

/// `leasehold lease ls`
#[derive(clap::Args, Debug)]
pub struct LsArgs {
    /// Print one JSON document (an array of leases).
    #[arg(long)]
    pub json: bool,
    /// Answer from the node reached, without a read barrier: any node
    /// answers (no leader needed), but the answer may be behind the leader's.
    #[arg(long)]
    pub stale: bool,
}

/// Runs `lease ls`.
pub async fn run(client: &leasehold_client::Client, args: LsArgs) -> Result<(), CliError> {
    let reply = client.list_leases(consistency(args.stale)).await?;
    if reply.truncated {
        eprintln!("note: more leases are live than the server returns at once");
    }
    if args.json {
        print_json(&Value::Array(reply.leases.iter().map(lease_json).collect()));
    } else if reply.leases.is_empty() {
        eprintln!("no live leases");
    } else {
        print!("{}", table(&lease_rows(&reply.leases)));
    }
    Ok(())
}

fn lease_json(lease: &LeaseInfo) -> Value {
    json!({
        "lease": lease.id,
        "ttl_ms": lease.ttl_ms,
        "remaining_ms": lease.remaining_ms,
        "owner": lease.owner.as_ref().map_or(Value::Null, owner_json),
        "held": lease.held.iter().map(|h| json!({"lock": h.name, "token": h.token})).collect::<Vec<_>>(),
        "waits": lease.waits,
        "granted_unix_ms": lease.granted_unix_ms,
        "renewed_unix_ms": lease.renewed_unix_ms,
    })
}

/// The header row and one row per lease.
fn lease_rows(leases: &[LeaseInfo]) -> Vec<Vec<String>> {
    let header = ["LEASE", "OWNER", "TTL", "REMAINING", "LOCKS"];
    let mut rows = vec![header.map(str::to_owned).to_vec()];
    for lease in leases {
        let held: Vec<String> = lease
            .held
            .iter()
            .map(|h| format!("{}={}", h.name, h.token))
            .collect();
        rows.push(vec![
            lease.id.to_string(),
            lease.owner.as_ref().map_or_else(|| "-".to_owned(), owner),
            human(lease.ttl_ms),
            approx(lease.remaining_ms),
            if held.is_empty() {
                "-".to_owned()
            } else {
                held.join(", ")
            },
        ]);
    }
    rows
}
