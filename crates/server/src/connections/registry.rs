//! What the server knows of each open connection and of each remote
//! address: how many calls and streams a connection has open (its idle
//! deadline only runs while it has none), and how many connections and
//! calls each address holds (so one host cannot take the whole budget).
//!
//! A connection is found by its remote socket address, which tonic puts
//! on every request it reads from that connection: the server's view of
//! (peer IP, peer port) names one open TCP connection.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// One connection's open calls and streams.
#[derive(Debug, Default)]
pub struct Activity {
    open: AtomicUsize,
}

impl Activity {
    /// Whether a call or stream is open on the connection.
    pub fn busy(&self) -> bool {
        self.open.load(Ordering::Relaxed) > 0
    }
}

/// Open connections and calls, by connection and by address.
#[derive(Debug, Default)]
pub struct Registry {
    connections: Mutex<HashMap<SocketAddr, Arc<Activity>>>,
    per_address: Mutex<HashMap<IpAddr, Counts>>,
}

/// What one address holds.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    connections: usize,
    requests: usize,
}

impl Counts {
    fn is_empty(self) -> bool {
        self.connections == 0 && self.requests == 0
    }
}

/// Which count of an address a slot holds.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Connection,
    Request,
}

/// A connection's or a call's place in its address's count; given back
/// when dropped.
#[derive(Debug)]
pub struct Slot {
    registry: Arc<Registry>,
    address: IpAddr,
    kind: Kind,
    /// The connection a call counts on (calls only).
    activity: Option<Arc<Activity>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(activity) = &self.activity {
            activity.open.fetch_sub(1, Ordering::Relaxed);
        }
        self.registry.release(self.address, self.kind);
    }
}

/// A connection's entry: its slot at its address, and its activity.
#[derive(Debug)]
pub struct Connection {
    registry: Arc<Registry>,
    peer: SocketAddr,
    pub activity: Arc<Activity>,
    _slot: Slot,
}

impl Drop for Connection {
    fn drop(&mut self) {
        metrics::gauge!("leasehold_connections_open").decrement(1.0);
        let mut connections = self.registry.lock_connections();
        if connections
            .get(&self.peer)
            .is_some_and(|activity| Arc::ptr_eq(activity, &self.activity))
        {
            connections.remove(&self.peer);
        }
    }
}

impl Registry {
    /// Registers a connection from `peer` if its address holds fewer than
    /// `max` connections; `None` otherwise.
    pub fn connect(self: &Arc<Self>, peer: SocketAddr, max: usize) -> Option<Connection> {
        let slot = self.take(peer.ip(), Kind::Connection, max, None)?;
        let activity = Arc::new(Activity::default());
        self.lock_connections().insert(peer, activity.clone());
        metrics::gauge!("leasehold_connections_open").increment(1.0);
        Some(Connection {
            registry: self.clone(),
            peer,
            activity,
            _slot: slot,
        })
    }

    /// Counts a call or stream from `peer` (on its connection, if known) if
    /// its address has fewer than `max` open; `None` otherwise.
    pub fn call(self: &Arc<Self>, peer: SocketAddr, max: usize) -> Option<Slot> {
        let activity = self.lock_connections().get(&peer).cloned();
        let slot = self.take(peer.ip(), Kind::Request, max, activity)?;
        if let Some(activity) = &slot.activity {
            activity.open.fetch_add(1, Ordering::Relaxed);
        }
        Some(slot)
    }

    fn take(
        self: &Arc<Self>,
        address: IpAddr,
        kind: Kind,
        max: usize,
        activity: Option<Arc<Activity>>,
    ) -> Option<Slot> {
        let mut per_address = self.lock_addresses();
        let counts = per_address.entry(address).or_default();
        let count = match kind {
            Kind::Connection => &mut counts.connections,
            Kind::Request => &mut counts.requests,
        };
        if *count >= max {
            if counts.is_empty() {
                per_address.remove(&address);
            }
            return None;
        }
        *count += 1;
        Some(Slot {
            registry: self.clone(),
            address,
            kind,
            activity,
        })
    }

    fn release(&self, address: IpAddr, kind: Kind) {
        let mut per_address = self.lock_addresses();
        if let Some(counts) = per_address.get_mut(&address) {
            match kind {
                Kind::Connection => counts.connections -= 1,
                Kind::Request => counts.requests -= 1,
            }
            if counts.is_empty() {
                per_address.remove(&address);
            }
        }
    }

    fn lock_connections(&self) -> std::sync::MutexGuard<'_, HashMap<SocketAddr, Arc<Activity>>> {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_addresses(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Counts>> {
        self.per_address
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Addresses holding anything (tests: nothing leaks).
    #[cfg(test)]
    fn addresses(&self) -> usize {
        self.lock_addresses().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 7], port))
    }

    #[test]
    fn an_address_holds_at_most_its_share_and_gets_it_back() {
        let registry = Arc::new(Registry::default());
        let first = registry.connect(peer(1), 2).expect("first");
        let second = registry.connect(peer(2), 2).expect("second");
        assert!(registry.connect(peer(3), 2).is_none(), "a third is over");
        let other = SocketAddr::from(([127, 0, 0, 8], 1));
        assert!(registry.connect(other, 2).is_some(), "another address");
        drop(first);
        let third = registry.connect(peer(3), 2).expect("a slot came back");
        drop((second, third));
        assert_eq!(registry.addresses(), 0, "nothing left behind");
    }

    #[test]
    fn a_call_makes_its_connection_busy_until_it_ends() {
        let registry = Arc::new(Registry::default());
        let connection = registry.connect(peer(1), 10).expect("connected");
        assert!(!connection.activity.busy());
        let call = registry.call(peer(1), 1).expect("a call");
        assert!(connection.activity.busy());
        assert!(registry.call(peer(1), 1).is_none(), "over the calls' share");
        drop(call);
        assert!(!connection.activity.busy());
        drop(connection);
        assert_eq!(registry.addresses(), 0);
    }
}
