//! Categories, C side: `MPI_T_category_get_num`, `_get_info`, `_get_index`, `_get_cvars`,
//! `_get_pvars`, `_get_categories`, `_get_events`, `_get_num_events`, `MPI_T_category_changed`.
//! The tree is `madmpi::tools::categories`'.

use super::tools::{index, initialized, name_arg, out, put, put_string};
use crate::export::export;
use madmpi::tools::categories::{Category, UPDATE_NUMBER};
use madmpi::tools::{TError, TResult, registry};
use std::ffi::{c_char, c_int};

fn category(i: c_int) -> TResult<&'static Category> {
    let cats = &registry().categories;
    Ok(&cats[index(i, cats.len())?])
}

/// Writes the first `len` of `members` to `indices`.
///
/// # Safety
/// `indices`, if `len > 0`, must be valid for writes of `len` ints.
unsafe fn put_indices(members: &[usize], len: c_int, indices: *mut c_int) -> TResult<()> {
    let n = usize::try_from(len).map_err(|_| TError::Arg)?.min(members.len());
    if n == 0 {
        return Ok(());
    }
    if indices.is_null() || !indices.is_aligned() {
        return Err(TError::Arg);
    }
    // SAFETY: room for `len >= n` ints (the caller's contract), aligned and not null.
    let out = unsafe { std::slice::from_raw_parts_mut(indices, n) };
    for (o, m) in out.iter_mut().zip(members) {
        *o = *m as c_int;
    }
    Ok(())
}

export! { tools:
    fn MPI_T_category_get_num / PMPI_T_category_get_num(num_cat: *mut c_int) {
        initialized()?;
        // SAFETY: an int the caller owns.
        *unsafe { out(num_cat) }? = registry().categories.len() as c_int;
        Ok(())
    }

    fn MPI_T_category_get_info / PMPI_T_category_get_info(
        cat_index: c_int, name: *mut c_char, name_len: *mut c_int, desc: *mut c_char,
        desc_len: *mut c_int, num_cvars: *mut c_int, num_pvars: *mut c_int, num_categories: *mut c_int
    ) {
        initialized()?;
        let c = category(cat_index)?;
        // SAFETY: optional outputs of the caller (MPI's contract): each written only if not null.
        unsafe {
            put_string(&c.name, name, name_len)?;
            put_string(&c.desc, desc, desc_len)?;
            put(num_cvars, c.cvars.len() as c_int)?;
            put(num_pvars, c.pvars.len() as c_int)?;
            put(num_categories, c.subcategories.len() as c_int)
        }
    }

    fn MPI_T_category_get_num_events / PMPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) {
        initialized()?;
        let c = category(cat_index)?;
        // SAFETY: an int the caller owns.
        *unsafe { out(num_events) }? = c.events.len() as c_int;
        Ok(())
    }

    fn MPI_T_category_get_index / PMPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) {
        initialized()?;
        // SAFETY: a C string and an int of the caller (MPI's contract).
        let (name, idx) = unsafe { (name_arg(name)?, out(cat_index)?) };
        *idx = registry().category_index(name).ok_or(TError::InvalidName)? as c_int;
        Ok(())
    }

    fn MPI_T_category_get_cvars / PMPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) {
        initialized()?;
        let c = category(cat_index)?;
        // SAFETY: room for `len` ints (MPI's contract).
        unsafe { put_indices(&c.cvars, len, indices) }
    }

    fn MPI_T_category_get_pvars / PMPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) {
        initialized()?;
        let c = category(cat_index)?;
        // SAFETY: room for `len` ints (MPI's contract).
        unsafe { put_indices(&c.pvars, len, indices) }
    }

    fn MPI_T_category_get_categories / PMPI_T_category_get_categories(
        cat_index: c_int, len: c_int, indices: *mut c_int
    ) {
        initialized()?;
        let c = category(cat_index)?;
        // SAFETY: room for `len` ints (MPI's contract).
        unsafe { put_indices(&c.subcategories, len, indices) }
    }

    fn MPI_T_category_get_events / PMPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) {
        initialized()?;
        let c = category(cat_index)?;
        // SAFETY: room for `len` ints (MPI's contract).
        unsafe { put_indices(&c.events, len, indices) }
    }

    fn MPI_T_category_changed / PMPI_T_category_changed(update_number: *mut c_int) {
        initialized()?;
        // SAFETY: an int the caller owns.
        *unsafe { out(update_number) }? = UPDATE_NUMBER;
        Ok(())
    }
}
