//! The built-in fenced store: small shared state (a leader's address, a
//! checkpoint) that only a lock's current holder may write, and only in
//! token order. A refused write says why: `NotHolder` (the token is not the
//! lock's holder's), `NoSuchLock`, or a stale token (the key was written
//! since under a newer token).

use super::{revision, Consistency};
use crate::error::Error;
use crate::Client;
use leasehold_core::{FencedKey, LockName, Revision, Token};
use leasehold_proto::v1::fenced_store_client::FencedStoreClient;
use leasehold_proto::v1::{FencedGetRequest, FencedPutRequest};
use std::time::Duration;

/// A key's value in the fenced store, with who wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FencedValue {
    /// The key.
    pub key: String,
    /// The bytes of the last accepted write.
    pub value: Vec<u8>,
    /// The token of that write: the highest that ever wrote the key.
    pub token: Token,
    /// The lock whose holder made that write.
    pub lock: String,
    /// The revision the read saw.
    pub revision: Revision,
}

impl Client {
    /// Writes `key` = `value` as the holder of `lock` with `token`. The
    /// value's size is checked against `FENCED_VALUE_BYTES_MAX` before
    /// sending. Returns the revision of the write.
    pub async fn fenced_put(
        &self,
        key: &FencedKey,
        value: Vec<u8>,
        lock: &LockName,
        token: Token,
    ) -> Result<Revision, Error> {
        leasehold_core::check_fenced_value(&value)?;
        let request = FencedPutRequest {
            lock: lock.to_string(),
            token: token.0,
            key: key.to_string(),
            value,
            request_id: crate::request_id::new_request_id(),
        };
        let reply = self
            .call("FencedPut", Duration::ZERO, |channel| {
                let request = request.clone();
                async move { FencedStoreClient::new(channel).put(request).await }
            })
            .await
            .map_err(
                |error| match error.about(lock.as_str()).presented(None, token) {
                    Error::StaleToken {
                        lock,
                        presented,
                        highest,
                        message,
                        ..
                    } => Error::StaleToken {
                        key: key.to_string(),
                        lock,
                        presented,
                        highest,
                        message,
                    },
                    other => other,
                },
            )?;
        Ok(revision(reply.header.as_ref()))
    }

    /// Reads `key`: `None` if it was never written.
    pub async fn fenced_get(
        &self,
        key: &FencedKey,
        consistency: Consistency,
    ) -> Result<Option<FencedValue>, Error> {
        let request = FencedGetRequest {
            key: key.to_string(),
            stale: consistency.stale(),
        };
        let reply = self
            .call("FencedGet", Duration::ZERO, |channel| {
                let request = request.clone();
                async move { FencedStoreClient::new(channel).get(request).await }
            })
            .await?;
        Ok(reply.found.then(|| FencedValue {
            revision: revision(reply.header.as_ref()),
            key: reply.key,
            value: reply.value,
            token: Token(reply.token),
            lock: reply.lock,
        }))
    }
}
