//! Inside a drill worker process (see `t70_client_drills`): what each
//! [`Mode`](super::drill::Mode) does with `leasehold-client`, reported as
//! `DRILL` lines on stdout for the test to read. A write goes to the TCP
//! resource, or, when the spec names a
//! [`PostgresTable`](super::drill::PostgresTable), into that table through
//! the fence adapter (`t75_fenced_postgres_drill`).

use super::drill::{boot_us, Mode, PostgresTable, WorkerSpec, MARKER};
use leasehold_client::{Client, Lease, LockGuard, LockLost, LossCause};
use leasehold_fence::postgres::{fenced_transaction, FenceError};
use std::io::Write as _;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// A worker exits on its own after this long, so a test killed before
/// its cleanup ran leaves no process behind for long.
const WORKER_LIFETIME_MAX: Duration = Duration::from_secs(30);
/// Time between two protected writes (`stubborn`).
const WRITE_EVERY: Duration = Duration::from_millis(50);
/// Time between two checks (`watch`).
const CHECK_EVERY: Duration = Duration::from_millis(20);
/// How long a `watch` worker keeps asking `fence()` after the loss.
const AFTER_LOSS_CHECKS: Duration = Duration::from_millis(500);

/// Runs the worker `spec` describes (in a worker process), bounded by
/// [`WORKER_LIFETIME_MAX`].
pub fn run(spec: WorkerSpec) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        tokio::time::timeout(WORKER_LIFETIME_MAX, work(&spec))
            .await
            .expect("the worker outlived its bound");
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
}

/// Prints one protocol line.
fn say(text: String) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{MARKER}{text}").expect("stdout");
    out.flush().expect("stdout");
}

async fn work(spec: &WorkerSpec) {
    let client = Client::connect([spec.endpoint.as_str()])
        .await
        .expect("connect");
    let lease = client
        .lease(spec.ttl)
        .owner(spec.writer.as_str())
        .grant()
        .await
        .expect("grant");
    let guard = lease
        .lock(spec.lock.as_str())
        .wait(spec.wait)
        .fenced(true)
        .acquire()
        .await
        .expect("acquire");
    let timing = lease.timing();
    say(format!(
        "HOLDING token={} lease={} ttl_ms={} interval_ms={} margin_ms={}",
        guard.token().0,
        guard.lease_id().0,
        timing.ttl.as_millis(),
        timing.interval.as_millis(),
        timing.margin.as_millis(),
    ));
    match spec.mode {
        Mode::Stubborn => stubborn(spec, &guard).await,
        Mode::Once => {
            let token = guard.fence().expect("just acquired");
            let answer = write(spec, token.0).await;
            say(format!("WROTE token={} {answer}", token.0));
            guard.release().await.expect("release");
            say("DONE".to_owned());
        }
        Mode::Watch => watch(&lease, &guard).await,
    }
}

/// Protected writes, each after `fence()`, until it says the lock is lost;
/// then one write with the old token anyway.
async fn stubborn(spec: &WorkerSpec, guard: &LockGuard) {
    let mut accepted = 0;
    loop {
        let token = match guard.fence() {
            Ok(token) => token,
            Err(lost) => {
                say(lost_line(&lost, "fence", guard).await);
                let answer = write(spec, guard.token().0).await;
                say(format!("STUBBORN token={} {answer}", guard.token().0));
                return;
            }
        };
        let answer = write(spec, token.0).await;
        say(format!("WROTE token={} {answer}", token.0));
        if answer != "ACCEPTED" {
            tokio::time::sleep(WRITE_EVERY).await;
            continue;
        }
        accepted += 1;
        if spec.gate_after_writes == Some(accepted) {
            say("AT_GATE".to_owned());
            let mut go = String::new();
            let read = tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut go));
            read.await.expect("gate").expect("read the gate line");
            // Straight to the next fence(): it must answer from the clock.
            continue;
        }
        tokio::time::sleep(WRITE_EVERY).await;
    }
}

/// Asks `fence()` until it or `lost()` reports the loss, then checks that
/// it never says Ok again. Each `FENCE_OK` also says how long the lease has
/// left (`left_ms`), so the test can see a renewal land.
async fn watch(lease: &Lease, guard: &LockGuard) {
    let (lost, via) = loop {
        let asked_us = boot_us();
        match guard.fence() {
            Ok(token) => {
                let left_ms = lease.check().map_or(0, |left| left.as_millis());
                say(format!(
                    "FENCE_OK token={} at_us={asked_us} left_ms={left_ms}",
                    token.0
                ));
            }
            Err(lost) => break (lost, "fence"),
        }
        tokio::select! {
            lost = guard.lost() => break (lost, "lost"),
            () = tokio::time::sleep(CHECK_EVERY) => {}
        }
    };
    say(lost_line(&lost, via, guard).await);
    let until = tokio::time::Instant::now() + AFTER_LOSS_CHECKS;
    while tokio::time::Instant::now() < until {
        let asked_us = boot_us();
        if guard.fence().is_ok() {
            say(format!("FENCE_OK_AFTER_LOSS at_us={asked_us}"));
        }
        tokio::time::sleep(CHECK_EVERY).await;
    }
    say("END".to_owned());
}

/// `LOST <cause> at_us= via= since_last_ack_ms= cancelled_at_loss=
/// cancelled_within_us=`: when and why the loss was seen, whether the
/// guard's cancellation token had fired by then, and how long after it did
/// (`never` if not within a second).
async fn lost_line(lost: &LockLost, via: &str, guard: &LockGuard) -> String {
    let at_us = boot_us();
    let cancelled_at_loss = guard.cancellation().is_cancelled();
    let cancellation = guard.cancellation();
    let fired = tokio::time::timeout(Duration::from_secs(1), cancellation.cancelled()).await;
    let cancelled_within_us = match fired {
        Ok(()) => boot_us().saturating_sub(at_us).to_string(),
        Err(_) => "never".to_owned(),
    };
    let since_last_ack_ms = match &lost.cause {
        LossCause::DeadlineReached { since_last_ack } => since_last_ack.as_millis().to_string(),
        _ => "-".to_owned(),
    };
    format!(
        "LOST {} at_us={at_us} via={via} since_last_ack_ms={since_last_ack_ms} \
         cancelled_at_loss={cancelled_at_loss} cancelled_within_us={cancelled_within_us}",
        lost.cause.label(),
    )
}

/// One write to the resource: `ACCEPTED` or `REJECTED highest=N` (and
/// `presented=N` from the PostgreSQL adapter).
async fn write(spec: &WorkerSpec, token: u64) -> String {
    if let Some(table) = &spec.postgres {
        return write_postgres(spec, table, token).await;
    }
    let addr = spec.resource.expect("a resource to write to");
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the resource");
    let (read, mut send) = stream.into_split();
    let request = format!("WRITE {token} {}\n", spec.writer);
    send.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    let mut read = tokio::io::BufReader::new(read);
    read.read_line(&mut answer).await.expect("the answer");
    match answer.split_whitespace().collect::<Vec<_>>()[..] {
        ["OK"] => "ACCEPTED".to_owned(),
        ["STALE", highest] => format!("REJECTED highest={highest}"),
        _ => panic!("the resource answered {answer:?}"),
    }
}

/// One fenced insert of `(writer, token)` into `table`, on a fresh
/// connection (as the TCP resource gets one per write: nothing opened
/// before a pause is reused after it). `ACCEPTED`, or the adapter's refusal
/// as `REJECTED highest=N presented=N`; any other failure ends the worker.
async fn write_postgres(spec: &WorkerSpec, table: &PostgresTable, token: u64) -> String {
    let (mut client, connection) = tokio_postgres::connect(&table.dsn, tokio_postgres::NoTls)
        .await
        .expect("connect to PostgreSQL");
    let connection = tokio::spawn(connection);
    let insert = format!(
        "INSERT INTO {} (writer, token) VALUES ($1, $2)",
        table.table
    );
    let token_sql = i64::try_from(token).expect("a drill token fits bigint");
    let writer = spec.writer.as_str();
    let outcome = fenced_transaction(&mut client, &table.table, &spec.lock, token, async |tx| {
        tx.execute(&insert, &[&writer, &token_sql]).await
    })
    .await;
    drop(client);
    let _ = connection.await;
    match outcome {
        Ok(1) => "ACCEPTED".to_owned(),
        Err(FenceError::Stale(stale)) => {
            format!(
                "REJECTED highest={} presented={}",
                stale.highest, stale.presented
            )
        }
        other => panic!("fenced insert into {}: {other:?}", table.table),
    }
}
