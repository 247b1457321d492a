//! The fencing adapters' shared parts, for `leasehold.fence`: the
//! PostgreSQL schema and statements, the Redis script and how to call it,
//! straight from `leasehold-fence` (one copy of each, used by the Rust
//! adapters and the Python ones alike). Pure: no I/O here; the Python
//! adapters send these through psycopg and redis-py.
//!
//! Names this adds to `leasehold._native` (for `_native.pyi`):
//!
//! ```text
//! POSTGRES_MIGRATION: str          # migrations/postgres/*.sql, in order
//! POSTGRES_UPSERT: str             # statements::*, with %s placeholders
//! POSTGRES_HIGHEST: str
//! POSTGRES_RECORD_REJECTION: str
//! POSTGRES_REJECTIONS: str
//! POSTGRES_TOKEN_MAX: int          # i64::MAX
//! REDIS_SCRIPT: str                # fence.lua
//! REDIS_TOKEN_MAX: int             # 2**53
//! REDIS_REJECTIONS_KEPT: int
//! def postgres_token(token: int) -> int: ...
//! def redis_invocation(key: str, lock: str, token: int, op: str,
//!                      operands: Sequence[bytes]) -> tuple[list[bytes], list[bytes]]: ...
//! def redis_fence_key(key: str, lock: str) -> bytes: ...
//! def redis_rejections_key(key: str) -> bytes: ...
//! def redis_parse_rejection(key: str, record: bytes) -> tuple[str, str, int, int, int]: ...
//! def redis_parse_fence(value: bytes) -> int: ...
//! def stale_token(resource: str, lock: str, presented: int, highest: int) -> StaleToken: ...
//! ```
//!
//! The checks raise `leasehold.errors.InvalidArgument` (its `field` the
//! argument, its `detail` the Rust adapter's sentence naming the limit),
//! through the client's one error table (`errors.rs`).

use crate::errors;
use leasehold_client::{Error, Token};
use leasehold_fence::postgres::{self, statements};
use leasehold_fence::redis::{self, invocation::Op, FenceError};
use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A Python `list[bytes]`.
type ByteStrings<'py> = Vec<Bound<'py, PyBytes>>;

/// Adds the fence constants and functions to the module.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("POSTGRES_MIGRATION", postgres::MIGRATIONS)?;
    let sql = [
        ("POSTGRES_UPSERT", statements::UPSERT),
        ("POSTGRES_HIGHEST", statements::HIGHEST),
        ("POSTGRES_RECORD_REJECTION", statements::RECORD_REJECTION),
        ("POSTGRES_REJECTIONS", statements::REJECTIONS),
    ];
    for (name, statement) in sql {
        module.add(name, statements::with_format_placeholders(statement))?;
    }
    module.add("POSTGRES_TOKEN_MAX", postgres::TOKEN_MAX)?;
    module.add("REDIS_SCRIPT", redis::SCRIPT)?;
    module.add("REDIS_TOKEN_MAX", redis::TOKEN_MAX)?;
    module.add("REDIS_REJECTIONS_KEPT", redis::REJECTIONS_KEPT)?;
    module.add_function(wrap_pyfunction!(postgres_token, module)?)?;
    module.add_function(wrap_pyfunction!(redis_invocation, module)?)?;
    module.add_function(wrap_pyfunction!(redis_parse_fence, module)?)?;
    module.add_function(wrap_pyfunction!(redis_fence_key, module)?)?;
    module.add_function(wrap_pyfunction!(redis_rejections_key, module)?)?;
    module.add_function(wrap_pyfunction!(redis_parse_rejection, module)?)?;
    module.add_function(wrap_pyfunction!(stale_token, module)?)?;
    Ok(())
}

/// `token` as the PostgreSQL adapter stores it (bigint), or
/// `InvalidArgument` naming `TOKEN_MAX`, as the Rust adapter refuses it.
#[pyfunction]
fn postgres_token(py: Python<'_>, token: &Bound<'_, PyAny>) -> PyResult<i64> {
    let token = token_arg(py, token)?;
    postgres::token_to_sql(token).map_err(|error| invalid(py, "token", &error))
}

/// The fencing script's `(KEYS, ARGV)` for one write: `op` is `SET` (one
/// operand: the value), `HSET` (field, value) or `DEL` (none). Raises
/// `InvalidArgument` for a key, lock, token or operand the Rust adapter
/// would refuse, naming the limit.
#[pyfunction]
fn redis_invocation<'py>(
    py: Python<'py>,
    key: &str,
    lock: &str,
    token: &Bound<'py, PyAny>,
    op: &str,
    operands: Vec<Bound<'py, PyBytes>>,
) -> PyResult<(ByteStrings<'py>, ByteStrings<'py>)> {
    let token = token_arg(py, token)?;
    let operands: Vec<&[u8]> = operands.iter().map(|b| b.as_bytes()).collect();
    let op = match (op, operands.as_slice()) {
        ("SET", [value]) => Op::Set(value),
        ("HSET", [field, value]) => Op::Hset(field, value),
        ("DEL", []) => Op::Del,
        _ => {
            let reason = format!(
                "{op} with {} operand(s): the fenced ops are SET (value), HSET (field, value) and DEL (none)",
                operands.len()
            );
            return Err(invalid_field(py, "op", reason));
        }
    };
    let call = redis::invocation(key, lock, token, op).map_err(|e| redis_invalid(py, &e))?;
    let bytes = |items: &mut dyn Iterator<Item = &[u8]>| -> ByteStrings<'py> {
        items.map(|item| PyBytes::new(py, item)).collect()
    };
    let keys = bytes(&mut call.keys.iter().map(Vec::as_slice));
    let args = bytes(&mut call.args.iter().map(AsRef::as_ref));
    Ok((keys, args))
}

/// The key holding the highest token accepted for (`key`, `lock`).
#[pyfunction]
fn redis_fence_key<'py>(py: Python<'py>, key: &str, lock: &str) -> PyResult<Bound<'py, PyBytes>> {
    let fence = redis::invocation::fence_key(key, lock).map_err(|e| redis_invalid(py, &e))?;
    Ok(PyBytes::new(py, &fence))
}

/// The list of refused writes to `key`, newest first.
#[pyfunction]
fn redis_rejections_key<'py>(py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyBytes>> {
    let log = redis::invocation::rejections_key(key).map_err(|e| redis_invalid(py, &e))?;
    Ok(PyBytes::new(py, &log))
}

/// The highest token a fence value holds; `ValueError` naming both formats
/// for a value of a later format, or saying what it holds otherwise.
#[pyfunction]
fn redis_parse_fence(value: &[u8]) -> PyResult<u64> {
    redis::invocation::parse_fence_value(value).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// One rejection-log record of `key` as `(resource, lock, presented,
/// highest, at_unix_ms)`; `ValueError` if it is not one.
#[pyfunction]
fn redis_parse_rejection(key: &str, record: &[u8]) -> PyResult<(String, String, u64, u64, i64)> {
    let parsed = redis::invocation::parse_rejection(key, record).ok_or_else(|| {
        PyValueError::new_err(format!(
            "not a fence rejection record (\"presented highest at_unix_ms lock\"): {:?}",
            String::from_utf8_lossy(record)
        ))
    })?;
    Ok((
        parsed.resource,
        parsed.lock,
        parsed.presented,
        parsed.highest,
        parsed.at_unix_ms,
    ))
}

/// The `leasehold.errors.StaleToken` for a refused write (to raise), with
/// the Rust adapters' sentence.
#[pyfunction]
fn stale_token(
    py: Python<'_>,
    resource: &str,
    lock: &str,
    presented: u64,
    highest: u64,
) -> Py<PyAny> {
    let stale = leasehold_fence::StaleToken {
        lock: lock.to_owned(),
        presented,
        highest,
    };
    let error = Error::StaleToken {
        key: resource.to_owned(),
        lock: stale.lock.clone(),
        presented: Token(presented),
        highest: Token(highest),
        message: stale.to_string(),
    };
    errors::to_py(py, &error).into_value(py).into_any()
}

/// A token argument as `u64`; an int outside it is `InvalidArgument`.
fn token_arg(py: Python<'_>, token: &Bound<'_, PyAny>) -> PyResult<u64> {
    token.extract::<u64>().map_err(|error| {
        if error.is_instance_of::<PyOverflowError>(py) {
            let reason =
                format!("{token} is not a fencing token: tokens are integers in 0..=u64::MAX");
            invalid_field(py, "token", reason)
        } else {
            error
        }
    })
}

/// A refusal of the Redis adapter's checks as `InvalidArgument`.
fn redis_invalid(py: Python<'_>, error: &FenceError) -> PyErr {
    let field = match error {
        FenceError::InvalidKey { .. } => "key",
        FenceError::InvalidLock { .. } => "lock",
        FenceError::TokenOutOfRange { .. } => "token",
        FenceError::TooLarge { .. } => "value",
        // The pure checks return nothing else; say so rather than guess.
        other => return PyRuntimeError::new_err(other.to_string()),
    };
    invalid(py, field, error)
}

fn invalid(py: Python<'_>, field: &str, error: &dyn std::error::Error) -> PyErr {
    invalid_field(py, field, error.to_string())
}

fn invalid_field(py: Python<'_>, field: &str, reason: String) -> PyErr {
    let error = Error::InvalidArgument {
        field: field.to_owned(),
        reason,
    };
    errors::to_py(py, &error)
}
