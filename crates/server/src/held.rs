//! Items a thread makes during a scope, held and handed on together when
//! the scope ends. The apply uses it twice: its stderr lines
//! ([`crate::log_lines`]) go out in one `write`, and its per-lock lines
//! ([`crate::sinks::lock_lines`]) reach their thread in one message, so a
//! batch costs one system call and one wake-up instead of one per line.

use std::cell::RefCell;
use std::thread::LocalKey;

/// The thread-local slot a [`Held`] keeps its items in (`None`: no scope
/// open on this thread).
pub type Slot<T> = RefCell<Option<Vec<T>>>;

/// Holding of `T`s in a thread-local [`Slot`].
pub struct Held<T: 'static> {
    slot: &'static LocalKey<Slot<T>>,
}

impl<T> Held<T> {
    /// Holding in `slot` (declared with `thread_local!`, starting `None`).
    pub const fn new(slot: &'static LocalKey<Slot<T>>) -> Held<T> {
        Held { slot }
    }

    /// Runs `f`, holding what this thread adds meanwhile, then hands it to
    /// `out` (once, if anything was added; even if `f` panics). A scope
    /// opened inside another leaves its items to the outer one.
    pub fn scope<R>(&self, f: impl FnOnce() -> R, out: impl FnOnce(Vec<T>)) -> R {
        let outer = self.slot.with(|slot| {
            let mut slot = slot.borrow_mut();
            let outer = slot.is_none();
            if outer {
                *slot = Some(Vec::new());
            }
            outer
        });
        if !outer {
            return f();
        }
        /// Hands the items on even if `f` panics.
        struct Release<T: 'static, O: FnOnce(Vec<T>)> {
            slot: &'static LocalKey<Slot<T>>,
            out: Option<O>,
        }
        impl<T, O: FnOnce(Vec<T>)> Drop for Release<T, O> {
            fn drop(&mut self) {
                let items = self
                    .slot
                    .with(|slot| slot.borrow_mut().take())
                    .unwrap_or_default();
                if let Some(out) = self.out.take() {
                    if !items.is_empty() {
                        out(items);
                    }
                }
            }
        }
        let _release = Release {
            slot: self.slot,
            out: Some(out),
        };
        f()
    }

    /// Adds to the held items with `add` if a scope is open on this
    /// thread; says whether it did (`add` is not called otherwise).
    pub fn add_with(&self, add: impl FnOnce(&mut Vec<T>)) -> bool {
        self.slot.with(|slot| match slot.borrow_mut().as_mut() {
            Some(items) => {
                add(items);
                true
            }
            None => false,
        })
    }

    /// Holds `item` if a scope is open on this thread, else gives it back.
    pub fn add(&self, item: T) -> Result<(), T> {
        let mut item = Some(item);
        if self.add_with(|items| items.extend(item.take())) {
            Ok(())
        } else {
            Err(item.expect("not taken when no scope is open"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static NUMBERS: Slot<u32> = const { RefCell::new(None) };
    }
    const HELD_NUMBERS: Held<u32> = Held::new(&NUMBERS);

    #[test]
    fn outside_a_scope_an_item_is_given_back() {
        assert_eq!(HELD_NUMBERS.add(7), Err(7));
    }

    #[test]
    fn items_added_in_a_scope_are_handed_on_once_in_order() {
        let mut outs = Vec::new();
        let answer = HELD_NUMBERS.scope(
            || {
                HELD_NUMBERS.add(1).unwrap();
                HELD_NUMBERS.scope(|| HELD_NUMBERS.add(2).unwrap(), |_| panic!("inner"));
                HELD_NUMBERS.add(3).unwrap();
                42
            },
            |items| outs.push(items),
        );
        assert_eq!((answer, outs), (42, vec![vec![1, 2, 3]]));
        assert_eq!(HELD_NUMBERS.add(4), Err(4), "the scope is closed");
    }
}
