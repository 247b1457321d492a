//! Which node leads: polled from every running node's status until enough
//! of them name one leader that itself says it leads with its quorum.

use super::Cluster;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How many nodes must name the leader.
#[derive(Clone, Copy)]
enum Agreement {
    /// A majority of the voters.
    Majority,
    /// Every running node.
    Everyone,
}

impl Cluster {
    /// Polls until a majority of the voters names one leader that itself
    /// says it leads with its quorum; returns its id.
    pub async fn leader(&self, within: Duration) -> Result<u64, String> {
        self.poll_leader(within, Agreement::Majority).await
    }

    /// As [`Cluster::leader`], but every running node must name it: at
    /// start, so that no node that has not heard from the leader yet calls
    /// an election under the first workload (a new term stalls every
    /// keep-alive for an election's time).
    pub async fn settled_leader(&self, within: Duration) -> Result<u64, String> {
        self.poll_leader(within, Agreement::Everyone).await
    }

    async fn poll_leader(&self, within: Duration, needed: Agreement) -> Result<u64, String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(leader) = self.agreed_leader(needed).await {
                return Ok(leader);
            }
            if Instant::now() >= deadline {
                return Err(format!("no leader agreed within {within:?}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn agreed_leader(&self, needed: Agreement) -> Option<u64> {
        let running = self.running();
        let asks = running.iter().map(|&id| async move {
            let status = self.status_of(id).await?;
            Some((id, status))
        });
        let statuses: BTreeMap<u64, _> = futures::future::join_all(asks)
            .await
            .into_iter()
            .flatten()
            .collect();
        let mut named: BTreeMap<u64, usize> = BTreeMap::new();
        for status in statuses.values().filter(|s| s.leader != 0) {
            *named.entry(status.leader).or_default() += 1;
        }
        named.into_iter().find_map(|(leader, count)| {
            let own = statuses.get(&leader)?;
            let voters = own.members.iter().filter(|m| m.voter).count().max(1);
            let agreed = match needed {
                Agreement::Majority => count > voters / 2,
                Agreement::Everyone => count == running.len(),
            };
            (agreed && own.state == "Leader" && own.quorum).then_some(leader)
        })
    }
}
