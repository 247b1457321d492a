//! The disk faults of one member of the cluster, under the workload and
//! the checker (the single-node cases are t220 and t221):
//!
//! - `fsync-fail`: the node is restarted with the server's test-only hook
//!   that fails its log fsyncs (EIO) from a seeded count on; its log is
//!   then poisoned and its Raft stops. Held, then restarted healthy.
//! - `disk-full`: the node's data dir is on a tmpfs of its own, which a
//!   filler file fills while the node runs; then the filler is deleted.
//!
//! Either way, once the node's `/readyz` says its disk takes no writes,
//! the node is probed with writes straight through its proxy for the rest
//! of the hold (property 5: each must fail), and after the fault the node
//! must apply what the leader had committed (it caught up). The target is
//! the leader half the time, a follower otherwise, drawn from the seed.

use super::{Window, RECOVERY_TIMEOUT};
use crate::probe::Probes;
use crate::tmpfs::fill;
use leasehold_core::limits::DISK_HEADROOM_BYTES;
use leasehold_server::storage::wal::DEFAULT_SEGMENT_BYTES;
use leasehold_server::storage::FSYNC_FAIL_AFTER_ENV;
use rand::seq::IndexedRandom as _;
use rand::Rng;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

/// The first failing log fsync after the restart, drawn from this range:
/// past the start-up's own appends, within a second of the workload's.
const FSYNC_FAIL_AFTER: RangeInclusive<u64> = 5..=50;

/// The free space of the full node's tmpfs before the fill: what writes
/// need (a log segment plus `DISK_HEADROOM_BYTES`) and one segment more
/// for its log to grow into until the next `disk-full` window.
const TMPFS_ROOM_BYTES: u64 = 2 * DEFAULT_SEGMENT_BYTES + DISK_HEADROOM_BYTES;

/// The filler's pause after each MiB: the disk fills in under a second
/// while the workload writes, rather than at once.
const FILL_PACE: Duration = Duration::from_millis(5);

/// Between two looks at a node's `/readyz` or status.
const POLL: Duration = Duration::from_millis(50);

/// What `/readyz` says when the disk takes no writes (`http::readiness`).
const NOT_READY_DISK: &str = "not ready: disk:";

impl Window<'_> {
    /// `fsync-fail` (see the module doc).
    pub(super) async fn fsync_fail(&mut self) -> Result<String, String> {
        let (id, role) = self.leader_or_follower().await?;
        let after = self.rng.random_range(FSYNC_FAIL_AFTER);
        let hook = vec![(FSYNC_FAIL_AFTER_ENV.to_owned(), after.to_string())];
        self.cluster.set_env(id, hook)?;
        self.cluster.kill9(id)?;
        self.cluster.restart(id).await?;
        let state = self.state_of(id).await;
        let refusing = self.refusing(id).await;
        self.cluster.set_env(id, Vec::new())?;
        self.cluster.kill9(id)?;
        self.cluster.restart(id).await?;
        let refused = refusing.stop().await;
        let caught_up = self.caught_up(id).await?;
        Ok(format!(
            "node {id} ({role}) restarted with log fsync {after} and later failing (EIO), \
             {state} then: {refused}; restarted healthy, caught up in {caught_up:?}"
        ))
    }

    /// `disk-full` (see the module doc).
    pub(super) async fn disk_full(&mut self) -> Result<String, String> {
        let (id, role) = self.leader_or_follower().await?;
        let mount = self.cluster.tmpfs_for(id, TMPFS_ROOM_BYTES).await?;
        let filler = mount.join("chaos-filler");
        let state = self.state_of(id).await;
        let filling = {
            let filler = filler.clone();
            tokio::task::spawn_blocking(move || fill(&filler, FILL_PACE, || false))
        };
        let refusing = self.refusing(id).await;
        let filled_bytes = filling
            .await
            .map_err(|e| format!("the filler of node {id}'s disk: {e}"))??;
        std::fs::remove_file(&filler)
            .map_err(|e| format!("delete the filler {}: {e}", filler.display()))?;
        let refused = refusing.stop().await;
        let ready = self.ready_again(id).await?;
        let caught_up = self.caught_up(id).await?;
        Ok(format!(
            "node {id} ({role}, {state} then): its disk (a tmpfs) filled with {} MiB: \
             {refused}; space freed, ready again in {ready:?}, caught up in {caught_up:?}",
            filled_bytes >> 20
        ))
    }

    /// The leader half the time, a follower otherwise; and which it is.
    async fn leader_or_follower(&mut self) -> Result<(u64, &'static str), String> {
        let leader = self.leader().await?;
        let followers = self.cluster.others(&[leader]);
        if self.rng.random_bool(0.5) {
            return Ok((leader, "the leader"));
        }
        match followers.choose(self.rng) {
            Some(&id) => Ok((id, "a follower")),
            None => Ok((leader, "the leader")),
        }
    }

    /// Node `id`'s Raft state as it says (`Leader`, `Follower`, ...).
    async fn state_of(&self, id: u64) -> String {
        let status = self.cluster.status_of(id).await;
        status.map_or_else(|| "not answering".to_owned(), |s| s.state)
    }

    /// Holds the fault: waits until node `id`'s `/readyz` says its disk
    /// takes no writes, then probes it with writes for the rest of the
    /// hold. Says what it saw, in words; the probes are stopped by
    /// [`Refusing::stop`] once the fault is undone.
    async fn refusing(&mut self, id: u64) -> Refusing {
        let started = Instant::now();
        let deadline = started + self.hold;
        let refused = loop {
            let readyz = self.cluster.readyz(id).await;
            if readyz.is_some_and(|(code, body)| code == 503 && body.starts_with(NOT_READY_DISK)) {
                break started.elapsed();
            }
            if Instant::now() >= deadline {
                let seen = format!("its /readyz never named the disk within {:?}", self.hold);
                return Refusing::nothing(seen, self.recorder.now_ms());
            }
            tokio::time::sleep(POLL).await;
        };
        let probes = Probes::start(self.cluster, &[id], self.recorder.clone()).await;
        tokio::time::sleep_until(deadline.into()).await;
        let seen = match &probes {
            Ok(_) => format!(
                "/readyz named the disk after {refused:?}, writes probed until {:?}",
                self.hold
            ),
            Err(e) => format!("/readyz named the disk after {refused:?} (not probed: {e})"),
        };
        Refusing {
            seen,
            probes: probes.ok(),
            undone_ms: self.recorder.now_ms(),
        }
    }

    /// Waits until node `id`'s `/readyz` no longer names the disk; how long
    /// that took.
    async fn ready_again(&self, id: u64) -> Result<Duration, String> {
        let started = Instant::now();
        loop {
            let readyz = self.cluster.readyz(id).await;
            match readyz {
                Some((_, body)) if !body.starts_with(NOT_READY_DISK) => {
                    return Ok(started.elapsed())
                }
                _ if started.elapsed() >= RECOVERY_TIMEOUT => {
                    return Err(format!(
                        "node {id} still refuses writes {RECOVERY_TIMEOUT:?} after its disk \
                         had room again: /readyz says {readyz:?}"
                    ))
                }
                _ => tokio::time::sleep(POLL).await,
            }
        }
    }

    /// Waits until node `id` has applied what the leader had committed
    /// when asked; how long that took.
    async fn caught_up(&self, id: u64) -> Result<Duration, String> {
        let started = Instant::now();
        let leader = self.leader().await?;
        let Some(status) = self.cluster.status_of(leader).await else {
            return Err(format!("leader {leader} does not answer status"));
        };
        let target = status.commit_index;
        loop {
            let status = self.cluster.status_of(id).await;
            if status.as_ref().is_some_and(|s| s.applied_index >= target) {
                return Ok(started.elapsed());
            }
            if started.elapsed() >= RECOVERY_TIMEOUT {
                let applied = status.map(|s| s.applied_index);
                return Err(format!(
                    "node {id} applied {applied:?}, not up to the leader's commit index \
                     {target}, within {RECOVERY_TIMEOUT:?}"
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// A fault held: what was seen, and the probes still running.
struct Refusing {
    /// What the node's `/readyz` said, and when, in words.
    seen: String,
    /// The probes, stopped only once the fault is undone: a probe's lease
    /// grant through the whole cluster can wait for the fault's end (a
    /// full leader's), and the fault must not outlast its hold for it.
    probes: Option<Probes>,
    /// The end of the hold: probes answered after it are not held to
    /// property 5 (the fault was being undone).
    undone_ms: u64,
}

impl Refusing {
    fn nothing(seen: String, undone_ms: u64) -> Refusing {
        Refusing {
            seen,
            probes: None,
            undone_ms,
        }
    }

    /// Stops the probes (call once the fault is undone); what was seen.
    async fn stop(self) -> String {
        if let Some(probes) = self.probes {
            probes.stop(self.undone_ms).await;
        }
        self.seen
    }
}
