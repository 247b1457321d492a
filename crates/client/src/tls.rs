//! TLS for the client: the settings ([`TlsOptions`], part of
//! [`ClientOptions`](crate::ClientOptions)), checked at connect, and the
//! recognition of a scheme that does not match the server: an `http://`
//! endpoint on a TLS server (the server answers with a sentence, in
//! plaintext, that this module finds in the error), and an `https://`
//! endpoint on a plaintext server (rustls reports that the answer is not
//! TLS). Either becomes an [`Error::Unavailable`] whose message says which
//! and what to do.

use crate::error::Error;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

/// TLS settings for `https://` endpoints (`http://` and bare `host:port`
/// endpoints stay plaintext). The CLI reads them from `--cacert`, `--cert`
/// and `--key`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// The CA certificate(s) the server's certificate must chain to (PEM).
    /// Required for `https://` endpoints.
    pub ca_pem: Option<Vec<u8>>,
    /// This client's certificate chain (PEM), for servers that require
    /// client certificates (mTLS). Needs `key_pem`.
    pub cert_pem: Option<Vec<u8>>,
    /// The private key of `cert_pem` (PEM).
    pub key_pem: Option<Vec<u8>>,
}

impl TlsOptions {
    /// Checks the PEM and builds the TLS config `https://` endpoints use;
    /// `None` when no CA is given (then an `https://` endpoint is refused
    /// at connect).
    pub(crate) fn client_config(&self) -> Result<Option<ClientTlsConfig>, Error> {
        let invalid = |field: &str, reason: String| Error::InvalidArgument {
            field: field.into(),
            reason,
        };
        if let Some(pem) = &self.cert_pem {
            let parsed: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(pem).collect();
            if !matches!(&parsed, Ok(chain) if !chain.is_empty()) {
                return Err(invalid("tls.cert_pem", "no PEM certificate in it".into()));
            }
        }
        if let Some(pem) = &self.key_pem {
            PrivateKeyDer::from_pem_slice(pem)
                .map_err(|error| invalid("tls.key_pem", format!("no PEM private key ({error})")))?;
        }
        let identity = match (&self.cert_pem, &self.key_pem) {
            (Some(cert), Some(key)) => Some(Identity::from_pem(cert, key)),
            (None, None) => None,
            _ => {
                let reason = "a client certificate needs its key and a key its certificate: \
                              give both (--cert and --key) or neither";
                return Err(invalid("tls", reason.into()));
            }
        };
        let Some(ca) = &self.ca_pem else {
            if identity.is_some() {
                let reason = "a client certificate is for https:// endpoints, which need the \
                              server's CA too: pass --cacert";
                return Err(invalid("tls.ca_pem", reason.into()));
            }
            return Ok(None);
        };
        let parsed: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(ca).collect();
        if !matches!(&parsed, Ok(chain) if !chain.is_empty()) {
            return Err(invalid("tls.ca_pem", "no PEM certificate in it".into()));
        }
        let config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
        Ok(Some(match identity {
            Some(identity) => config.identity(identity),
            None => config,
        }))
    }
}

/// What the server at a TLS port answers a plaintext client (see the
/// server's `tls::acceptor`).
const SPEAKS_TLS: &str = "speaks TLS: use https:// and --cacert";

/// The sentence for an `https://` endpoint at `url` on a plaintext server.
pub(crate) fn not_tls_sentence(url: &str) -> String {
    let plain = url.replacen("https://", "http://", 1);
    format!("the server at {url} does not speak TLS: use {plain}")
}

/// The scheme mismatch `error` (or one of its causes) shows, as a sentence
/// for the endpoint `url` (when known).
pub(crate) fn mismatch(
    error: &(dyn std::error::Error + 'static),
    url: Option<&str>,
) -> Option<String> {
    let mut cause = Some(error);
    while let Some(current) = cause {
        let text = current.to_string();
        if let Some(at) = text
            .find("the server at ")
            .filter(|_| text.contains(SPEAKS_TLS))
        {
            let end = text[at..]
                .find(SPEAKS_TLS)
                .map(|i| at + i + SPEAKS_TLS.len());
            return end.map(|end| text[at..end].to_owned());
        }
        if answer_is_not_tls(current) {
            return Some(not_tls_sentence(url.unwrap_or("this endpoint")));
        }
        cause = current.source();
    }
    None
}

/// True if `error` is rustls' "the peer's answer is not a TLS record".
fn answer_is_not_tls(error: &(dyn std::error::Error + 'static)) -> bool {
    let rustls_error = error.downcast_ref::<rustls::Error>().or_else(|| {
        error
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    });
    matches!(
        rustls_error,
        Some(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType
        ))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_without_its_key_is_refused_and_nothing_is_plaintext() {
        assert!(matches!(TlsOptions::default().client_config(), Ok(None)));
        let half = TlsOptions {
            ca_pem: None,
            cert_pem: Some(b"x".to_vec()),
            key_pem: None,
        };
        assert!(matches!(
            half.client_config(),
            Err(Error::InvalidArgument { .. })
        ));
        let bad_ca = TlsOptions {
            ca_pem: Some(b"not pem".to_vec()),
            ..TlsOptions::default()
        };
        assert!(matches!(
            bad_ca.client_config(),
            Err(Error::InvalidArgument { field, .. }) if field == "tls.ca_pem"
        ));
    }

    #[test]
    fn the_servers_sentence_is_found_inside_another_error() {
        let text = "h2 protocol error: connection error received: b\"the server at \
                    127.0.0.1:9 speaks TLS: use https:// and --cacert\"";
        let error = std::io::Error::other(text);
        assert_eq!(
            mismatch(&error, None).as_deref(),
            Some("the server at 127.0.0.1:9 speaks TLS: use https:// and --cacert")
        );
        let not_tls = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
        );
        assert_eq!(
            mismatch(&not_tls, Some("https://h:1")).as_deref(),
            Some("the server at https://h:1 does not speak TLS: use http://h:1")
        );
    }
}
