//! Output helpers: JSON documents (exactly one per `--json` invocation, on
//! stdout) and aligned human tables. Commands describe
//! *what* to print; a lock's shape is in `lock_view.rs`, and the wording of
//! durations, times and owners is the client library's (`show`).

use crate::exit::Exit;
use serde_json::Value;
use std::io::Write;

/// Writes to stdout (the crate's `print!` and `println!`). A reader that
/// went away (EPIPE: `leasehold events | head -1`, `status | true`) has all
/// it wanted: the command exits 0 at once, quietly, as `events --follow`
/// does; Rust ignores SIGPIPE, so std's `println!` would panic instead.
/// Sockets keep SIGPIPE ignored: hyper's vectored writes cannot ask for
/// MSG_NOSIGNAL.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    let written = std::io::stdout().lock().write_fmt(args);
    match written {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
            std::process::exit(i32::from(Exit::Ok.code()))
        }
        Err(error) => {
            eprintln!("error: cannot write to stdout: {error}");
            std::process::exit(i32::from(Exit::Other.code()))
        }
    }
}

/// Prints one JSON document on stdout.
pub fn print_json(value: &Value) {
    println!("{value}");
}

/// Renders rows as a table with columns padded to their widest cell.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                let pad = widths[c] - cell.chars().count();
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let rows = vec![
            vec!["A".to_owned(), "BB".to_owned(), "C".to_owned()],
            vec!["long".to_owned(), "x".to_owned(), "y".to_owned()],
        ];
        assert_eq!(table(&rows), "A     BB  C\nlong  x   y\n");
    }
}
