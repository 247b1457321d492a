//! `serve`'s bounds on what one remote address may hold, and on silent and
//! idle connections (see `leasehold_server::connections`).

use leasehold_server::connections::ConnectionLimits;
use std::time::Duration;

/// The connection flags of `serve`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ConnectionFlags {
    /// Open connections from one remote address, at most (default
    /// CONNECTIONS_PER_ADDRESS_MAX, 4096): one host cannot take every
    /// connection. Raise it when clients come through a proxy or NAT,
    /// which gives them all one address.
    #[arg(long, env = "LEASEHOLD_CONNECTIONS_PER_ADDRESS", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub connections_per_address: Option<u32>,
    /// Open TLS connections whose client certificate names one principal,
    /// from all its hosts together, at most (default
    /// CONNECTIONS_PER_PRINCIPAL_MAX, 4096); past it a connection is
    /// refused naming the limit (exit 5).
    #[arg(long, env = "LEASEHOLD_CONNECTIONS_PER_PRINCIPAL", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub connections_per_principal: Option<u32>,
    /// Calls and streams open at once from one remote address, at most
    /// (default REQUESTS_PER_ADDRESS_MAX, 65536); past it a call is refused
    /// with Unavailable naming the limit (exit 5).
    #[arg(long, env = "LEASEHOLD_REQUESTS_PER_ADDRESS", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub requests_per_address: Option<u32>,
    /// Calls and streams open at once for one principal (a verified token
    /// or client certificate), from all its hosts together, at most
    /// (default REQUESTS_PER_PRINCIPAL_MAX, 65536); past it a call is
    /// refused with Unavailable naming the limit (exit 5).
    #[arg(long, env = "LEASEHOLD_REQUESTS_PER_PRINCIPAL", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub requests_per_principal: Option<u32>,
    /// Close a connection that has no call or stream open and received
    /// nothing, not even a ping, for this long (default 5m).
    #[arg(long, env = "LEASEHOLD_IDLE_CONNECTION_TIMEOUT", value_name = "DURATION",
          value_parser = crate::duration::positive)]
    pub idle_connection_timeout: Option<Duration>,
    /// Close a new connection that has not sent the first bytes of its
    /// protocol (the HTTP/2 preface, an HTTP/1 request line) within this
    /// long (default 5s): idle sockets cannot hold connection slots.
    #[arg(long, env = "LEASEHOLD_HANDSHAKE_TIMEOUT", value_name = "DURATION",
          value_parser = crate::duration::positive)]
    pub handshake_timeout: Option<Duration>,
}

impl ConnectionFlags {
    /// The server's bounds: the defaults, with what the flags set.
    pub fn limits(&self) -> ConnectionLimits {
        let mut limits = ConnectionLimits::default();
        if let Some(max) = self.connections_per_address {
            limits.per_address = max as usize;
        }
        if let Some(max) = self.connections_per_principal {
            limits.per_principal = max as usize;
        }
        if let Some(max) = self.requests_per_address {
            limits.requests_per_address = max as usize;
        }
        if let Some(max) = self.requests_per_principal {
            limits.requests_per_principal = max as usize;
        }
        if let Some(idle) = self.idle_connection_timeout {
            limits.deadlines.idle = idle;
        }
        if let Some(handshake) = self.handshake_timeout {
            limits.deadlines.handshake = handshake;
        }
        limits
    }
}
