//! The client commands, one file per command group. Each exposes an
//! `Args` struct (clap derive) and `run(args, global)`; `main.rs` only
//! parses and dispatches.

pub mod acquire;
pub mod acquire_set;
pub mod audit;
pub mod auth;
pub mod diagnose;
pub mod drill;
pub mod elect;
pub mod events;
pub mod fenced;
pub mod force_release;
pub mod get;
pub mod lease;
pub mod lease_ls;
pub mod lock;
pub mod ls;
pub mod member;
pub mod packaging;
pub mod release;
pub mod serve;
pub mod serve_limits;
pub mod snapshot;
pub mod snapshot_restore;
pub mod status;

use crate::error::CliError;
use crate::exit::Exit;
use leasehold_client::{Client, ClientOptions, Consistency, LockName, LockOptions, TlsOptions};
use std::path::PathBuf;
use std::time::Duration;

/// Options every client command takes.
#[derive(clap::Args, Debug, Clone)]
pub struct Global {
    /// Server endpoints, comma-separated, tried in order on connection failure.
    #[arg(
        long,
        global = true,
        env = "LEASEHOLD_ENDPOINTS",
        default_value = "http://127.0.0.1:7420",
        value_name = "URLS"
    )]
    pub endpoints: String,
    /// Bound on each call to the server (500ms, 2s, 1m, ...).
    #[arg(long, global = true, default_value = "5s", value_parser = crate::duration::positive, value_name = "DURATION")]
    pub timeout: Duration,
    /// Bound on connecting to an endpoint, and on its silence: a connection
    /// whose server answers no HTTP/2 ping for this long counts as dead, so
    /// a hung endpoint (accepts, never answers) fails over to the next
    /// within about twice this.
    #[arg(long, global = true, default_value = "1s", value_parser = crate::duration::positive, value_name = "DURATION")]
    pub connect_timeout: Duration,
    /// Bearer token for servers with auth enabled (from `leasehold token
    /// create`). Not LEASEHOLD_TOKEN, which is a fencing token.
    #[arg(
        long,
        global = true,
        env = "LEASEHOLD_AUTH_TOKEN",
        value_name = "SECRET",
        hide_env_values = true
    )]
    pub auth_token: Option<String>,
    /// CA certificate (PEM) that `https://` endpoints' certificates must
    /// chain to.
    #[arg(
        long = "cacert",
        global = true,
        env = "LEASEHOLD_CACERT",
        value_name = "FILE"
    )]
    pub client_cacert: Option<PathBuf>,
    /// Client certificate (PEM) for servers that require one (mTLS); needs --key.
    #[arg(
        long = "cert",
        global = true,
        env = "LEASEHOLD_CERT",
        value_name = "FILE"
    )]
    pub client_cert: Option<PathBuf>,
    /// Private key (PEM) of --cert.
    // The fields are `client_*`: a global arg's id must not be a subcommand
    // field's, such as `fenced put`'s positional `key` or `serve`'s `tls_key`.
    #[arg(
        long = "key",
        global = true,
        env = "LEASEHOLD_KEY",
        value_name = "FILE"
    )]
    pub client_key: Option<PathBuf>,
}

impl Global {
    /// A client for one command's calls, connected to the first reachable
    /// endpoint. Each call is bounded by `--timeout` (a blocking acquire or
    /// a membership change adds its wait), and a transient failure is
    /// retried once, with the same request id: on the leader a follower
    /// named, else on the next endpoint. A command fails fast and says why;
    /// retrying later is the caller's decision.
    pub async fn client(&self) -> Result<Client, CliError> {
        let options = ClientOptions {
            call_timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            keep_alive_interval: Some(self.connect_timeout),
            retry_budget: self.timeout,
            retries_max: Some(1),
            auth_token: self.auth_token.clone(),
            tls: self.tls()?,
            ..ClientOptions::default()
        };
        Ok(Client::connect_with(self.endpoints.split(','), options).await?)
    }

    /// A client for a lease kept alive until the command ends (`lock`,
    /// `lease keepalive`): the library's own retry rules, which ride through
    /// restarts and leader changes, each call bounded by `--timeout`.
    pub async fn keeper_client(&self) -> Result<Client, CliError> {
        let options = ClientOptions {
            call_timeout: self.timeout,
            auth_token: self.auth_token.clone(),
            tls: self.tls()?,
            ..ClientOptions::default()
        };
        Ok(Client::connect_with(self.endpoints.split(','), options).await?)
    }
}

impl Global {
    /// The TLS settings of `--cacert`, `--cert` and `--key`, files read:
    /// a missing file, or `--cert` without `--key` (or the reverse), is a
    /// usage error.
    pub fn tls(&self) -> Result<TlsOptions, CliError> {
        Ok(TlsOptions::from_files(
            self.client_cacert.as_deref(),
            self.client_cert.as_deref(),
            self.client_key.as_deref(),
        )?)
    }
}

/// Validates a lock name given on the command line before anything is
/// sent: an invalid one exits 2 naming the limit, as the server would.
pub fn lock_name(raw: &str) -> Result<LockName, CliError> {
    Ok(LockName::parse(raw).map_err(leasehold_client::Error::from)?)
}

/// How a lock is held, beyond wait and fencing: the flags `acquire` and
/// `lock` share.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct HoldFlags {
    /// After this holder's lease expires, keep the lock unavailable this long.
    #[arg(long, value_parser = crate::duration::parse)]
    pub lock_delay: Option<Duration>,
    /// The server releases the lock after this long.
    #[arg(long, value_parser = crate::duration::parse)]
    pub max_hold: Option<Duration>,
    /// Metadata KEY=VALUE stored with the holder (repeatable).
    #[arg(long = "metadata", value_parser = crate::owner::parse_key_value, value_name = "KEY=VALUE")]
    pub metadata: Vec<(String, String)>,
    /// Hold one of N permits of a semaphore instead of a lock: at most N
    /// holders at once, first come first served (as `consul lock -n`).
    #[arg(long, value_name = "N", value_parser = permits_limit,
          conflicts_with_all = ["shared", "exclusive", "lock_delay", "max_hold", "metadata"])]
    pub limit: Option<u32>,
    /// With --limit: hold K of the semaphore's N permits (default 1). A big
    /// ask is never overtaken by later smaller ones.
    #[arg(long, value_name = "K", requires = "limit", value_parser = permits_limit)]
    pub permits: Option<u32>,
    /// Hold a read-write lock as a reader, beside other readers.
    #[arg(long, conflicts_with_all = ["exclusive", "lock_delay", "max_hold", "metadata"])]
    pub shared: bool,
    /// Hold a read-write lock as its writer, alone.
    #[arg(long, conflicts_with_all = ["lock_delay", "max_hold", "metadata"])]
    pub exclusive: bool,
}

/// A semaphore's size, or how many of its permits to hold: 1 to
/// `PERMITS_MAX` (a count above the size is refused by the server, naming
/// both).
fn permits_limit(raw: &str) -> Result<u32, String> {
    let max = leasehold_core::limits::PERMITS_MAX;
    match raw.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{raw} is not a number of permits from 1 to {max} (PERMITS_MAX)"
        )),
    }
}

impl HoldFlags {
    /// The lock options of these flags, with `wait` and `fenced`.
    pub fn options(&self, wait: Duration, fenced: bool) -> LockOptions {
        let mut options = LockOptions::default().wait(wait).fenced(fenced);
        if let Some(permits) = self.limit {
            options = options.semaphore(permits, self.permits.unwrap_or(1));
        }
        if self.shared {
            options = options.shared();
        }
        if self.exclusive {
            options = options.exclusive();
        }
        if let Some(delay) = self.lock_delay {
            options = options.lock_delay(delay);
        }
        if let Some(max_hold) = self.max_hold {
            options = options.max_hold(max_hold);
        }
        for (key, value) in &self.metadata {
            options = options.metadata(key.clone(), value.clone());
        }
        options
    }

    /// Refuses the flags a set of locks taken at once does not take (only
    /// --wait and --fenced apply to all of them).
    pub fn check_for_a_set(&self) -> Result<(), CliError> {
        let given = [
            ("--limit", self.limit.is_some()),
            ("--shared", self.shared),
            ("--exclusive", self.exclusive),
            ("--lock-delay", self.lock_delay.is_some()),
            ("--max-hold", self.max_hold.is_some()),
            ("--metadata", !self.metadata.is_empty()),
        ];
        match given.iter().find(|(_, set)| *set) {
            Some((flag, _)) => Err(CliError::new(
                Exit::Usage,
                format!(
                    "{flag} applies to one lock; several names are taken as plain locks, all at \
                     once (only --wait and --fenced apply to them): name one lock, or leave {flag} out"
                ),
            )),
            None => Ok(()),
        }
    }
}

/// The consistency a `--stale` flag asks for.
pub fn consistency(stale: bool) -> Consistency {
    if stale {
        Consistency::Stale
    } else {
        Consistency::Linearizable
    }
}
