//! `leasehold snapshot save FILE` (a consistent backup from the leader,
//! checked before it is kept), `leasehold snapshot status FILE` (what a
//! backup covers, its format and whether its checksum holds) and
//! `leasehold snapshot restore` (`snapshot_restore.rs`).

use super::Global;
use crate::error::CliError;
use crate::exit::Exit;
use crate::output::print_json;
use leasehold_server::backup::{self, BackupHeader};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// `leasehold snapshot`
#[derive(clap::Subcommand, Debug)]
pub enum SnapshotCmd {
    /// Saves a consistent copy of the whole state to FILE (from the
    /// leader; admin only), written to FILE.partial, checked and fsynced,
    /// then renamed to FILE.
    Save {
        file: PathBuf,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Builds a new node's data dir from a backup, with a token floor so
    /// that no token the old cluster handed out is ever handed out again.
    Restore(super::snapshot_restore::RestoreArgs),
    /// Says what the backup in FILE covers (revision, locks, leases, its
    /// format) and whether its checksum holds; exit 1 if it is damaged.
    Status {
        file: PathBuf,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `snapshot`.
pub async fn run(cmd: SnapshotCmd, global: &Global) -> Result<(), CliError> {
    match cmd {
        SnapshotCmd::Save { file, json } => save(&file, json, global).await,
        SnapshotCmd::Status { file, json } => status(&file, json),
        SnapshotCmd::Restore(args) => super::snapshot_restore::run(args).await,
    }
}

async fn save(file: &Path, json: bool, global: &Global) -> Result<(), CliError> {
    let client = global.client().await?;
    let mut download = client.backup().await?;
    let mut bytes = Vec::with_capacity(download.info.file_bytes as usize);
    while let Some(chunk) = download.next().await? {
        bytes.extend_from_slice(&chunk);
    }
    // Checked as `status` would, before it is kept.
    let checked = backup::parse(&bytes).map_err(|e| {
        CliError::new(
            Exit::Unavailable,
            format!("the backup arrived damaged ({e}); save again"),
        )
    })?;
    backup::write_file(file, &bytes, &[]).map_err(|e| {
        let why = format!("cannot write the backup to {}: {e}", file.display());
        CliError::new(Exit::Other, why)
    })?;
    let header = checked.header;
    if json {
        print_json(&header_json(file, &header));
    } else {
        println!(
            "saved {}: revision {}, {} locks, {} leases, {} semaphores and read-write locks, {} bytes, crc32 {:08x}",
            file.display(),
            header.revision,
            header.locks,
            header.leases,
            header.pools,
            bytes.len(),
            header.crc32
        );
    }
    Ok(())
}

fn status(file: &Path, json: bool) -> Result<(), CliError> {
    let damaged =
        |e: &dyn std::fmt::Display| CliError::new(Exit::Other, format!("{}: {e}", file.display()));
    let read = backup::read_file(file).map_err(|e| damaged(&e))?;
    // The checksum holds; the state must decode too.
    let state = leasehold_server::storage::decode_state(&read.data).map_err(|e| damaged(&e))?;
    let header = read.header;
    if json {
        let mut shown = header_json(file, &header);
        shown["checksum_ok"] = Value::Bool(true);
        shown["decoded_revision"] = json!(state.revision().0);
        print_json(&shown);
    } else {
        println!(
            "{}: format {}, revision {} (applied index {}), {} locks, {} leases, {} semaphores and read-write locks, saved by node {} at {}; checksum ok (crc32 {:08x}, {} bytes)",
            file.display(),
            header.format,
            header.revision,
            header.applied_index,
            state.lock_count(),
            state.lease_count(),
            state.pool_count(),
            header.node_id,
            leasehold_client::show::local_time(i64::try_from(header.created_unix_ms).unwrap_or(i64::MAX)),
            header.crc32,
            header.bytes
        );
    }
    Ok(())
}

fn header_json(file: &Path, header: &BackupHeader) -> Value {
    json!({
        "file": file.display().to_string(),
        "format": header.format,
        "revision": header.revision,
        "applied_index": header.applied_index,
        "locks": header.locks,
        "leases": header.leases,
        "pools": header.pools,
        "node_id": header.node_id,
        "created_unix_ms": header.created_unix_ms,
        "bytes": header.bytes,
        "crc32": format!("{:08x}", header.crc32),
    })
}
