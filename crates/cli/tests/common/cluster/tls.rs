//! A cluster whose nodes speak mTLS ([`Cluster::start_tls`]): one CA signs
//! every node's certificate (naming the node's loopback IP; the CA is the
//! client CA and so the peer CA) and the certificate the test's commands
//! present (principal `operator`). Commands get the CA and that certificate
//! through `LEASEHOLD_CACERT`, `LEASEHOLD_CERT` and `LEASEHOLD_KEY`.

use leasehold_testkit::tls::Ca;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The PEM files of a TLS cluster.
pub(crate) struct ClusterTls {
    /// The CA certificate.
    ca: PathBuf,
    /// The test's client certificate and key.
    client: (PathBuf, PathBuf),
    /// Where the node certificates are written.
    dir: PathBuf,
    authority: Ca,
}

impl ClusterTls {
    /// A CA and the client certificate, written into `dir`.
    pub(crate) fn new(dir: &Path) -> ClusterTls {
        let authority = Ca::new("leasehold test cluster CA");
        let ca = authority.write(dir, "cluster-ca");
        let client = authority.client("operator").write(dir, "operator");
        ClusterTls {
            ca,
            client,
            dir: dir.to_path_buf(),
            authority,
        }
    }

    /// The `serve` flags of node `id` at `ip`, its certificate written now.
    pub(crate) fn serve_args(&self, id: u64, ip: IpAddr) -> Vec<String> {
        let issued = self.authority.node(&[ip], &format!("node {id}"));
        let (cert, key) = issued.write(&self.dir, &format!("node-{id}"));
        let path = |p: &Path| p.display().to_string();
        vec![
            "--tls-cert".into(),
            path(&cert),
            "--tls-key".into(),
            path(&key),
            "--tls-client-ca".into(),
            path(&self.ca),
        ]
    }

    /// The environment of the test's commands.
    pub(crate) fn client_env(&self) -> [(&'static str, PathBuf); 3] {
        [
            ("LEASEHOLD_CACERT", self.ca.clone()),
            ("LEASEHOLD_CERT", self.client.0.clone()),
            ("LEASEHOLD_KEY", self.client.1.clone()),
        ]
    }
}
