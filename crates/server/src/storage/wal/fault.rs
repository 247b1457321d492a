//! The WAL's one fsync, with a **test-only** failure hook.
//!
//! `LEASEHOLD_TEST_FSYNC_FAIL_AFTER=N` (read once, when the log opens) makes
//! the Nth and every later fsync of a log append fail with `EIO` instead of
//! syncing, as a dying disk would. It exists for the fault tests (t221) and
//! the fault harness; a production deployment never sets it. Unset, empty
//! or not a number: no fault (a bad value is logged once and ignored).

use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable of the hook (test-only).
pub const FSYNC_FAIL_AFTER_ENV: &str = "LEASEHOLD_TEST_FSYNC_FAIL_AFTER";

/// Syncs appended log data, failing from the configured fsync on.
#[derive(Debug, Default)]
pub(crate) struct Fsync {
    /// The 1-based fsync from which on every one fails; `None`: never.
    fail_after: Option<u64>,
    /// Append fsyncs so far.
    count: AtomicU64,
}

impl Fsync {
    /// Reads [`FSYNC_FAIL_AFTER_ENV`].
    pub fn from_env() -> Fsync {
        let fail_after = match std::env::var(FSYNC_FAIL_AFTER_ENV) {
            Ok(value) if !value.is_empty() => match value.parse::<u64>() {
                Ok(n) => {
                    tracing::warn!(
                        "{FSYNC_FAIL_AFTER_ENV}={n}: TEST HOOK, log fsync {n} and later fail"
                    );
                    Some(n)
                }
                Err(_) => {
                    tracing::warn!("{FSYNC_FAIL_AFTER_ENV}={value:?} is not a number: ignored");
                    None
                }
            },
            _ => None,
        };
        Fsync {
            fail_after,
            count: AtomicU64::new(0),
        }
    }

    /// `fdatasync`s `file`, or fails with `EIO` if the hook says so.
    pub fn sync(&self, file: &File) -> io::Result<()> {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_after.is_some_and(|first| n >= first) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        file.sync_data()?;
        crate::storage::power_cut::synced(file);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fails_from_the_configured_fsync_on() {
        let file = tempfile::tempfile().unwrap();
        let fsync = Fsync {
            fail_after: Some(2),
            count: AtomicU64::new(0),
        };
        assert!(fsync.sync(&file).is_ok());
        for _ in 0..3 {
            let error = fsync.sync(&file).unwrap_err();
            assert_eq!(error.raw_os_error(), Some(libc::EIO));
        }
        assert!(Fsync::default().sync(&file).is_ok());
    }
}
