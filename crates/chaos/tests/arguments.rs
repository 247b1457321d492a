//! `leasehold-chaos` refuses what it cannot run with exit 2 and a sentence
//! that says what to do, before it starts any process.

use std::process::Command;

fn chaos(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_leasehold-chaos"))
        .args(args)
        .output()
        .expect("run leasehold-chaos");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unknown_fault_is_named_with_the_choices() {
    let (code, stderr) = chaos(&["--faults", "kill-leader,meteor", "--leasehold", "/bin/true"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unknown fault \"meteor\""), "{stderr}");
    assert!(stderr.contains("partition-leader"), "{stderr}");
}

#[test]
fn a_missing_leasehold_binary_says_how_to_get_one() {
    let (code, stderr) = chaos(&["--leasehold", "/nonexistent/leasehold"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("no leasehold binary at /nonexistent/leasehold"),
        "{stderr}"
    );
    assert!(stderr.contains("--leasehold PATH"), "{stderr}");
}

#[test]
fn the_disk_faults_are_known_and_run_last_in_all() {
    let (code, stderr) = chaos(&[
        "--faults",
        "fsync-fail,disk-full,meteor",
        "--leasehold",
        "/bin/true",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("unknown fault \"meteor\""), "{stderr}");
    assert!(
        stderr.contains("fsync-fail") && stderr.contains("disk-full"),
        "{stderr}"
    );
    let all = leasehold_chaos::fault::parse("all").unwrap();
    let last: Vec<&str> = all.iter().rev().take(4).rev().map(|f| f.as_str()).collect();
    assert_eq!(
        last,
        [
            "power-loss-all",
            "fsync-fail",
            "disk-full",
            "pause-holder-process"
        ]
    );
}
