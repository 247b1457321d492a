//! `leasehold lease grant|keepalive|revoke|get`: leases on their own, for
//! scripts that hold several locks under one lease or renew from a sidecar.

use super::Global;
use crate::duration;
use crate::error::CliError;
use crate::exit::Exit;
use crate::output::print_json;
use crate::owner::invoking_owner;
use leasehold_client::show::{approx, human};
use leasehold_client::wire::owner_json;
use leasehold_client::{Client, LeaseId, Renewed};
use serde_json::json;
use std::time::Duration;

/// `leasehold lease ...`
#[derive(clap::Subcommand, Debug)]
pub enum LeaseCmd {
    /// Grants a lease and prints its id.
    Grant(GrantArgs),
    /// Keeps a lease alive (until Ctrl-C), or renews it once with --once.
    Keepalive(KeepaliveArgs),
    /// Revokes a lease, releasing every lock it holds.
    Revoke(RevokeArgs),
    /// Describes a lease.
    Get(GetArgs),
    /// Lists the live leases: owner, ttl, time left, locks held.
    Ls(super::lease_ls::LsArgs),
}

/// `leasehold lease grant`
#[derive(clap::Args, Debug)]
pub struct GrantArgs {
    /// Time to live without a keep-alive (e.g. 10s).
    #[arg(long, value_parser = duration::ttl)]
    pub ttl: Duration,
    /// Owner name shown to operators (default: $USER@host).
    #[arg(long)]
    pub owner: Option<String>,
    /// The process that uses the lease, recorded as its owner (default:
    /// the one that ran `leasehold lease grant`, e.g. the script).
    #[arg(long, value_name = "PID")]
    pub owner_pid: Option<u32>,
    /// A free label KEY=VALUE (repeatable).
    #[arg(long = "label", value_parser = crate::owner::parse_key_value, value_name = "KEY=VALUE")]
    pub labels: Vec<(String, String)>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// `leasehold lease keepalive`
#[derive(clap::Args, Debug)]
pub struct KeepaliveArgs {
    /// The lease id.
    pub id: u64,
    /// Renew once (unary) and exit.
    #[arg(long)]
    pub once: bool,
    /// Print JSON: one document with --once; otherwise one per line per renewal.
    #[arg(long)]
    pub json: bool,
}

/// `leasehold lease revoke`
#[derive(clap::Args, Debug)]
pub struct RevokeArgs {
    /// The lease id.
    pub id: u64,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// `leasehold lease get`
#[derive(clap::Args, Debug)]
pub struct GetArgs {
    /// The lease id.
    pub id: u64,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Runs a `lease` subcommand.
pub async fn run(cmd: LeaseCmd, global: &Global) -> Result<(), CliError> {
    if let LeaseCmd::Keepalive(args) = &cmd {
        if !args.once {
            return keepalive_stream(global, args).await;
        }
    }
    let client = global.client().await?;
    match cmd {
        LeaseCmd::Grant(args) => grant_cmd(&client, args).await,
        LeaseCmd::Keepalive(args) => keepalive_once(&client, args).await,
        LeaseCmd::Revoke(args) => revoke_cmd(&client, args).await,
        LeaseCmd::Get(args) => get_cmd(&client, args).await,
        LeaseCmd::Ls(args) => super::lease_ls::run(&client, args).await,
    }
}

async fn grant_cmd(client: &Client, args: GrantArgs) -> Result<(), CliError> {
    let owner = invoking_owner(args.owner, args.labels, args.owner_pid)?;
    let granted = client.grant_lease(args.ttl, owner).await?;
    let ttl_ms = duration::ms(granted.ttl);
    if args.json {
        print_json(&json!({
            "lease": granted.lease.0,
            "ttl_ms": ttl_ms,
            "revision": granted.revision.0,
        }));
    } else {
        println!("granted lease {} (ttl {})", granted.lease, human(ttl_ms));
    }
    Ok(())
}

fn print_renewal(lease: u64, ttl_ms: u64, renewed: Renewed, json: bool) {
    if json {
        print_json(&json!({
            "lease": lease,
            "ttl_ms": ttl_ms,
            "seq": renewed.count,
            "revision": renewed.revision,
        }));
    } else {
        println!("renewed lease {lease} (ttl {})", human(ttl_ms));
    }
}

async fn keepalive_once(client: &Client, args: KeepaliveArgs) -> Result<(), CliError> {
    let renewal = client.renew_lease(LeaseId(args.id)).await?;
    let renewed = Renewed {
        count: 1,
        revision: renewal.revision.0,
    };
    print_renewal(
        renewal.lease.0,
        duration::ms(renewal.ttl),
        renewed,
        args.json,
    );
    Ok(())
}

/// Renews the lease with the client library's keeper (the same one `lock`
/// and library users get: every ttl/3 over a stream, failing over between
/// endpoints and reconnecting through restarts and leader changes, inside
/// the lease's validity window) and prints each renewal. Ends on Ctrl-C
/// (exit 0; the lease is left to expire after its ttl) or when the lease is
/// lost: the server says it is gone, or no renewal was acknowledged before
/// its local deadline (exit 4, saying which).
async fn keepalive_stream(global: &Global, args: &KeepaliveArgs) -> Result<(), CliError> {
    let client = global.keeper_client().await?;
    let lease = client.keep_alive(LeaseId(args.id)).start().await?;
    let ttl_ms = duration::ms(lease.timing().ttl);
    let mut renewals = lease.renewals();
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let renewed = *renewals.borrow_and_update();
        print_renewal(args.id, ttl_ms, renewed, args.json);
        tokio::select! {
            _ = &mut interrupted => {
                eprintln!("stopped renewing lease {}; it expires after its ttl", args.id);
                return Ok(());
            }
            lost = lease.lost() => {
                return Err(CliError::new(
                    Exit::Ownership,
                    format!("{lost}; stopped renewing it"),
                ));
            }
            changed = renewals.changed() => {
                if changed.is_err() {
                    return Err(CliError::new(Exit::Other, "the lease's renewer stopped"));
                }
            }
        }
    }
}

async fn revoke_cmd(client: &Client, args: RevokeArgs) -> Result<(), CliError> {
    let released = client.revoke_lease(LeaseId(args.id)).await?;
    if args.json {
        print_json(&json!({ "lease": args.id, "released": released }));
    } else if released.is_empty() {
        println!("revoked lease {}", args.id);
    } else {
        println!(
            "revoked lease {}; released {}",
            args.id,
            released.join(", ")
        );
    }
    Ok(())
}

async fn get_cmd(client: &Client, args: GetArgs) -> Result<(), CliError> {
    let info = client.lease_info(LeaseId(args.id)).await?;
    if args.json {
        print_json(&json!({
            "lease": info.id,
            "ttl_ms": info.ttl_ms,
            "remaining_ms": info.remaining_ms,
            "owner": info.owner.as_ref().map_or(serde_json::Value::Null, owner_json),
            "holds": info.holds,
            "held": info.held.iter().map(|h| json!({"lock": h.name, "token": h.token})).collect::<Vec<_>>(),
            "waits": info.waits,
            "granted_revision": info.granted_revision,
            "granted_unix_ms": info.granted_unix_ms,
            "renewed_unix_ms": info.renewed_unix_ms,
        }));
    } else {
        let owner = info
            .owner
            .as_ref()
            .map(leasehold_client::show::owner)
            .unwrap_or_default();
        println!(
            "lease {} ttl {} remaining {} owner {}",
            info.id,
            human(info.ttl_ms),
            approx(info.remaining_ms),
            if owner.is_empty() { "-" } else { &owner },
        );
        let labels = info.owner.as_ref().map(|o| {
            let sorted: std::collections::BTreeMap<&String, &String> = o.labels.iter().collect();
            sorted
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        });
        let labels = labels.unwrap_or_default();
        if !labels.is_empty() {
            println!("labels: {}", labels.join(", "));
        }
        let held: Vec<String> = info
            .held
            .iter()
            .map(|h| format!("{} (token {})", h.name, h.token))
            .collect();
        println!(
            "holds: {}",
            if held.is_empty() {
                "-".to_owned()
            } else {
                held.join(", ")
            }
        );
        println!(
            "waits: {}",
            if info.waits.is_empty() {
                "-".to_owned()
            } else {
                info.waits.join(", ")
            }
        );
    }
    Ok(())
}
