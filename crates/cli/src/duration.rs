//! Parsing of duration flags (`--ttl 10s`, `--wait 500ms`, `--timeout 1m`).
//! Used as a clap `value_parser`, so a bad value is a usage error (exit 2)
//! whose message names the flag. Durations are shown in the client
//! library's words (`leasehold_client::show`), which `parse` reads back.

use std::time::Duration;

/// Parses `N` followed by a unit: `ms`, `s`, `m`, `h` or `d` (`0` alone is
/// also accepted). Fractions are not: write `1500ms`, not `1.5s`.
pub fn parse(raw: &str) -> Result<Duration, String> {
    let raw = raw.trim();
    if raw == "0" {
        return Ok(Duration::ZERO);
    }
    let split = raw
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{raw:?} has no unit; write e.g. 500ms, 2s, 1m or 1h"))?;
    let (digits, unit) = raw.split_at(split);
    let n: u64 = digits.parse().map_err(|_| {
        format!("{raw:?} does not start with a whole number; write e.g. 500ms or 2s")
    })?;
    let ms_per_unit: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {raw:?}; use ms, s, m, h or d"
            ))
        }
    };
    let ms = n
        .checked_mul(ms_per_unit)
        .ok_or_else(|| format!("{raw:?} is too long"))?;
    Ok(Duration::from_millis(ms))
}

/// Milliseconds of `d`, saturating (the wire carries u64 ms).
pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse("2d"), Ok(Duration::from_secs(2 * 86_400)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn rejects_malformed_values() {
        for bad in ["", "10", "s", "1.5s", "10x", "-1s", "99999999999999999999h"] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn human_form_round_trips() {
        use leasehold_client::show::human;
        for ms_in in [0, 1, 1500, 10_000, 120_000, 7_200_000] {
            assert_eq!(parse(&human(ms_in)).map(ms), Ok(ms_in));
        }
    }
}
