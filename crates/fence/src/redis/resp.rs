//! A minimal RESP2 client: one TCP connection, one command at a time.
//!
//! It speaks only what the adapter and its tests need (`EVALSHA`,
//! `SCRIPT LOAD`, `EVAL`, `GET`, `HGETALL`, `LRANGE`, ...) — any command can
//! be sent, since a RESP2 request is just an array of bulk strings. Replies
//! are bounded ([`REPLY_BULK_BYTES_MAX`], [`REPLY_ARRAY_LEN_MAX`],
//! [`REPLY_DEPTH_MAX`]) so a confused or hostile server cannot make the
//! client allocate without limit, and every command has a deadline
//! ([`COMMAND_TIMEOUT_MS`]).

use super::FenceError;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Largest bulk string accepted in a reply.
pub const REPLY_BULK_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Most elements accepted in one reply array.
pub const REPLY_ARRAY_LEN_MAX: usize = 1 << 20;
/// Deepest nesting of arrays accepted in a reply.
pub const REPLY_DEPTH_MAX: usize = 4;
/// Longest status, error or integer line accepted in a reply.
pub const REPLY_LINE_BYTES_MAX: usize = 64 * 1024;
/// Deadline for connecting, and for one command's request and reply.
pub const COMMAND_TIMEOUT_MS: u64 = 5_000;

/// One RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Status(String),
    /// `-ERR ...`: the command failed; the connection is still usable.
    Error(String),
    /// `:42`
    Integer(i64),
    /// `$n` followed by n bytes; `None` for the nil bulk `$-1`.
    Bulk(Option<Vec<u8>>),
    /// `*n` followed by n replies; `None` for the nil array `*-1`.
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as UTF-8 text, if it is a status or non-nil bulk string.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Reply::Status(s) => Some(s),
            Reply::Bulk(Some(b)) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }
}

/// A connection to one Redis server.
#[derive(Debug)]
pub struct Connection {
    /// Buffered so reply lines are read without a syscall per byte.
    stream: BufReader<TcpStream>,
    /// Set after an I/O, protocol or timeout error: a reply may be half
    /// read, so the next reply could be misattributed. Reconnect instead.
    broken: bool,
}

impl Connection {
    /// Connects to `addr` (`host:port`).
    pub async fn connect(addr: &str) -> Result<Connection, FenceError> {
        let stream = deadline(TcpStream::connect(addr)).await??;
        stream.set_nodelay(true)?;
        Ok(Connection {
            stream: BufReader::new(stream),
            broken: false,
        })
    }

    /// Sends one command and reads its reply. An error reply is returned
    /// as [`Reply::Error`], not as `Err`: callers decide what it means.
    pub async fn command(&mut self, args: &[&[u8]]) -> Result<Reply, FenceError> {
        if self.broken {
            return Err(FenceError::Broken);
        }
        let request = encode(args);
        let reply = deadline(async {
            self.stream.get_mut().write_all(&request).await?;
            self.read_reply(0).await
        })
        .await
        .and_then(|reply| reply);
        self.broken = reply.is_err();
        reply
    }

    async fn read_reply(&mut self, depth: usize) -> Result<Reply, FenceError> {
        if depth > REPLY_DEPTH_MAX {
            return Err(protocol("reply nested too deeply"));
        }
        let line = self.read_line().await?;
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" => Ok(Reply::Status(rest.to_owned())),
            "-" => Ok(Reply::Error(rest.to_owned())),
            ":" => Ok(Reply::Integer(parse_int(rest)?)),
            "$" => match length(rest, REPLY_BULK_BYTES_MAX)? {
                None => Ok(Reply::Bulk(None)),
                Some(n) => {
                    let mut buf = vec![0; n + 2];
                    self.stream.read_exact(&mut buf).await?;
                    if !buf.ends_with(b"\r\n") {
                        return Err(protocol("bulk string not terminated by CRLF"));
                    }
                    buf.truncate(n);
                    Ok(Reply::Bulk(Some(buf)))
                }
            },
            "*" => match length(rest, REPLY_ARRAY_LEN_MAX)? {
                None => Ok(Reply::Array(None)),
                Some(n) => {
                    let mut items = Vec::with_capacity(n.min(1024));
                    for _ in 0..n {
                        items.push(Box::pin(self.read_reply(depth + 1)).await?);
                    }
                    Ok(Reply::Array(Some(items)))
                }
            },
            _ => Err(protocol(&format!("unknown reply type {kind:?}"))),
        }
    }

    /// One CRLF-terminated line, without the CRLF; never empty.
    async fn read_line(&mut self) -> Result<String, FenceError> {
        let mut line = Vec::new();
        let limit = (REPLY_LINE_BYTES_MAX + 2) as u64;
        (&mut self.stream)
            .take(limit)
            .read_until(b'\n', &mut line)
            .await?;
        if !line.ends_with(b"\r\n") {
            return Err(if line.is_empty() {
                FenceError::Io(std::io::ErrorKind::UnexpectedEof.into())
            } else {
                protocol("reply line too long or not terminated by CRLF")
            });
        }
        line.truncate(line.len() - 2);
        if line.is_empty() {
            return Err(protocol("empty reply line"));
        }
        String::from_utf8(line).map_err(|_| protocol("reply line is not UTF-8"))
    }
}

/// A request: an array of bulk strings.
fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A bulk or array length: `None` for -1 (nil), refused above `max`.
fn length(s: &str, max: usize) -> Result<Option<usize>, FenceError> {
    match parse_int(s)? {
        -1 => Ok(None),
        n if n >= 0 && (n as u64) <= max as u64 => Ok(Some(n as usize)),
        n => Err(protocol(&format!("length {n} out of range (max {max})"))),
    }
}

fn parse_int(s: &str) -> Result<i64, FenceError> {
    s.parse()
        .map_err(|_| protocol(&format!("bad integer {s:?}")))
}

fn protocol(what: &str) -> FenceError {
    FenceError::Protocol(what.to_owned())
}

/// Runs `f` under [`COMMAND_TIMEOUT_MS`].
async fn deadline<T>(f: impl std::future::Future<Output = T>) -> Result<T, FenceError> {
    tokio::time::timeout(Duration::from_millis(COMMAND_TIMEOUT_MS), f)
        .await
        .map_err(|_| FenceError::Timeout {
            timeout_ms: COMMAND_TIMEOUT_MS,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_an_array_of_bulk_strings() {
        assert_eq!(
            encode(&[b"GET", b"k y"]),
            b"*2\r\n$3\r\nGET\r\n$3\r\nk y\r\n".to_vec()
        );
    }

    #[test]
    fn lengths_are_bounded() {
        assert_eq!(length("-1", 10).unwrap(), None);
        assert_eq!(length("10", 10).unwrap(), Some(10));
        assert!(length("11", 10).is_err());
        assert!(length("-2", 10).is_err());
    }
}
