//! # leasehold-client
//!
//! The async Rust client of Leasehold, built so that the safe way is the
//! easy way: **loss of renewal is loss of ownership**.
//!
//! - A [`Lease`] is renewed in the background over one stream (every ttl/3;
//!   its `Lock.Session` stream, which also carries its acquires and releases
//!   unless [`Transport::Unary`] is chosen) and counted valid only until
//!   `send time of the last acknowledged keep-alive + ttl − margin`, on
//!   CLOCK_BOOTTIME, which keeps counting while the process is paused or
//!   the machine sleeps. At that instant, or at the first definite renewal
//!   failure, the lease is lost for good.
//! - A [`LockGuard`] carries the fencing [`Token`]. Call
//!   [`fence()`](LockHandle::fence) right before each protected write: it
//!   answers from the clock *now*, so a process that wakes from a long pause
//!   learns it lost the lock before it writes. [`lost()`](LockHandle::lost)
//!   and a [`CancellationToken`](tokio_util::sync::CancellationToken) fire
//!   at the loss. Dropping the guard releases the lock; the renewer never
//!   outlives the guards.
//! - [`Client::with_lock`] runs a future under a lock and cancels it at the loss.
//!
//! The protected resource must still check the token (reject any lower than
//! the highest it has accepted): a client can stop itself, but only the
//! resource can stop a write already on the wire.
//!
//! ```
//! # use leasehold_server::{serve_on, ServeConfig};
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let data = tempfile::tempdir()?;
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let addr = listener.local_addr()?;
//! # let config = ServeConfig::single_node(data.path().to_path_buf(), addr);
//! # let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! # let server = tokio::spawn(serve_on(config, listener, async { let _ = stopped.await; }));
//! # let endpoint = format!("http://{addr}");
//! use leasehold_client::{Client, LockName};
//! use std::time::Duration;
//!
//! let client = Client::connect([endpoint.as_str()]).await?;
//! let lease = client.lease(Duration::from_secs(10)).owner("invoice-worker").grant().await?;
//! let name = LockName::from_parts("billing", ["invoices", "2026-11"])?;
//! let guard = lease.lock(&name).wait(Duration::from_secs(5)).fenced(true).acquire().await?;
//!
//! // Right before each write to the protected resource:
//! let token = guard.fence()?;
//! // resource.write(token, ...) — the resource rejects tokens lower than
//! // the highest it has seen.
//! # let _ = token;
//!
//! let outcome = guard.release().await?;
//! assert!(outcome.was_held());
//! # drop(lease);
//! # let _ = stop.send(());
//! # server.await??;
//! # Ok(())
//! # }
//! ```
//!
//! Besides leases kept alive in the background, every call of the service
//! is there as one method on [`Client`] (the one-shot API, [`ops`]): grant
//! a lease without a keeper, acquire and release by lease id, describe and
//! list locks, force-release, the fenced store, events, cluster status and
//! membership. All of them go through the same call path (failover,
//! retries, leader following) and fail with the same typed [`Error`].
//!
//! Modules: [`clock`] (the boot clock and its trait), [`backoff`] (jittered,
//! seedable retry delays), [`lease`] (leases and their timing), [`ops`]
//! (the one-shot API), [`wire`] (the protocol's read views it returns),
//! [`diagnose`] (the stale-lock verdicts, pure functions of what was
//! observed), [`show`] (durations, times and owners as people read them),
//! [`metrics`] (the client-side metric names).

mod acquire;
mod acquire_set;
mod answered;
pub mod backoff;
mod call;
mod client;
pub mod clock;
pub mod diagnose;
mod endpoints;
mod error;
mod from_status;
mod guard;
pub mod lease;
mod loss;
pub mod metrics;
mod name;
pub mod ops;
mod options;
mod owner;
mod release;
mod request_id;
mod session;
pub mod show;
mod tls;
pub mod wire;
mod with_lock;

pub use acquire::{LockOptions, LockRequest};
pub use acquire_set::LockSetRequest;
pub use answered::answered_by;
pub use client::Client;
pub use error::Error;
pub use guard::{LockGuard, LockHandle};
pub use lease::{KeepAliveBuilder, Lease, LeaseBuilder, LeaseHandle, Renewed};
pub use leasehold_core::{FencedKey, LeaseId, Reason, Revision, Token};
pub use loss::{LockLost, LossCause};
pub use name::{IntoLockName, LockName};
pub use ops::backup::BackupDownload;
pub use ops::cluster::{ADD_MEMBER_WAIT_MAX, REMOVE_MEMBER_WAIT_MAX};
pub use ops::election::LeaderStream;
pub use ops::events::{EventStream, EventsQuery};
pub use ops::fenced::FencedValue;
pub use ops::force::{ForceRelease, ForceReleased};
pub use ops::lease::{Granted, Renewal};
pub use ops::lock_set::AcquiredAll;
pub use ops::locks::Acquired;
pub use ops::Consistency;
pub use options::{ClientOptions, Transport};
pub use owner::{owner_info, owner_info_of, owner_process, OwnerProcess};
pub use release::ReleaseOutcome;
pub use request_id::new_request_id;
pub use tls::TlsOptions;
pub use tokio_util::sync::CancellationToken;
pub use with_lock::{WorkOutcome, WITH_LOCK_TTL_DEFAULT};
