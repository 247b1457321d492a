//! Reloading the certificate, key and CAs on SIGHUP, without dropping the
//! node: connections accepted (and peer connections made) after a reload
//! use the new files; open ones keep the session they negotiated. A reload
//! that fails (a file missing or invalid, a key that does not fit) keeps
//! the old material, logs an error naming the file, and counts
//! `leasehold_tls_reload_failures_total`.

use super::Tls;
use std::sync::Arc;

/// Watches SIGHUP until `stop` is notified, reloading `tls` at each.
pub fn spawn(tls: Arc<Tls>, mut stop: tokio::sync::watch::Receiver<bool>) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(hangups) => hangups,
        Err(error) => {
            tracing::warn!(%error, "cannot watch SIGHUP: certificates will not reload");
            return;
        }
    };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.wait_for(|stopping| *stopping) => return,
                received = hangups.recv() => if received.is_none() { return },
            }
            reload(&tls);
        }
    });
}

/// Reloads once, logging and counting the outcome.
pub fn reload(tls: &Tls) {
    match tls.reload() {
        Ok(()) => {
            metrics::counter!("leasehold_tls_reloads_total").increment(1);
            tracing::info!(
                cert = %tls.files().cert.display(),
                "SIGHUP: TLS certificates reloaded; new connections use them"
            );
        }
        Err(error) => {
            metrics::counter!("leasehold_tls_reload_failures_total").increment(1);
            tracing::error!(
                "SIGHUP: TLS reload failed, keeping the previous certificates: {error}"
            );
        }
    }
}
