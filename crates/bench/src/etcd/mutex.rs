//! [`Mutex`]: one client's lock as etcd's own `concurrency.Mutex` (etcd
//! 3.4, `clientv3/concurrency/mutex.go`) takes it, in its uncontended path.
//!
//! `Lock` is one Txn: if the client's key `{prefix}/{lease in hex}` has
//! create_revision 0 (does not exist), put it on the session's lease, else
//! get it; either way also get the key under the prefix with the lowest
//! create_revision (the owner). The lock is held when that owner is the
//! client's own key; otherwise `Lock` would wait for the earlier keys to be
//! deleted, which the benchmark (one prefix per client) counts as an error.
//! `Unlock` is one DeleteRange of the key. Two round trips a cycle, like
//! Leasehold's acquire + release.

use super::proto::{
    Compare, CompareResult, CompareTarget, DeleteRangeRequest, PutRequest, RangeRequest, Request,
    RequestOp, Response, SortOrder, SortTarget, TargetUnion, TxnRequest, TxnResponse,
};

/// Why a `Lock` Txn did not take the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NotLocked {
    /// An older key under the prefix owns the lock (`Lock` would wait).
    OwnedByOther,
    /// The response lacks what etcd always sends for this Txn.
    Malformed,
}

impl NotLocked {
    /// The reason recorded in the report.
    pub(super) fn reason(self) -> &'static str {
        match self {
            NotLocked::OwnedByOther => "MutexOwnedByOther",
            NotLocked::Malformed => "MalformedTxnResponse",
        }
    }
}

/// One client's lock: its key, and the Lock Txn built once.
pub(super) struct Mutex {
    /// `{prefix}/{lease:x}`, as `Mutex.Lock` names the session's key.
    key: Vec<u8>,
    lock: TxnRequest,
}

impl Mutex {
    /// The lock of `concurrency.NewMutex(session, prefix)` for a session on
    /// `lease`.
    pub(super) fn new(prefix: &str, lease: i64) -> Self {
        let pfx = format!("{prefix}/").into_bytes();
        let key = [pfx.as_slice(), format!("{lease:x}").as_bytes()].concat();
        // v3.OpGet(pfx, v3.WithFirstCreate()...): prefix, sort, limit 1.
        let owner = RequestOp {
            request: Some(Request::Range(RangeRequest {
                range_end: prefix_end(&pfx),
                key: pfx,
                limit: 1,
                sort_order: SortOrder::Ascend as i32,
                sort_target: SortTarget::Create as i32,
            })),
        };
        let lock = TxnRequest {
            compare: vec![Compare {
                result: CompareResult::Equal as i32,
                target: CompareTarget::Create as i32,
                key: key.clone(),
                target_union: Some(TargetUnion::CreateRevision(0)),
            }],
            success: vec![
                RequestOp {
                    request: Some(Request::Put(PutRequest {
                        key: key.clone(),
                        value: Vec::new(),
                        lease,
                    })),
                },
                owner.clone(),
            ],
            failure: vec![
                RequestOp {
                    request: Some(Request::Range(RangeRequest {
                        key: key.clone(),
                        ..Default::default()
                    })),
                },
                owner,
            ],
        };
        Mutex { key, lock }
    }

    /// The Txn that `Lock` sends.
    pub(super) fn lock_request(&self) -> TxnRequest {
        self.lock.clone()
    }

    /// Whether the lock Txn's response means the lock is held; if so, the
    /// key's create revision (the Mutex's fencing token).
    pub(super) fn locked(&self, response: &TxnResponse) -> Result<i64, NotLocked> {
        let range = |i: usize| match response.responses.get(i).map(|r| &r.response) {
            Some(Some(Response::Range(range))) => Ok(range),
            _ => Err(NotLocked::Malformed),
        };
        let mine = if response.succeeded {
            // The put created the key at the Txn's revision.
            response
                .header
                .as_ref()
                .ok_or(NotLocked::Malformed)?
                .revision
        } else {
            // The key already existed (this session holds or awaits it).
            range(0)?
                .kvs
                .first()
                .ok_or(NotLocked::Malformed)?
                .create_revision
        };
        match range(1)?.kvs.first() {
            Some(owner) if owner.create_revision != mine => Err(NotLocked::OwnedByOther),
            _ => Ok(mine),
        }
    }

    /// The DeleteRange that `Unlock` sends.
    pub(super) fn unlock_request(&self) -> DeleteRangeRequest {
        DeleteRangeRequest {
            key: self.key.clone(),
            range_end: Vec::new(),
        }
    }
}

/// The end of the range of keys starting with `prefix`, as clientv3's
/// `WithPrefix` computes it: the last byte below 0xff incremented, the rest
/// cut; `\0` (every key) when there is none.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    match prefix.iter().rposition(|&b| b < 0xff) {
        Some(i) => {
            let mut end = prefix[..=i].to_vec();
            end[i] += 1;
            end
        }
        None => vec![0],
    }
}

#[cfg(test)]
mod tests {
    use super::super::proto::{KeyValue, PutResponse, RangeResponse, ResponseHeader, ResponseOp};
    use super::*;

    fn range(kvs: &[i64]) -> ResponseOp {
        ResponseOp {
            response: Some(Response::Range(RangeResponse {
                kvs: kvs
                    .iter()
                    .map(|&create_revision| KeyValue {
                        create_revision,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })),
        }
    }

    fn response(succeeded: bool, revision: i64, responses: Vec<ResponseOp>) -> TxnResponse {
        TxnResponse {
            header: Some(ResponseHeader {
                revision,
                ..Default::default()
            }),
            succeeded,
            responses,
        }
    }

    #[test]
    fn keys_follow_concurrency_mutex() {
        let m = Mutex::new("bench/7", 0x2a);
        assert_eq!(m.key, b"bench/7/2a");
        assert_eq!(m.unlock_request().key, b"bench/7/2a");
        let txn = m.lock_request();
        assert_eq!(txn.compare[0].key, b"bench/7/2a");
        let Some(Request::Range(owner)) = &txn.success[1].request else {
            panic!("{txn:?}");
        };
        assert_eq!(
            (&owner.key[..], &owner.range_end[..]),
            (&b"bench/7/"[..], &b"bench/70"[..])
        );
        assert_eq!(txn.failure[1], txn.success[1]);
        let Some(Request::Put(put)) = &txn.success[0].request else {
            panic!("{txn:?}");
        };
        assert_eq!(put.lease, 0x2a);
    }

    #[test]
    fn prefix_end_matches_clientv3() {
        assert_eq!(prefix_end(b"a/"), b"a0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
    }

    #[test]
    fn locked_when_own_key_is_the_oldest() {
        let m = Mutex::new("p", 5);
        let put = ResponseOp {
            response: Some(Response::Put(PutResponse::default())),
        };
        // Created now (revision 9) and the only key: held.
        assert_eq!(
            m.locked(&response(true, 9, vec![put.clone(), range(&[9])])),
            Ok(9)
        );
        // Already existed from revision 4 (an earlier release failed): held
        // again under the old revision, as Mutex.Lock does.
        assert_eq!(
            m.locked(&response(false, 9, vec![range(&[4]), range(&[4])])),
            Ok(4)
        );
        // An older key owns it.
        assert_eq!(
            m.locked(&response(true, 9, vec![put.clone(), range(&[3])])),
            Err(NotLocked::OwnedByOther)
        );
        // Not what etcd sends.
        assert_eq!(
            m.locked(&response(false, 9, vec![range(&[]), range(&[])])),
            Err(NotLocked::Malformed)
        );
        assert_eq!(
            m.locked(&response(true, 9, vec![put])),
            Err(NotLocked::Malformed)
        );
    }
}
