//! [`Etcd`]: the etcd v3 gRPC calls the benchmark makes, over a tonic
//! [`Channel`] with the hand-written messages of `proto`. Each call is one
//! HTTP/2 request on the channel, as with the generated Leasehold clients.

use futures::Stream;
use tonic::client::Grpc;
use tonic::codec::Streaming;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::Status;
use tonic_prost::ProstCodec;

use super::proto::{
    DeleteRangeRequest, DeleteRangeResponse, LeaseGrantRequest, LeaseGrantResponse,
    LeaseKeepAliveRequest, LeaseKeepAliveResponse, LeaseRevokeRequest, LeaseRevokeResponse,
    StatusRequest, StatusResponse, TxnRequest, TxnResponse,
};

/// A client of one etcd member (or of the member a channel connects to).
pub(super) struct Etcd {
    /// tonic's generic client: what generated clients wrap.
    grpc: Grpc<Channel>,
}

impl Etcd {
    pub(super) fn new(channel: Channel) -> Self {
        Etcd {
            grpc: Grpc::new(channel),
        }
    }

    /// `KV.Txn`.
    pub(super) async fn txn(&mut self, request: TxnRequest) -> Result<TxnResponse, Status> {
        self.unary("/etcdserverpb.KV/Txn", request).await
    }

    /// `KV.DeleteRange`.
    pub(super) async fn delete_range(
        &mut self,
        request: DeleteRangeRequest,
    ) -> Result<DeleteRangeResponse, Status> {
        self.unary("/etcdserverpb.KV/DeleteRange", request).await
    }

    /// `Lease.LeaseGrant`.
    pub(super) async fn lease_grant(
        &mut self,
        request: LeaseGrantRequest,
    ) -> Result<LeaseGrantResponse, Status> {
        self.unary("/etcdserverpb.Lease/LeaseGrant", request).await
    }

    /// `Lease.LeaseRevoke` (deletes the keys attached to the lease).
    pub(super) async fn lease_revoke(
        &mut self,
        request: LeaseRevokeRequest,
    ) -> Result<LeaseRevokeResponse, Status> {
        self.unary("/etcdserverpb.Lease/LeaseRevoke", request).await
    }

    /// `Maintenance.Status` of the member the channel connects to.
    pub(super) async fn status(&mut self) -> Result<StatusResponse, Status> {
        self.unary("/etcdserverpb.Maintenance/Status", StatusRequest {})
            .await
    }

    /// `Lease.LeaseKeepAlive`: one response per request, in order (the
    /// server handles a stream's requests one at a time).
    pub(super) async fn lease_keep_alive(
        &mut self,
        requests: impl Stream<Item = LeaseKeepAliveRequest> + Send + 'static,
    ) -> Result<Streaming<LeaseKeepAliveResponse>, Status> {
        self.ready().await?;
        let path = PathAndQuery::from_static("/etcdserverpb.Lease/LeaseKeepAlive");
        let codec = ProstCodec::<LeaseKeepAliveRequest, LeaseKeepAliveResponse>::default();
        let response = self
            .grpc
            .streaming(tonic::Request::new(requests), path, codec)
            .await?;
        Ok(response.into_inner())
    }

    async fn unary<Req, Resp>(&mut self, path: &'static str, request: Req) -> Result<Resp, Status>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        self.ready().await?;
        let codec = ProstCodec::<Req, Resp>::default();
        let response = self
            .grpc
            .unary(
                tonic::Request::new(request),
                PathAndQuery::from_static(path),
                codec,
            )
            .await?;
        Ok(response.into_inner())
    }

    /// Waits until the channel can take a request (as generated clients do).
    async fn ready(&mut self) -> Result<(), Status> {
        self.grpc
            .ready()
            .await
            .map_err(|e| Status::unavailable(format!("the channel is not ready: {e}")))
    }
}
