//! A size-limited tmpfs, for a node whose disk the harness fills
//! (`disk-full`): the data dir lives on a filesystem of its own, so a
//! filler file can run it out of space without touching the rest of the
//! machine, and a remount can give it room again.
//!
//! Mounting needs root (the harness runs as root in CI). The server's own
//! full-disk tests keep a copy of the mount and the filler in
//! `crates/server/tests/support/tmpfs.rs`: the server crate cannot depend
//! on this one.

use leasehold_server::storage::free_bytes;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A tmpfs mounted on a directory, unmounted on drop.
#[derive(Debug)]
pub struct Tmpfs {
    /// The mount point (created if missing, left in place on drop).
    path: PathBuf,
    /// Its size as last set (the kernel rounds it up to whole pages).
    size_bytes: u64,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size_bytes` on `path` (created if missing).
    pub fn mount(path: &Path, size_bytes: u64) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(path).map_err(|e| format!("create {}: {e}", path.display()))?;
        let size = format!("size={size_bytes}");
        let mut mount = Command::new("mount");
        mount.args(["-t", "tmpfs", "-o", &size, "tmpfs"]).arg(path);
        run(
            mount,
            &format!("mount a tmpfs on {} (needs root)", path.display()),
        )?;
        Ok(Tmpfs {
            path: path.to_path_buf(),
            size_bytes,
        })
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sets its size to `size_bytes` (a remount; its files stay). The
    /// kernel refuses a size below what its files already use.
    pub fn resize(&mut self, size_bytes: u64) -> Result<(), String> {
        let options = format!("remount,size={size_bytes}");
        let mut remount = Command::new("mount");
        remount.args(["-o", &options]).arg(&self.path);
        run(
            remount,
            &format!("resize the tmpfs on {}", self.path.display()),
        )?;
        self.size_bytes = size_bytes;
        Ok(())
    }

    /// The bytes its files use now.
    pub fn used_bytes(&self) -> Result<u64, String> {
        let free = free_bytes(&self.path)
            .map_err(|e| format!("free space on {}: {e}", self.path.display()))?;
        Ok(self.size_bytes.saturating_sub(free))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

/// Runs `command`; `Err` naming `what` if it cannot run or fails.
fn run(mut command: Command, what: &str) -> Result<(), String> {
    let out = command.output().map_err(|e| format!("{what}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(format!("{what}: {} ({})", out.status, stderr.trim()))
}

/// Writes `path` one MiB at a time, pausing `pace` after each, until the
/// filesystem is full or `stop` says so; returns the bytes written.
pub fn fill(path: &Path, pace: Duration, stop: impl Fn() -> bool) -> Result<u64, String> {
    let mut file =
        std::fs::File::create(path).map_err(|e| format!("create {}: {e}", path.display()))?;
    let chunk = vec![0xAB; 1 << 20];
    let mut written = 0;
    while !stop() {
        match file.write(&chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => written += n as u64,
        }
        std::thread::sleep(pace);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// Needs root (mount), as the harness in CI.
    #[test]
    fn fills_up_grows_when_resized_and_unmounts_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("tmpfs");
        let mut tmpfs = Tmpfs::mount(&mount, 4 * MIB).unwrap();
        let filled = fill(&mount.join("filler"), Duration::ZERO, || false).unwrap();
        assert!(
            (3 * MIB..=4 * MIB).contains(&filled),
            "filled {filled} bytes of 4 MiB"
        );
        assert!(tmpfs.used_bytes().unwrap() >= filled);
        assert_eq!(
            free_bytes(&mount).unwrap(),
            4 * MIB - tmpfs.used_bytes().unwrap()
        );

        tmpfs.resize(filled + 2 * MIB).unwrap();
        assert!(
            free_bytes(&mount).unwrap() >= MIB,
            "the resize gave no room"
        );
        assert!(tmpfs.resize(MIB).is_err(), "shrunk below what it holds");

        drop(tmpfs);
        assert!(!mount.join("filler").exists(), "still mounted after drop");
    }
}
