//! Reduction operation handles: MPICH's predefined `MPI_MAX` ... `MPI_NO_OP` (builtin handles
//! `0x58000001` to `0x5800000e`, in [`Builtin::ALL`]'s order) and the user operations of
//! `MPI_Op_create`, in a process-wide [`Table`] (the MPI state has no slot for them; an
//! operation is a C function pointer and a flag, with nothing to release at `MPI_Finalize`).
//! A function of `MPI_Op_create` takes an `int` length and is called on `INT_MAX` elements at
//! most at a time; one of `MPI_Op_create_c` (MPI 4.0) takes an `MPI_Count`.
//!
//! A user operation becomes a [`madmpi::op::Op`] per call ([`OpRef::op`]): the C function must
//! be given a pointer to the *handle* of the datatype the program passed (MPICH passes that
//! handle), which the engine's [`Datatype`] does not know, so the closure captures it. The
//! engine hands reductions packed elements; for a non-contiguous datatype the closure unpacks
//! both operands into temporaries laid out as the type map says, calls the function, and packs
//! the result back (a C function indexes the memory layout).
//!
//! Owns the handle → operation mapping and the C calling convention of user functions; it
//! must not know the collectives.

use crate::table::Table;
use madmpi::abi::{self, Handle, UserObject};
use madmpi::datatype::Datatype;
use madmpi::error::{Error, Result};
use madmpi::op::{Builtin, Op};
use nmad::Layout;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, LazyLock};

/// `MPI_User_function`.
pub(crate) type UserFunction = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut abi::Datatype);
/// `MPI_User_function_c` (MPI 4.0): the length is an `MPI_Count`.
pub(crate) type UserFunctionC =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut abi::Count, *mut abi::Datatype);

/// The C function of a user operation, by the width of its length argument.
#[derive(Clone, Copy)]
pub(crate) enum UserFn {
    /// From `MPI_Op_create`: called on at most `INT_MAX` elements at a time.
    Int(UserFunction),
    /// From `MPI_Op_create_c`: called once on every element.
    Large(UserFunctionC),
}

/// A user operation (`MPI_Op_create`, `MPI_Op_create_c`).
pub(crate) struct UserOp {
    pub(crate) f: UserFn,
    pub(crate) commutative: bool,
}

static USER_OPS: LazyLock<Table<Arc<UserOp>>> = LazyLock::new(|| Table::new(UserObject::Op));

/// An operation handle resolved.
#[derive(Clone)]
pub(crate) enum OpRef {
    Builtin(Builtin),
    User(Arc<UserOp>),
}

/// The builtin of handle `h`, if it is one.
pub(crate) fn builtin(h: Handle) -> Option<Builtin> {
    let first = abi::MPI_MAX;
    let i = h.checked_sub(first)?;
    Builtin::ALL.get(usize::try_from(i).ok()?).copied()
}

/// The operation of handle `h`: `MPI_ERR_OP` for `MPI_OP_NULL` and anything that is not a live
/// operation handle.
pub(crate) fn resolve(h: Handle) -> Result<OpRef> {
    if let Some(b) = builtin(h) {
        return Ok(OpRef::Builtin(b));
    }
    if h == abi::MPI_OP_NULL {
        return Err(Error::op("null operation (MPI_OP_NULL)"));
    }
    USER_OPS.get(h).map(OpRef::User).ok_or_else(|| Error::op(format!("invalid operation handle {h:#x}")))
}

/// `MPI_Op_create`: the new handle.
pub(crate) fn create(f: UserFn, commutative: bool) -> Result<Handle> {
    USER_OPS
        .insert(Arc::new(UserOp { f, commutative }))
        .ok_or_else(|| Error::intern("too many live operations"))
}

/// `MPI_Op_free`: `MPI_ERR_OP` for a builtin, `MPI_OP_NULL` or a dead handle. Operations still
/// running keep their function.
pub(crate) fn free(h: Handle) -> Result<()> {
    if let Some(b) = builtin(h) {
        return Err(Error::op(format!("{} is predefined and cannot be freed", b.name())));
    }
    resolve(h)?;
    USER_OPS.remove(h).map(drop).ok_or_else(|| Error::op(format!("invalid operation handle {h:#x}")))
}

impl OpRef {
    pub(crate) fn is_commutative(&self) -> bool {
        match self {
            OpRef::Builtin(_) => true,
            OpRef::User(u) => u.commutative,
        }
    }

    /// The operation to run on elements of the datatype of handle `dt`.
    pub(crate) fn op(&self, dt: Handle) -> Op {
        match self {
            OpRef::Builtin(b) => Op::builtin(*b),
            OpRef::User(u) => {
                let u = u.clone();
                let commutative = u.commutative;
                Op::user(
                    Arc::new(move |input: &[u8], inout: &mut [u8], count: usize, ty: &Datatype| {
                        call_packed(&u, input, inout, count, ty, dt)
                    }),
                    commutative,
                )
            }
        }
    }
}

/// Calls `u`'s function on memory laid out as `count` elements of extent `extent` at `input`
/// and `inout` (the datatype handle `dt`). An `int` function gets `INT_MAX` elements at a
/// time, the next call's addresses that many extents further.
///
/// # Safety
/// Both addresses must be valid for the type map of `count` elements (reads, and writes for
/// `inout`).
pub(crate) unsafe fn call(
    u: &UserOp,
    input: *const u8,
    inout: *mut u8,
    count: usize,
    extent: i64,
    dt: Handle,
) {
    let mut h = dt;
    match u.f {
        UserFn::Large(f) => {
            let mut len = abi::Count::try_from(count).unwrap_or(abi::Count::MAX);
            // SAFETY: `count` elements at both addresses (the caller's contract); the count
            // and handle are locals the function may read and write.
            unsafe { f(input.cast_mut().cast(), inout.cast(), &mut len, &mut h) };
        }
        UserFn::Int(f) => {
            let mut done = 0usize;
            while done < count {
                let n = (count - done).min(c_int::MAX as usize);
                let shift = (done as i64).saturating_mul(extent) as isize;
                let mut len = n as c_int;
                // SAFETY: elements `done..done + n` of the `count` the caller vouches for
                // start `done` extents from both addresses; `len` and `h` are locals.
                unsafe {
                    f(
                        input.wrapping_offset(shift).cast_mut().cast(),
                        inout.wrapping_offset(shift).cast(),
                        &mut len,
                        &mut h,
                    )
                };
                done += n;
            }
        }
    }
}

/// Calls `u` on packed operands: directly when `ty` is contiguous (its memory is its packed
/// form, from its true lower bound), else through unpacked temporaries.
fn call_packed(u: &UserOp, input: &[u8], inout: &mut [u8], count: usize, ty: &Datatype, dt: Handle) {
    if let Some(off) = ty.contiguous_offset() {
        let back = -(off as isize);
        // SAFETY: the slices hold the `count` elements from the type's first byte.
        unsafe {
            call(
                u,
                input.as_ptr().wrapping_offset(back),
                inout.as_mut_ptr().wrapping_offset(back),
                count,
                ty.extent(),
                dt,
            )
        };
        return;
    }
    let Ok(n) = i64::try_from(count) else { return };
    let Ok(layout) = ty.layout(n) else { return };
    let (mut lo, mut hi) = (isize::MAX, isize::MIN);
    layout.blocks(0, &mut |off, len| {
        lo = lo.min(off);
        hi = hi.max(off + len as isize);
        true
    });
    if lo > hi {
        return; // no data
    }
    let words = ((hi - lo) as usize).div_ceil(16);
    // Aligned for every C type the function may read there.
    let (mut a, mut b) = (vec![0u128; words], vec![0u128; words]);
    let (pa, pb) =
        (a.as_mut_ptr().cast::<u8>().wrapping_offset(-lo), b.as_mut_ptr().cast::<u8>().wrapping_offset(-lo));
    // SAFETY: every block of the layout lies in `[lo, hi)` from the bases, inside `a` and `b`,
    // which do not overlap the operands.
    unsafe {
        if ty.unpack(input, &mut 0, pa, n).is_err() || ty.unpack(inout, &mut 0, pb, n).is_err() {
            return;
        }
        call(u, pa, pb, count, ty.extent(), dt);
        let _ = ty.pack(pb, n, inout, &mut 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_handles_map_in_order() {
        assert_eq!(builtin(abi::MPI_MAX), Some(Builtin::Max));
        assert_eq!(builtin(abi::MPI_MINLOC), Some(Builtin::Minloc));
        assert_eq!(builtin(abi::MPI_MAXLOC), Some(Builtin::Maxloc));
        assert_eq!(builtin(abi::MPI_NO_OP), Some(Builtin::NoOp));
        assert_eq!(builtin(abi::MPI_NO_OP + 1), None);
        assert_eq!(builtin(abi::MPI_OP_NULL), None);
        for b in Builtin::ALL {
            let h = abi::MPI_MAX + Builtin::ALL.iter().position(|&x| x == b).unwrap() as i32;
            assert!(matches!(resolve(h), Ok(OpRef::Builtin(x)) if x == b));
        }
        assert!(resolve(abi::MPI_OP_NULL).is_err());
        assert!(free(abi::MPI_SUM).is_err());
    }

    unsafe extern "C" fn first(
        invec: *mut c_void,
        inout: *mut c_void,
        len: *mut c_int,
        _: *mut abi::Datatype,
    ) {
        // SAFETY: `len` ints at both addresses (the test's buffers).
        unsafe {
            for i in 0..*len as usize {
                *inout.cast::<i32>().add(i) = *invec.cast::<i32>().add(i) * 10 + *inout.cast::<i32>().add(i);
            }
        }
    }

    #[test]
    fn user_ops_are_created_called_and_freed() {
        let h = create(UserFn::Int(first), false).unwrap();
        let r = resolve(h).unwrap();
        assert!(!r.is_commutative());
        let int = Datatype::predefined(madmpi::datatype::Predefined::Int);
        let op = r.op(abi::MPI_INT);
        let input: Vec<u8> = [1i32, 2].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mut inout: Vec<u8> = [3i32, 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
        op.reduce(&input, &mut inout, 2, &int).unwrap();
        assert_eq!(inout, [13i32, 24].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
        // A vector of ints (at 0 and 3): packed operands, unpacked for the function and packed
        // back. The function treats `len` (1) as a count of ints: it combines the int at 0
        // only, and the one at 3 comes back as it was.
        let v = Datatype::vector(2, 1, 3, &int).unwrap();
        v.commit().unwrap();
        let mut inout2: Vec<u8> = [5i32, 6].iter().flat_map(|v| v.to_ne_bytes()).collect();
        op.reduce(&input, &mut inout2, 1, &v).unwrap();
        assert_eq!(inout2, [15i32, 6].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
        free(h).unwrap();
        assert!(resolve(h).is_err());
        assert!(free(h).is_err());
    }
}
