//! The PostgreSQL adapter under the suite: each resource is a row of one
//! values table, written by `fenced_transaction` so the value and the
//! fence commit together. Every handle is a connection of its own.

use crate::suite::{Handle, Store, Write};
use leasehold_fence::postgres::{self, fenced_transaction, FenceError};
use leasehold_fence::{Rejection, StaleToken};
use leasehold_testkit::postgres::connect;
use tokio_postgres::Client;

/// Creates the values table once (under an advisory lock, since concurrent
/// `CREATE TABLE IF NOT EXISTS` can collide in the catalog).
const CREATE_VALUES: &str = "BEGIN;
    SELECT pg_advisory_xact_lock(7438291066);
    CREATE TABLE IF NOT EXISTS leasehold_conformance_values (
        resource text PRIMARY KEY,
        value    text NOT NULL
    );
    COMMIT;";

/// Sets ($1 resource) to ($2 value).
const UPSERT_VALUE: &str = "INSERT INTO leasehold_conformance_values (resource, value) \
     VALUES ($1, $2) ON CONFLICT (resource) DO UPDATE SET value = excluded.value";

/// Refusals read back at most (the newest; a case makes far fewer).
const REJECTIONS_READ_MAX: u32 = 10_000;

/// The test database, with the adapter's tables and the values table.
struct Postgres;

impl Store for Postgres {
    type Handle = Client;

    async fn handle(&self) -> Client {
        let client = connect().await;
        postgres::migrate(&client).await.expect("migrate");
        client
    }
}

impl Handle for Client {
    async fn put(&mut self, w: Write<'_>) -> Result<(), StaleToken> {
        let (resource, value) = (w.resource, w.value);
        let written = fenced_transaction(self, resource, w.lock, w.token, async |tx| {
            tx.execute(UPSERT_VALUE, &[&resource, &value]).await
        })
        .await;
        match written {
            Ok(_) => Ok(()),
            Err(FenceError::Stale(stale)) => Err(stale),
            Err(other) => panic!("fenced write to {resource}: {other}"),
        }
    }

    async fn value(&mut self, resource: &str) -> Option<String> {
        let sql = "SELECT value FROM leasehold_conformance_values WHERE resource = $1";
        let row = self.query_opt(sql, &[&resource]).await;
        row.expect("read a value").map(|row| row.get(0))
    }

    async fn highest(&mut self, resource: &str, lock: &str) -> Option<u64> {
        let highest = postgres::highest(self, resource, lock).await;
        highest.expect("read the highest token")
    }

    async fn rejections(&mut self, _resource: &str) -> Vec<Rejection> {
        let all = postgres::rejections(self, REJECTIONS_READ_MAX).await;
        all.expect("read the rejections")
    }
}

async fn store() -> Option<Postgres> {
    let client = connect().await;
    let created = client.batch_execute(CREATE_VALUES).await;
    created.expect("create the values table");
    Some(Postgres)
}

conformance!(store());
