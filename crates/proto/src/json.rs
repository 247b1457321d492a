//! Wire messages as JSON, for the views that show them so (the CLI's
//! `--json` output, the live page's HTTP API): the field names of the
//! protos, written once so every JSON view of an event or an owner agrees.
//! Objects come out with their keys sorted (`serde_json`'s map), so the
//! output is stable.

use crate::v1::{Event, LeaderChange, OwnerInfo};
use serde_json::{json, Value};

/// An event as JSON: every wire field, `kind` by its stable name.
pub fn event_json(event: &Event) -> Value {
    json!({
        "kind": event.kind,
        "lock": event.lock,
        "lease": event.lease,
        "owner": event.owner,
        "token": event.token,
        "revision": event.revision,
        "at_unix_ms": event.at_unix_ms,
        "detail": event.detail,
        "key": event.key,
        "highest_token": event.highest_token,
        "highest_lock": event.highest_lock,
        "value": event.value,
    })
}

/// An election's leader after a change, as JSON: `leader` is `null` when
/// nobody leads.
pub fn leader_change_json(change: &LeaderChange) -> Value {
    let leader = change.leader.as_ref().map(|leader| {
        json!({
            "lease": leader.lease,
            "token": leader.token,
            "owner": leader.owner,
            "value": leader.value,
        })
    });
    json!({ "leader": leader, "revision": change.revision })
}

/// A lease's owner as JSON.
pub fn owner_json(owner: &OwnerInfo) -> Value {
    json!({
        "owner": owner.owner,
        "host": owner.host,
        "pid": owner.pid,
        "process_start_unix_ms": owner.process_start_unix_ms,
        "labels": owner.labels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_s_labels_come_out_sorted() {
        let owner = OwnerInfo {
            owner: "worker".into(),
            labels: [("zone", "b"), ("app", "a")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into_iter()
                .collect(),
            ..OwnerInfo::default()
        };
        let text = owner_json(&owner).to_string();
        assert!(
            text.find("\"app\"").unwrap() < text.find("\"zone\"").unwrap(),
            "{text}"
        );
    }
}
