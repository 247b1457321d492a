#![cfg(feature = "postgres")]
//! The PostgreSQL adapter against a real server, found as
//! `leasehold_testkit::postgres` says (`LEASEHOLD_TEST_POSTGRES`, which
//! `.ci/run` exports; required under `CI=true`; else the database `.ci/run`
//! creates). A server that cannot be reached fails the tests; nothing is
//! skipped — except the restart test, which outside CI needs
//! `LEASEHOLD_TEST_POSTGRES_RESTART` (the command that restarts the server,
//! e.g. `pg_ctlcluster 15 main restart`) and says loudly when it skips.
//! What every adapter must do is in the conformance suite
//! (`tests/conformance`); these are the PostgreSQL specifics.
//!
//! Every test uses its own tables and resource names (random suffix), so
//! tests run in parallel and re-run against the same database.

use leasehold_fence::postgres::{self, fenced_transaction, FenceError};
use leasehold_testkit::postgres::try_connect;
use leasehold_testkit::{in_ci, unique};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// The restart test holds this exclusively; every other test holds it
/// shared, so a restart never cuts another test's connections.
static SERVER: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// A fresh connection with the adapter's tables in place.
async fn connect() -> Client {
    let client = leasehold_testkit::postgres::connect().await;
    postgres::migrate(&client).await.expect("migrate");
    client
}

/// A small seeded generator (xorshift64*): the writers' interleaved tokens
/// are reproducible from the seed.
fn next_token(state: &mut u64, max: u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d) % max + 1
}

/// One fenced write attempt and how it ended.
#[derive(Debug)]
struct Attempt {
    id: i64,
    token: u64,
    /// `None`: accepted and committed; `Some(highest)`: refused as stale.
    refused_by: Option<u64>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn t10_concurrent_writers_commit_in_token_order_and_stale_ones_leave_nothing() {
    const WRITERS: u64 = 6;
    const ATTEMPTS_PER_WRITER: u64 = 15;
    const TOKEN_MAX: u64 = 200;
    let _shared = SERVER.read().await;
    let setup = connect().await;
    let items = unique("items");
    let notes = unique("item_notes");
    let resource = items.clone();
    let lock = "t10/lock";
    setup
        .batch_execute(&format!(
            "CREATE TABLE {items} (seq bigserial PRIMARY KEY, attempt bigint NOT NULL, token bigint NOT NULL);
             CREATE TABLE {notes} (attempt bigint PRIMARY KEY);"
        ))
        .await
        .unwrap();

    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let (items, notes, resource) = (items.clone(), notes.clone(), resource.clone());
        writers.push(tokio::spawn(async move {
            let mut client = connect().await;
            let mut seed = 0x9e37_79b9_7f4a_7c15 ^ (writer + 1);
            let mut attempts = Vec::new();
            for n in 0..ATTEMPTS_PER_WRITER {
                let id = (writer * 1_000 + n) as i64;
                let token = next_token(&mut seed, TOKEN_MAX);
                let outcome = fenced_transaction(&mut client, &resource, lock, token, async |tx| {
                    let insert = format!("INSERT INTO {items} (attempt, token) VALUES ($1, $2)");
                    tx.execute(&insert, &[&id, &(token as i64)]).await?;
                    let note = format!("INSERT INTO {notes} (attempt) VALUES ($1)");
                    tx.execute(&note, &[&id]).await
                })
                .await;
                let refused_by = match outcome {
                    Ok(1) => None,
                    Err(FenceError::Stale(stale)) => {
                        assert_eq!((stale.presented, stale.lock.as_str()), (token, lock));
                        assert!(
                            stale.highest > token,
                            "refused {token} with highest {}",
                            stale.highest
                        );
                        Some(stale.highest)
                    }
                    other => panic!("attempt {id} token {token}: {other:?}"),
                };
                attempts.push(Attempt {
                    id,
                    token,
                    refused_by,
                });
            }
            attempts
        }));
    }
    let mut attempts = Vec::new();
    for writer in writers {
        attempts.extend(writer.await.expect("writer task"));
    }
    let accepted: BTreeSet<i64> = attempts
        .iter()
        .filter(|a| a.refused_by.is_none())
        .map(|a| a.id)
        .collect();
    let refused: Vec<&Attempt> = attempts.iter().filter(|a| a.refused_by.is_some()).collect();
    assert!(
        accepted.len() >= 2 && refused.len() >= 2,
        "both outcomes exercised: {attempts:?}"
    );

    // Committed writes, in commit order (the fence row lock serializes them,
    // so the sequence is assigned in commit order): tokens never decrease.
    let rows = setup
        .query(
            &format!("SELECT attempt, token FROM {items} ORDER BY seq"),
            &[],
        )
        .await
        .unwrap();
    let committed: Vec<(i64, i64)> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
    assert!(
        committed.windows(2).all(|pair| pair[0].1 <= pair[1].1),
        "accepted tokens decreased in commit order: {committed:?}"
    );
    // Exactly the accepted attempts wrote, to both tables; refused ones left nothing.
    let in_items: BTreeSet<i64> = committed.iter().map(|(attempt, _)| *attempt).collect();
    let rows = setup
        .query(&format!("SELECT attempt FROM {notes}"), &[])
        .await
        .unwrap();
    let in_notes: BTreeSet<i64> = rows.iter().map(|row| row.get(0)).collect();
    assert_eq!(in_items, accepted);
    assert_eq!(in_notes, accepted);

    // The fence row holds the highest accepted token.
    let max_accepted = committed.iter().map(|(_, token)| *token as u64).max();
    assert_eq!(
        postgres::highest(&setup, &resource, lock).await.unwrap(),
        max_accepted
    );

    // Every refusal is in the audit table (and the in-process audit) with
    // the presented and the highest token.
    let mut expected: Vec<(u64, u64)> = refused
        .iter()
        .map(|a| (a.token, a.refused_by.unwrap()))
        .collect();
    expected.sort_unstable();
    let mut audited: Vec<(u64, u64)> = postgres::rejections(&setup, 10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.resource == resource)
        .inspect(|r| assert_eq!(r.lock, lock))
        .map(|r| (r.presented, r.highest))
        .collect();
    audited.sort_unstable();
    assert_eq!(audited, expected);
    let in_process = postgres::audit()
        .recent()
        .into_iter()
        .filter(|r| r.resource == resource)
        .count();
    assert_eq!(in_process, expected.len());

    setup
        .batch_execute(&format!("DROP TABLE {items}; DROP TABLE {notes};"))
        .await
        .unwrap();
}

#[tokio::test]
async fn t20_failed_work_rolls_back_and_does_not_record_the_token() {
    let _shared = SERVER.read().await;
    let mut client = connect().await;
    let items = unique("work_items");
    let resource = items.clone();
    let lock = "t20/lock";
    client
        .batch_execute(&format!("CREATE TABLE {items} (token bigint NOT NULL)"))
        .await
        .unwrap();
    let insert = format!("INSERT INTO {items} (token) VALUES ($1)");
    let write = |token: u64| {
        let insert = insert.clone();
        async move |tx: &tokio_postgres::Transaction<'_>| {
            tx.execute(&insert, &[&(token as i64)]).await
        }
    };

    fenced_transaction(&mut client, &resource, lock, 10, write(10))
        .await
        .unwrap();
    // The work inserts, then fails: all of it rolls back, token 20 unrecorded.
    let failed = fenced_transaction(&mut client, &resource, lock, 20, async |tx| {
        tx.execute(&insert, &[&20_i64]).await?;
        tx.execute("SELECT no_such_column FROM leasehold_fence", &[])
            .await
    })
    .await;
    assert!(matches!(failed, Err(FenceError::Work(_))), "{failed:?}");
    assert_eq!(
        postgres::highest(&client, &resource, lock).await.unwrap(),
        Some(10)
    );
    // Equal is accepted (same holder again), and 15 > 10 is accepted: 20 left no trace.
    fenced_transaction(&mut client, &resource, lock, 10, write(10))
        .await
        .unwrap();
    fenced_transaction(&mut client, &resource, lock, 15, write(15))
        .await
        .unwrap();
    let stale = fenced_transaction(&mut client, &resource, lock, 12, write(12)).await;
    assert!(
        matches!(&stale, Err(FenceError::Stale(s)) if (s.presented, s.highest) == (12, 15)),
        "{stale:?}"
    );

    let rows = client
        .query(&format!("SELECT token FROM {items} ORDER BY token"), &[])
        .await
        .unwrap();
    let tokens: Vec<i64> = rows.iter().map(|row| row.get(0)).collect();
    assert_eq!(tokens, [10, 10, 15]);
    client
        .batch_execute(&format!("DROP TABLE {items}"))
        .await
        .unwrap();
}

#[tokio::test]
async fn t30_tokens_above_i64_max_are_refused_with_a_clear_error() {
    let _shared = SERVER.read().await;
    let mut client = connect().await;
    let resource = unique("huge");
    let lock = "t30/lock";
    let mut ran = false;
    let refused = fenced_transaction(
        &mut client,
        &resource,
        lock,
        i64::MAX as u64 + 1,
        async |_| {
            ran = true;
            Ok(())
        },
    )
    .await;
    let error = refused.unwrap_err();
    assert!(
        matches!(error, FenceError::TokenOutOfRange { token, .. } if token == 1 << 63),
        "{error:?}"
    );
    assert!(error.to_string().contains("i64::MAX"), "{error}");
    assert!(!ran, "work must not run for a refused token");
    assert_eq!(
        postgres::highest(&client, &resource, lock).await.unwrap(),
        None
    );

    // The largest storable token round-trips.
    fenced_transaction(&mut client, &resource, lock, i64::MAX as u64, async |_| {
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(
        postgres::highest(&client, &resource, lock).await.unwrap(),
        Some(i64::MAX as u64)
    );
    let huge = fenced_transaction(&mut client, &resource, lock, u64::MAX, async |_| Ok(())).await;
    assert!(
        matches!(huge, Err(FenceError::TokenOutOfRange { .. })),
        "{huge:?}"
    );
}

#[tokio::test]
async fn t40_the_highest_token_persists_across_a_postgres_restart() {
    let Ok(restart) = std::env::var("LEASEHOLD_TEST_POSTGRES_RESTART") else {
        assert!(
            !in_ci(),
            "CI=true but LEASEHOLD_TEST_POSTGRES_RESTART is not set (.ci/run sets it)"
        );
        eprintln!(
            "\n*** SKIPPED t40 (PostgreSQL restart): set LEASEHOLD_TEST_POSTGRES_RESTART, \
             e.g. 'pg_ctlcluster 15 main restart' (.ci/run does) ***\n"
        );
        return;
    };
    let _exclusive = SERVER.write().await;
    let resource = unique("restart");
    let lock = "t40/lock";
    let mut client = connect().await;
    fenced_transaction(&mut client, &resource, lock, 42, async |_| Ok(()))
        .await
        .unwrap();
    drop(client);

    let mut words = restart.split_whitespace();
    let program = words
        .next()
        .expect("LEASEHOLD_TEST_POSTGRES_RESTART is empty")
        .to_owned();
    let args: Vec<String> = words.map(str::to_owned).collect();
    let status = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&program).args(&args).status()
    })
    .await
    .unwrap()
    .unwrap_or_else(|error| panic!("running `{restart}`: {error}"));
    assert!(status.success(), "`{restart}` failed: {status}");

    // Bounded wait for the server to accept connections again.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut client = loop {
        match try_connect().await {
            Ok(client) => break client,
            Err(error) if Instant::now() < deadline => {
                let _ = error;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(error) => panic!("PostgreSQL not back 60 s after `{restart}`: {error}"),
        }
    };
    assert_eq!(
        postgres::highest(&client, &resource, lock).await.unwrap(),
        Some(42)
    );
    let stale = fenced_transaction(&mut client, &resource, lock, 41, async |_| Ok(())).await;
    assert!(
        matches!(&stale, Err(FenceError::Stale(s)) if s.highest == 42),
        "{stale:?}"
    );
    fenced_transaction(&mut client, &resource, lock, 42, async |_| Ok(()))
        .await
        .unwrap();
}

/// A connection whose unqualified tables live in a schema of their own
/// (so a test may change the schema version without touching the tables
/// the other tests share), and that schema's name.
async fn connect_in_own_schema() -> (Client, String) {
    let client = leasehold_testkit::postgres::connect().await;
    let schema = unique("fence_schema").replace(['-', '/', '.'], "_");
    client
        .batch_execute(&format!(
            "CREATE SCHEMA \"{schema}\"; SET search_path TO \"{schema}\""
        ))
        .await
        .expect("own schema");
    (client, schema)
}

#[tokio::test]
async fn t50_tables_of_the_previous_schema_are_read_and_a_newer_schema_is_refused() {
    let _shared = SERVER.read().await;
    let (mut client, schema) = connect_in_own_schema().await;
    // The previous release's tables: migration 0001 alone, no version.
    client
        .batch_execute(postgres::MIGRATION_0001)
        .await
        .unwrap();
    let (resource, lock) = ("t50/resource", "t50/lock");
    fenced_transaction(&mut client, resource, lock, 7, async |_| Ok(()))
        .await
        .unwrap();

    postgres::migrate(&client)
        .await
        .expect("the previous schema migrates");
    let version: i32 = client
        .query_one("SELECT version FROM leasehold_fence_schema", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, postgres::SCHEMA_VERSION);
    assert_eq!(
        postgres::highest(&client, resource, lock).await.unwrap(),
        Some(7)
    );
    postgres::migrate(&client)
        .await
        .expect("migrating again changes nothing");

    let newer = postgres::SCHEMA_VERSION + 1;
    client
        .execute("UPDATE leasehold_fence_schema SET version = $1", &[&newer])
        .await
        .unwrap();
    let refused = postgres::migrate(&client)
        .await
        .expect_err("a newer schema is refused");
    let said = refused
        .as_db_error()
        .map(|e| e.message().to_owned())
        .unwrap_or_else(|| refused.to_string());
    assert!(
        said.contains(&format!("schema version {newer}"))
            && said.contains(&format!("version {} and older", postgres::SCHEMA_VERSION)),
        "{said}"
    );
    let kept: i32 = client
        .query_one("SELECT version FROM leasehold_fence_schema", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, newer, "the refused migration changed nothing");
    assert_eq!(
        postgres::highest(&client, resource, lock).await.unwrap(),
        Some(7)
    );
    client
        .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
        .await
        .unwrap();
}
