//! The server's log lines go to stderr through [`writer`], which holds the
//! lines written during a [`batched`] call (an apply, or a burst of the
//! per-lock lines' thread, [`crate::sinks::lock_lines`]) and writes them
//! with one `write` when it is done.
//!
//! **Why**: every grant and free is an info line (lock, lease, owner,
//! token), and the apply used to write them. Unbuffered stderr made each
//! line its own `write` syscall inside the state's write lock: a `perf
//! record` of a node under `bench --workload uncontended --clients 64` put
//! 6 % of the server's CPU in those writes and 4 % more in formatting the
//! lines (docs/DESIGN.md §6d, "Where a command's time goes"). Held, a batch of
//! about 25 commands writes its ~50 lines at once, after the state lock is
//! released, so a slow stderr (a pipe to a busy log collector) no longer
//! stalls readers of the state. Measured: the server's `write` calls fell
//! from 49,000 to 6,700 a second under that load; its CPU and the
//! throughput stayed the same within the noise. Lines keep their order; a
//! line written outside an apply goes straight out, as before; a
//! panicking apply still writes what it held.

use crate::held::{Held, Slot};
use std::cell::RefCell;
use std::io::{self, Write};

thread_local! {
    /// The lines held by this thread's open [`batched`] call, if any.
    static HELD: Slot<u8> = const { RefCell::new(None) };
}

/// This thread's held lines.
const LINES: Held<u8> = Held::new(&HELD);

/// The writer for the log subscriber (`with_writer(log_lines::writer)`).
pub fn writer() -> LineWriter {
    LineWriter
}

/// Writes log lines to stderr, or holds them during [`batched`].
pub struct LineWriter;

impl Write for LineWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if held(bytes) {
            return Ok(bytes.len());
        }
        io::stderr().write(bytes)
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if held(bytes) {
            return Ok(());
        }
        io::stderr().write_all(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// Runs `f`, holding the log lines this thread writes meanwhile, then
/// writes them to stderr at once.
pub fn batched<T>(f: impl FnOnce() -> T) -> T {
    batched_into(f, |lines| {
        // A log line that cannot be written is lost, as with plain stderr.
        let _ = io::stderr().lock().write_all(lines);
    })
}

/// [`batched`], handing the held lines to `out` (once, if any; not for a
/// call nested in another, whose outer call hands them on).
fn batched_into<T>(f: impl FnOnce() -> T, out: impl FnOnce(&[u8])) -> T {
    LINES.scope(f, |lines| out(&lines))
}

/// Appends `bytes` to this thread's held lines if a [`batched`] call is
/// open; says whether it did.
fn held(bytes: &[u8]) -> bool {
    LINES.add_with(|lines| lines.extend_from_slice(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(f: impl FnOnce()) -> Vec<Vec<u8>> {
        let mut outs = Vec::new();
        batched_into(f, |lines| outs.push(lines.to_vec()));
        outs
    }

    #[test]
    fn lines_written_in_a_batch_come_out_once_in_order() {
        let outs = collect(|| {
            writer().write_all(b"one\n").unwrap();
            writer().write_all(b"two\n").unwrap();
        });
        assert_eq!(outs, [b"one\ntwo\n".to_vec()]);
    }

    #[test]
    fn a_batch_without_lines_writes_nothing() {
        assert!(collect(|| ()).is_empty());
    }

    #[test]
    fn outside_a_batch_nothing_is_held() {
        assert!(!held(b"straight out\n"));
    }

    #[test]
    fn a_nested_batch_leaves_its_lines_to_the_outer_one() {
        let outs = collect(|| {
            writer().write_all(b"outer\n").unwrap();
            let inner = collect(|| writer().write_all(b"inner\n").unwrap());
            assert!(inner.is_empty(), "the inner call wrote {inner:?}");
        });
        assert_eq!(outs, [b"outer\ninner\n".to_vec()]);
        assert!(!held(b"after\n"), "the batch is closed");
    }

    #[test]
    fn a_panicking_batch_still_writes_what_it_held() {
        let mut outs = Vec::new();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            batched_into(
                || {
                    writer().write_all(b"before the panic\n").unwrap();
                    panic!("apply failed");
                },
                |lines| outs.push(lines.to_vec()),
            )
        }));
        assert!(panicked.is_err());
        assert_eq!(outs, [b"before the panic\n".to_vec()]);
        assert!(!held(b"after\n"), "the batch is closed");
    }
}
