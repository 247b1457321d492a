//! Whether the command of `leasehold lock NAME -- CMD` can be run at all,
//! checked before the lock is acquired: a typo in CMD must not take a lock
//! (and make other holders wait) only to fail at `execve`. The lookup is
//! `execvp`'s: a name with a `/` is a path, any other is searched on PATH.
//! The spawn still reports what this check cannot see (a script's missing
//! interpreter, a race with the file changing).

use super::error::SpawnError;
use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Used by `execvp` when PATH is unset.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Ok if `program` names an executable file, else the error the spawn
/// would meet (127 not found, 126 not executable).
pub fn check_runnable(program: &OsStr) -> Result<(), SpawnError> {
    let shown = program.to_string_lossy().into_owned();
    let candidates: Vec<PathBuf> = if program.as_encoded_bytes().contains(&b'/') {
        vec![PathBuf::from(program)]
    } else {
        let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .collect()
    };
    let mut found_unexecutable = false;
    for candidate in &candidates {
        match executable(candidate) {
            Some(true) => return Ok(()),
            Some(false) => found_unexecutable = true,
            None => {}
        }
    }
    let errno = if found_unexecutable {
        libc::EACCES
    } else {
        libc::ENOENT
    };
    Err(SpawnError::classify(
        shown,
        io::Error::from_raw_os_error(errno),
    ))
}

/// Some(true) for an executable regular file, Some(false) for a file that
/// exists but cannot be run (a directory, no execute bit), None if absent.
fn executable(path: &Path) -> Option<bool> {
    let meta = std::fs::metadata(path).ok()?;
    Some(meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_commands_on_path_and_refuses_the_rest() {
        assert!(check_runnable(OsStr::new("sh")).is_ok());
        assert!(check_runnable(OsStr::new("/bin/sh")).is_ok());
        let missing = check_runnable(OsStr::new("no-such-command-leasehold")).unwrap_err();
        assert_eq!(missing.exit_code(), 127);
        let directory = check_runnable(OsStr::new("/tmp")).unwrap_err();
        assert_eq!(directory.exit_code(), 126);
    }
}
