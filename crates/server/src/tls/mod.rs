//! Transport security: the node's TLS (rustls with ring) on its one port,
//! for clients and for the peers' Raft traffic alike.
//!
//! - [`TlsFiles`] (in [`crate::ServeConfig`]): the PEM files given on the
//!   command line; [`Tls`] holds what was loaded from them ([`Material`])
//!   and reloads it on SIGHUP ([`reload`]): new connections get the new
//!   certificates, open ones keep theirs, and a failed reload keeps the old.
//! - [`acceptor`]: the accept loop in front of gRPC + HTTP. Handshakes run
//!   off the loop, each bounded by [`limits::TLS_HANDSHAKE_MS_MAX`]; a
//!   client that speaks plaintext to a TLS port gets a sentence saying so.
//! - [`peers`]: who may call the Raft service: certificates from the peer CA
//!   that name a member's host. [`PeerDialer`]: how this node calls its
//!   peers (TLS with its own certificate when it has TLS).
//! - [`principal`]: the identity a client certificate carries
//!   ([`certificate_principal`]), which permissions are granted to.
//!
//! [`limits::TLS_HANDSHAKE_MS_MAX`]: leasehold_core::limits::TLS_HANDSHAKE_MS_MAX

pub mod acceptor;
mod dialer;
mod load;
pub mod peers;
mod principal;
pub mod reload;

pub use dialer::PeerDialer;
pub use load::{Material, TlsFiles};
pub use principal::{certificate_names, certificate_principal, chain_principal, CertificateNames};

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

/// The node's TLS: its files and what was last loaded from them.
pub struct Tls {
    /// Where the certificates come from, read again at each reload.
    files: TlsFiles,
    /// What new connections use; replaced whole by a successful reload.
    current: RwLock<Arc<Material>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("files", &self.files).finish()
    }
}

impl Tls {
    /// Loads `files`; the error names the file and its flag.
    pub fn load(files: TlsFiles) -> Result<Tls, crate::ServeError> {
        let material = Material::load(&files).map_err(crate::ServeError::Config)?;
        Ok(Tls {
            files,
            current: RwLock::new(Arc::new(material)),
        })
    }

    /// What new connections use now.
    pub fn current(&self) -> Arc<Material> {
        self.current.read().expect("tls lock").clone()
    }

    /// Reads the files again: on success new connections use them; on
    /// failure the old material stays and the error says which file.
    pub fn reload(&self) -> Result<(), String> {
        let material = Material::load(&self.files)?;
        *self.current.write().expect("tls lock") = Arc::new(material);
        Ok(())
    }

    /// The files this node was started with.
    pub fn files(&self) -> &TlsFiles {
        &self.files
    }
}

/// How the node's port is protected, as `status` and the live page show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportSecurity {
    /// TLS, clients need no certificate.
    Tls,
    /// TLS, and clients must present a certificate the client CA signed.
    Mtls,
    /// Plaintext on a non-loopback address, allowed by `--insecure`.
    Insecure,
    /// Plaintext on a loopback address: reachable from this host only.
    Loopback,
}

impl TransportSecurity {
    /// What a node listening on `listen` with `files` has.
    pub fn of(files: Option<&TlsFiles>, listen: SocketAddr) -> TransportSecurity {
        match files {
            Some(files) if files.client_ca.is_some() => TransportSecurity::Mtls,
            Some(_) => TransportSecurity::Tls,
            None if listen.ip().is_loopback() => TransportSecurity::Loopback,
            None => TransportSecurity::Insecure,
        }
    }

    /// `tls`, `mtls`, `insecure` or `loopback`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportSecurity::Tls => "tls",
            TransportSecurity::Mtls => "mtls",
            TransportSecurity::Insecure => "insecure",
            TransportSecurity::Loopback => "loopback",
        }
    }
}
