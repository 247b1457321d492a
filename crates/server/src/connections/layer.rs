//! Every call and stream on the port, gRPC and HTTP alike, passes here:
//!
//! - it counts on its connection while it is open (an open call or stream
//!   keeps the connection from being closed as idle, see [`super::stream`]);
//! - calls and streams open at once from one remote address are bounded
//!   ([`limits::REQUESTS_PER_ADDRESS_MAX`] by default), and those of one
//!   principal ([`limits::REQUESTS_PER_PRINCIPAL_MAX`], see
//!   [`super::principals`]); one past a bound is refused at once, reason
//!   `Unavailable` with the limit named (it is let through once the client
//!   holds less; HTTP 429 for a page), and counted;
//! - its request body must keep pace ([`super::paced`]): a slow sender is
//!   cut. Not the Raft transport's: a snapshot sent to a follower may take
//!   longer than a request's deadline, and only members get through to it.
//!
//! The count ends when the response body ends or is dropped, so a stream
//! counts for as long as it lives.
//!
//! [`limits::REQUESTS_PER_ADDRESS_MAX`]: leasehold_core::limits::REQUESTS_PER_ADDRESS_MAX
//! [`limits::REQUESTS_PER_PRINCIPAL_MAX`]: leasehold_core::limits::REQUESTS_PER_PRINCIPAL_MAX

use super::paced::{Pace, Paced};
use super::principals::{Identify, PrincipalShares, PrincipalSlot};
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

/// The per-address and per-principal bounds on calls and streams, and how
/// their bodies are paced.
#[derive(Clone)]
pub struct RequestLimit {
    registry: Arc<Registry>,
    max: usize,
    principals: PrincipalLimit,
    /// The gRPC paths whose client streams (paced per message).
    client_streams: Arc<HashSet<String>>,
}

/// The per-principal bound.
#[derive(Clone)]
pub(super) struct PrincipalLimit {
    pub shares: Arc<PrincipalShares>,
    pub identify: Identify,
    pub max: usize,
}

impl RequestLimit {
    pub(super) fn new(
        registry: Arc<Registry>,
        max: usize,
        principals: PrincipalLimit,
    ) -> RequestLimit {
        RequestLimit {
            registry,
            max,
            principals,
            client_streams: Arc::new(client_streams()),
        }
    }

    /// A slot in the share of `request`'s principal (`Ok(None)`: it names
    /// none), or the refusal's sentence.
    fn principal_slot(&self, request: &Request) -> Result<Option<PrincipalSlot>, String> {
        let authorization = request.headers().get(axum::http::header::AUTHORIZATION);
        let authorization = authorization.and_then(|value| value.to_str().ok());
        let limit = &self.principals;
        let Some(principal) = (limit.identify)(authorization, request.extensions()) else {
            return Ok(None);
        };
        match limit.shares.take(&principal, limit.max) {
            Some(slot) => Ok(Some(slot)),
            None => Err(format!(
                "principal {principal} has REQUESTS_PER_PRINCIPAL_MAX ({}) calls and streams \
                 open already; finish or cancel some (for a fleet sharing one identity, raise it \
                 with serve --requests-per-principal)",
                limit.max
            )),
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
    if let Some(too_large) = http1_head_too_large(&request) {
        return too_large;
    }
    let Some(peer) = remote_addr(&request) else {
        return next.run(request).await;
    };
    let Some(slot) = limit.registry.call(peer, limit.max) else {
        let why = format!(
            "{} has REQUESTS_PER_ADDRESS_MAX ({}) calls and streams open already; finish or \
             cancel some, or spread the clients over more hosts (behind a proxy or NAT, raise \
             it with serve --requests-per-address)",
            peer.ip(),
            limit.max
        );
        return refused(&request, Limit::RequestsPerAddressMax, why);
    };
    let principal_slot = match limit.principal_slot(&request) {
        Ok(slot) => slot,
        Err(why) => return refused(&request, Limit::RequestsPerPrincipalMax, why),
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
    let slots = (slot, principal_slot);
    response.map(|body| {
        Body::new(Counted {
            body,
            _slots: slots,
        })
    })
}

/// 431 for an HTTP/1 request whose headers are past
/// [`limits::HEADER_LIST_BYTES_MAX`], counted as HTTP/2 counts a header
/// list (name, value and 32 bytes each). HTTP/2's are refused by the
/// server's HTTP/2 layer before they get here; hyper reads an HTTP/1 head
/// of at most about 400 KiB (and within 30 s), then this names the limit.
fn http1_head_too_large(request: &Request) -> Option<Response> {
    if request.version() >= axum::http::Version::HTTP_2 {
        return None;
    }
    let headers = request.headers().iter();
    let bytes: usize = headers
        .map(|(name, value)| name.as_str().len() + value.len() + 32)
        .sum();
    let max = limits::HEADER_LIST_BYTES_MAX as usize;
    (bytes > max).then(|| {
        let why = format!(
            "the request's headers are {bytes} bytes, past HEADER_LIST_BYTES_MAX ({max} bytes)\n"
        );
        (axum::http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, why).into_response()
    })
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

/// A call refused at `limit`, counted by it: `Unavailable` naming the limit
/// (gRPC) or 429 (HTTP).
fn refused(request: &Request, limit: Limit, why: String) -> Response {
    let cause = limit.as_str().to_ascii_lowercase();
    metrics::counter!("leasehold_calls_refused_total", "cause" => cause).increment(1);
    if is_grpc(request) {
        let status = tonic::Status::from(crate::api::ApiError::AtLimit { limit, why });
        return status.into_http::<Body>().into_response();
    }
    (
        axum::http::StatusCode::TOO_MANY_REQUESTS,
        format!("{why}\n"),
    )
        .into_response()
}

/// A response body that holds its call's counts until it ends.
struct Counted {
    body: Body,
    _slots: (Slot, Option<PrincipalSlot>),
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
