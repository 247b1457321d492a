//! [`Client::with_lock`]: run a piece of work while holding a lock, and stop
//! it the moment ownership is lost. The work is a future; "stop" means it is
//! dropped at its next await point, so it cannot write after the loss
//! unless it writes without awaiting — which is what `fence()` before each
//! write is for.

use crate::acquire::LockOptions;
use crate::error::Error;
use crate::guard::LockHandle;
use crate::loss::LockLost;
use crate::name::IntoLockName;
use crate::release::ReleaseOutcome;
use crate::Client;
use std::future::Future;
use std::time::Duration;

/// The lease ttl `with_lock` uses unless the options set one.
pub const WITH_LOCK_TTL_DEFAULT: Duration = Duration::from_secs(10);

/// How the work under a lock ended.
#[derive(Debug)]
pub enum WorkOutcome<T> {
    /// The work finished while the lock was held; then the lock was released.
    Finished {
        /// What the work returned.
        value: T,
        /// What the release found.
        release: Result<ReleaseOutcome, Error>,
    },
    /// Ownership was lost; the work was cancelled (dropped) at that moment.
    Lost(LockLost),
    /// The work ran past the operation deadline and was cancelled; then the
    /// lock was released.
    DeadlineExceeded {
        /// What the release found.
        release: Result<ReleaseOutcome, Error>,
    },
}

impl<T> WorkOutcome<T> {
    /// The work's value, if it finished.
    pub fn finished(self) -> Option<T> {
        match self {
            WorkOutcome::Finished { value, .. } => Some(value),
            _ => None,
        }
    }
}

impl Client {
    /// Grants a lease, acquires `name`, runs `work` with a [`LockHandle`]
    /// while the lock is held, then releases the lock and revokes the lease.
    /// The work is cancelled the moment ownership is lost, or when the
    /// options' deadline passes. `Err` means the lock was never had (busy,
    /// wait timed out, unavailable, invalid name).
    ///
    /// ```no_run
    /// # async fn f(client: leasehold_client::Client) -> Result<(), leasehold_client::Error> {
    /// use leasehold_client::{LockOptions, WorkOutcome};
    /// use std::time::Duration;
    ///
    /// let options = LockOptions::default().wait(Duration::from_secs(30)).fenced(true);
    /// let outcome = client
    ///     .with_lock("jobs/nightly", options, |guard| async move {
    ///         let token = guard.fence()?; // right before the protected write
    ///         Ok::<_, leasehold_client::LockLost>(token)
    ///     })
    ///     .await?;
    /// if let WorkOutcome::Lost(lost) = outcome {
    ///     eprintln!("stopped: {lost}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn with_lock<N, F, Fut, T>(
        &self,
        name: N,
        options: LockOptions,
        work: F,
    ) -> Result<WorkOutcome<T>, Error>
    where
        N: IntoLockName,
        F: FnOnce(LockHandle) -> Fut,
        Fut: Future<Output = T>,
    {
        let name = name.into_lock_name()?;
        let mut lease = self.lease(options.ttl.unwrap_or(WITH_LOCK_TTL_DEFAULT));
        if let Some(owner) = &options.owner {
            lease = lease.owner(owner.clone());
        }
        let lease = lease.grant().await?;
        let guard = match lease.lock(&name).options(options.clone()).acquire().await {
            Ok(guard) => guard,
            Err(error) => {
                let _ = lease.revoke().await;
                return Err(error);
            }
        };
        let deadline = async {
            match options.deadline {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        let work = work(guard.handle());
        let outcome = tokio::select! {
            biased;
            lost = guard.lost() => {
                drop(guard);
                return Ok(WorkOutcome::Lost(lost));
            }
            value = work => WorkOutcome::Finished { value, release: guard.release().await },
            () = deadline => WorkOutcome::DeadlineExceeded { release: guard.release().await },
        };
        let _ = lease.revoke().await;
        Ok(outcome)
    }
}
