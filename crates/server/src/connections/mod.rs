//! The bounds on open client connections: [`limits::CONNECTIONS_MAX`] in
//! all, and a share of them per remote address
//! ([`limits::CONNECTIONS_PER_ADDRESS_MAX`] by default), so that one host,
//! a port scanner or a client leaking connections cannot take them all.
//! Each accepted socket carries a permit and its address's slot; past a
//! bound a new connection is refused (counted by cause) and told why
//! ([`refusal`]), so a connection storm cannot exhaust the server's file
//! descriptors or memory while existing clients keep working. An admitted
//! connection must start within a deadline and is closed when idle
//! ([`stream`]); calls and streams are bounded per address too, and per
//! principal ([`layer`], [`principals`]), and so are the TLS connections
//! of a certificate principal ([`ConnectionLimit::admit_principal`]).
//!
//! The bound is also kept [`FDS_RESERVED`] below the process's open-files
//! limit (`serve` raises its soft limit to the hard one first): otherwise
//! `accept` would fail with `EMFILE` before the bound is reached, and the
//! data directory's files, Raft peers and metrics scrapes would fail with
//! it.

pub mod layer;
mod paced;
pub mod principals;
pub mod refusal;
mod registry;
mod stream;

pub use stream::{Deadlines, LimitedStream};

use leasehold_core::auth::Principal;
use leasehold_core::limits;
use registry::Registry;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

/// File descriptors kept out of the connection bound: the data directory's
/// files, connections to Raft peers, metrics scrapes, the process's own.
pub const FDS_RESERVED: usize = 256;

/// The bounds an operator may set (`serve --connections-per-address`,
/// `--connections-per-principal`, `--requests-per-address`,
/// `--requests-per-principal`,
/// `--idle-connection-timeout`, `--handshake-timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Open connections from one remote address.
    pub per_address: usize,
    /// Open TLS connections whose client certificate names one principal.
    pub per_principal: usize,
    /// Calls and streams open at once from one remote address.
    pub requests_per_address: usize,
    /// Calls and streams open at once for one principal.
    pub requests_per_principal: usize,
    /// How long a connection may take to start, and stay idle.
    pub deadlines: Deadlines,
}

impl Default for ConnectionLimits {
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            per_address: limits::CONNECTIONS_PER_ADDRESS_MAX,
            per_principal: limits::CONNECTIONS_PER_PRINCIPAL_MAX,
            requests_per_address: limits::REQUESTS_PER_ADDRESS_MAX,
            requests_per_principal: limits::REQUESTS_PER_PRINCIPAL_MAX,
            deadlines: Deadlines {
                handshake: Duration::from_millis(limits::HANDSHAKE_MS_MAX),
                idle: Duration::from_millis(limits::IDLE_CONNECTION_MS_MAX),
            },
        }
    }
}

/// What became of an accepted socket.
pub enum Admission {
    /// Within the bounds: serve it.
    Admitted(LimitedStream),
    /// Past a bound: tell the client why ([`refusal`]), then close it.
    Refused { stream: TcpStream, why: String },
}

/// Hands out one permit per open connection, and a slot at its address.
#[derive(Clone)]
pub struct ConnectionLimit {
    permits: Arc<Semaphore>,
    /// The bound, for the refusal's sentence.
    max: usize,
    /// Open connections and calls by address.
    registry: Arc<Registry>,
    /// Open TLS connections by certificate principal.
    principal_connections: Arc<principals::PrincipalShares>,
    limits: ConnectionLimits,
}

impl ConnectionLimit {
    /// At most `max` connections open at once, and `limits` per address.
    pub fn new(max: usize, limits: ConnectionLimits) -> ConnectionLimit {
        ConnectionLimit {
            permits: Arc::new(Semaphore::new(max)),
            max,
            registry: Arc::new(Registry::default()),
            principal_connections: Arc::default(),
            limits,
        }
    }

    /// Counts a TLS connection whose client certificate names `principal`
    /// in that principal's share (the caller holds the slot for the
    /// connection's life), or says why it is refused (counted).
    pub fn admit_principal(
        &self,
        principal: &Principal,
    ) -> Result<principals::PrincipalSlot, String> {
        let max = self.limits.per_principal;
        self.principal_connections
            .take(principal, max)
            .ok_or_else(|| {
                let cause = "connections_per_principal_max";
                metrics::counter!("leasehold_connections_refused_total", "cause" => cause)
                    .increment(1);
                format!(
                "principal {principal} holds CONNECTIONS_PER_PRINCIPAL_MAX ({max}) connections \
                 already; close idle ones or share one per process (for a fleet sharing one \
                 certificate, raise it with serve --connections-per-principal)"
            )
            })
    }

    /// The per-address and per-principal bounds on calls and streams
    /// ([`layer`]), sharing this limit's view of the connections; `identify`
    /// names a request's principal.
    pub fn requests(&self, identify: principals::Identify) -> layer::RequestLimit {
        let principals = layer::PrincipalLimit {
            shares: Arc::default(),
            identify,
            max: self.limits.requests_per_principal,
        };
        let max = self.limits.requests_per_address;
        layer::RequestLimit::new(self.registry.clone(), max, principals)
    }

    /// The server's bound: [`limits::CONNECTIONS_MAX`], or less when the
    /// open-files limit leaves less room (logged, with what to raise).
    pub fn server_default(limits: ConnectionLimits) -> ConnectionLimit {
        let open_files = crate::open_files::soft_limit();
        let max = bound(limits::CONNECTIONS_MAX, open_files);
        if max < limits::CONNECTIONS_MAX {
            tracing::warn!(
                connections_max = max,
                open_files_limit = open_files,
                "client connections bounded below CONNECTIONS_MAX ({}) by the open-files \
                 limit; raise it (ulimit -n, LimitNOFILE=) to admit more",
                limits::CONNECTIONS_MAX
            );
        }
        ConnectionLimit::new(max, limits)
    }

    /// Admits `stream` (with TCP_NODELAY set) within the bounds, or says
    /// which bound refuses it.
    pub fn admit(&self, stream: TcpStream) -> io::Result<Admission> {
        let peer = stream.peer_addr()?;
        let Ok(permit) = self.permits.clone().try_acquire_owned() else {
            let why = format!(
                "it holds CONNECTIONS_MAX ({}) connections already; retry shortly, or spread \
                 the clients over more nodes",
                self.max
            );
            return Ok(refused(stream, "connections_max", why));
        };
        let per_address = self.limits.per_address;
        let Some(connection) = self.registry.connect(peer, per_address) else {
            let why = format!(
                "{} holds CONNECTIONS_PER_ADDRESS_MAX ({per_address}) connections already; close \
                 idle ones or share one per process (behind a proxy or NAT, raise it with serve \
                 --connections-per-address)",
                peer.ip()
            );
            return Ok(refused(stream, "connections_per_address_max", why));
        };
        // Without TCP_NODELAY a small reply can sit ~40 ms behind Nagle's
        // algorithm and a delayed ACK.
        stream.set_nodelay(true)?;
        let deadlines = self.limits.deadlines;
        let admitted = LimitedStream::new(stream, permit, connection, deadlines);
        Ok(Admission::Admitted(admitted))
    }
}

/// A refusal by the bound `cause` (the metric's label), counted and logged
/// (at debug level: a flood would otherwise flood the log too).
fn refused(stream: TcpStream, cause: &'static str, why: String) -> Admission {
    metrics::counter!("leasehold_connections_refused_total", "cause" => cause).increment(1);
    tracing::debug!(peer = ?stream.peer_addr().ok(), cause, "connection refused: {why}");
    Admission::Refused { stream, why }
}

/// `max` connections, or fewer when `open_files` minus [`FDS_RESERVED`]
/// is smaller (at least one).
fn bound(max: usize, open_files: Option<u64>) -> usize {
    let Some(open_files) = open_files else {
        return max;
    };
    let room = usize::try_from(open_files).unwrap_or(usize::MAX);
    max.min(room.saturating_sub(FDS_RESERVED).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_stays_below_the_open_files_limit() {
        assert_eq!(bound(16_384, None), 16_384);
        assert_eq!(bound(16_384, Some(1_048_576)), 16_384);
        assert_eq!(bound(16_384, Some(1_024)), 1_024 - FDS_RESERVED);
        assert_eq!(bound(16_384, Some(100)), 1, "always one");
    }

    #[tokio::test]
    async fn refuses_past_the_bound_and_frees_the_slot_on_close() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let limit = ConnectionLimit::new(1, ConnectionLimits::default());
        let mut clients = Vec::new();
        let mut accept = async || {
            let (client, server) = tokio::join!(TcpStream::connect(addr), listener.accept());
            clients.push(client.unwrap());
            server.unwrap().0
        };
        let admitted = |admission: Admission| match admission {
            Admission::Admitted(stream) => Some(stream),
            Admission::Refused { why, .. } => {
                assert!(why.contains("CONNECTIONS_MAX (1)"), "{why}");
                None
            }
        };
        let first = admitted(limit.admit(accept().await).unwrap());
        assert!(first.is_some());
        assert!(
            admitted(limit.admit(accept().await).unwrap()).is_none(),
            "over the bound"
        );
        drop(first);
        let again = admitted(limit.admit(accept().await).unwrap());
        assert!(again.is_some(), "slot freed");
    }
}
