//! One worker's loop (see the module doc of `workload`).

use super::keeper::Keeper;
use super::ops::Ops;
use super::Shared;
use leasehold_client::LockName;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Duration;

/// Pause after an operation that failed, so a dead cluster is not hammered.
const BACKOFF: Duration = Duration::from_millis(50);

/// In 1000: how often a holder stalls, or revokes its lease, on its own.
const STALL_PER_MILLE: u32 = 15;
const REVOKE_PER_MILLE: u32 = 40;

pub(super) async fn run(index: usize, ops: Ops, shared: Arc<Shared>) {
    let seed = shared.spec.seed ^ (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = StdRng::seed_from_u64(seed);
    let owner = format!("chaos-worker-{index}");
    let mut lease: Option<Keeper> = None;
    let mut writes = 0u64;
    while !shared.stopping() {
        let keeper = match lease.take().filter(Keeper::alive) {
            Some(keeper) => keeper,
            None => match Keeper::grant(&ops, shared.spec.ttl, &owner).await {
                Some(keeper) => keeper,
                None => {
                    tokio::time::sleep(BACKOFF).await;
                    continue;
                }
            },
        };
        let lock = &shared.locks[rng.random_range(0..shared.locks.len())];
        match rng.random_range(0..100) {
            0..8 => ops.get(lock).await,
            8..12 => ops.list(&shared.spec.prefix, &shared.locks).await,
            12..18 => ops.read(lock).await,
            _ => {
                writes += 1;
                let cycle = Cycle {
                    ops: &ops,
                    shared: &shared,
                    lock,
                    value: format!("w{index}-{writes}"),
                };
                if !cycle.run(&keeper, &mut rng).await {
                    continue; // the lease is given up
                }
            }
        }
        lease = Some(keeper);
    }
}

/// One hold: acquire, write, and end it one way or another.
struct Cycle<'a> {
    ops: &'a Ops,
    shared: &'a Shared,
    lock: &'a LockName,
    value: String,
}

impl Cycle<'_> {
    /// Returns whether the lease is still worth keeping.
    async fn run(&self, keeper: &Keeper, rng: &mut StdRng) -> bool {
        let ttl = self.shared.spec.ttl;
        let wait = if rng.random_bool(0.5) {
            Duration::ZERO
        } else {
            ttl
        };
        let Some(token) = self.ops.acquire(keeper.id, self.lock, wait).await else {
            tokio::time::sleep(BACKOFF).await;
            return keeper.alive();
        };
        for _ in 0..rng.random_range(1..=3) {
            self.ops.put(self.lock, token, self.value.clone()).await;
        }
        if self.shared.take_stall() || rng.random_ratio(STALL_PER_MILLE, 1000) {
            self.stall(keeper, token).await;
            return false;
        }
        if rng.random_ratio(REVOKE_PER_MILLE, 1000) {
            keeper.stop();
            self.ops.revoke(keeper.id).await;
            return false;
        }
        self.ops.release(keeper.id, self.lock, token).await;
        keeper.alive()
    }

    /// Stops renewing, sleeps past the ttl, and writes with the old token.
    async fn stall(&self, keeper: &Keeper, token: u64) {
        keeper.stop();
        let now = self.ops.recorder.now_ms();
        self.ops
            .recorder
            .lease(keeper.id, |l| l.abandoned_ms = Some(now));
        tokio::time::sleep(self.shared.spec.ttl * 3 / 2).await;
        let stale = format!("{}-after-stall", self.value);
        self.ops.put(self.lock, token, stale).await;
    }
}
