//! [`fenced_transaction`]: check-and-record the token, run the caller's
//! statements, commit — one PostgreSQL transaction.

use super::statements::{HIGHEST, RECORD_REJECTION, UPSERT};
use super::{audit, token_from_sql, TOKEN_MAX};
use crate::StaleToken;
use tokio_postgres::{Client, Transaction};

/// Why a fenced transaction did not commit.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    /// The token is lower than the highest accepted: a newer holder has
    /// written. Nothing of this transaction was applied; stop writing.
    #[error(transparent)]
    Stale(StaleToken),
    /// The token does not fit PostgreSQL's `bigint`; nothing was sent.
    #[error("fencing token {token} is above {max} (TOKEN_MAX, i64::MAX), the largest the PostgreSQL adapter can store as bigint; refusing it rather than wrapping")]
    TokenOutOfRange {
        /// The token presented.
        token: u64,
        /// The largest token the adapter accepts (`i64::MAX`).
        max: u64,
    },
    /// The caller's statements failed; the transaction was rolled back and
    /// the token was not recorded.
    #[error("fenced work failed, transaction rolled back: {0}")]
    Work(#[source] tokio_postgres::Error),
    /// The fence's own statements (begin, check, commit) failed. If the
    /// commit itself failed the outcome is unknown, as with any commit.
    #[error("postgres: {0}")]
    Postgres(#[from] tokio_postgres::Error),
}

/// Runs `work` in one transaction that first checks `token` against the
/// highest accepted for (`resource`, `lock`) and records it as the new
/// highest. Commits only if the token is accepted and `work` succeeds.
///
/// A stale token rolls back before `work` runs, is recorded in
/// `leasehold_fence_rejections` and in [`audit()`](super::audit), and
/// returns [`FenceError::Stale`]. (If writing the audit row fails, that is
/// logged and `Stale` is still returned: the refusal is what the caller
/// must act on.)
///
/// ```no_run
/// # async fn example(client: &mut tokio_postgres::Client, token: u64) -> Result<(), leasehold_fence::postgres::FenceError> {
/// use leasehold_fence::postgres::{fenced_transaction, FenceError};
///
/// let rows = fenced_transaction(client, "accounts", "accounts/7", token, async |tx| {
///     tx.execute("UPDATE accounts SET balance = balance - 10 WHERE id = 7", &[]).await
/// })
/// .await;
/// match rows {
///     Ok(updated) => println!("updated {updated} row(s)"),
///     Err(FenceError::Stale(stale)) => println!("lost the lock: {stale}"),
///     Err(other) => return Err(other),
/// }
/// # Ok(())
/// # }
/// ```
pub async fn fenced_transaction<T, F>(
    client: &mut Client,
    resource: &str,
    lock: &str,
    token: u64,
    work: F,
) -> Result<T, FenceError>
where
    F: AsyncFnOnce(&Transaction<'_>) -> Result<T, tokio_postgres::Error>,
{
    let token_sql = token_to_sql(token)?;
    let tx = client.transaction().await?;
    let accepted = tx
        .query_opt(UPSERT, &[&resource, &lock, &token_sql])
        .await?;
    if accepted.is_none() {
        // The upsert locked the row; this reads the committed highest.
        let highest_sql: i64 = tx.query_one(HIGHEST, &[&resource, &lock]).await?.get(0);
        tx.rollback().await?;
        let stale = StaleToken {
            lock: lock.to_owned(),
            presented: token,
            highest: token_from_sql(highest_sql),
        };
        audit().record(resource, &stale);
        let recorded = client
            .execute(
                RECORD_REJECTION,
                &[&resource, &lock, &token_sql, &highest_sql],
            )
            .await;
        if let Err(error) = recorded {
            tracing::warn!(resource, lock, %error, "could not write the rejection audit row");
        }
        return Err(FenceError::Stale(stale));
    }
    match work(&tx).await {
        Ok(value) => {
            tx.commit().await?;
            Ok(value)
        }
        Err(error) => {
            // Dropping the transaction would also roll back, but only
            // asynchronously; roll back now so the fence row is free.
            if let Err(rollback) = tx.rollback().await {
                tracing::warn!(resource, lock, %rollback, "rollback after failed work failed");
            }
            Err(FenceError::Work(error))
        }
    }
}

/// `token` as a bigint, or the clear refusal for tokens above
/// [`TOKEN_MAX`]. Public so other clients of the tables (the Python
/// adapter) refuse the same tokens with the same words before any SQL.
pub fn token_to_sql(token: u64) -> Result<i64, FenceError> {
    i64::try_from(token).map_err(|_| FenceError::TokenOutOfRange {
        token,
        max: TOKEN_MAX,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_above_i64_max_are_refused_before_sql() {
        assert_eq!(token_to_sql(i64::MAX as u64).unwrap(), i64::MAX);
        assert_eq!(token_to_sql(0).unwrap(), 0);
        let error = token_to_sql(i64::MAX as u64 + 1).unwrap_err();
        assert!(matches!(error, FenceError::TokenOutOfRange { token, .. } if token == 1 << 63));
        assert!(error.to_string().contains("i64::MAX"), "{error}");
    }
}
