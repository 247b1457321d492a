//! A damaged log against a real `leasehold serve`: a torn tail (the next
//! append cut short, as a crash leaves it: `tear_wal_tail`) is erased at
//! start and every acknowledged grant is still held with its token; a byte
//! flipped in a record in the middle of the log makes the start fail, with
//! the file, the byte offset and what to do, and nothing is erased.

mod common;
#[path = "common/disk.rs"]
mod disk;

use common::{free_port, phase, u64_of, Server};
use disk::{assert_all_held, refused_start, try_acquire, Held};
use leasehold_server::storage::{tear_wal_tail, wal_records};
use std::os::unix::fs::FileExt;

/// Locks granted before the damage.
const LOCKS: usize = 8;

/// Acquires `LOCKS` locks, each with a lease of its own.
fn acquire_all(server: &Server) -> Vec<Held> {
    (0..LOCKS)
        .map(|i| try_acquire(server, &format!("t223/lock-{i}")).expect("acquire"))
        .collect()
}

#[test]
fn a_torn_tail_is_recovered_and_a_damaged_middle_record_refused() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path();

    phase("grant, then stop the node");
    let mut server = Server::start_in(dir, free_port());
    let held = acquire_all(&server);
    let highest = held.iter().map(|h| h.2).max().unwrap();
    server.kill9();
    drop(server);

    phase("tear the tail: the node starts and keeps every acknowledged grant");
    let torn = tear_wal_tail(dir).expect("tear the tail");
    eprintln!("torn: {torn:?}");
    let records_before = wal_records(dir).unwrap();
    let mut server = Server::start_in(dir, free_port());
    assert!(
        server.log_text().contains("torn or invalid log record"),
        "the torn tail was not noticed"
    );
    assert_all_held(&server, &held);
    let fresh = server.ok_json(&["acquire", "t223/fresh", "--ttl", "120s", "--json"]);
    assert!(u64_of(&fresh, "token") > highest, "{fresh}");
    server.kill9();
    drop(server);

    phase("flip a byte in a record in the middle of the log: the start is refused");
    let records = wal_records(dir).unwrap();
    assert!(records.len() >= records_before.len(), "{records:?}");
    let middle = &records[records.len() / 2];
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&middle.segment)
        .unwrap();
    let at = middle.offset + middle.bytes - 1;
    let mut byte = [0];
    file.read_exact_at(&mut byte, at).unwrap();
    file.write_all_at(&[byte[0] ^ 0x20], at).unwrap();
    file.sync_all().unwrap();
    drop(file);
    let damaged = std::fs::read(&middle.segment).unwrap();
    let (code, stderr) = refused_start(dir, &[]);
    assert_ne!(code, 0, "a damaged log was served: {stderr}");
    let expected = format!(
        "corrupt log record at byte {} of {}",
        middle.offset,
        middle.segment.display()
    );
    assert!(stderr.contains(&expected), "{expected:?} not in {stderr}");
    assert!(stderr.contains("from a backup"), "{stderr}");
    assert!(stderr.contains("leasehold member add"), "{stderr}");

    phase("the refusal changed nothing: the damaged segment is as it was");
    assert!(std::fs::read(&middle.segment).unwrap() == damaged);
    let (code_again, stderr_again) = refused_start(dir, &[]);
    assert_ne!(code_again, 0);
    assert!(stderr_again.contains(&expected), "{stderr_again}");
}
