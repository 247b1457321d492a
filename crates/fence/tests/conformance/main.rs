//! One conformance suite for every fence adapter, as openraft's storage
//! backends all pass openraft's suite: the behaviour a resource relies on
//! (first write, higher and equal tokens accepted, a lower one refused with
//! the highest and changing nothing, fences per (resource, lock), refusals
//! recorded, any valid lock name, concurrent writers applied in token
//! order) is written once in [`suite`] against a small [`suite::Store`] /
//! [`suite::Handle`] pair, and run for each adapter:
//!
//! - `memory` and `file` (`in_process.rs`), in this process;
//! - `postgres` against a real server, found as the
//!   testkit's `postgres` module says (unreachable: the tests fail);
//! - `redis` against a real server, found as the
//!   testkit's `redis` module says (none outside CI: skipped, loudly).
//!
//! What only one adapter has (a file's torn last line, a PostgreSQL
//! restart, Redis's 2^53 token bound and script reload) stays in that
//! adapter's own tests.

/// Declares one `#[tokio::test]` per case of the suite, each run on a
/// fresh store from `$store` (an async expression giving
/// `Option<impl Store>`; `None` skips, as the adapter's module says).
macro_rules! conformance {
    ($store:expr) => {
        conformance!(@cases $store;
            first_write_is_accepted,
            higher_and_equal_tokens_are_accepted,
            a_lower_token_is_refused_and_changes_nothing,
            resources_and_locks_are_fenced_independently,
            every_refusal_is_recorded,
            the_longest_lock_name_is_fenced,
            concurrent_writers_apply_in_token_order,
        );
    };
    (@cases $store:expr; $($case:ident,)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                if let Some(store) = $store.await {
                    $crate::suite::$case($crate::suite::Case::new(store)).await;
                }
            }
        )*
    };
}

mod in_process;
#[cfg(feature = "postgres")]
mod postgres;
mod redis;
mod suite;
