//! Packaging for a host (issue 19): the systemd unit passes `systemd-analyze
//! verify` and its hardening scores "OK" or better offline; the shell
//! completions are valid scripts that know every command; `man --dir`
//! writes a page per command.

mod common;

use common::BIN;
use std::path::Path;
use std::process::Command;

/// The unit as shipped, with its ExecStart pointed at this build (verify
/// checks that the binary exists).
fn unit_for_this_build(dir: &Path) -> std::path::PathBuf {
    let shipped = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/systemd/leasehold.service"
    );
    let unit = std::fs::read_to_string(shipped).expect("the shipped unit");
    assert!(
        unit.contains("ExecStart=/usr/local/bin/leasehold serve"),
        "{unit}"
    );
    let path = dir.join("leasehold.service");
    std::fs::write(&path, unit.replace("/usr/local/bin/leasehold", BIN)).unwrap();
    path
}

fn run(program: &str, args: &[&str]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {program}: {e} (.ci/run installs it)"))
}

#[test]
fn t270_the_systemd_unit_verifies_and_is_hardened() {
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_for_this_build(dir.path());
    let unit = unit.to_str().unwrap();
    let verified = run("systemd-analyze", &["verify", unit]);
    assert!(
        verified.status.success() && verified.stderr.is_empty(),
        "systemd-analyze verify: {}",
        String::from_utf8_lossy(&verified.stderr)
    );
    // Exposure 0.0 (locked down) to 10.0 (unprotected); at most 2.0 is
    // systemd's "OK" band.
    let scored = run(
        "systemd-analyze",
        &["security", "--offline=yes", "--threshold=20", unit],
    );
    let report = String::from_utf8_lossy(&scored.stdout);
    assert!(scored.status.success(), "exposure above 2.0:\n{report}");
    assert!(report.contains("Overall exposure level"), "{report}");
}

#[test]
fn t270_completions_are_valid_scripts_that_know_every_command() {
    let bash = run(BIN, &["completions", "bash"]);
    let script = String::from_utf8(bash.stdout).unwrap();
    for command in ["elect", "snapshot", "lock", "force-release"] {
        assert!(script.contains(command), "bash completion lacks {command}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("leasehold.bash");
    std::fs::write(&file, &script).unwrap();
    let checked = run("bash", &["-n", file.to_str().unwrap()]);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    for shell in ["zsh", "fish"] {
        let out = run(BIN, &["completions", shell]);
        assert!(out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("elect"),
            "{shell}"
        );
    }
    let refused = run(BIN, &["completions", "tcsh"]);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[test]
fn t270_man_writes_a_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    let written = run(BIN, &["man", "--dir", dir.path().to_str().unwrap()]);
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );
    for page in [
        "leasehold",
        "leasehold-serve",
        "leasehold-elect",
        "leasehold-snapshot",
    ] {
        let text = std::fs::read_to_string(dir.path().join(format!("{page}.1"))).unwrap();
        assert!(
            text.contains(&format!(".TH {page} 1")),
            "{page}: {}",
            &text[..200.min(text.len())]
        );
    }
    let serve = std::fs::read_to_string(dir.path().join("leasehold-serve.1")).unwrap();
    assert!(
        serve.contains("data\\-dir"),
        "the serve page lists its flags"
    );
    let stdout = run(BIN, &["man"]);
    assert!(
        String::from_utf8_lossy(&stdout.stdout).starts_with(".ie"),
        "leasehold(1) on stdout"
    );
}
