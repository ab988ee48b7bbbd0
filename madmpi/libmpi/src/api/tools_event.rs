//! Events and their sources, C side: `MPI_T_event_get_num`, `_get_info`, `_get_index`,
//! `_handle_alloc`/`_free`/`_get_info`/`_set_info`, `_register_callback`,
//! `_callback_get_info`/`_set_info`, `_set_dropped_handler`, `_read`, `_copy`,
//! `_get_timestamp`, `_get_source`; `MPI_T_source_get_num`, `_get_info`, `_get_timestamp`.
//!
//! A callback is the C function and its user data, called by madmpi's delivery with the
//! instance handle (the instance's address, valid only during the callback, on its thread), the
//! registration handle and the safety level of the calling context. Registrations, delivery and
//! the safety rules are `madmpi::tools::events`'.

use super::tools::{
    CHandle, index, initialized, name_arg, out, put, put_bytes, put_string, to_handle, to_id,
};
use crate::export::export;
use crate::infos;
use madmpi::abi;
use madmpi::info::Info;
use madmpi::tools::events::registrations as regs;
use madmpi::tools::events::types::{SOURCES, TICKS_PER_SECOND, TYPES};
use madmpi::tools::events::{Instance, delivery};
use madmpi::tools::kinds::{Bind, Safety};
use madmpi::tools::{TError, TResult};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex, PoisonError};

type EventCallback = Option<unsafe extern "C" fn(CHandle, CHandle, c_int, *mut c_void)>;
type FreeCallback = Option<unsafe extern "C" fn(CHandle, c_int, *mut c_void)>;
type DroppedCallback = Option<unsafe extern "C" fn(i64, CHandle, c_int, c_int, *mut c_void)>;

/// A C pointer the library only hands back to the program's own callbacks.
#[derive(Clone, Copy)]
struct UserData(*mut c_void);
// SAFETY: never dereferenced here, only passed back to the program's callback, which MPI makes
// responsible for its user data from any thread.
unsafe impl Send for UserData {}
// SAFETY: as for Send: the pointer is an opaque value here.
unsafe impl Sync for UserData {}

/// Per registration, the user data of its latest callback (passed to its dropped handler).
static LAST_USER_DATA: Mutex<Option<HashMap<u64, UserData>>> = Mutex::new(None);

fn last_user_data<R>(f: impl FnOnce(&mut HashMap<u64, UserData>) -> R) -> R {
    let mut g = LAST_USER_DATA.lock().unwrap_or_else(PoisonError::into_inner);
    f(g.get_or_insert_with(HashMap::new))
}

/// The info object `h` (null: empty) as madmpi hints.
fn hints(h: abi::Info) -> TResult<Info> {
    if h == abi::MPI_INFO_NULL {
        return Ok(Info::new());
    }
    infos::read(h, Info::clone).map_err(|_| TError::Invalid)
}

/// Returns `info` as a new info handle (the program frees it).
///
/// # Safety
/// `p`, if not null, must be valid for writes of an `MPI_Info`.
unsafe fn put_info(p: *mut abi::Info, info: Info) -> TResult<()> {
    if p.is_null() {
        return Ok(());
    }
    let h = infos::add(info).map_err(|_| TError::Memory)?;
    // SAFETY: the caller's contract.
    unsafe { put(p, h) }
}

fn safety(c: c_int) -> TResult<Safety> {
    Safety::from_code(c).ok_or(TError::Arg)
}

fn event_index(i: c_int) -> TResult<usize> {
    index(i, TYPES.len())
}

/// Runs `f` on the instance `h`, if a callback is being given it on this thread.
fn instance<R>(h: CHandle, f: impl FnOnce(&Instance) -> R) -> TResult<R> {
    delivery::with_instance(h as usize, f).ok_or(TError::InvalidHandle)
}

export! { tools:
    fn MPI_T_event_get_num / PMPI_T_event_get_num(num_events: *mut c_int) {
        initialized()?;
        // SAFETY: an int the caller owns.
        *unsafe { out(num_events) }? = TYPES.len() as c_int;
        Ok(())
    }

    fn MPI_T_event_get_info / PMPI_T_event_get_info(
        event_index_: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int,
        array_of_datatypes: *mut c_int, array_of_displacements: *mut isize, num_elements: *mut c_int,
        enumtype: *mut CHandle, info: *mut abi::Info, desc: *mut c_char, desc_len: *mut c_int,
        bind: *mut c_int
    ) {
        initialized()?;
        let t = &TYPES[event_index(event_index_)?];
        // SAFETY: optional outputs of the caller (MPI's contract): each written only if not
        // null; the arrays have room for `*num_elements` entries on input.
        unsafe {
            put_string(t.name, name, name_len)?;
            put(verbosity, t.verbosity.code())?;
            if !num_elements.is_null() {
                let n = out(num_elements)?;
                let room = usize::try_from(*n).map_err(|_| TError::Arg)?.min(t.elements.len());
                for (i, e) in t.elements.iter().take(room).enumerate() {
                    if !array_of_datatypes.is_null() {
                        *array_of_datatypes.add(i) = e.ty.handle();
                    }
                    if !array_of_displacements.is_null() {
                        *array_of_displacements.add(i) = e.displacement as isize;
                    }
                }
                *n = t.elements.len() as c_int;
            }
            put(enumtype, std::ptr::null_mut())?;
            put_info(info, Info::new())?;
            put_string(t.desc, desc, desc_len)?;
            put(bind, Bind::NoObject.code())
        }
    }

    fn MPI_T_event_get_index / PMPI_T_event_get_index(name: *const c_char, event_index_: *mut c_int) {
        initialized()?;
        // SAFETY: a C string and an int of the caller (MPI's contract).
        let (name, idx) = unsafe { (name_arg(name)?, out(event_index_)?) };
        *idx = TYPES.iter().position(|t| t.name == name).ok_or(TError::InvalidName)? as c_int;
        Ok(())
    }

    fn MPI_T_event_handle_alloc / PMPI_T_event_handle_alloc(
        event_index_: c_int, obj_handle: *mut c_void, info: abi::Info, event_registration: *mut CHandle
    ) {
        initialized()?;
        let _ = obj_handle; // every event type is bound to no object: it is ignored
        let e = event_index(event_index_)?;
        let hints = hints(info)?;
        // SAFETY: the caller's registration variable.
        let reg = unsafe { out(event_registration) }?;
        *reg = to_handle(regs::alloc(e, hints)?);
        Ok(())
    }

    fn MPI_T_event_handle_free / PMPI_T_event_handle_free(
        event_registration: CHandle, user_data: *mut c_void, free_cb_function: FreeCallback
    ) {
        initialized()?;
        let id = to_id(event_registration);
        let user = UserData(user_data);
        let on_free: Option<regs::FreeCallback> = free_cb_function.map(|f| {
            Box::new(move || {
                let user = user;
                // SAFETY: the program's free callback with its own user data, as MPI specifies;
                // called once no callback of the registration runs.
                unsafe { f(to_handle(id), Safety::None.code(), user.0) }
            }) as regs::FreeCallback
        });
        regs::free(id, on_free)?;
        last_user_data(|m| m.remove(&id));
        Ok(())
    }

    fn MPI_T_event_handle_get_info / PMPI_T_event_handle_get_info(event_registration: CHandle, info_used: *mut abi::Info) {
        initialized()?;
        let info = regs::info(to_id(event_registration))?;
        // SAFETY: the caller's info variable.
        unsafe { out(info_used) }?;
        // SAFETY: checked above: not null and aligned.
        unsafe { put_info(info_used, info) }
    }

    fn MPI_T_event_handle_set_info / PMPI_T_event_handle_set_info(event_registration: CHandle, info: abi::Info) {
        initialized()?;
        regs::set_info(to_id(event_registration), &hints(info)?)
    }

    fn MPI_T_event_register_callback / PMPI_T_event_register_callback(
        event_registration: CHandle, cb_safety: c_int, info: abi::Info, user_data: *mut c_void,
        event_cb_function: EventCallback
    ) {
        initialized()?;
        let id = to_id(event_registration);
        regs::get(id)?;
        let level = safety(cb_safety)?;
        let _ = hints(info)?;
        let user = UserData(user_data);
        let cb: Option<regs::Callback> = event_cb_function.map(|f| {
            Arc::new(move |inst: &Instance, level: Safety| {
                let user = user;
                // SAFETY: the program's callback with its user data, as MPI specifies; the
                // instance handle is valid for the duration of the call.
                unsafe { f(inst as *const Instance as CHandle, to_handle(id), level.code(), user.0) }
            }) as regs::Callback
        });
        regs::set_callback(id, level, cb)?;
        last_user_data(|m| m.insert(id, user));
        Ok(())
    }

    fn MPI_T_event_callback_get_info / PMPI_T_event_callback_get_info(
        event_registration: CHandle, cb_safety: c_int, info_used: *mut abi::Info
    ) {
        initialized()?;
        let info = regs::callback_info(to_id(event_registration), safety(cb_safety)?)?;
        // SAFETY: the caller's info variable.
        unsafe { out(info_used) }?;
        // SAFETY: checked above: not null and aligned.
        unsafe { put_info(info_used, info) }
    }

    fn MPI_T_event_callback_set_info / PMPI_T_event_callback_set_info(
        event_registration: CHandle, cb_safety: c_int, info: abi::Info
    ) {
        initialized()?;
        regs::set_callback_info(to_id(event_registration), safety(cb_safety)?, &hints(info)?)
    }

    fn MPI_T_event_set_dropped_handler / PMPI_T_event_set_dropped_handler(
        event_registration: CHandle, dropped_cb_function: DroppedCallback
    ) {
        initialized()?;
        let id = to_id(event_registration);
        let h: Option<regs::Dropped> = dropped_cb_function.map(|f| {
            Arc::new(move |count: u64, source: usize| {
                let user = last_user_data(|m| m.get(&id).copied()).unwrap_or(UserData(std::ptr::null_mut()));
                // SAFETY: the program's dropped handler, as MPI specifies, from delivery's
                // thread-safe context.
                unsafe {
                    f(count as i64, to_handle(id), source as c_int, Safety::ThreadSafe.code(), user.0)
                }
            }) as regs::Dropped
        });
        regs::set_dropped_handler(id, h)
    }

    fn MPI_T_event_read / PMPI_T_event_read(event_instance: CHandle, element_index: c_int, buffer: *mut c_void) {
        initialized()?;
        let bytes = instance(event_instance, |i| {
            let n = TYPES[i.event].elements.len();
            index(element_index, n).map(|k| i.element(k).unwrap_or_default().to_vec())
        })??;
        // SAFETY: `buffer` holds one element of the element's type (MPI's contract).
        unsafe { put_bytes(buffer, &bytes) }
    }

    fn MPI_T_event_copy / PMPI_T_event_copy(event_instance: CHandle, buffer: *mut c_void) {
        initialized()?;
        let bytes = instance(event_instance, |i| i.data[..TYPES[i.event].extent()].to_vec())?;
        // SAFETY: `buffer` has room for the elements at their displacements (MPI's contract).
        unsafe { put_bytes(buffer, &bytes) }
    }

    fn MPI_T_event_get_timestamp / PMPI_T_event_get_timestamp(event_instance: CHandle, event_timestamp: *mut i64) {
        initialized()?;
        let t = instance(event_instance, |i| i.timestamp)?;
        // SAFETY: an MPI_Count the caller owns.
        *unsafe { out(event_timestamp) }? = t as i64;
        Ok(())
    }

    fn MPI_T_event_get_source / PMPI_T_event_get_source(event_instance: CHandle, source_index: *mut c_int) {
        initialized()?;
        let s = instance(event_instance, Instance::source)?;
        // SAFETY: an int the caller owns.
        *unsafe { out(source_index) }? = s as c_int;
        Ok(())
    }

    fn MPI_T_source_get_num / PMPI_T_source_get_num(num_sources: *mut c_int) {
        initialized()?;
        // SAFETY: an int the caller owns.
        *unsafe { out(num_sources) }? = SOURCES.len() as c_int;
        Ok(())
    }

    fn MPI_T_source_get_info / PMPI_T_source_get_info(
        source_index: c_int, name: *mut c_char, name_len: *mut c_int, desc: *mut c_char,
        desc_len: *mut c_int, ordering: *mut c_int, ticks_per_second: *mut i64, max_ticks: *mut i64,
        info: *mut abi::Info
    ) {
        initialized()?;
        let s = &SOURCES[index(source_index, SOURCES.len())?];
        // SAFETY: optional outputs of the caller (MPI's contract): each written only if not null.
        unsafe {
            put_string(s.name, name, name_len)?;
            put_string(s.desc, desc, desc_len)?;
            // Instances are stamped on the firing threads and queued in arrival order: two
            // threads may queue them out of timestamp order (MPI_T_SOURCE_UNORDERED).
            put(ordering, 1)?;
            put(ticks_per_second, TICKS_PER_SECOND)?;
            put(max_ticks, i64::MAX)?;
            put_info(info, Info::new())
        }
    }

    fn MPI_T_source_get_timestamp / PMPI_T_source_get_timestamp(source_index: c_int, timestamp: *mut i64) {
        initialized()?;
        index(source_index, SOURCES.len())?;
        // SAFETY: an MPI_Count the caller owns.
        *unsafe { out(timestamp) }? = madmpi::tools::events::types::now() as i64;
        Ok(())
    }
}
