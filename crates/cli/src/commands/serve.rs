//! `leasehold serve`: runs one server node in this process until SIGINT or
//! SIGTERM. Logs go to stderr through `tracing` (`RUST_LOG`, default
//! `info,openraft=warn`), as text or one JSON object per line
//! (`--log-format json`); stdout gets exactly one line, once the port accepts connections.

use crate::error::CliError;
use crate::exit::Exit;
use leasehold_server::{ServeConfig, ServeError};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// `leasehold serve`
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Directory of the durable log and snapshots.
    #[arg(long, env = "LEASEHOLD_DATA_DIR", default_value = "./leasehold-data")]
    pub data_dir: PathBuf,
    /// Address of the gRPC + HTTP port.
    #[arg(long, env = "LEASEHOLD_LISTEN", default_value = "127.0.0.1:7420")]
    pub listen: SocketAddr,
    /// This node's Raft id (1 or higher).
    #[arg(long, env = "LEASEHOLD_NODE_ID", default_value_t = 1)]
    pub node_id: u64,
    /// Members of a new cluster, `ID=HOST:PORT,...`, the same on every node
    /// (this node included). Used only on an empty data dir; without it a
    /// node forms a one-member cluster.
    #[arg(long, env = "LEASEHOLD_PEERS", value_parser = parse_peers, value_name = "ID=ADDR,...")]
    pub peers: Option<BTreeMap<u64, String>>,
    /// Start without forming a cluster and wait to be added to one
    /// (`leasehold member add ID ADDR` on the cluster).
    #[arg(long, env = "LEASEHOLD_JOIN", conflicts_with = "peers")]
    pub join: bool,
    /// Mixed into the cluster id that the members of a new `--peers`
    /// cluster derive from their list (as etcd's `--initial-cluster-token`):
    /// give each cluster you form at the same addresses its own token. Used
    /// only on an empty data dir.
    #[arg(
        long,
        env = "LEASEHOLD_CLUSTER_TOKEN",
        default_value = leasehold_server::identity::DEFAULT_CLUSTER_TOKEN,
        value_name = "TOKEN"
    )]
    pub cluster_token: String,
    /// At formation, make PRINCIPAL an admin (if nobody is yet) and print a
    /// one-time token for it on stderr.
    #[arg(long, env = "LEASEHOLD_BOOTSTRAP_ADMIN", value_name = "PRINCIPAL")]
    pub bootstrap_admin: Option<String>,
    /// With auth enabled, `/metrics` needs `observe` too (default: open,
    /// like `/healthz` and `/readyz`).
    #[arg(long, env = "LEASEHOLD_METRICS_AUTH")]
    pub metrics_auth: bool,
    /// Threads that serve requests (the async runtime's workers), 1 to
    /// 1024. Default: one per core but one, at least one (the commit path,
    /// the log's fsyncs and snapshot encoding run on threads of their own).
    #[arg(
        long,
        env = "LEASEHOLD_WORKER_THREADS",
        value_name = "N",
        value_parser = clap::value_parser!(u16).range(1..=WORKER_THREADS_MAX)
    )]
    pub worker_threads: Option<u16>,
    /// Log entries between snapshots (default 20000). Hidden: tests lower it
    /// (also through the environment, for nodes a shared harness starts) so
    /// that a new member must catch up by snapshot.
    #[arg(long, hide = true, env = "LEASEHOLD_SNAPSHOT_EVERY", value_name = "N")]
    pub snapshot_every: Option<u64>,
    /// Speak this older Raft protocol, as the previous release does
    /// (default: this build's). Hidden: for rolling-upgrade tests, which
    /// run "the previous release" as this build with an older protocol.
    #[arg(
        long,
        hide = true,
        env = "LEASEHOLD_PROTOCOL_VERSION",
        value_name = "N"
    )]
    pub protocol_version: Option<u32>,
    /// Report wall times shifted by this many ms. Hidden: for drills that
    /// need a server whose wall clock disagrees with its clients' (wall
    /// time is display-only; no expiry uses it).
    #[arg(
        long,
        hide = true,
        env = "LEASEHOLD_WALL_CLOCK_OFFSET_MS",
        value_name = "MS",
        allow_negative_numbers = true
    )]
    pub wall_clock_offset_ms: Option<i64>,
    /// How log lines are written to stderr: `text` for people, `json` (one
    /// object per line, fields such as `lock`, `lease`, `owner`, `token` as
    /// keys) for log pipelines.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, env = "LEASEHOLD_LOG_FORMAT")]
    pub log_format: LogFormat,
    /// The node's TLS certificate chain (PEM, leaf first): serve TLS.
    /// Reloaded, with the key and CAs, on SIGHUP.
    #[arg(
        long,
        env = "LEASEHOLD_TLS_CERT",
        requires = "tls_key",
        value_name = "FILE"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(
        long,
        env = "LEASEHOLD_TLS_KEY",
        requires = "tls_cert",
        value_name = "FILE"
    )]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by this CA (PEM): mTLS.
    #[arg(
        long,
        env = "LEASEHOLD_TLS_CLIENT_CA",
        requires = "tls_cert",
        value_name = "FILE"
    )]
    pub tls_client_ca: Option<PathBuf>,
    /// The CA of the other nodes' certificates (PEM): only they may send
    /// Raft messages. Default: --tls-client-ca.
    #[arg(
        long,
        env = "LEASEHOLD_PEER_CA",
        requires = "tls_cert",
        value_name = "FILE"
    )]
    pub peer_ca: Option<PathBuf>,
    /// Serve plaintext on a non-loopback address (refused without it).
    #[arg(long, env = "LEASEHOLD_INSECURE", conflicts_with = "tls_cert")]
    pub insecure: bool,
    /// Lost quorum for good: make this node a one-member cluster from its
    /// own data (the old data dir is kept beside it, renamed), with every
    /// token above a floor (--token-floor or --revision-gap). Then add the
    /// other members back with `leasehold member add`. Once only.
    #[arg(long, conflicts_with_all = ["peers", "join"])]
    pub force_new_cluster: bool,
    /// What one remote address may hold, and when an idle connection is
    /// closed.
    #[command(flatten)]
    pub connections: super::serve_limits::ConnectionFlags,
    /// With --force-new-cluster only: the token floor, and whether this
    /// node's leases are kept.
    #[command(flatten)]
    pub floor: super::snapshot_restore::FloorFlags,
    /// Read settings from this TOML file: `flag-name = value` for any flag
    /// above (`data-dir = "/var/lib/leasehold"`, `join = true`). A flag on
    /// the command line wins, then its LEASEHOLD_* variable, then the file.
    #[arg(long, env = "LEASEHOLD_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print the effective settings (as a config file, each with where it
    /// came from) and exit without serving.
    #[arg(long)]
    pub print_config: bool,
}

/// The format of `leasehold serve`'s log lines.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The most `--worker-threads` a node takes.
const WORKER_THREADS_MAX: i64 = 1024;

/// The runtime workers `args` asks for; by default one per core but one,
/// since the commit path has a thread of its own
/// (`leasehold_server::raft::commit_thread`). On the 2-core machine of
/// docs/DESIGN.md §6d one worker beside the commit thread served 5-10 %
/// more uncontended cycles than two, and as many keep-alives.
pub fn worker_threads(args: &ServeArgs) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    args.worker_threads
        .map_or(cores.saturating_sub(1).max(1), usize::from)
}

/// Runs the API's woken tasks in the order they were woken, not the
/// last-woken first. **Why**: a batch's replies wake one response task per
/// request; each wakes its connection's writer, and with tokio's LIFO slot
/// that writer ran right after each reply, one `writev` per reply (13.8 per
/// batch under `bench --workload uncontended --clients 64`). Without it the
/// replies queue first and each connection writes them together (2.2 per
/// batch). With the commit path on its own thread and one API worker, the
/// slot off gave 37,000-39,000 uncontended cycles a second on one node
/// against 28,600-28,800 with it, and 12,500 against 11,200-12,000 on
/// three nodes (docs/DESIGN.md §6d). It is a tokio unstable API: it needs
/// the `tokio_unstable` cfg that `.cargo/config.toml` sets; a build without
/// it (`RUSTFLAGS` replaces that setting) keeps the slot and works the same,
/// only slower.
pub fn no_lifo_slot(runtime: &mut tokio::runtime::Builder) {
    #[cfg(tokio_unstable)]
    runtime.disable_lifo_slot();
    #[cfg(not(tokio_unstable))]
    let _ = runtime;
}

/// Parses `--peers 1=127.0.0.1:7421,2=127.0.0.1:7422`.
pub(crate) fn parse_peers(raw: &str) -> Result<BTreeMap<u64, String>, String> {
    let mut peers = BTreeMap::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (id, addr) = entry
            .split_once('=')
            .ok_or_else(|| format!("{entry:?} is not ID=HOST:PORT"))?;
        let id: u64 = id
            .trim()
            .parse()
            .map_err(|_| format!("{entry:?}: the node id must be a number"))?;
        let addr = addr.trim();
        if id == 0 || addr.is_empty() || !addr.contains(':') {
            return Err(format!(
                "{entry:?}: node ids start at 1 and the address is HOST:PORT"
            ));
        }
        if peers.insert(id, addr.to_owned()).is_some() {
            return Err(format!("node {id} is listed twice"));
        }
    }
    if peers.is_empty() {
        return Err("no peers given".into());
    }
    Ok(peers)
}

/// Runs `serve`.
pub async fn run(args: ServeArgs) -> Result<(), CliError> {
    if args.floor.given() && !args.force_new_cluster {
        return Err(CliError::new(
            Exit::Usage,
            "--token-floor, --revision-gap and --keep-leases go with --force-new-cluster",
        ));
    }
    init_logging(args.log_format);
    if args.force_new_cluster {
        force_new_cluster(&args).await?;
    }
    tracing::info!(
        worker_threads = tokio::runtime::Handle::current().metrics().num_workers(),
        "runtime started"
    );
    let mut config = config_of(&args);
    // Announced only once the node can answer (what /readyz says): a node
    // still waiting for a leader, or to be added to a cluster, says nothing
    // on stdout yet (its log says why).
    let (told, ready) = tokio::sync::watch::channel(false);
    config.readiness = Some(std::sync::Arc::new(told));
    let (signalled_tx, signalled) = tokio::sync::oneshot::channel();
    let shutdown = async move {
        shutdown_signal().await;
        let _ = signalled_tx.send(());
    };
    let mut server = tokio::spawn(leasehold_server::serve(config, shutdown));
    // `wait_for`'s answer borrows the value (a read lock): drop it here,
    // or the server's next readiness change would wait on it for ever.
    let announce = async move {
        let mut ready = ready;
        let announced = ready.wait_for(|ready| *ready).await.is_ok();
        announced
    };
    let outcome = tokio::select! {
        biased;
        outcome = &mut server => outcome,
        true = announce => {
            println!(
                "leasehold node {} listening on {} (data in {})",
                args.node_id,
                args.listen,
                args.data_dir.display()
            );
            until_stopped(server, signalled).await
        }
    };
    // The per-lock lines still queued go out before the process ends.
    leasehold_server::sinks::lock_lines::flush(Duration::from_secs(1));
    match outcome {
        Ok(Ok(())) => {
            tracing::info!("stopped");
            Ok(())
        }
        Ok(Err(err)) => Err(serve_error(err)),
        Err(join) if join.is_panic() => Err(CliError::new(
            Exit::Other,
            format!("the server crashed: {}", panic_text(join.into_panic())),
        )),
        Err(join) => Err(CliError::new(
            Exit::Other,
            format!("the server stopped: {join}"),
        )),
    }
}

/// How long a graceful shutdown may take: open keep-alive streams and
/// blocking acquires keep connections open, and the server would wait for
/// them indefinitely. Stopping harder is safe: every acknowledged change is
/// already durable (fsync before the reply).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

type ServeOutcome = Result<Result<(), ServeError>, tokio::task::JoinError>;

/// Waits for the server to stop; once a shutdown signal arrived, waits at
/// most [`SHUTDOWN_GRACE`] (or until a second signal) before giving up on
/// the connections still open.
async fn until_stopped(
    mut server: tokio::task::JoinHandle<Result<(), ServeError>>,
    signalled: tokio::sync::oneshot::Receiver<()>,
) -> ServeOutcome {
    tokio::select! {
        biased;
        outcome = &mut server => return outcome,
        _ = signalled => {}
    }
    tokio::select! {
        biased;
        outcome = &mut server => outcome,
        () = shutdown_signal() => {
            tracing::warn!("second signal: stopping without waiting for open connections");
            server.abort();
            Ok(Ok(()))
        }
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            tracing::warn!(
                grace = ?SHUTDOWN_GRACE,
                "connections still open (keep-alive streams or waiting acquires); stopping anyway"
            );
            server.abort();
            Ok(Ok(()))
        }
    }
}

/// Starting as configured is refused (bad settings, or a start that would
/// be unsafe: see [`ServeError::Formation`]) with the usage code; anything
/// that failed while trying is an other error.
fn serve_error(err: ServeError) -> CliError {
    let exit = match err {
        ServeError::Config(_) | ServeError::Formation(_) => Exit::Usage,
        _ => Exit::Other,
    };
    CliError::new(exit, err.to_string())
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_owned())
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        // openraft narrates every election and membership step at info.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=warn"));
    // Colours only for a person at a terminal (and never with NO_COLOR):
    // escape codes in a log file or a pipe are noise.
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(leasehold_server::log_lines::writer);
    match format {
        LogFormat::Text => builder.init(),
        // Event fields at the top level, so `jq 'select(.token == "7")'`
        // works without digging into a nested `fields` object.
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// Resolves on the first SIGINT or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(term) => term,
        Err(err) => {
            tracing::warn!(%err, "cannot watch SIGTERM; stop with Ctrl-C");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT: shutting down"),
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
    }
}

/// `--force-new-cluster`: rewrites the data dir as a one-member cluster's
/// (see `leasehold_server::restore::force_new_cluster`), loudly.
async fn force_new_cluster(args: &ServeArgs) -> Result<(), CliError> {
    let now = leasehold_server::clock::wall_unix_ms();
    let members = BTreeMap::from([(args.node_id, args.listen.to_string())]);
    let plan = args.floor.plan(0, now, members)?;
    let (done, aside) = leasehold_server::restore::force_new_cluster(&args.data_dir, &plan)
        .await
        .map_err(|why| CliError::new(Exit::Usage, format!("--force-new-cluster: {why}")))?;
    tracing::warn!(
        node_id = args.node_id,
        revision = done.backup_revision,
        token_floor = done.floor,
        leases_ended = done.leases_ended,
        old_data = %aside.display(),
        "FORCED A NEW CLUSTER from this node's data: it is now the only member; every \
         other member must be wiped and added back (`leasehold member add`), never restarted \
         with its old data; every token from now on is above the floor"
    );
    eprintln!(
        "WARNING: --force-new-cluster made node {} a one-member cluster from its own data \
         (revision {}, {} leases ended); tokens start above {}; the old data is kept in {}. \
         Wipe the other members and add them back with `leasehold member add`; never restart \
         them with their old data.",
        args.node_id,
        done.backup_revision,
        done.leases_ended,
        done.floor,
        aside.display()
    );
    Ok(())
}

/// The server's configuration from the flags (readiness and shutdown are
/// the caller's); sets the wall clock's display offset, if one is given.
fn config_of(args: &ServeArgs) -> ServeConfig {
    let mut config = ServeConfig::single_node(args.data_dir.clone(), args.listen);
    config.node_id = args.node_id;
    config.peers = args.peers.clone().unwrap_or_default();
    config.join = args.join;
    config.cluster_token = args.cluster_token.clone();
    config.bootstrap_admin = args.bootstrap_admin.clone();
    config.metrics_auth = args.metrics_auth;
    config.insecure = args.insecure;
    config.tls = args
        .tls_cert
        .clone()
        .zip(args.tls_key.clone())
        .map(|(cert, key)| leasehold_server::tls::TlsFiles {
            cert,
            key,
            client_ca: args.tls_client_ca.clone(),
            peer_ca: args.peer_ca.clone(),
        });
    config.connection_limits = args.connections.limits();
    if let Some(protocol) = args.protocol_version {
        config.protocol_version = protocol;
    }
    if let Some(entries) = args.snapshot_every {
        config.snapshot_every_entries = entries;
    }
    if let Some(offset_ms) = args.wall_clock_offset_ms {
        leasehold_server::clock::set_wall_clock_offset_ms(offset_ms);
    }
    config
}
