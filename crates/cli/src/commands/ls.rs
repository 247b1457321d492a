//! `leasehold ls [PREFIX]`: lists locks by name prefix (linearizable read;
//! with `--stale`, any node's applied state, which may be behind) as an
//! aligned table, or one JSON array.

use super::{consistency, Global};
use crate::error::CliError;
use crate::lock_view::{lock_json, lock_rows};
use crate::output::{print_json, table};
use serde_json::Value;

/// `leasehold ls`
#[derive(clap::Args, Debug)]
pub struct LsArgs {
    /// Only locks whose name starts with this.
    #[arg(default_value = "")]
    pub prefix: String,
    /// Print one JSON document (an array of locks).
    #[arg(long)]
    pub json: bool,
    /// Answer from the node reached, without a read barrier: any node
    /// answers (no leader needed), but the answer may be behind the leader's.
    #[arg(long)]
    pub stale: bool,
}

/// Runs `ls`.
pub async fn run(args: LsArgs, global: &Global) -> Result<(), CliError> {
    let client = global.client().await?;
    let reply = client
        .list_locks(&args.prefix, consistency(args.stale))
        .await?;
    crate::lock_view::warn_if_removed(reply.header.as_ref());
    if reply.truncated {
        eprintln!(
            "note: more locks match {:?} than the server returns at once; narrow the prefix",
            args.prefix
        );
    }
    if args.json {
        print_json(&Value::Array(reply.locks.iter().map(lock_json).collect()));
    } else if reply.locks.is_empty() {
        eprintln!("no locks match {:?}", args.prefix);
    } else {
        let now_unix_ms = reply.header.as_ref().map_or(0, |h| h.server_time_unix_ms);
        print!("{}", table(&lock_rows(&reply.locks, now_unix_ms)));
    }
    Ok(())
}
