//! The live page's query parameters, checked at the boundary: an unknown,
//! repeated, malformed or out-of-range parameter is a [`BadQuery`] (a 400)
//! whose text names it and its limit.

use crate::events::EVENTS_REMEMBERED;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use leasehold_core::limits;

/// Events returned when `limit` is not given (what the page shows).
pub const EVENTS_DEFAULT: usize = 50;

/// A query parameter that is not acceptable: a 400 with this sentence.
#[derive(Debug, PartialEq, Eq)]
pub struct BadQuery(String);

impl IntoResponse for BadQuery {
    fn into_response(self) -> Response {
        (StatusCode::BAD_REQUEST, format!("{}\n", self.0)).into_response()
    }
}

/// `/api/locks`'s parameters.
#[derive(Debug, PartialEq, Eq)]
pub struct LocksQuery {
    /// Only locks whose name starts with this ("" for all).
    pub prefix: String,
}

impl LocksQuery {
    /// Parses `/api/locks`'s query string.
    pub fn parse(raw: Option<&str>) -> Result<LocksQuery, BadQuery> {
        let mut query = LocksQuery {
            prefix: String::new(),
        };
        for (_prefix, value) in pairs(raw, &["prefix"])? {
            query.prefix = check_prefix(value)?;
        }
        Ok(query)
    }
}

/// `/api/events`'s parameters.
#[derive(Debug, PartialEq, Eq)]
pub struct EventsQuery {
    /// How many of the newest events.
    pub limit: usize,
    /// Only events of locks whose name starts with this.
    pub prefix: String,
}

impl EventsQuery {
    /// Parses `/api/events`'s query string.
    pub fn parse(raw: Option<&str>) -> Result<EventsQuery, BadQuery> {
        let mut query = EventsQuery {
            limit: EVENTS_DEFAULT,
            prefix: String::new(),
        };
        for (key, value) in pairs(raw, &["limit", "prefix"])? {
            match key.as_str() {
                "limit" => query.limit = check_limit(&value)?,
                _ => query.prefix = check_prefix(value)?,
            }
        }
        Ok(query)
    }
}

/// A name prefix is held to the rules of a name (it may be empty).
fn check_prefix(prefix: String) -> Result<String, BadQuery> {
    if prefix.len() > limits::NAME_BYTES_MAX {
        return Err(BadQuery(format!(
            "query parameter prefix is {} bytes; the limit NAME_BYTES_MAX is {}",
            prefix.len(),
            limits::NAME_BYTES_MAX
        )));
    }
    if let Some(c) = prefix.chars().find(|c| c.is_control()) {
        return Err(BadQuery(format!(
            "query parameter prefix contains the control character U+{:04X}",
            c as u32
        )));
    }
    Ok(prefix)
}

fn check_limit(raw: &str) -> Result<usize, BadQuery> {
    match raw.parse::<usize>() {
        Ok(limit) if (1..=EVENTS_REMEMBERED).contains(&limit) => Ok(limit),
        _ => Err(BadQuery(format!(
            "query parameter limit must be a whole number from 1 to {EVENTS_REMEMBERED} \
             (EVENTS_REMEMBERED, the events the server keeps), not {raw:?}"
        ))),
    }
}

/// The decoded `key=value` pairs of a query string, each key one of
/// `known` and given at most once.
pub fn pairs(raw: Option<&str>, known: &[&str]) -> Result<Vec<(String, String)>, BadQuery> {
    let mut seen: Vec<(String, String)> = Vec::new();
    for pair in raw.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key)?;
        if !known.contains(&key.as_str()) {
            let takes = match known {
                [] => "no parameters".to_owned(),
                _ => known.join(", "),
            };
            return Err(BadQuery(format!(
                "unknown query parameter {key:?}; this endpoint takes {takes}"
            )));
        }
        if seen.iter().any(|(k, _)| *k == key) {
            return Err(BadQuery(format!("query parameter {key} is given twice")));
        }
        let value = decode(value)?;
        seen.push((key, value));
    }
    Ok(seen)
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a
/// byte; the result must be UTF-8.
fn decode(raw: &str) -> Result<String, BadQuery> {
    let bad = || {
        BadQuery(format!(
            "query text {raw:?} is not valid percent-encoded UTF-8"
        ))
    };
    let mut bytes = Vec::with_capacity(raw.len());
    let mut rest = raw.bytes();
    while let Some(byte) = rest.next() {
        match byte {
            b'+' => bytes.push(b' '),
            b'%' => {
                let high = rest.next().and_then(|b| (b as char).to_digit(16));
                let low = rest.next().and_then(|b| (b as char).to_digit(16));
                match (high, low) {
                    (Some(high), Some(low)) => bytes.push((high * 16 + low) as u8),
                    _ => return Err(bad()),
                }
            }
            other => bytes.push(other),
        }
    }
    String::from_utf8(bytes).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_query_decodes_the_prefix_and_defaults_to_everything() {
        assert_eq!(LocksQuery::parse(None).unwrap().prefix, "");
        let query = LocksQuery::parse(Some("prefix=jobs%2F%3Cx%3E+y")).unwrap();
        assert_eq!(query.prefix, "jobs/<x> y");
        let long = format!("prefix={}", "a".repeat(limits::NAME_BYTES_MAX + 1));
        let BadQuery(why) = LocksQuery::parse(Some(&long)).unwrap_err();
        assert!(
            why.contains("prefix") && why.contains("NAME_BYTES_MAX"),
            "{why}"
        );
        let BadQuery(why) = LocksQuery::parse(Some("prefix=a%0Ab")).unwrap_err();
        assert!(why.contains("U+000A"), "{why}");
    }

    #[test]
    fn events_limit_is_bounded_and_named_when_wrong() {
        let default = EventsQuery::parse(Some("")).unwrap();
        assert_eq!(default.limit, EVENTS_DEFAULT);
        assert_eq!(EventsQuery::parse(Some("limit=1")).unwrap().limit, 1);
        let max = format!("limit={EVENTS_REMEMBERED}");
        assert_eq!(
            EventsQuery::parse(Some(&max)).unwrap().limit,
            EVENTS_REMEMBERED
        );
        let over = format!("limit={}", EVENTS_REMEMBERED + 1);
        for bad in ["limit=0", "limit=-1", "limit=ten", "limit=", over.as_str()] {
            let BadQuery(why) = EventsQuery::parse(Some(bad)).unwrap_err();
            assert!(
                why.contains("limit") && why.contains(&EVENTS_REMEMBERED.to_string()),
                "{bad}: {why}"
            );
        }
    }

    #[test]
    fn unknown_repeated_and_malformed_parameters_are_refused() {
        let unknown = EventsQuery::parse(Some("limt=5")).unwrap_err();
        assert!(unknown.0.contains("\"limt\""), "{unknown:?}");
        let twice = EventsQuery::parse(Some("limit=5&limit=6")).unwrap_err();
        assert!(twice.0.contains("limit is given twice"), "{twice:?}");
        assert!(LocksQuery::parse(Some("prefix=%zz")).is_err());
        assert!(LocksQuery::parse(Some("prefix=%FF")).is_err());
        assert!(LocksQuery::parse(Some("prefix=%4")).is_err());
    }
}
