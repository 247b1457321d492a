//! Keep-alive against etcd: each client renews its lease over one
//! LeaseKeepAlive stream with M renewals in flight. A cycle is one
//! acknowledged renewal; its latency is send → ack. etcd's acks carry no
//! sequence number, but a stream's requests are answered one at a time, in
//! order, so the oldest renewal in flight is the one acknowledged.

use std::collections::VecDeque;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use super::super::stats::Recorder;
use super::super::{until, Window, ERROR_BACKOFF};
use super::proto::LeaseKeepAliveRequest;
use super::rpc::Etcd;
use super::{failed, Client};

pub(super) async fn client(c: Client, w: Window, inflight: u32) -> Recorder {
    let mut rec = Recorder::new(false);
    // One timer for the whole run: the stream open at the end is dropped.
    until(w.end, streams(&c, w, inflight as usize, &mut rec)).await;
    rec
}

/// Keeps one stream busy; reopens it after a failure.
async fn streams(c: &Client, w: Window, inflight: usize, rec: &mut Recorder) {
    let mut etcd = Etcd::new(c.channel.clone());
    let renewal = LeaseKeepAliveRequest { id: c.lease };
    let mut sent: VecDeque<Instant> = VecDeque::with_capacity(inflight);
    loop {
        let (tx, rx) = mpsc::channel(inflight);
        sent.clear();
        // Queue the first renewals before opening, so the stream starts full.
        for _ in 0..inflight {
            sent.push_back(Instant::now());
            tx.try_send(renewal.clone())
                .expect("the channel has room for `inflight` requests");
        }
        let mut acks = match etcd.lease_keep_alive(ReceiverStream::new(rx)).await {
            Ok(acks) => acks,
            Err(s) => {
                failed(&w, rec, Instant::now(), &s).await;
                continue;
            }
        };
        loop {
            let next = acks.message().await;
            let t1 = Instant::now();
            let counted = w.measures(t1, t1);
            match next {
                Ok(Some(ack)) => {
                    let Some(t0) = sent.pop_front() else {
                        // More acks than renewals: nothing to replace.
                        if counted {
                            rec.error("UnexpectedAck");
                        }
                        continue;
                    };
                    if ack.id != c.lease {
                        if counted {
                            rec.error("WrongLeaseAcked");
                        }
                    } else if ack.ttl <= 0 {
                        if counted {
                            rec.error("LeaseNotFound");
                        }
                    } else if w.measures(t0, t1) {
                        rec.latency(t1 - t0);
                    }
                    sent.push_back(Instant::now());
                    if tx.send(renewal.clone()).await.is_err() {
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
                    failed(&w, rec, t1, &s).await;
                    break;
                }
            }
        }
    }
}
