//! One libFuzzer binary for every target of `leasehold-fuzz`: the target
//! is named by `LEASEHOLD_FUZZ_TARGET` (run.sh sets it). The targets
//! themselves live in `leasehold-fuzz`, so this harness and CI's bounded
//! runs fuzz the same code.

#![no_main]

use leasehold_fuzz::{target, Target, TARGETS};
use std::sync::OnceLock;

/// The target of this run, read once.
fn chosen() -> Target {
    static CHOSEN: OnceLock<Target> = OnceLock::new();
    *CHOSEN.get_or_init(|| {
        let name = std::env::var("LEASEHOLD_FUZZ_TARGET").unwrap_or_default();
        target(&name).unwrap_or_else(|| {
            let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
            eprintln!("set LEASEHOLD_FUZZ_TARGET to one of: {}", names.join(", "));
            std::process::exit(2)
        })
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    (chosen().run)(data);
});
