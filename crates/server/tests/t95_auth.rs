//! Auth over the wire, against a real server: bootstrap once from loopback,
//! bearer tokens, PermissionDenied naming principal, verb and prefix, lease
//! ownership (another principal's lease can be neither renewed, revoked nor
//! used), force release needing `force` and its refusal in the audit trail,
//! revoked and expired tokens refused on the next call.

#[path = "support/prometheus.rs"]
mod prometheus;

use leasehold_proto::status::error_detail;
use leasehold_proto::v1::auth_client::AuthClient;
use leasehold_proto::v1::*;
use leasehold_testkit::grpc::{acquire, revoke};
use leasehold_testkit::{eventually, TestServer};
use prometheus::{http_get, http_get_with};
use std::time::Duration;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;
use tonic::{Code, Request};

/// A request carrying `secret` as its bearer token.
fn with<T>(secret: &str, message: T) -> Request<T> {
    let mut request = Request::new(message);
    let value = format!("Bearer {secret}").parse().unwrap();
    request.metadata_mut().insert("authorization", value);
    request
}

async fn token(
    auth: &mut AuthClient<Channel>,
    root: &str,
    who: &str,
    expires_in_ms: u64,
) -> String {
    let create = CreateTokenRequest {
        principal: who.into(),
        expires_in_ms,
    };
    auth.create_token(with(root, create))
        .await
        .unwrap()
        .into_inner()
        .secret
}

/// Bootstraps root, gives alice and bob `lock` on `jobs/`, enables auth;
/// returns the secrets of root, alice and bob.
async fn secure(auth: &mut AuthClient<Channel>) -> (String, String, String) {
    let boot = BootstrapRequest {
        principal: "root".into(),
    };
    let root = auth
        .bootstrap(boot.clone())
        .await
        .unwrap()
        .into_inner()
        .secret;
    let again = auth.bootstrap(boot).await.unwrap_err();
    assert!(
        again.message().contains("an admin exists already"),
        "{again:?}"
    );
    let grant = GrantRoleRequest {
        role: "dev".into(),
        prefix: "jobs/".into(),
        verb: "lock".into(),
        deny: false,
    };
    auth.grant_role(with(&root, grant)).await.unwrap();
    for who in ["alice", "bob"] {
        let add = AddUserRequest {
            principal: who.into(),
            roles: vec!["dev".into()],
        };
        auth.add_user(with(&root, add)).await.unwrap();
    }
    auth.enable(with(&root, EnableAuthRequest {}))
        .await
        .unwrap();
    let alice = token(auth, &root, "alice", 0).await;
    let bob = token(auth, &root, "bob", 0).await;
    (root, alice, bob)
}

fn assert_denied(status: &tonic::Status, principal: &str, verb: &str, prefix: &str) {
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    let detail = error_detail(status).expect("a detail");
    assert_eq!(detail.reason, "PermissionDenied");
    assert_eq!(
        (detail.principal.as_str(), detail.verb.as_str()),
        (principal, verb)
    );
    assert_eq!(detail.prefix, prefix);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t95_permissions_ownership_force_and_tokens() {
    let server = TestServer::start().await;
    let mut auth = AuthClient::new(server.channel().await);
    let (mut leases, mut locks) = (server.leases().await, server.locks().await);
    let (root, alice, bob) = secure(&mut auth).await;

    // Anonymous: Unauthenticated.
    let grant = GrantRequest {
        ttl_ms: 10_000,
        ..Default::default()
    };
    let anonymous = leases.grant(grant.clone()).await.unwrap_err();
    assert_eq!(anonymous.code(), Code::Unauthenticated, "{anonymous:?}");

    // alice locks under jobs/, not under db/.
    let lease = leases
        .grant(with(&alice, grant.clone()))
        .await
        .unwrap()
        .into_inner()
        .lease;
    let held = locks
        .acquire(with(&alice, acquire(lease, "jobs/x", 0)))
        .await
        .unwrap()
        .into_inner()
        .token;
    let denied = locks
        .acquire(with(&alice, acquire(lease, "db/x", 0)))
        .await
        .unwrap_err();
    assert_denied(&denied, "alice", "lock", "db/");
    assert!(
        denied
            .message()
            .contains("principal alice may not lock db/x"),
        "{denied:?}"
    );

    // bob can neither renew, revoke nor use alice's lease.
    let keep = KeepAliveRequest {
        lease,
        ..Default::default()
    };
    let renew = leases.keep_alive(with(&bob, keep)).await.unwrap_err();
    assert_eq!(renew.code(), Code::PermissionDenied, "{renew:?}");
    assert!(
        renew.message().contains("belongs to principal alice"),
        "{renew:?}"
    );
    assert_eq!(
        leases
            .revoke(with(&bob, revoke(lease)))
            .await
            .unwrap_err()
            .code(),
        Code::PermissionDenied
    );
    let used = locks
        .acquire(with(&bob, acquire(lease, "jobs/y", 0)))
        .await
        .unwrap_err();
    assert_eq!(used.code(), Code::PermissionDenied);
    leases.keep_alive(with(&alice, keep)).await.unwrap();

    // Force release needs `force`: refused for bob, and audited.
    let force = ForceReleaseRequest {
        name: "jobs/x".into(),
        expected_token: held,
        reason: "stuck".into(),
        allow_unfenced: true,
        ..Default::default()
    };
    let refused = locks
        .force_release(with(&bob, force.clone()))
        .await
        .unwrap_err();
    assert_denied(&refused, "bob", "force", "jobs/");
    eventually(
        "bob's refused force release is in the audit trail",
        Duration::from_secs(10),
        async || {
            let request = with(&root, AuditRequest::default());
            let mut stream = auth.audit(request).await.unwrap().into_inner();
            let mut found = false;
            while let Some(record) = stream.message().await.unwrap() {
                found |= record.kind == "refused"
                    && record.principal == "bob"
                    && record.verb == "force"
                    && record.name == "jobs/x";
            }
            found
        },
    )
    .await;
    // The refusal is also an event of its own kind.
    let mut watch = leasehold_proto::v1::watch_client::WatchClient::new(server.channel().await);
    let request = with(&root, EventsRequest::default());
    let mut events = watch.events(request).await.unwrap().into_inner();
    let mut audit_event = None;
    while let Some(event) = events.message().await.unwrap() {
        if event.kind == "audit" && event.owner == "bob" {
            audit_event = Some(event);
        }
    }
    let audit_event = audit_event.expect("an audit event for bob's refusal");
    assert_eq!(audit_event.lock, "jobs/x");
    assert!(
        audit_event.detail.starts_with("refused force"),
        "{audit_event:?}"
    );
    locks.force_release(with(&root, force)).await.unwrap();

    // A revoked token is refused on the next call.
    let listed = auth
        .list_tokens(with(&root, ListTokensRequest {}))
        .await
        .unwrap()
        .into_inner();
    assert!(listed
        .tokens
        .iter()
        .all(|t| !alice.contains(&t.id) || t.principal == "alice"));
    let id = listed
        .tokens
        .iter()
        .find(|t| alice.contains(&format!("_{}_", t.id)))
        .unwrap()
        .id
        .clone();
    // A session stream alice opened before the revoke renews her lease...
    let (requests, outgoing) = tokio::sync::mpsc::channel(4);
    let mut answers = locks
        .session(with(&alice, ReceiverStream::new(outgoing)))
        .await
        .unwrap()
        .into_inner();
    let renew = |seq| SessionRequest {
        seq,
        op: Some(session_request::Op::KeepAlive(KeepAliveRequest {
            lease,
            seq: 0,
            holdings_digest: 0,
        })),
    };
    requests.send(renew(1)).await.unwrap();
    let before = answers.message().await.unwrap().expect("an answer");
    assert!(
        matches!(before.result, Some(session_response::Result::KeepAlive(_))),
        "{before:?}"
    );
    auth.revoke_token(with(&root, RevokeTokenRequest { id }))
        .await
        .unwrap();
    let revoked = leases.grant(with(&alice, grant.clone())).await.unwrap_err();
    assert_eq!(revoked.code(), Code::Unauthenticated, "{revoked:?}");
    // ... and stops with the token: its next message is refused in-band.
    requests.send(renew(2)).await.unwrap();
    let after = answers.message().await.unwrap().expect("an answer");
    let Some(session_response::Result::Error(refused)) = after.result else {
        panic!("a renewal with a revoked token on an open stream: {after:?}");
    };
    assert_eq!(refused.reason, "Unauthenticated", "{refused:?}");
    assert!(
        revoked.message().contains("unknown or revoked"),
        "{revoked:?}"
    );

    // A token whose expiry has passed is refused.
    let brief = token(&mut auth, &root, "bob", 1).await;
    eventually(
        "the 1 ms token expires",
        Duration::from_secs(10),
        async || match leases.grant(with(&brief, grant.clone())).await {
            Err(status) => {
                status.code() == Code::Unauthenticated && status.message().contains("expired")
            }
            Ok(_) => false,
        },
    )
    .await;
    // bob's own token still works.
    leases.grant(with(&bob, grant)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t95_http_pages_need_observe_and_metrics_only_with_metrics_auth() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_with(dir, |config| config.metrics_auth = true).await;
    let mut auth = AuthClient::new(server.channel().await);
    let (root, alice, _bob) = secure(&mut auth).await;
    let bearer = |secret: &str| format!("authorization: Bearer {secret}\r\n");
    for path in ["/healthz", "/readyz"] {
        assert_eq!(http_get(&server.endpoint, path).await.0, 200, "{path}");
    }
    for path in ["/", "/api/locks", "/metrics"] {
        let (status, body) = http_get(&server.endpoint, path).await;
        assert_eq!(status, 401, "{path}: {body}");
        // alice may lock jobs/ only: not observe everything.
        let (status, body) = http_get_with(&server.endpoint, path, &bearer(&alice)).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("principal alice may not observe"), "{body}");
        let (status, body) = http_get_with(&server.endpoint, path, &bearer(&root)).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t95_metrics_stay_open_without_metrics_auth_and_quotas_name_the_principal() {
    let server = TestServer::start().await;
    let mut auth = AuthClient::new(server.channel().await);
    let (root, alice, _bob) = secure(&mut auth).await;
    assert_eq!(http_get(&server.endpoint, "/metrics").await.0, 200);
    assert_eq!(http_get(&server.endpoint, "/api/locks").await.0, 401);

    let quota = SetUserQuotaRequest {
        principal: "alice".into(),
        leases: Some(1),
        ..Default::default()
    };
    auth.set_user_quota(with(&root, quota)).await.unwrap();
    let mut leases = server.leases().await;
    let grant = GrantRequest {
        ttl_ms: 10_000,
        ..Default::default()
    };
    leases.grant(with(&alice, grant.clone())).await.unwrap();
    let refused = leases.grant(with(&alice, grant)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused
            .message()
            .contains("principal alice reached its leases quota (1)"),
        "{refused:?}"
    );
    let users = auth
        .list_users(with(&root, ListUsersRequest {}))
        .await
        .unwrap()
        .into_inner();
    let alice_row = users.users.iter().find(|u| u.principal == "alice").unwrap();
    assert_eq!((alice_row.quota_leases, alice_row.leases), (Some(1), 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t95_bootstrap_admin_at_formation_and_a_followed_audit_trail() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_with(dir, |config| {
        config.bootstrap_admin = Some("root".into());
    })
    .await;
    let mut auth = AuthClient::new(server.channel().await);
    eventually(
        "serve --bootstrap-admin made an admin",
        Duration::from_secs(10),
        async || {
            let status = auth
                .status(AuthStatusRequest {})
                .await
                .unwrap()
                .into_inner();
            status.admin_exists
        },
    )
    .await;
    let refused = auth
        .bootstrap(BootstrapRequest {
            principal: "eve".into(),
        })
        .await
        .unwrap_err();
    assert!(
        refused.message().contains("an admin exists already"),
        "{refused:?}"
    );

    // While auth is disabled anyone may change it: follow the trail, then
    // make a change and see it arrive on the open stream.
    let follow = AuditRequest {
        from_seq: 0,
        follow: true,
    };
    let mut trail = auth.audit(follow).await.unwrap().into_inner();
    let first = trail
        .message()
        .await
        .unwrap()
        .expect("the bootstrap record");
    assert_eq!(
        (first.kind.as_str(), first.detail.as_str()),
        ("auth_change", "bootstrap: root is admin")
    );
    auth.add_role(AddRoleRequest { role: "ops".into() })
        .await
        .unwrap();
    let next = tokio::time::timeout(Duration::from_secs(10), trail.message())
        .await
        .expect("a followed record within 10 s")
        .unwrap()
        .expect("the stream stays open");
    assert_eq!(
        (next.seq, next.detail.as_str()),
        (first.seq + 1, "role ops added")
    );
}
