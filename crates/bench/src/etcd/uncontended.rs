//! Uncontended against etcd: each client locks and unlocks its own
//! [`Mutex`] (prefix `leasehold-bench/{run}/u/{client}`). A cycle is one
//! lock Txn + one unlock DeleteRange; its latency is the whole cycle.

use tokio::time::Instant;

use super::super::stats::Recorder;
use super::super::{until, Window};
use super::mutex::Mutex;
use super::rpc::Etcd;
use super::{failed, Client};

pub(super) async fn client(c: Client, w: Window) -> Recorder {
    let mut rec = Recorder::new(false);
    // One timer for the whole run: the call in flight at the end is dropped.
    until(w.end, cycles(&c, w, &mut rec)).await;
    rec
}

async fn cycles(c: &Client, w: Window, rec: &mut Recorder) {
    let mut etcd = Etcd::new(c.channel.clone());
    let mutex = Mutex::new(&c.prefix, c.lease);
    loop {
        let t0 = Instant::now();
        let locked = match etcd.txn(mutex.lock_request()).await {
            Ok(response) => mutex.locked(&response),
            Err(s) => {
                failed(&w, rec, Instant::now(), &s).await;
                continue;
            }
        };
        // Unlocked even when not held, as Mutex.Lock cleans up its key
        // when it gives up.
        let unlocked = etcd.delete_range(mutex.unlock_request()).await;
        let t1 = Instant::now();
        match (locked, unlocked) {
            (Ok(_), Ok(_)) => {
                if w.measures(t0, t1) {
                    rec.latency(t1 - t0);
                }
            }
            (Err(e), _) => {
                if t1 >= w.measure_from && t1 < w.end {
                    rec.error(e.reason());
                }
            }
            // The key stays: the next Txn finds it and holds it again.
            (Ok(_), Err(s)) => failed(&w, rec, t1, &s).await,
        }
    }
}
