//! TLS with real `leasehold serve` processes and the CLI, certificates made
//! by the testkit's factory:
//!
//! - an mTLS client acquires and releases; `status` says `mtls`;
//! - `--cert` without `--key` is a usage error naming both;
//! - a scheme that does not match the server exits 5 with a sentence
//!   saying which, in both directions;
//! - plaintext on a non-loopback address is refused (exit 2) unless
//!   `--insecure`, which warns and shows in `status` and the page's data;
//! - SIGHUP reloads the certificate: a new connection sees the new one, a
//!   bad file keeps the old;
//! - a three-node mTLS cluster forms, fails over and keeps its locks.

mod common;

use common::cluster::{one_at_a_time, Cluster};
use common::{command_to, free_port, http_get, phase, spawn_captured, wait_for, Server, BIN};
use leasehold_testkit::tls::{Ca, Issued};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The `serve` flags of a server with `issued` certificate (written into
/// `dir`), requiring client certificates from `client_ca` if given.
fn serve_args(dir: &Path, issued: &Issued, client_ca: Option<&Path>) -> Vec<String> {
    let (cert, key) = issued.write(dir, "server");
    let mut args = vec![
        "--tls-cert".to_owned(),
        cert.display().to_string(),
        "--tls-key".to_owned(),
        key.display().to_string(),
    ];
    if let Some(ca) = client_ca {
        args.extend(["--tls-client-ca".to_owned(), ca.display().to_string()]);
    }
    args
}

/// `LEASEHOLD_CACERT` (and the client certificate `client`, if any).
fn client_env(ca: &Path, client: Option<(&Path, &Path)>) -> Vec<(&'static str, String)> {
    let mut env = vec![("LEASEHOLD_CACERT", ca.display().to_string())];
    if let Some((cert, key)) = client {
        env.push(("LEASEHOLD_CERT", cert.display().to_string()));
        env.push(("LEASEHOLD_KEY", key.display().to_string()));
    }
    env
}

#[test]
fn an_mtls_client_acquires_and_releases_and_status_says_mtls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("t170 CA");
    let ca_file = ca.write(dir.path(), "ca");
    let (cert, key) = ca.client("alice").write(dir.path(), "alice");
    let args = serve_args(dir.path(), &ca.server(), Some(&ca_file));
    let server = Server::start_tls(&args, &client_env(&ca_file, Some((&cert, &key))));

    phase("acquire and release over mTLS");
    let held = server.ok_json(&["acquire", "t170/job", "--ttl", "30s", "--json"]);
    let (lease, token) = (
        held["lease"].as_u64().unwrap(),
        held["token"].as_u64().unwrap(),
    );
    server
        .cli(&[
            "release",
            "t170/job",
            "--lease",
            &lease.to_string(),
            "--token",
            &token.to_string(),
        ])
        .expect_code(0);
    let status = server.ok_json(&["status", "--json"]);
    assert_eq!(status["transport_security"], "mtls", "{status}");

    phase("--cert without --key is a usage error naming both");
    let half = Run::of_command(
        command_to(&server.endpoint(), &["status"])
            .env("LEASEHOLD_CACERT", &ca_file)
            .arg("--cert")
            .arg(&cert),
    );
    assert_eq!(half.0, 2, "{half:?}");
    assert!(
        half.1.contains("--cert") && half.1.contains("--key"),
        "{half:?}"
    );

    phase("no client certificate: refused at the handshake, exit 5");
    let anonymous = Run::of_command(
        command_to(&server.endpoint(), &["--timeout", "2s", "status"])
            .env("LEASEHOLD_CACERT", &ca_file),
    );
    assert_eq!(anonymous.0, 5, "{anonymous:?}");
    assert!(
        anonymous
            .1
            .contains("requires a client certificate: pass --cert and --key"),
        "{anonymous:?}"
    );
}

/// (exit code, stderr) of a finished command.
#[derive(Debug)]
struct Run(i32, String);

impl Run {
    fn of_command(command: &mut Command) -> Run {
        let out = command.output().expect("run leasehold");
        Run(
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[test]
fn a_scheme_that_does_not_match_the_server_exits_5_saying_which() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("t170 CA");
    let ca_file = ca.write(dir.path(), "ca");
    let args = serve_args(dir.path(), &ca.server(), None);
    let tls = Server::start_tls(&args, &client_env(&ca_file, None));

    phase("http:// to the TLS server");
    let plain_url = tls.endpoint().replace("https://", "http://");
    let run = Run::of_command(&mut command_to(&plain_url, &["--timeout", "2s", "status"]));
    assert_eq!(run.0, 5, "{run:?}");
    let sentence = format!(
        "the server at 127.0.0.1:{} speaks TLS: use https:// and --cacert",
        tls.port
    );
    assert!(run.1.contains(&sentence), "{run:?}");

    phase("https:// to a plaintext server");
    let plain = Server::start();
    let tls_url = plain.endpoint().replace("http://", "https://");
    let run = Run::of_command(
        command_to(&tls_url, &["--timeout", "2s", "status"]).env("LEASEHOLD_CACERT", &ca_file),
    );
    assert_eq!(run.0, 5, "{run:?}");
    let sentence = format!(
        "the server at {tls_url} does not speak TLS: use {}",
        plain.endpoint()
    );
    assert!(run.1.contains(&sentence), "{run:?}");
}

#[test]
fn plaintext_off_loopback_needs_insecure_which_warns_and_shows_in_status() {
    let data = tempfile::tempdir().unwrap();
    let listen = format!("0.0.0.0:{}", free_port());
    let serve = |extra: &[&str]| {
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--listen", &listen, "--data-dir"])
            .arg(data.path())
            .args(extra)
            .stdin(Stdio::null());
        command
    };

    phase("no TLS, no --insecure: refused, saying both ways out");
    let refused = Run::of_command(&mut serve(&[]));
    assert_eq!(refused.0, 2, "{refused:?}");
    for named in ["--tls-cert", "--insecure", &listen] {
        assert!(refused.1.contains(named), "{refused:?} lacks {named}");
    }

    phase("--insecure: starts, warns, and status says insecure");
    let mut child = spawn_captured(serve(&["--insecure"]));
    let local = listen.replace("0.0.0.0", "http://127.0.0.1");
    let status = wait_for(
        "the --insecure server answers",
        Duration::from_secs(30),
        || {
            let out = command_to(&local, &["--timeout", "1s", "status", "--json"])
                .output()
                .ok()?;
            out.status.success().then(|| {
                serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("status json")
            })
        },
    );
    assert_eq!(status["transport_security"], "insecure", "{status}");
    let page = http_get(&listen.replace("0.0.0.0", "127.0.0.1"), "/api/cluster");
    assert!(
        page.contains(r#""transport_security":"insecure""#),
        "{page}"
    );
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("--insecure: serving plaintext"), "{log}");
}

#[test]
fn sighup_reloads_the_certificate_and_a_bad_file_keeps_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (Ca::new("first CA"), Ca::new("second CA"));
    let first_file = first.write(dir.path(), "first");
    let second_file = second.write(dir.path(), "second");
    let args = serve_args(dir.path(), &first.server(), None);
    let server = Server::start_tls(&args, &client_env(&first_file, None));
    let status_trusting = |ca: &Path| {
        command_to(&server.endpoint(), &["--timeout", "2s", "status"])
            .env("LEASEHOLD_CACERT", ca)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run leasehold")
            .success()
    };
    assert!(status_trusting(&first_file) && !status_trusting(&second_file));

    phase("the files are replaced and SIGHUP sent: new connections see the new certificate");
    second.server().write(dir.path(), "server");
    server.signal(libc::SIGHUP);
    wait_for(
        "a new connection sees the new certificate",
        Duration::from_secs(10),
        || status_trusting(&second_file).then_some(()),
    );
    assert!(!status_trusting(&first_file), "the old certificate is gone");

    phase("a bad certificate file: the reload fails, the node keeps serving the last good one");
    std::fs::write(dir.path().join("server.crt"), "not a certificate").unwrap();
    server.signal(libc::SIGHUP);
    wait_for(
        "the failed reload is logged",
        Duration::from_secs(10),
        || {
            server
                .log_text()
                .contains("TLS reload failed")
                .then_some(())
        },
    );
    assert!(
        status_trusting(&second_file),
        "still serving the last good certificate"
    );
    assert!(
        server.log_text().contains("server.crt"),
        "the error names the file"
    );
}

#[test]
fn a_three_node_mtls_cluster_forms_fails_over_and_keeps_its_locks() {
    let _one = one_at_a_time();
    let mut cluster = Cluster::start_tls(3);
    let (leader, term) = cluster.leader();

    phase("locks are taken over mTLS");
    let names = ["t170/a", "t170/b", "t170/c"];
    let held: Vec<(u64, u64)> = names
        .iter()
        .map(|name| {
            let held = cluster.ok_json(&["acquire", name, "--ttl", "60s", "--json"]);
            (
                held["lease"].as_u64().unwrap(),
                held["token"].as_u64().unwrap(),
            )
        })
        .collect();

    phase("the leader is killed; a new one is elected over mTLS between peers");
    cluster.kill9(leader);
    let (new_leader, new_term) = cluster.leader_after(term);
    assert_ne!(new_leader, leader);
    assert!(new_term > term);

    phase("every lock is still held by its lease and token");
    for (name, (lease, token)) in names.iter().zip(&held) {
        let lock = cluster.ok_json(&["get", name, "--json"]);
        assert_eq!(lock["lease"].as_u64(), Some(*lease), "{name}: {lock}");
        assert_eq!(lock["token"].as_u64(), Some(*token), "{name}: {lock}");
    }
    let status = cluster.ok_json(&["status", "--json"]);
    assert_eq!(status["transport_security"], "mtls", "{status}");
}
