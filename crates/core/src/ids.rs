//! Identifier newtypes. Each id is a distinct type so a lease id can never be
//! passed where a fencing token is expected.

use crate::compact_text::CompactText;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A lease id. Never 0: the core assigns it as the revision at which the lease
/// was granted, which is unique and deterministic on every replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LeaseId(pub u64);

/// A global, strictly increasing counter of applied state changes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Revision(pub u64);

/// A fencing token: the revision at which a lock was granted. For one lock,
/// every new holder's token is strictly greater than every earlier holder's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Token(pub u64);

/// A client-chosen id that makes a mutation idempotent: a retry carrying the
/// same id returns the first outcome. Validated by [`RequestId::parse`].
///
/// Kept inline when short (the client library's ids are), shared above
/// (see [`CompactText`]): a lease's grant id is kept twice (the lease's row
/// and the state's map from grant id to lease) and its acquire's once more,
/// and with a million leases a heap block per id was 160 MB. Encoded as a
/// plain string.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(CompactText);

impl RequestId {
    /// Validates a request id: 1..=[`crate::limits::REQUEST_ID_BYTES_MAX`] bytes
    /// of printable ASCII. An empty string means "no request id" and yields `None`.
    pub fn parse(raw: &str) -> Result<Option<RequestId>, crate::LockError> {
        if raw.is_empty() {
            return Ok(None);
        }
        if raw.len() > crate::limits::REQUEST_ID_BYTES_MAX {
            return Err(crate::LockError::over_limit(
                "request_id",
                crate::Limit::RequestIdBytesMax,
                format!(
                    "is {} bytes; the limit REQUEST_ID_BYTES_MAX is {}",
                    raw.len(),
                    crate::limits::REQUEST_ID_BYTES_MAX
                ),
            ));
        }
        if !raw.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(crate::LockError::invalid(
                "request_id",
                "must be printable ASCII without spaces",
            ));
        }
        Ok(Some(RequestId(CompactText::new(raw))))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.as_str())
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RequestId, D::Error> {
        String::deserialize(deserializer).map(|s| RequestId(CompactText::new(&s)))
    }
}

impl fmt::Display for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_id_is_encoded_as_the_string_it_was() {
        let id = RequestId::parse("c-1f-17a-3").unwrap().unwrap();
        let encoded = postcard::to_allocvec(&id).unwrap();
        assert_eq!(encoded, postcard::to_allocvec("c-1f-17a-3").unwrap());
        let decoded: RequestId = postcard::from_bytes(&encoded).unwrap();
        assert_eq!(decoded, id);
    }
}
