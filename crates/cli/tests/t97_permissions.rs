//! Permissions with the real binary against a real `leasehold serve`:
//! `auth bootstrap` once, tokens made with `token create` and passed as
//! `--auth-token`; a principal without `lock` on `jobs/` exits 7 naming the
//! verb and the prefix; another principal's lease can be neither renewed,
//! revoked nor used (exit 7); a force release without `force` exits 7 and
//! is in `audit --json`; a revoked token and a token past its expiry are
//! refused on the next call (exit 7).

mod common;

use common::{phase, u64_of, Run, Server};
use leasehold_testkit::wait_for;
use std::time::Duration;

/// Runs `args` as the holder of `secret`.
fn as_(server: &Server, secret: &str, args: &[&str]) -> Run {
    let mut all = vec!["--auth-token", secret];
    all.extend_from_slice(args);
    server.cli(&all)
}

/// A new token's secret for `principal` (made by `root`).
fn token(server: &Server, root: &str, principal: &str, extra: &[&str]) -> String {
    let mut args = vec!["token", "create", principal];
    args.extend_from_slice(extra);
    as_(server, root, &args)
        .expect_code(0)
        .stdout
        .trim()
        .to_owned()
}

fn expect_denied(run: &Run, words: &[&str]) {
    run.expect_code(7);
    for word in words {
        assert!(
            run.stderr.contains(word),
            "{word:?} missing from {:?}",
            run.stderr
        );
    }
}

/// Whether an audit line records bob's refused force release.
fn bob_refused_force(line: &str) -> bool {
    let Ok(record) = serde_json::from_str::<serde_json::Value>(line) else {
        return false;
    };
    record["kind"] == "refused" && record["principal"] == "bob" && record["verb"] == "force"
}

#[test]
fn t97_permissions_from_the_command_line() {
    let server = Server::start();

    phase("bootstrap once, roles, users, tokens, enable");
    let root = server
        .cli(&["auth", "bootstrap", "root"])
        .expect_code(0)
        .stdout
        .trim()
        .to_owned();
    assert!(root.starts_with("lh_"), "{root}");
    let again = server.cli(&["auth", "bootstrap", "eve"]);
    assert!(
        again.code != 0 && again.stderr.contains("an admin exists already"),
        "{again:?}"
    );
    as_(&server, &root, &["role", "grant", "dev", "jobs/", "lock"]).expect_code(0);
    as_(&server, &root, &["role", "grant", "viewer", "", "observe"]).expect_code(0);
    as_(&server, &root, &["role", "grant", "viewer", "db/", "lock"]).expect_code(0);
    as_(&server, &root, &["user", "add", "alice", "--role", "dev"]).expect_code(0);
    as_(&server, &root, &["user", "add", "bob", "--role", "dev"]).expect_code(0);
    as_(
        &server,
        &root,
        &["user", "add", "carol", "--role", "viewer"],
    )
    .expect_code(0);
    let alice = token(&server, &root, "alice", &[]);
    let bob = token(&server, &root, "bob", &[]);
    let carol = token(&server, &root, "carol", &[]);
    as_(&server, &root, &["auth", "enable"]).expect_code(0);
    expect_denied(&server.cli(&["ls"]), &["auth is enabled"]);

    phase("no `lock` on jobs/: exit 7 naming principal, verb and prefix");
    let denied = as_(&server, &carol, &["acquire", "jobs/x", "--ttl", "60s"]);
    expect_denied(&denied, &["principal carol", "lock", "jobs/"]);

    phase("another principal's lease: not renewed, revoked or used");
    let held = as_(
        &server,
        &alice,
        &["acquire", "jobs/x", "--ttl", "60s", "--fenced", "--json"],
    );
    let held = held.expect_code(0).json();
    let (lease, token_x) = (
        u64_of(&held, "lease").to_string(),
        u64_of(&held, "token").to_string(),
    );
    let renew = as_(&server, &bob, &["lease", "keepalive", &lease, "--once"]);
    expect_denied(&renew, &["belongs to principal alice"]);
    expect_denied(
        &as_(&server, &bob, &["lease", "revoke", &lease]),
        &["belongs to principal alice"],
    );
    let used = as_(&server, &bob, &["acquire", "jobs/y", "--lease", &lease]);
    expect_denied(&used, &["belongs to principal alice"]);
    as_(&server, &alice, &["lease", "keepalive", &lease, "--once"]).expect_code(0);

    phase("force-release without `force`: refused and audited");
    let force = [
        "force-release",
        "jobs/x",
        "--token",
        &token_x,
        "--reason",
        "stuck",
    ];
    expect_denied(
        &as_(&server, &bob, &force),
        &["principal bob", "force", "jobs/"],
    );
    wait_for(
        "the refusal in the audit trail",
        Duration::from_secs(10),
        || {
            let audit = as_(&server, &root, &["audit", "--json"]);
            audit.stdout.lines().any(bob_refused_force).then_some(())
        },
    );

    phase("a revoked token, and a token past its expiry, are refused");
    let listed = as_(&server, &root, &["token", "ls", "--json"])
        .expect_code(0)
        .json();
    let id = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .find(|id| alice.contains(&format!("_{id}_")))
        .unwrap();
    as_(&server, &root, &["token", "revoke", &id]).expect_code(0);
    expect_denied(&as_(&server, &alice, &["ls"]), &["unknown or revoked"]);
    let brief = token(&server, &root, "carol", &["--expires-in", "1ms"]);
    wait_for(
        "the 1 ms token to be refused",
        Duration::from_secs(10),
        || {
            let run = as_(&server, &brief, &["ls"]);
            (run.code == 7 && run.stderr.contains("expired")).then_some(())
        },
    );
    as_(&server, &carol, &["ls"]).expect_code(0);
}
