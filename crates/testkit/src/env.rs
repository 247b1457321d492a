//! What a test asks of its environment: whether this is a CI run, a free
//! port, a name no other test (or earlier run) uses.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether this is a CI run (`CI=true`). There a missing dependency (a
/// database, a browser, a tool) fails the test instead of skipping it: a
/// CI run that quietly skipped would be a test that can't fail.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|ci| ci == "true")
}

/// A TCP port on 127.0.0.1 that was free a moment ago (bound, read,
/// released): for a process to listen on, or for a dead address nothing
/// answers at.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A loopback address nothing listens on (a port [`free_port`] found).
pub fn dead_addr() -> std::net::SocketAddr {
    (std::net::Ipv4Addr::LOCALHOST, free_port()).into()
}

/// `prefix` plus a suffix unique to this process, run and call. With a
/// prefix of letters, digits and `_` it is a valid SQL identifier too, so
/// it names tables as well as resources and Redis keys; tests using it may
/// run in parallel and again against one shared server.
pub fn unique(prefix: &str) -> String {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let random = RandomState::new().hash_one(std::time::SystemTime::now()) & 0xffff_ffff;
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}_{}_{random:08x}_{call}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_differ_and_keep_the_prefix() {
        let (a, b) = (unique("t"), unique("t"));
        assert_ne!(a, b);
        assert!(a.starts_with("t_"), "{a}");
        assert!(
            a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{a}"
        );
    }
}
