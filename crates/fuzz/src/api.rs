//! The `api` target: the whole way from a client's bytes to the core, on a
//! real node in this process (a [`TestServer`]: real sockets, a real data
//! dir). The first byte picks the method, the rest is its request message;
//! tonic's codec decodes it, the handler checks it and turns it into a
//! command, the core applies it. An answer of `INTERNAL` or `UNKNOWN` (what
//! a panic or a server fault looks like) fails the target.
//!
//! The node lives for the whole run, so what one input granted or held,
//! the next finds: the target explores sequences, and an input that fails
//! may need the ones before it to fail again (the run prints it anyway).
//! [`stop`] ends the node and removes its data dir.

use leasehold_testkit::raw_grpc::{call, methods, Method};
use leasehold_testkit::TestServer;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use tonic::transport::Channel;
use tonic::Code;

/// The services the target calls: the lock data path. Not membership, auth
/// or the Raft transport: a fuzzed call there could take the node out of
/// its own cluster or turn auth on, and every later input would only hear
/// that. (Their messages are fuzzed by `requests` and `raft`; t100 calls
/// every method.)
const SERVICES: &[&str] = &[
    "/leasehold.v1.Lock/",
    "/leasehold.v1.Lease/",
    "/leasehold.v1.FencedStore/",
    "/leasehold.v1.Watch/",
];

/// Bound on one call: a decoded request may wait in a queue, or stream.
const CALL_LIMIT: Duration = Duration::from_millis(100);

/// The node and a channel to it.
struct Harness {
    runtime: tokio::runtime::Runtime,
    server: TestServer,
    channel: Channel,
    methods: Vec<Method>,
}

static HARNESS: Mutex<Option<Harness>> = Mutex::new(None);

/// The methods the target calls, in the order the first byte picks them.
pub fn called_methods() -> Vec<Method> {
    let called = |method: &Method| SERVICES.iter().any(|s| method.path.starts_with(s));
    methods().into_iter().filter(called).collect()
}

fn start() -> Harness {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let (server, channel) = runtime.block_on(async {
        let server = TestServer::start().await;
        let channel = server.channel().await;
        (server, channel)
    });
    Harness {
        runtime,
        server,
        channel,
        methods: called_methods(),
    }
}

/// Sends `bytes` to the node (started on the first input).
pub fn api(bytes: &[u8]) {
    let Some((&pick, message)) = bytes.split_first() else {
        return;
    };
    let mut harness = HARNESS.lock().unwrap_or_else(PoisonError::into_inner);
    let harness = harness.get_or_insert_with(start);
    let method = &harness.methods[usize::from(pick) % harness.methods.len()];
    let call = call(&harness.channel, method, message.to_vec(), CALL_LIMIT);
    if let Some(status) = harness.runtime.block_on(call) {
        assert!(
            !matches!(status.code(), Code::Internal | Code::Unknown),
            "{} answered {message:?} with {status:?}",
            method.path
        );
    }
}

/// Stops the node, if one runs, and removes its data dir.
pub fn stop() {
    let harness = HARNESS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(harness) = harness {
        harness.runtime.block_on(harness.server.stop());
    }
}
