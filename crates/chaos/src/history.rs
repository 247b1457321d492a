//! A recorded history: every lease and every hold a workload had, with the
//! times (ms on the recorder's one monotonic clock) that bound when each
//! operation took effect: an operation took effect at some instant between
//! its invoke and its complete. Every record is serde: a holder process
//! sends its history to the run as JSON (`holder/`).

use serde::{Deserialize, Deserializer, Serialize};

/// One lease, as its client saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The lease id.
    pub id: u64,
    /// Its ttl, ms.
    pub ttl_ms: u64,
    /// When the grant was sent (the server started counting after this).
    pub granted_invoked_ms: u64,
    /// Send times of the keep-alives the server acknowledged.
    pub renewals_sent_ms: Vec<u64>,
    /// When its revoke was sent, if it was.
    pub revoke_invoked_ms: Option<u64>,
    /// When the last acknowledgement (of the grant or a renewal) came back.
    pub last_ack_ms: u64,
    /// When its client stopped renewing it while it still held locks (a
    /// holder that died or stalled), if it did.
    pub abandoned_ms: Option<u64>,
}

impl Lease {
    /// The earliest instant the server could have ended the lease by
    /// expiry: the last acknowledged renewal (or the grant) was sent at
    /// `t`, and the server counts the ttl from no earlier than `t`, on a
    /// clock running at most `rate_max` times as fast as the recorder's.
    /// A revoke ends it at its invoke at the earliest.
    pub fn earliest_end_ms(&self, rate_max: f64) -> u64 {
        let renewed = self
            .renewals_sent_ms
            .iter()
            .copied()
            .max()
            .unwrap_or(self.granted_invoked_ms)
            .max(self.granted_invoked_ms);
        let expiry = renewed + (self.ttl_ms as f64 / rate_max).floor() as u64;
        match self.revoke_invoked_ms {
            Some(revoke) => expiry.min(revoke),
            None => expiry,
        }
    }
}

/// One acknowledged grant of a lock, as its client saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// The lock.
    pub lock: String,
    /// The fencing token granted.
    pub token: u64,
    /// The lease that holds it.
    pub lease: u64,
    /// When the acquire was sent.
    pub acquire_invoked_ms: u64,
    /// When its grant came back.
    pub acquire_completed_ms: u64,
    /// When its release was sent, if it was.
    pub release_invoked_ms: Option<u64>,
    /// When its release was acknowledged, if it was.
    pub release_completed_ms: Option<u64>,
}

/// One fenced put to the built-in store whose answer came back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Put {
    /// The key written.
    pub key: String,
    /// The token presented.
    pub token: u64,
    /// The value written.
    pub value: String,
    /// When it was sent.
    pub invoked_ms: u64,
    /// When its answer came back.
    pub completed_ms: u64,
    /// Accepted (`true`) or refused as stale (`false`).
    pub accepted: bool,
}

/// One read of a fenced key whose answer came back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Read {
    /// The key read.
    pub key: String,
    /// When it was sent.
    pub invoked_ms: u64,
    /// When its answer came back.
    pub completed_ms: u64,
    /// The token and value it saw (`None`: the key was absent).
    pub observed: Option<(u64, String)>,
}

/// An acquire whose outcome never came back (a timeout, a lost
/// connection): it may have been granted, under a token nobody saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The lock.
    pub lock: String,
    /// The lease it was for.
    pub lease: u64,
    /// When it was sent.
    pub invoked_ms: u64,
}

/// One view of a lock's holder (`get`, or one lock of an `ls`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockRead {
    /// The lock.
    pub lock: String,
    /// When the call was sent.
    pub invoked_ms: u64,
    /// When its answer came back.
    pub completed_ms: u64,
    /// The holder's token it saw (`None`: free).
    pub holder: Option<u64>,
}

/// A write sent straight to a node cut off from the majority, while it
/// was cut off: it must not succeed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// The node it was sent to.
    pub node: u64,
    /// What it asked (`grant`, `renew`, `acquire`).
    pub op: String,
    /// When it was sent.
    pub invoked_ms: u64,
    /// When its answer came back.
    pub completed_ms: u64,
    /// It succeeded.
    pub ok: bool,
    /// When the node was cut off.
    pub cut_ms: u64,
    /// When the partition was healed.
    pub healed_ms: u64,
}

/// The leases the cluster listed at one moment (every lease in it is the
/// workload's, so each should be one the workload was granted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseListing {
    /// When the listing was sent.
    pub invoked_ms: u64,
    /// The lease ids listed.
    pub ids: Vec<u64>,
}

/// One client operation as it was sent and answered: the flat log of a
/// run (written out as `history.jsonl` by `--keep-dir`); the rules read
/// the typed records above, which the same calls fill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRecord {
    /// The operation: `grant`, `renew`, `revoke`, `acquire`, `release`,
    /// `put`, `read`, `get`, `list`, `list-leases`, or a probe's
    /// `probe-grant`/`probe-renew` (one of [`OP_NAMES`]).
    #[serde(deserialize_with = "op_name")]
    pub op: OpName,
    /// When it was sent.
    pub invoked_ms: u64,
    /// When its answer (or its last failure) came back.
    pub completed_ms: u64,
    /// The node that answered, if one did.
    pub node: Option<u64>,
    /// Its arguments, `name=value` separated by spaces.
    pub args: String,
    /// `ok ...` with what came back, `refused: ...` (a definite no) or
    /// `unknown: ...` (it may or may not have taken effect).
    pub outcome: String,
}

/// What a workload recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// Every operation, in the order they completed.
    pub ops: Vec<OpRecord>,
    /// Every lease granted.
    pub leases: Vec<Lease>,
    /// Every acknowledged grant.
    pub holds: Vec<Hold>,
    /// Every fenced put answered.
    pub puts: Vec<Put>,
    /// Every fenced read answered.
    pub reads: Vec<Read>,
    /// Acquires without an answer.
    pub pending_acquires: Vec<Pending>,
    /// Lease grants without an answer (send times).
    pub pending_grants_ms: Vec<u64>,
    /// Fenced puts without an answer (`accepted` is meaningless): a read
    /// may see them.
    pub unknown_puts: Vec<Put>,
    /// Views of lock holders.
    pub lock_reads: Vec<LockRead>,
    /// Writes sent to a cut-off node.
    pub probes: Vec<Probe>,
    /// Lease listings.
    pub lease_listings: Vec<LeaseListing>,
}

/// An operation's name. An alias, not `&'static str` written out: serde
/// would borrow a field of that type from the input, which a name read
/// from a holder's line cannot be; [`op_name`] maps it to one of
/// [`OP_NAMES`] instead.
pub type OpName = &'static str;

/// Every [`OpRecord::op`]: a record read back (from a holder process)
/// names one of these.
pub const OP_NAMES: [&str; 12] = [
    "grant",
    "renew",
    "revoke",
    "acquire",
    "release",
    "put",
    "read",
    "get",
    "list",
    "list-leases",
    "probe-grant",
    "probe-renew",
];

/// Reads an [`OpRecord::op`] back as the name it was written from.
fn op_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<&'static str, D::Error> {
    let name = String::deserialize(deserializer)?;
    OP_NAMES
        .iter()
        .find(|known| **known == name)
        .copied()
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown operation {name:?}: add it to history::OP_NAMES"
            ))
        })
}
