//! The reason on the wire: [`v1::Reason`] ⇄ [`leasehold_core::Reason`]
//! (each one exhaustive match), and the two [`ErrorDetail`] methods that
//! keep its enum (`code`) and its name (`reason`) in step: [`ErrorDetail::new`]
//! writes both, [`ErrorDetail::typed_reason`] reads the enum and falls back
//! to the name only when the enum is unset (a server older than it).

use crate::v1::{self, ErrorDetail};
use leasehold_core::{Reason, UnknownReason};

impl From<Reason> for v1::Reason {
    fn from(reason: Reason) -> v1::Reason {
        match reason {
            Reason::LeaseNotFound => v1::Reason::LeaseNotFound,
            Reason::LeaseExpired => v1::Reason::LeaseExpired,
            Reason::NotHolder => v1::Reason::NotHolder,
            Reason::NoSuchLock => v1::Reason::NoSuchLock,
            Reason::Busy => v1::Reason::Busy,
            Reason::WaitTimeout => v1::Reason::WaitTimeout,
            Reason::NotLeader => v1::Reason::NotLeader,
            Reason::InvalidArgument => v1::Reason::InvalidArgument,
            Reason::ResourceExhausted => v1::Reason::ResourceExhausted,
            Reason::Unavailable => v1::Reason::Unavailable,
            Reason::Internal => v1::Reason::Internal,
            Reason::StaleToken => v1::Reason::StaleToken,
            Reason::Unfenced => v1::Reason::Unfenced,
            Reason::PermissionDenied => v1::Reason::PermissionDenied,
            Reason::Unauthenticated => v1::Reason::Unauthenticated,
        }
    }
}

impl v1::Reason {
    /// The typed reason; `None` for `REASON_UNSPECIFIED` (not set).
    pub fn typed(self) -> Option<Reason> {
        Some(match self {
            v1::Reason::Unspecified => return None,
            v1::Reason::LeaseNotFound => Reason::LeaseNotFound,
            v1::Reason::LeaseExpired => Reason::LeaseExpired,
            v1::Reason::NotHolder => Reason::NotHolder,
            v1::Reason::NoSuchLock => Reason::NoSuchLock,
            v1::Reason::Busy => Reason::Busy,
            v1::Reason::WaitTimeout => Reason::WaitTimeout,
            v1::Reason::NotLeader => Reason::NotLeader,
            v1::Reason::InvalidArgument => Reason::InvalidArgument,
            v1::Reason::ResourceExhausted => Reason::ResourceExhausted,
            v1::Reason::Unavailable => Reason::Unavailable,
            v1::Reason::Internal => Reason::Internal,
            v1::Reason::StaleToken => Reason::StaleToken,
            v1::Reason::Unfenced => Reason::Unfenced,
            v1::Reason::PermissionDenied => Reason::PermissionDenied,
            v1::Reason::Unauthenticated => Reason::Unauthenticated,
        })
    }
}

impl ErrorDetail {
    /// A detail of `reason` (as `code` and by name) with `message`; the
    /// reason's own fields are left for the caller to fill in.
    pub fn new(reason: Reason, message: impl Into<String>) -> ErrorDetail {
        let mut detail = ErrorDetail {
            reason: reason.as_str().to_owned(),
            message: message.into(),
            ..Default::default()
        };
        detail.set_code(reason.into());
        detail
    }

    /// The reason: from `code`, or, when that is unset (an older server) or
    /// a value this build does not know (a newer one), parsed from the name.
    /// `None` if neither is set; `Err` for a name this build does not know.
    pub fn typed_reason(&self) -> Option<Result<Reason, UnknownReason>> {
        match self.code().typed() {
            Some(reason) => Some(Ok(reason)),
            None if self.reason.is_empty() => None,
            None => Some(self.reason.parse()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn every_reason_round_trips_core_proto_and_name() {
        for &reason in Reason::ALL {
            let wire = v1::Reason::from(reason);
            assert_eq!(wire.typed(), Some(reason));
            // The wire enum's name is the reason's, in the proto style.
            let upper = reason.label().to_ascii_uppercase();
            assert_eq!(wire.as_str_name(), format!("REASON_{upper}"));
            let sent = ErrorDetail::new(reason, "m").encode_to_vec();
            let read = ErrorDetail::decode(sent.as_slice()).unwrap();
            assert_eq!(read.reason, reason.as_str());
            assert_eq!(read.typed_reason(), Some(Ok(reason)));
        }
        assert_eq!(v1::Reason::Unspecified.typed(), None);
    }

    #[test]
    fn the_enum_wins_and_the_name_is_the_fallback() {
        let older = ErrorDetail {
            reason: "StaleToken".into(),
            ..Default::default()
        };
        assert_eq!(older.typed_reason(), Some(Ok(Reason::StaleToken)));
        let newer = ErrorDetail {
            reason: "SomethingNew".into(),
            code: 99,
            ..Default::default()
        };
        assert_eq!(
            newer.typed_reason(),
            Some(Err(UnknownReason("SomethingNew".into())))
        );
        let mut both = ErrorDetail::new(Reason::Busy, "m");
        both.reason = "NotHolder".into();
        assert_eq!(both.typed_reason(), Some(Ok(Reason::Busy)));
        assert_eq!(ErrorDetail::default().typed_reason(), None);
    }
}
