//! The protected resource of every drill: the built-in fenced store, which
//! accepts a write only from the lock's current holder with a token no
//! lower than the key's highest. One write and its answer, as the drill and
//! its workers both make it.

use leasehold_client::{Client, Error, FencedKey, LockName, Token};
use std::fmt;

/// The store's answer to one write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Written.
    Accepted,
    /// Refused as not the holder's (`stale_token`, `not_holder`,
    /// `no_such_lock`): what fencing is for.
    Refused(String),
    /// No definite answer (unreachable, timed out, ...).
    Failed(String),
}

impl fmt::Display for Answer {
    /// `result=accepted`, `result=refused reason=R`, `result=failed reason=R`:
    /// the fields of a worker's line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Accepted => write!(f, "result=accepted"),
            Answer::Refused(reason) => write!(f, "result=refused reason={reason}"),
            Answer::Failed(reason) => write!(f, "result=failed reason={reason}"),
        }
    }
}

impl Answer {
    /// The answer as a measured figure: `accepted`, `refused: R`, `failed: R`.
    pub fn figure(&self) -> String {
        match self {
            Answer::Accepted => "accepted".to_owned(),
            Answer::Refused(reason) => format!("refused: {reason}"),
            Answer::Failed(reason) => format!("failed: {reason}"),
        }
    }
}

/// Writes `value` to `key` as the holder of `lock` with `token`.
pub async fn write(
    client: &Client,
    key: &FencedKey,
    lock: &LockName,
    token: Token,
    value: Vec<u8>,
) -> Answer {
    match client.fenced_put(key, value, lock, token).await {
        Ok(_) => Answer::Accepted,
        Err(error) => {
            let reason = error.reason().map_or("unknown", |r| r.label()).to_owned();
            match error {
                Error::StaleToken { .. } | Error::NotHolder { .. } | Error::NoSuchLock { .. } => {
                    Answer::Refused(reason)
                }
                _ => Answer::Failed(reason),
            }
        }
    }
}
