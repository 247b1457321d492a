//! The fencing rule: accept token `t` only if `t ≥` the highest accepted.

/// A write refused because a newer holder has already written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("stale token {presented} for lock {lock}: the resource has accepted token {highest}; this writer's lock has passed to a newer holder, so stop writing")]
pub struct StaleToken {
    /// The lock the token belongs to.
    pub lock: String,
    /// The token the writer presented.
    pub presented: u64,
    /// The highest token the resource has accepted for this lock.
    pub highest: u64,
}

/// Checks `presented` against the highest token accepted so far for
/// `lock` (`None`: nothing accepted yet). `Ok(new highest)` to record in
/// the same atomic step as the write.
pub fn check(lock: &str, highest: Option<u64>, presented: u64) -> Result<u64, StaleToken> {
    match highest {
        Some(highest) if presented < highest => Err(StaleToken {
            lock: lock.to_owned(),
            presented,
            highest,
        }),
        _ => Ok(presented),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_is_refused_equal_and_higher_accepted() {
        assert_eq!(check("l", None, 3), Ok(3));
        assert_eq!(check("l", Some(3), 3), Ok(3));
        assert_eq!(check("l", Some(3), 4), Ok(4));
        let stale = check("l", Some(4), 3).unwrap_err();
        assert_eq!((stale.presented, stale.highest), (3, 4));
        assert!(stale.to_string().contains("stale token 3"));
    }
}
