//! `LockName`: the one place lock names are built and validated, used by
//! acquire and release alike, so both sides agree byte for byte.

use crate::{limits, LockError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A validated lock name: UTF-8, 1..=[`limits::NAME_BYTES_MAX`] bytes, no
/// control characters, `/`-separated hierarchy. Byte-exact: no normalisation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LockName(String);

impl LockName {
    /// Validates `raw` as a lock name. The error names the field `name` and the limit.
    pub fn parse(raw: &str) -> Result<LockName, LockError> {
        if raw.is_empty() {
            return Err(LockError::invalid("name", "must not be empty"));
        }
        if raw.len() > limits::NAME_BYTES_MAX {
            return Err(LockError::invalid(
                "name",
                format!(
                    "is {} bytes; the limit NAME_BYTES_MAX is {}",
                    raw.len(),
                    limits::NAME_BYTES_MAX
                ),
            ));
        }
        if let Some(c) = raw.chars().find(|c| c.is_control()) {
            return Err(LockError::invalid(
                "name",
                format!("contains the control character U+{:04X}", c as u32),
            ));
        }
        Ok(LockName(raw.to_owned()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::borrow::Borrow<str> for LockName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
