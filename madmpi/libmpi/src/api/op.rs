//! Reduction operations: `MPI_Op_create(_c)`, `MPI_Op_free`, `MPI_Op_commutative` and
//! `MPI_Reduce_local(_c)`. Errors go to `MPI_COMM_WORLD`'s handler (no communicator is involved).
//!
//! `MPI_Reduce_local` with a builtin operation reduces in place when the datatype is contiguous
//! and otherwise packs both operands, reduces, and unpacks the result; a user function is
//! called on the program's memory as it is.

use crate::check::{self, CInt};
use crate::errors::Outcome;
use crate::export::export;
use crate::ops::{self, OpRef, UserFn, UserFunction, UserFunctionC};
use crate::state::state;
use madmpi::abi;
use madmpi::error::Error;
use std::ffi::{c_int, c_void};

/// `MPI_Op_create` of either width.
///
/// # Safety
/// `op` is an output argument.
unsafe fn create(user_fn: Option<UserFn>, commute: c_int, op: *mut abi::Op) -> Outcome {
    let Some(f) = user_fn else {
        return Err(Error::arg("the user function is a null pointer").into());
    };
    // SAFETY: an output argument (the caller's contract).
    let op = unsafe { check::out(op, "op") }?;
    *op = ops::create(f, commute != 0)?;
    Ok(())
}

/// `MPI_Reduce_local` of either width: `inoutbuf[i] = inbuf[i] op inoutbuf[i]`.
///
/// # Safety
/// Both buffers hold `count` elements of the datatype (MPI's contract).
unsafe fn reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: impl CInt,
    datatype: abi::Datatype,
    op: abi::Op,
) -> Outcome {
    let st = state()?;
    let n = check::count(count)?;
    let ty = st.committed_datatype(datatype)?;
    let o = ops::resolve(op)?;
    for (b, what) in [(inbuf, "input buffer"), (inoutbuf.cast_const(), "input-output buffer")] {
        if b as usize == abi::MPI_IN_PLACE {
            return Err(Error::buffer(format!("MPI_IN_PLACE is not allowed as the {what}")).into());
        }
        check::buffer(b, n, &ty)?;
    }
    if n == 0 || ty.size() == 0 {
        // Still an error if the operation is not defined on the type.
        return o.op(datatype).check(&ty).map_err(Into::into);
    }
    match o {
        OpRef::User(u) => {
            // SAFETY: both buffers hold `count` elements of the type (MPI's contract).
            unsafe { ops::call(&u, inbuf.cast(), inoutbuf.cast(), n as usize, ty.extent(), datatype) };
            Ok(())
        }
        OpRef::Builtin(_) => {
            let op = o.op(datatype);
            op.check(&ty)?;
            let len = ty.pack_size(n)?;
            if let Some(off) = ty.contiguous_offset() {
                let off = off as isize;
                // SAFETY: the data of `count` elements is these `len` bytes from the type's
                // first byte (MPI's contract on the buffers); they do not overlap.
                let (a, b) = unsafe {
                    (
                        std::slice::from_raw_parts(inbuf.cast::<u8>().wrapping_offset(off), len),
                        std::slice::from_raw_parts_mut(inoutbuf.cast::<u8>().wrapping_offset(off), len),
                    )
                };
                return op.reduce(a, b, n as usize, &ty).map_err(Into::into);
            }
            let (mut a, mut b) = (vec![0u8; len], vec![0u8; len]);
            // SAFETY: the buffers hold the type map of `count` elements (MPI's contract).
            unsafe {
                ty.pack(inbuf.cast(), n, &mut a, &mut 0)?;
                ty.pack(inoutbuf.cast(), n, &mut b, &mut 0)?;
            }
            op.reduce(&a, &mut b, n as usize, &ty)?;
            // SAFETY: as above.
            unsafe { ty.unpack(&b, &mut 0, inoutbuf.cast(), n) }?;
            Ok(())
        }
    }
}

export! {
    /// `MPI_Op_create`: `commute` non-zero says the function is commutative (the collectives
    /// may then combine operands in any order; otherwise in rank order).
    fn MPI_Op_create / PMPI_Op_create(user_fn: Option<UserFunction>, commute: c_int, op: *mut abi::Op) {
        // SAFETY: an output argument (MPI's contract).
        unsafe { create(user_fn.map(UserFn::Int), commute, op) }
    }

    /// `MPI_Op_create_c`: the function's length argument is an `MPI_Count`.
    fn MPI_Op_create_c / PMPI_Op_create_c(user_fn: Option<UserFunctionC>, commute: c_int, op: *mut abi::Op) {
        // SAFETY: an output argument (MPI's contract).
        unsafe { create(user_fn.map(UserFn::Large), commute, op) }
    }

    /// `MPI_Op_free`: sets the handle to `MPI_OP_NULL`; operations still running keep the
    /// function. Predefined operations cannot be freed (`MPI_ERR_OP`).
    fn MPI_Op_free / PMPI_Op_free(op: *mut abi::Op) {
        // SAFETY: an in-out argument.
        let op = unsafe { check::out(op, "op") }?;
        ops::free(*op)?;
        *op = abi::MPI_OP_NULL;
        Ok(())
    }

    /// `MPI_Op_commutative`: true for every predefined operation.
    fn MPI_Op_commutative / PMPI_Op_commutative(op: abi::Op, commute: *mut c_int) {
        let o = ops::resolve(op)?;
        // SAFETY: an output argument.
        let commute = unsafe { check::out(commute, "commute") }?;
        *commute = c_int::from(o.is_commutative());
        Ok(())
    }

    /// `MPI_Reduce_local`.
    fn MPI_Reduce_local / PMPI_Reduce_local(
        inbuf: *const c_void,
        inoutbuf: *mut c_void,
        count: c_int,
        datatype: abi::Datatype,
        op: abi::Op,
    ) {
        // SAFETY: MPI's contract on the buffers.
        unsafe { reduce_local(inbuf, inoutbuf, count, datatype, op) }
    }

    /// `MPI_Reduce_local_c`.
    fn MPI_Reduce_local_c / PMPI_Reduce_local_c(
        inbuf: *const c_void,
        inoutbuf: *mut c_void,
        count: abi::Count,
        datatype: abi::Datatype,
        op: abi::Op,
    ) {
        // SAFETY: MPI's contract on the buffers.
        unsafe { reduce_local(inbuf, inoutbuf, count, datatype, op) }
    }
}
