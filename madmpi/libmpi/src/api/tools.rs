//! The tools information interface, C side (MPI 4.0 ch. 15): `MPI_T_init_thread`,
//! `MPI_T_finalize`, enumerations and control variables here; performance variables in
//! [`tools_pvar`](super::tools_pvar), categories in [`tools_category`](super::tools_category),
//! events and their sources in [`tools_event`](super::tools_event).
//!
//! Every MPI_T function returns its code (`MPI_T_ERR_*`) and calls no error handler; all but
//! `MPI_T_init_thread` and `MPI_T_finalize` return `MPI_T_ERR_NOT_INITIALIZED` outside an
//! `init_thread`/`finalize` pair. They work before `MPI_Init` and after `MPI_Finalize`.
//!
//! C conventions kept here:
//! - handles (`MPI_T_enum`, `MPI_T_cvar_handle`, …) are opaque pointers holding ids that are
//!   looked up, never dereferenced, so a stale or forged handle is `MPI_T_ERR_INVALID_HANDLE`;
//! - strings (MPI 4.0 §15.3.3, as MPICH): with a null length pointer nothing is returned; with a
//!   null buffer or a length of 0 the length needed (string plus NUL) is returned; otherwise at
//!   most `*len - 1` bytes and a NUL are written and `*len` becomes the bytes written plus one;
//! - a null pointer for any other output of a `*_get_info` call skips that output;
//! - an index out of range is `MPI_T_ERR_INVALID_INDEX`, a name not found
//!   `MPI_T_ERR_INVALID_NAME`, a null pointer where a value is needed `MPI_ERR_ARG`.
//!
//! Owns the C signatures, handle tables and string rules; the semantics are `madmpi::tools`'.

use crate::export::export;
use madmpi::env::universe::Threading;
use madmpi::tools::kinds::Value;
use madmpi::tools::{self, TError, TResult, registry};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

/// An MPI_T handle as C holds it.
pub(crate) type CHandle = *mut c_void;

/// Enumeration handles are this plus the enumeration's index (so that none is null and none
/// looks like another kind's id).
const ENUM_BASE: u64 = 0x7e00_0000;

pub(crate) fn to_handle(id: u64) -> CHandle {
    id as usize as CHandle
}

pub(crate) fn to_id(h: CHandle) -> u64 {
    h as usize as u64
}

/// `MPI_T_ERR_NOT_INITIALIZED` outside `MPI_T_init_thread` … `MPI_T_finalize`.
pub(crate) fn initialized() -> TResult<()> {
    tools::check_initialized()
}

/// The output at `p`: `MPI_ERR_ARG` if null or misaligned.
///
/// # Safety
/// `p`, if not null, must be valid for writes of a `T`.
pub(crate) unsafe fn out<'a, T>(p: *mut T) -> TResult<&'a mut T> {
    if p.is_null() || !p.is_aligned() {
        return Err(TError::Arg);
    }
    // SAFETY: not null and aligned; valid for writes by the caller's contract.
    Ok(unsafe { &mut *p })
}

/// Writes `v` to `p` unless `p` is null (optional outputs of `*_get_info`).
///
/// # Safety
/// `p`, if not null, must be valid for writes of a `T`.
pub(crate) unsafe fn put<T>(p: *mut T, v: T) -> TResult<()> {
    if !p.is_null() {
        // SAFETY: the caller's contract.
        *unsafe { out(p) }? = v;
    }
    Ok(())
}

/// Returns `s` through `buf`/`len` by MPI_T's string rules (module docs).
///
/// # Safety
/// `len`, if not null, must be valid for reads and writes of a `c_int`; `buf`, if not null, for
/// writes of `*len` bytes.
pub(crate) unsafe fn put_string(s: &str, buf: *mut c_char, len: *mut c_int) -> TResult<()> {
    if len.is_null() {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    let len = unsafe { out(len) }?;
    let needed = c_int::try_from(s.len() + 1).unwrap_or(c_int::MAX);
    if buf.is_null() || *len == 0 {
        *len = needed;
        return Ok(());
    }
    if *len < 0 {
        return Err(TError::Arg);
    }
    let n = s.len().min(*len as usize - 1);
    // SAFETY: `buf` has room for `*len > n` bytes (the caller's contract): `n` bytes of text and
    // the NUL; the source is a distinct Rust string.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    *len = n as c_int + 1;
    Ok(())
}

/// The name argument at `p` (names are ASCII, at most 4 KiB are read): `MPI_ERR_ARG` if null.
///
/// # Safety
/// `p`, if not null, must point to a NUL-terminated string (or to at least 4 KiB).
pub(crate) unsafe fn name_arg<'a>(p: *const c_char) -> TResult<&'a str> {
    // SAFETY: the caller's contract is c_string's.
    match unsafe { crate::check::c_string(p, 4096) } {
        None => Err(TError::Arg),
        Some(Err(())) => Err(TError::InvalidName),
        Some(Ok(b)) => std::str::from_utf8(b).map_err(|_| TError::InvalidName),
    }
}

/// An index argument below `n`.
pub(crate) fn index(i: c_int, n: usize) -> TResult<usize> {
    usize::try_from(i).ok().filter(|&i| i < n).ok_or(TError::InvalidIndex)
}

/// The handle of enumeration `e`, or `MPI_T_ENUM_NULL`.
pub(crate) fn enum_handle(e: Option<usize>) -> CHandle {
    e.map_or(std::ptr::null_mut(), |i| to_handle(ENUM_BASE + i as u64))
}

fn enum_of(h: CHandle) -> TResult<&'static tools::enums::Enum> {
    let id = to_id(h);
    id.checked_sub(ENUM_BASE).and_then(|i| registry().enums.get(i as usize)).ok_or(TError::InvalidHandle)
}

/// Live control-variable handles: id → variable index.
static CVAR_HANDLES: Mutex<Option<HashMap<u64, usize>>> = Mutex::new(None);
/// Ids of cvar handles (odd, so never equal to an enumeration's).
static NEXT_CVAR_HANDLE: AtomicU64 = AtomicU64::new(1);

fn cvar_handles<R>(f: impl FnOnce(&mut HashMap<u64, usize>) -> R) -> R {
    let mut g = CVAR_HANDLES.lock().unwrap_or_else(PoisonError::into_inner);
    f(g.get_or_insert_with(HashMap::new))
}

fn cvar_of(h: CHandle) -> TResult<&'static tools::cvars::Cvar> {
    let i = cvar_handles(|t| t.get(&to_id(h)).copied()).ok_or(TError::InvalidHandle)?;
    Ok(&registry().cvars[i])
}

/// Writes `bytes` to the C buffer `buf`.
///
/// # Safety
/// `buf`, if not null, must be valid for writes of `bytes.len()` bytes.
pub(crate) unsafe fn put_bytes(buf: *mut c_void, bytes: &[u8]) -> TResult<()> {
    if buf.is_null() {
        return Err(TError::Arg);
    }
    // SAFETY: room for the value (the caller's contract: a variable's count elements of its
    // type); the source is a Rust vector.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len()) };
    Ok(())
}

/// Reads `n` bytes from the C buffer `buf`.
///
/// # Safety
/// `buf`, if not null, must be valid for reads of `n` bytes.
pub(crate) unsafe fn get_bytes<'a>(buf: *const c_void, n: usize) -> TResult<&'a [u8]> {
    if buf.is_null() {
        return Err(TError::Arg);
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) })
}

export! { tools:
    fn MPI_T_init_thread / PMPI_T_init_thread(required: c_int, provided: *mut c_int) {
        let level = match required {
            0 => Threading::Single,
            1 => Threading::Funneled,
            2 => Threading::Serialized,
            3 => Threading::Multiple,
            _ => return Err(TError::Arg),
        };
        // SAFETY: `provided` is an int the caller owns (MPI's contract).
        let provided = unsafe { out(provided) }?;
        *provided = tools::init(level) as c_int;
        Ok(())
    }

    fn MPI_T_finalize / PMPI_T_finalize() {
        tools::finalize()
    }

    fn MPI_T_enum_get_info / PMPI_T_enum_get_info(
        enumtype: CHandle, num: *mut c_int, name: *mut c_char, name_len: *mut c_int
    ) {
        initialized()?;
        let e = enum_of(enumtype)?;
        // SAFETY: outputs of the caller (MPI's contract), each checked.
        unsafe {
            *out(num)? = e.items.len() as c_int;
            put_string(&e.name, name, name_len)
        }
    }

    fn MPI_T_enum_get_item / PMPI_T_enum_get_item(
        enumtype: CHandle, indx: c_int, value: *mut c_int, name: *mut c_char, name_len: *mut c_int
    ) {
        initialized()?;
        let e = enum_of(enumtype)?;
        let (v, n) = &e.items[index(indx, e.items.len())?];
        // SAFETY: outputs of the caller (MPI's contract), each checked.
        unsafe {
            *out(value)? = *v;
            put_string(n, name, name_len)
        }
    }

    fn MPI_T_cvar_get_num / PMPI_T_cvar_get_num(num_cvar: *mut c_int) {
        initialized()?;
        // SAFETY: an int the caller owns.
        *unsafe { out(num_cvar) }? = registry().cvars.len() as c_int;
        Ok(())
    }

    fn MPI_T_cvar_get_info / PMPI_T_cvar_get_info(
        cvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int,
        datatype: *mut c_int, enumtype: *mut CHandle, desc: *mut c_char, desc_len: *mut c_int,
        bind: *mut c_int, scope: *mut c_int
    ) {
        initialized()?;
        let r = registry();
        let v = &r.cvars[index(cvar_index, r.cvars.len())?];
        // SAFETY: optional outputs of the caller (MPI's contract): each written only if not null.
        unsafe {
            put_string(&v.name, name, name_len)?;
            put(verbosity, v.verbosity.code())?;
            put(datatype, v.ty.handle())?;
            put(enumtype, enum_handle(v.enumtype))?;
            put_string(&v.desc, desc, desc_len)?;
            put(bind, tools::kinds::Bind::NoObject.code())?;
            put(scope, v.scope.code())
        }
    }

    fn MPI_T_cvar_get_index / PMPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) {
        initialized()?;
        // SAFETY: a C string and an int of the caller (MPI's contract).
        let (name, idx) = unsafe { (name_arg(name)?, out(cvar_index)?) };
        *idx = registry().cvar_index(name).ok_or(TError::InvalidName)? as c_int;
        Ok(())
    }

    fn MPI_T_cvar_handle_alloc / PMPI_T_cvar_handle_alloc(
        cvar_index: c_int, obj_handle: *mut c_void, handle: *mut CHandle, count: *mut c_int
    ) {
        initialized()?;
        let _ = obj_handle; // every control variable is bound to no object: it is ignored
        let r = registry();
        let i = index(cvar_index, r.cvars.len())?;
        // SAFETY: outputs of the caller (MPI's contract), each checked.
        let (handle, count) = unsafe { (out(handle)?, out(count)?) };
        let id = NEXT_CVAR_HANDLE.fetch_add(2, Relaxed);
        cvar_handles(|t| t.insert(id, i));
        *handle = to_handle(id);
        *count = r.cvars[i].count() as c_int;
        Ok(())
    }

    fn MPI_T_cvar_handle_free / PMPI_T_cvar_handle_free(handle: *mut CHandle) {
        initialized()?;
        // SAFETY: the caller's handle variable (MPI's contract).
        let handle = unsafe { out(handle) }?;
        cvar_handles(|t| t.remove(&to_id(*handle))).ok_or(TError::InvalidHandle)?;
        *handle = std::ptr::null_mut();
        Ok(())
    }

    fn MPI_T_cvar_read / PMPI_T_cvar_read(handle: CHandle, buf: *mut c_void) {
        initialized()?;
        let v = cvar_of(handle)?;
        let bytes = v.read().encode(v.ty, v.count());
        // SAFETY: `buf` holds the variable's count elements of its type (MPI's contract).
        unsafe { put_bytes(buf, &bytes) }
    }

    fn MPI_T_cvar_write / PMPI_T_cvar_write(handle: CHandle, buf: *const c_void) {
        initialized()?;
        let v = cvar_of(handle)?;
        if !v.writable() {
            return Err(TError::CvarSetNever);
        }
        let value = if v.ty == tools::kinds::Type::Char {
            // SAFETY: `buf` holds a NUL-terminated string (MPI's contract for an MPI_CHAR
            // variable), read up to its NUL only.
            Value::Text(unsafe { name_arg(buf.cast()) }?.to_string())
        } else {
            // SAFETY: `buf` holds the variable's count elements of its type (MPI's contract).
            Value::decode(v.ty, unsafe { get_bytes(buf, v.ty.size() * v.count()) }?)?
        };
        v.write(&value)
    }
}
