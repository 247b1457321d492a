//! Request ids: every mutation carries one, so a retry after a lost reply
//! gets the first outcome instead of acting twice (docs/DESIGN.md §2.8). An id is
//! chosen once per logical request and reused by every retry of it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A fresh request id: printable ASCII, at most 64 bytes (the server's
/// REQUEST_ID_BYTES_MAX), unique per process and across restarts of it
/// (pid and the wall-clock time of first use, then a counter).
pub fn new_request_id() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        format!("{:x}-{nanos:x}", std::process::id())
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("c-{prefix}-{n:x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_printable_and_distinct() {
        let a = new_request_id();
        let b = new_request_id();
        assert_ne!(a, b);
        assert!(
            a.len() <= 64 && a.bytes().all(|c| c.is_ascii_graphic()),
            "{a}"
        );
    }
}
