//! TLS for the client: the settings ([`TlsOptions`], part of
//! [`ClientOptions`](crate::ClientOptions)), checked at connect, and the
//! recognition of a scheme that does not match the server: an `http://`
//! endpoint on a TLS server (the server answers with a sentence, in
//! plaintext, that this module finds in the error), and an `https://`
//! endpoint on a plaintext server (rustls reports that the answer is not
//! TLS). Either becomes an [`Error::Unavailable`] whose message says which
//! and what to do; so does a handshake in which one side refused the
//! other's certificate.

use crate::error::Error;
use leasehold_proto::tls_mismatch::{H2_PREFACE, SPEAKS_TLS};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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

/// What `https://` endpoints are dialed with: tonic's settings, and the
/// same as a rustls config for the check at connect ([`check_handshake`]).
#[derive(Clone, Debug)]
pub(crate) struct TlsConfigs {
    /// The channel's TLS.
    pub tonic: ClientTlsConfig,
    /// The check's TLS.
    pub check: Arc<ClientConfig>,
}

impl TlsOptions {
    /// Reads the PEM files etcdctl's flags name: `cacert` (`--cacert`),
    /// `cert` and `key` (`--cert`, `--key`, which go together). An
    /// unreadable file, or a certificate without its key, is an
    /// `InvalidArgument` naming the flag and the file.
    pub fn from_files(
        cacert: Option<&Path>,
        cert: Option<&Path>,
        key: Option<&Path>,
    ) -> Result<TlsOptions, Error> {
        if cert.is_some() != key.is_some() {
            return Err(Error::InvalidArgument {
                field: "--cert/--key".into(),
                reason: "--cert and --key go together (LEASEHOLD_CERT and LEASEHOLD_KEY): \
                         pass the client certificate and its key, or neither"
                    .into(),
            });
        }
        let read = |flag: &str, path: Option<&Path>| -> Result<Option<Vec<u8>>, Error> {
            let Some(path) = path else { return Ok(None) };
            std::fs::read(path)
                .map(Some)
                .map_err(|error| Error::InvalidArgument {
                    field: flag.into(),
                    reason: format!(
                        "{}: cannot read it ({error}); pass a readable PEM file",
                        path.display()
                    ),
                })
        };
        Ok(TlsOptions {
            ca_pem: read("--cacert", cacert)?,
            cert_pem: read("--cert", cert)?,
            key_pem: read("--key", key)?,
        })
    }

    /// Checks the PEM and builds the TLS configs `https://` endpoints use;
    /// `None` when no CA is given (then an `https://` endpoint is refused
    /// at connect).
    pub(crate) fn configs(&self) -> Result<Option<TlsConfigs>, Error> {
        let invalid = |field: &str, reason: String| Error::InvalidArgument {
            field: field.into(),
            reason,
        };
        let chain = |pem: &[u8], field: &str| {
            let parsed: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(pem).collect();
            match parsed {
                Ok(chain) if !chain.is_empty() => Ok(chain),
                _ => Err(invalid(field, "no PEM certificate in it".into())),
            }
        };
        let identity = match (&self.cert_pem, &self.key_pem) {
            (Some(cert), Some(key)) => {
                let key_der = PrivateKeyDer::from_pem_slice(key).map_err(|error| {
                    invalid("tls.key_pem", format!("no PEM private key ({error})"))
                })?;
                Some((chain(cert, "tls.cert_pem")?, key_der, cert, key))
            }
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
        let mut roots = RootCertStore::empty();
        for cert in chain(ca, "tls.ca_pem")? {
            roots.add(cert).map_err(|error| {
                invalid("tls.ca_pem", format!("not a CA certificate ({error})"))
            })?;
        }
        let builder =
            ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(|error| invalid("tls", error.to_string()))?
                .with_root_certificates(roots);
        let tonic = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
        let (mut check, tonic) = match identity {
            Some((chain, key, cert_pem, key_pem)) => (
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|error| invalid("tls.key_pem", format!("{error}")))?,
                tonic.identity(Identity::from_pem(cert_pem, key_pem)),
            ),
            None => (builder.with_no_client_auth(), tonic),
        };
        check.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Some(TlsConfigs {
            tonic,
            check: Arc::new(check),
        }))
    }
}

/// Makes one TLS handshake with the server at the `https://` endpoint `url`
/// and waits for its first HTTP/2 frame, within `limit`: the sentence if
/// the handshake fails for a reason [`explain`] knows (a plaintext server,
/// a certificate refused either way). With TLS 1.3 a server refuses a
/// client certificate only after the handshake looks done to the client;
/// a channel's first call then fails with a bare "operation was canceled",
/// so the client checks once, at connect, to say why.
pub(crate) async fn check_handshake(
    url: &str,
    config: Arc<ClientConfig>,
    limit: Duration,
) -> Option<String> {
    let authority = url.strip_prefix("https://")?.split('/').next()?;
    let (host, _) = authority.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_owned()).ok()?;
    let checked = async {
        let tcp = tokio::net::TcpStream::connect(authority).await.ok()?;
        let connector = tokio_rustls::TlsConnector::from(config);
        let mut tls = match connector.connect(name, tcp).await {
            Ok(tls) => tls,
            Err(error) => return explain(&error, Some(url)),
        };
        // The client preface and an empty SETTINGS frame; the server
        // answers with its SETTINGS, or its refusal.
        let mut hello = H2_PREFACE.to_vec();
        hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        let mut first = [0u8; 64];
        let answered = match tls.write_all(&hello).await {
            Ok(()) => tls.read(&mut first).await.map(|_| ()),
            Err(error) => Err(error),
        };
        answered.err().and_then(|error| explain(&error, Some(url)))
    };
    tokio::time::timeout(limit, checked).await.ok().flatten()
}

/// The sentence for an `https://` endpoint at `url` on a plaintext server.
pub(crate) fn not_tls_sentence(url: &str) -> String {
    let plain = url.replacen("https://", "http://", 1);
    format!("the server at {url} does not speak TLS: use {plain}")
}

/// What a TLS failure in `error` (or one of its causes) means, as a
/// sentence for the endpoint `url` (when known): a scheme that does not
/// match the server, or a certificate one side refused.
pub(crate) fn explain(
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
        if let Some(rustls_error) = rustls_error(current) {
            return refusal(rustls_error, url);
        }
        cause = current.source();
    }
    None
}

/// The rustls error `error` is or wraps (tokio-rustls reports it inside an
/// `io::Error`).
fn rustls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    error.downcast_ref::<rustls::Error>().or_else(|| {
        error
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    })
}

/// The sentence for a handshake that failed with `error`.
fn refusal(error: &rustls::Error, url: Option<&str>) -> Option<String> {
    use rustls::{AlertDescription as Alert, Error as E, InvalidMessage};
    let server = url.map_or_else(
        || "the server".to_owned(),
        |url| format!("the server at {url}"),
    );
    let sentence = match error {
        E::InvalidMessage(InvalidMessage::InvalidContentType) => {
            return Some(not_tls_sentence(url.unwrap_or("this endpoint")));
        }
        E::AlertReceived(Alert::CertificateRequired) => format!(
            "{server} requires a client certificate: pass --cert and --key (a certificate its \
             client CA signed)"
        ),
        E::AlertReceived(
            alert @ (Alert::UnknownCA
            | Alert::BadCertificate
            | Alert::CertificateExpired
            | Alert::CertificateRevoked
            | Alert::UnsupportedCertificate
            | Alert::CertificateUnknown),
        ) => format!(
            "{server} refused this client's certificate ({alert:?}): pass a valid certificate \
             its client CA signed (--cert, --key)"
        ),
        E::InvalidCertificate(why) => format!(
            "{server} presented a certificate this client does not accept ({why:?}): pass the \
             CA that signed it (--cacert), and check the endpoint's host is in it"
        ),
        _ => return None,
    };
    Some(sentence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_without_its_key_is_refused_and_nothing_is_plaintext() {
        assert!(matches!(TlsOptions::default().configs(), Ok(None)));
        let half = TlsOptions {
            ca_pem: None,
            cert_pem: Some(b"x".to_vec()),
            key_pem: None,
        };
        assert!(matches!(half.configs(), Err(Error::InvalidArgument { .. })));
        let bad_ca = TlsOptions {
            ca_pem: Some(b"not pem".to_vec()),
            ..TlsOptions::default()
        };
        assert!(matches!(
            bad_ca.configs(),
            Err(Error::InvalidArgument { field, .. }) if field == "tls.ca_pem"
        ));
    }

    #[test]
    fn the_servers_sentence_is_found_inside_another_error() {
        let text = "h2 protocol error: connection error received: b\"the server at \
                    127.0.0.1:9 speaks TLS: use https:// and --cacert\"";
        let error = std::io::Error::other(text);
        assert_eq!(
            explain(&error, None).as_deref(),
            Some("the server at 127.0.0.1:9 speaks TLS: use https:// and --cacert")
        );
        let not_tls = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
        );
        assert_eq!(
            explain(&not_tls, Some("https://h:1")).as_deref(),
            Some("the server at https://h:1 does not speak TLS: use http://h:1")
        );
    }
}
