//! Plain HTTP on the gRPC port: health, readiness and Prometheus metrics,
//! fetched with a bare HTTP/1.1 request as curl or a scraper would.

#[path = "support/prometheus.rs"]
mod prometheus;

use leasehold_testkit::grpc::{acquire, grant};
use leasehold_testkit::TestServer;
use prometheus::http_get;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics_are_served_on_the_grpc_port() {
    let server = TestServer::start().await;
    let (status, body) = http_get(&server.endpoint, "/healthz").await;
    assert_eq!((status, body.trim()), (200, "ok"));
    let (status, body) = http_get(&server.endpoint, "/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("leader: node 1"), "{body}");

    let mut leases = server.leases().await;
    let lease = grant(&mut leases, 10_000).await;
    server
        .locks()
        .await
        .acquire(acquire(lease, "m", 0))
        .await
        .unwrap();
    let (status, body) = http_get(&server.endpoint, "/metrics").await;
    assert_eq!(status, 200);
    for metric in [
        "leasehold_locks_granted_total",
        "leasehold_batch_commands",
        "leasehold_log_append_seconds",
        "leasehold_leases",
        "leasehold_locks",
    ] {
        assert!(
            body.contains(metric),
            "{metric} missing from /metrics:\n{body}"
        );
    }
    let (status, _) = http_get(&server.endpoint, "/no-such-page").await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_grpc_method_is_unimplemented() {
    use leasehold_proto::v1::{StatusRequest, StatusResponse};
    let server = TestServer::start().await;
    let mut grpc = tonic::client::Grpc::new(server.channel().await);
    grpc.ready().await.unwrap();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/leasehold.v1.Nothing/Here");
    let codec = tonic_prost::ProstCodec::<StatusRequest, StatusResponse>::default();
    let status = grpc
        .unary(tonic::Request::new(StatusRequest {}), path, codec)
        .await
        .expect_err("no such method");
    assert_eq!(status.code(), tonic::Code::Unimplemented, "{status:?}");
    server.stop().await;
}
