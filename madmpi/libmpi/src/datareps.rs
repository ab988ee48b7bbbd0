//! The C side of user data representations (`MPI_Register_datarep`, `_c`): the program's
//! conversion and extent functions as a [`madmpi::io::Conversion`], and the C handles of the
//! datatypes they are called with.
//!
//! The functions take the *handle* of a datatype, which the engine's [`Datatype`] does not
//! know: a predefined type has its handle; for another, the file calls remember the handle the
//! program named it by ([`remember`]: the datatype of each access, the etype and filetype of
//! each view, the type of `MPI_File_get_type_extent`), once a representation is registered. A
//! type no file call named (none today) gets a new handle, kept for the process.
//!
//! MPI lets either conversion function be `MPI_CONVERSION_FN_NULL`: that direction then moves
//! the native bytes (packed along the type map), and data is converted if either function is
//! given. A function of `MPI_Register_datarep` takes an `int` count: it is called on at most
//! `INT_MAX` elements at a time, the file buffer advancing by as many elements' file bytes. A
//! code a function returns goes back to the program unchanged ([`Error::from_code`]).
//!
//! Callbacks are called through `extern "C-unwind"` pointers (see `grequests`).
//!
//! Owns the C calling of these functions and the datatype handles they see; it must not know
//! where converted data goes (`madmpi::io` does).

use crate::datatypes::predefined_handle;
use madmpi::abi::{self, Handle};
use madmpi::datatype::Datatype;
use madmpi::error::{Error, Result};
use madmpi::io::Conversion;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex, PoisonError};

/// `MPI_Datarep_conversion_function`.
pub(crate) type ConversionFn = unsafe extern "C-unwind" fn(
    *mut c_void,
    abi::Datatype,
    c_int,
    *mut c_void,
    abi::Offset,
    *mut c_void,
) -> c_int;
/// `MPI_Datarep_conversion_function_c` (MPI 4.0): the count is an `MPI_Count`.
pub(crate) type ConversionFnC = unsafe extern "C-unwind" fn(
    *mut c_void,
    abi::Datatype,
    abi::Count,
    *mut c_void,
    abi::Offset,
    *mut c_void,
) -> c_int;
/// `MPI_Datarep_extent_function`.
pub(crate) type ExtentFn = unsafe extern "C-unwind" fn(abi::Datatype, *mut abi::Aint, *mut c_void) -> c_int;

/// A conversion function, by the width of its count.
#[derive(Clone, Copy)]
pub(crate) enum Convert {
    /// From `MPI_Register_datarep`: called on at most `INT_MAX` elements at a time.
    Int(ConversionFn),
    /// From `MPI_Register_datarep_c`.
    Large(ConversionFnC),
}

/// The functions of a registered representation and the program's `extra_state`.
pub(crate) struct CConversion {
    read: Option<Convert>,
    write: Option<Convert>,
    extent: ExtentFn,
    /// An address only given back to the functions.
    extra_state: usize,
}

impl CConversion {
    pub(crate) fn new(
        read: Option<Convert>,
        write: Option<Convert>,
        extent: ExtentFn,
        extra_state: *mut c_void,
    ) -> CConversion {
        CONVERTING.store(true, Ordering::Relaxed);
        CConversion { read, write, extent, extra_state: extra_state.expose_provenance() }
    }

    fn state(&self) -> *mut c_void {
        std::ptr::with_exposed_provenance_mut(self.extra_state)
    }

    /// Calls `f` on `count` elements of `datatype` from element `position` of `user`, their
    /// file form being the bytes of `file`.
    ///
    /// # Safety
    /// As MPI's contract for conversion functions: the elements are accessible as `f` converts
    /// (written by a read conversion, read by a write one), `file` is valid, and written by a
    /// write conversion only.
    unsafe fn call(
        &self,
        f: Convert,
        user: *mut u8,
        datatype: &Datatype,
        count: i64,
        file: *mut [u8],
        position: i64,
    ) -> Result<()> {
        let len = file.len();
        let file = file.cast::<u8>();
        if count <= 0 {
            return Ok(());
        }
        let h = handle_of(datatype)?;
        match f {
            Convert::Large(f) => {
                // SAFETY: the program's function, called as MPI specifies (our contract).
                result(unsafe { f(user.cast(), h, count, file.cast(), position, self.state()) })
            }
            Convert::Int(f) => {
                // The file bytes of one element: the buffer holds exactly `count` of them.
                let per = len / count as usize;
                let mut done = 0;
                while done < count {
                    let n = (count - done).min(i64::from(c_int::MAX));
                    let at = file.wrapping_add(done as usize * per);
                    // SAFETY: the program's function, called as MPI specifies (our contract)
                    // on elements `done..done + n` of the `count` and on their file bytes,
                    // `n * per` from `at`, within `file`'s `len` bytes.
                    result(unsafe {
                        f(user.cast(), h, n as c_int, at.cast(), position + done, self.state())
                    })?;
                    done += n;
                }
                Ok(())
            }
        }
    }
}

fn result(rc: c_int) -> Result<()> {
    if rc == 0 { Ok(()) } else { Err(Error::from_code(rc)) }
}

impl Conversion for CConversion {
    fn extent(&self, datatype: &Datatype) -> Result<i64> {
        let h = handle_of(datatype)?;
        let mut extent: abi::Aint = 0;
        // SAFETY: the program's extent function, called as MPI specifies: a datatype handle, a
        // valid output and its extra_state.
        result(unsafe { (self.extent)(h, &mut extent, self.state()) })?;
        Ok(extent)
    }

    fn converts(&self) -> bool {
        self.read.is_some() || self.write.is_some()
    }

    unsafe fn read(
        &self,
        user: *mut u8,
        datatype: &Datatype,
        count: i64,
        file: &[u8],
        position: i64,
    ) -> Result<()> {
        match self.read {
            // SAFETY: the elements are writable (our contract); a read conversion only reads
            // the file buffer, so handing it as `void *` does not write to `file`.
            Some(f) => unsafe {
                self.call(f, user, datatype, count, std::ptr::from_ref(file).cast_mut(), position)
            },
            None => {
                let at = user.wrapping_offset((position * datatype.extent()) as isize);
                // SAFETY: `count` elements from element `position` are writable (our contract)
                // and are not `file`, which the engine owns.
                unsafe { datatype.unpack(file, &mut 0, at, count) }.map_err(Error::from)
            }
        }
    }

    unsafe fn write(
        &self,
        user: *const u8,
        datatype: &Datatype,
        count: i64,
        file: &mut [u8],
        position: i64,
    ) -> Result<()> {
        match self.write {
            // SAFETY: the elements are readable (our contract) and a write conversion only
            // reads them; `file` is writable for its length.
            Some(f) => unsafe {
                self.call(f, user.cast_mut(), datatype, count, std::ptr::from_mut(file), position)
            },
            None => {
                let at = user.wrapping_offset((position * datatype.extent()) as isize);
                // SAFETY: `count` elements from element `position` are readable (our contract)
                // and are not `file`, which the engine owns.
                unsafe { datatype.pack(at, count, file, &mut 0) }.map_err(Error::from)
            }
        }
    }
}

/// Whether a representation with functions was registered: only then do the file calls
/// [`remember`] handles.
static CONVERTING: AtomicBool = AtomicBool::new(false);

/// The handles of the derived datatypes the file calls were given, by the type's `uid` (never
/// reused: an entry outliving its type is only unused).
static HANDLES: LazyLock<Mutex<HashMap<u64, Handle>>> = LazyLock::new(Default::default);

/// Entries kept at most; the map starts over beyond (a type used again is remembered again).
const REMEMBERED: usize = 4096;

/// Notes that the program named `datatype` by handle `h` in a file call.
pub(crate) fn remember(datatype: &Datatype, h: Handle) {
    if !CONVERTING.load(Ordering::Relaxed) || datatype.as_predefined().is_some() {
        return;
    }
    let mut map = HANDLES.lock().unwrap_or_else(PoisonError::into_inner);
    if map.len() >= REMEMBERED && !map.contains_key(&datatype.uid()) {
        map.clear();
    }
    map.insert(datatype.uid(), h);
}

/// The C handle of `datatype` for a conversion or extent function.
fn handle_of(datatype: &Datatype) -> Result<Handle> {
    if let Some(p) = datatype.as_predefined() {
        return Ok(predefined_handle(p));
    }
    if let Some(&h) = HANDLES.lock().unwrap_or_else(PoisonError::into_inner).get(&datatype.uid()) {
        return Ok(h);
    }
    let st = crate::state::state()?;
    let h = st.datatypes.insert(datatype.clone()).ok_or_else(|| Error::intern("too many live datatypes"))?;
    HANDLES.lock().unwrap_or_else(PoisonError::into_inner).insert(datatype.uid(), h);
    Ok(h)
}
