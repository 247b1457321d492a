//! TLS between the library and a real server (in this process, on a free
//! loopback port), with certificates made by the testkit's factory: an
//! mTLS client acquires and releases; a client without a certificate, with
//! one from another CA, or with an expired one is refused at the
//! handshake; a scheme that does not match the server fails with a
//! sentence saying which; and a client's certificate cannot call the Raft
//! service.

use leasehold_client::{Client, ClientOptions, Error, TlsOptions};
use leasehold_proto::v1::raft_transport_client::RaftTransportClient;
use leasehold_proto::v1::RaftPayload;
use leasehold_server::tls::TlsFiles;
use leasehold_server::{serve_on, ServeConfig};
use leasehold_testkit::tls::{Ca, Issued};
use leasehold_testkit::{eventually_some, TestServer};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::oneshot;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// A TLS node in this process; stops when dropped.
struct TlsNode {
    addr: SocketAddr,
    _dir: tempfile::TempDir,
    _stop: oneshot::Sender<()>,
}

impl TlsNode {
    /// Starts a node with a server certificate from `ca`, requiring client
    /// certificates from `ca` too (mTLS); waits until a client of `ca` with
    /// `client` certificate gets its status.
    async fn start(ca: &Ca, client: &Issued) -> TlsNode {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = ca.server().write(dir.path(), "server");
        let client_ca = ca.write(dir.path(), "ca");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut config = ServeConfig::single_node(dir.path().join("data"), addr);
        config.tls = Some(TlsFiles {
            cert,
            key,
            client_ca: Some(client_ca),
            peer_ca: None,
        });
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(serve_on(config, listener, async move {
            let _ = stopped.await;
        }));
        let node = TlsNode {
            addr,
            _dir: dir,
            _stop: stop,
        };
        let options = options(Some(ca), Some(client));
        eventually_some(
            "the TLS node answers",
            Duration::from_secs(10),
            async || {
                let client = Client::connect_with([node.url()], options.clone())
                    .await
                    .ok()?;
                client.status().await.ok()
            },
        )
        .await;
        node
    }

    fn url(&self) -> String {
        format!("https://{}", self.addr)
    }
}

/// Options that fail fast, trusting `ca` and presenting `client`.
fn options(ca: Option<&Ca>, client: Option<&Issued>) -> ClientOptions {
    ClientOptions {
        retries_max: Some(0),
        retry_budget: Duration::from_secs(1),
        call_timeout: Duration::from_secs(3),
        tls: TlsOptions {
            ca_pem: ca.map(|ca| ca.cert_pem().into_bytes()),
            cert_pem: client.map(|c| c.cert_pem.clone().into_bytes()),
            key_pem: client.map(|c| c.key_pem.clone().into_bytes()),
        },
        ..ClientOptions::default()
    }
}

/// The status call's outcome for a client with `options` at `url`.
async fn status_error(url: &str, options: ClientOptions) -> Error {
    let client = match Client::connect_with([url], options).await {
        Ok(client) => client,
        Err(error) => return error,
    };
    client.status().await.expect_err("the call is refused")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mtls_client_acquires_and_releases_and_status_says_mtls() {
    let ca = Ca::new("t80 CA");
    let alice = ca.client("alice");
    let node = TlsNode::start(&ca, &alice).await;
    let client = Client::connect_with([node.url()], options(Some(&ca), Some(&alice)))
        .await
        .unwrap();
    assert_eq!(client.status().await.unwrap().transport_security, "mtls");
    let lease = client.lease(Duration::from_secs(10)).grant().await.unwrap();
    let guard = lease.lock("t80/job").acquire().await.unwrap();
    assert!(guard.token().0 > 0);
    guard.release().await.unwrap();
    lease.revoke().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_certificate_another_ca_or_an_expired_one_is_refused() {
    let ca = Ca::new("t80 CA");
    let node = TlsNode::start(&ca, &ca.client("alice")).await;
    let stranger = Ca::new("another CA").client("mallory");
    let refused = [
        ("no certificate", options(Some(&ca), None)),
        ("another CA", options(Some(&ca), Some(&stranger))),
        (
            "expired",
            options(Some(&ca), Some(&ca.expired_client("bob"))),
        ),
    ];
    for (what, options) in refused {
        let error = status_error(&node.url(), options).await;
        assert!(
            matches!(error, Error::Unavailable { .. }),
            "{what}: expected Unavailable, got {error:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheme_that_does_not_match_the_server_says_which() {
    let ca = Ca::new("t80 CA");
    let node = TlsNode::start(&ca, &ca.client("alice")).await;
    let plaintext_to_tls =
        status_error(&format!("http://{}", node.addr), options(None, None)).await;
    let Error::Unavailable { message } = &plaintext_to_tls else {
        panic!("expected Unavailable, got {plaintext_to_tls:?}");
    };
    let expected = format!(
        "the server at {} speaks TLS: use https:// and --cacert",
        node.addr
    );
    assert_eq!(message, &expected);

    let plain = TestServer::start().await;
    let tls_to_plaintext =
        status_error(&format!("https://{}", plain.addr), options(Some(&ca), None)).await;
    let Error::Unavailable { message } = &tls_to_plaintext else {
        panic!("expected Unavailable, got {tls_to_plaintext:?}");
    };
    let expected = format!(
        "the server at https://{0} does not speak TLS: use http://{0}",
        plain.addr
    );
    assert_eq!(message, &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_cannot_call_the_raft_service() {
    let ca = Ca::new("t80 CA");
    let alice = ca.client("alice");
    let node = TlsNode::start(&ca, &alice).await;
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca.cert_pem()))
        .identity(Identity::from_pem(&alice.cert_pem, &alice.key_pem));
    let channel = Endpoint::from_shared(node.url())
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
        .expect("alice's certificate passes the TLS layer");
    let refused = RaftTransportClient::new(channel)
        .vote(RaftPayload::default())
        .await
        .expect_err("a client may not vote");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    assert!(
        refused
            .message()
            .contains("accepts only this cluster's nodes")
            && refused.message().contains("alice"),
        "{}",
        refused.message()
    );
}
