//! `leasehold-fuzz`: runs one fuzz target for as long as asked, or writes
//! the corpus seeds.
//!
//! ```text
//! cargo run --release -p leasehold-fuzz -- TARGET [--seconds S] [--seed N]
//! cargo run --release -p leasehold-fuzz -- --write-seeds
//! ```
//!
//! A run reports how many inputs it tried; an input that makes the target
//! panic is printed (hex) and the run exits 1.

use leasehold_fuzz::{corpus, run, target, TARGETS};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--write-seeds") {
        return write_seeds();
    }
    let Some(target) = args.first().and_then(|name| target(name)) else {
        let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        eprintln!("usage: leasehold-fuzz TARGET [--seconds S] [--seed N] | --write-seeds");
        eprintln!("targets: {}", names.join(", "));
        return ExitCode::from(2);
    };
    let number = |flag: &str, default: u64| {
        args.iter()
            .position(|arg| arg == flag)
            .and_then(|at| args.get(at + 1)?.parse().ok())
            .unwrap_or(default)
    };
    let (seconds, seed) = (number("--seconds", 60), number("--seed", 1));
    let inputs = match corpus::load(target.name) {
        Ok(inputs) => inputs,
        Err(error) => {
            eprintln!(
                "cannot read {}: {error}",
                corpus::dir(target.name).display()
            );
            return ExitCode::from(1);
        }
    };
    let started = std::time::Instant::now();
    let ran = run(
        target,
        &inputs,
        seed,
        u64::MAX,
        Duration::from_secs(seconds),
    );
    let took = started.elapsed().as_secs_f64();
    leasehold_fuzz::api::stop();
    println!(
        "{}: {} executions in {took:.0} s ({:.0}/s), seed {seed}, {} corpus inputs, no panic",
        target.name,
        ran.executions,
        ran.executions as f64 / took,
        inputs.len()
    );
    ExitCode::SUCCESS
}

fn write_seeds() -> ExitCode {
    for target in TARGETS {
        let dir = corpus::dir(target.name);
        if let Err(error) = std::fs::create_dir_all(&dir) {
            eprintln!("cannot create {}: {error}", dir.display());
            return ExitCode::from(1);
        }
        for (n, seed) in corpus::seeds(target.name).iter().enumerate() {
            let path = dir.join(format!("seed-{n}"));
            if let Err(error) = std::fs::write(&path, seed) {
                eprintln!("cannot write {}: {error}", path.display());
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
