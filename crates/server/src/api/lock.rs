//! `leasehold.v1.Lock`: acquire (immediate or queued), release, get, list.

use super::convert::lock_to_wire;
use super::lease::unexpected;
use super::wait::QueuedWait;
use super::{check_lease_id, check_request_size, ApiError, Node};
use leasehold_core::{limits, Acquire, Command, LockError, LockName, Reply, RequestId, Token};
use leasehold_proto::v1::lock_server::Lock;
use leasehold_proto::v1::{
    AcquireRequest, AcquireResponse, GetLockRequest, GetLockResponse, ListLocksRequest,
    ListLocksResponse, ReleaseRequest, ReleaseResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};

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

fn parse_acquire(request: AcquireRequest) -> Result<Acquire, ApiError> {
    check_request_size(&request)?;
    let acquire = Acquire {
        lease: check_lease_id(request.lease)?,
        name: LockName::parse(&request.name)?,
        wait_ms: request.wait_ms,
        request_id: RequestId::parse(&request.request_id)?,
        fenced: request.fenced,
        lock_delay_ms: request.lock_delay_ms,
        max_hold_ms: request.max_hold_ms,
        metadata: request.metadata.into_iter().collect(),
    };
    acquire.validate()?;
    Ok(acquire)
}

impl LockApi {
    fn granted(&self, token: Token, already_held: bool, waited_ms: u64) -> AcquireResponse {
        AcquireResponse {
            header: self
                .node
                .header(self.node.state.read(|state| state.revision())),
            token: token.0,
            already_held,
            waited_ms,
        }
    }

    fn held_by(&self, wait: &QueuedWait) -> Option<Token> {
        self.node.state.read(|state| {
            let holder = state.lock(wait.name())?.holder.as_ref()?;
            (holder.lease == wait.lease()).then_some(holder.token)
        })
    }

    async fn acquire_now(&self, acquire: Acquire) -> Result<AcquireResponse, ApiError> {
        let (outcome, _) = self.node.propose(Command::Acquire(acquire)).await?;
        match outcome? {
            Reply::Acquired {
                token,
                already_held,
            } => Ok(self.granted(token, already_held, 0)),
            other => Err(unexpected("Acquire", &other)),
        }
    }

    async fn acquire_queued(&self, acquire: Acquire) -> Result<AcquireResponse, ApiError> {
        let wait = QueuedWait::register(
            self.node.clone(),
            acquire.name.clone(),
            acquire.lease,
            acquire.wait_ms,
        );
        let (outcome, _) = self.node.propose(Command::Acquire(acquire)).await?;
        let reply = match outcome {
            Ok(reply) => reply,
            Err(refused) => {
                wait.finish();
                return Err(refused.into());
            }
        };
        match reply {
            Reply::Acquired {
                token,
                already_held,
            } => {
                wait.finish();
                Ok(self.granted(token, already_held, 0))
            }
            Reply::Queued { .. } => {
                // A retried acquire replays its first outcome (`Queued`) even
                // if the grant has happened since: answer from the state then.
                if let Some(token) = self.held_by(&wait) {
                    wait.finish();
                    return Ok(self.granted(token, false, 0));
                }
                let (token, waited_ms) = wait.until_granted().await?;
                Ok(self.granted(token, false, waited_ms))
            }
            other => Err(unexpected("Acquire", &other)),
        }
    }
}

#[tonic::async_trait]
impl Lock for LockApi {
    async fn acquire(
        &self,
        request: Request<AcquireRequest>,
    ) -> Result<Response<AcquireResponse>, Status> {
        let acquire = parse_acquire(request.into_inner())?;
        let response = if acquire.wait_ms == 0 {
            self.acquire_now(acquire).await?
        } else {
            self.acquire_queued(acquire).await?
        };
        metrics::counter!("leasehold_acquires_total").increment(1);
        Ok(Response::new(response))
    }

    async fn release(
        &self,
        request: Request<ReleaseRequest>,
    ) -> Result<Response<ReleaseResponse>, Status> {
        let request = request.into_inner();
        check_request_size(&request)?;
        let command = Command::Release {
            lease: check_lease_id(request.lease)?,
            name: LockName::parse(&request.name).map_err(ApiError::from)?,
            token: Token(request.token),
            request_id: RequestId::parse(&request.request_id).map_err(ApiError::from)?,
        };
        let (outcome, revision) = self.node.propose(command).await?;
        match outcome.map_err(ApiError::from)? {
            Reply::Released => Ok(Response::new(ReleaseResponse {
                header: self.node.header(revision),
            })),
            other => Err(unexpected("Release", &other).into()),
        }
    }

    async fn get(
        &self,
        request: Request<GetLockRequest>,
    ) -> Result<Response<GetLockResponse>, Status> {
        let name = LockName::parse(&request.get_ref().name).map_err(ApiError::from)?;
        self.node.read_barrier().await?;
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
        self.node.read_barrier().await?;
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
