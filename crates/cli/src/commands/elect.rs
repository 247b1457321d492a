//! `leasehold elect NAME --value V -- CMD`: campaigns to lead an election
//! and runs the command while leading; `elect NAME --observe` follows who
//! leads; `elect NAME --leader` says who leads now.
//!
//! An election is a lock (see `leasehold_core::election`), so campaigning
//! is `lock` with the value as the holder's metadata entry `value`: the
//! same FIFO queue, the same supervision (the command's process group is
//! stopped the moment the lead is lost, and `elect` exits 6), the same
//! variables (`LEASEHOLD_TOKEN` is the epoch). Observing prints the leader
//! now, then every change, including "no leader" when the leader resigned,
//! expired or was force-released and nobody took over in the same step.

use super::events::stop_signal;
use super::lock::{self, LockArgs};
use super::{lock_name, Global, HoldFlags};
use crate::duration;
use crate::error::{exit_for, CliError};
use crate::exit::Exit;
use leasehold_client::wire::{leader_change_json, LeaderChange};
use leasehold_client::{LeaderStream, LockName};
use leasehold_core::election::VALUE_KEY;
use std::ffi::OsString;
use std::time::Duration;

/// `leasehold elect`
#[derive(clap::Args, Debug)]
pub struct ElectArgs {
    /// The election (a lock name).
    pub name: String,
    /// Campaign with this value (what observers read: an address, an id).
    #[arg(long, required_unless_present_any = ["observe", "leader"])]
    pub value: Option<String>,
    /// Print the leader now, then every change, until Ctrl-C or SIGTERM.
    #[arg(long, conflicts_with_all = ["value", "leader"])]
    pub observe: bool,
    /// Print the leader now and exit.
    #[arg(long, conflicts_with_all = ["value", "observe"])]
    pub leader: bool,
    /// With --observe or --leader: JSON, one object per line.
    #[arg(long)]
    pub json: bool,
    /// Ttl of the lease that leads; it is renewed every ttl/3.
    #[arg(long, value_parser = duration::ttl, default_value = "10s")]
    pub ttl: Duration,
    /// Wait up to this long to lead (campaigns queue first come, first
    /// served; exit 3 if not leading by then). At most 1h (WAIT_MS_MAX).
    #[arg(long, value_parser = duration::wait, default_value = "1h")]
    pub wait: Duration,
    /// The protected resource checks fencing tokens (LEASEHOLD_TOKEN, the epoch).
    #[arg(long)]
    pub fenced: bool,
    /// After this leader's lease expires, nobody leads for this long (a
    /// paused leader's writes in flight land before the next one starts).
    #[arg(long, value_parser = duration::parse)]
    pub lock_delay: Option<Duration>,
    /// After SIGTERM on loss of the lead, wait this long before SIGKILL.
    #[arg(long, value_parser = duration::parse, default_value = "5s")]
    pub grace: Duration,
    /// Owner name of the lease (default: user@host:leasehold).
    #[arg(long)]
    pub owner: Option<String>,
    /// The command to run while leading, after `--`. Without one, `elect`
    /// prints the variables and leads until SIGINT or SIGTERM.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Runs `elect`; returns the exit code.
pub async fn run(args: ElectArgs, global: &Global) -> Result<u8, CliError> {
    let name = lock_name(&args.name)?;
    if args.observe {
        return observe(&name, args.json, global).await;
    }
    if args.leader {
        return leader(&name, args.json, global).await;
    }
    let value = args.value.expect("clap requires --value to campaign");
    leasehold_core::election::check_value(&value).map_err(leasehold_client::Error::from)?;
    let campaign = LockArgs {
        names: vec![args.name],
        ttl: args.ttl,
        wait: args.wait,
        fenced: args.fenced,
        grace: args.grace,
        owner: args.owner,
        lease: None,
        hold: HoldFlags {
            metadata: vec![(VALUE_KEY.to_owned(), value)],
            lock_delay: args.lock_delay,
            ..HoldFlags::default()
        },
        command: args.command,
    };
    lock::run(campaign, global).await
}

/// Prints the leader now.
async fn leader(name: &LockName, json: bool, global: &Global) -> Result<u8, CliError> {
    let client = global.client().await?;
    let leader = client.leader(name).await?;
    let change = LeaderChange {
        leader,
        revision: 0,
    };
    println!("{}", change_line(&change, json));
    Ok(Exit::Ok.code())
}

/// Prints the leader now, then each change, until a signal (exit 0) or the
/// stream's end or error (non-zero).
async fn observe(name: &LockName, json: bool, global: &Global) -> Result<u8, CliError> {
    let client = global.client().await?;
    let mut stream: LeaderStream = client.observe(name).await?;
    let stopped = stop_signal();
    tokio::pin!(stopped);
    loop {
        let next = tokio::select! {
            () = &mut stopped => return Ok(Exit::Ok.code()),
            next = stream.next() => next,
        };
        match next {
            Ok(Some(change)) => println!("{}", change_line(&change, json)),
            Ok(None) => {
                return Err(CliError::new(
                    Exit::Unavailable,
                    "the server ended the stream (it may be shutting down); run \
                     `leasehold elect NAME --observe` again to go on",
                ))
            }
            Err(error) => {
                let message = format!(
                    "observing ended: {error}; run `leasehold elect NAME --observe` again to go on"
                );
                return Err(CliError::new(exit_for(&error), message));
            }
        }
    }
}

/// One change as a line: JSON, or `leader OWNER (lease L) epoch T value V`
/// or `no leader` (with the revision unless it is unknown).
fn change_line(change: &LeaderChange, json: bool) -> String {
    if json {
        return leader_change_json(change).to_string();
    }
    let at = match change.revision {
        0 => String::new(),
        revision => format!(" (revision {revision})"),
    };
    match &change.leader {
        None => format!("no leader{at}"),
        Some(leader) => format!(
            "leader {} (lease {}) epoch {} value {:?}{at}",
            leader.owner, leader.lease, leader.token, leader.value
        ),
    }
}
