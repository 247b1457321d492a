//! The idle workload: what a connection that does nothing costs the server.
//! `--clients N` sockets that never send a byte (a port scanner's, a
//! leaking client's), then N that start HTTP/2 (the preface and an empty
//! SETTINGS frame) and go quiet, as an idle client's connection does. The
//! report gives how many of each the server holds (its
//! `leasehold_connections_open`) and, with `--server-pid`, its resident
//! memory before, with the silent sockets and with both, and so the bytes
//! one connection of each kind costs.
//!
//! Run it against a server that has not served many connections yet: the
//! memory freed by earlier ones is reused by the allocator, not given back,
//! and would hide what new ones cost. The server's bounds apply, as they
//! should: past `--connections-per-address`
//! (4,096 by default) from this host a connection is refused, and a silent
//! one is closed at `--handshake-timeout` (5 s). Raise both on the server to
//! measure more sockets, or more slowly.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use serde::Serialize;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::plan::Plan;
use super::{rss, Print};

/// The HTTP/2 client preface and an empty SETTINGS frame.
const H2_START: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
/// Sockets connecting at once (the listen backlog is finite).
const CONNECTING_AT_ONCE: usize = 256;
/// Bound on the server taking in what was opened.
const SETTLE_LIMIT: Duration = Duration::from_secs(20);
/// How long the count of open connections must stay the same to be taken
/// as all the server will take in.
const STILL_FOR: Duration = Duration::from_secs(2);

/// Opens the sockets, reads the server's memory, reports.
pub(super) async fn run(plan: &Plan, json: bool, print: Print) -> anyhow::Result<()> {
    let addr = plain_address(&plan.endpoints[0]).await?;
    let count = plan.clients as usize;
    let rss_of = || plan.server_pid.map(rss::resident_bytes).transpose();
    let held_before = settled(addr, 0).await;
    let rss_before = rss_of()?;
    let silent = open(addr, count, b"").await?;
    let expected = held_before.unwrap_or(0) + count as u64;
    let held_silent = settled(addr, expected).await;
    let rss_silent = rss_of()?;
    let speaking = open(addr, count, H2_START).await?;
    let held_both = settled(addr, held_silent.unwrap_or(0) + count as u64).await;
    let rss_both = rss_of()?;
    drop((silent, speaking));
    let per = |before: Option<u64>, after: Option<u64>, held: Option<u64>| {
        let grown = after?.saturating_sub(before?);
        Some(grown / held.filter(|&held| held > 0)?)
    };
    let silent_held = held_silent
        .zip(held_before)
        .map(|(a, b)| a.saturating_sub(b));
    let h2_held = held_both.zip(held_silent).map(|(a, b)| a.saturating_sub(b));
    let report = IdleReport {
        workload: "idle",
        endpoint: plan.endpoints[0].clone(),
        sockets_per_kind: count,
        silent_held,
        h2_held,
        server_rss_before_bytes: rss_before,
        server_rss_silent_bytes: rss_silent,
        server_rss_both_bytes: rss_both,
        bytes_per_silent: per(rss_before, rss_silent, silent_held),
        bytes_per_h2: per(rss_silent, rss_both, h2_held),
    };
    super::print_report(&report, || report.human(), json, print)
}

/// The socket address of a plaintext endpoint (the plan checked that it is
/// one: the HTTP/2 sockets speak plaintext).
async fn plain_address(endpoint: &str) -> anyhow::Result<SocketAddr> {
    let host = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut found = tokio::net::lookup_host(host)
        .await
        .with_context(|| format!("cannot resolve {host}"))?;
    found
        .next()
        .with_context(|| format!("{host} resolves to no address"))
}

/// `count` sockets to `addr`, each sent `first` (nothing, for silent ones).
async fn open(
    addr: SocketAddr,
    count: usize,
    first: &'static [u8],
) -> anyhow::Result<Vec<TcpStream>> {
    let mut sockets = Vec::with_capacity(count);
    while sockets.len() < count {
        let batch = (count - sockets.len()).min(CONNECTING_AT_ONCE);
        let mut connects = tokio::task::JoinSet::new();
        for _ in 0..batch {
            connects.spawn(async move {
                let mut socket = TcpStream::connect(addr).await?;
                socket.write_all(first).await?;
                anyhow::Ok(socket)
            });
        }
        for socket in connects.join_all().await {
            sockets.push(socket.with_context(|| format!("cannot open a socket to {addr}"))?);
        }
    }
    Ok(sockets)
}

/// The server's `leasehold_connections_open`, not counting the connection
/// that reads it, once it reaches `expected` or stops changing for
/// [`STILL_FOR`] (the server has taken in, or refused, what was opened;
/// it drains its accept queue at its own pace), at most [`SETTLE_LIMIT`];
/// `None`, after a second's wait instead, if the metrics cannot be read.
async fn settled(addr: SocketAddr, expected: u64) -> Option<u64> {
    const EVERY: Duration = Duration::from_millis(200);
    let deadline = Instant::now() + SETTLE_LIMIT;
    let mut last = None;
    let mut still_since = Instant::now();
    while Instant::now() < deadline {
        let Some(open) = open_connections(addr).await else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            return None;
        };
        let open = open.saturating_sub(1);
        if last != Some(open) {
            still_since = Instant::now();
        }
        last = Some(open);
        if open >= expected || still_since.elapsed() >= STILL_FOR {
            break;
        }
        tokio::time::sleep(EVERY).await;
    }
    last
}

/// `leasehold_connections_open` from the server's `/metrics`.
async fn open_connections(addr: SocketAddr) -> Option<u64> {
    let mut socket = TcpStream::connect(addr).await.ok()?;
    let ask = format!("GET /metrics HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    socket.write_all(ask.as_bytes()).await.ok()?;
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.ok()?;
    let line = answer
        .lines()
        .find(|l| l.starts_with("leasehold_connections_open "))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<f64>()
        .ok()
        .map(|v| v as u64)
}

/// What the idle workload measured. Serialized as the `--json` object.
#[derive(Clone, Debug, Serialize)]
struct IdleReport {
    workload: &'static str,
    endpoint: String,
    /// Sockets opened of each kind (`--clients`).
    sockets_per_kind: usize,
    /// Silent sockets the server holds (the rest it refused or closed).
    silent_held: Option<u64>,
    /// HTTP/2 connections the server holds.
    h2_held: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_before_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_silent_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_rss_both_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes_per_silent: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes_per_h2: Option<u64>,
}

impl IdleReport {
    fn human(&self) -> String {
        use std::fmt::Write as _;
        let held = |n: Option<u64>| n.map_or("?".to_owned(), |n| n.to_string());
        let mut s = String::new();
        let _ = writeln!(s, "leasehold bench: idle (connections that do nothing)");
        let _ = writeln!(
            s,
            "  endpoint {}, {} of each kind opened: {} silent held, {} idle HTTP/2 held",
            self.endpoint,
            self.sockets_per_kind,
            held(self.silent_held),
            held(self.h2_held)
        );
        if let (Some(before), Some(silent), Some(both)) = (
            self.server_rss_before_bytes,
            self.server_rss_silent_bytes,
            self.server_rss_both_bytes,
        ) {
            let _ = writeln!(
                s,
                "  server   RSS {} before, {} with the silent ({} bytes each), {} with both ({} bytes per HTTP/2 connection)",
                rss::mib(before),
                rss::mib(silent),
                held(self.bytes_per_silent),
                rss::mib(both),
                held(self.bytes_per_h2)
            );
        }
        s
    }
}
