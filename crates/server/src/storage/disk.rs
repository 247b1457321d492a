//! Whether this node's disk can take writes: the one answer the proposer
//! (refuse writes), the read path, `/readyz` and the gRPC health service
//! ask, with the sentence an operator acts on.
//!
//! Two faults, handled differently on purpose:
//!
//! - **A failed fsync** poisons the log for good ([`DiskHealth::poison`]).
//!   After a failed fsync the kernel may have dropped the dirty pages and
//!   marked them clean, so a retried fsync can "succeed" without the data
//!   ever reaching the disk ("fsyncgate", PostgreSQL 2018). Nothing written
//!   since the last good fsync can be trusted, so nothing is retried: the
//!   write is never acknowledged, every later write is refused, and only a
//!   restart (which recovers from what is durable) clears it.
//! - **A full disk** ([`DiskFault::NoSpace`]) is not a failed fsync. Writes
//!   are refused while the free space on the data dir's filesystem is below
//!   one log segment plus [`DISK_HEADROOM_BYTES`], measured on every check
//!   (one `statvfs`), so they resume by themselves when space returns. The
//!   headroom means the log keeps room for its next segment and the database
//!   for its vote, purge and snapshot writes, so a full disk normally
//!   refuses writes before any write hits `ENOSPC`. If one does anyway (the
//!   disk filled faster than the checks), see `LogStore::append`: a write
//!   that failed with `ENOSPC` before its fsync made nothing durable and
//!   acknowledged nothing, so writing the same bytes at the same offset
//!   again, once there is room, is safe.

use leasehold_core::limits::DISK_HEADROOM_BYTES;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// First and longest pause of [`DiskHealth::room`] between checks.
const ROOM_PAUSE_MIN: std::time::Duration = std::time::Duration::from_millis(50);
const ROOM_PAUSE_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// Why this node's disk takes no writes now.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DiskFault {
    /// An fsync of the log failed: the log is poisoned until a restart.
    #[error(
        "an fsync of the log in {} failed ({error}): this node acknowledged nothing written \
         since and accepts no more writes (a failed fsync is never retried); check the disk, \
         then restart the node: it recovers from what is durable",
        .dir.display()
    )]
    FsyncFailed {
        /// The log dir.
        dir: PathBuf,
        /// The error the fsync returned.
        error: String,
    },
    /// The data dir's filesystem has too little free space.
    #[error(
        "no space left on {}: {free_bytes} bytes free, writes need {needed_bytes} (one log \
         segment plus DISK_HEADROOM_BYTES): free space and the node resumes by itself",
        .path.display()
    )]
    NoSpace {
        /// The data dir.
        path: PathBuf,
        /// Free bytes (for an unprivileged user) when checked.
        free_bytes: u64,
        /// The free bytes writes need.
        needed_bytes: u64,
    },
}

/// Too little free space to start (see [`DiskHealth::check_at_start`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "not enough free space on {} to start: {free_bytes} bytes free, {needed_bytes} needed (the \
     log's segments are zero-filled ahead of use: room for the next one, plus \
     DISK_HEADROOM_BYTES for the database); free space, then start the node again",
    .path.display()
)]
pub struct NoSpaceToStart {
    /// The data dir.
    pub path: PathBuf,
    /// Free bytes (for an unprivileged user).
    pub free_bytes: u64,
    /// The free bytes a start needs.
    pub needed_bytes: u64,
}

/// The disk's state, shared by the log store and the server (see the
/// module doc). Cheap to check.
#[derive(Debug)]
pub struct DiskHealth {
    /// The data dir: where free space is measured.
    data_dir: PathBuf,
    /// Free bytes below which writes are refused.
    needed_bytes: u64,
    /// Set once by the first failed fsync; never cleared.
    poisoned: OnceLock<DiskFault>,
    /// Whether the last space check refused (logged on each change).
    full: AtomicBool,
}

impl DiskHealth {
    /// The health of the disk under `data_dir`, whose log segments are
    /// `segment_bytes` long.
    pub fn new(data_dir: &Path, segment_bytes: u64) -> DiskHealth {
        DiskHealth {
            data_dir: data_dir.to_path_buf(),
            needed_bytes: segment_bytes + DISK_HEADROOM_BYTES,
            poisoned: OnceLock::new(),
            full: AtomicBool::new(false),
        }
    }

    /// `Ok` if writes may go ahead; else why not. Measures free space.
    pub fn check(&self) -> Result<(), DiskFault> {
        self.check_poisoned()?;
        self.check_space()
    }

    /// The failed fsync, if one happened.
    pub fn check_poisoned(&self) -> Result<(), DiskFault> {
        match self.poisoned.get() {
            Some(fault) => Err(fault.clone()),
            None => Ok(()),
        }
    }

    /// Whether the free space is enough for writes; logs each change.
    pub fn check_space(&self) -> Result<(), DiskFault> {
        let verdict = self.measure();
        let full = verdict.is_err();
        if self.full.swap(full, Ordering::Relaxed) != full {
            match &verdict {
                Err(fault) => tracing::warn!("refusing writes: {fault}"),
                Ok(()) => tracing::info!(
                    data_dir = %self.data_dir.display(),
                    "free space is back: accepting writes again"
                ),
            }
        }
        verdict
    }

    /// Returns once the free space is enough for writes (at once if it
    /// is), checking at growing intervals. Every database write (a vote, a
    /// purged id, a snapshot) waits here first: redb meeting `ENOSPC`
    /// mid-commit refuses every later write until the file is reopened,
    /// and openraft stops a node whose storage fails, so a write made on a
    /// full disk would leave the node stuck after space returned. The log's
    /// appends wait differently (`LogStore::append`), since retrying one
    /// is safe.
    pub async fn room(&self) {
        let mut pause = ROOM_PAUSE_MIN;
        while self.check_space().is_err() {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(ROOM_PAUSE_MAX);
        }
    }

    /// Refuses to start when the free space is below what writes need
    /// plus `first_segment_bytes` (the first segment, if the log has none
    /// yet, so that writes are not refused as soon as it exists), naming
    /// the path, the space needed and the space free.
    pub fn check_at_start(&self, first_segment_bytes: u64) -> Result<(), NoSpaceToStart> {
        let needed_bytes = self.needed_bytes + first_segment_bytes;
        match free_bytes(&self.data_dir) {
            Ok(free) if free < needed_bytes => Err(NoSpaceToStart {
                path: self.data_dir.clone(),
                free_bytes: free,
                needed_bytes,
            }),
            _ => Ok(()),
        }
    }

    /// One free-space measurement against what writes need.
    fn measure(&self) -> Result<(), DiskFault> {
        match free_bytes(&self.data_dir) {
            Ok(free) if free < self.needed_bytes => Err(DiskFault::NoSpace {
                path: self.data_dir.clone(),
                free_bytes: free,
                needed_bytes: self.needed_bytes,
            }),
            // A failed statvfs says nothing about space: the writes will tell.
            _ => Ok(()),
        }
    }

    /// Records a failed fsync of the log in `dir`: from now on every check
    /// fails. Logs one error line (the first time only).
    pub fn poison(&self, dir: &Path, error: &io::Error) {
        let fault = DiskFault::FsyncFailed {
            dir: dir.to_path_buf(),
            error: error.to_string(),
        };
        let line = fault.to_string();
        if self.poisoned.set(fault).is_ok() {
            tracing::error!("{line}");
        }
    }
}

/// The bytes an unprivileged user may still write on `path`'s filesystem.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("a path with a NUL byte"))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a valid C string and `stat` is written by statvfs
    // before it is read (only when it returns 0).
    let stat = unsafe {
        if libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        stat.assume_init()
    };
    #[allow(clippy::useless_conversion)] // the field types differ by target
    let (blocks, block_bytes) = (u64::from(stat.f_bavail), u64::from(stat.f_frsize));
    Ok(blocks.saturating_mul(block_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_disk_stays_poisoned_and_keeps_the_first_error() {
        let dir = tempfile::tempdir().unwrap();
        let health = DiskHealth::new(dir.path(), 0);
        assert_eq!(health.check_poisoned(), Ok(()));
        health.poison(dir.path(), &io::Error::from_raw_os_error(libc::EIO));
        health.poison(dir.path(), &io::Error::other("second"));
        let Err(first) = health.check() else {
            panic!("a poisoned disk passed");
        };
        let text = first.to_string();
        assert!(text.contains("os error 5"), "{text}");
        assert!(text.contains("restart the node"), "{text}");
        assert!(text.contains(&dir.path().display().to_string()), "{text}");
    }

    #[test]
    fn too_little_free_space_refuses_writes_and_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(dir.path()).unwrap();
        assert!(free > 0);
        let health = DiskHealth::new(dir.path(), free);
        let Err(DiskFault::NoSpace { path, .. }) = health.check() else {
            panic!("more than the free space was not refused");
        };
        assert_eq!(path, dir.path());
        assert!(health.check_at_start(0).is_err());
        let small = DiskHealth::new(dir.path(), 0);
        assert!(small.check_at_start(free).is_err());
        assert_eq!(DiskHealth::new(dir.path(), 0).check(), Ok(()));
    }
}
