//! Reconciliation: after a reconnect (or an acquire or release whose
//! outcome is unknown), ask the server which locks the lease holds and
//! release every one no live guard knows of. Without it, a grant whose
//! reply was lost for good would keep a lock held, by a lease we renew, for
//! work nobody is doing.

use super::LeaseInner;
use crate::error::Error;
use crate::release::send_release;
use leasehold_core::{LockName, Token};
use std::sync::Arc;

/// Counter: locks released because no guard knew of them.
pub const ORPHANS_RELEASED_TOTAL: &str = "leasehold_client_orphans_released_total";

/// One pass; failures are logged and asked for again.
pub(crate) async fn run(lease: Arc<LeaseInner>) {
    let (client, state) = (&lease.client, &lease.state);
    let held = match client.lease_info(state.id).await {
        Ok(info) => info.held,
        // The lease is gone: it holds nothing left to release.
        Err(Error::LeaseNotFound { .. }) => return,
        Err(error) => {
            tracing::info!(lease = %state.id, %error, "cannot reconcile yet");
            state.want_reconcile();
            return;
        }
    };
    for lock in held {
        if lock.token == 0 || state.knows(&lock.name) {
            continue;
        }
        let Ok(name) = LockName::parse(&lock.name) else {
            continue;
        };
        let session = lease.calls_session();
        let outcome = send_release(client, session, state.id, &name, Token(lock.token)).await;
        tracing::warn!(lease = %state.id, lock = %name, token = lock.token, ?outcome, "released a lock no guard knew of");
        metrics::counter!(ORPHANS_RELEASED_TOTAL).increment(1);
    }
}
