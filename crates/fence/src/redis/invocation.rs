//! How to call the fencing script, as pure functions (no I/O): what
//! [`RedisFence`](super::RedisFence) sends and reads, public so another
//! client of the same keys (the Python adapter, `leasehold.fence.redis`)
//! sends byte for byte the same and refuses the same inputs with the same
//! words, instead of re-implementing the key layout and the checks.
//!
//! - [`invocation`]: one fenced write as the script's `KEYS` and `ARGV`,
//!   after checking the key, lock, token and value sizes.
//! - [`fence_key`] / [`rejections_key`]: where a reader finds the highest
//!   token and the rejection log.
//! - [`parse_rejection`]: one rejection-log record.

use super::{keys, FenceError, REJECTIONS_KEPT, TOKEN_MAX, VALUE_BYTES_MAX};
use crate::Rejection;
use std::borrow::Cow;

/// A fenced operation and its arguments, as the script takes them.
#[derive(Clone, Copy, Debug)]
pub enum Op<'a> {
    /// `SET key value`.
    Set(&'a [u8]),
    /// `HSET key field value`.
    Hset(&'a [u8], &'a [u8]),
    /// `DEL key`.
    Del,
}

/// One run of the script: `EVALSHA <sha> 3 <keys> <args>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation<'a> {
    /// `KEYS`: the data key, its fence key, its rejection log.
    pub keys: [Vec<u8>; 3],
    /// `ARGV`: lock, token, rejections kept, op name, op arguments.
    pub args: Vec<Cow<'a, [u8]>>,
}

impl Invocation<'_> {
    /// `KEYS` then `ARGV`, as `EVALSHA`'s trailing arguments after the
    /// key count (3).
    pub fn argv(&self) -> Vec<&[u8]> {
        let keys = self.keys.iter().map(Vec::as_slice);
        keys.chain(self.args.iter().map(AsRef::as_ref)).collect()
    }
}

/// The script's `KEYS` and `ARGV` for writing `op` to `key` with `token`
/// for `lock`, or why the write cannot be fenced: an invalid key or lock
/// ([`FenceError::InvalidKey`], [`FenceError::InvalidLock`]), a token above
/// [`TOKEN_MAX`] ([`FenceError::TokenOutOfRange`]) or a value or field over
/// [`VALUE_BYTES_MAX`] ([`FenceError::TooLarge`]). Nothing is sent then.
pub fn invocation<'a>(
    key: &'a str,
    lock: &'a str,
    token: u64,
    op: Op<'a>,
) -> Result<Invocation<'a>, FenceError> {
    keys::validate(key, lock)?;
    if token > TOKEN_MAX {
        return Err(FenceError::TokenOutOfRange { token });
    }
    let (name, operands): (&'static [u8], Vec<&'a [u8]>) = match op {
        Op::Set(value) => (b"SET", vec![value]),
        Op::Hset(field, value) => (b"HSET", vec![field, value]),
        Op::Del => (b"DEL", vec![]),
    };
    if let Some(big) = operands.iter().find(|a| a.len() > VALUE_BYTES_MAX) {
        return Err(FenceError::TooLarge { bytes: big.len() });
    }
    let mut args: Vec<Cow<'a, [u8]>> = vec![
        Cow::Borrowed(lock.as_bytes()),
        Cow::Owned(token.to_string().into_bytes()),
        Cow::Owned(REJECTIONS_KEPT.to_string().into_bytes()),
        Cow::Borrowed(name),
    ];
    args.extend(operands.into_iter().map(Cow::Borrowed));
    Ok(Invocation {
        keys: [
            key.as_bytes().to_vec(),
            keys::fence(key, lock),
            keys::rejections(key),
        ],
        args,
    })
}

/// The key holding the highest token accepted for (`key`, `lock`): a
/// decimal string, absent until the first accepted write.
pub fn fence_key(key: &str, lock: &str) -> Result<Vec<u8>, FenceError> {
    keys::validate(key, lock)?;
    Ok(keys::fence(key, lock))
}

/// The list of refused writes to `key` (any lock), newest first, each a
/// record for [`parse_rejection`]; at most [`REJECTIONS_KEPT`] are kept.
pub fn rejections_key(key: &str) -> Result<Vec<u8>, FenceError> {
    // Any valid lock name: only the key is checked.
    keys::validate(key, "-")?;
    Ok(keys::rejections(key))
}

/// The highest token a fence value holds (format v1: a bare decimal);
/// [`FenceError::NewerFormat`] for a value of a later format (`v<N>:...`),
/// [`FenceError::Protocol`] for anything else.
pub fn parse_fence_value(value: &[u8]) -> Result<u64, FenceError> {
    let text = std::str::from_utf8(value).unwrap_or_default();
    if let Some((version, _)) = text.strip_prefix('v').and_then(|rest| rest.split_once(':')) {
        if let Ok(found) = version.parse() {
            return Err(FenceError::NewerFormat { found });
        }
    }
    text.parse().map_err(|_| {
        FenceError::Protocol(format!(
            "a fence key holds {:?}, not a token",
            String::from_utf8_lossy(value)
        ))
    })
}

/// One record of `key`'s rejection log, `presented highest at_unix_ms
/// lock` (the lock last, so it may hold spaces); `None` if it is not one.
pub fn parse_rejection(key: &str, record: &[u8]) -> Option<Rejection> {
    let text = std::str::from_utf8(record).ok()?;
    let mut parts = text.splitn(4, ' ');
    let mut number = || parts.next().and_then(|p| p.parse::<u64>().ok());
    let (presented, highest, at) = (number()?, number()?, number()?);
    Some(Rejection {
        resource: key.to_owned(),
        lock: parts.next()?.to_owned(),
        presented,
        highest,
        at_unix_ms: i64::try_from(at).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_value_is_a_decimal_and_a_later_format_is_named() {
        assert_eq!(parse_fence_value(b"42").unwrap(), 42);
        assert!(matches!(
            parse_fence_value(b"v2:42;x"),
            Err(FenceError::NewerFormat { found: 2 })
        ));
        assert!(matches!(
            parse_fence_value(b"forty-two"),
            Err(FenceError::Protocol(_))
        ));
    }

    #[test]
    fn a_write_is_the_key_its_fence_its_log_then_the_scripts_argv() {
        let call = invocation("k", "l", 7, Op::Hset(b"f", b"v")).unwrap();
        let argv = call.argv();
        let text: Vec<&str> = argv
            .iter()
            .map(|a| std::str::from_utf8(a).unwrap())
            .collect();
        let kept = REJECTIONS_KEPT.to_string();
        let expected = [
            "k",
            "{k}:fence:1:k:l",
            "{k}:fence-rejections:1:k",
            "l",
            "7",
            kept.as_str(),
            "HSET",
            "f",
            "v",
        ];
        assert_eq!(text, expected);
        assert_eq!(invocation("k", "l", 7, Op::Del).unwrap().args.len(), 4);
    }

    #[test]
    fn bad_inputs_are_refused_before_anything_is_sent() {
        let too_big = vec![0_u8; VALUE_BYTES_MAX + 1];
        let refused = [
            invocation("", "l", 1, Op::Del),
            invocation("k", "", 1, Op::Del),
            invocation("k", "l", TOKEN_MAX + 1, Op::Del),
            invocation("k", "l", 1, Op::Set(&too_big)),
        ];
        for result in refused {
            assert!(result.is_err(), "{result:?}");
        }
        assert!(invocation("k", "l", TOKEN_MAX, Op::Set(b"")).is_ok());
        assert!(fence_key("a}b", "l").is_err());
        assert!(rejections_key("").is_err());
    }

    #[test]
    fn parses_rejection_records() {
        let r = parse_rejection("k", b"3 7 1700000000123 my lock").unwrap();
        assert_eq!((r.presented, r.highest, r.lock.as_str()), (3, 7, "my lock"));
        assert_eq!(
            (r.resource.as_str(), r.at_unix_ms),
            ("k", 1_700_000_000_123)
        );
        assert!(parse_rejection("k", b"3 7").is_none());
        assert!(parse_rejection("k", b"3 x 1 l").is_none());
    }
}
