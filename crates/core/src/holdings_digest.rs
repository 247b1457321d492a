//! A digest of a lease's holds, so a keep-alive can skip listing them.
//!
//! Why: every keep-alive's reply lists what the lease holds, so a holder
//! learns within one renewal that a lock was taken from it. For a lease
//! with a thousand locks that is a thousand names built under the state's
//! read lock and decoded by the client, every renewal; a thousand such
//! leases renewing together held every other client up for most of a
//! second (docs/DESIGN.md §6d). The client now sends the digest of the
//! holds it knows; when the server's digest of the lease's holds is the
//! same, nothing was taken and the list is left out.
//!
//! The digest is order-free (a sum of one hash per hold), so both sides
//! compute it from whatever order they keep, and never 0: a request
//! without a digest (0, an older client) always gets the list. FNV-1a over
//! the name, mixed with the token by SplitMix64's finaliser: stable across
//! builds and platforms, as the two sides may be different builds.

/// The digest of the holds `(name, token)`; never 0.
pub fn holdings_digest<'a>(holds: impl IntoIterator<Item = (&'a str, u64)>) -> u64 {
    let sum = holds
        .into_iter()
        .map(|(name, token)| hold_hash(name, token))
        .fold(SEED, u64::wrapping_add);
    if sum == 0 {
        SEED
    } else {
        sum
    }
}

/// The digest of no holds (and the stand-in for a sum that came to 0).
const SEED: u64 = 0x6c65_6173_6568_6f6c;

fn hold_hash(name: &str, token: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(hash ^ mix(token))
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_ignores_order_and_tells_sets_apart() {
        let a = holdings_digest([("jobs/a", 7), ("jobs/b", 9)]);
        assert_eq!(a, holdings_digest([("jobs/b", 9), ("jobs/a", 7)]));
        assert_ne!(a, holdings_digest([("jobs/a", 7)]));
        assert_ne!(a, holdings_digest([("jobs/a", 7), ("jobs/b", 10)]));
        assert_ne!(a, holdings_digest([("jobs/a", 9), ("jobs/b", 7)]));
        assert_ne!(holdings_digest([]), 0);
    }

    #[test]
    fn the_digest_is_the_same_in_every_build() {
        // Client and server may be different builds: a change here is a
        // protocol change.
        assert_eq!(holdings_digest([]), SEED);
        assert_eq!(holdings_digest([("jobs/a", 7)]), 0x2505_1ecf_7f2a_c839);
    }
}
