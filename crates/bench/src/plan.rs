//! [`Plan`]: the validated parameters of a run, built from [`BenchArgs`].
//! Every check of the flags (and every default that depends on other flags)
//! lives here, before any connection is opened, so that a bad command line
//! fails at once with a message naming the flag.

use std::time::Duration;

use anyhow::bail;
use leasehold_client::TlsOptions;

use super::args::{BenchArgs, Transport, Workload};
use super::stats::RunInfo;
use super::WARMUP;

/// Default cap on gRPC connections (clients share them round-robin).
const DEFAULT_CONNECTIONS_MAX: u32 = 4;

/// Validated parameters of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    pub(super) endpoints: Vec<String>,
    pub(super) workload: Workload,
    pub(super) clients: u32,
    pub(super) keys: u32,
    pub(super) seconds: u64,
    pub(super) connections: u32,
    pub(super) inflight: u32,
    pub(super) transport: Transport,
    /// TLS for `https://` endpoints (the CLI's `--cacert`, `--cert`,
    /// `--key`; see [`run`](crate::run)).
    pub(super) tls: TlsOptions,
    /// The bearer token sent with every call (`--auth-token`).
    pub(super) auth_token: Option<String>,
    /// The state the hold and storm workloads build (`None` for the others).
    pub(super) hold: Option<HoldShape>,
    /// The storm and sessions workloads' lease ttl (`--ttl`).
    pub(super) ttl: Duration,
    /// The server process whose memory the report gives (`--server-pid`).
    pub(super) server_pid: Option<u32>,
}

/// What the hold workload builds: `leases` leases holding `locks` locks each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct HoldShape {
    pub(super) leases: u32,
    pub(super) locks: u32,
}

impl HoldShape {
    /// The flags' shape, checked against the server's limits; `None` for
    /// the workloads that build no state (which ignore both flags).
    fn new(args: &BenchArgs) -> anyhow::Result<Option<HoldShape>> {
        if !matches!(args.workload, Workload::Hold | Workload::Storm) {
            return Ok(None);
        }
        let (Some(leases), Some(locks)) = (args.leases, args.locks) else {
            bail!(
                "the {} workload needs --leases M and --locks N (M leases holding N locks each)",
                args.workload.name()
            );
        };
        let leases_max = leasehold_core::limits::LEASES_MAX;
        if leases == 0 || leases as usize > leases_max {
            bail!("--leases must be 1..={leases_max}, the server's LEASES_MAX (got {leases})");
        }
        let locks_max = leasehold_core::limits::LOCKS_PER_LEASE_MAX;
        if locks == 0 || locks as usize > locks_max {
            bail!(
                "--locks must be 1..={locks_max}, the server's LOCKS_PER_LEASE_MAX (got {locks})"
            );
        }
        Ok(Some(HoldShape { leases, locks }))
    }

    /// Locks held once the state is built.
    pub(super) fn total(self) -> u64 {
        u64::from(self.leases) * u64::from(self.locks)
    }
}

impl Plan {
    pub(super) fn new(args: &BenchArgs) -> anyhow::Result<Plan> {
        let endpoints = endpoint_urls(&args.endpoints);
        if endpoints.is_empty() {
            bail!("--endpoints is empty: pass the server's gRPC URL, e.g. --endpoints http://127.0.0.1:7420");
        }
        if args.clients == 0 {
            bail!("--clients must be at least 1 (got 0)");
        }
        if args.seconds == 0 {
            bail!("--seconds must be at least 1 (got 0)");
        }
        if args.keys == Some(0) {
            bail!("--keys must be at least 1 (got 0)");
        }
        let hold = HoldShape::new(args)?;
        let ttl_s_range = 1..=leasehold_core::limits::TTL_MS_MAX / 1000;
        if !ttl_s_range.contains(&args.ttl) {
            bail!(
                "--ttl must be 1..={} seconds, the server's TTL_MS_MAX (got {})",
                ttl_s_range.end(),
                args.ttl
            );
        }
        let keys = match args.workload {
            Workload::Uncontended => args.clients,
            Workload::Keepalive | Workload::Hold | Workload::Storm | Workload::Sessions => 0,
            Workload::Contended => {
                let keys = args.keys.unwrap_or(1);
                if keys > args.clients {
                    bail!(
                        "--keys ({keys}) exceeds --clients ({}): every lock needs a client; \
                         use at most as many keys as clients",
                        args.clients
                    );
                }
                let per_key = u64::from(args.clients).div_ceil(u64::from(keys));
                let max = leasehold_core::limits::WAITERS_PER_LOCK_MAX as u64 + 1;
                if per_key > max {
                    bail!(
                        "{} clients on {keys} key(s) queue {per_key} per lock; the server allows \
                         {max} (one holder + WAITERS_PER_LOCK_MAX waiters): raise --keys",
                        args.clients
                    );
                }
                keys
            }
        };
        let connections = match args.connections {
            None => args.clients.min(DEFAULT_CONNECTIONS_MAX),
            Some(0) => bail!("--connections must be at least 1 (got 0)"),
            Some(n) if n > args.clients => bail!(
                "--connections ({n}) exceeds --clients ({}): the extra connections would be idle",
                args.clients
            ),
            Some(n) => n,
        };
        if args.inflight == 0 {
            bail!("--inflight must be at least 1 (got 0)");
        }
        let inflight = match args.workload {
            Workload::Keepalive => args.inflight,
            // One call at a time per client.
            _ => 1,
        };
        Ok(Plan {
            endpoints,
            workload: args.workload,
            clients: args.clients,
            keys,
            seconds: args.seconds,
            connections,
            inflight,
            transport: args.transport,
            tls: TlsOptions::default(),
            auth_token: None,
            hold,
            ttl: Duration::from_secs(args.ttl),
            server_pid: args.server_pid,
        })
    }
}

/// `--endpoints` as URLs: comma-separated, blanks dropped, `http://`
/// added where no scheme is given.
fn endpoint_urls(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| {
            if e.contains("://") {
                e.to_owned()
            } else {
                format!("http://{e}")
            }
        })
        .collect()
}

impl Plan {
    /// The run's parameters as reported, for a run against `endpoint`
    /// whose calls travel by `transport`.
    pub(super) fn run_info(&self, endpoint: String, transport: &'static str) -> RunInfo {
        RunInfo {
            workload: self.workload.name(),
            endpoint,
            clients: self.clients,
            keys: self.keys,
            seconds: self.seconds,
            warmup_s: WARMUP.as_secs(),
            connections: self.connections,
            inflight: self.inflight,
            transport,
            elapsed_s: self.seconds as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::args::parse;
    use super::*;

    fn plan(args: &[&str]) -> anyhow::Result<Plan> {
        Plan::new(&parse(args).expect("parses"))
    }
    #[test]
    fn defaults() {
        let p = plan(&["--workload", "contended", "--clients", "16"]).unwrap();
        assert_eq!(p.keys, 1);
        assert_eq!(p.seconds, 10);
        assert_eq!(p.connections, 4);
        assert_eq!(p.inflight, 1);
        let p = plan(&["--workload", "keepalive", "--clients", "2"]).unwrap();
        assert_eq!(p.connections, 2);
        assert_eq!(p.inflight, 4);
        let p = plan(&["--workload", "uncontended", "--clients", "8", "--keys", "3"]).unwrap();
        assert_eq!(p.keys, 8, "uncontended: one key per client");
    }

    #[test]
    fn endpoints_are_normalized() {
        let p = plan(&[
            "--workload",
            "uncontended",
            "--clients",
            "1",
            "--endpoints",
            "127.0.0.1:1, http://h:2,",
        ])
        .unwrap();
        assert_eq!(p.endpoints, vec!["http://127.0.0.1:1", "http://h:2"]);
    }

    #[test]
    fn all_flags() {
        let a = parse(&[
            "--endpoints",
            "http://x:1",
            "--workload",
            "keepalive",
            "--clients",
            "64",
            "--keys",
            "2",
            "--seconds",
            "3",
            "--connections",
            "8",
            "--inflight",
            "16",
            "--json",
        ])
        .unwrap();
        assert!(a.json);
        let p = Plan::new(&a).unwrap();
        assert_eq!(
            (p.clients, p.seconds, p.connections, p.inflight),
            (64, 3, 8, 16)
        );
    }

    #[test]
    fn rejects_zeros_with_clear_errors() {
        for (args, msg) in [
            (
                &["--workload", "uncontended", "--clients", "0"][..],
                "--clients must be at least 1",
            ),
            (
                &[
                    "--workload",
                    "uncontended",
                    "--clients",
                    "1",
                    "--seconds",
                    "0",
                ][..],
                "--seconds must be at least 1",
            ),
            (
                &["--workload", "contended", "--clients", "1", "--keys", "0"][..],
                "--keys must be at least 1",
            ),
            (
                &["--workload", "uncontended", "--clients", "1", "--keys", "0"][..],
                "--keys must be at least 1",
            ),
            (
                &[
                    "--workload",
                    "keepalive",
                    "--clients",
                    "1",
                    "--inflight",
                    "0",
                ][..],
                "--inflight must be at least 1",
            ),
            (
                &[
                    "--workload",
                    "keepalive",
                    "--clients",
                    "1",
                    "--connections",
                    "0",
                ][..],
                "--connections must be at least 1",
            ),
        ] {
            let err = plan(args).unwrap_err().to_string();
            assert!(err.contains(msg), "{args:?}: {err}");
        }
    }

    /// The hold workload's plan for `--leases` and `--locks` (either left
    /// out when `None`).
    fn hold(leases: Option<&str>, locks: Option<&str>) -> anyhow::Result<Plan> {
        let mut args = vec!["--workload", "hold", "--clients", "64"];
        args.extend(leases.map(|m| ["--leases", m]).into_iter().flatten());
        args.extend(locks.map(|n| ["--locks", n]).into_iter().flatten());
        plan(&args)
    }

    #[test]
    fn hold_needs_a_shape_within_the_servers_limits() {
        let p = hold(Some("1000"), Some("1000")).unwrap();
        let shape = HoldShape {
            leases: 1000,
            locks: 1000,
        };
        assert_eq!(p.hold, Some(shape));
        assert_eq!(shape.total(), 1_000_000);
        for (leases, locks, message) in [
            (Some("2"), None, "needs --leases M and --locks N"),
            (Some("1"), Some("1025"), "LOCKS_PER_LEASE_MAX (got 1025)"),
            (Some("0"), Some("1"), "--leases must be 1..="),
        ] {
            let err = hold(leases, locks).unwrap_err().to_string();
            assert!(err.contains(message), "{leases:?} {locks:?}: {err}");
        }
        let p = plan(&[
            "--workload",
            "uncontended",
            "--clients",
            "1",
            "--locks",
            "9",
        ])
        .unwrap();
        assert_eq!(p.hold, None, "only the hold workload builds state");
    }

    #[test]
    fn storm_builds_the_hold_shape_and_takes_a_ttl_within_the_limits() {
        let storm = |extra: &[&str]| {
            let mut args = vec!["--workload", "storm", "--clients", "8"];
            args.extend_from_slice(extra);
            plan(&args)
        };
        let p = storm(&["--leases", "10", "--locks", "5", "--ttl", "3"]).unwrap();
        let shape = HoldShape {
            leases: 10,
            locks: 5,
        };
        assert_eq!((p.hold, p.ttl), (Some(shape), Duration::from_secs(3)));
        let err = storm(&["--leases", "1"]).unwrap_err().to_string();
        assert!(
            err.contains("the storm workload needs --leases M and --locks N"),
            "{err}"
        );
        for ttl in ["0", "86401"] {
            let err = storm(&["--leases", "1", "--locks", "1", "--ttl", ttl]);
            let err = err.unwrap_err().to_string();
            assert!(err.contains("--ttl must be 1..=86400 seconds"), "{err}");
        }
    }

    #[test]
    fn rejects_inconsistent_counts() {
        let err = plan(&["--workload", "contended", "--clients", "2", "--keys", "3"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--keys (3) exceeds --clients (2)"), "{err}");
        let err = plan(&[
            "--workload",
            "uncontended",
            "--clients",
            "2",
            "--connections",
            "3",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("--connections (3) exceeds --clients (2)"),
            "{err}"
        );
        let err = plan(&["--workload", "contended", "--clients", "5000"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("raise --keys"), "{err}");
        assert!(plan(&[
            "--workload",
            "contended",
            "--clients",
            "5000",
            "--keys",
            "5"
        ])
        .is_ok());
    }
}
