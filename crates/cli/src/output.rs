//! Output helpers: JSON documents (exactly one per `--json` invocation, on
//! stdout) and aligned human tables. Commands describe *what* to print; the
//! shape of shared objects (a lock, an owner) is defined once here so `get`
//! and `ls` agree.

use crate::duration;
use leasehold_proto::v1::{LockInfo, OwnerInfo};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Prints one JSON document on stdout.
pub fn print_json(value: &Value) {
    println!("{value}");
}

/// An owner as JSON (labels sorted, for stable output).
pub fn owner_json(owner: Option<&OwnerInfo>) -> Value {
    let Some(o) = owner else { return Value::Null };
    let labels: BTreeMap<&String, &String> = o.labels.iter().collect();
    json!({
        "owner": o.owner,
        "host": o.host,
        "pid": o.pid,
        "process_start_unix_ms": o.process_start_unix_ms,
        "labels": labels,
    })
}

/// A lock as JSON. Flat fields (`token`, `lease`, `owner`, ...) are null
/// while the lock is free; `waiters` is the queue length and
/// `waiter_leases` the queue in order.
pub fn lock_json(lock: &LockInfo) -> Value {
    let h = lock.holder.as_ref();
    let metadata: Option<BTreeMap<&String, &String>> = h.map(|h| h.metadata.iter().collect());
    json!({
        "lock": lock.name,
        "held": h.is_some(),
        "token": h.map(|h| h.token),
        "lease": h.map(|h| h.lease),
        "owner": h.and_then(|h| h.owner.as_ref()).map(|o| o.owner.clone()),
        "owner_info": owner_json(h.and_then(|h| h.owner.as_ref())),
        "lease_ttl_ms": h.map(|h| h.lease_ttl_ms),
        "lease_remaining_ms": h.map(|h| h.lease_remaining_ms),
        "acquired_unix_ms": h.map(|h| h.acquired_unix_ms),
        "fenced": h.map(|h| h.fenced).unwrap_or(false),
        "max_hold_ms": h.map(|h| h.max_hold_ms),
        "metadata": metadata,
        "waiters": lock.waiters.len(),
        "waiter_leases": lock.waiters.iter().map(|w| w.lease).collect::<Vec<_>>(),
        "lock_delay_remaining_ms": lock.lock_delay_remaining_ms,
    })
}

/// The header row and one row per lock of the `ls` table.
pub fn lock_rows(locks: &[LockInfo]) -> Vec<Vec<String>> {
    let mut rows = vec![["LOCK", "TOKEN", "LEASE", "OWNER", "REMAINING", "WAITERS"]
        .map(String::from)
        .to_vec()];
    for lock in locks {
        let h = lock.holder.as_ref();
        let dash = || "-".to_owned();
        rows.push(vec![
            lock.name.clone(),
            h.map(|h| h.token.to_string()).unwrap_or_else(dash),
            h.map(|h| h.lease.to_string()).unwrap_or_else(dash),
            h.and_then(|h| h.owner.as_ref())
                .map(owner_human)
                .unwrap_or_else(dash),
            match h {
                Some(h) => duration::approx(h.lease_remaining_ms),
                None if lock.lock_delay_remaining_ms > 0 => {
                    format!("delay {}", duration::approx(lock.lock_delay_remaining_ms))
                }
                None => dash(),
            },
            lock.waiters.len().to_string(),
        ]);
    }
    rows
}

/// A lock's waiters, one line each after a count line, indented by `indent`
/// (the count line by `indent` minus two spaces).
pub fn waiters_human(waiters: &[leasehold_proto::v1::Waiter], indent: &str) -> String {
    let head = indent.strip_prefix("  ").unwrap_or("");
    let mut out = format!("{head}waiters: {}\n", waiters.len());
    for (i, w) in waiters.iter().enumerate() {
        let owner = w
            .owner
            .as_ref()
            .map(owner_human)
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{indent}{}. lease {} owner {owner}\n",
            i + 1,
            w.lease
        ));
    }
    out
}

/// `owner@host pid N` in one word-ish field.
pub fn owner_human(o: &OwnerInfo) -> String {
    let mut text = o.owner.clone();
    if !o.host.is_empty() && !o.owner.contains('@') {
        text.push('@');
        text.push_str(&o.host);
    }
    if o.pid != 0 {
        text.push_str(&format!(" pid {}", o.pid));
    }
    text
}

/// Renders rows as a table with columns padded to their widest cell.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = widths[c] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let rows = vec![
            vec!["A".to_owned(), "BB".to_owned(), "C".to_owned()],
            vec!["long".to_owned(), "x".to_owned(), "y".to_owned()],
        ];
        assert_eq!(table(&rows), "A     BB  C\nlong  x   y\n");
    }

    #[test]
    fn free_lock_has_null_holder_fields() {
        let v = lock_json(&LockInfo {
            name: "a".into(),
            ..Default::default()
        });
        assert_eq!(v["lock"], "a");
        assert!(v["token"].is_null());
        assert_eq!(v["waiters"], 0);
        assert_eq!(v["fenced"], false);
    }
}
