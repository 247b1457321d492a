//! A size-limited tmpfs for the full-disk tests (storage and `leasehold
//! serve`), included with `#[path]`. Mounting needs root, as the tests run
//! in CI.

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A tmpfs mounted on a fresh directory, unmounted on drop.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`mount -o size=`, e.g. `24m`).
    pub fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(status.success(), "mount a tmpfs (the test needs root)");
        Tmpfs { dir }
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Writes `path` one MiB at a time, pausing `pace` after each, until the
/// filesystem is full or `stop` says so; returns the bytes written.
pub fn fill(path: &Path, pace: Duration, stop: impl Fn() -> bool) -> u64 {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0xAB; 1 << 20];
    let mut written = 0;
    while !stop() {
        match file.write(&chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => written += n as u64,
        }
        std::thread::sleep(pace);
    }
    let _ = file.sync_all();
    written
}
