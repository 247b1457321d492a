//! `leasehold.v1.Lock`: acquire (see `acquire.rs`), release, get, list,
//! the session stream (see `session.rs`), the break-glass force release
//! (see `force.rs`) and the incident memories (see `incidents.rs`).

use super::acquire::acquire;
use super::convert::lock_to_wire;
use super::force::force_release;
use super::incidents::incidents;
use super::lease::unexpected;
use super::session;
use super::stream::AnswerStream;
use super::{check_lease_id, check_request_size, ApiError, Node};
use leasehold_core::{limits, Command, LockError, LockName, Reply, RequestId, Token};
use leasehold_proto::v1::lock_server::Lock;
use leasehold_proto::v1::{
    AcquireRequest, AcquireResponse, ForceReleaseRequest, ForceReleaseResponse, GetLockRequest,
    GetLockResponse, IncidentsRequest, IncidentsResponse, ListLocksRequest, ListLocksResponse,
    ReleaseRequest, ReleaseResponse, SessionRequest, SessionResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status, Streaming};

/// Validates and performs one release.
pub async fn release(node: &Node, request: ReleaseRequest) -> Result<ReleaseResponse, ApiError> {
    check_request_size(&request)?;
    let command = Command::Release {
        lease: check_lease_id(request.lease)?,
        name: LockName::parse(&request.name)?,
        token: Token(request.token),
        request_id: RequestId::parse(&request.request_id)?,
    };
    let (outcome, revision) = node.propose(command).await?;
    match outcome? {
        Reply::Released => Ok(ReleaseResponse {
            header: node.header(revision),
        }),
        other => Err(unexpected("Release", &other)),
    }
}

/// The Lock service.
pub struct LockApi {
    node: Arc<Node>,
}

impl LockApi {
    /// The service over `node`.
    pub fn new(node: Arc<Node>) -> LockApi {
        LockApi { node }
    }
}

#[tonic::async_trait]
impl Lock for LockApi {
    async fn acquire(
        &self,
        request: Request<AcquireRequest>,
    ) -> Result<Response<AcquireResponse>, Status> {
        Ok(Response::new(
            acquire(&self.node, request.into_inner()).await?,
        ))
    }

    async fn release(
        &self,
        request: Request<ReleaseRequest>,
    ) -> Result<Response<ReleaseResponse>, Status> {
        Ok(Response::new(
            release(&self.node, request.into_inner()).await?,
        ))
    }

    async fn force_release(
        &self,
        request: Request<ForceReleaseRequest>,
    ) -> Result<Response<ForceReleaseResponse>, Status> {
        Ok(Response::new(
            force_release(&self.node, request.into_inner()).await?,
        ))
    }

    async fn incidents(
        &self,
        _request: Request<IncidentsRequest>,
    ) -> Result<Response<IncidentsResponse>, Status> {
        Ok(Response::new(incidents(&self.node)))
    }

    type SessionStream = AnswerStream<SessionResponse>;

    async fn session(
        &self,
        request: Request<Streaming<SessionRequest>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        Ok(Response::new(session::spawn(
            self.node.clone(),
            request.into_inner(),
        )))
    }

    async fn get(
        &self,
        request: Request<GetLockRequest>,
    ) -> Result<Response<GetLockResponse>, Status> {
        let name = LockName::parse(&request.get_ref().name).map_err(ApiError::from)?;
        // A stale read answers from this node's applied state: may be behind.
        if !request.get_ref().stale {
            self.node.read_barrier().await?;
        }
        let found = self.node.state.read(|state| {
            let lock = state
                .lock(&name)
                .map(|lock| lock_to_wire(&self.node, state, lock));
            (lock, state.revision())
        });
        match found {
            (Some(lock), revision) => Ok(Response::new(GetLockResponse {
                header: self.node.header(revision),
                lock: Some(lock),
            })),
            (None, _) => {
                let nearby = self.node.state.read(|state| state.nearby_names(&name));
                Err(ApiError::from(LockError::NoSuchLock { name, nearby }).into())
            }
        }
    }

    async fn list(
        &self,
        request: Request<ListLocksRequest>,
    ) -> Result<Response<ListLocksResponse>, Status> {
        let request = request.into_inner();
        check_request_size(&request)?;
        let limit = match request.limit as usize {
            0 => limits::LIST_LOCKS_MAX,
            n => n.min(limits::LIST_LOCKS_MAX),
        };
        // A stale read answers from this node's applied state: may be behind.
        if !request.stale {
            self.node.read_barrier().await?;
        }
        let (locks, truncated, revision) = self.node.state.read(|state| {
            let mut matching = state.locks_with_prefix(&request.prefix);
            let locks: Vec<_> = matching
                .by_ref()
                .take(limit)
                .map(|lock| lock_to_wire(&self.node, state, lock))
                .collect();
            (locks, matching.next().is_some(), state.revision())
        });
        Ok(Response::new(ListLocksResponse {
            header: self.node.header(revision),
            locks,
            truncated,
        }))
    }
}
