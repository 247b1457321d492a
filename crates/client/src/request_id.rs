//! Request ids: every mutation carries one, so a retry after a lost reply
//! gets the first outcome instead of acting twice (docs/DESIGN.md §2.8). An id is
//! chosen once per logical request and reused by every retry of it.
//!
//! An id is a process prefix (64 random bits, drawn at first use) and a
//! counter, both in base 36: `3lq0k2rj8h1xz.1a` — at most 21 bytes for the
//! first 78 billion requests of a process, so the server keeps it inline
//! (22 bytes) instead of on its heap, where a million leases' ids took
//! 160 MB. Random rather than pid and start time: containers reuse small
//! pids, and two processes starting in the same instant with the same pid
//! on two hosts must not share a grant id.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A fresh request id: printable ASCII, at most 64 bytes (the server's
/// REQUEST_ID_BYTES_MAX), unique per process and, with overwhelming
/// likelihood, across processes.
pub fn new_request_id() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| base36(rand::random::<u64>()));
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}.{}", base36(n))
}

/// `n` in lowercase base 36, without leading zeros.
fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut reversed = Vec::with_capacity(13);
    loop {
        reversed.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    reversed
        .iter()
        .rev()
        .map(|&digit| char::from(digit))
        .collect()
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

    #[test]
    fn ids_fit_inline_on_the_server_for_billions_of_requests() {
        assert_eq!(base36(0), "0");
        assert_eq!(base36(35), "z");
        assert_eq!(base36(36), "10");
        assert_eq!(base36(u64::MAX), "3w5e11264sgsf");
        let longest = format!("{}.{}", base36(u64::MAX), base36(78_000_000_000));
        assert_eq!(longest.len(), 21, "{longest}");
    }
}
