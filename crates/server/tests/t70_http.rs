//! Plain HTTP on the gRPC port: health, readiness and Prometheus metrics,
//! fetched with a bare HTTP/1.1 request as curl or a scraper would.

mod common;

use common::{acquire, grant, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn http_get(server: &TestServer, path: &str) -> (u16, String) {
    let addr = server.endpoint.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
    let body = response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics_are_served_on_the_grpc_port() {
    let server = TestServer::start().await;
    let (status, body) = http_get(&server, "/healthz").await;
    assert_eq!((status, body.trim()), (200, "ok"));
    let (status, body) = http_get(&server, "/readyz").await;
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
    let (status, body) = http_get(&server, "/metrics").await;
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
    let (status, _) = http_get(&server, "/no-such-page").await;
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
