//! Scraping `/metrics` over real HTTP and a small, strict parser of the
//! Prometheus text exposition format, shared by the metrics and alert-rule
//! tests (included with `#[path]`, so it is not a test target itself).

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `GET path` on `endpoint` (`http://host:port`) as curl or a scraper would;
/// returns the status and body.
pub async fn http_get(endpoint: &str, path: &str) -> (u16, String) {
    http_get_with(endpoint, path, "").await
}

/// [`http_get`] with extra header lines (each ending in `\r\n`).
pub async fn http_get_with(endpoint: &str, path: &str, headers: &str) -> (u16, String) {
    let addr = endpoint.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// One parsed scrape: every sample by series, and every family's type.
#[derive(Debug, Default)]
pub struct Scrape {
    /// `name{label="value",...}` (labels sorted) → value.
    pub samples: BTreeMap<String, f64>,
    /// Family name → `counter`, `gauge`, `histogram`, `summary` or `untyped`.
    pub types: BTreeMap<String, String>,
}

impl Scrape {
    /// Scrapes and parses `/metrics` of the server at `endpoint`.
    pub async fn fetch(endpoint: &str) -> Scrape {
        let (status, body) = http_get(endpoint, "/metrics").await;
        assert_eq!(status, 200, "{body}");
        Scrape::parse(&body).unwrap_or_else(|error| panic!("{error}\n{body}"))
    }

    /// Parses exposition text; `Err` names the first malformed line.
    pub fn parse(text: &str) -> Result<Scrape, String> {
        let mut scrape = Scrape::default();
        for (number, line) in text.lines().enumerate() {
            let fail = |why: &str| format!("line {}: {why}: {line:?}", number + 1);
            if line.trim().is_empty() {
                continue;
            }
            if let Some(comment) = line.strip_prefix('#') {
                scrape
                    .comment(comment.trim_start())
                    .map_err(|why| fail(&why))?;
                continue;
            }
            let (series, value) = sample(line).map_err(|why| fail(&why))?;
            let family = series.split('{').next().unwrap_or_default();
            if scrape.family_type(family).is_none() {
                return Err(fail("sample without a # TYPE for its family"));
            }
            if scrape.samples.insert(series, value).is_some() {
                return Err(fail("duplicate series"));
            }
        }
        Ok(scrape)
    }

    fn comment(&mut self, comment: &str) -> Result<(), String> {
        let mut parts = comment.splitn(3, ' ');
        match parts.next() {
            Some("HELP") => {
                let name = parts.next().ok_or("HELP without a name")?;
                check_name(name)
            }
            Some("TYPE") => {
                let name = parts.next().ok_or("TYPE without a name")?;
                check_name(name)?;
                let kind = parts.next().ok_or("TYPE without a type")?;
                if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                    return Err(format!("unknown type {kind}"));
                }
                if self.types.insert(name.into(), kind.into()).is_some() {
                    return Err(format!("second TYPE for {name}"));
                }
                Ok(())
            }
            // Other comments are allowed by the format.
            _ => Ok(()),
        }
    }

    /// The type of the family a sample name belongs to (`x_bucket` → `x`).
    fn family_type(&self, sample: &str) -> Option<&str> {
        if let Some(kind) = self.types.get(sample) {
            return Some(kind);
        }
        ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
            let base = sample.strip_suffix(suffix)?;
            self.types
                .get(base)
                .filter(|kind| *kind == "histogram" || *kind == "summary")
                .map(String::as_str)
        })
    }

    /// The value of one series; `labels` as `k="v"` pairs (any order).
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples.get(&series_key(name, labels)).copied()
    }

    /// As [`Scrape::get`], 0 when the series is absent (not yet touched).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.get(name, labels).unwrap_or(0.0)
    }

    /// Every metric name that can appear in a query: families and their
    /// histogram/summary sample names.
    pub fn names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> = self.types.keys().cloned().collect();
        names.extend(
            self.samples
                .keys()
                .map(|series| series.split('{').next().unwrap_or_default().to_owned()),
        );
        names
    }
}

fn series_key(name: &str, labels: &[(&str, &str)]) -> String {
    let mut labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    labels.sort();
    if labels.is_empty() {
        name.to_owned()
    } else {
        format!("{name}{{{}}}", labels.join(","))
    }
}

fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
        Ok(())
    } else {
        Err(format!("invalid metric name {name:?}"))
    }
}

fn check_label_name(name: &str) -> Result<(), String> {
    check_name(name)?;
    if name.contains(':') {
        return Err(format!("invalid label name {name:?}"));
    }
    Ok(())
}

/// `name{labels} value [timestamp]` → (normalised series, value).
fn sample(line: &str) -> Result<(String, f64), String> {
    let name_end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..name_end];
    check_name(name)?;
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (pairs, after) = label_pairs(inner)?;
        labels = pairs;
        rest = after;
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next().ok_or("no value")?;
    let value = parse_value(value)?;
    if let Some(timestamp) = fields.next() {
        timestamp
            .parse::<i64>()
            .map_err(|_| format!("bad timestamp {timestamp:?}"))?;
    }
    if fields.next().is_some() {
        return Err("trailing fields".into());
    }
    let pairs: Vec<(&str, &str)> = labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    Ok((series_key(name, &pairs), value))
}

/// Label name → value, in the order written.
type Labels = Vec<(String, String)>;

/// Parses `k="v",k2="v2"}` (after the `{`); returns the pairs and the rest.
fn label_pairs(mut inner: &str) -> Result<(Labels, &str), String> {
    let mut pairs = Vec::new();
    loop {
        inner = inner.trim_start_matches(',');
        if let Some(rest) = inner.strip_prefix('}') {
            return Ok((pairs, rest));
        }
        let (key, rest) = inner.split_once("=\"").ok_or("label without =\"")?;
        check_label_name(key)?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next().ok_or("unterminated label value")? {
                (_, '\\') => match chars.next().ok_or("dangling escape")?.1 {
                    'n' => value.push('\n'),
                    c @ ('\\' | '"') => value.push(c),
                    c => return Err(format!("bad escape \\{c}")),
                },
                (at, '"') => break at,
                (_, c) => value.push(c),
            }
        };
        pairs.push((key.to_owned(), value));
        inner = &rest[end + 1..];
        if !inner.starts_with([',', '}']) {
            return Err("expected , or } after a label".into());
        }
    }
}

fn parse_value(raw: &str) -> Result<f64, String> {
    match raw {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => raw.parse().map_err(|_| format!("bad value {raw:?}")),
    }
}

#[test]
fn the_parser_accepts_the_format_and_rejects_garbage() {
    let good = "# HELP a_total Things.\n# TYPE a_total counter\na_total{b=\"x\\\"y\"} 3\n\
                # TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 0.5\nh_count 1 1700000000\n";
    let scrape = Scrape::parse(good).unwrap();
    assert_eq!(scrape.get("a_total", &[("b", "x\"y")]), Some(3.0));
    assert_eq!(scrape.get("h_count", &[]), Some(1.0));
    for bad in [
        "a 1\n",
        "# TYPE a counter\na one\n",
        "# TYPE a counter\na{b=1} 1\n",
        "# TYPE 1a counter\n",
        "# TYPE a counter\na{b=\"1\"} 1 2 3\n",
    ] {
        assert!(Scrape::parse(bad).is_err(), "accepted {bad:?}");
    }
}
