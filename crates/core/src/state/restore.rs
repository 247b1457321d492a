//! Making a backup's state the start of a new cluster (`leasehold
//! snapshot restore`): the old cluster may have handed out tokens after
//! the backup was taken, and a resource that saw one of them must never
//! see it again from another holder. So the state's revision, from which
//! every later token and lease id comes, is raised to a floor above every
//! token the old cluster could have handed out; and the backup's leases,
//! whose holders' deadlines have long passed, end as expired (freeing
//! their locks as an expiry does) unless the operator keeps them.

use super::State;
use crate::{LockError, Revision};

impl State {
    /// Prepares this state (a backup's) for a new cluster: ends every
    /// lease as expired unless `keep_leases`, then raises the revision to
    /// `floor`, which must be above the backup's revision. Returns how
    /// many leases ended.
    pub fn restore_for_new_cluster(
        &mut self,
        floor: Revision,
        keep_leases: bool,
        at_unix_ms: u64,
    ) -> Result<usize, LockError> {
        if floor <= self.revision {
            return Err(LockError::invalid(
                "token_floor",
                format!(
                    "{} is not above the backup's revision {}: the old cluster handed out \
                     tokens up to {} and maybe more since; name a floor above it",
                    floor.0, self.revision.0, self.revision.0
                ),
            ));
        }
        let ended: Vec<_> = match keep_leases {
            true => Vec::new(),
            false => self.leases.keys().copied().collect(),
        };
        let mut effects = Vec::new();
        for lease in &ended {
            self.end_lease(*lease, true, at_unix_ms, &mut effects);
        }
        // Ending the leases moved the revision; the floor is above where
        // the old cluster may have got to, whatever that was.
        self.revision = self.revision.max(floor);
        Ok(ended.len())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::{Revision, State};

    #[test]
    fn a_restored_state_hands_out_tokens_above_the_floor_and_ends_its_leases() {
        let mut state = State::default();
        let (a, b) = (grant(&mut state), grant(&mut state));
        let held = hold(&mut state, a, "x");
        acquire(&mut state, b, "x", 60_000);
        let before = state.revision();

        let refused = state.clone().restore_for_new_cluster(before, false, 9);
        assert!(refused
            .unwrap_err()
            .to_string()
            .contains("not above the backup's revision"));

        let mut kept = state.clone();
        assert_eq!(
            kept.restore_for_new_cluster(Revision(1_000), true, 9),
            Ok(0)
        );
        assert_eq!(
            kept.lock(&name("x"))
                .unwrap()
                .holder
                .as_ref()
                .unwrap()
                .token,
            held
        );
        assert_eq!(kept.revision(), Revision(1_000));

        assert_eq!(
            state.restore_for_new_cluster(Revision(1_000), false, 9),
            Ok(2)
        );
        assert_eq!((state.lease_count(), state.lock_count()), (0, 0));
        state.check_invariants().unwrap();
        let c = grant(&mut state);
        assert!(c.0 > 1_000, "a new lease id is above the floor");
        let token = hold(&mut state, c, "x");
        assert!(token.0 > 1_000, "a new token is above the floor");
    }
}
