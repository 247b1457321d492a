//! Where the tests find PostgreSQL: `LEASEHOLD_TEST_POSTGRES` (a
//! libpq-style connection string), which `.ci/run` exports after
//! installing and starting PostgreSQL. Without it, a CI run (`CI=true`)
//! fails; elsewhere the tests use [`LOCAL_DSN`], the role and database
//! `.ci/run` creates, so a newcomer who ran `bash .ci/run` once can run
//! `cargo test --workspace`. A server that cannot be reached fails the
//! test: nothing is skipped.

use crate::env::in_ci;
use tokio_postgres::{Client, NoTls};

/// The connection `.ci/run` sets up (role and database `leasehold_test`).
pub const LOCAL_DSN: &str =
    "host=127.0.0.1 port=5432 user=leasehold_test password=leasehold_test dbname=leasehold_test";

/// The connection string for tests: `LEASEHOLD_TEST_POSTGRES`, else
/// [`LOCAL_DSN`]. Under `CI=true` the variable must be set (a CI run that
/// lost its database must fail, not quietly test something else).
pub fn dsn() -> String {
    match std::env::var("LEASEHOLD_TEST_POSTGRES") {
        Ok(dsn) => dsn,
        Err(_) if in_ci() => panic!(
            "CI=true but LEASEHOLD_TEST_POSTGRES is not set: .ci/run must start PostgreSQL and export it"
        ),
        Err(_) => LOCAL_DSN.to_owned(),
    }
}

/// A connection to [`dsn`], its connection task spawned on the current
/// runtime (it ends with an error if the server restarts; the client then
/// sees that error).
pub async fn try_connect() -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(&dsn(), NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// As [`try_connect`], failing the test with what to do if it cannot.
pub async fn connect() -> Client {
    try_connect().await.unwrap_or_else(|error| {
        panic!(
            "cannot connect to PostgreSQL ({}): {error}\n\
             Run `bash .ci/run` once (installs and starts PostgreSQL, creates the test database) \
             or set LEASEHOLD_TEST_POSTGRES to a connection string.",
            dsn()
        )
    })
}
