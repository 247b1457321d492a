//! Where the tests find Redis: `LEASEHOLD_TEST_REDIS` (`host:port`), which
//! `.ci/run` exports after starting a server. Under `CI=true` a missing
//! variable fails the test. Elsewhere, without the variable, the tests try
//! [`DEFAULT_ADDR`] and, if nothing answers there, say so loudly and skip,
//! so `cargo test` still works on a laptop without Redis.

use crate::env::in_ci;
use std::time::Duration;
use tokio::net::TcpStream;

/// Where a development machine's Redis listens.
pub const DEFAULT_ADDR: &str = "127.0.0.1:6379";

/// Bound on probing [`DEFAULT_ADDR`].
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The Redis server to test against, or `None` (after a loud notice)
/// outside CI when none is configured or running: the caller then returns
/// without testing.
pub async fn addr() -> Option<String> {
    if let Ok(addr) = std::env::var("LEASEHOLD_TEST_REDIS") {
        return Some(addr);
    }
    assert!(
        !in_ci(),
        "CI=true but LEASEHOLD_TEST_REDIS is not set: .ci/run must start redis-server and export it"
    );
    let probe = tokio::time::timeout(PROBE_TIMEOUT, TcpStream::connect(DEFAULT_ADDR)).await;
    if matches!(probe, Ok(Ok(_))) {
        return Some(DEFAULT_ADDR.to_owned());
    }
    eprintln!(
        "\n!!!!!!!! SKIPPING Redis tests: LEASEHOLD_TEST_REDIS is unset and nothing \
         answers on {DEFAULT_ADDR}. Start redis-server or set LEASEHOLD_TEST_REDIS. !!!!!!!!\n"
    );
    None
}
