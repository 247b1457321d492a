//! `leasehold acquire NAME`: acquires a lock once and exits without renewing
//! it. Without `--lease` it grants a fresh lease first (revoked again if the
//! acquire fails, so a failed attempt leaves nothing behind); the lock then
//! lives as long as that lease: renew it with `leasehold lease keepalive`.

use super::{lease, revision, Global};
use crate::connect::{request_id, Conn};
use crate::duration;
use crate::error::CliError;
use crate::exit::Exit;
use crate::output::print_json;
use leasehold_proto::v1::lease_client::LeaseClient;
use leasehold_proto::v1::lock_client::LockClient;
use leasehold_proto::v1::{AcquireRequest, AcquireResponse, GetLeaseRequest};
use serde_json::json;
use std::time::Duration;

/// `leasehold acquire`
#[derive(clap::Args, Debug)]
pub struct AcquireArgs {
    /// The lock name.
    pub name: String,
    /// Ttl of the fresh lease granted for this lock (default 10s).
    #[arg(long, value_parser = duration::parse, conflicts_with = "lease")]
    pub ttl: Option<Duration>,
    /// Wait up to this long in the lock's FIFO queue (default: fail if busy).
    #[arg(long, value_parser = duration::parse, default_value = "0")]
    pub wait: Duration,
    /// Acquire for this existing lease instead of granting a fresh one.
    #[arg(long)]
    pub lease: Option<u64>,
    /// The protected resource checks fencing tokens.
    #[arg(long)]
    pub fenced: bool,
    /// After this holder's lease expires, keep the lock unavailable this long.
    #[arg(long, value_parser = duration::parse)]
    pub lock_delay: Option<Duration>,
    /// The server releases the lock after this long.
    #[arg(long, value_parser = duration::parse)]
    pub max_hold: Option<Duration>,
    /// Metadata KEY=VALUE stored with the holder (repeatable).
    #[arg(long = "metadata", value_parser = crate::owner::parse_key_value, value_name = "KEY=VALUE")]
    pub metadata: Vec<(String, String)>,
    /// Owner name of the fresh lease (default: $USER@host).
    #[arg(long, conflicts_with = "lease")]
    pub owner: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// Runs `acquire`.
pub async fn run(args: AcquireArgs, global: &Global) -> Result<(), CliError> {
    let mut conn = global.connect().await?;
    let (lease, fresh_ttl_ms) = match args.lease {
        Some(lease) => (lease, None),
        None => {
            let ttl = args.ttl.unwrap_or(DEFAULT_TTL);
            let granted = lease::grant(&mut conn, ttl, args.owner.clone(), vec![]).await?;
            (granted.lease, Some(granted.ttl_ms))
        }
    };
    let outcome = tokio::select! {
        outcome = acquire(&mut conn, &args, lease) => outcome,
        _ = tokio::signal::ctrl_c() => Err(CliError::new(Exit::Other, format!("interrupted while acquiring {}", args.name))),
    };
    let reply = match outcome {
        Ok(reply) => reply,
        Err(err) => {
            if fresh_ttl_ms.is_some() {
                // Best effort: the lease would expire after its ttl anyway.
                let _ = lease::revoke(&mut conn, lease).await;
            }
            return Err(err);
        }
    };
    let ttl_ms = match fresh_ttl_ms {
        Some(ttl_ms) => Some(ttl_ms),
        None => lease_ttl_ms(&mut conn, lease).await,
    };
    if args.json {
        print_json(&json!({
            "lock": args.name,
            "lease": lease,
            "token": reply.token,
            "revision": revision(reply.header.as_ref()),
            "ttl_ms": ttl_ms,
            "already_held": reply.already_held,
            "waited_ms": reply.waited_ms,
            "fenced": args.fenced,
        }));
    } else {
        let ttl = ttl_ms
            .map(duration::human)
            .unwrap_or_else(|| "its ttl".into());
        println!(
            "acquired {} with token {} under lease {}; the lease is not renewed: it expires after {ttl} unless renewed with `leasehold lease keepalive {lease}`",
            args.name, reply.token, lease
        );
    }
    Ok(())
}

/// Sends the acquire; the call may take `--wait` longer than `--timeout`.
async fn acquire(
    conn: &mut Conn,
    args: &AcquireArgs,
    lease: u64,
) -> Result<AcquireResponse, CliError> {
    let request = AcquireRequest {
        lease,
        name: args.name.clone(),
        wait_ms: duration::ms(args.wait),
        request_id: request_id(),
        fenced: args.fenced,
        lock_delay_ms: args.lock_delay.map(duration::ms).unwrap_or(0),
        max_hold_ms: args.max_hold.map(duration::ms).unwrap_or(0),
        metadata: args.metadata.iter().cloned().collect(),
    };
    conn.call(args.wait, |ch| {
        let request = request.clone();
        async move { LockClient::new(ch).acquire(request).await }
    })
    .await
}

/// The ttl of an existing lease, for the output (None if it cannot be read).
async fn lease_ttl_ms(conn: &mut Conn, lease: u64) -> Option<u64> {
    let request = GetLeaseRequest { lease };
    conn.call(Duration::ZERO, |ch| async move {
        LeaseClient::new(ch).get(request).await
    })
    .await
    .ok()
    .and_then(|r| r.lease)
    .map(|l| l.ttl_ms)
}
