//! Rust errors as Python exceptions: the one place that picks the class of
//! `leasehold.errors` for each [`Error`] variant and hands over its fields
//! as attributes. The classes are Python's (so users can subclass and
//! pickle them); the table is here, next to the enum it must cover, so a
//! new variant is a compile error until it has its class.

use leasehold_client::{Error, LockLost};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The Python exception for `error`.
pub fn to_py(py: Python<'_>, error: &Error) -> PyErr {
    let attrs = PyDict::new(py);
    if let Err(failed) = fill(&attrs, error) {
        return failed;
    }
    let class = class_of(error);
    let reason = match error {
        Error::Server { reason, .. } => Some(reason.clone()),
        other => other.reason().map(|reason| reason.as_str().to_owned()),
    };
    instantiate(py, class, &sentence(error), reason, attrs)
}

/// The error's sentence, in Python's words where the Rust client's name a
/// Rust method.
fn sentence(error: &Error) -> String {
    match error {
        Error::Busy { name, holder_token } => format!(
            "lock {name} is busy (held under token {}); pass wait=SECONDS to queue for it",
            holder_token.map_or_else(|| "unknown".to_owned(), |t| t.to_string())
        ),
        other => other.to_string(),
    }
}

/// The Python `LockLost` for a loss reported outside an `Error`.
pub fn lost_to_py(py: Python<'_>, lost: &LockLost) -> PyErr {
    let attrs = PyDict::new(py);
    if let Err(failed) = fill_lost(&attrs, lost) {
        return failed;
    }
    instantiate(py, "LockLost", &lost.to_string(), None, attrs)
}

/// The exception instance itself (for callbacks, which receive it).
pub fn lost_value(py: Python<'_>, lost: &LockLost) -> Py<PyAny> {
    lost_to_py(py, lost).into_value(py).into_any()
}

/// `key => value` pairs set on `attrs`.
macro_rules! set {
    ($attrs:expr; $($key:literal => $value:expr),+ $(,)?) => {{
        $($attrs.set_item($key, $value)?;)+
    }};
}

/// The `leasehold.errors` class of each variant: exhaustive, so a new
/// variant does not compile until it has its class.
fn class_of(error: &Error) -> &'static str {
    match error {
        Error::InvalidArgument { .. } => "InvalidArgument",
        Error::Busy { .. } => "Busy",
        Error::WaitTimeout { .. } => "WaitTimeout",
        Error::LeaseNotFound { .. } => "LeaseNotFound",
        Error::LeaseExpired { .. } => "LeaseExpired",
        Error::NotHolder { .. } => "NotHolder",
        Error::NoSuchLock { .. } => "NoSuchLock",
        Error::AlreadyHeld { .. } => "AlreadyHeld",
        Error::ResourceExhausted { .. } => "ResourceExhausted",
        Error::Unavailable { .. } => "Unavailable",
        Error::Timeout { .. } => "Timeout",
        Error::Lost(_) => "LockLost",
        Error::StaleToken { .. } => "StaleToken",
        Error::Unfenced { .. } => "Unfenced",
        Error::NotLeader { .. } => "NotLeader",
        Error::PermissionDenied { .. } => "PermissionDenied",
        Error::Unauthenticated { .. } => "Unauthenticated",
        Error::Internal { .. } => "Internal",
        Error::Server { .. } => "ServerError",
    }
}

/// Sets `error`'s fields on `attrs` (its class is [`class_of`]'s).
fn fill(attrs: &Bound<'_, PyDict>, error: &Error) -> PyResult<()> {
    let token = |token: &Option<leasehold_client::Token>| token.map(|t| t.0);
    match error {
        Error::InvalidArgument { field, reason } => {
            set!(attrs; "field" => field, "detail" => reason);
        }
        Error::Busy { name, holder_token } => {
            set!(attrs; "name" => name, "holder_token" => token(holder_token));
        }
        Error::WaitTimeout { name, waited } => {
            set!(attrs; "name" => name, "waited" => waited.as_secs_f64());
        }
        Error::LeaseNotFound { lease } => {
            set!(attrs; "lease" => lease.0);
        }
        Error::LeaseExpired { lease } => {
            set!(attrs; "lease" => lease.0);
        }
        Error::NotHolder {
            name,
            holder_token,
            lease,
            token: presented,
        } => {
            set!(attrs; "name" => name, "holder_token" => token(holder_token),
                 "lease" => lease.map(|l| l.0), "token" => token(presented));
        }
        Error::NoSuchLock { name, nearby } => {
            set!(attrs; "name" => name, "nearby" => nearby.clone());
        }
        Error::AlreadyHeld { name } => {
            set!(attrs; "name" => name);
        }
        Error::ResourceExhausted { limit, .. } => {
            set!(attrs; "limit" => limit);
        }
        Error::Timeout { what, after } => {
            set!(attrs; "call" => *what, "after" => after.as_secs_f64());
        }
        Error::Lost(lost) => {
            fill_lost(attrs, lost)?;
        }
        Error::StaleToken {
            key,
            lock,
            presented,
            highest,
            ..
        } => {
            set!(attrs; "key" => key, "lock" => lock, "presented" => presented.0, "highest" => highest.0);
        }
        Error::Unfenced { name, .. } => {
            set!(attrs; "name" => name);
        }
        Error::NotLeader {
            leader,
            leader_addr,
            ..
        } => {
            set!(attrs; "leader" => *leader, "leader_addr" => leader_addr.clone());
        }
        Error::PermissionDenied {
            principal,
            verb,
            prefix,
            ..
        } => {
            set!(attrs; "principal" => principal, "verb" => verb, "prefix" => prefix);
        }
        Error::Unavailable { .. }
        | Error::Unauthenticated { .. }
        | Error::Internal { .. }
        | Error::Server { .. } => {}
    }
    Ok(())
}

fn fill_lost(attrs: &Bound<'_, PyDict>, lost: &LockLost) -> PyResult<()> {
    set!(attrs; "lease" => lost.lease.0, "lock" => lost.lock.as_ref().map(|name| name.to_string()),
         "cause" => lost.cause.label(), "voluntary" => lost.cause.is_voluntary());
    Ok(())
}

/// `leasehold.errors.<class>(message, reason=..., **attrs)` as a `PyErr`
/// (or the error that stopped making it).
fn instantiate(
    py: Python<'_>,
    class: &str,
    message: &str,
    reason: Option<String>,
    attrs: Bound<'_, PyDict>,
) -> PyErr {
    let made = attrs.set_item("reason", reason).and_then(|()| {
        py.import("leasehold.errors")?
            .getattr(class)?
            .call((message,), Some(&attrs))
    });
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(failed) => failed,
    }
}
