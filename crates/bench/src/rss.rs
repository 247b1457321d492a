//! The server's resident memory and CPU time (`--server-pid`), read from
//! Linux's `/proc/PID/status` (`VmRSS`) and `/proc/PID/stat` (`utime`,
//! `stime`). Memory and CPU are figures the bench reports, and only the
//! kernel knows what the server process really holds (allocator slack and
//! fragmentation included) and spends, so they are read from there rather
//! than estimated.

use anyhow::Context as _;

/// The resident set of process `pid`, in bytes.
pub(super) fn resident_bytes(pid: u32) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {path} for --server-pid {pid}: is the server running on this \
             machine under that pid? (`pgrep -f 'leasehold serve'` finds it)"
        )
    })?;
    vm_rss(&status).with_context(|| format!("{path} has no VmRSS line (not a Linux process?)"))
}

/// The `VmRSS:   1234 kB` line of a `/proc/PID/status` text, in bytes.
fn vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// CPU time process `pid` has used so far (user + system, all threads).
pub(super) fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {path} for the CPU time of process {pid}"))?;
    let ticks = cpu_ticks(&stat).with_context(|| format!("{path} has no utime/stime fields"))?;
    // SAFETY: sysconf only reads a constant of the running system.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    anyhow::ensure!(per_second > 0, "sysconf(_SC_CLK_TCK) failed");
    Ok(ticks as f64 / per_second as f64)
}

/// utime + stime (fields 14 and 15) of a `/proc/PID/stat` line, in clock
/// ticks. The command name (field 2) may hold spaces and parentheses, so
/// the fields are counted from its last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// `bytes` for people: MiB with one decimal.
pub(super) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vm_rss_in_bytes() {
        let status = "Name:\tleasehold\nVmPeak:\t  900 kB\nVmRSS:\t  641024 kB\nThreads:\t4\n";
        assert_eq!(vm_rss(status), Some(641_024 * 1024));
        assert_eq!(vm_rss("Name:\tkthreadd\n"), None);
    }

    #[test]
    fn reads_cpu_ticks_past_a_name_with_spaces() {
        let stat = "42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 4 0";
        assert_eq!(cpu_ticks(stat), Some(280));
        assert_eq!(cpu_ticks("42 (x) S 1"), None);
        assert!(cpu_seconds(std::process::id()).expect("our own stat") >= 0.0);
    }

    #[test]
    fn reads_this_process() {
        let rss = resident_bytes(std::process::id()).expect("our own status");
        assert!(rss > 0);
    }

    #[test]
    fn a_missing_process_is_named() {
        let err = resident_bytes(u32::MAX).unwrap_err().to_string();
        assert!(err.contains("--server-pid 4294967295"), "{err}");
    }
}
