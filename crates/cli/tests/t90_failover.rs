//! Leader failover in a three-node cluster (docs/DESIGN.md §2.1, §2.2, §2.5, §6).
//!
//! - **Leader killed under load**: four `leasehold-client` workers in this
//!   process acquire, write to a fenced resource and release two locks in a
//!   loop, and one client holds a long-lived lease and lock; the leader is
//!   killed with SIGKILL. A new leader must be reported at a higher term
//!   within the election bound; every write the resources accepted must
//!   carry a token strictly above the lock's previous accepted one, and
//!   none may be refused (a refusal means two holders overlapped); tokens
//!   granted after the failover are above every token granted before; the
//!   replicated state agrees with the last grant; and the long-lived lease
//!   survives: its guard's `fence()` never fails and the lock is still held
//!   with the same token.
//! - **Crashed holder across a failover**: a CLI `acquire --ttl 4s` (never
//!   renewed: a crashed holder) holds a lock, a library client queues for
//!   it, and the leader is killed at ttl/2. The waiter must be granted the
//!   lock no sooner than the ttl after the holder's grant and within
//!   ttl + 2 × election timeout (+ slack).
//!
//! The workload (`common/cluster/workload.rs`) runs on a tokio runtime
//! owned by the test; the test's own thread drives the cluster (status
//! polls, kills) with the blocking helpers of `common/cluster.rs`. Measured
//! numbers are printed as `measured:` lines.

mod common;

use common::cluster::workload::{hold_kept, watch, Shape, Watch, Workload};
use common::cluster::{one_at_a_time, runtime, Cluster};
use common::{phase, u64_of, wait_for};
use leasehold_client::{CancellationToken, Client, Error, Lease, LockGuard};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// openraft settings of the server (crates/server/src/raft/node.rs).
const ELECTION_TIMEOUT_MAX: Duration = Duration::from_millis(1_000);
const HEARTBEAT: Duration = Duration::from_millis(100);
/// openraft 0.9 timers derived from those: a follower that knew a leader
/// waits `leader_lease` (= election timeout max) *plus* its own election
/// timeout (drawn once per process from 500..1000 ms) after the last
/// heartbeat before it campaigns, checking every tick (heartbeat × 3/2).
const LEADER_LEASE: Duration = ELECTION_TIMEOUT_MAX;
const TICK: Duration = Duration::from_millis(150);
/// Slack for a loaded two-core machine (process wake-ups, fsyncs).
const SLACK: Duration = Duration::from_millis(500);
/// Bound on kill → a survivor reports a new leader: the last heartbeat,
/// leader lease + election timeout + a tick for the first round, one more
/// election timeout + tick in case the first round's vote splits (two
/// survivors campaigning at once, as seen in practice), and slack.
const ELECTION_BOUND: Duration = Duration::from_millis(
    (HEARTBEAT.as_millis()
        + LEADER_LEASE.as_millis()
        + 2 * (ELECTION_TIMEOUT_MAX.as_millis() + TICK.as_millis())
        + SLACK.as_millis()) as u64,
);
/// The client library's longest retry delay (`BackoffPolicy::default().max`):
/// a waiter whose call broke with the leader may learn of its grant this
/// much after the server made it.
const CLIENT_BACKOFF_MAX: Duration = Duration::from_secs(2);

/// The workload: four workers, each with a 3 s lease, on two locks.
const SHAPE: Shape = Shape {
    workers: 4,
    locks: 2,
    ttl: Duration::from_secs(3),
    wait: Duration::from_secs(2),
    prefix: "failover/load",
};
/// Grants wanted before the kill, and after the new leader is known.
const GRANTS_BEFORE: usize = 20;
const GRANTS_AFTER: usize = 20;
/// Bound on reaching either count.
const LOAD_LIMIT: Duration = Duration::from_secs(25);
/// The long-lived lease: its keep-alive stream breaks with the leader and
/// must reconnect within its local validity (last acknowledged send +
/// ttl − ttl/10). That takes the election (≈ 2 s, 3+ s if a vote splits)
/// plus the client's retry delays, which keep growing (to 2 s) while the
/// followers still name the dead leader: renewed every second, a 10 s
/// lease has ≥ 8 s for it.
const KEPT_TTL: Duration = Duration::from_secs(10);
const KEPT_INTERVAL: Duration = Duration::from_secs(1);
const KEPT_LOCK: &str = "failover/kept";

/// Kills the leader and polls the survivors until one reports a leader
/// other than `old` at a term above `old_term`. Returns when it killed, and
/// when the new leader was seen (an upper bound: the poll round's end).
fn kill_and_time_election(cluster: &mut Cluster, old: u64, old_term: u64) -> (Instant, Instant) {
    let killed_at = Instant::now();
    cluster.kill9(old);
    let (seen_at, leader, term) = wait_for(
        "a survivor to report a new leader",
        10 * ELECTION_BOUND,
        || {
            let statuses = cluster.statuses();
            let found = statuses
                .values()
                .find(|s| s.leader != 0 && s.leader != old && s.term > old_term)?;
            Some((Instant::now(), found.leader, found.term))
        },
    );
    let elected = seen_at - killed_at;
    eprintln!(
        "measured: election: node {leader} reported leading at term {term} (was node {old} at \
         term {old_term}; {} round(s)) {} ms after SIGKILL; bound {} ms",
        term - old_term,
        elected.as_millis(),
        ELECTION_BOUND.as_millis(),
    );
    assert!(
        elected <= ELECTION_BOUND,
        "the new leader was reported {elected:?} after the kill; bound {ELECTION_BOUND:?}"
    );
    (killed_at, seen_at)
}

#[test]
fn t90_leader_killed_under_load() {
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start(3);
    let (old, old_term) = cluster.leader();
    let endpoints = cluster.endpoint_list();
    let rt = runtime();
    let stop = CancellationToken::new();

    phase("a client holds a long-lived lease and lock, and watches fence()");
    let (kept_lease, kept) = rt.block_on(hold_kept(&endpoints, KEPT_TTL, KEPT_INTERVAL, KEPT_LOCK));
    let kept_token = kept.token().0;
    let watched = Arc::new(Mutex::new(Watch::default()));
    let watcher = rt.spawn(watch(kept.handle(), watched.clone(), stop.clone()));

    phase("four workers acquire, write and release two locks");
    let mut load = Workload::start(&rt, SHAPE, &endpoints);
    wait_for("grants before the kill", LOAD_LIMIT, || {
        (load.grants_where(|_| true).len() >= GRANTS_BEFORE).then_some(())
    });

    phase("SIGKILL the leader; time the election");
    let killed_wall_ms = wall_ms();
    let (killed_at, elected_at) = kill_and_time_election(&mut cluster, old, old_term);
    let (new, new_term) = cluster.leader();
    assert_ne!(new, old, "the killed node is still named leader");
    assert!(
        new_term > old_term,
        "term {new_term} after failover, {old_term} before"
    );

    phase("the workload goes on under the new leader");
    wait_for("grants after the failover", LOAD_LIMIT, || {
        let after = load.grants_where(|g| g.asked > elected_at).len();
        (after >= GRANTS_AFTER).then_some(())
    });
    // Without a renewal through the new leader, the kept lease's local
    // validity ends before kill + ttl: an Ok past that proves it renewed.
    wait_for(
        "the kept lock to outlive its ttl since the kill",
        KEPT_TTL * 2,
        || {
            let seen = watched.lock().expect("watch");
            let (failed, last_ok) = (seen.failed.clone(), seen.last_ok);
            drop(seen);
            assert!(failed.is_none(), "the kept lock was lost: {failed:?}");
            last_ok.filter(|at| *at > killed_at + KEPT_TTL)
        },
    );
    load.stop(&rt);
    stop.cancel();
    rt.block_on(watcher).expect("the watcher panicked");

    phase("the long-lived lease survived: fence() never failed, same holder and token");
    let seen = watched.lock().expect("watch");
    assert!(
        seen.failed.is_none(),
        "the kept lock was lost: {:?}",
        seen.failed
    );
    assert!(kept.fence().is_ok(), "fence() fails after the failover");
    let got = cluster.ok_json(&["get", KEPT_LOCK, "--json"]);
    assert_eq!(u64_of(&got, "token"), kept_token, "{got}");
    assert_eq!(u64_of(&got, "lease"), kept_lease.id().0, "{got}");
    let lease = cluster.ok_json(&["lease", "get", &kept_lease.id().0.to_string(), "--json"]);
    assert!(
        u64_of(&lease, "renewed_unix_ms") > killed_wall_ms,
        "the kept lease was not renewed after the kill: {lease}"
    );

    phase("the fenced resources saw one holder at a time");
    load.check_fencing();

    phase("tokens granted after the failover are above every token before");
    let before = load.grants_where(|g| g.granted < killed_at);
    let after = load.grants_where(|g| g.asked > elected_at);
    let highest_before = before.iter().map(|g| g.token).max().expect("grants before");
    let lowest_after = after.iter().map(|g| g.token).min().expect("grants after");
    assert!(
        lowest_after > highest_before,
        "a grant after the failover has token {lowest_after}, not above {highest_before}"
    );

    phase("the replicated state agrees with the last grant of each lock");
    load.check_state(&cluster);

    let first_after_kill = load
        .grants_where(|g| g.asked > killed_at)
        .iter()
        .map(|g| g.granted - killed_at)
        .min();
    eprintln!(
        "measured: {} grants ({} before the kill, {} asked after the new leader was known); \
         the first asked after SIGKILL was granted {} ms after it; failed calls {:?}; kept \
         lock fence() Ok {} times, never failed",
        load.grants_where(|_| true).len(),
        before.len(),
        after.len(),
        first_after_kill.map_or(0, |d| d.as_millis()),
        load.errors(),
        seen.oks,
    );
    drop(seen);
    rt.block_on(async move {
        kept.release().await.expect("release the kept lock");
        drop(kept_lease);
    });
}

/// Now on the wall clock in ms: the servers stamp grants with theirs, and
/// on one machine all share it (used only to compare with those stamps).
fn wall_ms() -> u64 {
    let since = std::time::UNIX_EPOCH
        .elapsed()
        .expect("wall clock after 1970");
    since.as_millis() as u64
}

#[test]
fn t90_crashed_holder_is_replaced_across_a_failover() {
    const TTL: Duration = Duration::from_secs(4);
    const WAITER_TTL: Duration = Duration::from_secs(10);
    const WAIT: Duration = Duration::from_secs(20);
    const LOCK: &str = "failover/crashed-holder";
    let _serial = one_at_a_time();
    let mut cluster = Cluster::start(3);
    let (old, old_term) = cluster.leader();
    let endpoints = cluster.endpoint_list();
    let rt = runtime();

    phase("a holder acquires with a 4 s lease it never renews (a crashed holder)");
    let (started, started_wall_ms) = (Instant::now(), wall_ms());
    let holder = cluster.ok_json(&["acquire", LOCK, "--ttl", "4s", "--json"]);
    let (holder_token, holder_lease) = (u64_of(&holder, "token"), u64_of(&holder, "lease"));
    let lease = cluster.ok_json(&["lease", "get", &holder_lease.to_string(), "--json"]);
    let holder_granted_ms = u64_of(&lease, "granted_unix_ms");

    phase("a library client queues for the lock");
    let (sender, granted) = std::sync::mpsc::channel();
    rt.spawn(async move {
        let client = Client::connect(&endpoints).await.expect("connect");
        let lease = client
            .lease(WAITER_TTL)
            .owner("waiter")
            .grant()
            .await
            .expect("grant");
        let acquired = lease.lock(LOCK).wait(WAIT).fenced(true).acquire().await;
        let _ = sender.send((Instant::now(), wall_ms(), acquired, lease));
    });
    wait_for("the waiter to be queued", TTL / 2, || {
        let got = cluster.ok_json(&["get", LOCK, "--json"]);
        assert_eq!(u64_of(&got, "token"), holder_token, "{got}");
        (got["waiters"] == 1).then_some(())
    });
    let kill_at = started + TTL / 2;
    assert!(Instant::now() < kill_at, "the waiter queued after ttl/2");
    std::thread::sleep(kill_at - Instant::now());

    phase("SIGKILL the leader at half the holder's ttl");
    kill_and_time_election(&mut cluster, old, old_term);
    // docs/DESIGN.md §2.5: free within ttl + 2 × election timeout.
    let bound = TTL + 2 * ELECTION_TIMEOUT_MAX + SLACK;
    let left =
        (started + bound + CLIENT_BACKOFF_MAX + SLACK).saturating_duration_since(Instant::now());
    let (seen_at, seen_wall_ms, acquired, waiter_lease): (
        Instant,
        u64,
        Result<LockGuard, Error>,
        Lease,
    ) = granted
        .recv_timeout(left)
        .expect("the waiter got no answer");
    let guard = acquired.expect("the waiter's acquire failed");
    let seen_after = seen_at - started;

    phase("the servers granted it after the ttl, within ttl + 2 election timeouts");
    assert!(
        guard.token().0 > holder_token,
        "waiter token {} not above the holder's {holder_token}",
        guard.token().0
    );
    let got = cluster.ok_json(&["get", LOCK, "--json"]);
    assert_eq!(u64_of(&got, "token"), guard.token().0, "{got}");
    assert_eq!(u64_of(&got, "lease"), waiter_lease.id().0, "{got}");
    // The servers' own stamps, on the one wall clock of this machine: the
    // holder's lease was granted at `holder_granted_ms`, the waiter's grant
    // proposed at `acquired_unix_ms`.
    let server_granted_ms = u64_of(&got, "acquired_unix_ms");
    let gap = Duration::from_millis(server_granted_ms.saturating_sub(holder_granted_ms));
    assert!(
        gap >= TTL,
        "the servers granted the waiter {gap:?} after the holder's lease: before its ttl {TTL:?}"
    );
    assert!(
        gap <= bound,
        "the servers granted the waiter {gap:?} after the holder's lease; bound {bound:?}"
    );
    // The waiter hears of it once its broken call reaches the new leader:
    // up to one client retry delay later.
    assert!(
        seen_after <= bound + CLIENT_BACKOFF_MAX,
        "the waiter learned of its grant {seen_after:?} after the holder's acquire began"
    );
    eprintln!(
        "measured: crashed holder: ttl {} ms, leader killed at {} ms; servers granted the \
         waiter {} ms after the holder's lease grant (bound {} ms = ttl + 2 × {} ms + {} ms \
         slack); the waiter saw it {} ms after the holder's acquire began, {} ms after the \
         servers' grant",
        TTL.as_millis(),
        (kill_at - started).as_millis(),
        gap.as_millis(),
        bound.as_millis(),
        ELECTION_TIMEOUT_MAX.as_millis(),
        SLACK.as_millis(),
        seen_after.as_millis(),
        seen_wall_ms.saturating_sub(server_granted_ms),
    );
    eprintln!(
        "measured: holder's lease granted {} ms after the test's acquire began",
        holder_granted_ms.saturating_sub(started_wall_ms)
    );
    rt.block_on(async move {
        guard.release().await.expect("release");
        drop(waiter_lease);
    });
}
