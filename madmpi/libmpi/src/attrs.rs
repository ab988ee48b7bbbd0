//! Communicator and datatype attributes for C: keyvals whose callbacks are C functions
//! ([`CAttr`], the `madmpi::attr` rules applied to them), keyval handles ([`Keyvals`], one
//! registry per kind of object), each communicator's attribute table ([`Attrs`]), the datatypes'
//! tables by object ([`ObjectAttrs`]) and the predefined attributes' values.
//!
//! Callbacks run with no lock held, so they may call MPI (as they often do). A table is lent
//! out while an operation uses it: another thread's call on the same communicator waits for it,
//! and a call from inside one of that communicator's own callbacks (on the same thread) fails
//! with `MPI_ERR_OTHER` instead of deadlocking. Calls on other communicators are free.
//!
//! A freed keyval's handle is invalid at once (`MPI_ERR_KEYVAL`), while the attributes already
//! set with it live on and keep their callbacks (MPICH still accepts the old handle value).
//!
//! Owns keyval handles and the C side of attribute callbacks; it must not decide callback
//! orders or error rules (`madmpi::attr` does).

use crate::state::State;
use crate::table::Table;
use madmpi::abi::{self, Handle, ObjectType, UserObject};
use madmpi::attr::{AttrCallbacks, AttrTable, AttrValue, Environment, Keyval, KeyvalId, KeyvalRegistry};
use madmpi::attr::{PredefinedKey, ProcRef};
use madmpi::error::{Error, Result};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::ThreadId;

/// `MPI_Comm_copy_attr_function`.
pub(crate) type CopyFn =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_delete_attr_function`.
pub(crate) type DeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// The callbacks of a keyval created by `MPI_Comm_create_keyval` (a null copy function is
/// `MPI_COMM_NULL_COPY_FN`: never copied; a null delete function does nothing).
pub(crate) struct CAttr {
    copy: Option<CopyFn>,
    delete: Option<DeleteFn>,
    /// `extra_state`, an address only given back to the callbacks.
    extra_state: usize,
    /// The keyval's handle, passed to the callbacks.
    handle: OnceLock<c_int>,
}

impl CAttr {
    fn keyval(&self) -> c_int {
        self.handle.get().copied().unwrap_or(abi::MPI_KEYVAL_INVALID)
    }

    fn extra(&self) -> *mut c_void {
        std::ptr::with_exposed_provenance_mut(self.extra_state)
    }
}

/// The C code a callback returned, as the error the operation returns (that very code).
fn callback_result(rc: c_int) -> Result<()> {
    if rc == 0 { Ok(()) } else { Err(Error::from_code(rc)) }
}

impl AttrCallbacks for CAttr {
    /// The communicator's handle.
    type Object = Handle;
    /// The attribute's value, a `void *`.
    type Value = usize;

    fn copy(&self, old: &Handle, _keyval: KeyvalId, value: &usize) -> Result<Option<usize>> {
        let Some(copy) = self.copy else { return Ok(None) };
        let mut out: *mut c_void = std::ptr::null_mut();
        let mut flag: c_int = 0;
        let value_in: *mut c_void = std::ptr::with_exposed_provenance_mut(*value);
        // SAFETY: a copy function given to MPI_Comm_create_keyval, called as MPI specifies;
        // `out` and `flag` are locals that outlive the call.
        let rc =
            unsafe { copy(*old, self.keyval(), self.extra(), value_in, (&raw mut out).cast(), &mut flag) };
        callback_result(rc)?;
        Ok((flag != 0).then(|| out.expose_provenance()))
    }

    fn delete(&self, object: &Handle, _keyval: KeyvalId, value: &usize) -> Result<()> {
        let Some(delete) = self.delete else { return Ok(()) };
        let value: *mut c_void = std::ptr::with_exposed_provenance_mut(*value);
        // SAFETY: a delete function given to MPI_Comm_create_keyval, called as MPI specifies.
        callback_result(unsafe { delete(*object, self.keyval(), value, self.extra()) })
    }
}

/// A resolved keyval handle.
pub(crate) enum Key {
    /// `MPI_TAG_UB`, `MPI_HOST`, ...
    Predefined(PredefinedKey),
    /// A live keyval from `MPI_Comm_create_keyval`.
    User(Keyval<CAttr>),
}

/// The keyvals of the program for one kind of object, by handle.
pub(crate) struct Keyvals {
    target: ObjectType,
    registry: KeyvalRegistry<CAttr>,
    handles: Table<KeyvalId>,
}

impl Keyvals {
    /// The communicator keyvals.
    pub(crate) fn new() -> Self {
        Keyvals::for_objects(ObjectType::Comm)
    }

    /// The keyvals of objects of type `target` (the predefined attributes are communicators').
    pub(crate) fn for_objects(target: ObjectType) -> Self {
        Keyvals { target, registry: KeyvalRegistry::new(), handles: Table::new(UserObject::Keyval(target)) }
    }

    /// `MPI_Comm_create_keyval`: a new keyval's handle.
    pub(crate) fn create(
        &self,
        copy: Option<CopyFn>,
        delete: Option<DeleteFn>,
        extra_state: *mut c_void,
    ) -> Result<Handle> {
        let callbacks =
            CAttr { copy, delete, extra_state: extra_state.expose_provenance(), handle: OnceLock::new() };
        let id = self.registry.create(callbacks)?;
        let Some(h) = self.handles.insert(id) else {
            self.registry.free(id)?;
            return Err(Error::intern("too many live keyvals"));
        };
        let _ = self.registry.get(id)?.callbacks().handle.set(h);
        Ok(h)
    }

    /// The keyval of handle `h`: `MPI_ERR_KEYVAL` for anything but a predefined or live
    /// keyval of this kind of object (as MPICH reports, for other kinds of handles too).
    pub(crate) fn resolve(&self, h: c_int) -> Result<Key> {
        if let Some(k) = predefined(h).filter(|_| self.target == ObjectType::Comm) {
            return Ok(Key::Predefined(k));
        }
        let id = self.handles.get(h).ok_or_else(|| invalid(h, self.target))?;
        Ok(Key::User(self.registry.get(id)?))
    }

    /// `MPI_Comm_free_keyval`: the handle becomes invalid; attributes set with it stay.
    pub(crate) fn free(&self, h: c_int) -> Result<()> {
        match self.resolve(h)? {
            Key::Predefined(k) => Err(k.read_only("MPI_Comm_free_keyval")),
            Key::User(kv) => {
                let _ = self.handles.remove(h);
                self.registry.free(kv.id())
            }
        }
    }
}

fn invalid(h: c_int, target: ObjectType) -> Error {
    Error::keyval(match abi::keyval_target(h) {
        _ if h == abi::MPI_KEYVAL_INVALID => "MPI_KEYVAL_INVALID is no attribute key".to_string(),
        Some(t) if t != target => format!("keyval {h:#x} is not a {target:?} keyval ({t:?})"),
        _ => format!("invalid attribute key {h:#x} (not a keyval, or freed)"),
    })
}

/// The predefined attribute of handle `h`.
fn predefined(h: c_int) -> Option<PredefinedKey> {
    Some(match h {
        abi::MPI_TAG_UB => PredefinedKey::TagUb,
        abi::MPI_HOST => PredefinedKey::Host,
        abi::MPI_IO => PredefinedKey::Io,
        abi::MPI_WTIME_IS_GLOBAL => PredefinedKey::WtimeIsGlobal,
        abi::MPI_UNIVERSE_SIZE => PredefinedKey::UniverseSize,
        abi::MPI_LASTUSEDCODE => PredefinedKey::LastUsedCode,
        abi::MPI_APPNUM => PredefinedKey::AppNum,
        _ => return None,
    })
}

/// Where the predefined attributes' values live: C reads them through the pointer
/// `MPI_Comm_get_attr` returns, at any time after.
static VALUES: [AtomicI32; PredefinedKey::ALL.len()] =
    [const { AtomicI32::new(0) }; PredefinedKey::ALL.len()];

/// The address of predefined attribute `key`'s value (an `int`), `None` when it is absent.
/// Values: those `madmpi::attr` computes for this library (tags up to `madmpi::comm::tags::TAG_UB`;
/// no universe size nor application number known: absent).
pub(crate) fn predefined_value(key: PredefinedKey) -> Option<*mut c_int> {
    let env = Environment {
        tag_ub: madmpi::comm::tags::TAG_UB,
        last_used_code: madmpi::error::user_errors().last_used_code(),
        ..Environment::default()
    };
    let n = match key.value(&env)? {
        AttrValue::Int(n) => n,
        AttrValue::Bool(b) => c_int::from(b),
        AttrValue::Proc(ProcRef::Null) => abi::MPI_PROC_NULL,
        AttrValue::Proc(ProcRef::Any) => abi::MPI_ANY_SOURCE,
        AttrValue::Proc(ProcRef::Rank(r)) => c_int::try_from(r).unwrap_or(c_int::MAX),
    };
    let cell = &VALUES[PredefinedKey::ALL.iter().position(|&k| k == key)?];
    if cell.load(Relaxed) != n {
        cell.store(n, Relaxed);
    }
    Some(cell.as_ptr())
}

/// The attributes of one communicator, lent to one operation at a time.
pub(crate) struct Attrs {
    slot: Mutex<Slot>,
    returned: Condvar,
}

struct Slot {
    /// `None` while lent.
    table: Option<AttrTable<CAttr>>,
    /// The thread the table is lent to.
    user: Option<ThreadId>,
}

impl Attrs {
    /// No attributes.
    pub(crate) fn new() -> Self {
        Attrs::with_table(AttrTable::new())
    }

    /// These attributes.
    pub(crate) fn with_table(table: AttrTable<CAttr>) -> Self {
        Attrs { slot: Mutex::new(Slot { table: Some(table), user: None }), returned: Condvar::new() }
    }

    /// Runs `f` on the table, which is lent to it (see the module's documentation).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut AttrTable<CAttr>) -> R) -> Result<R> {
        let me = std::thread::current().id();
        let mut slot = self.lock();
        let table = loop {
            if let Some(t) = slot.table.take() {
                slot.user = Some(me);
                break t;
            }
            if slot.user == Some(me) {
                return Err(Error::other(
                    "a communicator's attributes cannot be used from inside one of its own attribute callbacks",
                ));
            }
            slot = self.returned.wait(slot).unwrap_or_else(PoisonError::into_inner);
        };
        drop(slot);
        let mut lent = Lent { attrs: self, table: Some(table) };
        Ok(f(lent.table.as_mut().expect("lent until dropped")))
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        // Updates are single assignments: a poisoned lock still holds a consistent slot.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A lent table, returned when dropped (after a panic too).
struct Lent<'a> {
    attrs: &'a Attrs,
    table: Option<AttrTable<CAttr>>,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        let mut slot = self.attrs.lock();
        slot.table = self.table.take();
        slot.user = None;
        drop(slot);
        self.attrs.returned.notify_all();
    }
}

/// The attribute tables of objects kept in the engine (datatypes), by object: every handle to
/// an object sees its attributes. A table exists once an attribute was set.
pub(crate) struct ObjectAttrs {
    tables: Mutex<HashMap<usize, Arc<Attrs>>>,
}

impl ObjectAttrs {
    pub(crate) fn new() -> Self {
        ObjectAttrs { tables: Mutex::new(HashMap::new()) }
    }

    /// The table of object `id`, if it has one.
    pub(crate) fn get(&self, id: usize) -> Option<Arc<Attrs>> {
        self.lock().get(&id).cloned()
    }

    /// The table of object `id`, made if needed.
    pub(crate) fn get_or_new(&self, id: usize) -> Arc<Attrs> {
        self.lock().entry(id).or_insert_with(|| Arc::new(Attrs::new())).clone()
    }

    /// Sets the table of object `id` (a duplicate's copied attributes).
    pub(crate) fn insert(&self, id: usize, attrs: Attrs) {
        self.lock().insert(id, Arc::new(attrs));
    }

    /// Forgets the table of object `id` (freed, its attributes deleted).
    pub(crate) fn remove(&self, id: usize) {
        self.lock().remove(&id);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<usize, Arc<Attrs>>> {
        // Single insertions and removals: a poisoned map is still consistent.
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// At `MPI_Finalize`, before anything else: the attributes of `MPI_COMM_SELF`, then those of
/// `MPI_COMM_WORLD`, are deleted (MPI requires the first, MPICH 4.0.2 does both, in this
/// order), their callbacks running while MPI is still fully usable. The first error is
/// returned once both were tried.
pub(crate) fn delete_at_finalize(st: &State) -> Result<()> {
    let s = st.self_comm.attrs.with(|t| t.delete_all(&abi::MPI_COMM_SELF)).and_then(|r| r);
    let w = st.world.attrs.with(|t| t.delete_all(&abi::MPI_COMM_WORLD)).and_then(|r| r);
    s.and(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    #[test]
    fn keyval_handles() {
        let k = Keyvals::new();
        let h = k.create(None, None, std::ptr::null_mut()).unwrap();
        assert_eq!(abi::keyval_target(h), Some(ObjectType::Comm));
        let Key::User(kv) = k.resolve(h).unwrap() else { panic!("a user keyval") };
        assert_eq!(kv.callbacks().keyval(), h);
        assert!(matches!(k.resolve(abi::MPI_TAG_UB), Ok(Key::Predefined(PredefinedKey::TagUb))));
        assert_eq!(k.free(abi::MPI_TAG_UB).unwrap_err().class(), ErrorClass::Keyval);
        k.free(h).unwrap();
        for bad in [h, abi::MPI_KEYVAL_INVALID, abi::MPI_GROUP_EMPTY, abi::MPI_COMM_WORLD] {
            assert_eq!(k.resolve(bad).err().map(|e| e.class()), Some(ErrorClass::Keyval), "{bad:#x}");
        }
        // The attribute set before the free keeps working.
        let mut t = AttrTable::new();
        t.set(&abi::MPI_COMM_WORLD, &kv, 5).unwrap();
        assert_eq!(t.get(&kv), Some(&5));
    }

    #[test]
    fn predefined_values_as_ints() {
        // SAFETY: the pointers are to statics.
        let read = |k| predefined_value(k).map(|p| unsafe { *p });
        assert_eq!(read(PredefinedKey::TagUb), Some(madmpi::comm::tags::TAG_UB));
        assert_eq!(read(PredefinedKey::Host), Some(abi::MPI_PROC_NULL));
        assert_eq!(read(PredefinedKey::Io), Some(abi::MPI_ANY_SOURCE));
        assert_eq!(read(PredefinedKey::WtimeIsGlobal), Some(0));
        assert_eq!(read(PredefinedKey::UniverseSize), None);
        assert_eq!(read(PredefinedKey::AppNum), None);
    }

    #[test]
    fn lent_tables_refuse_reentry_and_come_back() {
        let a = Attrs::new();
        let inner = a.with(|_| a.with(|_| ()).map_err(|e| e.class())).unwrap();
        assert_eq!(inner, Err(ErrorClass::Other));
        assert_eq!(a.with(|t| t.len()).unwrap(), 0, "returned after use");
        let r = std::panic::catch_unwind(|| a.with(|_| panic!("in use")));
        assert!(r.is_err());
        assert!(a.with(|_| ()).is_ok(), "returned after a panic");
        std::thread::scope(|s| {
            let a = &a;
            let hs: Vec<_> =
                (0..4).map(|_| s.spawn(move || (0..200).for_each(|_| a.with(|_| ()).unwrap()))).collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
        });
    }
}
