//! `CliError`: what a failed command reports, as an exit code (see
//! [`crate::exit`]) and one sentence for stderr. Every error from the
//! service arrives as a typed [`leasehold_client::Error`]; [`exit_for`] is
//! the one table from those to exit codes (exhaustive on the server's
//! typed [`Reason`]), and the sentence is the error's own (the client
//! library words it once, for every caller).

use crate::exit::Exit;
use leasehold_client::{Error, Reason};

/// A failed command: how to exit and what to tell the user.
#[derive(Debug)]
pub struct CliError {
    /// The exit code.
    pub exit: Exit,
    /// One sentence naming the cause, printed to stderr.
    pub message: String,
    /// The cause as a word for scripts (`--json` errors' `reason`): the
    /// server's reason (`Busy`, `NotHolder`, ...), the client's own
    /// (`Timeout`, `AlreadyHeld`, `LockLost`), else the exit code's name.
    pub reason: String,
}

impl CliError {
    /// An error with an explicit exit code.
    pub fn new(exit: Exit, message: impl Into<String>) -> CliError {
        CliError {
            exit,
            message: message.into(),
            reason: exit.name().to_owned(),
        }
    }

    /// A usage error (exit 2) found by the CLI itself.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::new(Exit::Usage, message)
    }
}

/// The exit code of a failed call: the one table. The server's reason
/// decides when there is one; then the errors the client finds itself.
pub fn exit_for(error: &Error) -> Exit {
    match error.reason() {
        Some(reason) => exit_for_reason(reason),
        None => match error {
            Error::AlreadyHeld { .. } => Exit::Ownership,
            Error::Timeout { .. } => Exit::Unavailable,
            Error::Lost(_) => Exit::LockLost,
            // A reason newer than this build.
            _ => Exit::Other,
        },
    }
}

/// The exit code of each server reason.
fn exit_for_reason(reason: Reason) -> Exit {
    match reason {
        Reason::InvalidArgument => Exit::Usage,
        Reason::Busy | Reason::WaitTimeout => Exit::Busy,
        // A fenced write under a stale token, a force release of an
        // unfenced holder without --allow-unfenced: ownership, too.
        Reason::NotHolder
        | Reason::NoSuchLock
        | Reason::LeaseNotFound
        | Reason::LeaseExpired
        | Reason::StaleToken
        | Reason::Unfenced => Exit::Ownership,
        Reason::Unavailable | Reason::NotLeader => Exit::Unavailable,
        Reason::ResourceExhausted | Reason::Internal => Exit::Other,
        Reason::PermissionDenied | Reason::Unauthenticated => Exit::Permission,
    }
}

impl From<Error> for CliError {
    fn from(error: Error) -> CliError {
        let reason = match (&error, error.reason()) {
            (_, Some(reason)) => reason.as_str().to_owned(),
            (Error::Server { reason, .. }, None) => reason.clone(),
            (Error::AlreadyHeld { .. }, None) => "AlreadyHeld".to_owned(),
            (Error::Timeout { .. }, None) => "Timeout".to_owned(),
            (Error::Lost(_), None) => "LockLost".to_owned(),
            (_, None) => exit_for(&error).name().to_owned(),
        };
        CliError {
            reason,
            ..CliError::new(exit_for(&error), cli_sentence(&error))
        }
    }
}

/// The error's sentence as a shell user acts on it: the library's, except
/// where it names a library call (a busy name's hint is the `--wait` flag).
fn cli_sentence(error: &Error) -> String {
    match error {
        Error::Busy { name, holder_token } => {
            let held = holder_token.map_or("held".to_owned(), |t| format!("held under token {t}"));
            format!("{name} is busy ({held}); pass --wait DURATION to queue for it")
        }
        other => other.to_string(),
    }
}

impl CliError {
    /// The `--json` form of the error, printed on stdout beside the
    /// sentence on stderr, so a script reading stdout sees why.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "error": {
                "reason": self.reason,
                "message": self.message,
                "exit": self.exit.code(),
            }
        })
    }
}

/// A failed `bench`: its flags (exit 2), the service's errors (the table),
/// anything else 1.
pub fn from_bench(err: anyhow::Error) -> CliError {
    let message = format!("{err:#}");
    if err.downcast_ref::<leasehold_bench::BadFlags>().is_some() {
        return CliError::usage(message);
    }
    match err.chain().find_map(|e| e.downcast_ref::<Error>()) {
        Some(error) => CliError {
            message,
            ..CliError::from(error.clone())
        },
        None => CliError::new(Exit::Other, message),
    }
}

impl From<anyhow::Error> for CliError {
    fn from(err: anyhow::Error) -> CliError {
        CliError::new(Exit::Other, format!("{err:#}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_client::{LeaseId, Token};

    #[test]
    fn a_busy_name_hints_at_the_flag_not_the_library_call() {
        let busy = Error::Busy {
            name: "db/slots".into(),
            holder_token: Some(Token(4)),
        };
        let cli = CliError::from(busy);
        assert_eq!(
            cli.message,
            "db/slots is busy (held under token 4); pass --wait DURATION to queue for it"
        );
        assert_eq!(cli.reason, "Busy");
    }

    #[test]
    fn every_error_has_its_exit_code() {
        let cases = [
            (
                Error::InvalidArgument {
                    field: "name".into(),
                    reason: "is empty".into(),
                },
                Exit::Usage,
            ),
            (
                Error::Busy {
                    name: "a".into(),
                    holder_token: Some(Token(4)),
                },
                Exit::Busy,
            ),
            (
                Error::WaitTimeout {
                    name: "a".into(),
                    waited: std::time::Duration::ZERO,
                },
                Exit::Busy,
            ),
            (
                Error::NotHolder {
                    name: "a".into(),
                    holder_token: None,
                    lease: Some(LeaseId(2)),
                    token: Some(Token(3)),
                },
                Exit::Ownership,
            ),
            (
                Error::NoSuchLock {
                    name: "a".into(),
                    nearby: vec![],
                },
                Exit::Ownership,
            ),
            (Error::LeaseNotFound { lease: LeaseId(1) }, Exit::Ownership),
            (Error::LeaseExpired { lease: LeaseId(1) }, Exit::Ownership),
            (
                Error::StaleToken {
                    key: "k".into(),
                    lock: "a".into(),
                    presented: Token(1),
                    highest: Token(2),
                    message: "m".into(),
                },
                Exit::Ownership,
            ),
            (
                Error::Unfenced {
                    name: "a".into(),
                    message: "m".into(),
                },
                Exit::Ownership,
            ),
        ];
        for (error, exit) in cases {
            assert_eq!(exit_for(&error), exit, "{error:?}");
        }
    }

    #[test]
    fn unreachable_internal_and_unknown_reasons_have_their_exit_codes() {
        let cases = [
            (
                Error::Unavailable {
                    message: "down".into(),
                },
                Exit::Unavailable,
            ),
            (
                Error::Internal {
                    message: "bug".into(),
                },
                Exit::Other,
            ),
            (
                Error::Server {
                    reason: "QuotaExceeded".into(),
                    message: "newer".into(),
                },
                Exit::Other,
            ),
        ];
        for (error, exit) in cases {
            assert_eq!(exit_for(&error), exit, "{error:?}");
        }
    }
}
