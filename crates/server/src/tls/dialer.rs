//! [`PeerDialer`]: how this node calls another node (Raft messages, the
//! identity check before forming, the probe before adding a member). With
//! TLS it speaks `https://`, trusts the peer CA and presents this node's own
//! certificate, as loaded last (a SIGHUP reload reaches connections made
//! after it); without, plaintext `http://`.

use super::Tls;
use std::sync::Arc;
use tonic::transport::Endpoint;

/// Opens connections to peers.
#[derive(Clone, Debug, Default)]
pub struct PeerDialer {
    /// The node's TLS; `None`: plaintext.
    tls: Option<Arc<Tls>>,
}

impl PeerDialer {
    /// A dialer using `tls` (or plaintext).
    pub fn new(tls: Option<Arc<Tls>>) -> PeerDialer {
        PeerDialer { tls }
    }

    /// The URL of a peer known by `addr` (`HOST:PORT`, or already a URL).
    pub fn url(&self, addr: &str) -> String {
        if addr.contains("://") {
            return addr.to_owned();
        }
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{addr}")
    }

    /// An endpoint for the peer at `addr`, with this node's TLS settings.
    pub fn endpoint(&self, addr: &str) -> Result<Endpoint, String> {
        let url = self.url(addr);
        let endpoint = Endpoint::from_shared(url.clone())
            .map_err(|error| format!("{url:?} is not a valid address: {error}"))?;
        let Some(tls) = &self.tls else {
            return Ok(endpoint);
        };
        let Some(client) = tls.current().peer_client.clone() else {
            return Err("this node has TLS but no peer CA (--peer-ca or --tls-client-ca)".into());
        };
        endpoint
            .tls_config(client)
            .map_err(|error| format!("TLS settings for {url}: {error}"))
    }
}
