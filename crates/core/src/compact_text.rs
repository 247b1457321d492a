//! Text that is usually short, kept inline when it fits.
//!
//! Why: every lease keeps at least two request ids (its grant's, in its row
//! and the state's grant map, and its acquire's, in its dedup memory). As
//! `Arc<str>` each is a heap block of 64 bytes with the allocator's header;
//! with a million leases holding one lock each that was 160 MB of the
//! server's heap (docs/DESIGN.md §6d). Text of up to [`INLINE_MAX`] bytes
//! (the client library's ids are at most 21) now lives in the 24 bytes the
//! value takes anyway; longer text is shared as before.
//!
//! Equality, order and hashing are those of the text, whichever way it is
//! kept, so a value read back from a snapshot (inline) and one from an old
//! build (shared) are the same key.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The longest text kept inline: 24 bytes less the tag and the length.
pub const INLINE_MAX: usize = 22;

/// Text, inline up to [`INLINE_MAX`] bytes, shared above.
#[derive(Clone)]
pub enum CompactText {
    /// Short text: its length and bytes (the rest zero).
    Inline { len: u8, bytes: [u8; INLINE_MAX] },
    /// Longer text, shared by clones.
    Shared(Arc<str>),
}

impl CompactText {
    /// `text`, inline if it fits.
    pub fn new(text: &str) -> CompactText {
        if text.len() > INLINE_MAX {
            return CompactText::Shared(Arc::from(text));
        }
        let mut bytes = [0; INLINE_MAX];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        CompactText::Inline {
            len: text.len() as u8,
            bytes,
        }
    }

    /// The text's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            CompactText::Inline { len, bytes } => &bytes[..usize::from(*len)],
            CompactText::Shared(text) => text.as_bytes(),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match self {
            CompactText::Inline { .. } => std::str::from_utf8(self.as_bytes())
                .expect("inline bytes are copied from a str whole"),
            CompactText::Shared(text) => text,
        }
    }
}

impl PartialEq for CompactText {
    fn eq(&self, other: &CompactText) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for CompactText {}

impl PartialOrd for CompactText {
    fn partial_cmp(&self, other: &CompactText) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CompactText {
    /// Byte order, which is `str`'s order.
    fn cmp(&self, other: &CompactText) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl Hash for CompactText {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl std::fmt::Debug for CompactText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_value_takes_24_bytes_and_short_text_no_heap() {
        assert_eq!(std::mem::size_of::<CompactText>(), 24);
        assert!(matches!(
            CompactText::new(&"x".repeat(INLINE_MAX)),
            CompactText::Inline { .. }
        ));
        assert!(matches!(
            CompactText::new(&"x".repeat(INLINE_MAX + 1)),
            CompactText::Shared(_)
        ));
    }

    proptest! {
        #[test]
        fn text_comes_back_whole_and_compares_as_str(a in "\\PC{0,30}", b in "\\PC{0,30}") {
            let (x, y) = (CompactText::new(&a), CompactText::new(&b));
            prop_assert_eq!(x.as_str(), a.as_str());
            prop_assert_eq!(x.cmp(&y), a.cmp(&b));
            prop_assert_eq!(x == y, a == b);
            let shared = CompactText::Shared(Arc::from(a.as_str()));
            prop_assert_eq!(&shared, &x);
        }
    }
}
