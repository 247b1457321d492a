//! Rate limiting of one kind of log line per peer: a refused Raft message
//! repeats with every heartbeat (every 100 ms), and the log should say so
//! once every [`REFUSAL_LOG_EVERY`], not ten times a second.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// How often a refusal is logged per peer.
pub const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

/// Most peers remembered: node ids come off the wire, so a stream of made-up
/// ids must not grow the map without bound. When full, it starts over
/// (at worst a few more log lines).
const PEERS_MAX: usize = 256;

/// When each peer was last logged.
#[derive(Debug)]
pub struct LogLimit {
    /// The least time between two lines about one peer.
    every: Duration,
    /// Peer node id → when its last line was written.
    last: Mutex<HashMap<u64, Instant>>,
}

impl LogLimit {
    /// At most one line per peer per `every`.
    pub fn new(every: Duration) -> LogLimit {
        LogLimit {
            every,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a line about `peer` may be written at `now` (and, if so,
    /// notes that it was).
    pub fn allow(&self, peer: u64, now: Instant) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = last.get(&peer) {
            if now.saturating_duration_since(*at) < self.every {
                return false;
            }
        }
        if last.len() >= PEERS_MAX && !last.contains_key(&peer) {
            last.clear();
        }
        last.insert(peer, now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_interval_per_peer() {
        let limit = LogLimit::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert!(limit.allow(1, t0));
        assert!(!limit.allow(1, t0 + Duration::from_millis(100)));
        assert!(
            limit.allow(2, t0 + Duration::from_millis(100)),
            "another peer"
        );
        assert!(!limit.allow(1, t0 + Duration::from_millis(9_999)));
        assert!(limit.allow(1, t0 + Duration::from_secs(10)));
    }

    #[test]
    fn made_up_peers_do_not_grow_it_without_bound() {
        let limit = LogLimit::new(Duration::from_secs(10));
        let now = Instant::now();
        for peer in 0..(PEERS_MAX as u64 * 4) {
            assert!(limit.allow(peer, now));
        }
        assert!(limit.last.lock().unwrap().len() <= PEERS_MAX);
    }
}
