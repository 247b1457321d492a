//! A holder process's history, as it sends it (JSON lines) and as the run
//! merges it: on the run's clock, checked by the same rules as the rest,
//! so an early grant or an accepted stale put in it is caught.

use leasehold_chaos::check::{self, Violation};
use leasehold_chaos::history::{History, Hold, Lease, OpRecord, Put};
use leasehold_chaos::holder::Report;
use leasehold_chaos::recorder::Recorder;

fn lease(id: u64, granted_ms: u64) -> Lease {
    Lease {
        id,
        ttl_ms: 2_000,
        granted_invoked_ms: granted_ms,
        renewals_sent_ms: vec![],
        revoke_invoked_ms: None,
        last_ack_ms: granted_ms + 5,
        abandoned_ms: None,
    }
}

fn hold(token: u64, lease: u64, completed_ms: u64, released_ms: Option<u64>) -> Hold {
    Hold {
        lock: "a".into(),
        token,
        lease,
        acquire_invoked_ms: completed_ms - 5,
        acquire_completed_ms: completed_ms,
        release_invoked_ms: released_ms,
        release_completed_ms: released_ms.map(|r| r + 5),
    }
}

fn put(token: u64, value: &str, invoked_ms: u64, accepted: bool) -> Put {
    Put {
        key: "a".into(),
        token,
        value: value.into(),
        invoked_ms,
        completed_ms: invoked_ms + 5,
        accepted,
    }
}

/// A holder process (lease 1) held `a` under token 5 from 10 ms and was
/// paused at 40 ms: its lease could end at 2_000 ms. It wrote once before
/// the pause; its late put (3_100 ms) was refused as stale.
fn paused_holder() -> History {
    History {
        ops: vec![OpRecord {
            op: "acquire",
            invoked_ms: 5,
            completed_ms: 10,
            node: Some(1),
            args: "lease=1 lock=a wait_ms=2000".into(),
            outcome: "ok token=5 already_held=false".into(),
        }],
        leases: vec![lease(1, 0)],
        holds: vec![hold(5, 1, 10, None)],
        puts: vec![put(5, "h-1", 20, true), put(5, "h-2", 3_100, false)],
        ..History::default()
    }
}

/// The run's own worker (lease 2) took `a` over under token 9 at
/// `granted_ms` and wrote at 3_000 ms.
fn run_with_taker(granted_ms: u64) -> Recorder {
    let recorder = Recorder::new();
    let mut recorded = recorder.lock();
    recorded.history.leases.push(lease(2, granted_ms - 10));
    recorded.history.holds.push(hold(9, 2, granted_ms, None));
    recorded.history.puts.push(put(9, "w", 3_000, true));
    drop(recorded);
    recorder
}

/// `history` as the holder sends it and the run reads it back.
fn sent(history: History) -> History {
    let line = Report::History(history).line();
    match Report::parse(&line).expect("a holder's line reads back") {
        Report::History(history) => history,
        other => panic!("read back as {other:?}"),
    }
}

#[test]
fn a_holder_on_the_runs_epoch_reads_the_runs_clock() {
    let run = Recorder::new();
    std::thread::sleep(std::time::Duration::from_millis(30));
    let before_ms = run.now_ms();
    let holder = Recorder::on_monotonic_epoch(run.monotonic_epoch_ns()).expect("the run's epoch");
    let holder_ms = holder.now_ms();
    let after_ms = run.now_ms();
    assert!(
        (before_ms..=after_ms).contains(&holder_ms),
        "{before_ms} <= {holder_ms} <= {after_ms}"
    );
    assert!(Recorder::on_monotonic_epoch(u64::MAX).is_err());
}

#[test]
fn a_report_reads_back_as_written() {
    let history = paused_holder();
    assert_eq!(sent(history.clone()), history);
    let op = Report::Op(history.ops[0].clone());
    assert_eq!(Report::parse(&op.line()), Ok(op));
    let unknown = r#"{"op":{"op":"fly","invoked_ms":1,"completed_ms":2,"node":null,"args":"","outcome":"ok"}}"#;
    let error = Report::parse(unknown).expect_err("an unknown operation");
    assert!(error.contains("unknown operation \"fly\""), "{error}");
}

#[test]
fn a_merged_pause_that_kept_the_rules_has_no_violation() {
    let run = run_with_taker(2_100);
    run.merge(sent(paused_holder()));
    let history = run.history();
    assert_eq!(history.holds.len(), 2);
    assert_eq!(history.ops.len(), 1);
    assert_eq!(check::all(&history, 1.0), vec![]);
}

#[test]
fn an_early_grant_after_a_merged_pause_is_caught() {
    // The lock passed on at 1_500 ms, before the paused lease could end.
    let run = run_with_taker(1_500);
    run.merge(sent(paused_holder()));
    let found = check::all(&run.history(), 1.0);
    assert!(
        found.iter().any(|v| matches!(
            v,
            Violation::EarlyGrant {
                previous: 5,
                token: 9,
                granted_ms: 1_500,
                earliest_end_ms: 2_000,
                ..
            }
        )),
        "{found:?}"
    );
}

#[test]
fn a_stale_put_accepted_after_a_merged_pause_is_caught() {
    let run = run_with_taker(2_100);
    let mut holder = paused_holder();
    holder.puts[1].accepted = true;
    run.merge(sent(holder));
    let found = check::all(&run.history(), 1.0);
    assert!(
        found.iter().any(|v| matches!(
            v,
            Violation::PutByNonHolder {
                token: 5,
                at_ms: 3_100,
                ..
            }
        )),
        "{found:?}"
    );
    assert!(
        found.iter().any(|v| matches!(
            v,
            Violation::VersionRegressed {
                earlier: 9,
                later: 5,
                ..
            }
        )),
        "{found:?}"
    );
}
