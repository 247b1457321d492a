//! Assembling a node: storage, Raft, proposer, timers, and the gRPC + HTTP
//! port (the Leasehold services, gRPC health and reflection, the HTTP
//! pages). The order matters: the apply hub exists before storage opens
//! (replay at start-up already feeds it), and the timers start after Raft.

use crate::api::{AuthApi, ClusterApi, FencedApi, LeaseApi, LockApi, Node, WatchApi};
use crate::clock::{Clock, TokioClock};
use crate::connections::{self, Admission, ConnectionLimit};
use crate::hub::ApplyHub;
use crate::identity::Identity;
use crate::proposer::Proposer;
use crate::raft::quorum::QuorumMonitor;
use crate::sinks::Sinks;
use crate::timers;
use crate::tls::{PeerDialer, Tls};
use crate::{health, http, raft, reflection, storage, tls, ServeConfig, ServeError};
use futures::Stream;
use leasehold_core::limits;
use leasehold_proto::v1::auth_server::AuthServer;
use leasehold_proto::v1::cluster_server::ClusterServer;
use leasehold_proto::v1::fenced_store_server::FencedStoreServer;
use leasehold_proto::v1::lease_server::LeaseServer;
use leasehold_proto::v1::lock_server::LockServer;
use leasehold_proto::v1::raft_transport_server::RaftTransportServer;
use leasehold_proto::v1::watch_server::WatchServer;
use raft::protocol::Protocols;
use raft::transport::{RaftTransportApi, RAFT_MESSAGE_BYTES_MAX};
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_stream::StreamExt;
use tonic::service::Routes;
use tonic::transport::server::Connected;

/// The hard cap on a decoded gRPC message; requests between
/// `REQUEST_BYTES_MAX` and this get a precise InvalidArgument from the handler.
const DECODE_BYTES_MAX: usize = 4 * 1024 * 1024;
const _: () = assert!(limits::REQUEST_BYTES_MAX < DECODE_BYTES_MAX);

/// How long a start waits for a data dir that a stopping server still holds.
const STORAGE_RELEASE_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a stopping server lets open calls and streams finish.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs one node on an already bound listener until `shutdown` resolves.
pub async fn serve_on(
    config: ServeConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    config.validate()?;
    let _ = crate::metrics::handle();
    let tls = config.tls.clone().map(Tls::load).transpose()?.map(Arc::new);
    warn_about_transport(&config);
    let dialer = PeerDialer::new(tls.clone());
    let clock: Arc<dyn Clock> = Arc::new(TokioClock);
    let sinks = Sinks::new(clock.clone(), config.failover_margin);
    let hub = Arc::new(ApplyHub::new(sinks.clone()));
    let (log_store, state_machine) = open_storage(&config, hub.clone()).await?;
    storage::spawn_power_cut_trigger()
        .map_err(|error| ServeError::Storage(format!("power-cut test hook: {error}")))?;
    if let Some(index) = log_store.committed_index() {
        hub.replaying_until(index);
    }
    let state = state_machine.shared();
    let disk = log_store.disk_health();
    let restart_floor = log_store.last_log_id();
    let identity = Identity::load(config.node_id, log_store.identity_store(), clock.clone())
        .map_err(|error| ServeError::Storage(format!("cannot read the cluster id: {error}")))?;
    let identity = Arc::new(identity);
    let contacts = Arc::new(raft::contacts::Contacts::new(clock.clone()));
    let protocols = Arc::new(Protocols::new(config.node_id, config.protocol_version));
    let start = raft_start(&config, &identity, &contacts, &protocols, &dialer);
    let commit = raft::commit_thread::CommitThread::start()
        .map_err(|error| ServeError::Raft(format!("cannot start the commit thread: {error}")))?;
    let raft = raft::node::start(start, log_store, state_machine, &commit).await?;
    let quorum = QuorumMonitor::spawn(raft.metrics(), contacts, &config.raft_timings);
    raft::full_disk::spawn(raft.clone(), disk.clone());
    let proposer = Proposer::spawn(
        raft.clone(),
        quorum.clone(),
        disk.clone(),
        sinks.timers.clone(),
        protocols.clone(),
        &commit,
    );
    timers::spawn(
        sinks.timers.clone(),
        proposer.clone(),
        raft.clone(),
        config.node_id,
        timers::weigher(state.clone()),
        timers::renewal_counts(state.clone()),
    );
    let refusals = Arc::new(crate::auth::Refusals::new(proposer.clone()));
    let node = Arc::new(Node {
        node_id: config.node_id,
        raft: raft.clone(),
        refusals,
        wait_cancels: crate::api::wait_cancels::WaitCancels::spawn(proposer.clone()),
        proposer,
        quorum,
        disk,
        state,
        sinks,
        identity,
        protocols,
        dialer,
        transport_security: config.transport_security(),
        restart_floor,
    });
    bootstrap_admin(&config, &node)?;
    let gate = tls::peers::PeerGate::new(tls.clone(), config.peers.values().cloned().collect());
    let announce = Announce {
        metrics_auth: config.metrics_auth,
        readiness: config.readiness.clone(),
    };
    let limit = ConnectionLimit::server_default(config.connection_limits);
    let result = serve_port(node, gate, tls, (listener, limit), announce, shutdown).await;
    if let Err(error) = raft.shutdown().await {
        tracing::warn!(%error, "raft did not shut down cleanly");
    }
    drop(commit);
    result
}

/// `serve --bootstrap-admin`: makes the principal an admin once this node
/// leads (see [`crate::api::auth::bootstrap_when_leading`]).
fn bootstrap_admin(config: &ServeConfig, node: &Arc<Node>) -> Result<(), ServeError> {
    if let Some(principal) = &config.bootstrap_admin {
        let principal = leasehold_core::auth::Principal::parse(principal)
            .map_err(|e| ServeError::Config(format!("--bootstrap-admin: {e}")))?;
        tokio::spawn(crate::api::auth::bootstrap_when_leading(
            node.clone(),
            principal,
        ));
    }
    Ok(())
}

/// How this node's Raft starts: its network (dialing from the listen IP,
/// so peers can tell who calls), formation, timings and identity.
fn raft_start(
    config: &ServeConfig,
    identity: &Arc<Identity>,
    contacts: &Arc<raft::contacts::Contacts>,
    protocols: &Arc<Protocols>,
    dialer: &PeerDialer,
) -> raft::node::Start {
    let listen_ip = config.listen.ip();
    let network = raft::network::Network {
        local_ip: (!listen_ip.is_unspecified()).then_some(listen_ip),
        identity: identity.clone(),
        contacts: contacts.clone(),
        protocols: protocols.clone(),
        dialer: dialer.clone(),
    };
    raft::node::Start {
        node_id: config.node_id,
        network,
        formation: config.formation(),
        cluster_token: config.cluster_token.clone(),
        snapshot_every_entries: config.snapshot_every_entries,
        timings: config.raft_timings,
        identity: identity.clone(),
    }
}

/// Says at start what a reader of the log must know about this node's
/// transport: plaintext off loopback (`--insecure`), or peers checked
/// against the client CA.
fn warn_about_transport(config: &ServeConfig) {
    if config.tls.is_none() && !config.listen.ip().is_loopback() {
        tracing::warn!(
            addr = %config.listen,
            "--insecure: serving plaintext on a non-loopback address; anyone who reaches it \
             can read and change every lock"
        );
    }
    if let Some(files) = config.tls.as_ref().filter(|f| f.peer_ca.is_none()) {
        if files.client_ca.is_some() && (config.join || config.peers.len() > 1) {
            tracing::warn!(
                "peers are checked against the client CA (no --peer-ca): a client certificate \
                 that names a member's host would pass as a peer; give the nodes a CA of their own"
            );
        }
    }
}

/// Opens the data dir. A server that just stopped (in this process, or a
/// process that just exited) may hold the file lock a moment longer, so a
/// locked data dir is retried for up to `STORAGE_RELEASE_MAX` before the
/// error is reported.
async fn open_storage(
    config: &ServeConfig,
    hub: Arc<ApplyHub>,
) -> Result<(storage::LogStore, storage::StateMachineStore), ServeError> {
    let deadline = tokio::time::Instant::now() + STORAGE_RELEASE_MAX;
    loop {
        match storage::open(&config.data_dir, hub.clone()) {
            Err(storage::OpenError::AlreadyOpen { .. })
                if tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            opened => return opened.map_err(|error| ServeError::Storage(error.to_string())),
        }
    }
}

/// Serves the port: plaintext, or TLS (with certificates reloaded on
/// SIGHUP) when `tls` is given.
/// What the port tells about itself: whether `/metrics` needs auth, and
/// whom to tell readiness.
struct Announce {
    metrics_auth: bool,
    readiness: Option<Arc<tokio::sync::watch::Sender<bool>>>,
}

async fn serve_port(
    node: Arc<Node>,
    gate: tls::peers::PeerGate,
    tls: Option<Arc<Tls>>,
    (listener, limit): (TcpListener, ConnectionLimit),
    announce: Announce,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let (stopping, stop) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stopping.send(true);
    });
    crate::metrics::spawn_upkeep(crate::metrics::UPKEEP_EVERY, stop.clone());
    let health = health::service(node.clone(), stop.clone(), announce.readiness).await;
    let identifying = node.clone();
    let identify: connections::principals::Identify = Arc::new(move |authorization, extensions| {
        crate::auth::caller::principal_of(&identifying, authorization, extensions)
    });
    let router = grpc_routes(&node, gate)?
        .add_service(health)
        .into_axum_router()
        .merge(http::router(node, announce.metrics_auth))
        .fallback(http::not_found)
        .layer(axum::middleware::from_fn_with_state(
            limit.requests(identify),
            connections::layer::bound_requests,
        ));
    let Some(tls) = tls else {
        let refusals = connections::refusal::Refusals::default();
        let incoming = TcpListenerStream::new(listener).filter_map(move |accepted| match accepted
            .and_then(|stream| limit.admit(stream))
        {
            Ok(Admission::Admitted(stream)) => Some(Ok(stream)),
            Ok(Admission::Refused { stream, why }) => {
                refusals.tell(stream, why);
                None
            }
            Err(error) => Some(Err(error)),
        });
        return serve_incoming(Routes::from(router), incoming, stop).await;
    };
    tls::reload::spawn(tls.clone(), stop.clone());
    let incoming = tls::acceptor::incoming(listener, limit, tls);
    serve_incoming(Routes::from(router), incoming, stop).await
}

/// Serves `routes` on the connections `incoming` yields until `stop`.
async fn serve_incoming<IO>(
    routes: Routes,
    incoming: impl Stream<Item = std::io::Result<IO>> + Send + 'static,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), ServeError>
where
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
{
    let graceful = stopped(stop.clone());
    let server = tonic::transport::Server::builder()
        .accept_http1(true)
        .max_concurrent_streams(Some(limits::STREAMS_PER_CONNECTION_MAX))
        .http2_max_header_list_size(limits::HEADER_LIST_BYTES_MAX)
        .add_routes(routes)
        .serve_with_incoming_shutdown(incoming, graceful);
    // Graceful shutdown waits for open streams (keep-alive streams stay open
    // for as long as their client lives): give them SHUTDOWN_GRACE, then stop.
    tokio::select! {
        served = server => served.map_err(|error| ServeError::Transport(error.to_string())),
        () = async { stopped(stop).await; tokio::time::sleep(SHUTDOWN_GRACE).await } => {
            tracing::info!("closed connections still open after the shutdown grace period");
            Ok(())
        }
    }
}

/// The Leasehold services (the public ones, the peers' Raft transport) and
/// reflection, which describes the public ones only.
fn grpc_routes(node: &Arc<Node>, gate: tls::peers::PeerGate) -> Result<Routes, ServeError> {
    let routes = Routes::new(
        LeaseServer::new(LeaseApi::new(node.clone())).max_decoding_message_size(DECODE_BYTES_MAX),
    )
    .add_service(
        LockServer::new(LockApi::new(node.clone())).max_decoding_message_size(DECODE_BYTES_MAX),
    )
    .add_service(ClusterServer::new(ClusterApi::new(node.clone())))
    .add_service(AuthServer::new(AuthApi::new(node.clone())))
    .add_service(
        WatchServer::new(WatchApi::new(node.clone())).max_decoding_message_size(DECODE_BYTES_MAX),
    )
    .add_service(
        FencedStoreServer::new(FencedApi::new(node.clone()))
            .max_decoding_message_size(DECODE_BYTES_MAX),
    )
    .add_service(
        RaftTransportServer::new(RaftTransportApi::new(
            node.raft.clone(),
            node.identity.clone(),
            node.quorum.contacts().clone(),
            node.protocols.clone(),
            gate,
        ))
        .max_decoding_message_size(RAFT_MESSAGE_BYTES_MAX)
        .max_encoding_message_size(RAFT_MESSAGE_BYTES_MAX),
    )
    .add_service(reflection::v1()?)
    .add_service(reflection::v1alpha()?);
    Ok(routes)
}

async fn stopped(mut stop: tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}
