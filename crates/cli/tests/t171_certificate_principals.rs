//! A client certificate names its holder for permissions (issue 13): an
//! mTLS server started with `--bootstrap-admin alice` makes the holder of
//! alice's certificate an admin, with no token anywhere; she grants `dev`
//! `lock` on `jobs/` to bob and enables auth; bob's certificate then locks
//! under `jobs/` and nowhere else (exit 7 naming principal bob), a
//! certificate whose principal has no user is refused (exit 7), and the
//! lease bob granted belongs to bob. Over HTTPS the page's data answers
//! alice's certificate and refuses bob's (403): he may observe `jobs/` only.
//!
//! A certificate principal holds at most its share of connections (issue
//! 20): with `--connections-per-principal 2`, alice's two open watches fill
//! it; her next connection is refused naming `CONNECTIONS_PER_PRINCIPAL_MAX`
//! (exit 5) while bob's is served, and once a watch ends she is served.

mod common;

use common::{command_to, fill_share, phase, spawn_captured, Run, Server};
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

/// An mTLS server (its certificate and client CA from `ca`) started with
/// `extra` serve flags; its own commands run as alice, whose identity is
/// returned.
fn mtls_server(ca: &Ca, ca_file: &Path, dir: &Path, extra: &[&str]) -> (Server, Identity) {
    let (cert, key) = ca.server().write(dir, "server");
    let mut serve = vec![
        "--tls-cert".to_owned(),
        cert.display().to_string(),
        "--tls-key".to_owned(),
        key.display().to_string(),
        "--tls-client-ca".to_owned(),
        ca_file.display().to_string(),
    ];
    serve.extend(extra.iter().map(|flag| (*flag).to_owned()));
    let alice = identity(ca, ca_file, dir, "alice");
    let alice_env = [
        ("LEASEHOLD_CACERT", alice.ca.display().to_string()),
        ("LEASEHOLD_CERT", alice.cert.display().to_string()),
        ("LEASEHOLD_KEY", alice.key.display().to_string()),
    ];
    (Server::start_tls(&serve, &alice_env), alice)
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
    let admin = ["--bootstrap-admin", "alice"];
    let (server, alice) = mtls_server(&ca, &ca_file, dir.path(), &admin);
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

#[test]
fn t171_a_certificate_principal_holds_at_most_its_share_of_connections() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("t171 CA");
    let ca_file = ca.write(dir.path(), "ca");
    let limit = ["--connections-per-principal", "2"];
    let (server, alice) = mtls_server(&ca, &ca_file, dir.path(), &limit);
    let bob = identity(&ca, &ca_file, dir.path(), "bob");
    let watch = || {
        let mut command = command_to(&server.endpoint(), &["events", "--follow"]);
        command
            .env("LEASEHOLD_CACERT", &alice.ca)
            .env("LEASEHOLD_CERT", &alice.cert)
            .env("LEASEHOLD_KEY", &alice.key);
        spawn_captured(command)
    };
    let status = |who: &Identity| as_(&server, who, &["status", "--timeout", "2s"]);

    phase("alice's two watches fill her share of connections");
    let wait = Duration::from_secs(30);
    let (mut watches, refused) =
        fill_share("alice's watches filling her share", wait, 2, watch, || {
            let run = status(&alice);
            (run.code == 5).then_some(run)
        });
    for word in [
        "principal alice",
        "CONNECTIONS_PER_PRINCIPAL_MAX (2)",
        "--connections-per-principal",
    ] {
        assert!(
            refused.stderr.contains(word),
            "{word:?} in {}",
            refused.stderr
        );
    }
    status(&bob).expect_code(0);

    phase("a watch ends: alice is served again");
    let mut ended = watches.pop().expect("a watch");
    ended.kill().expect("end a watch");
    ended.wait().expect("reaped");
    wait_for("alice served again", wait, || {
        (status(&alice).code == 0).then_some(())
    });
    for mut watch in watches {
        let _ = watch.kill();
        let _ = watch.wait();
    }
}
