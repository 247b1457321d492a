//! `leasehold.v1.Lease`: grant, keep alive (unary and streamed), revoke, get.

use super::convert::{holdings_to_wire, lease_to_wire, owner_from_wire};
use super::keepalive_stream;
use super::stream::AnswerStream;
use super::{check_lease_id, check_request_size, ApiError, Node};
use leasehold_core::{command, Command, LockError, Reply, RequestId};
use leasehold_proto::v1::lease_server::Lease;
use leasehold_proto::v1::{
    GetLeaseRequest, GetLeaseResponse, GrantRequest, GrantResponse, KeepAliveRequest,
    KeepAliveResponse, RevokeRequest, RevokeResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status, Streaming};

/// The Lease service.
pub struct LeaseApi {
    node: Arc<Node>,
}

impl LeaseApi {
    /// The service over `node`.
    pub fn new(node: Arc<Node>) -> LeaseApi {
        LeaseApi { node }
    }
}

/// Proposes one keep-alive; shared by the unary and the streamed form.
pub async fn keep_alive(
    node: &Node,
    request: &KeepAliveRequest,
) -> Result<KeepAliveResponse, ApiError> {
    let lease = check_lease_id(request.lease)?;
    let (outcome, revision) = node.propose(Command::KeepAlive { lease }).await?;
    match outcome? {
        Reply::KeptAlive { lease, ttl_ms } => Ok(KeepAliveResponse {
            header: node.header(revision),
            lease: lease.0,
            ttl_ms,
            seq: request.seq,
            error: None,
            // Read after the renewal applied: includes every grant the
            // holder had heard of when it sent this keep-alive.
            holdings: Some(holdings_to_wire(node, lease)),
        }),
        other => Err(unexpected("KeepAlive", &other)),
    }
}

/// A reply variant the command cannot produce: a bug, reported as unavailable
/// rather than a panic on the serving path.
pub fn unexpected(command: &str, reply: &Reply) -> ApiError {
    tracing::error!(command, ?reply, "unexpected reply");
    ApiError::Unavailable(format!("internal error: {command} produced {reply:?}"))
}

#[tonic::async_trait]
impl Lease for LeaseApi {
    async fn grant(
        &self,
        request: Request<GrantRequest>,
    ) -> Result<Response<GrantResponse>, Status> {
        let request = request.into_inner();
        check_request_size(&request)?;
        command::check_ttl(request.ttl_ms).map_err(ApiError::from)?;
        let command = Command::GrantLease {
            ttl_ms: request.ttl_ms,
            owner: owner_from_wire(request.owner),
            request_id: RequestId::parse(&request.request_id).map_err(ApiError::from)?,
        };
        command.validate().map_err(ApiError::from)?;
        let (outcome, revision) = self.node.propose(command).await?;
        match outcome.map_err(ApiError::from)? {
            Reply::LeaseGranted { lease, ttl_ms } => Ok(Response::new(GrantResponse {
                header: self.node.header(revision),
                lease: lease.0,
                ttl_ms,
            })),
            other => Err(unexpected("Grant", &other).into()),
        }
    }

    async fn keep_alive(
        &self,
        request: Request<KeepAliveRequest>,
    ) -> Result<Response<KeepAliveResponse>, Status> {
        Ok(Response::new(
            keep_alive(&self.node, request.get_ref()).await?,
        ))
    }

    type KeepAliveStreamStream = AnswerStream<KeepAliveResponse>;

    async fn keep_alive_stream(
        &self,
        request: Request<Streaming<KeepAliveRequest>>,
    ) -> Result<Response<Self::KeepAliveStreamStream>, Status> {
        Ok(Response::new(keepalive_stream::spawn(
            self.node.clone(),
            request.into_inner(),
        )))
    }

    async fn revoke(
        &self,
        request: Request<RevokeRequest>,
    ) -> Result<Response<RevokeResponse>, Status> {
        let request = request.into_inner();
        let lease = check_lease_id(request.lease)?;
        let command = Command::RevokeLease {
            lease,
            request_id: RequestId::parse(&request.request_id).map_err(ApiError::from)?,
        };
        let (outcome, revision) = self.node.propose(command).await?;
        match outcome.map_err(ApiError::from)? {
            Reply::LeaseEnded { released } => Ok(Response::new(RevokeResponse {
                header: self.node.header(revision),
                released: released.iter().map(|n| n.to_string()).collect(),
            })),
            other => Err(unexpected("Revoke", &other).into()),
        }
    }

    async fn get(
        &self,
        request: Request<GetLeaseRequest>,
    ) -> Result<Response<GetLeaseResponse>, Status> {
        let lease = check_lease_id(request.get_ref().lease)?;
        self.node.read_barrier().await?;
        let found = self.node.state.read(|state| {
            state
                .lease(lease)
                .map(|l| (lease_to_wire(&self.node, state, l), state.revision()))
        });
        match found {
            Some((info, revision)) => Ok(Response::new(GetLeaseResponse {
                header: self.node.header(revision),
                lease: Some(info),
            })),
            None => Err(ApiError::from(LockError::LeaseNotFound { lease }).into()),
        }
    }
}
