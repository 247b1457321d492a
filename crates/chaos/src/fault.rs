//! The faults a run injects, each for one window of the schedule, with
//! its targets (which node, which side) drawn from the run's seed.
//!
//! A window is: inject, hold the fault for its share of the run, undo it
//! (heal the network, resume or restart the processes), wait until a
//! leader is agreed again. The workload runs throughout; the probes of
//! `probe.rs` run while a node is cut off from the majority.

mod disk;

use crate::cluster::Cluster;
use crate::probe::Probes;
use crate::proxy::LinkFault;
use crate::recorder::Recorder;
use crate::workload::Workload;
use leasehold_server::storage::{tear_wal_tail, POWER_CUT_EXIT_CODE};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use std::time::Duration;

/// Bound on a leader being agreed after a fault is undone.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// Bound on a node's exit after its power is cut.
const POWER_CUT_TIMEOUT: Duration = Duration::from_secs(10);

/// Delay added to every link by `delay`.
const DELAY_MS: u64 = 30;

/// Chance in 1000 that a forwarded chunk drops its connection, in `loss`.
const LOSS_PER_MILLE: u16 = 5;

/// How fast every node's monotonic clock runs in `clock-fast`: within the
/// documented bound (the client's margin, ttl/10, covers a server clock up
/// to 1/0.9 ≈ 1.11 times as fast as the holder's).
pub const CLOCK_RATE_WITHIN: f64 = 1.05;

/// ... and in `clock-fast-beyond`, which breaks that bound on purpose: a
/// lease then ends a third early, and the checker must say so.
pub const CLOCK_RATE_BEYOND: f64 = 1.5;

/// Where Debian's `faketime` package puts the library (override with
/// `LEASEHOLD_CHAOS_FAKETIME`).
const FAKETIME_LIBRARY: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// Faults that break a documented bound on purpose, to show the checker
/// finds what follows; not part of `all`.
pub const BEYOND: [&str; 1] = ["clock-fast-beyond"];

/// Every fault `all` runs, by its command-line name.
pub const ALL: [&str; 21] = [
    "none",
    "kill-leader",
    "kill-random",
    "kill-all",
    "pause-leader",
    "pause-holder",
    "partition-leader",
    "partition-minority",
    "partition-bridge",
    "partition-one-way",
    "delay",
    "loss",
    "member-change",
    "restart-all",
    "clock-fast",
    "torn-wal",
    "power-loss",
    "power-loss-all",
    "fsync-fail",
    "disk-full",
    "pause-holder-process",
];

/// Parses `--faults` (`all`, or names separated by commas).
pub fn parse(list: &str) -> Result<Vec<String>, String> {
    if list == "all" {
        return Ok(ALL.iter().map(|f| f.to_string()).collect());
    }
    let faults: Vec<String> = list.split(',').map(|f| f.trim().to_owned()).collect();
    for fault in &faults {
        if !ALL.contains(&fault.as_str()) && !BEYOND.contains(&fault.as_str()) {
            return Err(format!(
                "unknown fault {fault:?}: choose from {}, {} or all",
                ALL.join(", "),
                BEYOND.join(", ")
            ));
        }
    }
    Ok(faults)
}

/// What one window needs.
pub struct Window<'a> {
    pub cluster: &'a mut Cluster,
    pub workload: &'a Workload,
    pub recorder: &'a Recorder,
    pub rng: &'a mut StdRng,
    /// How long the fault stays in force.
    pub hold: Duration,
}

impl Window<'_> {
    /// Injects `fault`, holds it, undoes it and waits for a leader.
    /// Returns what it did, in words.
    pub async fn run(&mut self, fault: &str) -> Result<String, String> {
        let did = self.inject(fault).await?;
        self.cluster.heal();
        for id in self.cluster.ids() {
            self.cluster.resume(id).ok();
            if !self.cluster.running().contains(&id) {
                self.cluster.restart(id).await?;
            }
        }
        self.cluster.leader(RECOVERY_TIMEOUT).await?;
        Ok(did)
    }

    async fn leader(&self) -> Result<u64, String> {
        self.cluster.leader(RECOVERY_TIMEOUT).await
    }

    fn random_node(&mut self) -> u64 {
        let ids = self.cluster.ids();
        ids[self.rng.random_range(0..ids.len())]
    }

    async fn inject(&mut self, fault: &str) -> Result<String, String> {
        match fault {
            "none" => {
                tokio::time::sleep(self.hold).await;
                Ok(fault.to_owned())
            }
            "partition-leader" => {
                let id = self.leader().await?;
                self.cut_off(&[id], LinkFault::PARTITION).await
            }
            "partition-minority" => {
                let mut ids = self.cluster.ids();
                ids.shuffle(self.rng);
                ids.truncate((ids.len() - 1) / 2);
                self.cut_off(&ids, LinkFault::PARTITION).await
            }
            "partition-bridge" => self.bridge().await,
            "partition-one-way" => self.one_way().await,
            "delay" | "loss" => self.slow_links(fault).await,
            "torn-wal" => self.torn_wal().await,
            "power-loss" | "power-loss-all" => self.power_loss(fault).await,
            "fsync-fail" => self.fsync_fail().await,
            "disk-full" => self.disk_full().await,
            "pause-holder-process" => crate::holder::pause::pause_holder_process(self).await,
            _ => self.inject_process_fault(fault).await,
        }
    }

    /// The faults of processes: kills, pauses, stalls, membership, clocks.
    async fn inject_process_fault(&mut self, fault: &str) -> Result<String, String> {
        let hold = self.hold;
        match fault {
            "kill-leader" | "kill-random" => {
                let id = match fault {
                    "kill-leader" => self.leader().await?,
                    _ => self.random_node(),
                };
                self.cluster.kill9(id)?;
                tokio::time::sleep(hold).await;
                self.cluster.restart(id).await?;
                return Ok(format!("kill -9 of node {id}, restarted after {hold:?}"));
            }
            "kill-all" | "restart-all" => {
                for id in self.cluster.ids() {
                    self.cluster.kill9(id)?;
                }
                if fault == "kill-all" {
                    tokio::time::sleep(hold / 2).await;
                }
                for id in self.cluster.ids() {
                    self.cluster.restart(id).await?;
                }
                tokio::time::sleep(hold / 2).await;
            }
            "pause-leader" => {
                let id = self.leader().await?;
                self.cluster.pause(id)?;
                tokio::time::sleep(hold).await;
                self.cluster.resume(id)?;
                return Ok(format!("SIGSTOP of leader {id} for {hold:?}"));
            }
            "pause-holder" => {
                self.workload.stall_holders(4);
                tokio::time::sleep(hold).await;
            }
            "member-change" => {
                let id = self.leader().await?;
                self.cluster.remove_node(id).await?;
                tokio::time::sleep(hold / 2).await;
                self.cluster.rejoin_wiped(id).await?;
                return Ok(format!("leader {id} removed, wiped and added back"));
            }
            "clock-fast" | "clock-fast-beyond" => {
                let rate = match fault {
                    "clock-fast" => CLOCK_RATE_WITHIN,
                    _ => CLOCK_RATE_BEYOND,
                };
                self.roll_clocks(Some(rate)).await?;
                self.workload.stall_holders(4);
                tokio::time::sleep(hold).await;
                self.roll_clocks(None).await?;
                return Ok(format!("every node's clock {rate}x fast for {hold:?}"));
            }
            other => return Err(format!("unknown fault {other:?}")),
        }
        Ok(fault.to_owned())
    }

    /// Every link delayed, or losing connections, for the hold.
    async fn slow_links(&mut self, fault: &str) -> Result<String, String> {
        let link = match fault {
            "delay" => LinkFault {
                delay_ms: DELAY_MS,
                ..LinkFault::default()
            },
            _ => LinkFault {
                reset_per_mille: LOSS_PER_MILLE,
                ..LinkFault::default()
            },
        };
        for id in self.cluster.ids() {
            self.cluster.proxy(id)?.set_everyone(link);
        }
        tokio::time::sleep(self.hold).await;
        Ok(fault.to_owned())
    }

    /// A node killed, its log's tail torn as a crash mid-write leaves it.
    async fn torn_wal(&mut self) -> Result<String, String> {
        let id = self.random_node();
        self.cluster.kill9(id)?;
        let dir = self.cluster.data_dir(id)?.to_path_buf();
        let torn = tear_wal_tail(&dir).map_err(|e| format!("tear node {id}'s log: {e}"))?;
        tokio::time::sleep(self.hold).await;
        self.cluster.restart(id).await?;
        Ok(format!(
            "node {id} killed, its log torn at {} of {} ({} of {} bytes), restarted",
            torn.offset,
            torn.segment.display(),
            torn.written_bytes,
            torn.claimed_bytes
        ))
    }

    /// The leader's, or every node's, power cut.
    async fn power_loss(&mut self, fault: &str) -> Result<String, String> {
        let ids = match fault {
            "power-loss" => vec![self.leader().await?],
            _ => self.cluster.ids(),
        };
        self.power_cut(&ids).await?;
        tokio::time::sleep(self.hold).await;
        for &id in &ids {
            self.cluster.restart(id).await?;
        }
        Ok(format!("power cut of nodes {ids:?} (unsynced writes lost)"))
    }

    /// Restarts the nodes one at a time (a leader agreed between two) with
    /// their monotonic clock running `rate` times as fast (libfaketime), or
    /// at the true rate with `None`.
    async fn roll_clocks(&mut self, rate: Option<f64>) -> Result<(), String> {
        let env = match rate {
            Some(rate) => vec![
                ("LD_PRELOAD".to_owned(), faketime_library()?),
                ("FAKETIME".to_owned(), format!("+0 x{rate}")),
            ],
            None => Vec::new(),
        };
        for id in self.cluster.ids() {
            self.cluster.set_env(id, env.clone())?;
            self.cluster.kill9(id)?;
            self.cluster.restart(id).await?;
            self.leader().await?;
        }
        Ok(())
    }

    /// Cuts the power of `ids` at once: each drops every write it had not
    /// fsynced and exits (the server's test-only power-cut model).
    async fn power_cut(&mut self, ids: &[u64]) -> Result<(), String> {
        for &id in ids {
            self.cluster.signal(id, libc::SIGUSR2)?;
        }
        for &id in ids {
            let exit = self.cluster.wait_exit(id, POWER_CUT_TIMEOUT).await?;
            let code = format!("exit status: {POWER_CUT_EXIT_CODE}");
            if exit != code {
                return Err(format!(
                    "node {id}'s power cut ended with {exit}, not {code}"
                ));
            }
        }
        Ok(())
    }

    /// Cuts `side` off from the others with `link` for the hold, probing
    /// the side with writes meanwhile.
    async fn cut_off(&mut self, side: &[u64], link: LinkFault) -> Result<String, String> {
        self.cluster.block(side, &self.cluster.others(side), link)?;
        self.cluster.block(&self.cluster.others(side), side, link)?;
        self.probe(side).await?;
        Ok(format!("nodes {side:?} cut off for {:?}", self.hold))
    }

    /// Sends writes to `nodes` for the hold, then heals.
    async fn probe(&mut self, nodes: &[u64]) -> Result<(), String> {
        let probes = Probes::start(self.cluster, nodes, self.recorder.clone()).await?;
        tokio::time::sleep(self.hold).await;
        let healed_ms = self.recorder.now_ms();
        self.cluster.heal();
        probes.stop(healed_ms).await;
        Ok(())
    }

    /// One node bridges two halves that cannot reach each other.
    async fn bridge(&mut self) -> Result<String, String> {
        let mut ids = self.cluster.ids();
        ids.shuffle(self.rng);
        let bridge = ids.remove(0);
        let (left, right) = ids.split_at(ids.len() / 2);
        self.cluster.block(left, right, LinkFault::PARTITION)?;
        self.cluster.block(right, left, LinkFault::PARTITION)?;
        tokio::time::sleep(self.hold).await;
        Ok(format!("node {bridge} bridges {left:?} and {right:?}"))
    }

    /// The leader hears everyone but nobody hears it.
    async fn one_way(&mut self) -> Result<String, String> {
        let id = self.leader().await?;
        let others = self.cluster.others(&[id]);
        let up = LinkFault {
            stall_up: true,
            ..LinkFault::default()
        };
        let down = LinkFault {
            stall_down: true,
            ..LinkFault::default()
        };
        self.cluster.block(&[id], &others, up)?;
        self.cluster.block(&others, &[id], down)?;
        self.probe(&[id]).await?;
        Ok(format!(
            "leader {id} can hear but not be heard for {:?}",
            self.hold
        ))
    }
}

/// libfaketime's path, checked.
fn faketime_library() -> Result<String, String> {
    let path =
        std::env::var("LEASEHOLD_CHAOS_FAKETIME").unwrap_or_else(|_| FAKETIME_LIBRARY.into());
    if std::path::Path::new(&path).is_file() {
        Ok(path)
    } else {
        Err(format!(
            "the clock faults need libfaketime, not found at {path}: install it (apt-get install \
             faketime) or set LEASEHOLD_CHAOS_FAKETIME to its libfaketimeMT.so.1"
        ))
    }
}
