//! A lease's timing: ttl, keep-alive interval and safety margin, checked
//! together once, when the lease is requested.

use crate::error::Error;
use leasehold_core::limits;
use std::time::Duration;

/// Validated timing of one lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTiming {
    /// Time to live without a renewal, as granted by the server.
    pub ttl: Duration,
    /// Time between keep-alives.
    pub interval: Duration,
    /// How much earlier than `send time + ttl` the client gives up.
    pub margin: Duration,
}

impl LeaseTiming {
    /// Checks `ttl` against the server's bounds, `interval` (default ttl/3)
    /// against ttl/2, and `margin` (default ttl/10) against the room the
    /// interval leaves. Each error names the setting and the bound.
    pub fn new(
        ttl: Duration,
        interval: Option<Duration>,
        margin: Option<Duration>,
    ) -> Result<LeaseTiming, Error> {
        let ttl_ms = ttl.as_millis() as u64;
        if !(limits::TTL_MS_MIN..=limits::TTL_MS_MAX).contains(&ttl_ms) {
            return Err(invalid(
                "ttl",
                format!(
                    "is {ttl:?}; it must be within TTL_MS_MIN {} ms ..= TTL_MS_MAX {} ms",
                    limits::TTL_MS_MIN,
                    limits::TTL_MS_MAX
                ),
            ));
        }
        let interval = interval.unwrap_or(ttl / 3);
        if interval.is_zero() || interval > ttl / 2 {
            return Err(invalid(
                "keep_alive_interval",
                format!(
                    "is {interval:?}; it must be positive and at most ttl/2 ({:?}), so a lost keep-alive can be retried before the lease runs out",
                    ttl / 2
                ),
            ));
        }
        let margin = margin.unwrap_or(ttl / 10);
        if margin + interval >= ttl {
            return Err(invalid(
                "margin",
                format!(
                    "is {margin:?}; with the keep-alive interval {interval:?} it must stay below the ttl {ttl:?}, or the lease would lapse between two renewals"
                ),
            ));
        }
        Ok(LeaseTiming {
            ttl,
            interval,
            margin,
        })
    }
}

fn invalid(field: &str, reason: String) -> Error {
    Error::InvalidArgument {
        field: field.to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn defaults_are_a_third_and_a_tenth_of_the_ttl() {
        let t = LeaseTiming::new(secs(9), None, None).unwrap();
        assert_eq!(
            (t.interval, t.margin),
            (secs(3), Duration::from_millis(900))
        );
    }

    #[test]
    fn interval_above_half_the_ttl_is_refused() {
        let e = LeaseTiming::new(secs(10), Some(Duration::from_millis(5_001)), None).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { ref field, .. } if field == "keep_alive_interval"),
            "{e}"
        );
        assert!(LeaseTiming::new(secs(10), Some(secs(5)), None).is_ok());
    }

    #[test]
    fn ttl_outside_the_server_limits_is_refused_naming_them() {
        let e = LeaseTiming::new(Duration::from_millis(10), None, None).unwrap_err();
        assert!(e.to_string().contains("TTL_MS_MIN"), "{e}");
        assert!(LeaseTiming::new(secs(2 * 86_400), None, None).is_err());
    }

    #[test]
    fn a_margin_leaving_no_room_for_renewal_is_refused() {
        let e = LeaseTiming::new(secs(10), Some(secs(5)), Some(secs(5))).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { ref field, .. } if field == "margin"));
    }
}
