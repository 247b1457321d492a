//! Uncontended: each client acquires (no wait) and releases its own lock
//! `bench/u/{client}`. A cycle is one acquire + release; its latency is the
//! whole cycle.

use leasehold_proto::v1::{AcquireRequest, ReleaseRequest};

use super::transport::Locker;
use tokio::time::Instant;

use super::stats::Recorder;
use super::{until, Client, Window};

pub(super) async fn client(mut c: Client, w: Window) -> Recorder {
    let mut rec = Recorder::new(false);
    // One timer for the whole run: the call in flight at the end is dropped.
    until(w.end, cycles(&mut c, w, &mut rec)).await;
    rec
}

async fn cycles(c: &mut Client, w: Window, rec: &mut Recorder) {
    let mut lock = match Locker::open(c.channel.clone(), c.transport).await {
        Ok(lock) => lock,
        Err(s) => {
            w.failed(rec, Instant::now(), &s).await;
            return;
        }
    };
    let name = format!("bench/u/{}", c.index);
    loop {
        let t0 = Instant::now();
        let acquire = AcquireRequest {
            lease: c.lease,
            name: name.clone(),
            wait_ms: 0,
            request_id: c.ids.next(),
            ..Default::default()
        };
        let token = match lock.acquire(acquire).await {
            Ok(r) => r.token,
            Err(s) => {
                w.failed(rec, Instant::now(), &s).await;
                continue;
            }
        };
        let release = ReleaseRequest {
            lease: c.lease,
            name: name.clone(),
            token,
            request_id: c.ids.next(),
        };
        let released = lock.release(release).await;
        let t1 = Instant::now();
        match released {
            Ok(_) => {
                if w.measures(t0, t1) {
                    rec.latency(t1 - t0);
                }
            }
            // The lock stays held by this lease: the next acquire returns it
            // (already_held) and the next release frees it.
            Err(s) => w.failed(rec, t1, &s).await,
        }
    }
}
