//! The combinatorial families of C entry points, generated from one table entry each, the way
//! MPICH generates its bindings (`maint/gen_binding_c.py`): a new function is one entry, not a
//! copied body.
//!
//! An entry is the parameters some calls share, then each call's *build* function (with the
//! leading arguments it alone passes, in brackets) and the forms it exists in, each with its
//! `int` and, if it has one, its `_c` (MPI 4.0 large-count) pair of names:
//!
//! ```text
//! family! {
//!     (sendbuf: *const c_void, sendcount: Count, ...)
//!     /// Gather: ...
//!     => gather[];
//!     run MPI_Gather / PMPI_Gather, MPI_Gather_c / PMPI_Gather_c;
//!     start MPI_Igather / PMPI_Igather, MPI_Igather_c / PMPI_Igather_c;
//!     init_info MPI_Gather_init / PMPI_Gather_init, MPI_Gather_init_c / PMPI_Gather_init_c;
//!     /// Scatter: ...
//!     => scatter[];
//!     run MPI_Scatter / PMPI_Scatter, MPI_Scatter_c / PMPI_Scatter_c;
//!     ...
//! }
//! ```
//!
//! `Count` and `Displ` in the parameter types are `int` in the first names and `MPI_Count` and
//! `MPI_Aint` in the second (the build functions are generic over [`crate::check::CInt`]). The
//! build function checks the arguments and returns a [`madmpi::operation::Operation`];
//! each form adds its own parameters after the communicator and does one thing with it:
//!
//! - `run`: runs it (a blocking call; a collective, a send);
//! - `run_status`: runs it and fills an `MPI_Status *` (receives, send-receives);
//! - `run_hot`, `run_status_hot`, `start_hot`: the same after the call's express path, `hot::MPI_X(args)`
//!   in the entry's module (`unsafe`; the call's outcome when it did the call, `None` when it
//!   declined, having done nothing), declined;
//! - `start`: starts it and stores its request in an `MPI_Request *` (nonblocking calls);
//! - `init`: stores it as an inactive persistent request (`MPI_Send_init`...);
//! - `init_info`: the same after an `MPI_Info` (persistent collectives, MPI 4.0).
//!
//! Build functions are called as `build(&state, &comm, "MPI_Name", extra.., args..)`, `extra`
//! being the call's bracketed expressions (a send's mode, say). Each form checks its own
//! parameters after the build function checked the shared ones (MPICH's order: parameter order
//! after the communicator).
//!
//! Calls that are no operation (the datatype calls, say) but exist in both widths are entries
//! of `widths!`: the parameters and a body written once over `Count`, then the `int` names and
//! the `_c` ones (an MPI-1 alias or an `_x` form is one more name).
//!
//! Owns the shapes of the forms; it must not know any MPI function nor check arguments.

use crate::check;
use crate::comms::CommObj;
use crate::errors::{On, Outcome};
use crate::state::State;
use madmpi::abi::{self, Status};
use madmpi::operation::Operation;
use std::sync::Arc;

/// Defines the `int` forms in `mod int` and the `_c` forms in `mod large`: see the module docs.
macro_rules! family {
    ($(
        ($($arg:ident: $ty:ty),* $(,)?)
        $(
            $(#[$doc:meta])*
            => $build:ident [$($extra:expr),* $(,)?];
            $($form:ident $name:ident / $pname:ident $(, $name_c:ident / $pname_c:ident)?;)+
        )+
    )*) => {
        $crate::api::family::width_mods! {
            int { $(
                $crate::api::family::calls! {
                    ($($arg: $ty),*);
                    $([$(#[$doc])*] $build [$($extra),*] { $($form $name / $pname;)+ })+
                }
            )* }
            large { $(
                $crate::api::family::calls! {
                    ($($arg: $ty),*);
                    $([$(#[$doc])*] $build [$($extra),*] { $($($form $name_c / $pname_c;)?)+ })+
                }
            )* }
        }
    };
}

/// The calls of one [`family!`] entry, one at a time, each with the entry's parameters.
macro_rules! calls {
    ($params:tt;) => {};
    (
        ($($arg:ident: $ty:ty),*);
        [$($doc:tt)*] $build:ident [$($extra:expr),*] { $($forms:tt)* }
        $($rest:tt)*
    ) => {
        $crate::api::family::forms! {
            { [$($doc)*] ($($arg: $ty),*) => $build [$($extra),*] };
            $($forms)*
        }
        $crate::api::family::calls!(($($arg: $ty),*); $($rest)*);
    };
}

/// The two modules of a table: `int` with `Count` and `Displ` as `int`, `large` with them as
/// `MPI_Count` and `MPI_Aint` (both `int64_t` in MPICH's ABI), each holding its items.
macro_rules! width_mods {
    (int { $($int:tt)* } large { $($large:tt)* }) => {
        $crate::api::family::width_mods!(@mod "The `int` forms." int ::std::ffi::c_int, ::std::ffi::c_int; $($int)*);
        $crate::api::family::width_mods!(
            @mod "The large-count (`_c`) forms." large ::madmpi::abi::Count, ::madmpi::abi::Aint; $($large)*
        );
    };
    (@mod $doc:literal $name:ident $count:ty, $displ:ty; $($items:tt)*) => {
        #[doc = $doc]
        pub mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            type Count = $count;
            #[allow(dead_code)]
            type Displ = $displ;
            $($items)*
        }
    };
}

/// Defines the `int` and `_c` forms of calls whose body is the same in both widths (generic
/// over [`crate::check::CInt`]): an entry is the parameters, with `Count` and `Displ` as in
/// [`family!`], and the body, then the `int` names, then the `large` ones (a call may have
/// more than one name per width: an MPI-1 alias, an `_x` form):
///
/// ```text
/// widths! {
///     /// Blocks of one length at displacements in extents.
///     (count: Count, blocklength: Count, displs: *const Displ, ...) { body }
///     int MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block;
///     large MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c;
/// }
/// ```
///
/// Each exported function's documentation is its name, then the entry's.
macro_rules! widths {
    ($(
        $(#[$doc:meta])*
        ($($arg:ident: $ty:ty),* $(,)?) $body:block
        $(int $($name:ident / $pname:ident),+;)?
        $(large $($name_c:ident / $pname_c:ident),+;)?
    )*) => {
        $crate::api::family::width_mods! {
            int { $(
                $crate::api::family::names! {
                    { [$(#[$doc])*] ($($arg: $ty),*) $body };
                    $($($name / $pname;)+)?
                }
            )* }
            large { $(
                $crate::api::family::names! {
                    { [$(#[$doc])*] ($($arg: $ty),*) $body };
                    $($($name_c / $pname_c;)+)?
                }
            )* }
        }
    };
}

/// The names of one [`widths!`] entry, one exported function each.
macro_rules! names {
    ($head:tt;) => {};
    ({ [$($doc:tt)*] ($($arg:ident: $ty:ty),*) $body:block }; $name:ident / $pname:ident; $($rest:tt)*) => {
        $crate::export::export! {
            #[doc = concat!("`", stringify!($name), "`.")]
            $($doc)*
            fn $name / $pname($($arg: $ty),*) $body
        }
        $crate::api::family::names!({ [$($doc)*] ($($arg: $ty),*) $body }; $($rest)*);
    };
}

/// The forms of one entry, one at a time.
macro_rules! forms {
    ($head:tt;) => {};
    ($head:tt; $form:ident $name:ident / $pname:ident; $($rest:tt)*) => {
        $crate::api::family::form!($form $head $name $pname);
        $crate::api::family::forms!($head; $($rest)*);
    };
}

/// One exported function of an entry (see the module docs for what each form does): the
/// handles resolved, the build function called, then the form's own parameters and part
/// ([`run`], [`run_status`], [`start`], [`init`]).
macro_rules! form {
    ($form:ident { [$($doc:tt)*] ($($arg:ident: $ty:ty),*) => $build:ident [$($extra:expr),*] } $name:ident $pname:ident) => {
        $crate::api::family::form!(@$form [$($doc)*] $name $pname ($($arg: $ty),*) |st, c| {
            // SAFETY: the arrays are readable during the call (MPI's contract); the build only
            // describes the buffers.
            unsafe { $build(st, c, stringify!($name), $($extra,)* $($arg),*) }
        });
    };
    // The express path's call, before the handles are resolved (no `hot`: nothing).
    (@hot $hot:ident $name:ident ($($arg:ident),*) $comm:ident ($($more:ident),*)) => {
        // SAFETY: the arguments as the program passed them (MPI's contract).
        if let Some(done) = unsafe { $hot::$name($($arg,)* $comm $(, $more)*) } {
            return done;
        }
    };
    (@hot $name:ident $($rest:tt)*) => {};
    (@run_hot $($head:tt)*) => {
        $crate::api::family::form!(@export hot $($head)* [] |_st, c, op| {
            // SAFETY: the buffers are valid during this blocking call (MPI's contract).
            unsafe { $crate::api::family::run(c, op) }
        });
    };
    (@run_status_hot $($head:tt)*) => {
        $crate::api::family::form!(@export hot $($head)* [status: *mut ::madmpi::abi::Status] |_st, c, op| {
            // SAFETY: the buffers are valid during this blocking call and `status` is an
            // output argument (MPI's contract).
            unsafe { $crate::api::family::run_status(c, op, status) }
        });
    };
    (@start_hot $($head:tt)*) => {
        $crate::api::family::form!(@export hot $($head)* [request: *mut ::madmpi::abi::Request] |st, c, op| {
            // SAFETY: the buffers stay valid until the request completes and `request` is
            // an output argument (MPI's contract for nonblocking calls).
            unsafe { $crate::api::family::start(st, c, op, request) }
        });
    };
    (@run $($head:tt)*) => {
        $crate::api::family::form!(@export $($head)* [] |_st, c, op| {
            // SAFETY: the buffers are valid during this blocking call (MPI's contract).
            unsafe { $crate::api::family::run(c, op) }
        });
    };
    (@run_status $($head:tt)*) => {
        $crate::api::family::form!(@export $($head)* [status: *mut ::madmpi::abi::Status] |_st, c, op| {
            // SAFETY: the buffers are valid during this blocking call and `status` is an
            // output argument (MPI's contract).
            unsafe { $crate::api::family::run_status(c, op, status) }
        });
    };
    (@start $($head:tt)*) => {
        $crate::api::family::form!(@export $($head)* [request: *mut ::madmpi::abi::Request] |st, c, op| {
            // SAFETY: the buffers stay valid until the request completes and `request` is
            // an output argument (MPI's contract for nonblocking calls).
            unsafe { $crate::api::family::start(st, c, op, request) }
        });
    };
    (@init $($head:tt)*) => {
        $crate::api::family::form!(@export $($head)* [request: *mut ::madmpi::abi::Request] |st, c, op| {
            // SAFETY: `request` is an output argument (MPI's contract).
            unsafe { $crate::api::family::init(st, c, op, None, request) }
        });
    };
    (@init_info $($head:tt)*) => {
        $crate::api::family::form!(
            @export $($head)* [info: ::madmpi::abi::Info, request: *mut ::madmpi::abi::Request] |st, c, op| {
                // SAFETY: `request` is an output argument (MPI's contract).
                unsafe { $crate::api::family::init(st, c, op, Some(info), request) }
            }
        );
    };
    (@export $($hot:ident)? [$($doc:tt)*] $name:ident $pname:ident ($($arg:ident: $ty:ty),*) |$st:ident, $c:ident| $build:block
        [$($more:ident: $mty:ty),*] |$st2:ident, $c2:ident, $op:ident| $form:block) => {
        $crate::export::export! {
            #[doc = concat!("`", stringify!($name), "`.")]
            $($doc)*
            fn $name / $pname($($arg: $ty,)* comm: ::madmpi::abi::Comm, $($more: $mty),*) {
                $crate::api::family::form!(@hot $($hot)? $name ($($arg),*) comm ($($more),*));
                let st = $crate::state::state()?;
                let c = st.comm(comm)?;
                let ($st, $c) = (&st, &c);
                let op = $build?;
                let ($st2, $c2, $op) = (&st, &c, op);
                $form
            }
        }
    };
}

/// The `run` form: runs `op` to completion.
///
/// # Safety
/// The memory `op` was built on is valid until this returns.
pub(crate) unsafe fn run(c: &Arc<CommObj>, op: Operation) -> Outcome {
    // SAFETY: the memory contract is ours, passed on.
    let o = unsafe { op.run() }.on(c)?;
    o.error.map_or(Ok(()), Err).on(c)
}

/// The `run_status` form: runs `op` to completion and fills `status` (checked first).
///
/// # Safety
/// As [`run`]; `status` is an output argument.
pub(crate) unsafe fn run_status(c: &Arc<CommObj>, op: Operation, status: *mut Status) -> Outcome {
    // SAFETY: an output argument (our contract).
    let status = unsafe { check::status(status) }.on(c)?;
    // SAFETY: the memory contract is ours, passed on.
    let o = unsafe { op.run() }.on(c)?;
    crate::status::outcome(status, &o);
    o.error.map_or(Ok(()), Err).on(c)
}

/// The `start` form: starts `op` and stores its request in `request` (checked first).
///
/// # Safety
/// The memory `op` was built on is valid until the request completes; `request` is an output
/// argument.
pub(crate) unsafe fn start(
    st: &State,
    c: &Arc<CommObj>,
    op: Operation,
    request: *mut abi::Request,
) -> Outcome {
    // SAFETY: an output argument (our contract).
    let request = unsafe { check::out(request, "request") }.on(c)?;
    // SAFETY: the memory contract is ours, passed on.
    let raw = unsafe { op.start() }.on(c)?;
    *request = st.add_request(raw, c).on(c)?;
    Ok(())
}

/// The `init` and `init_info` forms: checks `info` if given (no hint changes what a persistent
/// operation does, but the handle must be valid), then stores `op` as an inactive persistent
/// request in `request`.
///
/// # Safety
/// `request` is an output argument.
pub(crate) unsafe fn init(
    st: &State,
    c: &Arc<CommObj>,
    op: Operation,
    info: Option<abi::Info>,
    request: *mut abi::Request,
) -> Outcome {
    if let Some(info) = info {
        crate::infos::hints(info).on(c)?;
    }
    // SAFETY: an output argument (our contract).
    let request = unsafe { check::out(request, "request") }.on(c)?;
    *request = st.add_persistent(op.persist(), c).on(c)?;
    Ok(())
}

pub(crate) use {calls, family, form, forms, names, width_mods, widths};
