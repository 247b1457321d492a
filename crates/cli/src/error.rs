//! `CliError`: what a failed command reports, as an exit code (see
//! [`crate::exit`]) and one sentence for stderr. The one mapping from a
//! server's reason to an exit code lives here ([`exit_for`], exhaustive on
//! the typed [`Reason`]); a server `Status` and a `leasehold_client::Error`
//! both go through it.

use crate::exit::Exit;
use leasehold_core::Reason;
use leasehold_proto::v1::ErrorDetail;

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

    /// Maps a server (or transport) status to an exit code and a sentence.
    pub fn from_status(status: &tonic::Status) -> CliError {
        let detail = detail(status);
        let reason = typed_reason(status, detail.as_ref());
        let exit = match &reason {
            Some(Ok(reason)) => exit_for(*reason),
            // A reason newer than this build.
            Some(Err(_)) => Exit::Other,
            None => exit_for_code(status.code()),
        };
        let known = reason.and_then(Result::ok);
        CliError::new(exit, message(status, known, detail.as_ref()))
    }

    /// The server's machine-readable reason, if it sent one.
    pub fn reason_of(status: &tonic::Status) -> Option<String> {
        reason(status, detail(status).as_ref())
    }
}

impl From<leasehold_client::Error> for CliError {
    /// The client library's errors, on the same exit codes as server statuses.
    fn from(err: leasehold_client::Error) -> CliError {
        use leasehold_client::Error as E;
        let exit = match (err.reason(), &err) {
            (Some(reason), _) => exit_for(reason),
            // The errors the client finds itself.
            (None, E::AlreadyHeld { .. }) => Exit::Ownership,
            (None, E::Timeout { .. }) => Exit::Unavailable,
            (None, E::Lost(_)) => Exit::LockLost,
            (None, _) => Exit::Other,
        };
        CliError::new(exit, err.to_string())
    }
}

impl From<anyhow::Error> for CliError {
    fn from(err: anyhow::Error) -> CliError {
        CliError::new(Exit::Other, format!("{err:#}"))
    }
}

pub use leasehold_proto::status::error_detail as detail;
use leasehold_proto::status::{reason, typed_reason};

/// The exit code of each server reason: the one table (see [`crate::exit`]).
pub fn exit_for(reason: Reason) -> Exit {
    match reason {
        Reason::InvalidArgument => Exit::Usage,
        Reason::Busy | Reason::WaitTimeout => Exit::Busy,
        Reason::NotHolder
        | Reason::NoSuchLock
        | Reason::LeaseNotFound
        | Reason::LeaseExpired
        | Reason::StaleToken
        | Reason::Unfenced => Exit::Ownership,
        Reason::Unavailable | Reason::NotLeader => Exit::Unavailable,
        Reason::ResourceExhausted | Reason::Internal => Exit::Other,
    }
}

/// Exit code for a status without a Leasehold reason (transport errors,
/// errors from tonic itself such as an oversize message).
fn exit_for_code(code: tonic::Code) -> Exit {
    match code {
        tonic::Code::InvalidArgument | tonic::Code::OutOfRange => Exit::Usage,
        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled => {
            Exit::Unavailable
        }
        tonic::Code::NotFound | tonic::Code::FailedPrecondition => Exit::Ownership,
        _ => Exit::Other,
    }
}

/// The server's message, completed with what the detail of its `reason`
/// carries when the message does not already say it (the holder's token,
/// nearby names, the limit, the leader).
fn message(status: &tonic::Status, reason: Option<Reason>, detail: Option<&ErrorDetail>) -> String {
    let mut text = status.message().trim().to_owned();
    if text.is_empty() {
        text = detail.map(|d| d.message.clone()).unwrap_or_default();
    }
    if text.is_empty() {
        text = format!("the server answered {:?}", status.code());
    }
    let Some(d) = detail else { return text };
    if let Some(reason @ (Reason::NotHolder | Reason::Busy)) = reason {
        if d.holder_token == 0 {
            if reason == Reason::NotHolder && !text.contains("holder") {
                text.push_str(" (the lock has no holder now)");
            }
        } else if !mentions_number(&text, d.holder_token) {
            text.push_str(&format!(
                " (the current holder's token is {})",
                d.holder_token
            ));
        }
    }
    if reason == Some(Reason::StaleToken)
        && d.highest_token != 0
        && !mentions_number(&text, d.highest_token)
    {
        text.push_str(&format!(
            " (the key's highest token is {})",
            d.highest_token
        ));
    }
    let missing: Vec<&str> = d
        .nearby
        .iter()
        .map(String::as_str)
        .filter(|n| !text.contains(n))
        .collect();
    if !missing.is_empty() {
        text.push_str(&format!("; nearby names: {}", missing.join(", ")));
    }
    if !d.limit.is_empty() && !text.contains(&d.limit) {
        text.push_str(&format!(" (limit {})", d.limit));
    }
    if !d.field.is_empty() && !text.contains(&d.field) {
        text.push_str(&format!(" (field {})", d.field));
    }
    if reason == Some(Reason::NotLeader) {
        if d.leader_addr.is_empty() {
            if !text.contains("leader is unknown") {
                text.push_str("; no leader is known: retry later or pass another --endpoints");
            }
        } else {
            text.push_str(&format!(
                "; the leader is node {} at {}",
                d.leader_hint, d.leader_addr
            ));
        }
    }
    text
}

/// Whether `text` contains `n` as a whole number (not as digits of another).
fn mentions_number(text: &str, n: u64) -> bool {
    text.split(|c: char| !c.is_ascii_digit())
        .any(|word| word.parse() == Ok(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_proto::status::with_detail;

    fn status(reason: &str, detail: ErrorDetail, code: tonic::Code, msg: &str) -> tonic::Status {
        let mut detail = detail;
        detail.reason = reason.into();
        detail.message = msg.into();
        with_detail(code, &detail)
    }

    #[test]
    fn maps_reasons_to_exit_codes() {
        let cases = [
            ("InvalidArgument", Exit::Usage),
            ("Busy", Exit::Busy),
            ("WaitTimeout", Exit::Busy),
            ("NotHolder", Exit::Ownership),
            ("NoSuchLock", Exit::Ownership),
            ("LeaseNotFound", Exit::Ownership),
            ("LeaseExpired", Exit::Ownership),
            ("StaleToken", Exit::Ownership),
            ("NotLeader", Exit::Unavailable),
            ("Unavailable", Exit::Unavailable),
            ("Internal", Exit::Other),
        ];
        for (reason, exit) in cases {
            let s = status(reason, ErrorDetail::default(), tonic::Code::Unknown, "x");
            assert_eq!(CliError::from_status(&s).exit, exit, "{reason}");
        }
        let refused = tonic::Status::unavailable("connection refused");
        assert_eq!(CliError::from_status(&refused).exit, Exit::Unavailable);
    }

    #[test]
    fn stale_token_message_names_the_highest_token() {
        let d = ErrorDetail {
            highest_token: 77,
            ..Default::default()
        };
        let s = status(
            "StaleToken",
            d.clone(),
            tonic::Code::FailedPrecondition,
            "stale token 5",
        );
        let error = CliError::from_status(&s);
        assert_eq!(error.exit, Exit::Ownership);
        assert!(
            error.message.ends_with("highest token is 77)"),
            "{}",
            error.message
        );
        let said = "stale token 5 for fenced key \"k\": the key was written with token 77";
        let s = status("StaleToken", d, tonic::Code::FailedPrecondition, said);
        assert_eq!(CliError::from_status(&s).message, said);
    }

    #[test]
    fn message_adds_nearby_names_and_holder_token() {
        let d = ErrorDetail {
            nearby: vec!["jobs/nightly".into()],
            ..Default::default()
        };
        let s = status(
            "NoSuchLock",
            d,
            tonic::Code::NotFound,
            "no lock named \"jobs/nigthly\"",
        );
        assert!(CliError::from_status(&s).message.contains("jobs/nightly"));
        let d = ErrorDetail {
            holder_token: 42,
            ..Default::default()
        };
        let s = status(
            "NotHolder",
            d.clone(),
            tonic::Code::FailedPrecondition,
            "not held",
        );
        assert!(CliError::from_status(&s).message.contains("42"));
        let said = "not held by token 1042; the current holder's token is 42";
        let s = status("NotHolder", d, tonic::Code::FailedPrecondition, said);
        assert_eq!(CliError::from_status(&s).message, said);
        let d = ErrorDetail::default();
        let s = status(
            "NotHolder",
            d,
            tonic::Code::FailedPrecondition,
            "not held by token 7",
        );
        assert!(CliError::from_status(&s)
            .message
            .ends_with("(the lock has no holder now)"));
    }

    /// A status and the client library's error of the same reason end with
    /// the same code, the one `exit_for` gives.
    #[test]
    fn statuses_and_client_errors_share_the_table() {
        for &reason in Reason::ALL {
            let detail = ErrorDetail::new(reason, "m");
            let s = with_detail(tonic::Code::Unknown, &detail);
            assert_eq!(CliError::from_status(&s).exit, exit_for(reason), "{reason}");
            let client = leasehold_client::Error::from(s);
            assert_eq!(CliError::from(client).exit, exit_for(reason), "{reason}");
        }
        assert_eq!(exit_for(Reason::Unfenced), Exit::Ownership);
        assert_eq!(exit_for(Reason::ResourceExhausted), Exit::Other);
        let newer = status(
            "QuotaExceeded",
            ErrorDetail::default(),
            tonic::Code::Unknown,
            "x",
        );
        assert_eq!(CliError::from_status(&newer).exit, Exit::Other);
    }
}
