//! Calls and streams open at once per principal: a second share beside the
//! remote address's ([`super::registry`]), so that one tenant's fleet,
//! spread over many hosts, cannot take the server from the others
//! ([`limits::REQUESTS_PER_PRINCIPAL_MAX`] by default).
//!
//! Only a caller with an identity counts: one whose bearer token verifies,
//! or whose client certificate names it. Who that is gets decided before
//! the call reaches its handler, by the [`Identify`] function `serve` gives
//! ([`crate::auth::caller::principal_of`]); the handler then decides again
//! whether the caller may do what it asks.
//!
//! [`limits::REQUESTS_PER_PRINCIPAL_MAX`]: leasehold_core::limits::REQUESTS_PER_PRINCIPAL_MAX

use leasehold_core::auth::Principal;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Names the principal of a request from its `authorization` header and
/// its extensions, where the TLS layer left the client's certificate
/// (`None`: anonymous, or a token that does not verify).
pub type Identify =
    Arc<dyn Fn(Option<&str>, &axum::http::Extensions) -> Option<Principal> + Send + Sync>;

/// Open calls and streams by principal.
#[derive(Debug, Default)]
pub struct PrincipalShares {
    open: Mutex<HashMap<Principal, usize>>,
}

/// A call's place in its principal's count; given back when dropped.
#[derive(Debug)]
pub struct PrincipalSlot {
    shares: Arc<PrincipalShares>,
    principal: Principal,
}

impl Drop for PrincipalSlot {
    fn drop(&mut self) {
        let mut open = self.shares.lock();
        if let Some(count) = open.get_mut(&self.principal) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.principal);
            }
        }
    }
}

impl PrincipalShares {
    /// Counts a call for `principal` if it has fewer than `max` open;
    /// `None` otherwise.
    pub fn take(self: &Arc<Self>, principal: &Principal, max: usize) -> Option<PrincipalSlot> {
        let mut open = self.lock();
        let count = open.entry(principal.clone()).or_default();
        if *count >= max {
            if *count == 0 {
                open.remove(principal);
            }
            return None;
        }
        *count += 1;
        Some(PrincipalSlot {
            shares: self.clone(),
            principal: principal.clone(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Principal, usize>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_holds_at_most_its_share_and_gets_it_back() {
        let shares = Arc::new(PrincipalShares::default());
        let alice = Principal::parse("alice").unwrap();
        let bob = Principal::parse("bob").unwrap();
        let first = shares.take(&alice, 2).expect("first");
        let second = shares.take(&alice, 2).expect("second");
        assert!(shares.take(&alice, 2).is_none(), "a third is over");
        assert!(shares.take(&bob, 2).is_some(), "another principal");
        drop(first);
        let third = shares.take(&alice, 2).expect("a slot came back");
        drop((second, third));
        assert!(shares.lock().is_empty(), "nothing left behind");
        assert!(shares.take(&bob, 0).is_none() && shares.lock().is_empty());
    }
}
