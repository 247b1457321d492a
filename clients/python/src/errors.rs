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
    let class = match fill(&attrs, error) {
        Ok(class) => class,
        Err(failed) => return failed,
    };
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

/// Sets `error`'s fields on `attrs`; returns the class name.
fn fill(attrs: &Bound<'_, PyDict>, error: &Error) -> PyResult<&'static str> {
    Ok(match error {
        Error::InvalidArgument { field, reason } => {
            attrs.set_item("field", field)?;
            attrs.set_item("detail", reason)?;
            "InvalidArgument"
        }
        Error::Busy { name, holder_token } => {
            attrs.set_item("name", name)?;
            attrs.set_item("holder_token", holder_token.map(|t| t.0))?;
            "Busy"
        }
        Error::WaitTimeout { name, waited } => {
            attrs.set_item("name", name)?;
            attrs.set_item("waited", waited.as_secs_f64())?;
            "WaitTimeout"
        }
        Error::LeaseNotFound { lease } => {
            attrs.set_item("lease", lease.0)?;
            "LeaseNotFound"
        }
        Error::LeaseExpired { lease } => {
            attrs.set_item("lease", lease.0)?;
            "LeaseExpired"
        }
        Error::NotHolder {
            name,
            holder_token,
            lease,
            token,
        } => {
            attrs.set_item("name", name)?;
            attrs.set_item("holder_token", holder_token.map(|t| t.0))?;
            attrs.set_item("lease", lease.map(|l| l.0))?;
            attrs.set_item("token", token.map(|t| t.0))?;
            "NotHolder"
        }
        Error::NoSuchLock { name, nearby } => {
            attrs.set_item("name", name)?;
            attrs.set_item("nearby", nearby.clone())?;
            "NoSuchLock"
        }
        Error::AlreadyHeld { name } => {
            attrs.set_item("name", name)?;
            "AlreadyHeld"
        }
        Error::ResourceExhausted { limit, .. } => {
            attrs.set_item("limit", limit)?;
            "ResourceExhausted"
        }
        Error::Unavailable { .. } => "Unavailable",
        Error::Timeout { what, after } => {
            attrs.set_item("call", *what)?;
            attrs.set_item("after", after.as_secs_f64())?;
            "Timeout"
        }
        Error::Lost(lost) => {
            fill_lost(attrs, lost)?;
            "LockLost"
        }
        Error::StaleToken {
            key,
            lock,
            presented,
            highest,
            ..
        } => {
            attrs.set_item("key", key)?;
            attrs.set_item("lock", lock)?;
            attrs.set_item("presented", presented.0)?;
            attrs.set_item("highest", highest.0)?;
            "StaleToken"
        }
        Error::Unfenced { name, .. } => {
            attrs.set_item("name", name)?;
            "Unfenced"
        }
        Error::NotLeader {
            leader,
            leader_addr,
            ..
        } => {
            attrs.set_item("leader", *leader)?;
            attrs.set_item("leader_addr", leader_addr.clone())?;
            "NotLeader"
        }
        Error::PermissionDenied {
            principal,
            verb,
            prefix,
            ..
        } => {
            attrs.set_item("principal", principal)?;
            attrs.set_item("verb", verb)?;
            attrs.set_item("prefix", prefix)?;
            "PermissionDenied"
        }
        Error::Unauthenticated { .. } => "Unauthenticated",
        Error::Internal { .. } => "Internal",
        Error::Server { .. } => "ServerError",
    })
}

fn fill_lost(attrs: &Bound<'_, PyDict>, lost: &LockLost) -> PyResult<()> {
    attrs.set_item("lease", lost.lease.0)?;
    attrs.set_item("lock", lost.lock.as_ref().map(|name| name.to_string()))?;
    attrs.set_item("cause", lost.cause.label())?;
    attrs.set_item("voluntary", lost.cause.is_voluntary())?;
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
