//! The pause drill of `t70_client_drills` against a real database: a real
//! server, two client processes, one SIGSTOPped past its ttl then resumed
//! and forced to attempt its write. The protected resource is a PostgreSQL
//! table written only through `leasehold_fence::postgres::fenced_transaction`,
//! so the refusal comes from the adapter, in the database: the forced write
//! is `Stale` (presented = worker 1's token, highest = worker 2's), its
//! insert is rolled back, the table holds worker 1's rows from before the
//! pause and worker 2's rows, and `rejections()` lists exactly that refusal.
//!
//! Workers are this test binary re-executed, as in `t70_client_drills` (see
//! its module doc); `common/drill.rs` passes them the table in
//! `LEASEHOLD_DRILL_POSTGRES_*`.
//!
//! Where the database is: `LEASEHOLD_TEST_POSTGRES`, which `.ci/run` exports.
//! Without it the test fails in CI (`CI=true`) and elsewhere uses the
//! database `.ci/run` creates, like the adapter's own tests
//! (`crates/fence/tests/postgres.rs`). An unreachable server fails the
//! test; nothing is skipped. The table and the fence's resource name are
//! unique to each run, so re-runs against the same database start clean.

mod common;

use common::drill::{Mode, PostgresTable, Worker, WorkerSpec};
use common::{phase, Server};
use leasehold_fence::postgres;
use leasehold_testkit::postgres::dsn;
use leasehold_testkit::unique;
use std::time::{Duration, Instant};

/// Bound on a worker's start: process, connect, grant, acquire (queued
/// acquires add their wait).
const START: Duration = Duration::from_secs(20);
/// Bound on any other step of a worker.
const STEP: Duration = Duration::from_secs(5);
/// Scheduling slack on top of the ttl before worker 1 is resumed.
const SLACK: Duration = Duration::from_millis(500);
/// Fenced inserts worker 1 makes before it is stopped.
const WRITES_BEFORE_PAUSE: u32 = 3;

/// The worker side of the drill, run in a re-executed copy of this binary.
#[test]
#[ignore = "a worker process for the drill; run by it, not alone"]
fn drill_worker_process() {
    if let Some(spec) = WorkerSpec::from_env() {
        common::drill_worker::run(spec);
    }
}

/// The test's own connection, on a runtime of its own (the drill itself is
/// synchronous: it reads worker lines and sends signals).
struct Db {
    runtime: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Db {
    /// Connects (as `leasehold_testkit::postgres` says) and applies the
    /// adapter's migration.
    fn connect() -> Db {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let client = runtime.block_on(async {
            let client = leasehold_testkit::postgres::connect().await;
            postgres::migrate(&client).await.expect("migrate");
            client
        });
        Db { runtime, client }
    }

    fn batch(&self, sql: &str) {
        self.runtime
            .block_on(self.client.batch_execute(sql))
            .unwrap_or_else(|error| panic!("{sql}: {error}"));
    }

    /// The table's rows as `(writer, token)`, in insertion (commit) order.
    fn rows(&self, table: &str) -> Vec<(String, u64)> {
        let sql = format!("SELECT writer, token FROM {table} ORDER BY seq");
        let rows = self.runtime.block_on(self.client.query(&sql, &[]));
        let rows = rows.unwrap_or_else(|error| panic!("{sql}: {error}"));
        rows.iter()
            .map(|row| (row.get(0), row.get::<_, i64>(1) as u64))
            .collect()
    }
}

fn rows_of(writer: &str, token: u64, count: usize) -> Vec<(String, u64)> {
    vec![(writer.to_owned(), token); count]
}

#[test]
fn t75_paused_holder_is_refused_by_postgres() {
    let dsn = dsn();
    let db = Db::connect();
    let table = unique("t75_drill");
    db.batch(&format!(
        "CREATE TABLE {table} (seq bigserial PRIMARY KEY, writer text NOT NULL, token bigint NOT NULL)"
    ));
    let target = PostgresTable {
        dsn,
        table: table.clone(),
    };
    let server = Server::start();
    let lock = "drills/postgres";

    phase("worker 1 holds the lock and makes fenced inserts");
    let mut spec = WorkerSpec::new(Mode::Stubborn, &server.endpoint(), lock, "w1");
    spec.postgres = Some(target.clone());
    spec.gate_after_writes = Some(WRITES_BEFORE_PAUSE);
    let mut w1 = Worker::spawn("worker 1", &spec);
    let holding1 = w1.expect("HOLDING", START);
    let t1 = holding1.u64("token");
    let ttl = Duration::from_millis(holding1.u64("ttl_ms"));
    for _ in 0..WRITES_BEFORE_PAUSE {
        let wrote = w1.expect("WROTE", STEP);
        assert_eq!(wrote.args, ["ACCEPTED"], "{}", wrote.text);
        assert_eq!(wrote.u64("token"), t1);
    }
    // Between two fenced writes: after one committed, before the next fence().
    w1.expect("AT_GATE", STEP);
    let before_pause = rows_of("w1", t1, WRITES_BEFORE_PAUSE as usize);
    assert_eq!(db.rows(&table), before_pause);

    phase("SIGSTOP worker 1; worker 2 queues, gets the lock at the server's expiry, inserts");
    let stopped_at = w1.pause(STEP);
    let mut spec = WorkerSpec::new(Mode::Once, &server.endpoint(), lock, "w2");
    spec.postgres = Some(target.clone());
    spec.wait = Duration::from_secs(10);
    let mut w2 = Worker::spawn("worker 2", &spec);
    let t2 = w2.expect("HOLDING", START).u64("token");
    assert!(
        t2 > t1,
        "worker 2's token {t2} is not above worker 1's {t1}"
    );
    assert_eq!(w2.expect("WROTE", STEP).args, ["ACCEPTED"]);
    w2.expect("DONE", STEP);
    assert!(w2.finish(STEP).success(), "worker 2 failed");
    assert!(w1.is_stopped(), "worker 1 ran during its pause");
    let mut expected = before_pause.clone();
    expected.extend(rows_of("w2", t2, 1));
    assert_eq!(db.rows(&table), expected);
    std::thread::sleep((stopped_at + ttl + SLACK).saturating_duration_since(Instant::now()));

    phase("SIGCONT worker 1: fence() says lost; its forced insert with the old token is Stale");
    w1.signal(libc::SIGCONT);
    w1.open_gate();
    let lost = w1.expect("LOST", STEP);
    assert_eq!(lost.args, ["deadline_reached"], "{}", lost.text);
    // The forced write skips fence(): only the adapter stands in its way.
    let stubborn = w1.expect("STUBBORN", STEP);
    assert_eq!(stubborn.args, ["REJECTED"], "{}", stubborn.text);
    assert_eq!(stubborn.u64("token"), t1, "{}", stubborn.text);
    assert_eq!(stubborn.u64("presented"), t1, "{}", stubborn.text);
    assert_eq!(stubborn.u64("highest"), t2, "{}", stubborn.text);
    assert!(w1.finish(STEP).success(), "worker 1 failed");

    phase("the table holds no stale row; the audit holds exactly the one refusal");
    let rows = db.rows(&table);
    assert_eq!(rows, expected, "the refused insert was not rolled back");
    let taken_over = rows
        .iter()
        .position(|(writer, _)| writer == "w2")
        .expect("worker 2 wrote");
    let stale: Vec<_> = rows[taken_over..]
        .iter()
        .filter(|(writer, _)| writer == "w1")
        .collect();
    assert!(stale.is_empty(), "stale rows after worker 2's: {rows:?}");
    let highest = db
        .runtime
        .block_on(postgres::highest(&db.client, &table, lock));
    assert_eq!(highest.expect("read the fence"), Some(t2));
    // Newest first, over every resource: this run's are those naming its table.
    let recent = db
        .runtime
        .block_on(postgres::rejections(&db.client, 10_000));
    let refusals: Vec<_> = recent
        .expect("read the rejections")
        .into_iter()
        .filter(|rejection| rejection.resource == table)
        .map(|rejection| (rejection.lock, rejection.presented, rejection.highest))
        .collect();
    assert_eq!(refusals, [(lock.to_owned(), t1, t2)]);
    eprintln!("table {table}: {rows:?}; refused: {refusals:?}");
    db.batch(&format!("DROP TABLE {table}"));
}
