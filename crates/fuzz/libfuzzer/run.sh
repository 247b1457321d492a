#!/usr/bin/env bash
# A coverage-guided run of one leasehold-fuzz target under libFuzzer, on the
# stable toolchain: the sanitizer-coverage instrumentation cargo-fuzz adds is
# given as stable -C flags (no AddressSanitizer, which needs nightly; Rust's
# own bounds and overflow checks stand in for it).
#
#   crates/fuzz/libfuzzer/run.sh TARGET [SECONDS]     (default 600)
#
# Starts from the checked-in corpus (crates/fuzz/corpus/TARGET, read only);
# what libFuzzer finds grows a working corpus under target/libfuzzer/; an
# input that fails is written there as crash-* and the run exits non-zero.
# Add such an input to the checked-in corpus once it is fixed, so cargo test
# replays it ever after.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${1:?usage: run.sh TARGET [SECONDS]}"
seconds="${2:-600}"
corpus="$here/../corpus/$target"
[ -d "$corpus" ] || { echo "no corpus at $corpus: is $target a target?" >&2; exit 2; }
work="$here/target/libfuzzer/$target"
mkdir -p "$work/corpus"
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares"
# --target: the flags then reach the fuzzed code only, not build scripts and
# proc macros (which run on the host, without libFuzzer).
triple="$(rustc -vV | sed -n 's/^host: //p')"
cargo build --release --target "$triple" --manifest-path "$here/Cargo.toml"
# Temporary files (the wal target's segments, the api target's node) go
# under the work dir, and are removed when the run ends.
export TMPDIR="$work/tmp"
rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
status=0
LEASEHOLD_FUZZ_TARGET="$target" "$here/target/$triple/release/leasehold-libfuzzer" \
    -max_total_time="$seconds" -artifact_prefix="$work/" -print_final_stats=1 \
    "$work/corpus" "$corpus" || status=$?
rm -rf "$TMPDIR"
exit "$status"
