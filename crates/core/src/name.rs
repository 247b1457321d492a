//! `LockName`: the one place lock names are built and validated, used by
//! acquire and release alike, so both sides agree byte for byte.

use crate::limits::Limit;
use crate::thin_text::ThinText;
use crate::LockError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Where `leasehold bench` puts its locks (`leasehold-bench/<run>/...`):
/// the server keeps their events out of the event memory operators read
/// (followers of the stream still see them), so a benchmark does not
/// flush the history of real locks.
pub const BENCH_PREFIX: &str = "leasehold-bench/";

/// A validated lock name: UTF-8, 1..=[`crate::limits::NAME_BYTES_MAX`] bytes, no
/// control characters, `/`-separated hierarchy. Byte-exact: no normalisation.
///
/// The text is shared ([`ThinText`], a one-word handle): a held lock's name
/// is the lock table's key and an entry of its lease's holds, and clones
/// share one allocation. Encoded as a plain string, exactly as the `String`
/// it replaced, so snapshots and logs written before read the same.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockName(ThinText);

impl LockName {
    /// Validates `raw` as a lock name. The error names the field `name` and the limit.
    pub fn parse(raw: &str) -> Result<LockName, LockError> {
        check_name_text("name", raw, Limit::NameBytesMax)?;
        Ok(LockName(ThinText::new(raw)))
    }

    /// Builds a name from a namespace and parts, joined by `/`
    /// (`from_parts("billing", ["invoices", "2026-11"])` is
    /// `billing/invoices/2026-11`). Each segment must be non-empty and free
    /// of `/`, so a part taken from user data cannot climb the hierarchy or
    /// collide with another namespace; the joined name is then checked like
    /// any other.
    pub fn from_parts<I, S>(namespace: &str, parts: I) -> Result<LockName, LockError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut joined = String::new();
        check_segment("namespace", namespace)?;
        joined.push_str(namespace);
        for part in parts {
            let part = part.as_ref();
            check_segment("name part", part)?;
            joined.push('/');
            joined.push_str(part);
        }
        LockName::parse(&joined)
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The namespace: the text before the first `/` (the whole name if none).
    pub fn namespace(&self) -> &str {
        let name = self.as_str();
        name.split('/').next().unwrap_or(name)
    }

    /// The prefix the name's holds are filed under: the name up to and
    /// including its last `/` (`jobs/nightly` → `jobs/`; a name without `/`
    /// is its own prefix). The server's hold statistics and `diagnose` both
    /// use this one rule, so "the usual hold under this prefix" means the
    /// same thing to both.
    pub fn prefix(&self) -> &str {
        LockName::prefix_of(self.as_str())
    }

    /// [`LockName::prefix`] of a name held as text (a name read back from
    /// the server, a table keyed by `&str`).
    pub fn prefix_of(name: &str) -> &str {
        match name.rfind('/') {
            Some(slash) => &name[..=slash],
            None => name,
        }
    }
}

/// The rules every name-like text follows (lock names, fenced-store keys):
/// non-empty, at most `limit` bytes, no control characters. The error
/// names `field` and the limit.
pub(crate) fn check_name_text(field: &str, raw: &str, limit: Limit) -> Result<(), LockError> {
    if raw.is_empty() {
        return Err(LockError::invalid(field, "must not be empty"));
    }
    let max = limit.value();
    if raw.len() as u64 > max {
        return Err(LockError::over_limit(
            field,
            limit,
            format!("is {} bytes; the limit {limit} is {max}", raw.len()),
        ));
    }
    if let Some(c) = raw.chars().find(|c| c.is_control()) {
        return Err(LockError::invalid(
            field,
            format!("contains the control character U+{:04X}", c as u32),
        ));
    }
    if let Some((c, name)) = raw.chars().find_map(|c| invisible(c).map(|name| (c, name))) {
        return Err(LockError::invalid(
            field,
            format!(
                "contains U+{:04X} {name}, which is invisible or reorders the text around it \
                 when printed (\"rtl\\u{{202e}}gnp.exe\" prints as \"rtlexe.png\"), so the name \
                 would not read as what it is; remove it",
                c as u32
            ),
        ));
    }
    Ok(())
}

/// The name of `c` if it is a bidirectional control or an invisible
/// formatting character: printed, such a name reads as another (or as
/// another's twin), in `ls`, the page and every log.
fn invisible(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{00AD}' => "SOFT HYPHEN",
        '\u{061C}' => "ARABIC LETTER MARK",
        '\u{180E}' => "MONGOLIAN VOWEL SEPARATOR",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2060}' => "WORD JOINER",
        '\u{2061}'..='\u{2064}' => "INVISIBLE OPERATOR",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE",
        _ => return None,
    })
}

/// A namespace or part must be a non-empty segment without `/`.
fn check_segment(what: &str, segment: &str) -> Result<(), LockError> {
    if segment.is_empty() {
        return Err(LockError::invalid(
            "name",
            format!("a {what} must not be empty"),
        ));
    }
    if segment.contains('/') {
        return Err(LockError::invalid(
            "name",
            format!("the {what} {segment:?} contains '/'; pass each level as its own part"),
        ));
    }
    Ok(())
}

impl TryFrom<&str> for LockName {
    type Error = LockError;

    fn try_from(raw: &str) -> Result<LockName, LockError> {
        LockName::parse(raw)
    }
}

impl TryFrom<String> for LockName {
    type Error = LockError;

    fn try_from(raw: String) -> Result<LockName, LockError> {
        LockName::parse(&raw)
    }
}

impl std::str::FromStr for LockName {
    type Err = LockError;

    fn from_str(raw: &str) -> Result<LockName, LockError> {
        LockName::parse(raw)
    }
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::borrow::Borrow<str> for LockName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl LockName {
    /// Whether both are the same copy of the text (not just equal text).
    pub fn shares_text_with(&self, other: &LockName) -> bool {
        self.0.ptr_eq(&other.0)
    }
}

impl Serialize for LockName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for LockName {
    /// Not validated again: names come from the log and snapshots, which
    /// hold only names validated when they were proposed.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<LockName, D::Error> {
        String::deserialize(deserializer).map(|s| LockName(ThinText::new(&s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits;

    #[test]
    fn encodes_as_the_string_it_was_so_old_snapshots_read() {
        let name = LockName::parse("jobs/nightly").unwrap();
        let as_string = postcard::to_allocvec(&"jobs/nightly".to_owned()).unwrap();
        assert_eq!(postcard::to_allocvec(&name).unwrap(), as_string);
        let back: LockName = postcard::from_bytes(&as_string).unwrap();
        assert_eq!(back, name);
    }

    #[test]
    fn clones_share_the_text() {
        let name = LockName::parse("jobs/nightly").unwrap();
        let copy = name.clone();
        assert!(name.shares_text_with(&copy));
    }

    #[test]
    fn rejects_empty_oversize_and_control_characters() {
        assert!(LockName::parse("").is_err());
        assert!(LockName::parse(&"a".repeat(limits::NAME_BYTES_MAX + 1)).is_err());
        assert!(LockName::parse("jobs/\nnightly").is_err());
        assert!(LockName::parse(&"a".repeat(limits::NAME_BYTES_MAX)).is_ok());
        assert_eq!(
            LockName::parse("jobs/nightly").unwrap().as_str(),
            "jobs/nightly"
        );
    }

    #[test]
    fn rejects_text_that_prints_as_another_name() {
        let error = LockName::parse("files/rtl\u{202E}gnp.exe")
            .unwrap_err()
            .to_string();
        assert!(error.contains("U+202E RIGHT-TO-LEFT OVERRIDE"), "{error}");
        for sneaky in ["a\u{200B}b", "a\u{2066}b", "\u{FEFF}jobs", "jobs/\u{00AD}x"] {
            assert!(LockName::parse(sneaky).is_err(), "{sneaky:?} accepted");
        }
        // Scripts that are not invisible stay welcome.
        assert!(LockName::parse("تقارير/يومي").is_ok());
        assert!(LockName::parse("ジョブ/夜間").is_ok());
    }

    #[test]
    fn prefixes_end_at_the_last_slash() {
        let prefix = |raw: &str| LockName::parse(raw).unwrap().prefix().to_owned();
        assert_eq!(prefix("jobs/nightly"), "jobs/");
        assert_eq!(prefix("a/b/c"), "a/b/");
        assert_eq!(prefix("solo"), "solo");
        assert_eq!(prefix("trailing/"), "trailing/");
        assert_eq!(LockName::prefix_of("jobs/nightly"), "jobs/");
    }

    #[test]
    fn parts_join_under_a_namespace_and_cannot_climb() {
        let name = LockName::from_parts("billing", ["invoices", "2026-11"]).unwrap();
        assert_eq!(name.as_str(), "billing/invoices/2026-11");
        assert_eq!(name.namespace(), "billing");
        assert_eq!(
            LockName::from_parts("solo", [""; 0]).unwrap().as_str(),
            "solo"
        );
        assert!(LockName::from_parts("billing", ["a/b"]).is_err());
        assert!(LockName::from_parts("", ["x"]).is_err());
        assert!(LockName::from_parts("billing", [""]).is_err());
        assert!(LockName::from_parts("billing", ["a\u{7}"]).is_err());
        let long = "a".repeat(limits::NAME_BYTES_MAX);
        assert!(LockName::from_parts("billing", [long.as_str()]).is_err());
    }
}
