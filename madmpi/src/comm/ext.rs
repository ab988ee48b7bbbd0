//! Feature state attached to a communicator or to the runtime, one value per type: a feature
//! (collectives, topologies, buffered sends, fault tolerance...) keeps what it needs in a type
//! of its own, which this module stores without knowing it. So the communicator holds every
//! feature's state without naming any feature, and features stay above it.
//!
//! Values are attached once and never removed (they go with their owner), so a reader gets a
//! plain reference, without a lock: the slots form an append-only list of `OnceLock`s.
//!
//! Owns the storage only; what a value means is its feature's.

use std::any::Any;
use std::sync::OnceLock;

/// A feature's state, attached by type to a communicator ([`crate::comm::Comm::extensions`]) or
/// to the runtime ([`crate::comm::Runtime::extensions`]).
pub(crate) trait Extension: Any + Send + Sync + Sized {
    /// What a duplicate of the communicator (`MPI_Comm_dup`) gets: by default nothing (its
    /// feature starts afresh there). The runtime's values are never duplicated.
    fn dup(&self) -> Option<Self> {
        None
    }
}

type Value = Box<dyn Any + Send + Sync>;

struct Slot {
    value: Value,
    /// The value's [`Extension::dup`], type-erased.
    dup: fn(&(dyn Any + Send + Sync)) -> Option<Value>,
    next: OnceLock<Box<Slot>>,
}

fn dup_of<T: Extension>(v: &(dyn Any + Send + Sync)) -> Option<Value> {
    let v: &T = v.downcast_ref().expect("a slot's value has the slot's type");
    v.dup().map(|d| Box::new(d) as Value)
}

/// The values attached to one owner.
#[derive(Default)]
pub(crate) struct Extensions {
    head: OnceLock<Box<Slot>>,
}

impl Extensions {
    fn slots(&self) -> impl Iterator<Item = &Slot> {
        std::iter::successors(self.head.get(), |s| s.next.get()).map(|b| &**b)
    }

    /// The value of type `T`, if one is attached.
    pub(crate) fn get<T: Extension>(&self) -> Option<&T> {
        self.slots().find_map(|s| s.value.downcast_ref())
    }

    /// The value of type `T`, attaching `make()`'s first if there is none (when threads race,
    /// the first value attached stays and the others are dropped).
    pub(crate) fn get_or_insert_with<T: Extension>(&self, make: impl FnOnce() -> T) -> &T {
        match self.get::<T>() {
            Some(v) => v,
            None => self.insert(make()),
        }
    }

    /// The value of type `T`, attaching its default first if there is none.
    pub(crate) fn get_or_default<T: Extension + Default>(&self) -> &T {
        self.get_or_insert_with(T::default)
    }

    /// Attaches `v` unless a value of its type is there already; returns the value attached.
    pub(crate) fn insert<T: Extension>(&self, v: T) -> &T {
        let slot = Box::new(Slot { value: Box::new(v), dup: dup_of::<T>, next: OnceLock::new() });
        let attached = self.attach(slot, |s| s.value.is::<T>());
        attached.value.downcast_ref().expect("a slot of type T")
    }

    /// Appends `slot` at the end of the list unless `same` finds one of its type on the way,
    /// which is returned instead.
    fn attach(&self, mut slot: Box<Slot>, same: impl Fn(&Slot) -> bool) -> &Slot {
        let mut link = &self.head;
        loop {
            match link.get() {
                Some(s) if same(s) => return s,
                Some(s) => link = &s.next,
                // Another thread may append first: then look at what it appended.
                None => match link.set(slot) {
                    Ok(()) => return link.get().expect("just set"),
                    Err(back) => slot = back,
                },
            }
        }
    }

    /// What a duplicate of the owner starts with: the values whose [`Extension::dup`] gives one.
    pub(crate) fn dup(&self) -> Extensions {
        let new = Extensions::default();
        for s in self.slots() {
            if let Some(value) = (s.dup)(&*s.value) {
                new.attach(Box::new(Slot { value, dup: s.dup, next: OnceLock::new() }), |_| false);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Debug, PartialEq)]
    struct Fresh(u32);
    impl Extension for Fresh {}

    #[derive(Debug, PartialEq)]
    struct Shared(Arc<u32>);
    impl Extension for Shared {
        fn dup(&self) -> Option<Self> {
            Some(Shared(self.0.clone()))
        }
    }

    #[test]
    fn one_value_per_type_kept_or_shared_by_duplicates() {
        let e = Extensions::default();
        assert_eq!(e.get::<Fresh>(), None);
        assert_eq!(e.insert(Fresh(1)), &Fresh(1));
        assert_eq!(e.insert(Fresh(2)), &Fresh(1), "the first value stays");
        assert_eq!(e.get_or_insert_with(|| Shared(Arc::new(7))), &Shared(Arc::new(7)));
        assert_eq!(e.get_or_insert_with(|| Shared(Arc::new(8))).0.as_ref(), &7);
        let d = e.dup();
        assert_eq!(d.get::<Fresh>(), None, "a duplicate starts afresh by default");
        assert!(Arc::ptr_eq(&d.get::<Shared>().unwrap().0, &e.get::<Shared>().unwrap().0));
    }

    #[test]
    fn racing_threads_attach_one_value() {
        let e = Extensions::default();
        let got: Vec<usize> = std::thread::scope(|t| {
            let hs: Vec<_> = (0..8)
                .map(|i| {
                    let e = &e;
                    t.spawn(move || e.get_or_insert_with(|| Fresh(i)) as *const Fresh as usize)
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|&p| p == got[0]), "every thread sees the same value");
        assert_eq!(e.slots().count(), 1);
    }
}
