use super::*;
use std::sync::{Arc, Mutex};

fn freed(token: u64) -> LockLine {
    LockLine::Hold {
        event: HoldEvent::Freed { cause: "released" },
        lock: LockName::parse("jobs/nightly").unwrap(),
        lease: LeaseId(7),
        owner: "worker-1".into(),
        token: Token(token),
    }
}

/// A line thread recording what it emits.
fn recording() -> (LineThread, Arc<Mutex<Vec<LockLine>>>) {
    let emitted = Arc::new(Mutex::new(Vec::new()));
    let sink = emitted.clone();
    let thread = LineThread::spawn(move |line| sink.lock().unwrap().push(line));
    (thread, emitted)
}

#[test]
fn every_line_sent_is_emitted_in_order_by_the_time_flush_returns() {
    let (thread, emitted) = recording();
    for token in 1..=2_000 {
        thread.send(Queued::Lines(vec![freed(token)]));
    }
    thread.flush(Duration::from_secs(10));
    let emitted = emitted.lock().unwrap();
    let expected: Vec<LockLine> = (1..=2_000).map(freed).collect();
    assert_eq!(*emitted, expected);
}

#[test]
fn lines_sent_after_a_flush_still_come_out() {
    let (thread, emitted) = recording();
    thread.send(Queued::Lines(vec![freed(1)]));
    thread.flush(Duration::from_secs(10));
    thread.send(Queued::Lines(vec![freed(2)]));
    thread.flush(Duration::from_secs(10));
    assert_eq!(*emitted.lock().unwrap(), vec![freed(1), freed(2)]);
}

#[test]
fn a_flush_returns_at_its_timeout_while_a_line_is_still_being_written() {
    let gate = Arc::new(Mutex::new(()));
    let held = gate.lock().unwrap();
    let stuck = gate.clone();
    let thread = LineThread::spawn(move |_| drop(stuck.lock().unwrap()));
    thread.send(Queued::Lines(vec![freed(1)]));
    let started = std::time::Instant::now();
    thread.flush(Duration::from_millis(200));
    assert!(started.elapsed() >= Duration::from_millis(200));
    drop(held);
    thread.flush(Duration::from_secs(10));
}
