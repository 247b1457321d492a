//! Who is asking: the `OwnerInfo` sent with every lease grant (owner name,
//! host, pid, process start time, labels), so an operator looking at a lock
//! can tell which process holds it and whether that process is still alive
//! (the pid with its start time survives pid reuse).

use leasehold_proto::v1::OwnerInfo;

/// Builds the owner of a lease this process grants: host, pid and process
/// start time filled in. `owner` defaults to `user@host:program`.
pub fn owner_info(owner: Option<String>, labels: Vec<(String, String)>) -> OwnerInfo {
    let host = hostname();
    let owner = owner.unwrap_or_else(|| default_owner(&host));
    OwnerInfo {
        owner,
        host,
        pid: std::process::id(),
        process_start_unix_ms: process_start_unix_ms("self").unwrap_or(0),
        labels: labels.into_iter().collect(),
    }
}

/// Builds the owner of a lease granted on behalf of another process on this
/// host, `pid` (the CLI records the script that invoked it, whose life the
/// token's use follows, not its own short one): as [`owner_info`], with
/// that process's pid and start time. `None` if no such process runs here.
pub fn owner_info_of(
    pid: u32,
    owner: Option<String>,
    labels: Vec<(String, String)>,
) -> Option<OwnerInfo> {
    let process_start_unix_ms = process_start_unix_ms(&pid.to_string())?;
    Some(OwnerInfo {
        pid,
        process_start_unix_ms,
        ..owner_info(owner, labels)
    })
}

/// `user@host:program`, leaving out what is unknown.
fn default_owner(host: &str) -> String {
    let user = std::env::var("USER").unwrap_or_default();
    let program = std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    match (user.is_empty(), host.is_empty()) {
        (false, false) => format!("{user}@{host}:{program}"),
        (true, false) => format!("{host}:{program}"),
        _ => program,
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

/// Whether the process an owner names still runs, as far as this host can
/// tell: what `diagnose` calls `owner-gone`, and what `force-release`
/// shows before it acts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnerProcess {
    /// The pid runs here, with the recorded start time (or none recorded).
    Running,
    /// No process with that pid runs here.
    Gone,
    /// The pid runs here but started at another time: the owner is gone and
    /// its pid was reused.
    PidReused { started_unix_ms: u64 },
    /// The owner is on another host (or names none): this host cannot tell.
    OtherHost,
}

impl OwnerProcess {
    /// One word, as `--json` output shows it: `running`, `gone`,
    /// `pid-reused`, or `other-host` (this host cannot tell).
    pub fn as_str(&self) -> &'static str {
        match self {
            OwnerProcess::Running => "running",
            OwnerProcess::Gone => "gone",
            OwnerProcess::PidReused { .. } => "pid-reused",
            OwnerProcess::OtherHost => "other-host",
        }
    }

    /// In words, about `owner`: what `get`, `force-release` and `diagnose`
    /// all show.
    pub fn describe(&self, owner: &OwnerInfo) -> String {
        match self {
            OwnerProcess::Running => "running on this host".into(),
            OwnerProcess::Gone => "GONE: no such process on this host".into(),
            OwnerProcess::PidReused { started_unix_ms } => format!(
                "GONE: its pid now belongs to a process started {}",
                crate::show::local_time(*started_unix_ms as i64)
            ),
            OwnerProcess::OtherHost => format!(
                "on host {}, not this one: its process cannot be checked from here",
                if owner.host.is_empty() {
                    "-"
                } else {
                    &owner.host
                }
            ),
        }
    }
}

/// Looks for `owner`'s process on this host (by pid and start time).
pub fn owner_process(owner: &OwnerInfo) -> OwnerProcess {
    if owner.host.is_empty() || owner.host != hostname() || owner.pid == 0 {
        return OwnerProcess::OtherHost;
    }
    match process_start_unix_ms(&owner.pid.to_string()) {
        None => OwnerProcess::Gone,
        Some(started)
            if owner.process_start_unix_ms != 0 && started != owner.process_start_unix_ms =>
        {
            OwnerProcess::PidReused {
                started_unix_ms: started,
            }
        }
        Some(_) => OwnerProcess::Running,
    }
}

/// A process's start time, Unix ms: boot time (`btime` in /proc/stat) plus
/// the start time in ticks since boot (field 22 of /proc/PID/stat; `pid` is
/// a number or `self`). Display and liveness only: with the pid it
/// identifies the process across pid reuse. `None` if no such process.
fn process_start_unix_ms(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
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
    fn owner_process_tells_running_gone_reused_and_elsewhere() {
        let me = owner_info(None, vec![]);
        assert_eq!(owner_process(&me), OwnerProcess::Running);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let exited = OwnerInfo {
            pid: child.id(),
            ..me.clone()
        };
        child.wait().unwrap();
        assert_eq!(owner_process(&exited), OwnerProcess::Gone);
        let reused = OwnerInfo {
            process_start_unix_ms: me.process_start_unix_ms - 60_000,
            ..me.clone()
        };
        assert!(matches!(
            owner_process(&reused),
            OwnerProcess::PidReused { started_unix_ms } if started_unix_ms == me.process_start_unix_ms
        ));
        let elsewhere = OwnerInfo {
            host: format!("not-{}", me.host),
            ..me
        };
        assert_eq!(owner_process(&elsewhere), OwnerProcess::OtherHost);
    }

    #[test]
    fn default_owner_names_the_program() {
        let o = owner_info(None, vec![]);
        assert!(!o.owner.is_empty());
        assert!(!o.host.is_empty());
    }

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
}
