//! Every fuzz target, in CI: the checked-in corpus replayed, then a short
//! round of mutations, bounded in count and time. A target that panics on
//! an input fails the test with the input printed (hex), to add to the
//! corpus once fixed.

use leasehold_fuzz::{corpus, run, TARGETS};
use std::time::Duration;

/// Mutations tried per target.
const ROUNDS: u64 = 20_000;
/// Bound on one target's round (the log target writes a file per input).
const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn every_target_survives_its_corpus_and_a_round_of_mutations() {
    for target in TARGETS {
        let inputs = corpus::load(target.name).expect("the corpus reads");
        assert!(!inputs.is_empty(), "{}: the corpus is empty", target.name);
        let ran = run(*target, &inputs, 0x5eed, ROUNDS, LIMIT);
        eprintln!("measured: {}: {} executions", target.name, ran.executions);
        assert!(
            ran.executions > inputs.len() as u64,
            "{}: no mutation ran",
            target.name
        );
    }
    leasehold_fuzz::api::stop();
}
