//! Exit codes and errors as the table says (crates/cli/src/exit.rs, README
//! "Exit codes"), with real processes: a closed stdout ends a command
//! quietly; transport failures, a queued acquire whose server dies and a
//! port that is not Leasehold exit 5; Ctrl-C in `acquire --wait` exits 130;
//! `bench` follows the table; `--json` failures print a JSON error on
//! stdout; durations take Go's syntax and their bounds are checked locally.

mod common;

use common::{command_to, finish, free_port, phase, wait_for, Run, Server};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Bound on any one background command here.
const LIMIT: Duration = Duration::from_secs(20);

/// A pipe whose read end is already closed: a reader that went away.
fn closed_pipe() -> OwnedFd {
    let mut fds = [0; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe(2)");
    // SAFETY: both descriptors were just created and are owned here.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    write
}

/// Runs `command` with stdout on a closed pipe: it must end without a
/// panic, by SIGPIPE (as `cat` would) or with code 0.
fn assert_quiet_on_closed_stdout(mut command: Command, what: &str) {
    command
        .stdout(Stdio::from(closed_pipe()))
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn leasehold");
    let status = wait_for(what, LIMIT, || child.try_wait().ok().flatten());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert!(!stderr.contains("panicked"), "{what} panicked: {stderr}");
    assert!(
        status.code() == Some(0),
        "{what} ended with {status:?}: {stderr}"
    );
}

/// Waits until `lock` has `n` waiters.
fn wait_for_waiters(server: &Server, lock: &str, n: u64) {
    wait_for(&format!("{n} waiter(s) on {lock}"), LIMIT, || {
        let got = server.cli(&["get", lock, "--json"]);
        (got.code == 0 && got.json()["waiters"].as_u64() == Some(n)).then_some(())
    });
}

/// A TCP port that answers anything with an HTTP/1.1 response: a web
/// server, not a Leasehold (HTTP/2 gRPC) server.
fn http1_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 1024];
                // Answer once the call is on a stream (as a web server
                // answers once it has a request): the client then reports
                // the garbage as a protocol error on that call.
                read_until_http2_headers(&mut stream);
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
                // Keep the connection open, as a web server does, until the
                // client hangs up (or the read timeout).
                while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    port
}

/// Reads an HTTP/2 client's preface and frames until its first HEADERS
/// frame (a request), or until the client hangs up.
fn read_until_http2_headers(stream: &mut std::net::TcpStream) {
    const PREFACE_LEN: usize = 24;
    const FRAME_HEADER_LEN: usize = 9;
    const HEADERS: u8 = 0x1;
    let mut preface = [0u8; PREFACE_LEN];
    if stream.read_exact(&mut preface).is_err() {
        return;
    }
    let mut header = [0u8; FRAME_HEADER_LEN];
    while stream.read_exact(&mut header).is_ok() {
        if header[3] == HEADERS {
            return;
        }
        let len = u32::from_be_bytes([0, header[0], header[1], header[2]]) as usize;
        let mut payload = vec![0u8; len];
        if stream.read_exact(&mut payload).is_err() {
            return;
        }
    }
}

#[test]
fn t201_closed_stdout_is_a_quiet_exit() {
    let server = Server::start();
    server
        .cli(&["acquire", "pipe/a", "--ttl", "30s"])
        .expect_code(0);
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["events"],
        &["ls"],
        &["get", "pipe/a"],
        &["lease", "grant", "--ttl", "5s"],
        &["lease", "ls"],
        &[
            "bench",
            "--workload",
            "uncontended",
            "--clients",
            "1",
            "--seconds",
            "1",
        ],
    ] {
        phase(&format!("leasehold {} into a closed pipe", args.join(" ")));
        assert_quiet_on_closed_stdout(server.command(args), &args.join(" "));
    }
}

#[test]
fn t201_unreachable_and_foreign_endpoints_exit_5() {
    phase("a port that speaks HTTP/1.1 is not a Leasehold server: exit 5, said so");
    let foreign = format!("http://127.0.0.1:{}", http1_server());
    let run = Run::of(command_to(&foreign, &["status"]), &["status"]);
    run.expect_code(5);
    assert!(run.stderr.contains("not a Leasehold server"), "{run:?}");
    let run = Run::of(
        command_to(&foreign, &["acquire", "x", "--json"]),
        &["acquire", "x", "--json"],
    );
    run.expect_code(5);
    assert_eq!(run.json()["error"]["reason"], "Unavailable", "{run:?}");
    assert!(run.json()["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("not a Leasehold server")));

    phase("bench: nothing listening exits 5, bad flags exit 2");
    let nobody = format!("http://127.0.0.1:{}", free_port());
    let bench = [
        "bench",
        "--workload",
        "uncontended",
        "--clients",
        "1",
        "--seconds",
        "1",
    ];
    Run::of(command_to(&nobody, &bench), &bench).expect_code(5);
    let bad = ["bench", "--workload", "uncontended", "--clients", "0"];
    let run = Run::of(command_to(&nobody, &bad), &bad);
    run.expect_code(2);
    assert!(run.stderr.contains("--clients"), "{run:?}");

    phase("an https:// endpoint without --cacert is refused with a sentence (usage)");
    let https = format!("https://127.0.0.1:{}", free_port());
    let run = Run::of(command_to(&https, &["status"]), &["status"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--cacert"), "{run:?}");
}

#[test]
fn t201_queued_acquire_exits_5_when_its_server_dies_and_130_on_ctrl_c() {
    let mut server = Server::start();
    server
        .cli(&["acquire", "q/a", "--ttl", "60s"])
        .expect_code(0);

    phase("Ctrl-C while queued: exit 130, and the fresh lease is revoked");
    let leases_before = server.ok_json(&["status", "--json"])["leases"].as_u64();
    let waiter = server.spawn(&["acquire", "q/a", "--wait", "60s"]);
    let pid = waiter.id() as i32;
    wait_for_waiters(&server, "q/a", 1);
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let run = finish(waiter, "interrupted acquire", LIMIT);
    run.expect_code(130);
    assert!(run.stderr.contains("interrupted"), "{run:?}");
    wait_for("the waiter's lease to be revoked", LIMIT, || {
        let status = server.ok_json(&["status", "--json"]);
        (status["leases"].as_u64() == leases_before).then_some(())
    });

    phase("the server dies under a queued acquire: exit 5");
    let waiter = server.spawn(&["acquire", "q/a", "--wait", "60s", "--json"]);
    wait_for_waiters(&server, "q/a", 1);
    server.kill9();
    let run = finish(waiter, "orphaned acquire", LIMIT);
    run.expect_code(5);
    assert_eq!(run.json()["error"]["reason"], "Unavailable", "{run:?}");
}

#[test]
fn t201_json_errors_and_durations() {
    let server = Server::start();

    phase("--json failures print {error:{reason,message}} on stdout too");
    server
        .cli(&["acquire", "j/a", "--ttl", "30s"])
        .expect_code(0);
    let run = server.cli(&["acquire", "j/a", "--json"]);
    run.expect_code(3);
    let error = &run.json()["error"];
    assert_eq!(error["reason"], "Busy", "{run:?}");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("j/a")));
    assert!(run.stderr.contains("busy"), "{run:?}");
    let run = server.cli(&["release", "j/a", "--lease", "1", "--token", "99", "--json"]);
    run.expect_code(4);
    assert_eq!(run.json()["error"]["reason"], "NotHolder", "{run:?}");

    phase("Go's duration syntax");
    let got = server.ok_json(&["acquire", "j/b", "--ttl", "1.5s", "--json"]);
    assert_eq!(got["ttl_ms"], 1500, "{got}");
    let got = server.ok_json(&["lease", "grant", "--ttl", "1h30m", "--json"]);
    assert_eq!(got["ttl_ms"], 5_400_000, "{got}");

    phase("zero and out-of-range durations are refused locally, with a sentence");
    let run = server.cli(&["acquire", "j/c", "--ttl", "999999h"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("ttl 999999h is longer than the maximum, 24h")
            && run.stderr.contains("TTL_MS_MAX"),
        "{run:?}"
    );
    let run = server.cli(&["status", "--timeout", "0s"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--timeout"), "{run:?}");
    let run = server.cli(&["acquire", "j/c", "--wait", "2h"]);
    run.expect_code(2);
    assert!(run.stderr.contains("WAIT_MS_MAX"), "{run:?}");
    let listed = server.ok_json(&["ls", "--json"]).to_string();
    assert!(
        !listed.contains("j/c"),
        "a refused acquire left a lock: {listed}"
    );
}

#[test]
fn t201_a_hung_endpoint_does_not_stop_failover() {
    let server = Server::start();
    // Bound and listening, never accepted or answered: the kernel completes
    // the TCP handshake, and then nothing (a hung process).
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let silent_url = format!("http://{}", silent.local_addr().expect("addr"));
    let endpoints = format!("{silent_url},{}", server.endpoint());

    phase("--endpoints silent,live: the call reaches live after the connect timeout");
    let started = std::time::Instant::now();
    let args = ["acquire", "hung/a", "--ttl", "30s", "--json"];
    let run = Run::of(command_to(&endpoints, &args), &args);
    eprintln!("acquire past a hung endpoint took {:?}", started.elapsed());
    run.expect_code(0);
    assert_eq!(run.json()["lock"], "hung/a", "{run:?}");
    let args = ["status", "--json"];
    Run::of(command_to(&endpoints, &args), &args).expect_code(0);
    drop(silent);
}
