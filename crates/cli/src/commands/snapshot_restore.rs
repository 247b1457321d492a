//! `leasehold snapshot restore FILE --data-dir DIR`: a new node (of a new
//! cluster) from a backup, whose tokens never repeat one the old cluster
//! handed out. The old cluster may have gone on granting after the backup,
//! so the new one starts above a *token floor*, which the operator gives
//! (`--token-floor N`, or `--revision-gap G` above the backup's revision):
//! the restore does not guess one. The backup's leases end as expired
//! (their holders' deadlines passed long ago) unless `--keep-leases`.

use super::serve::parse_peers;
use crate::error::CliError;
use crate::exit::Exit;
use crate::output::print_json;
use leasehold_server::backup;
use leasehold_server::restore::{restore, Floor, RestorePlan};
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Grants per second the suggested gap allows for: well above what one
/// cluster has been measured to sustain (docs/DESIGN.md §6d).
const SUGGESTED_GRANTS_PER_S: u64 = 1_000_000;
/// The smallest gap suggested, whatever the backup's age.
const SUGGESTED_GAP_MIN: u64 = 1_000_000_000;

/// Where a new cluster's tokens start, and whether the old state's leases
/// live on: the flags `snapshot restore` and `serve --force-new-cluster`
/// share.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct FloorFlags {
    /// Every token handed out from now on is above N (N above the state's
    /// revision, and above the highest token any protected resource saw).
    #[arg(long, value_name = "N", conflicts_with = "revision_gap")]
    pub token_floor: Option<u64>,
    /// The floor is the state's revision plus G: at least the tokens the
    /// old cluster may have handed out beyond it.
    #[arg(long, value_name = "G", value_parser = clap::value_parser!(u64).range(1..))]
    pub revision_gap: Option<u64>,
    /// Keep the state's leases and the locks they hold (their holders must
    /// still be renewing them) instead of ending them.
    #[arg(long)]
    pub keep_leases: bool,
}

impl FloorFlags {
    /// Whether any of these flags was given.
    pub fn given(&self) -> bool {
        self.token_floor.is_some() || self.revision_gap.is_some() || self.keep_leases
    }

    /// The plan for a new cluster of `members` from a state at `revision`
    /// written at `written_unix_ms`; refused, with a suggested gap, if no
    /// floor was named.
    pub fn plan(
        &self,
        revision: u64,
        written_unix_ms: u64,
        members: BTreeMap<u64, String>,
    ) -> Result<RestorePlan, CliError> {
        Ok(RestorePlan {
            floor: named_floor(
                self.token_floor,
                self.revision_gap,
                revision,
                written_unix_ms,
            )?,
            keep_leases: self.keep_leases,
            members,
        })
    }
}

/// `leasehold snapshot restore`
#[derive(clap::Args, Debug)]
pub struct RestoreArgs {
    /// The backup (`leasehold snapshot save`).
    pub file: PathBuf,
    /// The new node's data dir: empty or missing.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// The token floor, and whether the backup's leases are kept.
    #[command(flatten)]
    pub floor: FloorFlags,
    /// The new node's id.
    #[arg(long, default_value_t = 1)]
    pub node_id: u64,
    /// The address the new node will serve on (`serve --listen`), for a
    /// one-member cluster.
    #[arg(long, default_value = "127.0.0.1:7420", conflicts_with = "peers")]
    pub listen: SocketAddr,
    /// The new cluster's members, `ID=HOST:PORT,...`: restore each from the
    /// same backup with the same floor and members.
    #[arg(long, value_parser = parse_peers, value_name = "ID=ADDR,...")]
    pub peers: Option<BTreeMap<u64, String>>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Runs `snapshot restore`.
pub async fn run(args: RestoreArgs) -> Result<(), CliError> {
    let read = backup::read_file(&args.file)
        .map_err(|e| CliError::new(Exit::Other, format!("{}: {e}", args.file.display())))?;
    let members = match &args.peers {
        Some(peers) if !peers.contains_key(&args.node_id) => {
            let why = format!("--peers does not list this node ({})", args.node_id);
            return Err(CliError::new(Exit::Usage, why));
        }
        Some(peers) => peers.clone(),
        None => BTreeMap::from([(args.node_id, args.listen.to_string())]),
    };
    let header = &read.header;
    let plan = args
        .floor
        .plan(header.revision, header.created_unix_ms, members)?;
    let done = restore(&args.data_dir, &read, &plan)
        .await
        .map_err(|why| CliError::new(Exit::Usage, why))?;
    let dir = args.data_dir.display();
    if args.json {
        print_json(&json!({
            "data_dir": dir.to_string(),
            "backup_revision": done.backup_revision,
            "token_floor": done.floor,
            "leases_ended": done.leases_ended,
            "locks": done.locks,
            "leases": done.leases,
            "node_id": args.node_id,
        }));
    } else {
        println!(
            "restored {} (revision {}) into {dir}: {} leases ended, {} locks and {} leases kept; \
             every token from now on is above {}. Start the node: leasehold serve --data-dir {dir} \
             --node-id {} --listen ADDR",
            args.file.display(),
            done.backup_revision,
            done.leases_ended,
            done.locks,
            done.leases,
            done.floor,
            args.node_id
        );
    }
    Ok(())
}

/// The floor `--token-floor` or `--revision-gap` names; refused, with a
/// suggested gap for data at `revision` written at `written_unix_ms`, if
/// neither is given.
fn named_floor(
    token_floor: Option<u64>,
    revision_gap: Option<u64>,
    revision: u64,
    written_unix_ms: u64,
) -> Result<Floor, CliError> {
    match (token_floor, revision_gap) {
        (Some(floor), _) => Ok(Floor::At(floor)),
        (None, Some(gap)) => Ok(Floor::AboveBy(gap)),
        (None, None) => {
            let now = leasehold_server::clock::wall_unix_ms();
            let age_s = now.saturating_sub(written_unix_ms) / 1_000;
            let gap = (age_s.saturating_mul(SUGGESTED_GRANTS_PER_S)).max(SUGGESTED_GAP_MIN);
            Err(CliError::new(
                Exit::Usage,
                format!(
                    "name a token floor: the old cluster handed out tokens up to {revision} when \
                     this state was written ({age_s}s ago) and maybe many more since, and a token \
                     must never repeat; pass --revision-gap G (at least the grants it could have \
                     made since: {gap} allows {SUGGESTED_GRANTS_PER_S} a second for that age) or \
                     --token-floor N above the highest token any protected resource has seen"
                ),
            ))
        }
    }
}
