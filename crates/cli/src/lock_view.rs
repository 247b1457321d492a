//! One lock, as an operator reads it: the holder (lease, token, fenced),
//! its owner (name, host, pid, process start, and whether that process
//! still runs here), when it was acquired and for how long it has been
//! held, its lease (time left, renewals, last renewal), lock delay and max
//! hold, the usual hold time under its prefix, and the queue. Defined once
//! so `get`, `ls`, `force-release` and `diagnose` show the same facts. A
//! semaphore or read-write lock shows the same facts for each of its
//! grants, with the permits each holds and each waiter asks for.
//!
//! Times relative to "now" use the server's wall time from the reply header
//! (`now_unix_ms`), so they do not depend on this host's clock.

use leasehold_client::owner_process;
use leasehold_client::show::{self, approx, human, local_time, ms_between};
use leasehold_client::wire::{
    owner_json, Holder, LockInfo, LockKind, OwnerInfo, ResponseHeader, Waiter,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What a node removed from its cluster means for what it answers.
pub const REMOVED_NOTE: &str = "this node was removed from the cluster: it takes no writes and \
     its state is frozen at its removal; ask one of the cluster's members";

/// Warns on stderr when the answering node was removed from its cluster
/// (a stale read from it is frozen at its removal).
pub fn warn_if_removed(header: Option<&ResponseHeader>) {
    if header.is_some_and(|h| h.removed) {
        eprintln!("warning: {REMOVED_NOTE}");
    }
}

/// A lock as JSON. Flat fields (`token`, `lease`, `owner`, ...) are null
/// while the lock is free; `waiters` is the queue length, `waiter_leases`
/// the queue in order and `next_waiter_owner` the head's owner.
pub fn lock_json(lock: &LockInfo) -> Value {
    let h = lock.holder.as_ref();
    let owner = h.and_then(|h| h.owner.as_ref());
    let metadata: Option<BTreeMap<&String, &String>> = h.map(|h| h.metadata.iter().collect());
    let head_owner = lock.waiters.first().and_then(|w| w.owner.as_ref());
    let grants: Vec<Value> = lock.holders.iter().map(grant_json).collect();
    json!({
        "lock": lock.name,
        "kind": kind_name(lock),
        "permits": lock.permits,
        "holders": grants,
        "held": h.is_some() || !lock.holders.is_empty(),
        "token": h.map(|h| h.token),
        "lease": h.map(|h| h.lease),
        "owner": owner.map(|o| o.owner.clone()),
        "owner_info": owner.map_or(Value::Null, owner_json),
        "owner_process": owner.map(|o| owner_process(o).as_str()),
        "lease_ttl_ms": h.map(|h| h.lease_ttl_ms),
        "lease_remaining_ms": h.map(|h| h.lease_remaining_ms),
        "acquired_unix_ms": h.map(|h| h.acquired_unix_ms),
        "held_ms": h.map(|h| h.held_ms),
        "renewals": h.map(|h| h.renewals),
        "lease_renewed_unix_ms": h.map(|h| h.lease_renewed_unix_ms),
        "fenced": h.map(|h| h.fenced).unwrap_or(false),
        "lock_delay_ms": h.map(|h| h.lock_delay_ms),
        "max_hold_ms": h.map(|h| h.max_hold_ms),
        "metadata": metadata,
        "waiters": lock.waiters.len(),
        "waiter_leases": lock.waiters.iter().map(|w| w.lease).collect::<Vec<_>>(),
        "waiter_permits": lock.waiters.iter().map(|w| w.permits).collect::<Vec<_>>(),
        "next_waiter_owner": head_owner.map(|o| o.owner.clone()),
        "lock_delay_remaining_ms": lock.lock_delay_remaining_ms,
        "prefix_hold_p99_ms": (lock.prefix_holds > 0).then_some(lock.prefix_hold_p99_ms),
        "prefix_holds": lock.prefix_holds,
    })
}

/// `lock`, `semaphore` or `read-write`.
fn kind_name(lock: &LockInfo) -> &'static str {
    match lock.kind() {
        LockKind::Lock => "lock",
        LockKind::Semaphore => "semaphore",
        LockKind::ReadWrite => "read-write",
    }
}

/// One grant of a semaphore or read-write lock as JSON.
fn grant_json(h: &Holder) -> Value {
    let owner = h.owner.as_ref();
    json!({
        "lease": h.lease,
        "token": h.token,
        "permits": h.permits,
        "owner": owner.map(|o| o.owner.clone()),
        "owner_process": owner.map(|o| owner_process(o).as_str()),
        "acquired_unix_ms": h.acquired_unix_ms,
        "held_ms": h.held_ms,
        "lease_remaining_ms": h.lease_remaining_ms,
        "renewals": h.renewals,
    })
}

/// How much of a semaphore or read-write lock is held, for a heading:
/// `2 of 3 permits held`, `2 readers`, `its writer`, `nobody`.
fn pool_summary(lock: &LockInfo) -> String {
    let held: u32 = lock.holders.iter().map(|h| h.permits).sum();
    match lock.kind() {
        LockKind::Semaphore => format!("{held} of {} permits held", lock.permits),
        _ if lock.holders.is_empty() => "held by nobody".into(),
        _ if held == lock.permits => "held by its writer".into(),
        _ => format!(
            "held by {}",
            show::count(lock.holders.len() as u64, "reader", "readers")
        ),
    }
}

/// The header row and one row per lock of the `ls` table.
pub fn lock_rows(locks: &[LockInfo], now_unix_ms: i64) -> Vec<Vec<String>> {
    let header = [
        "LOCK",
        "TOKEN",
        "LEASE",
        "OWNER",
        "HELD FOR",
        "RENEWALS",
        "LAST RENEWAL",
        "REMAINING",
        "WAITERS",
    ];
    let mut rows = vec![header.map(String::from).to_vec()];
    for lock in locks {
        // A semaphore's or read-write lock's row shows every grant's token
        // and lease, and its oldest grant's owner and times.
        let h = lock.holder.as_ref().or(lock.holders.first());
        let dash = || "-".to_owned();
        let all = |field: fn(&Holder) -> u64| {
            let values: Vec<String> = lock.holders.iter().map(|h| field(h).to_string()).collect();
            (!values.is_empty()).then(|| values.join(","))
        };
        let name = match lock.kind() {
            LockKind::Lock => lock.name.clone(),
            _ => format!(
                "{} ({}, {})",
                lock.name,
                kind_name(lock),
                pool_summary(lock)
            ),
        };
        rows.push(vec![
            name,
            all(|h| h.token)
                .or_else(|| h.map(|h| h.token.to_string()))
                .unwrap_or_else(dash),
            all(|h| h.lease)
                .or_else(|| h.map(|h| h.lease.to_string()))
                .unwrap_or_else(dash),
            h.and_then(|h| h.owner.as_ref())
                .map(show::owner)
                .unwrap_or_else(dash),
            h.map(|h| approx(h.held_ms)).unwrap_or_else(dash),
            h.map(|h| h.renewals.to_string()).unwrap_or_else(dash),
            h.map(|h| ago(h.lease_renewed_unix_ms, now_unix_ms))
                .unwrap_or_else(dash),
            match h {
                Some(h) => approx(h.lease_remaining_ms),
                None if lock.lock_delay_remaining_ms > 0 => {
                    format!("delay {}", approx(lock.lock_delay_remaining_ms))
                }
                None => dash(),
            },
            waiters_short(&lock.waiters),
        ]);
    }
    rows
}

/// `0`, or `2 (next alice@host pid 7)`.
fn waiters_short(waiters: &[Waiter]) -> String {
    match waiters.first().and_then(|w| w.owner.as_ref()) {
        Some(owner) => format!("{} (next {})", waiters.len(), show::owner(owner)),
        None => waiters.len().to_string(),
    }
}

/// `1.2s ago`, or `-` if unknown.
fn ago(at_unix_ms: i64, now_unix_ms: i64) -> String {
    if at_unix_ms == 0 {
        return "-".into();
    }
    format!("{} ago", approx(ms_between(at_unix_ms, now_unix_ms)))
}

/// A lock described over several lines, each indented by `indent`.
pub fn lock_human(lock: &LockInfo, now_unix_ms: i64, indent: &str) -> String {
    if lock.kind() != LockKind::Lock {
        return pool_human(lock, now_unix_ms, indent);
    }
    let mut lines = match &lock.holder {
        Some(h) => holder_lines(h, now_unix_ms),
        None if lock.lock_delay_remaining_ms > 0 => vec![format!(
            "holder: none (lock delay, {} left)",
            approx(lock.lock_delay_remaining_ms)
        )],
        // A free lock that is still listed is kept for the waiter at its
        // head, which waits for several locks at once.
        None => match lock.waiters.first() {
            Some(head) => vec![format!(
                "holder: none (kept for lease {}, which waits for it and other locks at once)",
                head.lease
            )],
            None => vec!["holder: none".to_owned()],
        },
    };
    if lock.prefix_holds > 0 {
        lines.push(format!(
            "usual hold under this prefix: p99 {} over the last {}",
            approx(lock.prefix_hold_p99_ms),
            show::count(lock.prefix_holds.into(), "hold", "holds")
        ));
    }
    let mut out = format!("{indent}lock {}\n", lock.name);
    for line in lines {
        out.push_str(&format!("{indent}  {line}\n"));
    }
    out.push_str(&waiters_human(&lock.waiters, now_unix_ms, indent));
    out
}

/// A semaphore or read-write lock over several lines: what is held, then
/// each grant (lease, token, permits, owner, times), then the queue.
fn pool_human(lock: &LockInfo, now_unix_ms: i64, indent: &str) -> String {
    let kind = match lock.kind() {
        LockKind::Semaphore => "semaphore",
        _ => "read-write lock",
    };
    let mut out = format!("{indent}{kind} {}: {}\n", lock.name, pool_summary(lock));
    for h in &lock.holders {
        let permits = show::count(h.permits.into(), "permit", "permits");
        let mut lines = holder_lines(h, now_unix_ms);
        lines[0] = format!("grant: lease {} token {} ({permits})", h.lease, h.token);
        for line in lines {
            out.push_str(&format!("{indent}  {line}\n"));
        }
    }
    out.push_str(&waiters_human(&lock.waiters, now_unix_ms, indent));
    out
}

/// The holder's lines: lease and token, owner and its process, when it was
/// acquired, its lease, and its lock delay and max hold if set.
fn holder_lines(h: &Holder, now_unix_ms: i64) -> Vec<String> {
    let fenced = if h.fenced {
        "fenced"
    } else {
        "NOT fenced: nothing checks its token"
    };
    let owner = h.owner.clone().unwrap_or_default();
    let mut lines = vec![
        format!("holder: lease {} token {} ({fenced})", h.lease, h.token),
        owner_line(&owner),
        format!(
            "acquired: {}, held for {}",
            local_time(h.acquired_unix_ms),
            approx(h.held_ms)
        ),
        format!(
            "lease: {} left of {}, renewed {}, last renewal {}",
            approx(h.lease_remaining_ms),
            human(h.lease_ttl_ms),
            show::count(h.renewals, "time", "times"),
            ago(h.lease_renewed_unix_ms, now_unix_ms)
        ),
    ];
    if !h.metadata.is_empty() {
        let metadata: BTreeMap<&String, &String> = h.metadata.iter().collect();
        let pairs: Vec<String> = metadata.iter().map(|(k, v)| format!("{k}={v}")).collect();
        lines.push(format!("metadata: {}", pairs.join(", ")));
    }
    if h.lock_delay_ms > 0 || h.max_hold_ms > 0 {
        let or_none = |ms: u64| match ms {
            0 => "none".to_owned(),
            ms => human(ms),
        };
        lines.push(format!(
            "lock delay after expiry: {}, max hold: {}",
            or_none(h.lock_delay_ms),
            or_none(h.max_hold_ms)
        ));
    }
    lines
}

/// `owner: NAME on host HOST pid N started T (process: WORDS)`.
fn owner_line(owner: &OwnerInfo) -> String {
    let or_dash = |text: &str| {
        if text.is_empty() {
            "-".to_owned()
        } else {
            text.to_owned()
        }
    };
    format!(
        "owner: {} on host {} pid {} started {} (process: {})",
        or_dash(&owner.owner),
        or_dash(&owner.host),
        owner.pid,
        local_time(owner.process_start_unix_ms as i64),
        owner_process(owner).describe(owner)
    )
}

/// The queue: a count line, then one line per waiter in order.
fn waiters_human(waiters: &[Waiter], now_unix_ms: i64, indent: &str) -> String {
    let mut out = format!("{indent}  waiters: {}\n", waiters.len());
    for (i, w) in waiters.iter().enumerate() {
        let owner = w
            .owner
            .as_ref()
            .map(show::owner)
            .unwrap_or_else(|| "-".into());
        let asks = match w.permits {
            0 => String::new(),
            n => format!(", asks for {}", show::count(n.into(), "permit", "permits")),
        };
        out.push_str(&format!(
            "{indent}    {}. lease {} owner {owner}, waiting {}{asks}\n",
            i + 1,
            w.lease,
            approx(ms_between(w.since_unix_ms, now_unix_ms)),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_lock_has_null_holder_fields() {
        let v = lock_json(&LockInfo {
            name: "a".into(),
            ..Default::default()
        });
        assert_eq!(v["lock"], "a");
        assert!(v["token"].is_null());
        assert!(v["prefix_hold_p99_ms"].is_null());
        assert_eq!(v["waiters"], 0);
        assert_eq!(v["fenced"], false);
    }

    #[test]
    fn a_semaphore_shows_each_grant_and_what_each_waiter_asks_for() {
        let grant = |lease, token| Holder {
            lease,
            token,
            permits: 1,
            held_ms: 3_000,
            ..Default::default()
        };
        let semaphore = LockInfo {
            name: "db/slots".into(),
            kind: LockKind::Semaphore.into(),
            permits: 3,
            holders: vec![grant(1, 2), grant(3, 4)],
            waiters: vec![Waiter {
                lease: 5,
                permits: 2,
                since_unix_ms: 1_000,
                ..Default::default()
            }],
            ..Default::default()
        };
        let json = lock_json(&semaphore);
        assert_eq!(
            (json["kind"].as_str(), json["permits"].as_u64()),
            (Some("semaphore"), Some(3))
        );
        assert_eq!(json["held"], true);
        assert!(
            json["token"].is_null(),
            "no one holder's token stands for all"
        );
        let tokens: Vec<u64> = json["holders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["token"].as_u64().unwrap())
            .collect();
        assert_eq!(tokens, [2, 4]);
        assert_eq!(json["waiter_permits"], serde_json::json!([2]));
        let text = lock_human(&semaphore, 3_000, "");
        for shown in [
            "semaphore db/slots: 2 of 3 permits held",
            "grant: lease 1 token 2 (1 permit)",
            "grant: lease 3 token 4 (1 permit)",
            "1. lease 5 owner -, waiting 2.0s, asks for 2 permits",
        ] {
            assert!(text.contains(shown), "{shown:?} missing from\n{text}");
        }
        let rows = lock_rows(&[semaphore], 3_000);
        assert_eq!(
            rows[1][..3],
            ["db/slots (semaphore, 2 of 3 permits held)", "2,4", "1,3"]
        );
    }

    #[test]
    fn human_form_shows_every_fact() {
        let lock = LockInfo {
            name: "jobs/a".into(),
            holder: Some(Holder {
                lease: 7,
                token: 9,
                fenced: true,
                held_ms: 12_000,
                renewals: 4,
                lease_ttl_ms: 10_000,
                lease_remaining_ms: 8_000,
                lease_renewed_unix_ms: 1_000,
                acquired_unix_ms: 1,
                lock_delay_ms: 5_000,
                owner: Some(OwnerInfo {
                    owner: "alice".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            waiters: vec![Waiter {
                lease: 8,
                since_unix_ms: 500,
                ..Default::default()
            }],
            prefix_hold_p99_ms: 2_000,
            prefix_holds: 30,
            ..Default::default()
        };
        let text = lock_human(&lock, 3_000, "");
        for shown in [
            "token 9 (fenced)",
            "held for 12.0s",
            "renewed 4 times, last renewal 2.0s ago",
            "lock delay after expiry: 5s, max hold: none",
            "p99 2.0s over the last 30 holds",
            "1. lease 8 owner -, waiting 2.5s",
        ] {
            assert!(text.contains(shown), "{shown:?} missing from\n{text}");
        }
    }
}
