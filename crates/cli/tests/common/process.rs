//! Commands run under `leasehold lock` and the processes they leave: the
//! `-- sh -c SCRIPT` tail, a file the script writes once it is ready, and
//! whether a process (or any member of a process group) is still alive.

use std::path::Path;

/// `-- sh -c SCRIPT`, the command tail of a `lock` invocation.
pub fn sh(script: &str) -> Vec<String> {
    vec!["--".into(), "sh".into(), "-c".into(), script.into()]
}

/// `head` followed by `tail`, as one argument list.
pub fn args<'a>(head: &[&'a str], tail: &'a [String]) -> Vec<&'a str> {
    head.iter()
        .copied()
        .chain(tail.iter().map(String::as_str))
        .collect()
}

/// Reads a file the command writes once it is ready (None until then).
pub fn read_ready(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.ends_with('\n').then(|| text.trim().to_owned())
}

/// The state letter and process group of `pid`, from `/proc` (None if gone).
fn state_and_group(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let group = fields.nth(1)?.parse().ok()?;
    Some((state, group))
}

/// Whether the kernel reports `pid` stopped (state `T`, as after SIGSTOP).
pub fn is_stopped(pid: i32) -> bool {
    state_and_group(pid).is_some_and(|(state, _)| state == 'T')
}

/// Whether `pid` is gone (no such process, or a zombie nobody reaped yet).
pub fn process_gone(pid: i32) -> bool {
    state_and_group(pid).is_none_or(|(state, _)| state == 'Z')
}

/// The live (non-zombie) processes of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            state_and_group(*pid).is_some_and(|(state, group)| group == pgid && state != 'Z')
        })
        .collect()
}
