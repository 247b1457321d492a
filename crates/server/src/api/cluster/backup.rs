//! `Cluster.Backup`: the leader's applied state, copied after a read
//! barrier (so it holds every write acknowledged before the call), encoded
//! as a snapshot off the runtime, and streamed as a backup file's bytes
//! (`crate::backup`) in bounded chunks.

use crate::api::{ApiError, Node};
use crate::backup::{header_for, preamble, BackupHeader, Counts};
use crate::storage::{encode_snapshot, AppliedState};
use leasehold_proto::v1::{BackupChunk, BackupInfo};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// Bytes per streamed chunk (well under the gRPC message limit).
const CHUNK_BYTES: usize = 256 * 1024;
/// Chunks queued for a slow reader before the sender waits.
const CHUNKS_QUEUED: usize = 4;

/// The response half of a `Backup` call.
pub type BackupStream = ReceiverStream<Result<BackupChunk, Status>>;

/// Copies the state and starts streaming it.
pub async fn backup(node: &Arc<Node>) -> Result<BackupStream, ApiError> {
    node.read_barrier().await?;
    let copy = node.state.read_applied(AppliedState::clone);
    let node_id = node.node_id;
    let encoded = tokio::task::spawn_blocking(move || {
        let state = &copy.state;
        let counts = Counts {
            revision: state.revision().0,
            applied_index: copy.last_applied.map_or(0, |id| id.index),
            leases: state.lease_count() as u64,
            locks: state.lock_count() as u64,
            pools: state.pool_count() as u64,
            node_id,
        };
        encode_snapshot(&copy).map(|data| (header_for(&data, counts), data))
    })
    .await
    .map_err(|e| ApiError::Unavailable(format!("the backup's encoding stopped: {e}")))?
    .map_err(|e| ApiError::Unavailable(format!("the state did not encode: {e}")))?;
    let (sender, chunks) = mpsc::channel(CHUNKS_QUEUED);
    tokio::spawn(send(encoded, sender));
    Ok(ReceiverStream::new(chunks))
}

/// Streams the file: the preamble and the state, the first chunk with
/// what the backup covers.
async fn send(
    (header, data): (BackupHeader, Vec<u8>),
    sender: mpsc::Sender<Result<BackupChunk, Status>>,
) {
    let head = preamble(&header);
    let mut info = Some(info_of(&header, (head.len() + data.len()) as u64));
    let pieces = std::iter::once(head.as_slice()).chain(data.chunks(CHUNK_BYTES));
    for piece in pieces {
        let chunk = BackupChunk {
            data: piece.to_vec(),
            info: info.take(),
        };
        if sender.send(Ok(chunk)).await.is_err() {
            return; // The caller went away.
        }
    }
}

fn info_of(header: &BackupHeader, file_bytes: u64) -> BackupInfo {
    BackupInfo {
        format: header.format,
        revision: header.revision,
        applied_index: header.applied_index,
        leases: header.leases,
        locks: header.locks,
        pools: header.pools,
        file_bytes,
        crc32: header.crc32,
        node_id: header.node_id,
        created_unix_ms: i64::try_from(header.created_unix_ms).unwrap_or(i64::MAX),
    }
}
