//! What the disk-fault tests (t220-t223) share: a start that must be
//! refused, `/readyz` over plain HTTP, and grants to check after a fault.
//! Included by those tests only (`#[path = "common/disk.rs"] mod disk;`,
//! next to `mod common;`), so the other tests do not build it.

#![allow(dead_code)]

use crate::common::{finish, free_port, spawn_captured, u64_of, Server, BIN};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[path = "../../../server/tests/support/prometheus.rs"]
mod prometheus;

/// Bound on a refused start.
pub const REFUSAL_MAX: Duration = Duration::from_secs(30);

/// A lock granted and acknowledged: (name, lease, token).
pub type Held = (String, u64, u64);

/// Starts `leasehold serve` on `data_dir` with `env`, expecting it to exit
/// by itself: its exit code and stderr.
pub fn refused_start(data_dir: &Path, env: &[(&str, &str)]) -> (i32, String) {
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
        .arg("--data-dir")
        .arg(data_dir)
        .envs(env.iter().copied());
    let run = finish(spawn_captured(command), "the refused start", REFUSAL_MAX);
    (run.code, run.stderr)
}

/// `GET /readyz`: the status code and the body.
pub fn readyz(server: &Server) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(prometheus::http_get(&server.endpoint(), "/readyz"))
}

/// Acquires `name` with a lease of its own (`--timeout 5s`): the grant, or
/// the failed run's exit code and stderr.
pub fn try_acquire(server: &Server, name: &str) -> Result<Held, (i32, String)> {
    let run = server.cli(&[
        "--timeout",
        "5s",
        "acquire",
        name,
        "--ttl",
        "120s",
        "--json",
    ]);
    if run.code != 0 {
        return Err((run.code, run.stderr));
    }
    let got = run.json();
    Ok((
        name.to_owned(),
        u64_of(&got, "lease"),
        u64_of(&got, "token"),
    ))
}

/// Every lock is held by its lease with its token.
pub fn assert_all_held(server: &Server, held: &[Held]) {
    for (name, lease, token) in held {
        let got = server.ok_json(&["get", name, "--json"]);
        assert_eq!(got["held"], true, "{name} lost its holder: {got}");
        assert_eq!(u64_of(&got, "lease"), *lease, "{name}: {got}");
        assert_eq!(u64_of(&got, "token"), *token, "{name}: {got}");
    }
}
