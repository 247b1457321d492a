//! A full disk under a real `leasehold serve`: the data dir is a small
//! tmpfs that a filler file fills while a client writes. No acknowledged
//! grant is lost; writes fail with Unavailable naming the path ("no space
//! left on <path>: free space and the node resumes by itself"); reads keep
//! working; `/readyz` says why; once the filler is deleted the node accepts
//! writes again by itself. And a start on a disk too full for the log's
//! zero-filled segments is refused naming the path, the space needed and
//! the space free. Needs root (mount), as the tests run in CI.

mod common;
#[path = "common/disk.rs"]
mod disk;
#[path = "../../server/tests/support/tmpfs.rs"]
mod tmpfs;

use common::{free_port, phase, wait_for, Server};
use disk::{assert_all_held, readyz, refused_start, try_acquire, Held};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tmpfs::{fill, Tmpfs};

/// The tmpfs: the first 64 MiB log segment, the next one, the 16 MiB
/// headroom and the database, with a little to spare.
const TMPFS_SIZE: &str = "176m";
/// Exit code of "service unavailable".
const EXIT_UNAVAILABLE: i32 = 5;
/// The pause after each MiB of filler: pacing, not waiting for anything.
const FILL_PACE: Duration = Duration::from_millis(25);
/// Bound on each wait for the node to change its mind.
const CHANGE_MAX: Duration = Duration::from_secs(30);

/// Acquires one lock after another until `stop`: every acknowledged grant,
/// and the refusals seen.
fn write_until(server: &Server, stop: &AtomicBool, held: &Mutex<Vec<Held>>) -> Vec<String> {
    let mut refusals = Vec::new();
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match try_acquire(server, &format!("t220/lock-{i}")) {
            Ok(grant) => held.lock().unwrap().push(grant),
            Err((code, stderr)) => {
                assert_eq!(code, EXIT_UNAVAILABLE, "{stderr}");
                refusals.push(stderr);
            }
        }
    }
    refusals
}

#[test]
fn a_full_disk_refuses_writes_keeps_reads_and_recovers_by_itself() {
    let tmpfs = Tmpfs::mount(TMPFS_SIZE);
    let data_dir = tmpfs.path().join("data");
    let filler = tmpfs.path().join("filler");
    let data_text = data_dir.display().to_string();
    let mut server = Server::start_in(&data_dir, free_port());

    phase("a client writes while a filler fills the disk");
    let held = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let refusals = std::thread::scope(|scope| {
        let writer = scope.spawn(|| write_until(&server, &stop, &held));
        let filled = fill(&filler, FILL_PACE, || stop.load(Ordering::Relaxed));
        eprintln!("filler: {filled} bytes");
        wait_for("a write refused for space", CHANGE_MAX, || {
            try_acquire(&server, "t220/probe").err()
        });
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap()
    });
    let held: Vec<Held> = held.lock().unwrap().clone();
    eprintln!(
        "{} grants acknowledged, {} refused",
        held.len(),
        refusals.len()
    );
    assert!(held.len() >= 3, "too few grants before the disk filled");

    phase("writes are refused naming the path; reads work; /readyz says why");
    let (code, stderr) = try_acquire(&server, "t220/full").unwrap_err();
    assert_eq!(code, EXIT_UNAVAILABLE, "{stderr}");
    let expected = format!("no space left on {data_text}");
    assert!(stderr.contains(&expected), "{expected:?} not in {stderr}");
    assert!(stderr.contains("resumes by itself"), "{stderr}");
    for refusal in &refusals {
        assert!(refusal.contains(&expected), "{refusal}");
    }
    assert_all_held(&server, &held);
    let (code, body) = readyz(&server);
    assert_eq!(code, 503, "{body}");
    assert!(body.contains(&expected), "{body}");

    phase("the filler goes: writes are accepted again by themselves");
    std::fs::remove_file(&filler).unwrap();
    let fresh = wait_for("a write accepted again", CHANGE_MAX, || {
        try_acquire(&server, "t220/after").ok()
    });
    let highest = held.iter().map(|h| h.2).max().unwrap();
    assert!(fresh.2 > highest, "token {} not above {highest}", fresh.2);
    wait_for("/readyz ready again", CHANGE_MAX, || {
        (readyz(&server).0 == 200).then_some(())
    });

    phase("a restart keeps every acknowledged grant");
    server.kill9();
    let restarted = Server::start_in(&data_dir, free_port());
    assert_all_held(&restarted, &held);
    drop(restarted);

    phase("a start on a disk too full for the next log segment is refused");
    refuse_start_when_nearly_full(&data_dir, &filler);
    drop(server);
    drop(tmpfs);
}

/// Fills the disk but for 32 MiB and starts: refused, with the numbers.
fn refuse_start_when_nearly_full(data_dir: &Path, filler: &Path) {
    let free = leasehold_server::storage::free_bytes(data_dir).unwrap();
    let keep = 32 << 20;
    let file = std::fs::File::create(filler).unwrap();
    let chunk = vec![0xCD; 1 << 20];
    let mut left = free.saturating_sub(keep);
    while left > 0 {
        let n = (chunk.len() as u64).min(left) as usize;
        std::os::unix::fs::FileExt::write_all_at(&file, &chunk[..n], free - keep - left).unwrap();
        left -= n as u64;
    }
    drop(file);
    let (code, stderr) = refused_start(data_dir, &[]);
    assert_ne!(code, 0, "{stderr}");
    let expected = format!("not enough free space on {} to start", data_dir.display());
    assert!(stderr.contains(&expected), "{expected:?} not in {stderr}");
    assert!(
        stderr.contains("bytes free") && stderr.contains("needed"),
        "{stderr}"
    );
    std::fs::remove_file(filler).unwrap();
}
