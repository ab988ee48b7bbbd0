//! File handles. `MPI_File` is a pointer in MPICH's ABI (`struct ADIOI_FileD *`), so the
//! handles given to C are pointer-sized numbers that are never dereferenced: a tag in the high
//! half, then a generation and a slot of the process-wide [`HandleTable`] in the low 31 bits. A
//! handle is looked up, never trusted: `MPI_FILE_NULL`, garbage, or the handle of a closed file
//! (its slot's generation moved on) is `MPI_ERR_FILE`, never a crash. The tag makes the number
//! a non-canonical address, so a program that dereferences a handle faults at once.
//!
//! The low 31 bits are the file's Fortran integer (`MPI_File_c2f`); `MPI_File_f2c` puts the tag
//! back and checks the file is open. As ROMIO, both give their null (0, `MPI_FILE_NULL`) for
//! anything that is not an open file.
//!
//! Each open file ([`FileObj`]) has its error handler cell. A file starts with the default file
//! handler, `MPI_FILE_NULL`'s (`MPI_ERRORS_RETURN` until `MPI_File_set_errhandler(MPI_FILE_NULL,
//! h)` changes it for the files opened afterwards, as MPI 4.0 §9.3 says), which also hears of the
//! errors of calls that have no file yet: `MPI_File_open`, `MPI_File_delete`, and a handle
//! that names no file ([`NoFile::no_file`], as ROMIO's `MPIO_Err_return_file(MPI_FILE_NULL,
//! ...)`). A user handler gets a pointer to the `MPI_File` (`Callback::call_file`).
//!
//! The table is process-wide, not in the MPI state: files must be closed before `MPI_Finalize`
//! (MPI 4.0 §11.2.2); one left open is never touched again.
//!
//! Owns the handle ↔ file mapping and where a file call's errors go; the files are
//! `madmpi::io`'s.

use crate::errhandlers::{Callback, ErrhandlerCell};
use crate::errors::{Fail, HandlerOwner};
use madmpi::abi::{self, Handle};
use madmpi::error::Error;
use madmpi::io::File;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, LazyLock, OnceLock, PoisonError, RwLock};

/// `MPI_File` as C passes it.
pub(crate) type CFile = *mut c_void;

/// The high half of every file handle ("madf"): a non-canonical x86-64 address.
const TAG: usize = 0x6d61_6466 << 32;
/// The Fortran integer's part of a handle.
const FINT_MASK: usize = 0x7fff_ffff;
/// Bits of the slot number (plus one: 0 is no slot) in a handle; the generation has the rest
/// of the 31 bits.
const SLOT_BITS: u32 = 20;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;
const GEN_MASK: u32 = (1 << (31 - SLOT_BITS)) - 1;

/// Objects by pointer-sized handle, stale handles detected by a generation per slot (a handle
/// would come back after its slot was reused 2048 times).
pub(crate) struct HandleTable<T> {
    inner: RwLock<Slots<T>>,
}

struct Slots<T> {
    /// Each slot's generation and object.
    slots: Vec<(u32, Option<T>)>,
    free: Vec<u32>,
}

impl<T: Clone> HandleTable<T> {
    pub(crate) const fn new() -> Self {
        HandleTable { inner: RwLock::new(Slots { slots: Vec::new(), free: Vec::new() }) }
    }

    /// Stores `value`; its handle (never 0), or `None` when every slot is taken.
    pub(crate) fn insert(&self, value: T) -> Option<usize> {
        let mut s = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        let slot = match s.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(s.slots.len()).ok().filter(|&i| i < SLOT_MASK)?;
                s.slots.push((0, None));
                i
            }
        };
        let entry = &mut s.slots[slot as usize];
        entry.1 = Some(value);
        Some(encode(slot, entry.0))
    }

    /// A clone of the object of handle `h`, if it is live.
    pub(crate) fn get(&self, h: usize) -> Option<T> {
        let (slot, generation) = decode(h)?;
        let s = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        match s.slots.get(slot as usize)? {
            (g, Some(v)) if *g == generation => Some(v.clone()),
            _ => None,
        }
    }

    /// Removes and returns the object of handle `h`; its handle is dead from now on.
    pub(crate) fn remove(&self, h: usize) -> Option<T> {
        let (slot, generation) = decode(h)?;
        let mut s = self.inner.write().unwrap_or_else(PoisonError::into_inner);
        let entry = s.slots.get_mut(slot as usize)?;
        if entry.0 != generation {
            return None;
        }
        let value = entry.1.take()?;
        entry.0 = (entry.0 + 1) & GEN_MASK;
        s.free.push(slot);
        Some(value)
    }
}

/// The handle of generation `generation` of slot `slot`.
fn encode(slot: u32, generation: u32) -> usize {
    TAG | ((generation as usize) << SLOT_BITS) | (slot as usize + 1)
}

/// The slot and generation a handle names, if it is shaped like one of ours.
fn decode(h: usize) -> Option<(u32, u32)> {
    if h & !FINT_MASK != TAG {
        return None;
    }
    let low = (h & FINT_MASK) as u32;
    let slot = (low & SLOT_MASK).checked_sub(1)?;
    Some((slot, low >> SLOT_BITS))
}

/// An open file as the C library sees it.
pub(crate) struct FileObj {
    pub(crate) file: File,
    pub(crate) errhandler: ErrhandlerCell,
    /// Its handle, set once stored.
    handle: OnceLock<usize>,
}

impl FileObj {
    /// The file's C handle.
    pub(crate) fn c_handle(&self) -> CFile {
        std::ptr::without_provenance_mut(self.handle.get().copied().unwrap_or(0))
    }
}

impl HandlerOwner for FileObj {
    /// The Fortran integer (a file handler is called with the `MPI_File`: [`Self::call_user`]).
    fn handle(&self) -> Handle {
        self.handle.get().map_or(0, |&h| (h & FINT_MASK) as Handle)
    }

    fn errhandler(&self) -> &ErrhandlerCell {
        &self.errhandler
    }

    fn call_user(&self, cb: &Callback, code: c_int) {
        cb.call_file(self.c_handle(), code);
    }
}

/// `MPI_FILE_NULL` as the owner of the default file error handler.
struct NullFile;

impl HandlerOwner for NullFile {
    fn handle(&self) -> Handle {
        0
    }

    fn errhandler(&self) -> &ErrhandlerCell {
        default_handler()
    }

    fn call_user(&self, cb: &Callback, code: c_int) {
        cb.call_file(std::ptr::null_mut(), code);
    }
}

static FILES: HandleTable<Arc<FileObj>> = HandleTable::new();

/// The default file error handler, `MPI_FILE_NULL`'s: `MPI_ERRORS_RETURN` at first.
pub(crate) fn default_handler() -> &'static ErrhandlerCell {
    static DEFAULT: LazyLock<ErrhandlerCell> = LazyLock::new(|| {
        let cell = ErrhandlerCell::new();
        // A predefined handler is always valid: this cannot fail.
        let _ = cell.set(abi::MPI_ERRORS_RETURN);
        cell
    });
    &DEFAULT
}

/// Sends an error to the default file handler.
pub(crate) trait NoFile<T> {
    fn no_file(self) -> Result<T, Fail>;
}

impl<T> NoFile<T> for Result<T, Error> {
    fn no_file(self) -> Result<T, Fail> {
        self.map_err(|error| Fail { error, comm: Some(null_owner()) })
    }
}

/// `MPI_FILE_NULL` as an owner of an error handler: the default file handler's.
pub(crate) fn null_owner() -> Arc<dyn HandlerOwner> {
    static OWNER: LazyLock<Arc<NullFile>> = LazyLock::new(|| Arc::new(NullFile));
    OWNER.clone()
}

/// The open file of handle `h`: `MPI_ERR_FILE`, to the default file handler, for
/// `MPI_FILE_NULL` and anything else that is not an open file.
pub(crate) fn file(h: CFile) -> Result<Arc<FileObj>, Fail> {
    if h.is_null() {
        return Err(Error::file("null file handle (MPI_FILE_NULL)")).no_file();
    }
    FILES.get(h.addr()).ok_or_else(|| Error::file(format!("invalid file handle {h:p}"))).no_file()
}

/// Stores a file just opened, with the default file handler; its handle.
pub(crate) fn add(file: File) -> Result<CFile, Error> {
    let obj = Arc::new(FileObj { file, errhandler: default_handler().inherit(), handle: OnceLock::new() });
    let h = FILES.insert(obj.clone()).ok_or_else(|| Error::no_mem("too many open files"))?;
    let _ = obj.handle.set(h);
    Ok(std::ptr::without_provenance_mut(h))
}

/// Forgets the file of handle `h` (closed): the handle is dead from now on. Requests of the
/// file keep the object (and its handler) alive.
pub(crate) fn remove(h: CFile) {
    drop(FILES.remove(h.addr()));
}

/// `MPI_File_c2f`: the file's Fortran integer; 0 for `MPI_FILE_NULL` and anything that is not
/// an open file (as ROMIO).
pub(crate) fn c2f(h: CFile) -> abi::Fint {
    match FILES.get(h.addr()) {
        Some(_) => (h.addr() & FINT_MASK) as abi::Fint,
        None => 0,
    }
}

/// `MPI_File_f2c`: the file of Fortran integer `f`; `MPI_FILE_NULL` for 0 and anything that
/// is not an open file's (as ROMIO).
pub(crate) fn f2c(f: abi::Fint) -> CFile {
    let Ok(low) = usize::try_from(f) else { return std::ptr::null_mut() };
    let h = TAG | low;
    match FILES.get(h) {
        Some(_) => std::ptr::without_provenance_mut(h),
        None => std::ptr::null_mut(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    #[test]
    fn handles_are_checked_and_die_when_removed() {
        let t: HandleTable<u32> = HandleTable::new();
        let a = t.insert(1).unwrap();
        let b = t.insert(2).unwrap();
        assert_ne!(a, b);
        assert!(a != 0 && b != 0);
        assert_eq!((t.get(a), t.get(b)), (Some(1), Some(2)));
        assert_eq!(t.remove(a), Some(1));
        assert_eq!((t.get(a), t.remove(a)), (None, None));
        // The slot is reused under a new generation: the old handle stays dead.
        let c = t.insert(3).unwrap();
        assert_eq!(decode(c).unwrap().0, decode(a).unwrap().0);
        assert_ne!(c, a);
        assert_eq!((t.get(a), t.get(c)), (None, Some(3)));
        // Garbage: null, other tags, no slot, a slot never used, bit 31 set.
        for h in [0, 1, usize::MAX, a & FINT_MASK, TAG, TAG | 5000, b | 0x8000_0000, b ^ (1 << 40)] {
            assert_eq!(t.get(h), None, "{h:#x}");
            assert_eq!(t.remove(h), None, "{h:#x}");
        }
        assert_eq!(t.get(b), Some(2));
    }

    #[test]
    fn generations_wrap_within_the_fortran_integer() {
        let t: HandleTable<u8> = HandleTable::new();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..=GEN_MASK {
            let h = t.insert(0).unwrap();
            assert!(h & FINT_MASK > 0 && h & !FINT_MASK == TAG, "{h:#x}");
            assert!(seen.insert(h), "{h:#x} came back too soon");
            t.remove(h).unwrap();
        }
        assert!(!seen.insert(t.insert(0).unwrap()), "generations wrap around");
    }

    #[test]
    fn garbage_and_null_are_file_errors_and_convert_to_null() {
        for h in [
            std::ptr::null_mut(),
            std::ptr::without_provenance_mut(TAG | 77),
            std::ptr::without_provenance_mut(0x1234),
        ] {
            let fail = file(h).err().expect("not a file");
            assert_eq!(fail.error.class(), ErrorClass::File);
            let owner = fail.comm.expect("the default file handler hears of it");
            assert_eq!(owner.handle(), 0);
            assert_eq!(c2f(h), 0);
        }
        assert!(f2c(0).is_null());
        assert!(f2c(-3).is_null());
        assert!(f2c(77).is_null(), "not an open file");
    }

    #[test]
    fn exported_calls_on_garbage_return_err_file() {
        let mut amode = 0;
        // SAFETY: the handle is garbage by design; the output is a valid int.
        let code = unsafe {
            crate::api::file::PMPI_File_get_amode(std::ptr::without_provenance_mut(0x40), &mut amode)
        };
        assert_eq!(madmpi::error::error_class(code), Some(ErrorClass::File));
        // SAFETY: as above; MPI_FILE_NULL is no file either.
        let code = unsafe { crate::api::file::PMPI_File_sync(std::ptr::null_mut()) };
        assert_eq!(madmpi::error::error_class(code), Some(ErrorClass::File));
        assert_eq!(crate::api::file::PMPI_File_c2f(std::ptr::without_provenance_mut(0x40)), 0);
        assert!(crate::api::file::PMPI_File_f2c(12).is_null());
    }
}
