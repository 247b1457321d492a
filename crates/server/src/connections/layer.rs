//! Every call and stream on the port, gRPC and HTTP alike, passes here:
//!
//! - it counts on its connection while it is open (an open call or stream
//!   keeps the connection from being closed as idle, see [`super::stream`]);
//! - calls and streams open at once from one remote address are bounded
//!   ([`limits::REQUESTS_PER_ADDRESS_MAX`] by default); one past the bound
//!   is refused at once, reason `Unavailable` with the limit named (it is
//!   let through once the client holds less; HTTP 429 for a page), and
//!   counted;
//! - its request body must keep pace ([`super::paced`]): a slow sender is
//!   cut. Not the Raft transport's: a snapshot sent to a follower may take
//!   longer than a request's deadline, and only members get through to it.
//!
//! The count ends when the response body ends or is dropped, so a stream
//! counts for as long as it lives.
//!
//! [`limits::REQUESTS_PER_ADDRESS_MAX`]: leasehold_core::limits::REQUESTS_PER_ADDRESS_MAX

use super::paced::{Pace, Paced};
use super::registry::{Registry, Slot};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use leasehold_core::limits::{self, Limit};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};

/// The per-address bound on calls and streams, and how their bodies are
/// paced.
#[derive(Clone)]
pub struct RequestLimit {
    registry: Arc<Registry>,
    max: usize,
    /// The gRPC paths whose client streams (paced per message).
    client_streams: Arc<HashSet<String>>,
}

impl RequestLimit {
    pub(super) fn new(registry: Arc<Registry>, max: usize) -> RequestLimit {
        RequestLimit {
            registry,
            max,
            client_streams: Arc::new(client_streams()),
        }
    }

    /// How `request`'s body is paced (`None`: not at all).
    fn pace(&self, request: &Request) -> Option<Pace> {
        let path = request.uri().path();
        Some(if path.starts_with(RAFT_TRANSPORT) {
            return None;
        } else if !is_grpc(request) {
            Pace::Whole
        } else if self.client_streams.contains(path) {
            Pace::EachMessage
        } else {
            Pace::First
        })
    }
}

/// The path prefix of the Raft transport's methods.
const RAFT_TRANSPORT: &str = "/leasehold.v1.RaftTransport/";

/// The paths of the methods whose client streams, from the descriptors.
fn client_streams() -> HashSet<String> {
    use prost::Message as _;
    let set = prost_types::FileDescriptorSet::decode(leasehold_proto::FILE_DESCRIPTOR_SET)
        .expect("the compiled descriptor set decodes");
    let mut paths = HashSet::new();
    for file in &set.file {
        for service in &file.service {
            for method in service.method.iter().filter(|m| m.client_streaming()) {
                let (package, service) = (file.package(), service.name());
                paths.insert(format!("/{package}.{service}/{}", method.name()));
            }
        }
    }
    paths
}

/// The body length `request` declares (0 if it declares none).
fn declared_length(request: &Request) -> u64 {
    request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok()?.parse().ok())
        .unwrap_or(0)
}

fn is_grpc(request: &Request) -> bool {
    request
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"application/grpc"))
}

/// The middleware (`axum::middleware::from_fn_with_state`).
pub async fn bound_requests(
    State(limit): State<RequestLimit>,
    request: Request,
    next: Next,
) -> Response {
    let Some(peer) = remote_addr(&request) else {
        return next.run(request).await;
    };
    let Some(slot) = limit.registry.call(peer, limit.max) else {
        metrics::counter!("leasehold_calls_refused_total", "cause" => "requests_per_address_max")
            .increment(1);
        return refusal(&request, peer, limit.max);
    };
    let pace = limit.pace(&request);
    if pace == Some(Pace::Whole) && declared_length(&request) > limits::REQUEST_BYTES_MAX as u64 {
        let why = format!(
            "the request body is larger than REQUEST_BYTES_MAX ({} bytes)\n",
            limits::REQUEST_BYTES_MAX
        );
        return (axum::http::StatusCode::PAYLOAD_TOO_LARGE, why).into_response();
    }
    let receive = Duration::from_millis(limits::REQUEST_RECEIVE_MS_MAX);
    let request = match pace {
        Some(pace) => request.map(|body| Body::new(Paced::new(body, pace, receive))),
        None => request,
    };
    let response = next.run(request).await;
    response.map(|body| Body::new(Counted { body, _slot: slot }))
}

/// The client's address, as tonic recorded it for the connection.
fn remote_addr(request: &Request) -> Option<SocketAddr> {
    let extensions = request.extensions();
    extensions
        .get::<TcpConnectInfo>()
        .and_then(TcpConnectInfo::remote_addr)
        .or_else(|| {
            let tls = extensions.get::<TlsConnectInfo<TcpConnectInfo>>()?;
            tls.get_ref().remote_addr()
        })
}

/// `RESOURCE_EXHAUSTED` (gRPC) or 429 (HTTP), naming the limit.
fn refusal(request: &Request, peer: SocketAddr, max: usize) -> Response {
    let why = format!(
        "{} has REQUESTS_PER_ADDRESS_MAX ({max}) calls and streams open already; finish or \
         cancel some, or spread the clients over more hosts (behind a proxy or NAT, raise it \
         with serve --requests-per-address)",
        peer.ip()
    );
    if is_grpc(request) {
        let limit = Limit::RequestsPerAddressMax;
        let status = tonic::Status::from(crate::api::ApiError::AtLimit { limit, why });
        return status.into_http::<Body>().into_response();
    }
    (
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        format!("{why}\n"),
    )
        .into_response()
}

/// A response body that holds its call's count until it ends.
struct Counted {
    body: Body,
    _slot: Slot,
}

impl http_body::Body for Counted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
