//! Who and what: [`Principal`] (a validated caller identity: a client
//! certificate's name or a token's user), [`RoleName`] and [`Verb`] (the four
//! things a role can allow or deny, and which imply which).

use crate::limits::Limit;
use crate::thin_text::ThinText;
use crate::LockError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Checks an identifier: a name-like text (1..=`limit` bytes, no control
/// characters) without whitespace, so it prints unambiguously in errors,
/// audit lines and `ls` tables.
fn check_identifier(field: &str, raw: &str, limit: Limit) -> Result<(), LockError> {
    crate::name::check_name_text(field, raw, limit)?;
    if raw.chars().any(char::is_whitespace) {
        return Err(LockError::invalid(field, "contains whitespace"));
    }
    Ok(())
}

/// A caller identity: 1..=[`limits::PRINCIPAL_BYTES_MAX`] bytes, no
/// whitespace or control characters. Shared text behind one word
/// ([`ThinText`]), as every lease row keeps one (`Option<Principal>`):
/// 8 bytes of the row instead of a `String`'s 24. Encoded as the newtype
/// of a string it has always been.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Principal(ThinText);

impl Principal {
    /// Validates `raw` as a principal.
    pub fn parse(raw: &str) -> Result<Principal, LockError> {
        check_identifier("principal", raw, Limit::PrincipalBytesMax)?;
        Ok(Principal(ThinText::new(raw)))
    }

    /// The principal as text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The stored form, written: the newtype `Principal(Box<str>)` was.
#[derive(Serialize)]
#[serde(rename = "Principal")]
struct PrincipalOut<'a>(&'a str);

/// The stored form, read back. Not validated again, as lock names are not:
/// it comes from the log or a snapshot, which hold only validated ones.
#[derive(Deserialize)]
#[serde(rename = "Principal")]
struct PrincipalIn(String);

impl Serialize for Principal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        PrincipalOut(self.as_str()).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Principal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Principal, D::Error> {
        let PrincipalIn(text) = PrincipalIn::deserialize(deserializer)?;
        Ok(Principal(ThinText::new(&text)))
    }
}

/// A role's name: 1..=[`limits::ROLE_NAME_BYTES_MAX`] bytes, no whitespace.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RoleName(String);

impl RoleName {
    /// Validates `raw` as a role name.
    pub fn parse(raw: &str) -> Result<RoleName, LockError> {
        check_identifier("role", raw, Limit::RoleNameBytesMax)?;
        Ok(RoleName(raw.to_owned()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RoleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a rule's name prefix: any text a lock name could start with
/// (the empty prefix covers every name), at most
/// [`limits::NAME_BYTES_MAX`] bytes, no control characters.
pub fn check_prefix(prefix: &str) -> Result<(), LockError> {
    crate::command::check_text("prefix", prefix, Limit::NameBytesMax)
}

/// What a rule allows or denies on a prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Verb {
    /// Read: get, ls, events, diagnose, incidents, fenced get.
    Observe,
    /// Grant leases, acquire, release and renew one's own, fenced put under
    /// locks one holds.
    Lock,
    /// Force-release (break-glass).
    Force,
    /// Everything, and on the empty prefix: roles, users, tokens, audit,
    /// membership, enabling auth.
    Admin,
}

impl Verb {
    /// Every verb.
    pub const ALL: [Verb; 4] = [Verb::Observe, Verb::Lock, Verb::Force, Verb::Admin];

    /// Whether holding `self` implies `other`: `admin` implies every verb,
    /// `lock` and `force` imply `observe`, each verb implies itself.
    pub fn implies(self, other: Verb) -> bool {
        self == other
            || self == Verb::Admin
            || (other == Verb::Observe && matches!(self, Verb::Lock | Verb::Force))
    }

    /// The verb's word (`lock`), as the CLI and errors spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Observe => "observe",
            Verb::Lock => "lock",
            Verb::Force => "force",
            Verb::Admin => "admin",
        }
    }

    /// Parses a verb's word.
    pub fn parse(raw: &str) -> Result<Verb, LockError> {
        Verb::ALL
            .into_iter()
            .find(|verb| verb.as_str() == raw)
            .ok_or_else(|| {
                LockError::invalid(
                    "verb",
                    format!("{raw:?} is not observe, lock, force or admin"),
                )
            })
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_as_the_boxed_text_it_was_so_old_snapshots_read() {
        #[derive(Serialize)]
        #[serde(rename = "Principal")]
        struct Before(Box<str>);
        let principal = Principal::parse("alice@example.org").unwrap();
        let before = Before("alice@example.org".into());
        let stored = postcard::to_allocvec(&before).unwrap();
        assert_eq!(postcard::to_allocvec(&principal).unwrap(), stored);
        assert_eq!(
            postcard::from_bytes::<Principal>(&stored).unwrap(),
            principal
        );
        assert_eq!(size_of::<Option<Principal>>(), 8);
    }
}
