//! `CliError`: what a failed command reports, as an exit code (see
//! [`crate::exit`]) and one sentence for stderr. Every error from the
//! service arrives as a typed [`leasehold_client::Error`]; [`exit_for`] is
//! the one table from those to exit codes, and the sentence is the error's
//! own (the client library words it once, for every caller).

use crate::exit::Exit;
use leasehold_client::Error;

/// A failed command: how to exit and what to tell the user.
#[derive(Debug)]
pub struct CliError {
    /// The exit code.
    pub exit: Exit,
    /// One sentence naming the cause, printed to stderr.
    pub message: String,
}

impl CliError {
    /// An error with an explicit exit code.
    pub fn new(exit: Exit, message: impl Into<String>) -> CliError {
        CliError {
            exit,
            message: message.into(),
        }
    }

    /// A usage error (exit 2) found by the CLI itself.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::new(Exit::Usage, message)
    }
}

/// The exit code of a failed call: the one table.
pub fn exit_for(error: &Error) -> Exit {
    match error {
        Error::InvalidArgument { .. } => Exit::Usage,
        Error::Busy { .. } | Error::WaitTimeout { .. } => Exit::Busy,
        Error::NotHolder { .. }
        | Error::NoSuchLock { .. }
        | Error::LeaseNotFound { .. }
        | Error::LeaseExpired { .. }
        | Error::AlreadyHeld { .. } => Exit::Ownership,
        Error::Unavailable { .. } | Error::Timeout { .. } => Exit::Unavailable,
        Error::Lost(_) => Exit::LockLost,
        Error::Server { reason, .. } => match reason.as_str() {
            // A fenced write under a stale token; a force release of an
            // unfenced holder without --allow-unfenced.
            "StaleToken" | "Unfenced" => Exit::Ownership,
            _ => Exit::Other,
        },
        Error::ResourceExhausted { .. } => Exit::Other,
    }
}

impl From<Error> for CliError {
    fn from(error: Error) -> CliError {
        CliError::new(exit_for(&error), error.to_string())
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
    fn every_error_has_its_exit_code() {
        let server = |reason: &str| Error::Server {
            reason: reason.into(),
            message: "m".into(),
        };
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
            (server("StaleToken"), Exit::Ownership),
            (server("Unfenced"), Exit::Ownership),
            (
                Error::Unavailable {
                    message: "down".into(),
                },
                Exit::Unavailable,
            ),
            (server("Internal"), Exit::Other),
        ];
        for (error, exit) in cases {
            assert_eq!(exit_for(&error), exit, "{error:?}");
        }
    }
}
