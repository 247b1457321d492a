//! The words both ends share when a plaintext client reaches a TLS port:
//! the server answers in plaintext with [`speaks_tls_sentence`], and the
//! client library finds [`SPEAKS_TLS`] in the error to tell the user which
//! scheme to use. Kept here so the two ends cannot drift apart.

use std::net::SocketAddr;

/// The HTTP/2 client connection preface.
pub const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The part of the sentence that does not depend on the address.
pub const SPEAKS_TLS: &str = "speaks TLS: use https:// and --cacert";

/// What a TLS port tells a plaintext client that reached `addr`.
pub fn speaks_tls_sentence(addr: SocketAddr) -> String {
    format!("the server at {addr} {SPEAKS_TLS}")
}
