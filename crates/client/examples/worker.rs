//! A worker that guards every write with `fence()`.
//!
//! Run a server (`cargo run -p leasehold-cli -- serve`), then one or more of
//! these (`cargo run -p leasehold-client --example worker`). Each worker
//! takes the lock `examples/ledger`, appends a few entries to a "ledger",
//! and checks ownership right before each write. The ledger stands in for
//! the protected resource: like a database row with a `fence_token` column,
//! it keeps the highest token it has accepted and rejects lower ones, so
//! even a write that slipped past a paused worker's check is refused.
//!
//! Endpoints come from `LEASEHOLD_ENDPOINTS` (comma-separated), default
//! `http://127.0.0.1:7420`.

use leasehold_client::{Client, LockName, Token};
use std::time::Duration;

/// The protected resource: accepts a write only with a token at least as
/// high as the highest it has seen.
#[derive(Default)]
struct Ledger {
    highest: Option<Token>,
    entries: Vec<(Token, String)>,
}

impl Ledger {
    fn append(&mut self, token: Token, entry: String) -> Result<(), String> {
        if let Some(highest) = self.highest {
            if token < highest {
                return Err(format!(
                    "stale token {token}: the ledger has seen {highest}"
                ));
            }
        }
        self.highest = Some(token);
        self.entries.push((token, entry));
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let endpoints =
        std::env::var("LEASEHOLD_ENDPOINTS").unwrap_or_else(|_| "http://127.0.0.1:7420".to_owned());
    let client = Client::connect(endpoints.split(',')).await?;
    let lease = client
        .lease(Duration::from_secs(10))
        .owner("ledger-worker")
        .grant()
        .await?;
    let name = LockName::from_parts("examples", ["ledger"])?;
    let guard = lease
        .lock(&name)
        .wait(Duration::from_secs(30))
        .fenced(true)
        .acquire()
        .await?;
    println!("holding {name} with token {}", guard.token());

    let mut ledger = Ledger::default();
    for i in 0..5 {
        // Slow work happens here, between writes: a GC pause, a slow query...
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Right before the write: is the lock still ours *now*?
        let token = match guard.fence() {
            Ok(token) => token,
            Err(lost) => {
                eprintln!("stopping before write {i}: {lost}");
                return Ok(());
            }
        };
        ledger.append(token, format!("entry {i}"))?;
    }
    println!("wrote {} entries", ledger.entries.len());
    println!("release: {:?}", guard.release().await?);
    lease.revoke().await?;
    Ok(())
}
