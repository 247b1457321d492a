//! Keep-alive: each client renews its lease over one KeepAliveStream with M
//! renewals in flight. A cycle is one acknowledged renewal; its latency is
//! send → ack (matched by seq).

use std::collections::HashMap;

use leasehold_proto::v1::{lease_client::LeaseClient, KeepAliveRequest};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use super::stats::Recorder;
use super::{until, Client, Window, ERROR_BACKOFF};

pub(super) async fn client(c: Client, w: Window, inflight: u32) -> Recorder {
    let mut rec = Recorder::new(false);
    // One timer for the whole run: the stream open at the end is dropped.
    until(w.end, streams(&c, w, inflight as usize, &mut rec)).await;
    rec
}

/// Keeps one stream busy; reopens it after a failure.
async fn streams(c: &Client, w: Window, inflight: usize, rec: &mut Recorder) {
    let mut lease = LeaseClient::new(c.channel.clone());
    let mut seq = 0u64;
    let mut sent: HashMap<u64, Instant> = HashMap::with_capacity(inflight * 2);
    loop {
        let (tx, rx) = mpsc::channel::<KeepAliveRequest>(inflight);
        sent.clear();
        // Queue the first renewals before opening, so the stream starts full.
        for _ in 0..inflight {
            seq += 1;
            sent.insert(seq, Instant::now());
            let renewal = KeepAliveRequest {
                lease: c.lease,
                seq,
            };
            tx.try_send(renewal)
                .expect("the channel has room for `inflight` requests");
        }
        let mut acks = match lease.keep_alive_stream(ReceiverStream::new(rx)).await {
            Ok(r) => r.into_inner(),
            Err(s) => {
                w.failed(rec, Instant::now(), &s).await;
                continue;
            }
        };
        loop {
            let next = acks.message().await;
            let t1 = Instant::now();
            let counted = w.measures(t1, t1);
            match next {
                Ok(Some(ack)) => {
                    match (sent.remove(&ack.seq), ack.error) {
                        (Some(t0), None) => {
                            if w.measures(t0, t1) {
                                rec.latency(t1 - t0);
                            }
                        }
                        (Some(_), Some(e)) if counted => rec.error(if e.reason.is_empty() {
                            "KeepAliveError".to_owned()
                        } else {
                            e.reason
                        }),
                        (Some(_), Some(_)) => {}
                        (None, _) => {
                            // Not one of ours in flight: nothing to replace.
                            if counted {
                                rec.error("UnknownSeq");
                            }
                            continue;
                        }
                    }
                    seq += 1;
                    sent.insert(seq, Instant::now());
                    let renewal = KeepAliveRequest {
                        lease: c.lease,
                        seq,
                    };
                    if tx.send(renewal).await.is_err() {
                        break; // the request stream is gone: reopen
                    }
                }
                Ok(None) => {
                    if counted {
                        rec.error("StreamClosed");
                    }
                    tokio::time::sleep(ERROR_BACKOFF).await;
                    break;
                }
                Err(s) => {
                    w.failed(rec, t1, &s).await;
                    break;
                }
            }
        }
    }
}
