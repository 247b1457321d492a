//! Power loss, not kill -9: a real `leasehold serve` with the test-only
//! page-cache model (`LEASEHOLD_TEST_POWER_LOSS=1`) is cut (`SIGUSR2`: every
//! log write not yet fsynced is put back, then exit 86) at seeded random
//! points of a busy workload, `CYCLES` times. Each worker, per cycle, takes
//! one lock it never releases (and renews its lease), then loops: acquire
//! its own lock of the cycle, fenced put of an increasing number, release.
//! After each restart: every acknowledged grant is held with its token and
//! its lease (so its renewals) is alive; every fenced key shows the last
//! acknowledged value or a later one. After the last one, every worker lock
//! is taken again with a token above every token acknowledged for it.

mod common;
#[path = "common/disk.rs"]
mod disk;

use common::{command_to, free_port, phase, u64_of, Run, Server};
use disk::{assert_all_held, Held};
use leasehold_server::storage::{POWER_CUT_EXIT_CODE, POWER_LOSS_ENV};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Power cuts.
const CYCLES: u64 = 5;
/// Concurrent workers.
const WORKERS: usize = 3;
/// The seed of the cut points (`T222_SEED` overrides it).
const SEED: u64 = 0x5eed_0222;
/// Bound on the exit after the signal.
const EXIT_MAX: Duration = Duration::from_secs(10);

/// What the workers got acknowledged.
#[derive(Default)]
struct Acked {
    /// Locks never released: must stay held.
    kept: Vec<Held>,
    /// Per worker lock: every token acknowledged for it.
    tokens: BTreeMap<String, Vec<u64>>,
    /// Per fenced key: the last value acknowledged.
    puts: BTreeMap<String, u64>,
}

/// A small seeded generator (xorshift64*): the cut points.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// One worker's cycle: a kept lock, then acquire / put / release of its own
/// lock until `stop` or the first failure (the cut).
fn work(endpoint: &str, cycle: u64, worker: usize, stop: &AtomicBool, acked: &Mutex<Acked>) {
    let name = format!("t222/kept-c{cycle}-w{worker}");
    let got = cli(
        endpoint,
        &[
            "--timeout",
            "5s",
            "acquire",
            &name,
            "--ttl",
            "120s",
            "--json",
        ],
    );
    if got.code != 0 {
        return;
    }
    let got = got.json();
    let kept = (name, u64_of(&got, "lease"), u64_of(&got, "token"));
    let kept_lease = kept.1.to_string();
    acked.lock().unwrap().kept.push(kept);
    // Names of this cycle: a lock taken just before a cut stays held until
    // its lease ends; the last phase takes every one of them again.
    let (lock, key) = (
        format!("t222/w{worker}-c{cycle}"),
        format!("t222/k{worker}-c{cycle}"),
    );
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let renewed = cli(
            endpoint,
            &[
                "--timeout",
                "3s",
                "lease",
                "keepalive",
                &kept_lease,
                "--once",
            ],
        );
        let Some((lease, token)) = acquire_waiting(endpoint, &lock) else {
            return;
        };
        let before = acked.lock().unwrap().tokens.get(&lock).cloned();
        let highest = before.iter().flatten().max().copied().unwrap_or(0);
        assert!(token > highest, "{lock}: token {token} not above {highest}");
        acked
            .lock()
            .unwrap()
            .tokens
            .entry(lock.clone())
            .or_default()
            .push(token);
        let value = cycle * 1_000_000 + i;
        let put = cli(
            endpoint,
            &[
                "--timeout",
                "3s",
                "fenced",
                "put",
                &key,
                &value.to_string(),
                "--lock",
                &lock,
                "--token",
                &token.to_string(),
            ],
        );
        if put.code != 0 || renewed.code != 0 {
            return;
        }
        acked.lock().unwrap().puts.insert(key.clone(), value);
        let (lease, token) = (lease.to_string(), token.to_string());
        let released = cli(
            endpoint,
            &[
                "--timeout",
                "3s",
                "release",
                &lock,
                "--lease",
                &lease,
                "--token",
                &token,
            ],
        );
        if released.code != 0 {
            return;
        }
    }
}

/// Acquires a worker's lock with a short lease, waiting for it: after a cut
/// it may still be held by an acquire whose release was never
/// acknowledged, until that lease expires. (lease, token), or None.
fn acquire_waiting(endpoint: &str, lock: &str) -> Option<(u64, u64)> {
    let args = [
        "--timeout",
        "20s",
        "acquire",
        lock,
        "--ttl",
        "5s",
        "--wait",
        "15s",
        "--json",
    ];
    let run = cli(endpoint, &args);
    if run.code != 0 {
        return None;
    }
    let got = run.json();
    Some((u64_of(&got, "lease"), u64_of(&got, "token")))
}

/// Runs a `leasehold` command against `endpoint`.
fn cli(endpoint: &str, args: &[&str]) -> Run {
    Run::of(command_to(endpoint, args), args)
}

/// Every fenced key shows its last acknowledged value or a later one.
fn assert_puts_kept(server: &Server, puts: &BTreeMap<String, u64>) {
    for (key, value) in puts {
        let got = server.ok_json(&["fenced", "get", key, "--json"]);
        let stored: u64 = got["value"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        assert!(
            stored >= *value,
            "{key}: {got} is older than the acknowledged {value}"
        );
    }
}

#[test]
fn acknowledged_writes_survive_power_cuts() {
    let seed = std::env::var("T222_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    eprintln!("seed {seed}");
    let mut rng = seed | 1;
    let data = tempfile::tempdir().unwrap();
    let env = [(POWER_LOSS_ENV, "1")];
    let acked = Mutex::new(Acked::default());
    for cycle in 0..CYCLES {
        phase(&format!("cycle {cycle}: start, check, load, cut"));
        let mut server = Server::start_in_with_env(data.path(), free_port(), &env);
        {
            let acked = acked.lock().unwrap();
            assert_all_held(&server, &acked.kept);
            assert_puts_kept(&server, &acked.puts);
            let _ = u64_of(&server.ok_json(&["status", "--json"]), "node_id");
        }
        let cut_after = Duration::from_millis(300 + next(&mut rng) % 1_200);
        let stop = AtomicBool::new(false);
        let endpoint = server.endpoint();
        std::thread::scope(|scope| {
            for worker in 0..WORKERS {
                let (endpoint, stop, acked) = (endpoint.as_str(), &stop, &acked);
                scope.spawn(move || work(endpoint, cycle, worker, stop, acked));
            }
            std::thread::sleep(cut_after); // the seeded cut point, not a wait
            server.signal(libc::SIGUSR2);
            let status = server
                .wait_exit(EXIT_MAX)
                .expect("the node exits on the cut");
            assert_eq!(status.code(), Some(POWER_CUT_EXIT_CODE), "{status}");
            stop.store(true, Ordering::Relaxed);
        });
        let log = server.log_text();
        let cut_line = log.lines().find(|line| line.starts_with("power cut"));
        eprintln!("{}", cut_line.expect("no cut was made"));
        let acked = acked.lock().unwrap();
        eprintln!(
            "cycle {cycle}: cut after {cut_after:?}; {} kept locks, {} tokens, {} keys so far",
            acked.kept.len(),
            acked.tokens.values().map(Vec::len).sum::<usize>(),
            acked.puts.len()
        );
    }
    phase("a last restart: everything acknowledged is there");
    let server = Server::start_in_with_env(data.path(), free_port(), &env);
    let acked = acked.lock().unwrap();
    assert!(acked.kept.len() >= WORKERS, "too little was acknowledged");
    assert_all_held(&server, &acked.kept);
    assert_puts_kept(&server, &acked.puts);
    for (lock, tokens) in &acked.tokens {
        let highest = tokens.iter().max().unwrap();
        let (_, token) = acquire_waiting(&server.endpoint(), lock).expect("the lock is free again");
        assert!(
            token > *highest,
            "{lock}: token {token} not above {highest}"
        );
    }
}
