//! Lock names for the client: [`LockName`] (from `leasehold-core`) is the one
//! place names are built and validated, for acquire and release alike;
//! [`IntoLockName`] lets every call take a ready name or text to validate.

use crate::error::Error;
pub use leasehold_core::LockName;

/// Anything a lock name can come from. Text is validated (1..=512 bytes of
/// UTF-8, no control characters); a [`LockName`] already was.
pub trait IntoLockName {
    /// The validated name.
    fn into_lock_name(self) -> Result<LockName, Error>;
}

impl IntoLockName for LockName {
    fn into_lock_name(self) -> Result<LockName, Error> {
        Ok(self)
    }
}

impl IntoLockName for &LockName {
    fn into_lock_name(self) -> Result<LockName, Error> {
        Ok(self.clone())
    }
}

impl IntoLockName for &str {
    fn into_lock_name(self) -> Result<LockName, Error> {
        Ok(LockName::parse(self)?)
    }
}

impl IntoLockName for String {
    fn into_lock_name(self) -> Result<LockName, Error> {
        self.as_str().into_lock_name()
    }
}

impl IntoLockName for &String {
    fn into_lock_name(self) -> Result<LockName, Error> {
        self.as_str().into_lock_name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_validated_and_names_pass_through() {
        assert!(matches!(
            "".into_lock_name(),
            Err(Error::InvalidArgument { field, .. }) if field == "name"
        ));
        let built = LockName::from_parts("billing", ["invoices"]).unwrap();
        assert_eq!(built.clone().into_lock_name().unwrap(), built);
        assert_eq!("billing/invoices".into_lock_name().unwrap(), built);
    }
}
