//! The tests' one certificate factory (rcgen): a CA, server (node)
//! certificates naming loopback hosts, client certificates carrying a
//! principal, and expired certificates, written as PEM files a real
//! `leasehold serve` or CLI reads, or handed to the library as bytes.
//!
//! Node certificates carry both usages, serverAuth and clientAuth: a node
//! presents its certificate to clients and, when it calls a peer, as a
//! client.

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A certificate and its key, as PEM.
#[derive(Clone, Debug)]
pub struct Issued {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// Its private key (PEM).
    pub key_pem: String,
}

impl Issued {
    /// Writes `NAME.crt` and `NAME.key` into `dir`; returns their paths.
    pub fn write(&self, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let cert = dir.join(format!("{name}.crt"));
        let key = dir.join(format!("{name}.key"));
        std::fs::write(&cert, &self.cert_pem).expect("write certificate");
        std::fs::write(&key, &self.key_pem).expect("write key");
        (cert, key)
    }
}

/// A certificate authority that issues the other certificates.
pub struct Ca {
    cert: Certificate,
    key: KeyPair,
}

impl Ca {
    /// A new self-signed CA named `name`.
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::default();
        params.distinguished_name = common_name(name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA certificate");
        Ca { cert, key }
    }

    /// The CA certificate (PEM), what `--cacert` and `--tls-client-ca` read.
    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// Writes the CA certificate to `dir/NAME.crt`; returns its path.
    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(format!("{name}.crt"));
        std::fs::write(&path, self.cert_pem()).expect("write CA certificate");
        path
    }

    /// A server certificate for `127.0.0.1` and `localhost`.
    pub fn server(&self) -> Issued {
        self.node(&["127.0.0.1".parse().unwrap()], "leasehold server")
    }

    /// A node certificate naming the IPs `ips` (and `localhost`), usable as
    /// a server and as a client (Raft calls to peers).
    pub fn node(&self, ips: &[IpAddr], name: &str) -> Issued {
        let mut sans: Vec<SanType> = ips.iter().map(|ip| SanType::IpAddress(*ip)).collect();
        sans.push(SanType::DnsName("localhost".try_into().unwrap()));
        self.issue(name, sans, Validity::Current)
    }

    /// A client certificate whose principal (subject CN, no SAN) is `principal`.
    pub fn client(&self, principal: &str) -> Issued {
        self.issue(principal, Vec::new(), Validity::Current)
    }

    /// A client certificate for `principal` that expired in 2021.
    pub fn expired_client(&self, principal: &str) -> Issued {
        self.issue(principal, Vec::new(), Validity::Expired)
    }

    fn issue(&self, cn: &str, sans: Vec<SanType>, validity: Validity) -> Issued {
        let mut params = CertificateParams::default();
        params.distinguished_name = common_name(cn);
        params.subject_alt_names = sans;
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        if validity == Validity::Expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().expect("key");
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("certificate");
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Validity {
    Current,
    Expired,
}

fn common_name(name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    dn
}

/// `GET path` over HTTPS (HTTP/1.1) to `addr`, trusting `ca` and presenting
/// `client`'s certificate if given: the status code and the body. For the
/// HTTP pages' tests (a browser would do the same).
pub fn https_get(
    addr: std::net::SocketAddr,
    ca: &Ca,
    client: Option<&Issued>,
    path: &str,
) -> (u16, String) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use std::io::{Read, Write};
    let mut roots = rustls::RootCertStore::empty();
    let ca_der = CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).expect("CA PEM");
    roots.add(ca_der).expect("CA certificate");
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots);
    let config = match client {
        Some(issued) => {
            let chain =
                vec![CertificateDer::from_pem_slice(issued.cert_pem.as_bytes()).expect("PEM")];
            let key = PrivateKeyDer::from_pem_slice(issued.key_pem.as_bytes()).expect("key PEM");
            builder
                .with_client_auth_cert(chain, key)
                .expect("client certificate")
        }
        None => builder.with_no_client_auth(),
    };
    let name = ServerName::IpAddress(addr.ip().into());
    let connection = rustls::ClientConnection::new(Arc::new(config), name).expect("TLS client");
    let socket = std::net::TcpStream::connect(addr).expect("connect");
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    let mut stream = rustls::StreamOwned::new(connection, socket);
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .expect("send the request");
    let mut answer = Vec::new();
    // The server may close without close_notify; what arrived is the answer.
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {answer:?}"));
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    (status, body.to_owned())
}
