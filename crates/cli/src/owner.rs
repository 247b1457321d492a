//! Who is asking: the `OwnerInfo` sent with every lease grant (owner name,
//! host, pid, process start time, labels), so `ls` and `get` can tell an
//! operator which process holds a lock and whether it is still alive.

use leasehold_proto::v1::OwnerInfo;

/// Builds the owner of a lease this process grants. `owner` defaults to
/// `$USER@host`, or `leasehold-cli` if neither is known.
pub fn owner_info(owner: Option<String>, labels: Vec<(String, String)>) -> OwnerInfo {
    let host = hostname();
    let owner = owner.unwrap_or_else(|| match (std::env::var("USER").ok(), host.is_empty()) {
        (Some(user), false) if !user.is_empty() => format!("{user}@{host}"),
        _ => "leasehold-cli".to_owned(),
    });
    OwnerInfo {
        owner,
        host,
        pid: std::process::id(),
        process_start_unix_ms: process_start_unix_ms().unwrap_or(0),
        labels: labels.into_iter().collect(),
    }
}

/// Parses a `--label` / `--metadata` value `KEY=VALUE`.
pub fn parse_key_value(raw: &str) -> Result<(String, String), String> {
    match raw.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{raw:?} is not KEY=VALUE")),
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
}

/// The kernel's USER_HZ: /proc reports times in these ticks, and it is 100
/// on every Linux architecture we build for.
const CLOCK_TICKS_PER_SEC: u64 = 100;

/// This process's start time, Unix ms: boot time (`btime` in /proc/stat) plus
/// the start time in ticks since boot (field 22 of /proc/self/stat). Display
/// only: with the pid it identifies the process across pid reuse.
fn process_start_unix_ms() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 2 (comm) may contain spaces and parentheses: fields after the
    // last ')' start at field 3.
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let start_ticks: u64 = after_comm.split_whitespace().nth(22 - 3)?.parse().ok()?;
    let boot_secs: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(boot_secs * 1_000 + start_ticks * 1_000 / CLOCK_TICKS_PER_SEC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_identifies_this_process() {
        let o = owner_info(Some("me".into()), vec![("k".into(), "v".into())]);
        assert_eq!(o.owner, "me");
        assert_eq!(o.pid, std::process::id());
        assert_eq!(o.labels.get("k").map(String::as_str), Some("v"));
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let start = o.process_start_unix_ms;
        assert!(
            start <= now_ms + 1_000 && start + 3_600_000 > now_ms,
            "{start} vs {now_ms}"
        );
    }

    #[test]
    fn key_values_need_a_key_and_an_equals_sign() {
        assert_eq!(parse_key_value("a=b=c"), Ok(("a".into(), "b=c".into())));
        assert!(parse_key_value("=x").is_err());
        assert!(parse_key_value("x").is_err());
    }
}
