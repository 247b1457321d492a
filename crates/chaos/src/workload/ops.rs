//! Each client operation of the workload, sent through the client library
//! and recorded with its invoke and complete times and its outcome. An
//! outcome is *definite* (the server said yes or no) or *unknown* (a
//! timeout, no leader, a lost connection: it may or may not have taken
//! effect); the checker treats unknown outcomes as "maybe".

use crate::cluster::node_of_endpoint;
use crate::history::{Hold, Lease, LeaseListing, LockRead, OpRecord, Pending, Put, Read};
use crate::recorder::Recorder;
use leasehold_client::wire::GetLockResponse;
use leasehold_client::{
    answered_by, owner_info, Client, Consistency, Error, FencedKey, LeaseId, LockName, LockOptions,
    Token,
};
use std::future::Future;
use std::time::Duration;

/// Whether an error leaves the operation's effect unknown.
pub fn unknown(error: &Error) -> bool {
    matches!(
        error,
        Error::Unavailable { .. }
            | Error::Timeout { .. }
            | Error::Internal { .. }
            | Error::Server { .. }
            | Error::NotLeader { .. }
    )
}

/// One client of the workload with the recorder it writes to.
#[derive(Clone)]
pub struct Ops {
    pub client: Client,
    pub recorder: Recorder,
}

/// One call's result, with when it was sent and answered and by whom.
struct Called<T> {
    result: Result<T, Error>,
    invoked_ms: u64,
    completed_ms: u64,
    node: Option<u64>,
}

impl<T> Called<T> {
    /// The log line of the call: `ok` with `said` of the reply, or the
    /// error as a definite refusal or an unknown outcome.
    fn record(&self, op: &'static str, args: String, said: impl Fn(&T) -> String) -> OpRecord {
        let outcome = match &self.result {
            Ok(reply) => format!("ok {}", said(reply)).trim_end().to_owned(),
            Err(error) if unknown(error) => format!("unknown: {error}"),
            Err(error) => format!("refused: {error}"),
        };
        OpRecord {
            op,
            invoked_ms: self.invoked_ms,
            completed_ms: self.completed_ms,
            node: self.node,
            args,
            outcome,
        }
    }
}

impl Ops {
    /// Runs one client call, timed on the recorder's clock, noting which
    /// node answered it.
    async fn call<T>(&self, call: impl Future<Output = Result<T, Error>>) -> Called<T> {
        let invoked_ms = self.recorder.now_ms();
        let (result, url) = answered_by(call).await;
        Called {
            result,
            invoked_ms,
            completed_ms: self.recorder.now_ms(),
            node: url.as_deref().and_then(node_of_endpoint),
        }
    }

    /// Grants a lease of `ttl`; records it (or the unknown grant).
    pub async fn grant(&self, ttl: Duration, owner: &str) -> Option<u64> {
        let owner_info = owner_info(Some(owner.to_owned()), Vec::new());
        let called = self.call(self.client.grant_lease(ttl, owner_info)).await;
        let args = format!("ttl_ms={} owner={owner}", ttl.as_millis());
        self.recorder
            .op(called.record("grant", args, |g| format!("lease={:x}", g.lease.0)));
        let Called {
            result: granted,
            invoked_ms,
            completed_ms,
            ..
        } = called;
        let mut recorded = self.recorder.lock();
        match granted {
            Ok(granted) => {
                recorded.history.leases.push(Lease {
                    id: granted.lease.0,
                    ttl_ms: granted.ttl.as_millis() as u64,
                    granted_invoked_ms: invoked_ms,
                    renewals_sent_ms: Vec::new(),
                    revoke_invoked_ms: None,
                    last_ack_ms: completed_ms,
                    abandoned_ms: None,
                });
                Some(granted.lease.0)
            }
            Err(error) => {
                if unknown(&error) {
                    recorded.history.pending_grants_ms.push(invoked_ms);
                }
                None
            }
        }
    }

    /// Renews `lease` once; records an acknowledged renewal. `Err(true)`:
    /// the lease is gone for good.
    pub async fn renew(&self, lease: u64) -> Result<(), bool> {
        let called = self.call(self.client.renew_lease(LeaseId(lease))).await;
        let args = format!("lease={lease:x}");
        self.recorder
            .op(called.record("renew", args, |_| String::new()));
        let (invoked_ms, completed_ms) = (called.invoked_ms, called.completed_ms);
        match called.result {
            Ok(_) => {
                self.recorder.lease(lease, |l| {
                    l.renewals_sent_ms.push(invoked_ms);
                    l.last_ack_ms = completed_ms;
                });
                Ok(())
            }
            Err(error) => Err(!unknown(&error)),
        }
    }

    /// Revokes `lease` (its locks are freed).
    pub async fn revoke(&self, lease: u64) {
        let invoked_ms = self.recorder.now_ms();
        self.recorder
            .lease(lease, |l| l.revoke_invoked_ms = Some(invoked_ms));
        let called = self.call(self.client.revoke_lease(LeaseId(lease))).await;
        let args = format!("lease={lease:x}");
        self.recorder
            .op(called.record("revoke", args, |_| String::new()));
    }

    /// Acquires `lock` for `lease`, waiting up to `wait`; records the hold
    /// (or the unknown attempt). Returns the token.
    pub async fn acquire(&self, lease: u64, lock: &LockName, wait: Duration) -> Option<u64> {
        let options = LockOptions::default().wait(wait).fenced(true);
        let called = self
            .call(self.client.acquire(LeaseId(lease), lock, &options))
            .await;
        let args = format!("lease={lease:x} lock={lock} wait_ms={}", wait.as_millis());
        self.recorder.op(called.record("acquire", args, |a| {
            format!("token={} already_held={}", a.token.0, a.already_held)
        }));
        let Called {
            result: acquired,
            invoked_ms,
            completed_ms,
            ..
        } = called;
        let mut recorded = self.recorder.lock();
        let name = lock.to_string();
        let history = &mut recorded.history;
        match acquired {
            Ok(acquired) => {
                let token = acquired.token.0;
                let known = |h: &Hold| h.lock == name && h.token == token;
                if acquired.already_held && history.holds.iter().any(known) {
                    return Some(token);
                }
                // A grant already held, unrecorded: an earlier acquire of
                // this lease whose answer was lost made it; it was sent then.
                let earlier = acquired.already_held.then(|| {
                    let pending = history.pending_acquires.iter();
                    pending
                        .filter(|p| p.lock == name && p.lease == lease)
                        .map(|p| p.invoked_ms)
                        .min()
                });
                history.holds.push(Hold {
                    lock: name,
                    token,
                    lease,
                    acquire_invoked_ms: earlier.flatten().unwrap_or(invoked_ms),
                    acquire_completed_ms: completed_ms,
                    release_invoked_ms: None,
                    release_completed_ms: None,
                });
                Some(token)
            }
            Err(error) => {
                if unknown(&error) {
                    history.pending_acquires.push(Pending {
                        lock: name,
                        lease,
                        invoked_ms,
                    });
                }
                None
            }
        }
    }

    /// Releases `lock` held by `lease` under `token`.
    pub async fn release(&self, lease: u64, lock: &LockName, token: u64) {
        let invoked_ms = self.recorder.now_ms();
        let name = lock.to_string();
        self.recorder
            .hold(&name, token, |h| h.release_invoked_ms = Some(invoked_ms));
        let called = self
            .call(self.client.release(LeaseId(lease), lock, Token(token)))
            .await;
        let args = format!("lease={lease:x} lock={lock} token={token}");
        self.recorder
            .op(called.record("release", args, |_| String::new()));
        if called.result.is_ok() {
            let completed_ms = called.completed_ms;
            self.recorder.hold(&name, token, |h| {
                h.release_completed_ms = Some(completed_ms)
            });
        }
    }

    /// Writes `value` to the fenced key named as `lock` with `token`;
    /// records an accepted or stale-refused put, or an unknown one.
    pub async fn put(&self, lock: &LockName, token: u64, value: String) {
        let Ok(key) = FencedKey::parse(lock.as_str()) else {
            return;
        };
        let called = self
            .call(
                self.client
                    .fenced_put(&key, value.clone().into_bytes(), lock, Token(token)),
            )
            .await;
        let args = format!("key={key} token={token} value={value}");
        self.recorder
            .op(called.record("put", args, |_| String::new()));
        let Called {
            result: written,
            invoked_ms,
            completed_ms,
            ..
        } = called;
        let put = |accepted| Put {
            key: key.to_string(),
            token,
            value: value.clone(),
            invoked_ms,
            completed_ms,
            accepted,
        };
        let mut recorded = self.recorder.lock();
        match written {
            Ok(_) => recorded.history.puts.push(put(true)),
            Err(Error::StaleToken { .. }) => recorded.history.puts.push(put(false)),
            Err(error) if unknown(&error) => recorded.history.unknown_puts.push(put(false)),
            // A retry after the lock passed on (or was freed and removed)
            // hears NotHolder (NoSuchLock) though an earlier attempt may
            // have written: the server remembers a put only while its
            // lease lives. Maybe written. Seen when a holder process is
            // SIGSTOPped with its put in flight.
            Err(Error::NotHolder { .. } | Error::NoSuchLock { .. }) => {
                recorded.history.unknown_puts.push(put(false))
            }
            // Anything else: refused as malformed; nothing written.
            Err(_) => {}
        }
    }

    /// Reads the fenced key named as `lock` (linearizable).
    pub async fn read(&self, lock: &LockName) {
        let Ok(key) = FencedKey::parse(lock.as_str()) else {
            return;
        };
        let called = self
            .call(self.client.fenced_get(&key, Consistency::Linearizable))
            .await;
        self.recorder
            .op(called.record("read", format!("key={key}"), |found| {
                found
                    .as_ref()
                    .map_or("none".into(), |v| format!("token={}", v.token.0))
            }));
        let (invoked_ms, completed_ms) = (called.invoked_ms, called.completed_ms);
        let Ok(found) = called.result else {
            return;
        };
        let observed = found.map(|v| (v.token.0, String::from_utf8_lossy(&v.value).into_owned()));
        self.recorder.lock().history.reads.push(Read {
            key: key.to_string(),
            invoked_ms,
            completed_ms,
            observed,
        });
    }

    /// Reads `lock`'s holder (linearizable `get`).
    pub async fn get(&self, lock: &LockName) {
        let called = self
            .call(self.client.get_lock(lock, Consistency::Linearizable))
            .await;
        let holder_of = |reply: &GetLockResponse| {
            let info = reply.lock.as_ref();
            info.and_then(|i| i.holder.as_ref()).map(|h| h.token)
        };
        self.recorder
            .op(called.record("get", format!("lock={lock}"), |r| {
                format!("holder_token={}", holder_of(r).unwrap_or(0))
            }));
        let (invoked_ms, completed_ms) = (called.invoked_ms, called.completed_ms);
        let holder = match &called.result {
            Ok(reply) => holder_of(reply),
            Err(Error::NoSuchLock { .. }) => None,
            Err(_) => return,
        };
        self.recorder.lock().history.lock_reads.push(LockRead {
            lock: lock.to_string(),
            invoked_ms,
            completed_ms,
            holder,
        });
    }

    /// Lists the locks under `prefix` (linearizable `ls`): one view per
    /// lock of `locks` (absent: free).
    pub async fn list(&self, prefix: &str, locks: &[LockName]) {
        let called = self
            .call(self.client.list_locks(prefix, Consistency::Linearizable))
            .await;
        self.recorder
            .op(called.record("list", format!("prefix={prefix}"), |l| {
                format!("locks={}", l.locks.len())
            }));
        let (invoked_ms, completed_ms) = (called.invoked_ms, called.completed_ms);
        let Ok(listed) = called.result else {
            return;
        };
        let mut recorded = self.recorder.lock();
        for lock in locks {
            let info = listed.locks.iter().find(|i| i.name == lock.as_str());
            recorded.history.lock_reads.push(LockRead {
                lock: lock.to_string(),
                invoked_ms,
                completed_ms,
                holder: info.and_then(|i| i.holder.as_ref()).map(|h| h.token),
            });
        }
    }

    /// Lists every lease (linearizable): the orphan-lease rule's evidence.
    pub async fn list_leases(&self) {
        let called = self
            .call(self.client.list_leases(Consistency::Linearizable))
            .await;
        self.recorder
            .op(called.record("list-leases", String::new(), |l| {
                format!("leases={}", l.leases.len())
            }));
        if let Ok(listed) = called.result {
            let ids = listed.leases.iter().map(|l| l.id).collect();
            let invoked_ms = called.invoked_ms;
            let listing = LeaseListing { invoked_ms, ids };
            self.recorder.lock().history.lease_listings.push(listing);
        }
    }
}
