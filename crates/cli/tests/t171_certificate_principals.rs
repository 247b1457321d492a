//! A client certificate names its holder for permissions (issue 13): an
//! mTLS server started with `--bootstrap-admin alice` makes the holder of
//! alice's certificate an admin, with no token anywhere; she grants `dev`
//! `lock` on `jobs/` to bob and enables auth; bob's certificate then locks
//! under `jobs/` and nowhere else (exit 7 naming principal bob), a
//! certificate whose principal has no user is refused (exit 7), and the
//! lease bob granted belongs to bob. Over HTTPS the page's data answers
//! alice's certificate and refuses bob's (403): he may observe `jobs/` only.

mod common;

use common::{command_to, phase, Run, Server};
use leasehold_testkit::tls::{https_get, Ca};
use leasehold_testkit::wait_for;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A client identity: the CA file, the certificate and its key.
struct Identity {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

/// Runs `args` against `server` presenting `who`'s certificate.
fn as_(server: &Server, who: &Identity, args: &[&str]) -> Run {
    let mut command = command_to(&server.endpoint(), args);
    command
        .env("LEASEHOLD_CACERT", &who.ca)
        .env("LEASEHOLD_CERT", &who.cert)
        .env("LEASEHOLD_KEY", &who.key);
    Run::of(command, args)
}

fn identity(ca: &Ca, ca_file: &Path, dir: &Path, principal: &str) -> Identity {
    let (cert, key) = ca.client(principal).write(dir, principal);
    Identity {
        ca: ca_file.to_owned(),
        cert,
        key,
    }
}

fn expect_denied(run: &Run, words: &[&str]) {
    run.expect_code(7);
    for word in words {
        assert!(run.stderr.contains(word), "{word:?} missing: {run:?}");
    }
}

#[test]
fn t171_a_client_certificate_is_the_principal() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("t171 CA");
    let ca_file = ca.write(dir.path(), "ca");
    let (cert, key) = ca.server().write(dir.path(), "server");
    let serve = [
        "--tls-cert",
        &cert.display().to_string(),
        "--tls-key",
        &key.display().to_string(),
        "--tls-client-ca",
        &ca_file.display().to_string(),
        "--bootstrap-admin",
        "alice",
    ]
    .map(str::to_owned);
    let alice = identity(&ca, &ca_file, dir.path(), "alice");
    let alice_env = [
        ("LEASEHOLD_CACERT", alice.ca.display().to_string()),
        ("LEASEHOLD_CERT", alice.cert.display().to_string()),
        ("LEASEHOLD_KEY", alice.key.display().to_string()),
    ];
    let server = Server::start_tls(&serve, &alice_env);
    let bob = identity(&ca, &ca_file, dir.path(), "bob");
    let mallory = identity(&ca, &ca_file, dir.path(), "mallory");

    phase("alice's certificate is admin once the bootstrap applied");
    wait_for("alice to be admin", Duration::from_secs(10), || {
        let run = as_(&server, &alice, &["role", "grant", "dev", "jobs/", "lock"]);
        (run.code == 0).then_some(())
    });
    as_(&server, &alice, &["user", "add", "bob", "--role", "dev"]).expect_code(0);
    as_(&server, &alice, &["auth", "enable"]).expect_code(0);

    phase("bob's certificate locks under jobs/ and nowhere else");
    let held = as_(
        &server,
        &bob,
        &["acquire", "jobs/a", "--ttl", "30s", "--json"],
    );
    let lease = held.expect_code(0).json()["lease"].as_u64().unwrap();
    let elsewhere = as_(&server, &bob, &["acquire", "db/a", "--ttl", "30s"]);
    expect_denied(&elsewhere, &["principal bob", "lock"]);

    phase("a certificate whose principal is no user is refused");
    let stranger = as_(&server, &mallory, &["acquire", "jobs/b", "--ttl", "30s"]);
    expect_denied(&stranger, &["mallory"]);

    phase("bob's lease belongs to bob: mallory can neither renew nor revoke it");
    let lease = lease.to_string();
    let renew = as_(&server, &mallory, &["lease", "keepalive", &lease, "--once"]);
    renew.expect_code(7);
    as_(&server, &bob, &["lease", "keepalive", &lease, "--once"]).expect_code(0);

    phase("the live page's data needs observe on every name, by certificate too");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], server.port));
    let page = |who: &str| https_get(addr, &ca, Some(&ca.client(who)), "/api/cluster");
    let (admin, body) = page("alice");
    assert_eq!(admin, 200, "{body}");
    let (worker, body) = page("bob");
    assert_eq!(worker, 403, "bob may observe jobs/ only: {body}");
    assert!(body.contains("principal bob"), "{body}");
}
