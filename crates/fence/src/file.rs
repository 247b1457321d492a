//! [`FileFence`]: the in-process fence of [`crate::memory`], with the
//! highest tokens persisted to a file so they survive a restart.
//!
//! ## Contract: record, then write, under one lock
//!
//! A file cannot be updated in the same atomic step as an arbitrary user
//! write, so the adapter orders the two and picks the safe order. Under the
//! fence's mutex it (1) checks the token, (2) appends the new highest token
//! to the file and fsyncs it, (3) runs the caller's write. A crash between
//! (2) and (3) leaves the token recorded without the write — the resource
//! only got stricter, and the holder retries with the same token, which is
//! accepted (equal tokens pass). The other order could lose the record of a
//! write that happened and let a stale writer in after a restart. If (2)
//! fails, the write is not run.
//!
//! The fence is for one process: two `FileFence`s on one file (in one
//! process or two) do not see each other's tokens.
//!
//! ## Format
//!
//! UTF-8 text: a header line, then one record per line,
//! `resource \t lock \t token \n`, with `\`, tab and newline in names
//! escaped as `\\`, `\t`, `\n`. The newline is the commit mark: a last
//! line without one is a torn append from a crash, whose write never ran,
//! and is ignored. Any other malformed line is corruption, and opening
//! fails rather than guess the tokens. Opening compacts the file to one
//! record per (resource, lock) via a temporary file renamed over it.

use crate::memory::Tokens;
use crate::{check, Audit, Rejection, StaleToken};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Metric label of this adapter's refusals.
const ADAPTER: &str = "file";

/// The format of the fence files this build writes, and the newest it reads.
pub const FILE_FORMAT: u32 = 1;
/// First line of every fence file: names the format and its version.
const HEADER: &str = "leasehold-fence-tokens v1\n";
/// The first line's text before the version.
const HEADER_PREFIX: &str = "leasehold-fence-tokens v";

/// Why a [`FileFence`] refused a write or could not open.
#[derive(Debug, thiserror::Error)]
pub enum FileFenceError {
    /// The token is lower than the highest accepted; the write did not run.
    #[error(transparent)]
    Stale(#[from] StaleToken),
    /// Reading, writing or syncing the file failed; the write did not run.
    #[error("fence file {}: {source}", path.display())]
    Io {
        /// The fence file.
        path: PathBuf,
        /// The underlying failure.
        source: io::Error,
    },
    /// The file holds a line that is neither a record nor a torn last append.
    #[error("fence file {}, line {line}: {reason}; refusing to guess the highest tokens", path.display())]
    Corrupt {
        /// The fence file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The file is of a newer format than this build reads.
    #[error(
        "fence file {} is format v{found}, newer than this build reads (v{FILE_FORMAT}): use the \
         leasehold-fence release that wrote it, or a newer one; never an older one", path.display()
    )]
    Newer {
        /// The fence file.
        path: PathBuf,
        /// The format its first line names.
        found: u32,
    },
    /// An earlier append or fsync failed, so the file's tail is unknown.
    #[error("fence file {}: an earlier append or fsync failed, so the file's state is unknown; reopen the fence to recover", path.display())]
    Broken {
        /// The fence file.
        path: PathBuf,
    },
}

/// A fence whose highest tokens survive a restart. See the module docs for
/// the record-then-write contract.
///
/// ```
/// use leasehold_fence::file::FileFence;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("fence");
/// let fence = FileFence::open(&path).unwrap();
/// fence.write("orders", "order-9", 12, || { /* write the order */ }).unwrap();
/// drop(fence);
///
/// // After a restart the old holder's token is still refused.
/// let fence = FileFence::open(&path).unwrap();
/// assert!(fence.write("orders", "order-9", 11, || ()).is_err());
/// assert_eq!(fence.highest("orders", "order-9"), Some(12));
/// ```
#[derive(Debug)]
pub struct FileFence {
    /// The fence file, for appends and error messages.
    path: PathBuf,
    /// Tokens and file together: the mutex makes check, append and the
    /// caller's write one step.
    state: Mutex<State>,
    /// Refusals: counted, logged and the recent ones kept.
    audit: Audit,
}

/// What the fence's mutex guards.
#[derive(Debug)]
struct State {
    /// The highest token per (resource, lock), as recorded in the file.
    tokens: Tokens,
    /// The fence file, opened for appending.
    file: File,
    /// Set when an append or fsync failed: the file may hold a partial
    /// line (which a later append would corrupt) and, after a failed
    /// fsync, the kernel's view of it is unknown. No more writes until the
    /// fence is reopened, which re-reads and compacts the file.
    broken: bool,
}

impl FileFence {
    /// Opens (creating if missing) the fence file at `path`, loads the
    /// highest tokens, drops a torn last line and compacts the file.
    pub fn open(path: impl AsRef<Path>) -> Result<FileFence, FileFenceError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |source| FileFenceError::Io {
            path: path.clone(),
            source,
        };
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io_err(e)),
        };
        if let Some(found) = newer_format(&bytes) {
            return Err(FileFenceError::Newer { path, found });
        }
        let tokens = parse(&bytes).map_err(|(line, reason)| FileFenceError::Corrupt {
            path: path.clone(),
            line,
            reason,
        })?;
        compact(&path, &tokens).map_err(io_err)?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io_err)?;
        Ok(FileFence {
            path,
            state: Mutex::new(State {
                tokens,
                file,
                broken: false,
            }),
            audit: Audit::new(ADAPTER),
        })
    }

    /// Runs `write` if `token` is at least the highest accepted for
    /// (`resource`, `lock`), after durably recording `token` as the new
    /// highest; otherwise records the refusal and does not run `write`.
    /// `write` must not call back into this fence (it would deadlock).
    pub fn write<T>(
        &self,
        resource: &str,
        lock: &str,
        token: u64,
        write: impl FnOnce() -> T,
    ) -> Result<T, FileFenceError> {
        let mut state = self.lock_state();
        if state.broken {
            return Err(FileFenceError::Broken {
                path: self.path.clone(),
            });
        }
        let current = state.tokens.get(resource, lock);
        let new_highest = match check(lock, current, token) {
            Ok(new_highest) => new_highest,
            Err(stale) => {
                drop(state);
                self.audit.record(resource, &stale);
                return Err(stale.into());
            }
        };
        // An equal token is already on disk: nothing to append.
        if current != Some(new_highest) {
            let line = record_line(resource, lock, new_highest);
            if let Err(source) = append(&mut state.file, &line) {
                state.broken = true;
                return Err(FileFenceError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
            state.tokens.record(resource, lock, new_highest);
        }
        Ok(write())
    }

    /// The highest token accepted for (`resource`, `lock`), if any.
    pub fn highest(&self, resource: &str, lock: &str) -> Option<u64> {
        self.lock_state().tokens.get(resource, lock)
    }

    /// The recent refusals since this fence was opened, oldest first.
    pub fn rejections(&self) -> Vec<Rejection> {
        self.audit.recent()
    }

    /// The state, even if a caller's `write` panicked while holding it:
    /// the token is durable and recorded before `write` runs, so the state
    /// is consistent at every point a panic can come from.
    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Appends one record and makes it durable.
fn append(file: &mut File, line: &str) -> io::Result<()> {
    file.write_all(line.as_bytes())?;
    file.sync_data()
}

/// The format a fence file's first line names, if newer than
/// [`FILE_FORMAT`] (checked before the file is read, or compacted).
fn newer_format(bytes: &[u8]) -> Option<u32> {
    let first = bytes.split(|&b| b == b'\n').next()?;
    let version = std::str::from_utf8(first.strip_prefix(HEADER_PREFIX.as_bytes())?).ok()?;
    version.parse().ok().filter(|&found| found > FILE_FORMAT)
}

/// Reads a fence file: `Err((line, reason))` for corruption. A final line
/// without its newline is a torn append and is skipped.
fn parse(bytes: &[u8]) -> Result<Tokens, (usize, &'static str)> {
    let mut tokens = Tokens::default();
    if bytes.is_empty() {
        return Ok(tokens);
    }
    let mut lines = bytes.split_inclusive(|&b| b == b'\n').enumerate();
    match lines.next() {
        Some((_, header)) if header == HEADER.as_bytes() => {}
        _ => return Err((1, "not a leasehold fence file (header missing)")),
    }
    for (index, line) in lines {
        let Some(line) = line.strip_suffix(b"\n") else {
            break; // torn last append: its write never ran
        };
        let (resource, lock, token) = parse_record(line).map_err(|reason| (index + 1, reason))?;
        if tokens
            .get(&resource, &lock)
            .is_none_or(|highest| token > highest)
        {
            tokens.record(&resource, &lock, token);
        }
    }
    Ok(tokens)
}

/// One record line, without its newline.
fn parse_record(line: &[u8]) -> Result<(String, String, u64), &'static str> {
    let line = std::str::from_utf8(line).map_err(|_| "not UTF-8")?;
    let mut fields = line.split('\t');
    let (Some(resource), Some(lock), Some(token), None) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    else {
        return Err("expected three tab-separated fields");
    };
    let token = token.parse().map_err(|_| "token is not a u64")?;
    Ok((unescape(resource)?, unescape(lock)?, token))
}

/// Rewrites the file as the header plus one record per (resource, lock):
/// to a temporary file, fsynced, renamed over `path`, directory fsynced.
fn compact(path: &Path, tokens: &Tokens) -> io::Result<()> {
    let mut text = String::from(HEADER);
    for (resource, lock, token) in tokens.sorted() {
        text.push_str(&record_line(resource, lock, token));
    }
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".compact");
    let tmp = PathBuf::from(tmp_name);
    let mut file = File::create(&tmp)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, path)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// One record, newline included.
fn record_line(resource: &str, lock: &str, token: u64) -> String {
    let mut line = String::with_capacity(resource.len() + lock.len() + 24);
    escape(resource, &mut line);
    line.push('\t');
    escape(lock, &mut line);
    line.push('\t');
    line.push_str(&token.to_string());
    line.push('\n');
    line
}

/// Escapes `\`, tab and newline so a name cannot split a record.
fn escape(name: &str, out: &mut String) {
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Reverses [`escape`].
fn unescape(field: &str) -> Result<String, &'static str> {
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            _ => return Err("bad escape in a name"),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence_path() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("fence");
        (dir, path)
    }

    #[test]
    fn restart_keeps_the_highest_token() {
        let (_dir, path) = fence_path();
        let fence = FileFence::open(&path).unwrap();
        fence.write("r", "l", 3, || ()).unwrap();
        fence.write("r", "l", 8, || ()).unwrap();
        fence.write("r", "other", 2, || ()).unwrap();
        drop(fence);

        let fence = FileFence::open(&path).unwrap();
        assert_eq!(fence.highest("r", "l"), Some(8));
        assert_eq!(fence.highest("r", "other"), Some(2));
        let mut ran = false;
        let refused = fence.write("r", "l", 7, || ran = true).unwrap_err();
        assert!(matches!(refused, FileFenceError::Stale(ref s) if s.highest == 8));
        assert!(!ran, "a refused write must not run");
        assert_eq!(fence.rejections().len(), 1);
        assert!(fence.write("r", "l", 8, || ()).is_ok());
    }

    #[test]
    fn a_torn_last_line_is_ignored_and_compacted_away() {
        let (_dir, path) = fence_path();
        FileFence::open(&path)
            .unwrap()
            .write("r", "l", 5, || ())
            .unwrap();
        // A crash mid-append of token 99: no newline, so never committed.
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"r\tl\t99").unwrap();
        drop(file);

        let fence = FileFence::open(&path).unwrap();
        assert_eq!(fence.highest("r", "l"), Some(5));
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{HEADER}r\tl\t5\n")
        );
        // The next append starts on a clean line and survives a restart.
        fence.write("r", "l", 6, || ()).unwrap();
        drop(fence);
        assert_eq!(FileFence::open(&path).unwrap().highest("r", "l"), Some(6));
    }

    #[test]
    fn open_compacts_to_one_record_per_lock() {
        let (_dir, path) = fence_path();
        let fence = FileFence::open(&path).unwrap();
        for token in 1..=20 {
            fence.write("r", "a", token, || ()).unwrap();
            fence.write("r", "b", token * 2, || ()).unwrap();
        }
        // Equal tokens are accepted without growing the file.
        let len = fs::metadata(&path).unwrap().len();
        fence.write("r", "a", 20, || ()).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().len(), len);
        drop(fence);

        FileFence::open(&path).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{HEADER}r\ta\t20\nr\tb\t40\n")
        );
    }

    #[test]
    fn names_with_tabs_newlines_and_backslashes_round_trip() {
        let (_dir, path) = fence_path();
        let (resource, lock) = ("db\ttable\\x", "lock\nname\\t");
        FileFence::open(&path)
            .unwrap()
            .write(resource, lock, 4, || ())
            .unwrap();
        let fence = FileFence::open(&path).unwrap();
        assert_eq!(fence.highest(resource, lock), Some(4));
        assert_eq!(fence.highest("db", "lock"), None);
    }

    #[test]
    fn a_file_of_a_newer_format_is_refused_naming_both_and_left_alone() {
        assert_eq!(HEADER, format!("{HEADER_PREFIX}{FILE_FORMAT}\n"));
        let (_dir, path) = fence_path();
        let newer = format!(
            "{HEADER_PREFIX}{}\nr\tl\t5\nwhatever v2 holds\n",
            FILE_FORMAT + 1
        );
        fs::write(&path, &newer).unwrap();
        let said = FileFence::open(&path).unwrap_err().to_string();
        assert!(
            said.contains(&format!("format v{}", FILE_FORMAT + 1))
                && said.contains(&format!("reads (v{FILE_FORMAT})")),
            "{said}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), newer, "not compacted");
    }

    #[test]
    fn a_malformed_complete_line_fails_open() {
        let (_dir, path) = fence_path();
        fs::write(&path, format!("{HEADER}r\tl\t5\nr\tl\tfive\nr\tl\t6\n")).unwrap();
        let err = FileFence::open(&path).unwrap_err();
        assert!(
            matches!(err, FileFenceError::Corrupt { line: 3, .. }),
            "{err}"
        );
        // The file is left as it was for someone to look at.
        assert!(fs::read_to_string(&path).unwrap().contains("five"));

        fs::write(&path, "some other file\n").unwrap();
        let err = FileFence::open(&path).unwrap_err();
        assert!(
            matches!(err, FileFenceError::Corrupt { line: 1, .. }),
            "{err}"
        );
    }

    #[test]
    fn escaping_is_reversible_and_rejects_bad_escapes() {
        for name in ["", "plain", "a\tb", "a\nb", "a\\b", "\\t", "é\t\\\n"] {
            let mut escaped = String::new();
            escape(name, &mut escaped);
            assert!(!escaped.contains(['\t', '\n']));
            assert_eq!(unescape(&escaped).as_deref(), Ok(name));
        }
        assert!(unescape("a\\").is_err());
        assert!(unescape("a\\x").is_err());
    }
}
