//! Who may call the Raft service (`RaftTransport`): with TLS, only the
//! cluster's nodes. A caller must present a certificate that chains to the
//! peer CA (checked here again: the TLS layer also lets client-CA
//! certificates through) and that names, in a DNS or IP SAN, the host of a
//! member's address: the current membership's or the `--peers` list this
//! node started with (a member that has not formed the cluster yet). A node
//! that knows no member yet (started with `--join`, not yet added) accepts
//! any certificate from the peer CA: it learns the leader from its first
//! message. Without TLS (a loopback node) every caller is let through.
//!
//! A refusal is PermissionDenied with a sentence, a warning in the log and a
//! count in `leasehold_raft_refused_total{reason}`.

use super::{certificate_names, certificate_principal, Tls};
use rustls::pki_types::UnixTime;
use std::sync::Arc;
use tonic::{Request, Status};

/// Judges Raft callers.
#[derive(Clone, Debug, Default)]
pub struct PeerGate {
    /// The node's TLS; `None`: no check.
    tls: Option<Arc<Tls>>,
    /// The addresses of `--peers` (members before the cluster is formed).
    startup_peers: Vec<String>,
}

/// Why a caller was refused (the `reason` label of the counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    NoCertificate,
    NotPeerCa,
    NotAMember,
}

impl Refusal {
    fn label(self) -> &'static str {
        match self {
            Refusal::NoCertificate => "no_certificate",
            Refusal::NotPeerCa => "not_peer_ca",
            Refusal::NotAMember => "not_a_member",
        }
    }
}

impl PeerGate {
    /// A gate for a node with `tls` that started with `startup_peers`.
    pub fn new(tls: Option<Arc<Tls>>, startup_peers: Vec<String>) -> PeerGate {
        PeerGate { tls, startup_peers }
    }

    /// Lets `request` through if its caller is a peer, given the addresses
    /// of the current `members`.
    pub fn admit<T>(&self, request: &Request<T>, members: &[String]) -> Result<(), Status> {
        let Some(tls) = &self.tls else {
            return Ok(());
        };
        let caller = request.remote_addr();
        let refuse = |refusal: Refusal, why: String| {
            metrics::counter!("leasehold_raft_refused_total", "reason" => refusal.label())
                .increment(1);
            tracing::warn!(caller = ?caller, reason = refusal.label(), "Raft call refused: {why}");
            Err(Status::permission_denied(format!(
                "the Raft service accepts only this cluster's nodes: {why}"
            )))
        };
        let Some(chain) = request.peer_certs().filter(|chain| !chain.is_empty()) else {
            return refuse(
                Refusal::NoCertificate,
                "the caller presented no certificate".into(),
            );
        };
        let principal = certificate_principal(&chain[0]).unwrap_or_else(|| "(unnamed)".into());
        let verified =
            tls.current().peer_verifier.as_ref().map(|verifier| {
                verifier.verify_client_cert(&chain[0], &chain[1..], UnixTime::now())
            });
        if !matches!(verified, Some(Ok(_))) {
            let why = format!("the certificate of {principal} is not from the peer CA");
            return refuse(Refusal::NotPeerCa, why);
        }
        let known: Vec<&str> = members
            .iter()
            .chain(&self.startup_peers)
            .map(|addr| host(addr))
            .collect();
        let names = certificate_names(&chain[0]).unwrap_or_default();
        if known.is_empty() || known.iter().any(|host| names.names_host(host)) {
            return Ok(());
        }
        let why = format!(
            "the certificate of {principal} names no member's host (members at {})",
            known.join(", ")
        );
        refuse(Refusal::NotAMember, why)
    }
}

/// The host of `addr` (`HOST:PORT` or a URL).
fn host(addr: &str) -> &str {
    let addr = addr.split_once("://").map_or(addr, |(_, rest)| rest);
    let addr = addr.split('/').next().unwrap_or(addr);
    match addr.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => addr,
    }
}

#[cfg(test)]
mod tests {
    use super::host;

    #[test]
    fn the_host_of_an_address() {
        assert_eq!(host("127.0.0.1:7420"), "127.0.0.1");
        assert_eq!(host("https://node1.example:7420"), "node1.example");
        assert_eq!(host("[::1]:7420"), "[::1]");
        assert_eq!(host("node1"), "node1");
    }
}
