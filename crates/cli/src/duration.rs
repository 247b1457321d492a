//! Parsing of duration flags (`--ttl 10s`, `--wait 1.5s`, `--timeout 1m30s`).
//! Used as clap `value_parser`s, so a bad value is a usage error (exit 2)
//! whose message names the flag. The syntax is Go's (`time.ParseDuration`,
//! as etcdctl and consul read theirs), plus `d` for days. Durations are
//! shown in the client library's words (`leasehold_client::show`), which
//! [`parse`] reads back.
//!
//! [`positive`] refuses zero (`--timeout 0s` would fail every call), and
//! [`ttl`] and [`wait`] check core's limits here, before anything is sent,
//! with a sentence that names the limit.

use leasehold_client::show::human;
use leasehold_core::limits::{TTL_MS_MAX, TTL_MS_MIN, WAIT_MS_MAX};
use std::time::Duration;

/// Nanoseconds per unit, longest unit names first where one is a prefix.
const UNITS: [(&str, u128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

/// Parses a sequence of decimal numbers each followed by a unit (`ns`,
/// `us`, `ms`, `s`, `m`, `h`, `d`): `1h30m`, `1.5s`, `250ms`; `0` alone is
/// also accepted. Sub-millisecond remainders are dropped (the wire carries
/// milliseconds).
pub fn parse(raw: &str) -> Result<Duration, String> {
    let raw = raw.trim();
    if raw == "0" {
        return Ok(Duration::ZERO);
    }
    if raw.is_empty() {
        return Err("empty duration; write e.g. 500ms, 1.5s, 1m or 1h30m".into());
    }
    let mut rest = raw;
    let mut total_ns: u128 = 0;
    while !rest.is_empty() {
        let (term_ns, after) = term(rest).map_err(|why| format!("{raw:?} {why}"))?;
        total_ns = total_ns
            .checked_add(term_ns)
            .ok_or_else(|| format!("{raw:?} is too long"))?;
        rest = after;
    }
    let ms = u64::try_from(total_ns / 1_000_000).map_err(|_| format!("{raw:?} is too long"))?;
    Ok(Duration::from_millis(ms))
}

/// One `NUMBER UNIT` at the start of `text`: its nanoseconds and the rest.
fn term(text: &str) -> Result<(u128, &str), String> {
    let number_len = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, after) = text.split_at(number_len);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits_ok(fraction) {
        return Err("is not a duration; write e.g. 500ms, 1.5s, 1m or 1h30m".into());
    }
    let unit_len = after
        .find(|c: char| c.is_ascii_digit() || c == '.')
        .unwrap_or(after.len());
    let (unit, rest) = after.split_at(unit_len);
    if unit.is_empty() {
        return Err("has no unit; write e.g. 500ms, 2s, 1m or 1h".into());
    }
    let Some(&(_, unit_ns)) = UNITS.iter().find(|(name, _)| *name == unit) else {
        return Err(format!(
            "has an unknown unit {unit:?}; use ms, s, m, h or d"
        ));
    };
    let too_long = || "is too long".to_owned();
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| too_long())?
    };
    let mut ns = whole.checked_mul(unit_ns).ok_or_else(too_long)?;
    // The fraction's digits, each worth a tenth of the one before.
    let mut scale = unit_ns;
    for digit in fraction.bytes() {
        scale /= 10;
        ns += u128::from(digit - b'0') * scale;
    }
    Ok((ns, rest))
}

/// [`parse`], refusing zero: for flags where zero means nothing useful
/// (`--timeout 0s` would fail every call before it is sent).
pub fn positive(raw: &str) -> Result<Duration, String> {
    let duration = parse(raw)?;
    if duration.is_zero() {
        return Err(format!(
            "{raw:?} is zero (or under a millisecond); give a positive duration such as 5s"
        ));
    }
    Ok(duration)
}

/// A lease ttl: within core's bounds, checked here so the refusal comes
/// before anything is sent and names the limit.
pub fn ttl(raw: &str) -> Result<Duration, String> {
    let duration = parse(raw)?;
    let ms_given = ms(duration);
    if ms_given < TTL_MS_MIN {
        return Err(format!(
            "ttl {raw} is shorter than the minimum, {} (ttl_ms must be at least TTL_MS_MIN)",
            human(TTL_MS_MIN)
        ));
    }
    if ms_given > TTL_MS_MAX {
        return Err(format!(
            "ttl {raw} is longer than the maximum, {} (ttl_ms must be at most TTL_MS_MAX)",
            human(TTL_MS_MAX)
        ));
    }
    Ok(duration)
}

/// A wait in a lock's queue: zero (do not wait) up to core's maximum.
pub fn wait(raw: &str) -> Result<Duration, String> {
    let duration = parse(raw)?;
    if ms(duration) > WAIT_MS_MAX {
        return Err(format!(
            "wait {raw} is longer than the maximum, {} (wait_ms must be at most WAIT_MS_MAX)",
            human(WAIT_MS_MAX)
        ));
    }
    Ok(duration)
}

/// Milliseconds of `d`, saturating (the wire carries u64 ms).
pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms_of(raw: &str) -> Result<u64, String> {
        parse(raw).map(ms)
    }

    #[test]
    fn parses_every_unit() {
        assert_eq!(ms_of("500ms"), Ok(500));
        assert_eq!(ms_of("2s"), Ok(2_000));
        assert_eq!(ms_of("1m"), Ok(60_000));
        assert_eq!(ms_of("1h"), Ok(3_600_000));
        assert_eq!(ms_of("2d"), Ok(2 * 86_400_000));
        assert_eq!(ms_of("1500000us"), Ok(1_500));
        assert_eq!(ms_of("2000000ns"), Ok(2));
        assert_eq!(ms_of("0"), Ok(0));
        assert_eq!(ms_of("0s"), Ok(0));
    }

    #[test]
    fn parses_go_syntax() {
        assert_eq!(ms_of("1h30m"), Ok(5_400_000));
        assert_eq!(ms_of("1.5s"), Ok(1_500));
        assert_eq!(ms_of(".5s"), Ok(500));
        assert_eq!(ms_of("1.s"), Ok(1_000));
        assert_eq!(ms_of("2m3.25s"), Ok(123_250));
        assert_eq!(ms_of("1h1m1s1ms"), Ok(3_661_001));
    }

    #[test]
    fn rejects_malformed_values() {
        for bad in [
            "",
            "10",
            "s",
            ".s",
            "1..5s",
            "10x",
            "-1s",
            "1h 30m",
            "99999999999999999999999999999h",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn zero_is_refused_where_it_means_nothing() {
        assert!(positive("0").is_err());
        assert!(positive("0s").is_err());
        assert!(positive("100us").is_err());
        assert_eq!(positive("1ms").map(ms), Ok(1));
    }

    #[test]
    fn ttl_and_wait_bounds_are_checked_with_a_sentence() {
        let long = ttl("999999h").unwrap_err();
        assert!(
            long.starts_with("ttl 999999h is longer than the maximum, 24h"),
            "{long}"
        );
        assert!(long.contains("TTL_MS_MAX"), "{long}");
        let short = ttl("0").unwrap_err();
        assert!(short.contains("shorter than the minimum, 1s") && short.contains("TTL_MS_MIN"));
        assert_eq!(ttl("10s").map(ms), Ok(10_000));
        assert!(wait("2h").unwrap_err().contains("WAIT_MS_MAX"));
        assert_eq!(wait("0").map(ms), Ok(0));
    }

    #[test]
    fn human_form_round_trips() {
        for ms_in in [0, 1, 1500, 10_000, 120_000, 7_200_000] {
            assert_eq!(parse(&human(ms_in)).map(ms), Ok(ms_in));
        }
    }
}
