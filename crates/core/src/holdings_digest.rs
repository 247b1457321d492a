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
//!
//! The digest of no holds, [`NO_HOLDS_DIGEST`], is that of no other set:
//! a renewer that knows of no hold (one attached to a lease whose locks
//! another process took, `leasehold lease keepalive`) has none to lose, so
//! its renewal gets no list either, whatever the lease holds, and the
//! server does not even compute its own digest. Before, such renewers were
//! sent the full list at every renewal: a thousand of them over a thousand
//! locks each stalled other clients up to 0.4-0.7 s once per renewal
//! interval (the storm workload's baseline, docs/DESIGN.md §6d).

/// The digest of the holds `(name, token)`; never 0, and
/// [`NO_HOLDS_DIGEST`] only for no holds.
pub fn holdings_digest<'a>(holds: impl IntoIterator<Item = (&'a str, u64)>) -> u64 {
    let mut holds = holds.into_iter().peekable();
    if holds.peek().is_none() {
        return NO_HOLDS_DIGEST;
    }
    let sum = holds
        .map(|(name, token)| hold_hash(name, token))
        .fold(SEED, u64::wrapping_add);
    some_holds_digest(sum)
}

/// The digest of a non-empty set whose sum is `sum`: a sum of 0 or of the
/// seed (one chance in 2^64 each) is moved off both.
fn some_holds_digest(sum: u64) -> u64 {
    if sum == 0 || sum == NO_HOLDS_DIGEST {
        SOME_HOLDS_STAND_IN
    } else {
        sum
    }
}

/// What the sum of a set's hashes starts from.
const SEED: u64 = 0x6c65_6173_6568_6f6c;

/// The digest of no holds (the seed): a renewal carrying it is sent no list.
pub const NO_HOLDS_DIGEST: u64 = SEED;

/// The digest of a non-empty set whose sum came to 0 or to the seed.
const SOME_HOLDS_STAND_IN: u64 = SEED ^ 1;

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

    #[test]
    fn only_no_holds_has_the_digest_of_no_holds() {
        assert_eq!(holdings_digest([]), NO_HOLDS_DIGEST);
        // The two sums a non-empty set could reach by chance.
        assert_ne!(some_holds_digest(0), NO_HOLDS_DIGEST);
        assert_ne!(some_holds_digest(NO_HOLDS_DIGEST), NO_HOLDS_DIGEST);
        assert_ne!(some_holds_digest(0), 0);
        assert_eq!(some_holds_digest(42), 42);
    }
}
