//! `leasehold bench --target redis`: the uncontended workload against a
//! Redis server, measured by the same harness, so that Leasehold can be set
//! beside the lock most teams use today on one machine, in one run.
//!
//! A cycle is the lock as the Redis documentation and Redlock's single
//! instance take it: `SET key value NX PX 60000` with a value unique to the
//! acquire, then a compare-and-delete Lua script (`EVALSHA`: delete only if
//! the value is still ours), one connection per client. The report names
//! the server's version and its `appendonly` / `appendfsync` settings,
//! because they decide the figure: only `appendfsync always` makes an
//! acknowledged `SET` as durable as a Leasehold grant (fsynced before the
//! reply).
//!
//! The RESP client is the Redis fencing adapter's
//! (`leasehold_fence::redis::resp`): one implementation of the protocol.

use anyhow::{bail, Context as _};
use futures::{StreamExt as _, TryStreamExt as _};
use leasehold_fence::redis::resp::{Connection, Reply};
use leasehold_fence::redis::FenceError;
use tokio::time::Instant;

use super::args::{BenchArgs, Workload};
use super::compared::{self, Compared};
use super::plan::Plan;
use super::setup::run_id;
use super::stats::{Recorder, Report};
use super::{collect, until, BadFlags, Window, ERROR_BACKOFF};

/// Deletes the key only if it still holds the caller's value.
const RELEASE_SCRIPT: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
/// The lock's expiry, as `PX`: far beyond any cycle, like the Leasehold run's 60 s lease.
const LOCK_PX_MS: &str = "60000";
/// Connections opened at once during setup.
const CONNECT_CONCURRENCY: usize = 64;

/// Runs the benchmark against Redis and prints its report.
pub(super) async fn run(args: &BenchArgs, print: super::Print) -> anyhow::Result<()> {
    let bad_flags = |e: anyhow::Error| BadFlags(format!("{e:#}"));
    if args.workload != Workload::Uncontended {
        return Err(BadFlags(format!(
            "--target redis runs the uncontended workload; {} is measured against Leasehold only",
            args.workload.name()
        ))
        .into());
    }
    let addr = address(&args.endpoints).map_err(bad_flags)?;
    let plan = Plan::new(args).map_err(bad_flags)?;
    let mut admin = Connection::connect(&addr).await.with_context(|| {
        format!("cannot connect to Redis at {addr}: is redis-server running there? (pass --endpoints HOST:PORT)")
    })?;
    let server = Server::describe(&mut admin).await?;
    let sha = load_release_script(&mut admin).await?;
    let prefix = format!("leasehold-bench/{}/u", run_id());
    let connections: Vec<Connection> = futures::stream::iter(0..plan.clients)
        .map(|_| Connection::connect(&addr))
        .buffered(CONNECT_CONCURRENCY)
        .try_collect()
        .await
        .with_context(|| format!("connecting {} clients to Redis at {addr}", plan.clients))?;

    let window = Window::starting(Instant::now(), plan.seconds);
    let tasks = connections
        .into_iter()
        .enumerate()
        .map(|(i, conn)| {
            let client = Client {
                conn,
                addr: addr.clone(),
                key: format!("{prefix}/{i}"),
                sha: sha.clone(),
            };
            tokio::spawn(client.run(window))
        })
        .collect();
    let total = collect(tasks, false).await?;

    let info = Plan {
        connections: plan.clients,
        ..plan
    }
    .run_info(format!("redis://{addr}"), "resp");
    let target = Compared {
        target: "redis",
        version: &server.version,
        setup: format!(
            "appendonly {}, appendfsync {}",
            server.appendonly, server.appendfsync
        ),
        cycle: "a cycle is SET NX PX + compare-and-delete EVALSHA, one connection per client",
    };
    compared::print(&Report::new(info, &total), &target, args.json, print);
    Ok(())
}

/// `--endpoints` as one Redis `host:port` (`redis://` allowed).
fn address(endpoints: &str) -> anyhow::Result<String> {
    let given: Vec<&str> = endpoints
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let [one] = given[..] else {
        bail!(
            "--target redis loads one Redis server: pass --endpoints HOST:PORT (got {endpoints:?})"
        );
    };
    let addr = one.strip_prefix("redis://").unwrap_or(one);
    if addr.contains("://") || !addr.contains(':') {
        bail!("--target redis needs --endpoints HOST:PORT of a Redis server, e.g. 127.0.0.1:6379 (got {one:?})");
    }
    Ok(addr.trim_end_matches('/').to_owned())
}

/// What decides a Redis figure: its version and its durability settings.
struct Server {
    version: String,
    appendonly: String,
    appendfsync: String,
}

impl Server {
    async fn describe(conn: &mut Connection) -> anyhow::Result<Server> {
        let info = command(conn, &[b"INFO", b"server"]).await?;
        let info = info.as_text().unwrap_or_default();
        let version = info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .unwrap_or("(version unknown)")
            .trim()
            .to_owned();
        Ok(Server {
            version,
            appendonly: config(conn, "appendonly").await?,
            appendfsync: config(conn, "appendfsync").await?,
        })
    }
}

/// One `CONFIG GET` value.
async fn config(conn: &mut Connection, name: &str) -> anyhow::Result<String> {
    match command(conn, &[b"CONFIG", b"GET", name.as_bytes()]).await? {
        Reply::Array(Some(pair)) if pair.len() == 2 => {
            Ok(pair[1].as_text().unwrap_or("?").to_owned())
        }
        other => bail!("CONFIG GET {name} answered {other:?}"),
    }
}

async fn load_release_script(conn: &mut Connection) -> anyhow::Result<String> {
    let reply = command(conn, &[b"SCRIPT", b"LOAD", RELEASE_SCRIPT.as_bytes()]).await?;
    match reply.as_text() {
        Some(sha) => Ok(sha.to_owned()),
        None => bail!("SCRIPT LOAD answered {reply:?}"),
    }
}

/// A command whose error reply is an error here.
async fn command(conn: &mut Connection, args: &[&[u8]]) -> anyhow::Result<Reply> {
    let what = String::from_utf8_lossy(args[0]).into_owned();
    match conn
        .command(args)
        .await
        .with_context(|| format!("Redis {what}"))?
    {
        Reply::Error(e) => bail!("Redis refused {what}: {e}"),
        reply => Ok(reply),
    }
}

/// One benchmark client: its own connection and key.
struct Client {
    conn: Connection,
    addr: String,
    key: String,
    sha: String,
}

/// Why a cycle failed, and whether the connection must be replaced.
struct Failed {
    reason: String,
    broken: bool,
}

impl Client {
    async fn run(mut self, win: Window) -> Recorder {
        let mut rec = Recorder::new(false);
        until(win.end, async {
            for n in 0u64.. {
                let t0 = Instant::now();
                match self.cycle(n).await {
                    Ok(()) => {
                        let t1 = Instant::now();
                        if win.measures(t0, t1) {
                            rec.latency(t1 - t0);
                        }
                    }
                    Err(failed) => {
                        win.failure(&mut rec, Instant::now(), failed.reason, failed.broken)
                            .await;
                        if failed.broken {
                            self.reconnect().await;
                        }
                    }
                }
            }
        })
        .await;
        rec
    }

    /// Acquire + release, with a value no other acquire uses.
    async fn cycle(&mut self, n: u64) -> Result<(), Failed> {
        let value = format!("{}#{n}", self.key);
        let set: [&[u8]; 6] = [
            b"SET",
            self.key.as_bytes(),
            value.as_bytes(),
            b"NX",
            b"PX",
            LOCK_PX_MS.as_bytes(),
        ];
        match self.conn.command(&set).await.map_err(io)? {
            Reply::Status(s) if s == "OK" => {}
            Reply::Bulk(None) => return Err(refused("Busy")),
            other => return Err(refused(&format!("SET: {other:?}"))),
        }
        let release: [&[u8]; 5] = [
            b"EVALSHA",
            self.sha.as_bytes(),
            b"1",
            self.key.as_bytes(),
            value.as_bytes(),
        ];
        match self.conn.command(&release).await.map_err(io)? {
            Reply::Integer(1) => Ok(()),
            Reply::Integer(_) => Err(refused("NotHolder")),
            other => Err(refused(&format!("EVALSHA: {other:?}"))),
        }
    }

    async fn reconnect(&mut self) {
        if let Ok(conn) = Connection::connect(&self.addr).await {
            self.conn = conn;
        } else {
            tokio::time::sleep(ERROR_BACKOFF).await;
        }
    }
}

fn io(error: FenceError) -> Failed {
    Failed {
        reason: format!("redis: {error}"),
        broken: true,
    }
}

fn refused(reason: &str) -> Failed {
    Failed {
        reason: reason.to_owned(),
        broken: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_host_port_is_the_address() {
        assert_eq!(address("127.0.0.1:6379").unwrap(), "127.0.0.1:6379");
        assert_eq!(address(" redis://h:1/ ").unwrap(), "h:1");
        for (given, says) in [
            ("http://127.0.0.1:7420", "HOST:PORT of a Redis server"),
            ("localhost", "HOST:PORT of a Redis server"),
            ("a:1,b:2", "loads one Redis server"),
            ("", "loads one Redis server"),
        ] {
            let err = address(given).unwrap_err().to_string();
            assert!(err.contains(says), "{given}: {err}");
        }
    }
}
