//! `serve --worker-threads N` (or `LEASEHOLD_WORKER_THREADS`) sets how many
//! runtime workers serve requests, as the runtime itself reports at start
//! (by default one per core but one: the commit path has a thread of its
//! own); out of range is a usage error that names the flag and its bounds.

mod common;

use common::{Run, Server};
use std::process::Command;

/// The worker count the server's runtime reported in its start-up line.
fn reported_workers(server: &Server) -> u64 {
    let log = server.log_text();
    let line = log
        .lines()
        .find(|line| line.contains("runtime started"))
        .unwrap_or_else(|| panic!("no start-up line in the log: {log}"));
    let at = line.find("worker_threads=").expect("worker_threads field") + 15;
    common::numbers(&line[at..])[0]
}

#[test]
fn t225_worker_threads() {
    common::phase("the flag's count is the runtime's");
    let server = Server::start_with_env(&[("LEASEHOLD_WORKER_THREADS", "3")]);
    assert_eq!(reported_workers(&server), 3);
    server
        .cli(&["acquire", "t225/a", "--ttl", "10s"])
        .expect_code(0);

    common::phase("by default, one per core but one (the commit path has its own), at least one");
    let server = Server::start();
    let cores = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(reported_workers(&server), cores.saturating_sub(1).max(1));

    common::phase("out of range: a usage error naming the flag and its bounds");
    for count in ["0", "1025", "many"] {
        let args = ["serve", "--worker-threads", count];
        let mut serve = Command::new(env!("CARGO_BIN_EXE_leasehold"));
        serve.args(args).env_remove("LEASEHOLD_WORKER_THREADS");
        let run = Run::of(serve, &args);
        run.expect_code(2);
        assert!(run.stderr.contains("--worker-threads"), "{:?}", run.stderr);
        if count != "many" {
            assert!(run.stderr.contains("1..=1024"), "{:?}", run.stderr);
        }
    }
}
