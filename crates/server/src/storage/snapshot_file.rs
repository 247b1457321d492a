//! Snapshot bytes in files of their own, `<data dir>/snapshots/<name>`,
//! written so that they never queue much ahead of the disk.
//!
//! **Why not in redb with the rest**: redb writes a value at commit, so a
//! 155 MB snapshot became 155 MB of dirty pages flushed by one `fsync`,
//! and the log's next `fdatasync` (which must reach the same disk) waited
//! behind all of it: 112–168 ms, the slowest client call of an expiry
//! storm (docs/DESIGN.md §6d). Here the bytes go out in
//! [`WRITEBACK_CHUNK`] pieces: each piece's writeback is started as soon
//! as it is written and waited for before the piece after next, so at most
//! two pieces are ever queued, and a log `fdatasync` waits for those at
//! most.
//!
//! A file is written under a temporary name, synced, renamed and its
//! directory synced before redb is told its name, so a name redb holds
//! always names a whole file. Its name carries the snapshot id and the
//! crc32 of its bytes: two snapshots never share a name unless they are
//! the same bytes, so writing one never replaces a file redb still names.
//! Files redb does not name (a crash between write and commit, a
//! snapshot that lost to a newer one) are removed after each save and at
//! start.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// The directory, inside the data dir, of the snapshot files.
pub(crate) const DIR: &str = "snapshots";
/// Written, then handed to the disk, in pieces of this size.
const WRITEBACK_CHUNK: usize = 4 << 20;
/// A file being written ends with this until it is whole.
const PARTIAL: &str = ".partial";

/// The file name of snapshot `id` with bytes `data`.
pub(crate) fn name_for(id: &str, data: &[u8]) -> String {
    format!("{id}-{:08x}.snap", crc32fast::hash(data))
}

/// Where the file `name` lives in `data_dir`.
pub(crate) fn path(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join(DIR).join(name)
}

/// Writes `data` durably as `name` in `data_dir` (see the module doc).
pub(crate) fn write(data_dir: &Path, name: &str, data: &[u8]) -> io::Result<()> {
    let dir = data_dir.join(DIR);
    fs::create_dir_all(&dir)?;
    let partial = dir.join(format!("{name}{PARTIAL}"));
    let mut file = File::create(&partial)?;
    let mut queued: Option<(usize, usize)> = None;
    for (at, piece) in data.chunks(WRITEBACK_CHUNK).enumerate() {
        file.write_all(piece)?;
        let offset = at * WRITEBACK_CHUNK;
        start_writeback(&file, offset, piece.len())?;
        if let Some((offset, len)) = queued.replace((offset, piece.len())) {
            wait_writeback(&file, offset, len)?;
        }
    }
    file.sync_all()?;
    drop(file);
    fs::rename(&partial, dir.join(name))?;
    File::open(&dir)?.sync_all()
}

/// Reads the file `name` in `data_dir` whole.
pub(crate) fn read(data_dir: &Path, name: &str) -> io::Result<Vec<u8>> {
    fs::read(path(data_dir, name))
}

/// Removes every snapshot file in `data_dir` but `keep` (best effort: a
/// file left over only costs its space until the next save).
pub(crate) fn remove_all_but(data_dir: &Path, keep: Option<&str>) {
    let Ok(entries) = fs::read_dir(data_dir.join(DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        if keep.is_some_and(|keep| entry.file_name() == keep) {
            continue;
        }
        if let Err(error) = fs::remove_file(entry.path()) {
            let path = entry.path();
            tracing::warn!(path = %path.display(), %error, "could not remove an old snapshot file; remove it by hand to free its space");
        }
    }
}

/// Asks the kernel to start writing `len` bytes at `offset` to disk.
fn start_writeback(file: &File, offset: usize, len: usize) -> io::Result<()> {
    sync_file_range(file, offset, len, libc::SYNC_FILE_RANGE_WRITE)
}

/// Waits until `len` bytes at `offset` are on disk (written back, not yet
/// flushed from the disk's cache: the final `fsync` does that).
fn wait_writeback(file: &File, offset: usize, len: usize) -> io::Result<()> {
    let flags = libc::SYNC_FILE_RANGE_WAIT_BEFORE
        | libc::SYNC_FILE_RANGE_WRITE
        | libc::SYNC_FILE_RANGE_WAIT_AFTER;
    sync_file_range(file, offset, len, flags)
}

fn sync_file_range(file: &File, offset: usize, len: usize, flags: u32) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: a plain syscall on an open descriptor; no memory is shared.
    let done = unsafe { libc::sync_file_range(file.as_raw_fd(), offset as i64, len as i64, flags) };
    match done {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_written_whole_under_its_name_and_others_are_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let data: Vec<u8> = (0..2 * WRITEBACK_CHUNK + 123).map(|i| i as u8).collect();
        let name = name_for("3-40-7", &data);
        write(dir.path(), &name, &data).expect("written");
        assert_eq!(read(dir.path(), &name).expect("read"), data);
        let old = name_for("3-20-6", b"older");
        write(dir.path(), &old, b"older").expect("written");
        fs::write(path(dir.path(), &format!("x{PARTIAL}")), b"cut").expect("partial");
        remove_all_but(dir.path(), Some(&name));
        let left: Vec<_> = fs::read_dir(dir.path().join(DIR))
            .expect("dir")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from(&name)]);
    }

    #[test]
    fn names_differ_with_the_bytes() {
        assert_ne!(name_for("1-2-3", b"a"), name_for("1-2-3", b"b"));
        assert!(name_for("1-2-3", b"a").starts_with("1-2-3-"));
    }
}
