//! Bearer tokens as the replicated state keeps them: never the secret, only
//! its SHA-256 (computed by the server; the core has no hash function), the
//! principal it authenticates, and when it was made and expires.
//!
//! A secret reads `lh_<id>_<random>`: the id finds the stored row in one
//! lookup, then one hash and a constant-time compare verify it. Secrets are
//! 32 random bytes, so a fast hash is enough: password hashing would cost
//! every request (and every reconnect storm after an election) tens of
//! milliseconds for no gain.

use super::Principal;
use crate::limits::Limit;
use crate::LockError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The text every secret starts with.
pub const SECRET_PREFIX: &str = "lh_";

/// A token's public id: 1..=[`crate::limits::TOKEN_ID_BYTES_MAX`] ASCII
/// letters and digits (it is part of the secret, between `_`s).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TokenId(String);

impl TokenId {
    /// Validates a token id.
    pub fn parse(raw: &str) -> Result<TokenId, LockError> {
        let max = Limit::TokenIdBytesMax.value();
        if raw.is_empty() || raw.len() as u64 > max {
            return Err(LockError::over_limit(
                "token_id",
                Limit::TokenIdBytesMax,
                format!("is {} bytes; it must be 1..={max}", raw.len()),
            ));
        }
        if !raw.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(LockError::invalid(
                "token_id",
                "must be ASCII letters and digits",
            ));
        }
        Ok(TokenId(raw.to_owned()))
    }

    /// The id of a secret (`lh_<id>_<random>`), if it has that shape.
    pub fn of_secret(secret: &str) -> Option<TokenId> {
        let rest = secret.strip_prefix(SECRET_PREFIX)?;
        let (id, random) = rest.split_once('_')?;
        if random.is_empty() {
            return None;
        }
        TokenId::parse(id).ok()
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A token as stored: everything but the secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredToken {
    /// The public id (also inside the secret).
    pub id: TokenId,
    /// Who the token authenticates.
    pub principal: Principal,
    /// SHA-256 of the whole secret.
    pub sha256: [u8; 32],
    /// Proposer's wall time of the creation.
    pub created_unix_ms: u64,
    /// Proposer's wall time after which the token is refused; `None`: never.
    pub expires_unix_ms: Option<u64>,
}

/// Why a presented secret authenticates nobody (the server answers
/// `Unauthenticated` with this text).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefusal {
    /// Not `lh_<id>_<random>`.
    #[error("the auth token is not a Leasehold token (lh_<id>_<secret>); check --auth-token / LEASEHOLD_AUTH_TOKEN")]
    Malformed,
    /// No token has the id, or the secret does not match it.
    #[error("auth token {0} is unknown or revoked; ask an admin for a new one: leasehold token create PRINCIPAL")]
    Unknown(TokenId),
    /// The token's expiry passed.
    #[error("auth token {id} expired at {expires_unix_ms} (Unix ms); ask an admin for a new one: leasehold token create PRINCIPAL")]
    Expired {
        /// The token.
        id: TokenId,
        /// When it expired.
        expires_unix_ms: u64,
    },
}

/// Compares two digests in time independent of where they differ.
pub fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    // Keep the optimizer from short-circuiting the loop above.
    std::hint::black_box(diff) == 0
}
