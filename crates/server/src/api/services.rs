//! The gRPC services of `leasehold.v1` (but `Cluster`, see `cluster/`):
//! thin dispatchers, each method handing its request to the operation's own
//! module and its answer back.

use super::acquire::acquire;
use super::acquire_all::acquire_all;
use super::events::{events, EventStream};
use super::fenced_get::fenced_get;
use super::fenced_put::fenced_put;
use super::force_release::force_release;
use super::get_lease::get_lease;
use super::get_lock::get_lock;
use super::grant::grant;
use super::incidents::incidents;
use super::keep_alive::keep_alive;
use super::list::list;
use super::list_leases::list_leases;
use super::observe::{observe, ObserveStream};
use super::proclaim::proclaim;
use super::release::release;
use super::revoke::revoke;
use super::stream::AnswerStream;
use super::{keepalive_stream, session, Node};
use crate::auth::Caller;
use leasehold_proto::v1::fenced_store_server::FencedStore;
use leasehold_proto::v1::lease_server::Lease;
use leasehold_proto::v1::lock_server::Lock;
use leasehold_proto::v1::watch_server::Watch;
use leasehold_proto::v1::{
    AcquireAllRequest, AcquireAllResponse, AcquireRequest, AcquireResponse, EventsRequest,
    FencedGetRequest, FencedGetResponse, FencedPutRequest, FencedPutResponse, ForceReleaseRequest,
    ForceReleaseResponse, GetLeaseRequest, GetLeaseResponse, GetLockRequest, GetLockResponse,
    GrantRequest, GrantResponse, IncidentsRequest, IncidentsResponse, KeepAliveRequest,
    KeepAliveResponse, ListLeasesRequest, ListLeasesResponse, ListLocksRequest, ListLocksResponse,
    ObserveRequest, ProclaimRequest, ProclaimResponse, ReleaseRequest, ReleaseResponse,
    RevokeRequest, RevokeResponse, SessionRequest, SessionResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status, Streaming};

/// Declares a service struct over the shared [`Node`].
macro_rules! service {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub struct $name {
            node: Arc<Node>,
        }

        impl $name {
            /// The service over `node`.
            pub fn new(node: Arc<Node>) -> $name {
                $name { node }
            }
        }
    };
}

service!(
    /// The Lock service.
    LockApi
);
service!(
    /// The Lease service.
    LeaseApi
);
service!(
    /// The FencedStore service.
    FencedApi
);
service!(
    /// The Watch service.
    WatchApi
);

#[tonic::async_trait]
impl Lock for LockApi {
    async fn acquire(
        &self,
        request: Request<AcquireRequest>,
    ) -> Result<Response<AcquireResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            acquire(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn release(
        &self,
        request: Request<ReleaseRequest>,
    ) -> Result<Response<ReleaseResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            release(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn acquire_all(
        &self,
        request: Request<AcquireAllRequest>,
    ) -> Result<Response<AcquireAllResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            acquire_all(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn proclaim(
        &self,
        request: Request<ProclaimRequest>,
    ) -> Result<Response<ProclaimResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            proclaim(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn force_release(
        &self,
        request: Request<ForceReleaseRequest>,
    ) -> Result<Response<ForceReleaseResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            force_release(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn incidents(
        &self,
        request: Request<IncidentsRequest>,
    ) -> Result<Response<IncidentsResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(incidents(&self.node, &caller)?))
    }

    type SessionStream = AnswerStream<SessionResponse>;

    async fn session(
        &self,
        request: Request<Streaming<SessionRequest>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        let requests = request.into_inner();
        Ok(Response::new(session::serve(
            self.node.clone(),
            caller,
            requests,
        )))
    }

    async fn get(
        &self,
        request: Request<GetLockRequest>,
    ) -> Result<Response<GetLockResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            get_lock(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn list(
        &self,
        request: Request<ListLocksRequest>,
    ) -> Result<Response<ListLocksResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            list(&self.node, &caller, request.into_inner()).await?,
        ))
    }
}

#[tonic::async_trait]
impl Lease for LeaseApi {
    async fn grant(
        &self,
        request: Request<GrantRequest>,
    ) -> Result<Response<GrantResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            grant(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn keep_alive(
        &self,
        request: Request<KeepAliveRequest>,
    ) -> Result<Response<KeepAliveResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            keep_alive(&self.node, &caller, request.get_ref()).await?,
        ))
    }

    type KeepAliveStreamStream = AnswerStream<KeepAliveResponse>;

    async fn keep_alive_stream(
        &self,
        request: Request<Streaming<KeepAliveRequest>>,
    ) -> Result<Response<Self::KeepAliveStreamStream>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        let requests = request.into_inner();
        Ok(Response::new(keepalive_stream::serve(
            self.node.clone(),
            caller,
            requests,
        )))
    }

    async fn revoke(
        &self,
        request: Request<RevokeRequest>,
    ) -> Result<Response<RevokeResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            revoke(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn get(
        &self,
        request: Request<GetLeaseRequest>,
    ) -> Result<Response<GetLeaseResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            get_lease(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn list(
        &self,
        request: Request<ListLeasesRequest>,
    ) -> Result<Response<ListLeasesResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            list_leases(&self.node, &caller, request.into_inner()).await?,
        ))
    }
}

#[tonic::async_trait]
impl FencedStore for FencedApi {
    async fn put(
        &self,
        request: Request<FencedPutRequest>,
    ) -> Result<Response<FencedPutResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            fenced_put(&self.node, &caller, request.into_inner()).await?,
        ))
    }

    async fn get(
        &self,
        request: Request<FencedGetRequest>,
    ) -> Result<Response<FencedGetResponse>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(
            fenced_get(&self.node, &caller, request.into_inner()).await?,
        ))
    }
}

#[tonic::async_trait]
impl Watch for WatchApi {
    type EventsStream = EventStream;

    async fn events(
        &self,
        request: Request<EventsRequest>,
    ) -> Result<Response<Self::EventsStream>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        Ok(Response::new(events(
            &self.node,
            &caller,
            request.into_inner(),
        )?))
    }

    type ObserveStream = ObserveStream;

    async fn observe(
        &self,
        request: Request<ObserveRequest>,
    ) -> Result<Response<Self::ObserveStream>, Status> {
        let caller = Caller::identify(&self.node, request.metadata(), request.extensions())?;
        let stream = observe(&self.node, &caller, request.into_inner()).await?;
        Ok(Response::new(stream))
    }
}
