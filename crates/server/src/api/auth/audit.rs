//! `Auth.Audit`: the audit trail as a stream, from a sequence number, and
//! with `follow` every record applied after. Records are read from this
//! node's applied state; a follower polls it every `FOLLOW_POLL` (records
//! are rare, and a poll costs one read of a bounded ring), and ends when the
//! client goes away.

use crate::api::Node;
use leasehold_core::auth::AuditRecord;
use leasehold_proto::v1 as pb;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

/// How often a follower looks for new records.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

/// Records queued for one client before the task waits for it to read.
const AUDIT_STREAM_QUEUE: usize = 64;

/// The response half of an `Audit` stream.
pub type AuditStream = ReceiverStream<Result<pb::AuditRecord, Status>>;

/// Starts serving one `Audit` request.
pub fn spawn(node: Arc<Node>, request: pb::AuditRequest) -> AuditStream {
    let (sender, receiver) = mpsc::channel(AUDIT_STREAM_QUEUE);
    tokio::spawn(async move {
        let mut next = request.from_seq;
        loop {
            let batch: Vec<pb::AuditRecord> = node.state.read(|state| {
                let records = state.auth().audit().since(next);
                records.map(to_wire).collect()
            });
            for record in batch {
                next = record.seq + 1;
                if sender.send(Ok(record)).await.is_err() {
                    return;
                }
            }
            if !request.follow {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(FOLLOW_POLL) => {}
                () = sender.closed() => return,
            }
        }
    });
    ReceiverStream::new(receiver)
}

/// One record on the wire.
pub fn to_wire(record: &AuditRecord) -> pb::AuditRecord {
    let entry = &record.entry;
    pb::AuditRecord {
        seq: record.seq,
        at_unix_ms: record.at_unix_ms,
        kind: entry.kind.as_str().to_owned(),
        principal: entry.principal.clone(),
        verb: entry
            .verb
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default(),
        name: entry.name.clone(),
        detail: entry.detail.clone(),
    }
}
