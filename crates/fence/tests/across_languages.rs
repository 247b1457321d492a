#![cfg(feature = "postgres")]
//! Rust and Python fence each other's writes: the Rust adapters and the
//! Python ones (`leasehold.fence`, which run this crate's SQL and Lua
//! through the native module) share the same PostgreSQL tables and Redis
//! keys, so a lower token from either language is refused after a higher
//! one from the other, and each sees the other's refusals.
//!
//! The Python side is a short program run by the interpreter in
//! `LEASEHOLD_TEST_PYTHON_CLIENT` (a venv with `leasehold` installed, and
//! psycopg and redis-py): required under `CI=true`; elsewhere, unset, the
//! tests say so loudly and return. It reports its outcome by exit code
//! (0 written, 3 refused as stale) and one line on stdout. PostgreSQL and
//! Redis are found as `leasehold_testkit` says.

use leasehold_fence::postgres::{self, fenced_transaction, FenceError as PgError};
use leasehold_fence::redis::resp::{Connection, Reply};
use leasehold_fence::redis::{FenceError as RedisError, RedisFence};
use leasehold_testkit::python::{interpreter, CLIENT};
use leasehold_testkit::unique;
use std::time::Duration;
use tokio::process::Command;

/// The Python writer: `store target resource lock token table`. One fenced
/// write (PostgreSQL: a row `(token, 'python')` into `table`; Redis: `SET
/// resource python-<token>`); prints what happened.
const PYTHON_WRITER: &str = r#"
import sys
from leasehold.errors import StaleToken

store, target, resource, lock, token, table = sys.argv[1:7]
token = int(token)
try:
    if store == "postgres":
        import psycopg
        from leasehold.fence.postgres import fenced_transaction

        with psycopg.connect(target) as conn:
            with fenced_transaction(conn, resource, lock, token) as tx:
                tx.execute(f"INSERT INTO {table} (token, writer) VALUES (%s, 'python')", (token,))
    else:
        from leasehold.fence.redis import RedisFence

        host, port = target.rsplit(":", 1)
        with RedisFence(host=host, port=int(port), socket_timeout=10) as client:
            client.fenced_set(resource, lock, token, f"python-{token}")
except StaleToken as stale:
    print(f"stale {stale.presented} {stale.highest}")
    sys.exit(3)
print("written")
"#;

/// Bound on one run of the Python writer (interpreter start, imports,
/// connect, one write).
const PYTHON_TIMEOUT: Duration = Duration::from_secs(60);

/// What the Python writer reported.
#[derive(Debug, PartialEq, Eq)]
enum Python {
    /// Its write was accepted and committed.
    Written,
    /// Refused: its token (presented) was below the highest.
    Stale { presented: u64, highest: u64 },
}

/// Python's 5 after a 7, in both stores.
const PYTHON_5_REFUSED_BELOW_7: Python = Python::Stale {
    presented: 5,
    highest: 7,
};

/// The interpreter with `leasehold` installed, or `None` (after a loud
/// notice) outside CI when `LEASEHOLD_TEST_PYTHON_CLIENT` is unset.
fn python_client() -> Option<String> {
    let python = interpreter(CLIENT, "the cross-language fence tests")?;
    Some(python.display().to_string())
}

/// Runs the Python writer once; panics with its output if it neither
/// wrote nor was refused as stale.
async fn python_write(python: &str, args: [&str; 6]) -> Python {
    let mut command = Command::new(python);
    command.arg("-c").arg(PYTHON_WRITER).args(args);
    command.kill_on_drop(true);
    let output = tokio::time::timeout(PYTHON_TIMEOUT, command.output())
        .await
        .unwrap_or_else(|_| panic!("the Python writer did not finish within {PYTHON_TIMEOUT:?}"))
        .expect("start the Python interpreter");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let words: Vec<&str> = stdout.split_whitespace().collect();
    match (output.status.code(), words.as_slice()) {
        (Some(0), ["written"]) => Python::Written,
        (Some(3), ["stale", presented, highest]) => Python::Stale {
            presented: presented.parse().expect("presented token"),
            highest: highest.parse().expect("highest token"),
        },
        _ => panic!(
            "the Python writer failed ({}):\nstdout: {stdout}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

#[tokio::test]
async fn postgres_rust_and_python_fence_each_other() {
    let Some(python) = python_client() else {
        return;
    };
    let mut client = leasehold_testkit::postgres::connect().await;
    postgres::migrate(&client).await.expect("migrate");
    let (table, resource, lock) = (unique("across_items"), unique("across"), "across/lock");
    let create = format!("CREATE TABLE {table} (token bigint NOT NULL, writer text NOT NULL)");
    client.batch_execute(&create).await.unwrap();
    let dsn = leasehold_testkit::postgres::dsn();
    let rust_write = async |client: &mut tokio_postgres::Client, token: u64| {
        let insert = format!("INSERT INTO {table} (token, writer) VALUES ($1, 'rust')");
        fenced_transaction(client, &resource, lock, token, async |tx| {
            tx.execute(&insert, &[&(token as i64)]).await
        })
        .await
    };
    let python_args = |token: &'static str| ["postgres", &dsn, &resource, lock, token, &table];

    tracing::info!("Rust writes with 7, then Python's 5 is refused");
    rust_write(&mut client, 7).await.expect("Rust token 7");
    let refused = python_write(&python, python_args("5")).await;
    assert_eq!(refused, PYTHON_5_REFUSED_BELOW_7);
    let recorded = postgres::rejections(&client, 1_000).await.unwrap();
    let recorded: Vec<_> = recorded.iter().filter(|r| r.resource == resource).collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!((recorded[0].presented, recorded[0].highest), (5, 7));

    tracing::info!("Python writes with 9, then Rust's 8 is refused");
    assert_eq!(
        python_write(&python, python_args("9")).await,
        Python::Written
    );
    match rust_write(&mut client, 8).await {
        Err(PgError::Stale(stale)) => assert_eq!((stale.presented, stale.highest), (8, 9)),
        other => panic!("Rust token 8 after Python's 9: expected a refusal, got {other:?}"),
    }
    let query = format!("SELECT token, writer FROM {table} ORDER BY token");
    let rows = client.query(&query, &[]).await.unwrap();
    let rows: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(rows, [(7, "rust".to_owned()), (9, "python".to_owned())]);
    assert_eq!(
        postgres::highest(&client, &resource, lock).await.unwrap(),
        Some(9)
    );
    client
        .batch_execute(&format!("DROP TABLE {table}"))
        .await
        .unwrap();
}

#[tokio::test]
async fn redis_rust_and_python_fence_each_other() {
    let Some(python) = python_client() else {
        return;
    };
    let Some(addr) = leasehold_testkit::redis::addr().await else {
        return;
    };
    let mut fence = RedisFence::connect(&addr).await.expect("connect");
    let mut reader = Connection::connect(&addr).await.expect("connect");
    let (key, lock) = (unique("across"), "across/lock");
    let python_args = |token: &'static str| ["redis", &addr, &key, lock, token, "-"];
    let mut value = async || match reader.command(&[b"GET", key.as_bytes()]).await.unwrap() {
        Reply::Bulk(None) => None,
        reply => Some(reply.as_text().expect("text value").to_owned()),
    };

    tracing::info!("Rust writes with 7, then Python's 5 is refused");
    fence
        .set(&key, lock, 7, "rust-7")
        .await
        .expect("Rust token 7");
    let refused = python_write(&python, python_args("5")).await;
    assert_eq!(refused, PYTHON_5_REFUSED_BELOW_7);
    assert_eq!(value().await.as_deref(), Some("rust-7"));
    let recorded = fence.rejections(&key, 10).await.unwrap();
    let recorded: Vec<_> = recorded.iter().map(|r| (r.presented, r.highest)).collect();
    assert_eq!(recorded, [(5, 7)]);

    tracing::info!("Python writes with 9, then Rust's 8 is refused");
    assert_eq!(
        python_write(&python, python_args("9")).await,
        Python::Written
    );
    assert_eq!(value().await.as_deref(), Some("python-9"));
    match fence.set(&key, lock, 8, "rust-8").await {
        Err(RedisError::Stale(stale)) => assert_eq!((stale.presented, stale.highest), (8, 9)),
        other => panic!("Rust token 8 after Python's 9: expected a refusal, got {other:?}"),
    }
    assert_eq!(value().await.as_deref(), Some("python-9"));
    assert_eq!(fence.highest(&key, lock).await.unwrap(), Some(9));
}
