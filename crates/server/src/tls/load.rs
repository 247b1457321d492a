//! Loading the node's PEM files into what rustls and tonic use: the server
//! config (certificate, key, ALPN, which client certificates it asks for),
//! the verifier the Raft service judges callers with, and the TLS settings
//! of this node's own calls to its peers. Every error names the file and
//! the flag it came from, and says what to pass instead.

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

/// The PEM files of a node's TLS (`serve --tls-cert --tls-key
/// [--tls-client-ca] [--peer-ca]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The node's certificate chain (leaf first). Presented to clients, and
    /// to peers when this node calls them, so it should carry both the
    /// serverAuth and clientAuth usages (or none).
    pub cert: PathBuf,
    /// The private key of `cert`.
    pub key: PathBuf,
    /// CA whose certificates clients must present (mTLS); `None`: clients
    /// need no certificate.
    pub client_ca: Option<PathBuf>,
    /// CA of the peers' certificates (Raft traffic); `None`: the client CA.
    pub peer_ca: Option<PathBuf>,
}

impl TlsFiles {
    /// The peer CA in force and the flag it came from.
    pub fn peer_ca(&self) -> Option<(&Path, &'static str)> {
        match (&self.peer_ca, &self.client_ca) {
            (Some(peer), _) => Some((peer, "--peer-ca")),
            (None, Some(client)) => Some((client, "--tls-client-ca")),
            (None, None) => None,
        }
    }
}

/// What was loaded from a node's [`TlsFiles`] at one time.
pub struct Material {
    /// Accepts connections: the node's certificate, ALPN h2 and http/1.1,
    /// and client certificates from the client CA or the peer CA.
    pub server: Arc<ServerConfig>,
    /// Judges a Raft caller's certificate against the peer CA only.
    pub peer_verifier: Option<Arc<dyn ClientCertVerifier>>,
    /// This node's calls to its peers: trusts the peer CA, presents the
    /// node's certificate. `None` without a peer CA.
    pub peer_client: Option<ClientTlsConfig>,
}

/// The crypto provider every TLS config here uses: ring.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Material {
    /// Reads and checks every file of `files`.
    pub fn load(files: &TlsFiles) -> Result<Material, String> {
        let cert_pem = read(&files.cert, "--tls-cert")?;
        let key_pem = read(&files.key, "--tls-key")?;
        let chain = certificates(&cert_pem, &files.cert, "--tls-cert")?;
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|error| {
            format!(
                "--tls-key {}: no PEM private key in it ({error}); pass the key of --tls-cert",
                files.key.display()
            )
        })?;
        let client_roots = files
            .client_ca
            .as_deref()
            .map(|path| roots(&read(path, "--tls-client-ca")?, path, "--tls-client-ca"))
            .transpose()?;
        let peer = files
            .peer_ca()
            .map(|(path, flag)| {
                let pem = read(path, flag)?;
                let roots = roots(&pem, path, flag)?;
                Ok::<_, String>((pem, roots))
            })
            .transpose()?;
        let server = server_config(chain, key, files, client_roots, peer.as_ref().map(|p| &p.1))?;
        let peer_verifier = peer
            .as_ref()
            .map(|(_, roots)| verifier(roots.clone(), false))
            .transpose()?;
        let peer_client = peer.map(|(ca_pem, _)| {
            ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(ca_pem))
                .identity(Identity::from_pem(&cert_pem, &key_pem))
        });
        Ok(Material {
            server: Arc::new(server),
            peer_verifier,
            peer_client,
        })
    }
}

/// The server config: asks for client certificates when there is a client
/// CA (required) or only a peer CA (optional: clients need none, peers
/// present theirs), trusting both CAs; the Raft service narrows to the peer
/// CA itself.
fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    files: &TlsFiles,
    client_roots: Option<RootCertStore>,
    peer_roots: Option<&RootCertStore>,
) -> Result<ServerConfig, String> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS protocol versions: {error}"))?;
    let required = client_roots.is_some();
    let mut trusted = client_roots.unwrap_or_else(RootCertStore::empty);
    if let Some(peer) = peer_roots {
        trusted.roots.extend(peer.roots.iter().cloned());
    }
    let builder = if trusted.is_empty() {
        builder.with_no_client_auth()
    } else {
        builder.with_client_cert_verifier(verifier(trusted, !required)?)
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|error| {
        format!(
            "--tls-cert {} and --tls-key {} do not go together ({error}); pass a certificate and its own key",
            files.cert.display(),
            files.key.display()
        )
    })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// A verifier of client certificates chaining to `roots`; `optional`: a
/// client without a certificate is let through (to be judged later).
pub(crate) fn verifier(
    roots: RootCertStore,
    optional: bool,
) -> Result<Arc<dyn ClientCertVerifier>, String> {
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
    let builder = if optional {
        builder.allow_unauthenticated()
    } else {
        builder
    };
    builder
        .build()
        .map_err(|error| format!("cannot build the client certificate verifier: {error}"))
}

fn read(path: &Path, flag: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|error| {
        format!(
            "{flag} {}: cannot read it ({error}); pass a readable PEM file",
            path.display()
        )
    })
}

fn certificates(
    pem: &[u8],
    path: &Path,
    flag: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("{flag} {}: invalid PEM ({error})", path.display()))?;
    if chain.is_empty() {
        return Err(format!(
            "{flag} {}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it",
            path.display()
        ));
    }
    Ok(chain)
}

/// The CA certificates in `pem`, read from `path` (given as `flag`).
fn roots(pem: &[u8], path: &Path, flag: &str) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(pem, path, flag)? {
        roots.add(cert).map_err(|error| {
            format!(
                "{flag} {}: not a usable CA certificate ({error})",
                path.display()
            )
        })?;
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &Path) -> TlsFiles {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("c.pem"), cert.pem()).unwrap();
        std::fs::write(dir.join("k.pem"), key.serialize_pem()).unwrap();
        TlsFiles {
            cert: dir.join("c.pem"),
            key: dir.join("k.pem"),
            client_ca: None,
            peer_ca: None,
        }
    }

    fn refusal(files: &TlsFiles) -> String {
        match Material::load(files) {
            Err(why) => why,
            Ok(_) => panic!("expected {files:?} to be refused"),
        }
    }

    #[test]
    fn good_files_load_and_each_bad_one_is_named_with_its_flag() {
        let dir = tempfile::tempdir().unwrap();
        let good = files(dir.path());
        let material = Material::load(&good).unwrap();
        assert_eq!(
            material.server.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(material.peer_client.is_none(), "no peer CA, no peer TLS");

        let missing = TlsFiles {
            cert: dir.path().join("missing.pem"),
            ..good.clone()
        };
        let why = refusal(&missing);
        assert!(
            why.starts_with("--tls-cert ") && why.contains("missing.pem"),
            "{why}"
        );

        std::fs::write(dir.path().join("bad.pem"), "not a key").unwrap();
        let bad_key = TlsFiles {
            key: dir.path().join("bad.pem"),
            ..good.clone()
        };
        assert!(
            refusal(&bad_key).starts_with("--tls-key "),
            "{}",
            refusal(&bad_key)
        );

        let bad_ca = TlsFiles {
            client_ca: Some(dir.path().join("bad.pem")),
            ..good.clone()
        };
        let why = refusal(&bad_ca);
        assert!(
            why.starts_with("--tls-client-ca ") && why.contains("bad.pem"),
            "{why}"
        );

        let other_dir = tempfile::tempdir().unwrap();
        let other = files(other_dir.path());
        let mismatched = TlsFiles {
            key: other.key,
            ..good
        };
        assert!(
            refusal(&mismatched).contains("do not go together"),
            "{}",
            refusal(&mismatched)
        );
    }
}
