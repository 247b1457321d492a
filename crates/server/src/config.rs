//! Validated server configuration. Only a validated `ServeConfig` reaches the
//! node: inconsistent settings are refused at start-up with a clear error.

use crate::raft::node::RaftTimings;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How to run one node.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Directory of the durable log and snapshots.
    pub data_dir: PathBuf,
    /// Address of the gRPC + HTTP port.
    pub listen: SocketAddr,
    /// This node's Raft id (≠ 0).
    pub node_id: u64,
    /// Extra time a lease gets when its deadline falls just after a new
    /// leader took over (docs/DESIGN.md guarantee 5): time for its holder,
    /// which could not renew during the election, to renew through the new
    /// leader. Must cover `leader_lease − election_timeout_min` of
    /// `raft_timings` (see [`ServeConfig::validate`]).
    pub failover_margin: Duration,
    /// Raft's heartbeat, election timeouts and leader lease.
    pub raft_timings: RaftTimings,
    /// Log entries between snapshots (bounds the log and the replay at restart).
    pub snapshot_every_entries: u64,
    /// Connections and calls per remote address, and the deadlines of a
    /// connection (see [`crate::connections`]).
    pub connection_limits: crate::connections::ConnectionLimits,
    /// The Raft protocol this node speaks ([`PROTOCOL_VERSION`]; an older
    /// one only to act as the previous release in rolling-upgrade tests,
    /// see [`crate::raft::protocol`]).
    ///
    /// [`PROTOCOL_VERSION`]: crate::raft::protocol::PROTOCOL_VERSION
    pub protocol_version: u32,
    /// The members of a new cluster (node id → host:port other nodes and
    /// clients reach it at), the same on every member. Empty: a one-member
    /// cluster of this node at `listen`. Used only on an empty data dir.
    pub peers: BTreeMap<u64, String>,
    /// Start without forming a cluster and wait to be added to one.
    pub join: bool,
    /// Mixed into the cluster id a `peers` cluster derives from its member
    /// list: each cluster formed at the same addresses needs its own (like
    /// etcd's `--initial-cluster-token`). Used only on an empty data dir.
    pub cluster_token: String,
    /// Make this principal an admin once this node leads, if nobody is
    /// admin yet, and print a one-time token for it (`serve
    /// --bootstrap-admin`).
    pub bootstrap_admin: Option<String>,
    /// `/metrics` needs `observe` while auth is enabled (`serve
    /// --metrics-auth`); otherwise it is open, like `/healthz`.
    pub metrics_auth: bool,
    /// The node's TLS files; `None`: plaintext (loopback, or `insecure`).
    pub tls: Option<crate::tls::TlsFiles>,
    /// Serve plaintext on a non-loopback address (`--insecure`): without
    /// it such a start is refused, so that no node is open by mistake.
    pub insecure: bool,
    /// Told readiness (what `/readyz` answers) and each change of it, for
    /// a supervisor that announces the node only once it can answer
    /// (`leasehold serve` prints "listening" then). The receiver must not
    /// keep a borrow of the value (`wait_for`'s `Ref`) alive: the next
    /// change would wait for it, and the health service with it.
    pub readiness: Option<Arc<watch::Sender<bool>>>,
}

impl ServeConfig {
    /// The embedded single-node default: `./leasehold-data`, 127.0.0.1:7420.
    pub fn single_node(data_dir: PathBuf, listen: SocketAddr) -> ServeConfig {
        ServeConfig {
            data_dir,
            listen,
            node_id: 1,
            failover_margin: Duration::from_millis(500),
            raft_timings: RaftTimings::default(),
            snapshot_every_entries: crate::raft::node::SNAPSHOT_EVERY_ENTRIES,
            protocol_version: crate::raft::protocol::PROTOCOL_VERSION,
            connection_limits: crate::connections::ConnectionLimits::default(),
            peers: BTreeMap::new(),
            join: false,
            cluster_token: crate::identity::DEFAULT_CLUSTER_TOKEN.into(),
            bootstrap_admin: None,
            metrics_auth: false,
            tls: None,
            insecure: false,
            readiness: None,
        }
    }

    /// How Raft starts on an empty data dir.
    pub fn formation(&self) -> crate::raft::node::Formation {
        use crate::raft::node::Formation;
        if self.join {
            return Formation::Join;
        }
        if self.peers.is_empty() {
            return Formation::Alone {
                addr: self.listen.to_string(),
            };
        }
        Formation::Initialize(self.peers.clone())
    }

    /// Checks the settings together.
    pub fn validate(&self) -> Result<(), crate::ServeError> {
        if self.node_id == 0 {
            return Err(crate::ServeError::Config(
                "node id must not be 0: pass --node-id 1 or higher".into(),
            ));
        }
        if self.join && !self.peers.is_empty() {
            return Err(crate::ServeError::Config(
                "--join and --peers exclude each other: --peers forms a new cluster, --join waits to be added to one".into(),
            ));
        }
        if !self.peers.is_empty() && !self.peers.contains_key(&self.node_id) {
            return Err(crate::ServeError::Config(format!(
                "--peers must list this node (--node-id {}) with its address",
                self.node_id
            )));
        }
        if let Some((id, addr)) = self
            .peers
            .iter()
            .find(|(id, addr)| **id == 0 || addr.is_empty())
        {
            return Err(crate::ServeError::Config(format!(
                "--peers entry {id}={addr:?}: node ids start at 1 and every node needs an address"
            )));
        }
        if self.cluster_token.is_empty() {
            return Err(crate::ServeError::Config(
                "--cluster-token must not be empty (the default is \"leasehold\")".into(),
            ));
        }
        use crate::raft::protocol::{PROTOCOL_OLDEST, PROTOCOL_VERSION};
        if !(PROTOCOL_OLDEST..=PROTOCOL_VERSION).contains(&self.protocol_version) {
            return Err(crate::ServeError::Config(format!(
                "--protocol-version {} is not one this build speaks ({PROTOCOL_OLDEST} to \
                 {PROTOCOL_VERSION})",
                self.protocol_version
            )));
        }
        if self.snapshot_every_entries == 0 {
            return Err(crate::ServeError::Config(
                "snapshot_every_entries must be at least 1".into(),
            ));
        }
        self.raft_timings
            .validate()
            .map_err(crate::ServeError::Config)?;
        self.check_transport()?;
        self.check_failover_margin()
    }

    /// How the port is protected.
    pub fn transport_security(&self) -> crate::tls::TransportSecurity {
        crate::tls::TransportSecurity::of(self.tls.as_ref(), self.listen)
    }

    /// Secure by default: plaintext only on loopback unless `--insecure`;
    /// a TLS node of a cluster needs a CA to know its peers by.
    fn check_transport(&self) -> Result<(), crate::ServeError> {
        let listen = self.listen;
        if self.tls.is_none() && !self.insecure && !listen.ip().is_loopback() {
            return Err(crate::ServeError::Config(format!(
                "refusing to serve plaintext on {listen}, which is not a loopback address: \
                 pass --tls-cert and --tls-key (and --tls-client-ca to require client \
                 certificates), or --insecure to serve without TLS anyway"
            )));
        }
        let clustered = self.join || self.peers.len() > 1;
        if let Some(tls) = &self.tls {
            if clustered && tls.peer_ca().is_none() {
                return Err(crate::ServeError::Config(
                    "a TLS node of a cluster must know its peers' certificates: pass --peer-ca \
                     (or --tls-client-ca, which it defaults to) with the CA of the nodes' \
                     certificates"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    /// The failover margin must cover the time a lease's holder may still
    /// be held up by the old leader after a new one took over. A new leader
    /// can be elected as soon as `election_timeout_min` after the old one
    /// last reached a quorum (voters that restarted meanwhile hold no
    /// follower lease and vote at once), while the old leader's clients
    /// wait on it until its leader lease runs out: only then are their
    /// renewals refused and sent on. So the margin is at least
    /// `leader_lease − election_timeout_min` (500 ms with the defaults).
    fn check_failover_margin(&self) -> Result<(), crate::ServeError> {
        let timings = &self.raft_timings;
        let held_up = timings
            .leader_lease
            .saturating_sub(timings.election_timeout_min);
        if self.failover_margin >= held_up {
            return Ok(());
        }
        Err(crate::ServeError::Config(format!(
            "failover margin {} ms does not cover leader lease {} ms − election timeout min {} ms = {} ms, \
             the time a holder may still wait on the old leader after a new one took over; \
             raise the failover margin to at least {} ms, or shorten the leader lease",
            self.failover_margin.as_millis(),
            timings.leader_lease.as_millis(),
            timings.election_timeout_min.as_millis(),
            held_up.as_millis(),
            held_up.as_millis(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ServeConfig {
        ServeConfig::single_node("data".into(), "127.0.0.1:7420".parse().unwrap())
    }

    fn refusal(config: &ServeConfig) -> String {
        match config.validate() {
            Err(crate::ServeError::Config(why)) => why,
            other => panic!("expected a refused configuration, got {other:?}"),
        }
    }

    #[test]
    fn the_defaults_are_valid_and_the_margin_covers_exactly() {
        let config = config();
        config.validate().unwrap();
        let timings = config.raft_timings;
        assert_eq!(
            config.failover_margin,
            timings.leader_lease - timings.election_timeout_min
        );
    }

    #[test]
    fn a_failover_margin_below_lease_minus_election_min_is_refused() {
        let mut config = config();
        config.failover_margin = Duration::from_millis(300);
        let why = refusal(&config);
        for named in [
            "failover margin 300 ms",
            "leader lease 1000 ms",
            "election timeout min 500 ms",
            "at least 500 ms",
        ] {
            assert!(why.contains(named), "{why:?} lacks {named:?}");
        }
        config.raft_timings.leader_lease = Duration::from_millis(800);
        config
            .validate()
            .expect("a shorter lease needs less margin");
    }

    #[test]
    fn plaintext_off_loopback_needs_insecure_and_a_tls_cluster_needs_a_peer_ca() {
        let mut config = config();
        config.listen = "0.0.0.0:7420".parse().unwrap();
        let why = refusal(&config);
        for named in ["0.0.0.0:7420", "--tls-cert", "--insecure"] {
            assert!(why.contains(named), "{why:?} lacks {named:?}");
        }
        config.insecure = true;
        config.validate().expect("--insecure allows it");
        let mut config = self::config();
        config.tls = Some(crate::tls::TlsFiles {
            cert: "c.pem".into(),
            key: "k.pem".into(),
            client_ca: None,
            peer_ca: None,
        });
        config.validate().expect("a single TLS node needs no CA");
        config.join = true;
        assert!(refusal(&config).contains("--peer-ca"));
    }

    #[test]
    fn inconsistent_raft_timings_are_refused() {
        let mut config = config();
        config.raft_timings.leader_lease = Duration::from_millis(1_500);
        config.failover_margin = Duration::from_secs(2);
        let why = refusal(&config);
        assert!(
            why.contains("exceeds election timeout max 1000 ms"),
            "{why}"
        );
        let mut config = self::config();
        config.raft_timings.election_timeout_min = Duration::from_millis(1_000);
        assert!(refusal(&config).contains("election timeout max (1000 ms)"));
        let mut config = self::config();
        config.raft_timings.heartbeat_interval = Duration::from_millis(300);
        assert!(refusal(&config).contains("fewer than 5 heartbeats"));
    }
}
