//! Uncontended: each client acquires (no wait) and releases its own lock
//! `bench/u/{client}` through its lease. A cycle is one acquire + release;
//! its latency is the whole cycle.

use leasehold_client::LockName;
use tokio::time::Instant;

use super::stats::Recorder;
use super::{released, until, Window, Worker};

pub(super) async fn client(w: Worker, win: Window) -> Recorder {
    let mut rec = Recorder::new(false);
    // One timer for the whole run: the call in flight at the end is dropped.
    until(win.end, cycles(&w, win, &mut rec)).await;
    rec
}

async fn cycles(w: &Worker, win: Window, rec: &mut Recorder) {
    let name = LockName::parse(&format!("{}u/{}", super::run_prefix(), w.index))
        .expect("a valid lock name");
    loop {
        let t0 = Instant::now();
        let guard = match w.lease.lock(&name).acquire().await {
            Ok(guard) => guard,
            Err(e) => {
                win.failed(rec, Instant::now(), &e).await;
                continue;
            }
        };
        let outcome = guard.release().await;
        let t1 = Instant::now();
        match released(outcome) {
            Ok(()) => {
                if win.measures(t0, t1) {
                    rec.latency(t1 - t0);
                }
            }
            // The lock may stay held by this lease: the next acquire
            // returns it (already held) and the next release frees it.
            Err((reason, transient)) => win.failure(rec, t1, reason, transient).await,
        }
    }
}
