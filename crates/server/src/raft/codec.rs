//! Encoding of Raft messages between nodes: openraft's own request and
//! `Result` reply types, serialized with postcard (the same encoding the log
//! uses on disk, so an entry crosses the wire as compactly as it is stored).

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Encodes `value` for the wire.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, postcard::Error> {
    postcard::to_allocvec(value)
}

/// Decodes a wire payload.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, postcard::Error> {
    postcard::from_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::types::{Batch, TypeConfig};
    use openraft::error::{Fatal, RaftError};
    use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, VoteRequest};
    use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Vote};

    #[test]
    fn requests_and_replies_survive_the_round_trip() {
        let log_id = LogId::new(CommittedLeaderId::new(3, 1), 7);
        let request = AppendEntriesRequest::<TypeConfig> {
            vote: Vote::new_committed(3, 1),
            prev_log_id: Some(log_id),
            entries: vec![Entry {
                log_id: LogId::new(CommittedLeaderId::new(3, 1), 8),
                payload: EntryPayload::Normal(Batch {
                    at_unix_ms: 5,
                    commands: vec![],
                }),
            }],
            leader_commit: Some(log_id),
        };
        let back: AppendEntriesRequest<TypeConfig> = decode(&encode(&request).unwrap()).unwrap();
        assert_eq!(back.entries.len(), 1);
        assert_eq!(back.prev_log_id, Some(log_id));
        let vote = VoteRequest::new(Vote::new(4, 2), Some(log_id));
        let back: VoteRequest<u64> = decode(&encode(&vote).unwrap()).unwrap();
        assert_eq!(back.vote, vote.vote);
        let reply: Result<AppendEntriesResponse<u64>, RaftError<u64>> =
            Err(RaftError::Fatal(Fatal::Stopped));
        let back: Result<AppendEntriesResponse<u64>, RaftError<u64>> =
            decode(&encode(&reply).unwrap()).unwrap();
        assert!(matches!(back, Err(RaftError::Fatal(Fatal::Stopped))));
    }
}
