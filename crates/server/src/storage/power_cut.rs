//! A **test-only** model of the page cache, for power-loss tests and the
//! fault harness: `kill -9` keeps the page cache, so it cannot show whether
//! a reply waited for its fsync; a power cut loses every write not yet
//! fsynced.
//!
//! With `LEASEHOLD_TEST_POWER_LOSS=1` (read once, at the first write), every
//! write the log makes to its files (segment appends, truncations, erasures,
//! the `committed` file) goes through [`write_at`], which remembers the bytes
//! it overwrites (and the file's length) until the file's next fsync
//! ([`synced`]). On `SIGUSR2` ([`spawn_trigger`]) the node performs a "power
//! cut": it puts back, newest first, every byte written since its file's
//! last fsync, cuts each file back to its length as of that fsync, and exits
//! at once with code [`POWER_CUT_EXIT_CODE`] (`_exit`: nothing flushed, no
//! destructor run). Writes and the cut take one lock, so no write lands
//! after the cut has begun.
//!
//! Not modelled, because nothing acknowledged depends on them: redb's files
//! (every redb commit is fsynced before it returns: the vote, the purged id,
//! snapshots, the identity) and directory entries (segment creation is
//! fsynced with its directory; only the deletion of purged segments is not,
//! and recovery skips a purged segment that comes back). A fresh segment's
//! zero-filling is not recorded either: it is fsynced before the segment is
//! used, and a half-filled spare is deleted at the next start.
//!
//! Off (the variable unset), [`write_at`] is `write_all_at` plus one relaxed
//! atomic load.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The environment variable that turns the model on (test-only).
pub const POWER_LOSS_ENV: &str = "LEASEHOLD_TEST_POWER_LOSS";
/// The exit code of a power cut.
pub const POWER_CUT_EXIT_CODE: i32 = 86;

/// What a file had at its last fsync, for the bytes written since.
struct Unsynced {
    /// A handle to write the old bytes back through.
    file: File,
    /// The file's length at its last fsync.
    len_at_sync: u64,
    /// `(offset, bytes there before the write)`, oldest first; bytes past
    /// the end of the file then are absent (the length cut removes them).
    undo: Vec<(u64, Vec<u8>)>,
}

/// The unsynced writes, by inode; `None` when the model is off.
fn model() -> Option<&'static Mutex<HashMap<u64, Unsynced>>> {
    static MODEL: OnceLock<Option<Mutex<HashMap<u64, Unsynced>>>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let on = std::env::var(POWER_LOSS_ENV).is_ok_and(|v| v == "1");
            if on {
                tracing::warn!("{POWER_LOSS_ENV}=1: TEST HOOK, unsynced log writes are remembered and SIGUSR2 cuts the power");
            }
            on.then(|| Mutex::new(HashMap::new()))
        })
        .as_ref()
}

fn lock(model: &Mutex<HashMap<u64, Unsynced>>) -> MutexGuard<'_, HashMap<u64, Unsynced>> {
    // A panic mid-record only loses test bookkeeping: carry on.
    model
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `file.write_all_at(buf, offset)`, remembering what it overwrites when
/// the model is on.
pub(crate) fn write_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    let Some(model) = model() else {
        return file.write_all_at(buf, offset);
    };
    let mut unsynced = lock(model);
    let meta = file.metadata()?;
    let entry = match unsynced.entry(meta.ino()) {
        std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
        std::collections::hash_map::Entry::Vacant(entry) => entry.insert(Unsynced {
            file: file.try_clone()?,
            len_at_sync: meta.len(),
            undo: Vec::new(),
        }),
    };
    let end = (offset + buf.len() as u64).min(meta.len());
    let mut old = vec![0; end.saturating_sub(offset) as usize];
    file.read_exact_at(&mut old, offset)?;
    entry.undo.push((offset, old));
    file.write_all_at(buf, offset)
}

/// Records that `file` was fsynced: its writes so far survive a cut.
pub(crate) fn synced(file: &File) {
    let Some(model) = model() else {
        return;
    };
    if let Ok(meta) = file.metadata() {
        lock(model).remove(&meta.ino());
    }
}

/// Puts every unsynced write back and exits with [`POWER_CUT_EXIT_CODE`].
fn cut(model: &Mutex<HashMap<u64, Unsynced>>) -> ! {
    let unsynced = lock(model);
    let mut reverted = 0;
    for file in unsynced.values() {
        for (offset, old) in file.undo.iter().rev() {
            let _ = file.file.write_all_at(old, *offset);
            reverted += old.len();
        }
        let _ = file.file.set_len(file.len_at_sync);
    }
    eprintln!(
        "power cut ({POWER_LOSS_ENV}): {reverted} unsynced bytes in {} files put back; exiting {POWER_CUT_EXIT_CODE}",
        unsynced.len()
    );
    // SAFETY: `_exit` ends the process at once; nothing else runs after it.
    unsafe { libc::_exit(POWER_CUT_EXIT_CODE) }
}

/// With the model on, starts the task that cuts the power on `SIGUSR2`.
pub fn spawn_trigger() -> io::Result<()> {
    let Some(model) = model() else {
        return Ok(());
    };
    let mut signals =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined2())?;
    tokio::spawn(async move {
        if signals.recv().await.is_some() {
            // Off the runtime's threads: the cut waits for a write in
            // progress to finish, and writes run inline on them.
            std::thread::spawn(move || cut(model));
        }
    });
    Ok(())
}
