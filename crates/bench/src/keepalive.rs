//! Keep-alive: each client renews its lease with `Lease::keep_alive_once`,
//! M renewals in flight (on the lease's session stream, or as unary calls
//! with `--transport unary`). A cycle is one acknowledged renewal; its
//! latency is send → acknowledgement.

use futures::stream::{FuturesUnordered, StreamExt as _};
use leasehold_client::{Error, Lease};
use std::time::Duration;
use tokio::time::Instant;

use super::stats::Recorder;
use super::{until, Window, Worker};

pub(super) async fn client(w: Worker, win: Window, inflight: u32) -> Recorder {
    let mut rec = Recorder::new(false);
    // One timer for the whole run: the renewals in flight at the end are dropped.
    until(win.end, renewals(&w.lease, win, inflight, &mut rec)).await;
    rec
}

/// Keeps `inflight` renewals going: each one answered starts the next.
async fn renewals(lease: &Lease, win: Window, inflight: u32, rec: &mut Recorder) {
    let mut in_flight: FuturesUnordered<_> = (0..inflight).map(|_| renew(lease)).collect();
    while let Some((t0, renewed)) = in_flight.next().await {
        let t1 = Instant::now();
        match renewed {
            Ok(_) if win.measures(t0, t1) => rec.latency(t1 - t0),
            Ok(_) => {}
            Err(e) => win.failed(rec, t1, &e).await,
        }
        in_flight.push(renew(lease));
    }
}

/// One renewal, with its send time.
async fn renew(lease: &Lease) -> (Instant, Result<Duration, Error>) {
    let t0 = Instant::now();
    (t0, lease.keep_alive_once().await)
}
