//! Wall-clock times as people read them: RFC 3339 in this host's time zone
//! with milliseconds and the offset (`2026-11-29T14:41:00.123+01:00`).
//! Servers send Unix milliseconds (display only: no lease arithmetic uses
//! wall time); every command prints them through here, so `events`, `get`
//! and `diagnose` agree.

/// `unix_ms` as RFC 3339 in this host's time zone with milliseconds
/// (`2026-11-29T14:41:00.123+01:00`); `-` for 0 (unknown).
pub fn local(unix_ms: i64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_time_is_rfc3339_with_milliseconds_and_an_offset() {
        let text = local(1_795_959_660_123);
        assert_eq!(text.len(), "2026-11-29T13:41:00.123+00:00".len(), "{text}");
        assert_eq!(&text[19..23], ".123", "{text}");
        assert!(matches!(&text[23..24], "+" | "-"), "{text}");
        // Every zone's offset is whole minutes: the seconds agree with UTC's.
        assert_eq!(&text[17..19], "00", "{text}");
        assert_eq!(local(0), "-");
    }
}
