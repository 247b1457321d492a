//! Bearer secrets: `lh_<id>_<random>`, with 8 random bytes of id and 32 of
//! secret (hex), made by the server and shown once. The log and the state
//! only ever see the id and the SHA-256 of the whole secret.

use leasehold_core::auth::{NewToken, TokenId, SECRET_PREFIX};
use rand::RngCore;
use sha2::{Digest, Sha256};

/// SHA-256 of a presented secret.
pub fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// A fresh secret and the token row to store for it.
pub fn new_token(expires_unix_ms: Option<u64>) -> (String, NewToken) {
    let mut rng = rand::rng();
    let mut id = [0u8; 8];
    let mut random = [0u8; 32];
    rng.fill_bytes(&mut id);
    rng.fill_bytes(&mut random);
    let id = hex(&id);
    let secret = format!("{SECRET_PREFIX}{id}_{}", hex(&random));
    let token = NewToken {
        id: TokenId::parse(&id).expect("hex is a valid token id"),
        sha256: digest(&secret),
        expires_unix_ms,
    };
    (secret, token)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_names_its_id_and_hashes_to_its_digest() {
        let (secret, token) = new_token(Some(5));
        assert_eq!(TokenId::of_secret(&secret), Some(token.id.clone()));
        assert_eq!(digest(&secret), token.sha256);
        assert_eq!(secret.len(), 3 + 16 + 1 + 64);
        let (other, _) = new_token(None);
        assert_ne!(secret, other);
    }
}
