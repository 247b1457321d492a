//! A data dir written by the previous release (issue 19): the fixture
//! `fixtures/previous-release.tar.gz` is a one-node data dir of data format
//! 1, made by the release before semaphores (commit d20b715) with
//! `fixtures/make-previous-release.sh`. Its log records and its snapshot
//! carry no format mark.
//!
//! This build must read it whole (the held lock and its token, the fenced
//! value written under it, the revision), hand out tokens above every
//! token it holds, append records of its own format after the old ones in
//! the same segment, and read that mixed log again after a restart.

mod common;

use common::{free_port, Server};
use leasehold_server::storage::wal_records;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::Command;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/previous-release.tar.gz"
);

/// The data format in the header of each log record of `data_dir`, in
/// log order (the top four bits of the length word; 0: no mark, format 1).
fn record_formats(data_dir: &Path) -> Vec<u8> {
    wal_records(data_dir)
        .expect("the log reads")
        .iter()
        .map(|record| {
            let file = std::fs::File::open(&record.segment).expect("segment");
            let mut word = [0; 4];
            file.read_exact_at(&mut word, record.offset)
                .expect("header");
            word[3] >> 4
        })
        .collect()
}

#[test]
fn t264_a_data_dir_of_the_previous_release_is_read_whole_and_extended() {
    let dir = tempfile::tempdir().unwrap();
    let unpacked = Command::new("tar")
        .args(["-xzf", FIXTURE, "-C"])
        .arg(dir.path())
        .status()
        .expect("tar runs");
    assert!(unpacked.success(), "tar -xzf {FIXTURE}");
    let data_dir = dir.path().join("data");
    let before: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data_dir.join("status-before.json")).unwrap())
            .unwrap();
    let revision_before = before["revision"].as_u64().unwrap();
    let old_formats = record_formats(&data_dir);
    assert!(
        !old_formats.is_empty() && old_formats.iter().all(|&format| format == 0),
        "the fixture's records carry no mark: {old_formats:?}"
    );

    let port = free_port();
    let mut server = Server::start_in(&data_dir, port);
    let held = server.ok_json(&["get", "fixture/held", "--json"]);
    assert_eq!(held["held"], true, "{held}");
    let held_token = held["token"].as_u64().unwrap();
    let fenced = server.ok_json(&["fenced", "get", "fixture/config", "--json"]);
    assert_eq!(
        fenced["value"], "written by the previous release",
        "{fenced}"
    );
    let status = server.ok_json(&["status", "--json"]);
    assert!(
        status["revision"].as_u64().unwrap() >= revision_before,
        "{status}"
    );
    let new = server.ok_json(&["acquire", "fixture/new", "--ttl", "1h", "--json"]);
    let new_token = new["token"].as_u64().unwrap();
    assert!(
        new_token > revision_before && new_token > held_token,
        "{new}"
    );
    // A command the previous release did not have.
    let slots = ["acquire", "fixture/slots", "--limit", "2", "--json"];
    server.ok_json(&slots);

    server.signal(libc::SIGTERM);
    server.wait_exit(std::time::Duration::from_secs(10));
    let formats = record_formats(&data_dir);
    let written_here = &formats[old_formats.len().min(formats.len())..];
    assert!(
        !written_here.is_empty() && written_here.iter().all(|&format| format == 2),
        "records after the old ones are this build's (format 2): {formats:?}"
    );

    let server = Server::start_in(&data_dir, free_port());
    let again = server.ok_json(&["get", "fixture/new", "--json"]);
    assert_eq!(again["token"], new_token, "{again}");
    let held_again = server.ok_json(&["get", "fixture/held", "--json"]);
    assert_eq!(held_again["token"], held_token, "{held_again}");
}
