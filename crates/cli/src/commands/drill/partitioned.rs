//! Seed 001, drill 3: the holder is partitioned from the service for
//! longer than its lease. Its connection goes through a proxy the drill
//! starts (`leasehold_chaos::proxy`) to the current leader, and the drill
//! stalls it both ways: nothing fails fast, as across a real partition.
//! The holder must declare the lock lost by its local deadline (within the
//! ttl of the cut); the lock passes to the drill with a higher token; on
//! heal, the holder must not re-extend its lease (the server says it is
//! gone) and its write with the old token is refused.

use super::ctx::{boot_us, Ctx, STEP};
use super::report::Outcome;
use super::{check, ms};
use leasehold_chaos::proxy::{LinkFault, Proxy};
use leasehold_client::{Error, LeaseId};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use tokio::time::Instant;

/// The drill's name.
pub const NAME: &str = "partitioned";
/// What it proves.
pub const CLAIM: &str =
    "a holder cut off past its ttl declares the lock lost in time; on heal it does not re-extend, its write is refused";

/// Runs the drill.
pub async fn run(ctx: &Ctx, out: &mut Outcome) -> Result<(), String> {
    let leader = leader_addr(ctx).await?;
    let proxy = Proxy::start(IpAddr::V4(Ipv4Addr::LOCALHOST), leader)
        .await
        .map_err(|e| format!("cannot start the drill's proxy to {leader}: {e}"))?;
    let mut spec = ctx.spec(NAME, "w1");
    spec.endpoints = Some(endpoint_like(&ctx.global.endpoints, proxy.addr()));
    let (mut worker, held) = ctx.holder("holder", &spec).await?;
    let loss_bound = held.ttl + ctx.slack;
    out.bound = format!(
        "loss declared within ttl {} of the cut; no renewal after heal",
        ctx.plus_slack(held.ttl)
    );
    out.set("old_token", held.token);
    let cut_us = boot_us();
    let cut_at = Instant::now();
    proxy.set_everyone(LinkFault::PARTITION);
    let lost = worker.await_lost(loss_bound + STEP, cut_us, true).await?;
    let lost_after_ms = lost.u64("at_us")?.saturating_sub(cut_us) / 1_000;
    out.set("lost_after_cut_ms", lost_after_ms);
    out.set("lost_cause", lost.field("cause"));
    let next = ctx.acquire(NAME, held.ttl + ctx.slack + STEP).await?;
    let new_token = next.guard.token().0;
    out.set("pass_on_ms", ms(next.at - cut_at));
    out.set("new_token", new_token);
    proxy.heal();
    worker.send("go").await?;
    let stale = worker.expect("STALE", STEP + ctx.global.timeout).await?;
    out.set("stale_write", stale.answer());
    let lease_after = lease_state(ctx, LeaseId(held.lease)).await?;
    out.set("old_lease_after_heal", lease_after);
    let holder_now = ctx.holder_token(NAME).await?;
    drop(next);
    check(lost_after_ms <= ms(loss_bound), || {
        format!("the holder declared the loss {lost_after_ms} ms after the cut")
    })?;
    check(new_token > held.token, || {
        format!(
            "the new token {new_token} is not above the cut-off holder's {}",
            held.token
        )
    })?;
    check(stale.refused(), || {
        format!(
            "the store did not refuse the cut-off holder's write: {:?}",
            stale.text
        )
    })?;
    check(lease_after != "live", || {
        "the cut-off holder's lease is live again after the heal".to_owned()
    })?;
    check(holder_now == Some(new_token), || {
        format!("after the heal the lock is held under {holder_now:?}, not {new_token}")
    })
}

/// The current leader's address, from the service's status.
async fn leader_addr(ctx: &Ctx) -> Result<SocketAddr, String> {
    let status = ctx.client.status().await;
    let status = status.map_err(|e| format!("cannot read the cluster's status: {e}"))?;
    let member = status.members.iter().find(|m| m.id == status.leader);
    let addr = member.map_or("", |m| m.addr.as_str());
    let addr = addr.rsplit("://").next().unwrap_or(addr).to_owned();
    let mut found = tokio::net::lookup_host(addr.as_str())
        .await
        .map_err(|e| format!("cannot resolve the leader's address {addr:?}: {e}"))?;
    found
        .next()
        .ok_or_else(|| format!("the leader's address {addr:?} resolves to nothing"))
}

/// `proxy` as an endpoint with the scheme of the drill's first endpoint.
fn endpoint_like(endpoints: &str, proxy: SocketAddr) -> String {
    let first = endpoints.split(',').next().unwrap_or_default();
    let scheme = if first.starts_with("https://") {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{proxy}")
}

/// Whether `lease` is `live` or `gone` on the server.
async fn lease_state(ctx: &Ctx, lease: LeaseId) -> Result<&'static str, String> {
    match ctx.client.lease_info(lease).await {
        Ok(_) => Ok("live"),
        Err(Error::LeaseNotFound { .. } | Error::LeaseExpired { .. }) => Ok("gone"),
        Err(error) => Err(format!("cannot read lease {lease}: {error}")),
    }
}
