//! Immutable text (or bytes) shared by its clones through a one-word handle.
//!
//! Why: a held lock's name is the lock table's key and an entry of its
//! lease's holds. As `Arc<str>` each of those places keeps a 16-byte handle
//! (pointer and length), and the shared block starts with 16 bytes of counts
//! (strong and weak) before the text. Here the handle is one pointer, and
//! the block starts with an 8-byte header: a 32-bit count of handles and the
//! 32-bit length. With a million held locks, the lock table's B-tree leaves
//! take 288 bytes for sixteen names instead of 416, and a 45-byte name takes
//! a 64-byte heap block instead of an 80-byte one (docs/DESIGN.md §6d).
//! A lease row's owner ([`crate::lease_owner`]) packs its fields into
//! [`ThinBytes`], the same block holding bytes that are not all text.
//!
//! This is the crate's only `unsafe` code. It does the four things a shared
//! pointer needs: build the block, read it, count handles, free it. Text is
//! never written after it is built, so sharing it across threads needs only
//! the atomic count, with `Arc`'s orderings.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, Ordering};

/// The block's start; the bytes follow it.
#[repr(C)]
struct Header {
    /// Live handles to this block.
    handles: AtomicU32,
    /// The length of the bytes.
    len: u32,
}

/// More handles than this to one block abort the process, as `Arc` does
/// past `isize::MAX`: the count must never wrap to a block freed in use.
/// No caller comes near (a handle is 8 bytes: 2^31 of them is 16 GiB).
const HANDLES_MAX: u32 = i32::MAX as u32;

/// Text of at most `u32::MAX` bytes, shared by clones. Equal, ordered and
/// hashed exactly as its `str`, so a map keyed by it (or by a type around
/// it, as `LockName`, that lends out its `str` through `Borrow`) finds a
/// key from the plain text.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThinText(ThinBytes);

impl ThinText {
    /// A block holding a copy of `text`.
    ///
    /// # Panics
    /// If `text` is longer than `u32::MAX` bytes. Every caller's text is
    /// bounded far below (lock names by `NAME_BYTES_MAX`, and messages by
    /// the transports' limits).
    pub fn new(text: &str) -> ThinText {
        ThinText(ThinBytes::new(text.as_bytes()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // SAFETY: the bytes were copied from a `&str` (valid UTF-8) in
        // `new` and are never written since.
        unsafe { std::str::from_utf8_unchecked(self.0.as_bytes()) }
    }

    /// Whether both handles share one block (not just equal text).
    pub fn ptr_eq(&self, other: &ThinText) -> bool {
        self.0.ptr_eq(&other.0)
    }
}

impl std::hash::Hash for ThinText {
    /// As the `str`: a byte slice hashes differently (its length first).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Debug for ThinText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// At most `u32::MAX` bytes, shared by clones. Ordered as byte strings
/// (which for UTF-8 is the order of the text).
pub struct ThinBytes {
    block: NonNull<Header>,
}

// SAFETY: the bytes are immutable once built and the handle count is
// atomic, as for `Arc<[u8]>`, which is `Send` and `Sync`.
unsafe impl Send for ThinBytes {}
// SAFETY: as above.
unsafe impl Sync for ThinBytes {}

impl ThinBytes {
    /// A block holding a copy of `bytes`.
    ///
    /// # Panics
    /// If there are more than `u32::MAX` bytes (see [`ThinText::new`]).
    pub fn new(bytes: &[u8]) -> ThinBytes {
        let len = u32::try_from(bytes.len()).expect("at most 4 GiB");
        let layout = block_layout(len);
        // SAFETY: the layout is non-zero in size (the header's 8 bytes).
        let raw = unsafe { alloc(layout) }.cast::<Header>();
        let Some(block) = NonNull::new(raw) else {
            handle_alloc_error(layout)
        };
        let header = Header {
            handles: AtomicU32::new(1),
            len,
        };
        // SAFETY: `block` is valid for `layout.size()` bytes and aligned for
        // `Header`; the header and then `len` bytes fit in it, and the new
        // block does not overlap `bytes`.
        unsafe {
            block.as_ptr().write(header);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), bytes_start(block), bytes.len());
        }
        ThinBytes { block }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        let len = self.header().len as usize;
        // SAFETY: the block lives while this handle does, and holds `len`
        // initialised bytes after its header, never written since.
        unsafe { std::slice::from_raw_parts(bytes_start(self.block), len) }
    }

    /// Whether both handles share one block (not just equal bytes).
    pub fn ptr_eq(&self, other: &ThinBytes) -> bool {
        self.block == other.block
    }

    fn header(&self) -> &Header {
        // SAFETY: the block lives while this handle does, and starts with
        // an initialised header.
        unsafe { self.block.as_ref() }
    }
}

/// The block of `len` bytes: the header, then the bytes.
fn block_layout(len: u32) -> Layout {
    let text = Layout::array::<u8>(len as usize).expect("a u32 length fits a layout");
    let (layout, _) = Layout::new::<Header>()
        .extend(text)
        .expect("a u32 length fits a layout");
    layout.pad_to_align()
}

/// Where the bytes of `block` start.
fn bytes_start(block: NonNull<Header>) -> *mut u8 {
    // SAFETY (of the `add`): the header is the block's first
    // `size_of::<Header>()` bytes, so the result is within the block (or
    // one past its end when there are none).
    unsafe { block.as_ptr().cast::<u8>().add(size_of::<Header>()) }
}

impl Clone for ThinBytes {
    fn clone(&self) -> ThinBytes {
        // Relaxed, as `Arc::clone`: a new handle comes from an existing
        // one, which keeps the block alive meanwhile.
        let before = self.header().handles.fetch_add(1, Ordering::Relaxed);
        if before >= HANDLES_MAX {
            std::process::abort();
        }
        ThinBytes { block: self.block }
    }
}

impl Drop for ThinBytes {
    fn drop(&mut self) {
        // Release, then Acquire before freeing, as `Arc::drop`: every use of
        // the block through other handles happens before it is freed.
        if self.header().handles.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        let layout = block_layout(self.header().len);
        // SAFETY: this was the last handle, so nothing else reads the
        // block; it was allocated in `new` with this same layout.
        unsafe { dealloc(self.block.as_ptr().cast(), layout) }
    }
}

impl PartialEq for ThinBytes {
    fn eq(&self, other: &ThinBytes) -> bool {
        self.ptr_eq(other) || self.as_bytes() == other.as_bytes()
    }
}

impl Eq for ThinBytes {}

impl PartialOrd for ThinBytes {
    fn partial_cmp(&self, other: &ThinBytes) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ThinBytes {
    fn cmp(&self, other: &ThinBytes) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl std::hash::Hash for ThinBytes {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl fmt::Debug for ThinBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_bytes(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_handle_is_one_word_and_the_block_has_an_eight_byte_header() {
        assert_eq!(size_of::<ThinText>(), 8);
        assert_eq!(size_of::<Option<ThinText>>(), 8);
        assert_eq!(size_of::<ThinBytes>(), 8);
        assert_eq!(block_layout(45).size(), 8 + 45 + 3);
        assert_eq!(block_layout(0).size(), 8);
    }

    #[test]
    fn reads_back_any_text() {
        for text in ["", "a", "jobs/nightly", "naïve/日本語/🔒", &"x".repeat(512)] {
            let thin = ThinText::new(text);
            assert_eq!(thin.as_str(), text);
            assert_eq!(format!("{thin:?}"), format!("{text:?}"));
        }
        let bytes = ThinBytes::new(&[0, 255, 7]);
        assert_eq!(bytes.as_bytes(), [0, 255, 7]);
        assert_eq!(bytes, ThinBytes::new(&[0, 255, 7]));
    }

    #[test]
    fn clones_share_the_block_and_equal_text_is_equal_wherever_it_lives() {
        let a = ThinText::new("jobs/a");
        let copy = a.clone();
        let twin = ThinText::new("jobs/a");
        assert!(a.ptr_eq(&copy));
        assert!(!a.ptr_eq(&twin));
        assert_eq!(a, twin);
        assert!(ThinText::new("jobs/a") < ThinText::new("jobs/b"));
        drop(a);
        assert_eq!(copy.as_str(), "jobs/a", "a clone outlives the original");
    }

    #[test]
    fn hashes_as_its_text_so_maps_keyed_by_it_find_the_plain_text() {
        use std::hash::BuildHasher;
        let hasher = std::collections::hash_map::RandomState::new();
        for text in ["", "jobs/a", "naïve/日本語"] {
            assert_eq!(hasher.hash_one(ThinText::new(text)), hasher.hash_one(text));
        }
        let names: std::collections::HashMap<crate::LockName, u8> =
            [(crate::LockName::parse("jobs/a").unwrap(), 1)].into();
        assert_eq!(names.get("jobs/a"), Some(&1), "found by its str (Borrow)");
    }

    #[test]
    fn handles_cloned_and_dropped_across_threads_keep_the_text() {
        let shared = Arc::new(ThinText::new("jobs/shared"));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let mut kept = Vec::new();
                    for round in 0..10_000 {
                        kept.push((*shared).clone());
                        if round % 3 == 0 {
                            kept.clear();
                        }
                    }
                    kept.iter().all(|t| t.as_str() == "jobs/shared")
                })
            })
            .collect();
        for thread in threads {
            assert!(thread.join().unwrap());
        }
        assert_eq!(shared.0.header().handles.load(Ordering::Relaxed), 1);
    }
}
