//! A paused worker, refused by PostgreSQL.
//!
//! Two workers share a PostgreSQL table and take turns under one Leasehold
//! lock. Worker A holds the lock (2 s ttl), writes, checks `fence()` for
//! its next write — and then stalls, as in a long GC pause, *after* the
//! check and before the write. Its lease expires; worker B gets the lock
//! and writes. A wakes and sends the write it had prepared, with its old
//! token. The client library cannot stop a write that has already passed
//! its check; the table can: every write goes through
//! [`fenced_transaction`], which refuses A's token as stale and rolls the
//! whole transaction back. The demo prints the table (no row of A's after
//! B's first) and the refusal from [`rejections`](postgres::rejections).
//!
//! It needs a running server and a PostgreSQL database:
//!
//! ```sh
//! cargo run -p leasehold-cli -- serve --data-dir /tmp/leasehold-demo &   # 127.0.0.1:7420
//! bash .ci/run          # once: installs and starts PostgreSQL, creates the test database
//! cargo run -p leasehold-fence --example paused_worker
//! ```
//!
//! `LEASEHOLD_ENDPOINTS` (comma-separated) names the server, default
//! `http://127.0.0.1:7420`; `LEASEHOLD_POSTGRES` is a libpq-style
//! connection string, default the database `.ci/run` creates
//! (`host=127.0.0.1 port=5432 user=leasehold_test password=leasehold_test
//! dbname=leasehold_test`). The demo (re)creates the table
//! `leasehold_example_paused_worker` and fences it under a resource name
//! new to each run, so it can be run again, against a fresh server too.
//!
//! A's pause is its whole thread stopping: A runs on a runtime of its own,
//! on one thread, which the pause blocks — its lease renewer included, as a
//! stop-the-world pause would. (In a multi-threaded runtime shared with B,
//! the renewer would keep A's lease alive on another thread.)

use leasehold_client::{Client, LockGuard, Token};
use leasehold_fence::postgres::{self, fenced_transaction, FenceError};
use leasehold_fence::StaleToken;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_postgres::NoTls;

/// Errors of the demo (an example may box them; the library does not).
type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The protected table.
const TABLE: &str = "leasehold_example_paused_worker";
/// The lock both workers take.
const LOCK: &str = "examples/paused-worker";
/// Short, so the demo is quick: A's lease expires 2 s into its pause.
const TTL: Duration = Duration::from_secs(2);
/// How long B queues for the lock: A's lease must expire first.
const B_WAIT: Duration = Duration::from_secs(15);
/// A's pause ends when B has written (so the demo is deterministic) or after this.
const PAUSE_MAX: Duration = Duration::from_secs(20);

/// What both workers need to know.
#[derive(Clone)]
struct Setup {
    endpoints: String,
    dsn: String,
    /// The fence's resource name: new each run, so a fresh server (whose
    /// tokens start again from 1) never meets an older run's fence.
    resource: String,
    started: Instant,
}

impl Setup {
    /// Prints one line of the story, with the time since the start.
    fn say(&self, who: &str, text: impl std::fmt::Display) {
        let at = self.started.elapsed().as_secs_f64();
        println!("[{at:5.2}s] {who}: {text}");
    }
}

fn main() -> Result<()> {
    let run = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let setup = Setup {
        endpoints: std::env::var("LEASEHOLD_ENDPOINTS")
            .unwrap_or_else(|_| "http://127.0.0.1:7420".to_owned()),
        dsn: std::env::var("LEASEHOLD_POSTGRES")
            .unwrap_or_else(|_| leasehold_testkit::postgres::LOCAL_DSN.to_owned()),
        resource: format!("{TABLE}/run-{run}"),
        started: Instant::now(),
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let db = runtime.block_on(prepare(&setup))?;

    // A tells B when it holds the lock; B tells A (asleep) when it wrote.
    let (a_holds, a_held) = tokio::sync::oneshot::channel();
    let (b_wrote, b_done) = mpsc::channel();
    let worker_a = {
        let setup = setup.clone();
        std::thread::spawn(move || -> Result<Option<StaleToken>> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(worker_a(&setup, a_holds, b_done))
        })
    };
    let b = runtime.block_on(worker_b(&setup, a_held, b_wrote));
    let refused = worker_a.join().expect("worker A panicked")?;
    b?;

    runtime.block_on(report(&setup, &db, refused))
}

/// Connects, creates the fence's tables and a fresh demo table.
async fn prepare(setup: &Setup) -> Result<tokio_postgres::Client> {
    let db = connect(&setup.dsn).await?;
    postgres::migrate(&db).await?;
    db.batch_execute(&format!(
        "DROP TABLE IF EXISTS {TABLE};
         CREATE TABLE {TABLE} (seq bigserial PRIMARY KEY, writer text NOT NULL,
                               token bigint NOT NULL, note text NOT NULL);"
    ))
    .await?;
    Ok(db)
}

/// A connection whose driver task runs on the current runtime.
async fn connect(dsn: &str) -> Result<tokio_postgres::Client> {
    let (client, connection) = tokio_postgres::connect(dsn, NoTls)
        .await
        .map_err(|error| format!("cannot connect to PostgreSQL ({dsn}): {error}"))?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            eprintln!("postgres connection: {error}");
        }
    });
    Ok(client)
}

/// One row, written only if `token` is still the highest for the lock.
async fn write(
    db: &mut tokio_postgres::Client,
    setup: &Setup,
    writer: &str,
    token: Token,
    note: &str,
) -> std::result::Result<(), FenceError> {
    let insert = format!("INSERT INTO {TABLE} (writer, token, note) VALUES ($1, $2, $3)");
    fenced_transaction(db, &setup.resource, LOCK, token.0, async |tx| {
        // fenced_transaction refuses tokens above i64::MAX before this runs.
        let token = i64::try_from(token.0).expect("checked by fenced_transaction");
        tx.execute(&insert, &[&writer, &token, &note]).await
    })
    .await
    .map(|_inserted| ())
}

/// Holds the lock, writes, checks `fence()` for the next write, pauses
/// past its lease, then sends that write anyway. Returns the refusal.
async fn worker_a(
    setup: &Setup,
    holds: tokio::sync::oneshot::Sender<()>,
    b_done: mpsc::Receiver<()>,
) -> Result<Option<StaleToken>> {
    let mut db = connect(&setup.dsn).await?;
    let client = Client::connect(setup.endpoints.split(',')).await?;
    let lease = client.lease(TTL).owner("worker-a").grant().await?;
    let guard = lease.lock(LOCK).fenced(true).acquire().await?;
    setup.say("A", format!("holds {LOCK} with token {}", guard.token()));
    let _ = holds.send(());

    let token = guard.fence()?;
    write(&mut db, setup, "A", token, "before the pause").await?;
    setup.say("A", format!("wrote a row with token {token}"));
    // The last check before the next write: still ours *now*.
    let token = guard.fence()?;
    setup.say(
        "A",
        "fence() says the lock is still ours; the write is ready…",
    );

    setup.say("A", "…and A stalls, its lease renewer with it (a GC pause)");
    let paused = Instant::now();
    // A fixed sleep would do as well; how long B needs to get the lock
    // depends on the server, so A wakes when B has written (or at the bound).
    let _ = b_done.recv_timeout(PAUSE_MAX);
    let paused = paused.elapsed();
    setup.say(
        "A",
        format!(
            "wakes after {} ms (ttl {} ms) and sends the write prepared with token {token}",
            paused.as_millis(),
            TTL.as_millis()
        ),
    );

    let refused = match write(&mut db, setup, "A", token, "after the pause").await {
        Ok(()) => {
            setup.say("A", "the write was ACCEPTED — the fence did not hold!");
            None
        }
        Err(FenceError::Stale(stale)) => {
            setup.say("A", format!("REFUSED by the table: {stale}"));
            Some(stale)
        }
        Err(other) => return Err(other.into()),
    };
    explain_loss(setup, &guard);
    setup.say("A", format!("release: {:?}", guard.release().await?));
    Ok(refused)
}

/// What `fence()` says now that A is awake: had A checked again, it would
/// have stopped on its own.
fn explain_loss(setup: &Setup, guard: &LockGuard) {
    match guard.fence() {
        Ok(token) => setup.say("A", format!("fence() still says Ok ({token})?")),
        Err(lost) => setup.say("A", format!("fence() now says: {lost}")),
    }
}

/// Queues for the lock while A holds it, gets it when A's lease expires,
/// writes twice, releases, and wakes A.
async fn worker_b(
    setup: &Setup,
    a_held: tokio::sync::oneshot::Receiver<()>,
    wrote: mpsc::Sender<()>,
) -> Result<()> {
    a_held.await?;
    let mut db = connect(&setup.dsn).await?;
    let client = Client::connect(setup.endpoints.split(',')).await?;
    let lease = client.lease(TTL).owner("worker-b").grant().await?;
    setup.say("B", format!("queues for {LOCK}"));
    let guard = lease.lock(LOCK).wait(B_WAIT).fenced(true).acquire().await?;
    setup.say("B", format!("holds {LOCK} with token {}", guard.token()));
    for note in ["B's first", "B's second"] {
        let token = guard.fence()?;
        write(&mut db, setup, "B", token, note).await?;
        setup.say("B", format!("wrote a row with token {token}"));
    }
    setup.say("B", format!("release: {:?}", guard.release().await?));
    let _ = wrote.send(());
    Ok(())
}

/// Prints the table and this run's refusals.
async fn report(
    setup: &Setup,
    db: &tokio_postgres::Client,
    refused: Option<StaleToken>,
) -> Result<()> {
    println!("\n{TABLE}:");
    println!("  seq | writer | token | note");
    let rows = db
        .query(
            &format!("SELECT seq, writer, token, note FROM {TABLE} ORDER BY seq"),
            &[],
        )
        .await?;
    for row in &rows {
        let (seq, writer, token, note): (i64, &str, i64, &str) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        println!("  {seq:>3} | {writer:<6} | {token:>5} | {note}");
    }

    println!("\nrejections() for resource {}:", setup.resource);
    let rejections = postgres::rejections(db, 100).await?;
    for rejection in rejections.iter().filter(|r| r.resource == setup.resource) {
        println!(
            "  lock {}: presented token {}, highest accepted {}",
            rejection.lock, rejection.presented, rejection.highest
        );
    }
    match refused {
        Some(_) => Ok(()),
        None => Err("the stale write was not refused".into()),
    }
}
