//! `serve --config FILE` (issue 19): every serve flag is settable in a TOML
//! file and as LEASEHOLD_*; a flag beats its variable, which beats the
//! file; an unknown key or a bad value is refused naming it;
//! `--print-config` shows the effective settings with their sources, and
//! its output is itself a config file that gives the same settings; a node
//! started from a file alone serves.

mod common;

use common::{free_port, wait_for, BIN};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn serve(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(BIN);
    command.arg("serve").args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("run leasehold serve")
}

/// The `key = value  # source` line of `key` in a --print-config output.
fn setting<'a>(printed: &'a str, key: &str) -> (&'a str, &'a str) {
    let line = printed
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("{key} not in:\n{printed}"));
    let (value, source) = line.split_once('#').expect("a source");
    let value = value.trim().strip_prefix(&format!("{key} = ")).unwrap();
    (value.trim_matches('"'), source.trim())
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn t271_flag_beats_environment_beats_file_and_the_printout_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir.path().join("leasehold.toml"),
        "data-dir = \"/srv/lh\"\nlisten = \"127.0.0.1:7001\"\nnode-id = 3\nmetrics-auth = true\n",
    );
    let env = [
        ("LEASEHOLD_LISTEN", "127.0.0.1:7002"),
        ("LEASEHOLD_NODE_ID", "4"),
    ];
    let printed = serve(
        &["--config", &file, "--node-id", "5", "--print-config"],
        &env,
    );
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let printed = String::from_utf8(printed.stdout).unwrap();
    assert_eq!(setting(&printed, "data-dir"), ("/srv/lh", "config file"));
    assert_eq!(
        setting(&printed, "listen"),
        ("127.0.0.1:7002", "environment")
    );
    assert_eq!(setting(&printed, "node-id"), ("5", "flag"));
    assert_eq!(setting(&printed, "metrics-auth"), ("true", "config file"));
    assert_eq!(setting(&printed, "log-format"), ("text", "default"));

    // The printout is a config file that gives the same settings.
    let again = write(&dir.path().join("printed.toml"), &printed);
    let reprinted = serve(&["--config", &again, "--print-config"], &[]);
    let reprinted = String::from_utf8(reprinted.stdout).unwrap();
    for key in [
        "data-dir",
        "listen",
        "node-id",
        "metrics-auth",
        "log-format",
        "join",
    ] {
        assert_eq!(
            setting(&reprinted, key).0,
            setting(&printed, key).0,
            "{key}"
        );
    }
}

#[test]
fn t271_unknown_keys_and_bad_values_are_refused_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    for (text, expected) in [
        ("date-dir = \"/srv\"\n", "unknown key \"date-dir\""),
        ("node-id = \"three\"\n", "'three' for '--node-id"),
        ("join = 1\n", "join in the config file"),
        ("listen = [\n", "not valid TOML"),
        ("force-new-cluster = true\n", "one-time action"),
    ] {
        let file = write(&dir.path().join("bad.toml"), text);
        let refused = serve(&["--config", &file], &[]);
        assert_eq!(refused.status.code(), Some(2), "{text}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains(expected) && said.contains("bad.toml"),
            "{text}: {said}"
        );
    }
}

#[test]
fn t271_a_node_started_from_a_file_alone_serves() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let file = write(
        &dir.path().join("node.toml"),
        &format!(
            "data-dir = \"{}\"\nlisten = \"127.0.0.1:{port}\"\n",
            dir.path().join("data").display()
        ),
    );
    let mut node = Command::new(BIN)
        .args(["serve", "--config", &file])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let endpoint = format!("http://127.0.0.1:{port}");
    wait_for("the node to answer", Duration::from_secs(20), || {
        let status = Command::new(BIN)
            .args(["--endpoints", &endpoint, "status", "--json"])
            .output()
            .ok()?;
        status.status.success().then_some(())
    });
    node.kill().expect("stop the node");
    node.wait().expect("reaped");
}
