//! The PostgreSQL adapter: the fence lives in a table beside the data it
//! protects, and the check, the record of the new highest token and the
//! caller's own statements commit (or roll back) as one transaction.
//!
//! - [`migrate`] creates the tables (`migrations/postgres/*.sql`, idempotent)
//!   and records their schema version, refusing tables of a newer one.
//! - [`fenced_transaction`] opens a transaction, checks and records the token
//!   with one upsert, runs the caller's statements, and commits.
//! - [`rejections`] reads the audit table: every refused write, newest first.
//! - [`highest`] reads the highest token accepted for a (resource, lock).
//! - [`statements`]: the SQL all of these run, public so the Python adapter
//!   runs the very same text.
//!
//! # Why one upsert
//!
//! `INSERT … ON CONFLICT … DO UPDATE … WHERE highest_token <= excluded…`
//! both checks and records, and it takes the row lock on the
//! (resource, lock) fence row. A concurrent writer of the same pair waits on
//! that lock until this transaction commits or rolls back, then re-checks
//! against the committed value. So no stale writer can slip between the
//! check and the write, and the fence row's writers commit in token order.
//!
//! # The plain-SQL pattern (for other languages)
//!
//! Any client can fence the same tables; tokens are bigint (≤ i64::MAX).
//! The statements below are [`statements`]' (take them from there rather
//! than copying them, as the Python adapter does):
//!
//! ```sql
//! BEGIN;
//! INSERT INTO leasehold_fence (resource, lock, highest_token)
//!      VALUES ($resource, $lock, $token)
//! ON CONFLICT (resource, lock) DO UPDATE
//!         SET highest_token = excluded.highest_token, updated_at = now()
//!       WHERE leasehold_fence.highest_token <= excluded.highest_token
//!   RETURNING highest_token;
//! -- No row returned: the token is stale. Read the highest, then
//! --   SELECT highest_token FROM leasehold_fence WHERE resource = $resource AND lock = $lock;
//! --   ROLLBACK;
//! --   INSERT INTO leasehold_fence_rejections (resource, lock, presented, highest)
//! --        VALUES ($resource, $lock, $token, $highest);
//! --   and stop writing: the lock has passed to a newer holder.
//! -- One row returned: the token is accepted; run your statements.
//! UPDATE accounts SET balance = balance - 10 WHERE id = 7;
//! COMMIT;
//! ```
//!
//! Equal tokens are accepted (the same holder writing again). A token that
//! is accepted but whose transaction rolls back is not recorded.

pub mod statements;
mod transaction;

pub use transaction::{fenced_transaction, token_to_sql, FenceError};

use crate::{Audit, Rejection};
use std::sync::LazyLock;
use tokio_postgres::Client;

/// Migration 0001: the fence table and the rejection audit table.
pub const MIGRATION_0001: &str = include_str!("../../migrations/postgres/0001_fence.sql");

/// Migration 0002: the tables' schema version (a one-row table), checked
/// before anything is changed: tables of a newer version are refused.
pub const MIGRATION_0002: &str = include_str!("../../migrations/postgres/0002_schema_version.sql");

/// The schema version of the tables [`migrate`] leaves, and the newest it
/// accepts (`leasehold_fence_schema.version`; version 1 is 0001 alone).
pub const SCHEMA_VERSION: i32 = 2;

/// Every migration, in order: what [`migrate`] runs (and the Python
/// adapter's `migrate`, from the same text).
pub const MIGRATIONS: &str = concat!(
    include_str!("../../migrations/postgres/0001_fence.sql"),
    include_str!("../../migrations/postgres/0002_schema_version.sql")
);

/// The highest token the adapter stores: PostgreSQL's `bigint` is signed,
/// so tokens above `i64::MAX` are refused ([`FenceError::TokenOutOfRange`]).
pub const TOKEN_MAX: u64 = i64::MAX as u64;

/// The in-process audit of this adapter (metric label `postgres`): every
/// refusal by [`fenced_transaction`] in this process is counted, logged and
/// remembered here, in addition to the row in `leasehold_fence_rejections`.
pub fn audit() -> &'static Audit {
    static AUDIT: LazyLock<Audit> = LazyLock::new(|| Audit::new("postgres"));
    &AUDIT
}

/// Creates the adapter's tables if they do not exist and records their
/// schema version ([`SCHEMA_VERSION`]); refuses tables of a newer version
/// (an error naming both) before changing anything. Idempotent and safe
/// to run from several processes at once; call it at start-up.
pub async fn migrate(client: &Client) -> Result<(), tokio_postgres::Error> {
    let migrated = client.batch_execute(MIGRATIONS).await;
    if migrated.is_err() {
        // The migrations open their own transactions: one that failed is
        // still open, aborted; end it so the connection is usable.
        let _ = client.batch_execute("ROLLBACK").await;
    }
    migrated
}

/// The most recent `limit` refusals from the audit table, newest first.
pub async fn rejections(
    client: &Client,
    limit: u32,
) -> Result<Vec<Rejection>, tokio_postgres::Error> {
    let rows = client
        .query(statements::REJECTIONS, &[&i64::from(limit)])
        .await?;
    Ok(rows
        .iter()
        .map(|row| Rejection {
            resource: row.get(0),
            lock: row.get(1),
            presented: token_from_sql(row.get(2)),
            highest: token_from_sql(row.get(3)),
            at_unix_ms: row.get(4),
        })
        .collect())
}

/// The highest token accepted for (`resource`, `lock`), `None` if none yet.
pub async fn highest(
    client: &Client,
    resource: &str,
    lock: &str,
) -> Result<Option<u64>, tokio_postgres::Error> {
    let row = client
        .query_opt(statements::HIGHEST, &[&resource, &lock])
        .await?;
    Ok(row.map(|row| token_from_sql(row.get(0))))
}

/// A token read back from the database. Only tokens that passed
/// [`FenceError::TokenOutOfRange`]'s check are ever written (and the fence
/// table has `CHECK (highest_token >= 0)`), so a negative one means the
/// tables were written by something that broke the contract: crash.
fn token_from_sql(token: i64) -> u64 {
    u64::try_from(token).expect("fence tables hold only tokens in 0..=i64::MAX")
}
