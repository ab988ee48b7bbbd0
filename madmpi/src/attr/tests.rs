//! Expected callback sequences come from MPICH 4.0.2 (`madmpi/tests/c/attr_check.c`, output in
//! `attr_check.mpich-4.0.2.txt`), except where a comment says we differ on purpose.

use super::*;
use crate::error::{Error, ErrorClass};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

type Log = Arc<Mutex<Vec<String>>>;

/// Callbacks shaped like the C program's: the keyval's name stands for `extra_state`, values are
/// integers, a value >= 100 makes a callback fail with code `value - 100`.
struct Logged {
    name: &'static str,
    copies: bool,
    log: Log,
    drops: Arc<AtomicUsize>,
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

impl AttrCallbacks for Logged {
    type Object = i32; // a communicator handle
    type Value = isize;

    fn copy(&self, _old: &i32, _k: KeyvalId, value: &isize) -> crate::error::Result<Option<isize>> {
        if !self.copies {
            self.log.lock().unwrap().push(format!("nocopy {}", self.name));
            return Ok(None);
        }
        self.log.lock().unwrap().push(format!("copy {} value={value}", self.name));
        if *value >= 100 {
            return Err(Error::from_code((*value - 100) as i32));
        }
        Ok(Some(value + 10))
    }

    fn delete(&self, _object: &i32, _k: KeyvalId, value: &isize) -> crate::error::Result<()> {
        self.log.lock().unwrap().push(format!("delete {} value={value}", self.name));
        if *value >= 100 {
            return Err(Error::from_code((*value - 100) as i32));
        }
        Ok(())
    }
}

struct Fixture {
    reg: KeyvalRegistry<Logged>,
    log: Log,
    drops: Arc<AtomicUsize>,
}

impl Fixture {
    fn new() -> Self {
        Fixture { reg: KeyvalRegistry::new(), log: Log::default(), drops: Arc::default() }
    }

    fn keyval(&self, name: &'static str, copies: bool) -> Keyval<Logged> {
        let cb = Logged { name, copies, log: Arc::clone(&self.log), drops: Arc::clone(&self.drops) };
        self.reg.get(self.reg.create(cb).unwrap()).unwrap()
    }

    /// The lines logged since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

const C: i32 = 1; // communicator handles, as the callbacks see them
const D: i32 = 2;

#[test]
fn set_replace_dup_free_orders() {
    let f = Fixture::new();
    let (a, b, c, n) = (f.keyval("A", true), f.keyval("B", true), f.keyval("C", true), f.keyval("N", false));
    let mut t = AttrTable::new();
    for (k, v) in [(&a, 1), (&b, 2), (&c, 3), (&n, 4)] {
        t.set(&C, k, v).unwrap();
    }
    assert!(f.take().is_empty());
    t.set(&C, &b, 5).unwrap();
    assert_eq!(f.take(), ["delete B value=2"]);

    let mut dup = t.copy_for_dup(&C, &D).unwrap();
    assert_eq!(f.take(), ["nocopy N", "copy C value=3", "copy B value=5", "copy A value=1"]);
    assert_eq!(dup.get(&n), None);
    assert_eq!(dup.get(&b), Some(&15));
    assert_eq!(dup.keyvals().collect::<Vec<_>>(), [a.id(), b.id(), c.id()]);

    dup.delete_all(&D).unwrap();
    assert_eq!(f.take(), ["delete C value=13", "delete B value=15", "delete A value=11"]);
    t.delete_all(&C).unwrap();
    assert_eq!(f.take(), ["delete N value=4", "delete C value=3", "delete B value=5", "delete A value=1"]);
    assert!(t.is_empty());
}

#[test]
fn callback_errors_abort_with_their_code() {
    let f = Fixture::new();
    let (a, b, c) = (f.keyval("A", true), f.keyval("B", true), f.keyval("C", true));
    let mut t = AttrTable::new();
    for (k, v) in [(&a, 1), (&b, 107), (&c, 3)] {
        t.set(&C, k, v).unwrap();
    }

    // MPICH: MPI_Comm_dup returns 7 and drops the copy of C without its delete callback; we run
    // it, so what the copy callback allocated is released.
    let err = t.copy_for_dup(&C, &D).unwrap_err();
    assert_eq!(err.code(), 7);
    assert_eq!(f.take(), ["copy C value=3", "copy B value=107", "delete C value=13"]);

    // A failing delete keeps the attribute; a failing replace keeps the old value.
    assert_eq!(t.delete(&C, &b).unwrap_err().code(), 7);
    assert_eq!(t.get(&b), Some(&107));
    assert_eq!(t.set(&C, &b, 8).unwrap_err().code(), 7);
    assert_eq!(t.get(&b), Some(&107));
    assert_eq!(f.take(), ["delete B value=107", "delete B value=107"]);

    // MPICH runs all three deletes and returns the last error (8), leaving no attribute; we stop
    // at the first failure, so the attributes left are exactly those not deleted.
    t.set(&C, &a, 108).unwrap();
    f.take();
    assert_eq!(t.delete_all(&C).unwrap_err().code(), 7);
    assert_eq!(f.take(), ["delete C value=3", "delete B value=107"]);
    assert_eq!(t.keyvals().collect::<Vec<_>>(), [a.id(), b.id()]);
}

#[test]
fn deleting_an_unset_attribute_succeeds() {
    let f = Fixture::new();
    let a = f.keyval("A", true);
    let mut t = AttrTable::new();
    t.delete(&C, &a).unwrap();
    assert!(f.take().is_empty());
}

#[test]
fn freed_keyval_lives_while_attributes_use_it() {
    let f = Fixture::new();
    let a = f.keyval("A", true);
    let id = a.id();
    let mut e = AttrTable::new();
    e.set(&C, &a, 1).unwrap();
    drop(a);
    f.reg.free(id).unwrap();
    assert_eq!(f.reg.get(id).unwrap_err().class(), ErrorClass::Keyval);
    assert_eq!(f.reg.free(id).unwrap_err().class(), ErrorClass::Keyval);
    assert_eq!(f.reg.live(), 0);

    // Its callbacks still run for the attributes already set.
    let mut dup = e.copy_for_dup(&C, &D).unwrap();
    e.delete_all(&C).unwrap();
    assert_eq!(f.drops.load(Ordering::SeqCst), 0);
    dup.delete_all(&D).unwrap();
    assert_eq!(f.take(), ["copy A value=1", "delete A value=1", "delete A value=11"]);
    assert_eq!(f.drops.load(Ordering::SeqCst), 1, "callbacks dropped with the last attribute");
}

#[test]
fn comm_self_finalize_order() {
    // MPICH at MPI_Finalize: set B C N then B again -> deletes N, C, B (B keeps its first place).
    let f = Fixture::new();
    let (b, c, n) = (f.keyval("B", true), f.keyval("C", true), f.keyval("N", false));
    let mut t = AttrTable::new();
    for (k, v) in [(&b, 1), (&c, 2), (&n, 3), (&b, 4)] {
        t.set(&C, k, v).unwrap();
    }
    t.delete_all(&C).unwrap();
    assert_eq!(f.take(), ["delete B value=1", "delete N value=3", "delete C value=2", "delete B value=4"]);
}

#[test]
fn a_freed_keyval_is_not_confused_with_a_new_one() {
    let reg: KeyvalRegistry<ClosureCallbacks<str, u8>> = KeyvalRegistry::new();
    let first = reg.get(reg.create(ClosureCallbacks::null()).unwrap()).unwrap();
    let mut t = AttrTable::new();
    t.set("comm", &first, 1).unwrap();
    reg.free(first.id()).unwrap();
    let second = reg.get(reg.create(ClosureCallbacks::null()).unwrap()).unwrap();
    assert_ne!(first.id(), second.id());
    assert!(!first.same(&second));
    assert_eq!(t.get(&second), None);
    assert_eq!(t.get(&first), Some(&1));
}

#[test]
fn closure_callbacks() {
    let reg: KeyvalRegistry<ClosureCallbacks<str, String>> = KeyvalRegistry::new();
    let dup = reg.get(reg.create(ClosureCallbacks::dup()).unwrap()).unwrap();
    let null = reg.get(reg.create(ClosureCallbacks::null()).unwrap()).unwrap();
    let deleted = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&deleted);
    let custom = ClosureCallbacks::new(
        |old: &str, _, v: &String| Ok(Some(format!("{v} from {old}"))),
        move |obj: &str, _, v: &String| {
            seen.lock().unwrap().push(format!("{obj}: {v}"));
            if v == "refuse" { Err(Error::other("refused")) } else { Ok(()) }
        },
    );
    let custom = reg.get(reg.create(custom).unwrap()).unwrap();
    let mut t = AttrTable::new();
    t.set("world", &dup, "d".to_owned()).unwrap();
    t.set("world", &null, "n".to_owned()).unwrap();
    t.set("world", &custom, "c".to_owned()).unwrap();
    let mut copy = t.copy_for_dup("world", "copy").unwrap();
    assert_eq!(copy.get(&dup).map(String::as_str), Some("d"));
    assert_eq!(copy.get(&null), None);
    assert_eq!(copy.get(&custom).map(String::as_str), Some("c from world"));
    copy.set("copy", &custom, "refuse".to_owned()).unwrap();
    let err = copy.delete_all("copy").unwrap_err();
    assert_eq!((err.class(), err.message()), (ErrorClass::Other, "refused"));
    assert_eq!(*deleted.lock().unwrap(), ["copy: c from world", "copy: refuse"]);
    assert_eq!(format!("{copy:?}"), format!("[{:?}, {:?}]", dup.id(), custom.id()));
}

#[test]
fn keyval_registry_is_thread_safe() {
    let reg: Arc<KeyvalRegistry<ClosureCallbacks<str, u8>>> = Arc::new(KeyvalRegistry::new());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let reg = Arc::clone(&reg);
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                for i in 0..500 {
                    let id = reg.create(ClosureCallbacks::null()).unwrap();
                    assert_eq!(reg.get(id).unwrap().id(), id);
                    if i % 2 == 0 { reg.free(id).unwrap() } else { kept.push(id) }
                }
                kept
            })
        })
        .collect();
    let kept: Vec<_> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let unique: std::collections::HashSet<_> = kept.iter().collect();
    assert_eq!((unique.len(), reg.live()), (1000, 1000));
}

#[test]
fn predefined_values() {
    use AttrValue::*;
    let env = Environment::default();
    let value = |k: PredefinedKey| k.value(&env);
    assert_eq!(value(PredefinedKey::TagUb), Some(Int(i32::MAX)));
    // MPICH 4.0.2 under Hydra: MPI_HOST = MPI_PROC_NULL, MPI_IO = MPI_ANY_SOURCE,
    // MPI_WTIME_IS_GLOBAL = 0, MPI_LASTUSEDCODE = MPI_ERR_LASTCODE, MPI_TAG_UB = 2^28 - 1.
    assert_eq!(value(PredefinedKey::Host), Some(Proc(ProcRef::Null)));
    assert_eq!(value(PredefinedKey::Io), Some(Proc(ProcRef::Any)));
    assert_eq!(value(PredefinedKey::WtimeIsGlobal), Some(Bool(false)));
    assert_eq!(value(PredefinedKey::LastUsedCode), Some(Int(crate::error::ERR_LASTCODE)));
    assert_eq!(value(PredefinedKey::UniverseSize), None);
    assert_eq!(value(PredefinedKey::AppNum), None);
    assert_eq!(Environment::tag_ub_for_bits(28), 268_435_455);
    assert_eq!(Environment::tag_ub_for_bits(31), i32::MAX);
    assert_eq!(Environment::tag_ub_for_bits(64), i32::MAX);
    let env = Environment { universe_size: Some(u32::MAX), appnum: Some(2), host: Some(0), ..env };
    assert_eq!(PredefinedKey::UniverseSize.value(&env), Some(Int(i32::MAX)));
    assert_eq!(PredefinedKey::AppNum.value(&env), Some(Int(2)));
    assert_eq!(PredefinedKey::Host.value(&env), Some(Proc(ProcRef::Rank(0))));
    let err = PredefinedKey::TagUb.read_only("MPI_Comm_delete_attr");
    assert_eq!(err.class(), ErrorClass::Keyval);
    assert_eq!(err.message(), "MPI_Comm_delete_attr: MPI_TAG_UB is predefined and cannot be changed");
    assert_eq!(PredefinedKey::ALL.len(), 7);
}
