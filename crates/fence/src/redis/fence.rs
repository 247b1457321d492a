//! [`RedisFence`]: fenced `SET` / `HSET` / `DEL` through one Lua script.

use super::invocation::{
    fence_key, invocation, parse_fence_value, parse_rejection, rejections_key, Op,
};
use super::resp::{Connection, Reply};
use super::{FenceError, REJECTIONS_KEPT, SCRIPT};
use crate::{Audit, Rejection, StaleToken};

/// One connection to Redis that writes only with a fencing token the
/// server-side script accepts. Not shared between tasks: open one per
/// task (commands on one connection are answered in order).
#[derive(Debug)]
pub struct RedisFence {
    /// The connection the script runs over.
    conn: Connection,
    /// SHA1 of [`SCRIPT`] as the server reported it at `SCRIPT LOAD`, so
    /// each write sends 40 bytes instead of the script text.
    sha: String,
    /// Refusals seen by this client, counted and logged as "redis".
    audit: Audit,
}

impl RedisFence {
    /// Connects to `addr` (`host:port`) and loads the script.
    pub async fn connect(addr: &str) -> Result<RedisFence, FenceError> {
        let mut conn = Connection::connect(addr).await?;
        let sha = load_script(&mut conn).await?;
        Ok(RedisFence {
            conn,
            sha,
            audit: Audit::new("redis"),
        })
    }

    /// `SET key value`, if `token` is at least the highest accepted for
    /// (`key`, `lock`).
    pub async fn set(
        &mut self,
        key: &str,
        lock: &str,
        token: u64,
        value: impl AsRef<[u8]>,
    ) -> Result<(), FenceError> {
        self.fenced(key, lock, token, Op::Set(value.as_ref())).await
    }

    /// `HSET key field value`, fenced like [`RedisFence::set`].
    pub async fn hset(
        &mut self,
        key: &str,
        lock: &str,
        token: u64,
        field: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<(), FenceError> {
        let op = Op::Hset(field.as_ref(), value.as_ref());
        self.fenced(key, lock, token, op).await
    }

    /// `DEL key`, fenced like [`RedisFence::set`]: a stale delete deletes
    /// nothing. The fence itself stays, so a later lower token is still
    /// refused after the data is gone.
    pub async fn del(&mut self, key: &str, lock: &str, token: u64) -> Result<(), FenceError> {
        self.fenced(key, lock, token, Op::Del).await
    }

    /// The highest token accepted for (`key`, `lock`), if any.
    pub async fn highest(&mut self, key: &str, lock: &str) -> Result<Option<u64>, FenceError> {
        match self.conn.command(&[b"GET", &fence_key(key, lock)?]).await? {
            Reply::Bulk(None) => Ok(None),
            Reply::Bulk(Some(value)) => parse_fence_value(&value).map(Some),
            reply => Err(unexpected(&reply)),
        }
    }

    /// The most recent refused writes to `key` (any lock), newest first,
    /// at most `limit` (and at most [`REJECTIONS_KEPT`] are kept).
    /// `at_unix_ms` is the Redis server's clock at the refusal.
    pub async fn rejections(
        &mut self,
        key: &str,
        limit: usize,
    ) -> Result<Vec<Rejection>, FenceError> {
        let log = rejections_key(key)?;
        let limit = limit.min(REJECTIONS_KEPT);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let stop = (limit - 1).to_string();
        let reply = self
            .conn
            .command(&[b"LRANGE", &log, b"0", stop.as_bytes()])
            .await?;
        match reply {
            Reply::Array(Some(items)) => items.iter().map(|r| rejection(key, r)).collect(),
            other => Err(unexpected(&other)),
        }
    }

    /// Refusals this client has seen.
    pub fn audit(&self) -> &Audit {
        &self.audit
    }

    async fn fenced(
        &mut self,
        key: &str,
        lock: &str,
        token: u64,
        op: Op<'_>,
    ) -> Result<(), FenceError> {
        let call = invocation(key, lock, token, op)?;
        let reply = self.eval(&call.argv()).await?;
        match outcome(&reply)? {
            (true, _) => Ok(()),
            (false, highest) => {
                let stale = StaleToken {
                    lock: lock.to_owned(),
                    presented: token,
                    highest,
                };
                // Assert the script's half of the rule here too: a refusal
                // of a token at or above the highest would be a script bug.
                assert!(token < highest, "script refused {token} >= {highest}");
                self.audit.record(key, &stale);
                Err(stale.into())
            }
        }
    }

    /// `EVALSHA sha 3 <argv>`; on `NOSCRIPT` (the server restarted, failed
    /// over or ran `SCRIPT FLUSH`) loads the script again and retries once.
    async fn eval(&mut self, argv: &[&[u8]]) -> Result<Reply, FenceError> {
        let mut reply = self.evalsha(argv).await?;
        if matches!(&reply, Reply::Error(e) if e.starts_with("NOSCRIPT")) {
            self.sha = load_script(&mut self.conn).await?;
            reply = self.evalsha(argv).await?;
        }
        match reply {
            Reply::Error(e) => Err(match script_newer(&e) {
                Some(found) => FenceError::NewerFormat { found },
                None => FenceError::Server(e),
            }),
            reply => Ok(reply),
        }
    }

    async fn evalsha(&mut self, argv: &[&[u8]]) -> Result<Reply, FenceError> {
        let mut command: Vec<&[u8]> = vec![b"EVALSHA", self.sha.as_bytes(), b"3"];
        command.extend_from_slice(argv);
        self.conn.command(&command).await
    }
}

async fn load_script(conn: &mut Connection) -> Result<String, FenceError> {
    match conn
        .command(&[b"SCRIPT", b"LOAD", SCRIPT.as_bytes()])
        .await?
    {
        Reply::Error(e) => Err(FenceError::Server(e)),
        reply => reply
            .as_text()
            .map(str::to_owned)
            .ok_or_else(|| unexpected(&reply)),
    }
}

/// The format named by the script's `LEASEHOLD_NEWER` refusal.
fn script_newer(error: &str) -> Option<u32> {
    let rest = error.strip_prefix("LEASEHOLD_NEWER the fence key is format v")?;
    rest.split(',').next()?.parse().ok()
}

/// The script's `{1, token}` / `{0, highest}`.
fn outcome(reply: &Reply) -> Result<(bool, u64), FenceError> {
    match reply {
        Reply::Array(Some(items)) => match items.as_slice() {
            [Reply::Integer(done @ (0 | 1)), token] => Ok((*done == 1, token_in(token)?)),
            _ => Err(unexpected(reply)),
        },
        _ => Err(unexpected(reply)),
    }
}

fn token_in(reply: &Reply) -> Result<u64, FenceError> {
    reply
        .as_text()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| unexpected(reply))
}

/// One rejection-log entry: `presented highest at_unix_ms lock`.
fn rejection(key: &str, reply: &Reply) -> Result<Rejection, FenceError> {
    let text = reply.as_text().ok_or_else(|| unexpected(reply))?;
    parse_rejection(key, text.as_bytes()).ok_or_else(|| unexpected(reply))
}

fn unexpected(reply: &Reply) -> FenceError {
    FenceError::Protocol(format!("unexpected reply {reply:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Reply {
        Reply::Bulk(Some(s.as_bytes().to_vec()))
    }

    #[test]
    fn parses_outcomes_and_rejection_records() {
        let refused = Reply::Array(Some(vec![Reply::Integer(0), bulk("7")]));
        assert_eq!(outcome(&refused).unwrap(), (false, 7));
        assert!(outcome(&Reply::Integer(1)).is_err());
        let r = rejection("k", &bulk("3 7 1700000000123 my lock")).unwrap();
        assert_eq!((r.presented, r.highest, r.lock.as_str()), (3, 7, "my lock"));
        assert_eq!(r.at_unix_ms, 1_700_000_000_123);
        assert!(rejection("k", &bulk("3 7")).is_err());
    }
}
