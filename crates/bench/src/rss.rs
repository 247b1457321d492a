//! The server's resident memory (`--server-pid`), read from Linux's
//! `/proc/PID/status` (`VmRSS`). Memory is one of the figures the bench
//! reports, and only the kernel knows what the server process really holds
//! (allocator slack and fragmentation included), so it is read from there
//! rather than estimated from the state's size.

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
