//! The few etcd v3 messages the benchmark sends and reads, written by hand
//! so that no etcd crate (and no second tonic) enters the build.
//!
//! They mirror etcd 3.4.23 (Debian 12's `golang-etcd-server-dev`):
//! `etcdserver/etcdserverpb/rpc.proto` (package `etcdserverpb`) and
//! `mvcc/mvccpb/kv.proto` (package `mvccpb`). Field numbers and types are
//! copied from those files; fields the benchmark never sets or reads are left
//! out (protobuf decoding skips them), and so is `RequestOp.request_txn`
//! (nested transactions). The wire format is the contract: etcd 3.5 and
//! later keep these numbers. The gRPC paths are in `rpc`.

/// `etcdserverpb.ResponseHeader`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseHeader {
    #[prost(uint64, tag = "1")]
    pub cluster_id: u64,
    /// The member that answered (compared with `StatusResponse.leader`).
    #[prost(uint64, tag = "2")]
    pub member_id: u64,
    /// The store revision when the request was applied; a created key's
    /// create_revision is the revision of its Txn.
    #[prost(int64, tag = "3")]
    pub revision: i64,
    #[prost(uint64, tag = "4")]
    pub raft_term: u64,
}

/// `mvccpb.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// The revision that created the key: the lock's fencing token in
    /// `concurrency.Mutex`.
    #[prost(int64, tag = "2")]
    pub create_revision: i64,
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    #[prost(int64, tag = "4")]
    pub version: i64,
    #[prost(bytes = "vec", tag = "5")]
    pub value: Vec<u8>,
    #[prost(int64, tag = "6")]
    pub lease: i64,
}

/// `etcdserverpb.RangeRequest.SortOrder`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum SortOrder {
    None = 0,
    Ascend = 1,
    Descend = 2,
}

/// `etcdserverpb.RangeRequest.SortTarget`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum SortTarget {
    Key = 0,
    Version = 1,
    Create = 2,
    Mod = 3,
    Value = 4,
}

/// `etcdserverpb.RangeRequest` (fields 1–3, 5, 6 of 13).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    /// Empty: only `key`; else the range `[key, range_end)`.
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    /// 0: no limit.
    #[prost(int64, tag = "3")]
    pub limit: i64,
    #[prost(enumeration = "SortOrder", tag = "5")]
    pub sort_order: i32,
    #[prost(enumeration = "SortTarget", tag = "6")]
    pub sort_target: i32,
}

/// `etcdserverpb.RangeResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(message, repeated, tag = "2")]
    pub kvs: Vec<KeyValue>,
    #[prost(bool, tag = "3")]
    pub more: bool,
    #[prost(int64, tag = "4")]
    pub count: i64,
}

/// `etcdserverpb.PutRequest` (fields 1–3 of 6).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
    /// The lease the key is attached to (deleted when it expires); 0: none.
    #[prost(int64, tag = "3")]
    pub lease: i64,
}

/// `etcdserverpb.PutResponse` (without `prev_kv`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PutResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// `etcdserverpb.DeleteRangeRequest` (without `prev_kv`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
}

/// `etcdserverpb.DeleteRangeResponse` (without `prev_kvs`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub deleted: i64,
}

/// `etcdserverpb.RequestOp`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestOp {
    #[prost(oneof = "Request", tags = "1, 2, 3")]
    pub request: Option<Request>,
}

/// `etcdserverpb.RequestOp.request` (without `request_txn = 4`).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Request {
    #[prost(message, tag = "1")]
    Range(RangeRequest),
    #[prost(message, tag = "2")]
    Put(PutRequest),
    #[prost(message, tag = "3")]
    DeleteRange(DeleteRangeRequest),
}

/// `etcdserverpb.ResponseOp`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseOp {
    #[prost(oneof = "Response", tags = "1, 2, 3")]
    pub response: Option<Response>,
}

/// `etcdserverpb.ResponseOp.response` (without `response_txn = 4`).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Response {
    #[prost(message, tag = "1")]
    Range(RangeResponse),
    #[prost(message, tag = "2")]
    Put(PutResponse),
    #[prost(message, tag = "3")]
    DeleteRange(DeleteRangeResponse),
}

/// `etcdserverpb.Compare.CompareResult`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CompareResult {
    Equal = 0,
    Greater = 1,
    Less = 2,
    NotEqual = 3,
}

/// `etcdserverpb.Compare.CompareTarget`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CompareTarget {
    Version = 0,
    Create = 1,
    Mod = 2,
    Value = 3,
    Lease = 4,
}

/// `etcdserverpb.Compare` (without `range_end = 64`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Compare {
    #[prost(enumeration = "CompareResult", tag = "1")]
    pub result: i32,
    #[prost(enumeration = "CompareTarget", tag = "2")]
    pub target: i32,
    #[prost(bytes = "vec", tag = "3")]
    pub key: Vec<u8>,
    /// A oneof, so a 0 is still sent (as etcd's Go client sends it).
    #[prost(oneof = "TargetUnion", tags = "4, 5, 6, 7, 8")]
    pub target_union: Option<TargetUnion>,
}

/// `etcdserverpb.Compare.target_union`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum TargetUnion {
    #[prost(int64, tag = "4")]
    Version(i64),
    #[prost(int64, tag = "5")]
    CreateRevision(i64),
    #[prost(int64, tag = "6")]
    ModRevision(i64),
    #[prost(bytes = "vec", tag = "7")]
    Value(Vec<u8>),
    #[prost(int64, tag = "8")]
    Lease(i64),
}

/// `etcdserverpb.TxnRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnRequest {
    #[prost(message, repeated, tag = "1")]
    pub compare: Vec<Compare>,
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
    #[prost(message, repeated, tag = "3")]
    pub failure: Vec<RequestOp>,
}

/// `etcdserverpb.TxnResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(bool, tag = "2")]
    pub succeeded: bool,
    #[prost(message, repeated, tag = "3")]
    pub responses: Vec<ResponseOp>,
}

/// `etcdserverpb.LeaseGrantRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseGrantRequest {
    /// Seconds.
    #[prost(int64, tag = "1")]
    pub ttl: i64,
    /// 0: the server picks the id.
    #[prost(int64, tag = "2")]
    pub id: i64,
}

/// `etcdserverpb.LeaseGrantResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseGrantResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub id: i64,
    #[prost(int64, tag = "3")]
    pub ttl: i64,
    #[prost(string, tag = "4")]
    pub error: String,
}

/// `etcdserverpb.LeaseRevokeRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseRevokeRequest {
    #[prost(int64, tag = "1")]
    pub id: i64,
}

/// `etcdserverpb.LeaseRevokeResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseRevokeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// `etcdserverpb.LeaseKeepAliveRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseKeepAliveRequest {
    #[prost(int64, tag = "1")]
    pub id: i64,
}

/// `etcdserverpb.LeaseKeepAliveResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseKeepAliveResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub id: i64,
    /// The renewed ttl in seconds; 0 when the lease does not exist.
    #[prost(int64, tag = "3")]
    pub ttl: i64,
}

/// `etcdserverpb.StatusRequest` (Maintenance.Status).
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusRequest {}

/// `etcdserverpb.StatusResponse` (fields 1, 2, 4 of 10).
#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    /// The member's etcd version, e.g. `3.4.23`.
    #[prost(string, tag = "2")]
    pub version: String,
    /// The member id of the leader, as this member sees it.
    #[prost(uint64, tag = "4")]
    pub leader: u64,
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    /// The acquire Txn of `concurrency.Mutex` for key `p/5`, lease 5, prefix
    /// `p/`, with every byte derived from rpc.proto's field numbers.
    #[test]
    fn txn_request_encodes_with_rpc_proto_field_numbers() {
        let owner = RequestOp {
            request: Some(Request::Range(RangeRequest {
                key: b"p/".to_vec(),
                range_end: b"p0".to_vec(),
                limit: 1,
                sort_order: SortOrder::Ascend as i32,
                sort_target: SortTarget::Create as i32,
            })),
        };
        let txn = TxnRequest {
            compare: vec![Compare {
                result: CompareResult::Equal as i32,
                target: CompareTarget::Create as i32,
                key: b"p/5".to_vec(),
                target_union: Some(TargetUnion::CreateRevision(0)),
            }],
            success: vec![
                RequestOp {
                    request: Some(Request::Put(PutRequest {
                        key: b"p/5".to_vec(),
                        value: Vec::new(),
                        lease: 5,
                    })),
                },
                owner.clone(),
            ],
            failure: vec![
                RequestOp {
                    request: Some(Request::Range(RangeRequest {
                        key: b"p/5".to_vec(),
                        ..Default::default()
                    })),
                },
                owner,
            ],
        };
        // RangeRequest{key 1: "p/", range_end 2: "p0", limit 3: 1,
        // sort_order 5: ASCEND, sort_target 6: CREATE}.
        let owner_range = [
            0x0a, 2, b'p', b'/', 0x12, 2, b'p', b'0', 0x18, 1, 0x28, 1, 0x30, 2,
        ];
        let mut want = vec![
            // compare 1 (9 bytes): result EQUAL (0, omitted), target 2:
            // CREATE, key 3: "p/5", create_revision 5: 0 (oneof: sent).
            0x0a, 9, 0x10, 1, 0x1a, 3, b'p', b'/', b'5', 0x28, 0,
            // success 2: RequestOp{request_put 2: {key 1, lease 3: 5}}.
            0x12, 9, 0x12, 7, 0x0a, 3, b'p', b'/', b'5', 0x18, 5,
            // success 2: RequestOp{request_range 1: owner range}.
            0x12, 16, 0x0a, 14,
        ];
        want.extend_from_slice(&owner_range);
        // failure 3: RequestOp{request_range 1: {key 1: "p/5"}}.
        want.extend_from_slice(&[0x1a, 7, 0x0a, 5, 0x0a, 3, b'p', b'/', b'5']);
        // failure 3: RequestOp{request_range 1: owner range}.
        want.extend_from_slice(&[0x1a, 16, 0x0a, 14]);
        want.extend_from_slice(&owner_range);
        assert_eq!(txn.encode_to_vec(), want);
        assert_eq!(TxnRequest::decode(&want[..]).unwrap(), txn);
    }

    #[test]
    fn lease_and_delete_requests_encode_with_rpc_proto_field_numbers() {
        let grant = LeaseGrantRequest { ttl: 60, id: 0 };
        assert_eq!(grant.encode_to_vec(), [0x08, 60]);
        let renew = LeaseKeepAliveRequest { id: 0x1234 };
        assert_eq!(renew.encode_to_vec(), [0x08, 0xb4, 0x24]);
        assert_eq!(
            LeaseRevokeRequest { id: 0x1234 }.encode_to_vec(),
            renew.encode_to_vec()
        );
        let delete = DeleteRangeRequest {
            key: b"k".to_vec(),
            range_end: Vec::new(),
        };
        assert_eq!(delete.encode_to_vec(), [0x0a, 1, b'k']);
    }

    /// A TxnResponse as etcd sends it for a successful Mutex acquire:
    /// header{member_id 2: 7, revision 3: 42}, succeeded 2: true, then the
    /// put's and the owner range's responses (field 3).
    #[test]
    fn txn_response_decodes_with_rpc_proto_field_numbers() {
        let bytes = [
            0x0a, 4, 0x10, 7, 0x18, 42, // header
            0x10, 1, // succeeded
            0x1a, 2, 0x12, 0, // ResponseOp{response_put 2: {}}
            0x1a, 11, 0x0a, 9, // ResponseOp{response_range 1: ...}
            0x12, 7, // kvs 2: KeyValue{
            0x0a, 1, b'k', // key 1
            0x10, 42, // create_revision 2
            0x30, 5, // lease 6 }
        ];
        let r = TxnResponse::decode(&bytes[..]).unwrap();
        let header = r.header.unwrap();
        assert_eq!((header.member_id, header.revision), (7, 42));
        assert!(r.succeeded);
        assert_eq!(
            r.responses[0].response,
            Some(Response::Put(PutResponse { header: None }))
        );
        let Some(Response::Range(range)) = &r.responses[1].response else {
            panic!("{:?}", r.responses[1]);
        };
        let kv = &range.kvs[0];
        assert_eq!(
            (&kv.key[..], kv.create_revision, kv.lease),
            (&b"k"[..], 42, 5)
        );
    }
}
