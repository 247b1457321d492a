//! Facts as people read them: durations, wall-clock times and owners, in
//! one wording for every tool that shows a lock (the `leasehold` command's
//! `get`, `ls`, `events`, `force-release`, and the evidence of
//! [`diagnose`](crate::diagnose)), so the same fact never reads two ways.
//!
//! Wall-clock times come from the server (Unix ms) and are for display
//! only: no lease arithmetic uses wall time.

use crate::wire::OwnerInfo;

/// `n` and the noun, singular or plural as `n` asks: `1 renewal`,
/// `0 renewals`, `3 holds` (`plural` for irregular nouns: `1 entry`).
pub fn count(n: u64, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// A short form of `ms` in the largest unit that divides it exactly:
/// `1500ms`, `10s`, `2m`, `1h` (what a ttl was set to).
pub fn human(ms: u64) -> String {
    // `n / size * size == n` rather than `is_multiple_of`, which is newer
    // than the workspace's rust-version.
    for (unit, size) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms != 0 && ms / size * size == ms {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// An approximate form of `ms`, rounded down: `850ms`, `29.9s`, `4m10s`,
/// `2h1m` (a time left, a time held).
pub fn approx(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{}.{}s", ms / 1_000, ms % 1_000 / 100)
    } else if ms < 3_600_000 {
        format!("{}m{}s", ms / 60_000, ms % 60_000 / 1_000)
    } else {
        format!("{}h{}m", ms / 3_600_000, ms % 3_600_000 / 60_000)
    }
}

/// `later - earlier` in ms, 0 if either is unknown (0) or it is negative.
pub fn ms_between(earlier_unix_ms: i64, later_unix_ms: i64) -> u64 {
    if earlier_unix_ms == 0 || later_unix_ms == 0 {
        return 0;
    }
    later_unix_ms.saturating_sub(earlier_unix_ms).max(0) as u64
}

/// `unix_ms` as RFC 3339 in this host's time zone with milliseconds and
/// the offset (`2026-11-29T14:41:00.123+01:00`); `-` for 0 (unknown).
pub fn local_time(unix_ms: i64) -> String {
    if unix_ms == 0 {
        return "-".into();
    }
    let seconds = unix_ms.div_euclid(1000) as libc::time_t;
    let millis = unix_ms.rem_euclid(1000);
    // SAFETY: an all-zero `tm` is a valid value of this plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; `localtime_r` writes
    // only `tm` (unlike `localtime`, it shares no static buffer).
    if unsafe { libc::localtime_r(&seconds, &mut tm) }.is_null() {
        return format!("{unix_ms} ms");
    }
    let offset_minutes = tm.tm_gmtoff / 60;
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let offset_minutes = offset_minutes.abs();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{millis:03}{sign}{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        offset_minutes / 60,
        offset_minutes % 60,
    )
}

/// An owner in one short field: `owner@host pid N` (the host left out when
/// the owner name already has an `@`, the pid when unknown).
pub fn owner(o: &OwnerInfo) -> String {
    let mut text = o.owner.clone();
    if !o.host.is_empty() && !o.owner.contains('@') {
        text.push('@');
        text.push_str(&o.host);
    }
    if o.pid != 0 {
        text.push_str(&format!(" pid {}", o.pid));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approx_form_rounds_down() {
        assert_eq!(approx(850), "850ms");
        assert_eq!(approx(29_955), "29.9s");
        assert_eq!(approx(250_000), "4m10s");
        assert_eq!(approx(7_260_000), "2h1m");
    }

    #[test]
    fn human_form_uses_the_largest_exact_unit() {
        assert_eq!(human(1_500), "1500ms");
        assert_eq!(human(10_000), "10s");
        assert_eq!(human(120_000), "2m");
        assert_eq!(human(0), "0ms");
    }

    #[test]
    fn local_time_is_rfc3339_with_milliseconds_and_an_offset() {
        let text = local_time(1_795_959_660_123);
        assert_eq!(text.len(), "2026-11-29T13:41:00.123+00:00".len(), "{text}");
        assert_eq!(&text[19..23], ".123", "{text}");
        assert!(matches!(&text[23..24], "+" | "-"), "{text}");
        // Every zone's offset is whole minutes: the seconds agree with UTC's.
        assert_eq!(&text[17..19], "00", "{text}");
        assert_eq!(local_time(0), "-");
    }

    #[test]
    fn an_owner_reads_as_name_host_and_pid() {
        let o = OwnerInfo {
            owner: "alice".into(),
            host: "h1".into(),
            pid: 7,
            ..Default::default()
        };
        assert_eq!(owner(&o), "alice@h1 pid 7");
        let named = OwnerInfo {
            owner: "bob@h2".into(),
            pid: 0,
            ..o
        };
        assert_eq!(owner(&named), "bob@h2");
        assert_eq!(ms_between(1_000, 3_500), 2_500);
        assert_eq!(ms_between(0, 3_500), 0);
        assert_eq!(ms_between(4_000, 3_500), 0);
    }
}
