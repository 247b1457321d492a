//! [`Keeper`]: one worker's lease, renewed at ttl/3 by a task of its own
//! with unary keep-alives (each acknowledged one is recorded), until it is
//! stopped (a stall, a revoke) or the server says the lease is gone.

use super::ops::Ops;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A kept lease.
pub struct Keeper {
    /// The lease id.
    pub id: u64,
    /// Set by the renewing task when the lease is gone, or by `stop`.
    ended: Arc<AtomicBool>,
}

impl Keeper {
    /// Grants a lease of `ttl` and starts renewing it.
    pub async fn grant(ops: &Ops, ttl: Duration, owner: &str) -> Option<Keeper> {
        let id = ops.grant(ttl, owner).await?;
        let ended = Arc::new(AtomicBool::new(false));
        tokio::spawn(renew(ops.clone(), id, ttl / 3, ended.clone()));
        Some(Keeper { id, ended })
    }

    /// Whether it is still renewed.
    pub fn alive(&self) -> bool {
        !self.ended.load(Ordering::SeqCst)
    }

    /// Stops renewing (the lease runs out after its ttl).
    pub fn stop(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn renew(ops: Ops, id: u64, every: Duration, ended: Arc<AtomicBool>) {
    loop {
        tokio::time::sleep(every).await;
        if ended.load(Ordering::SeqCst) {
            return;
        }
        if ops.renew(id).await == Err(true) {
            ended.store(true, Ordering::SeqCst);
            return;
        }
    }
}
