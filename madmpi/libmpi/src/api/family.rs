//! The combinatorial families of C entry points, generated from one table entry each, the way
//! MPICH generates its bindings (`maint/gen_binding_c.py`): a new function is one entry, not a
//! copied body.
//!
//! An entry names a *build* function and the parameters its calls share, then the forms it
//! exists in, each with its `int` and, if it has one, its `_c` (MPI 4.0 large-count) pair of
//! names:
//!
//! ```text
//! family! {
//!     /// `MPI_Gather`: ...
//!     (sendbuf: *const c_void, sendcount: Count, ...) => gather[];
//!     run MPI_Gather / PMPI_Gather, MPI_Gather_c / PMPI_Gather_c;
//!     start MPI_Igather / PMPI_Igather, MPI_Igather_c / PMPI_Igather_c;
//!     init_info MPI_Gather_init / PMPI_Gather_init, MPI_Gather_init_c / PMPI_Gather_init_c;
//! }
//! ```
//!
//! `Count` and `Displ` in the parameter types are `int` in the first names and `MPI_Count` and
//! `MPI_Aint` in the second (the build functions are generic over [`crate::check::CInt`]). The
//! build function checks the arguments and returns a [`madmpi::request::operation::Operation`];
//! each form adds its own parameters after the communicator and does one thing with it:
//!
//! - `run`: runs it (a blocking call; a collective, a send);
//! - `run_status`: runs it and fills an `MPI_Status *` (receives, send-receives);
//! - `start`: starts it and stores its request in an `MPI_Request *` (nonblocking calls);
//! - `init`: stores it as an inactive persistent request (`MPI_Send_init`...);
//! - `init_info`: the same after an `MPI_Info` (persistent collectives, MPI 4.0).
//!
//! Build functions are called as `build(&state, &comm, "MPI_Name", extra.., args..)`, `extra`
//! being the entry's bracketed expressions (a send's mode, say). Each form checks its own
//! parameters after the build function checked the shared ones (MPICH's order: parameter order
//! after the communicator).
//!
//! Owns the shapes of the forms; it must not know any MPI function nor check arguments.

/// Defines the `int` forms in `mod int` and the `_c` forms in `mod large`: see the module docs.
macro_rules! family {
    ($(
        $(#[$doc:meta])*
        ($($arg:ident: $ty:ty),* $(,)?) => $build:ident [$($extra:expr),* $(,)?];
        $($form:ident $name:ident / $pname:ident $(, $name_c:ident / $pname_c:ident)?;)+
    )*) => {
        /// The `int` forms.
        pub mod int {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            type Count = ::std::ffi::c_int;
            #[allow(dead_code)]
            type Displ = ::std::ffi::c_int;
            $(
                $crate::api::family::forms! {
                    { [$(#[$doc])*] ($($arg: $ty),*) => $build [$($extra),*] };
                    $($form $name / $pname;)+
                }
            )*
        }

        /// The large-count (`_c`) forms.
        pub mod large {
            #[allow(unused_imports)]
            use super::*;
            #[allow(dead_code)]
            type Count = ::madmpi::abi::Count;
            #[allow(dead_code)]
            type Displ = ::madmpi::abi::Aint;
            $(
                $crate::api::family::forms! {
                    { [$(#[$doc])*] ($($arg: $ty),*) => $build [$($extra),*] };
                    $($($form $name_c / $pname_c;)?)+
                }
            )*
        }
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

/// One exported function of an entry (see the module docs for what each form does).
macro_rules! form {
    (run { [$($doc:tt)*] ($($arg:ident: $ty:ty),*) => $build:ident [$($extra:expr),*] } $name:ident $pname:ident) => {
        $crate::export::export! {
            #[doc = concat!("`", stringify!($name), "`.")]
            $($doc)*
            fn $name / $pname($($arg: $ty,)* comm: ::madmpi::abi::Comm) {
                use $crate::errors::On;
                let st = $crate::state::state()?;
                let c = st.comm(comm)?;
                // SAFETY: the arrays are readable during the call (MPI's contract); the build
                // only describes the buffers.
                let op = unsafe { $build(&st, &c, stringify!($name), $($extra,)* $($arg),*) }?;
                // SAFETY: the buffers are valid during this blocking call (MPI's contract).
                let o = unsafe { op.run() }.on(&c)?;
                o.error.map_or(Ok(()), Err).on(&c)
            }
        }
    };
    (run_status { [$($doc:tt)*] ($($arg:ident: $ty:ty),*) => $build:ident [$($extra:expr),*] } $name:ident $pname:ident) => {
        $crate::export::export! {
            #[doc = concat!("`", stringify!($name), "`.")]
            $($doc)*
            fn $name / $pname(
                $($arg: $ty,)*
                comm: ::madmpi::abi::Comm,
                status: *mut ::madmpi::abi::Status,
            ) {
                use $crate::errors::On;
                let st = $crate::state::state()?;
                let c = st.comm(comm)?;
                // SAFETY: as in the `run` form.
                let op = unsafe { $build(&st, &c, stringify!($name), $($extra,)* $($arg),*) }?;
                // SAFETY: an output argument (MPI's contract).
                let status = unsafe { $crate::check::status(status) }.on(&c)?;
                // SAFETY: the buffers are valid during this blocking call (MPI's contract).
                let o = unsafe { op.run() }.on(&c)?;
                $crate::status::outcome(status, &o);
                o.error.map_or(Ok(()), Err).on(&c)
            }
        }
    };
    (start { [$($doc:tt)*] ($($arg:ident: $ty:ty),*) => $build:ident [$($extra:expr),*] } $name:ident $pname:ident) => {
        $crate::export::export! {
            #[doc = concat!("`", stringify!($name), "`.")]
            $($doc)*
            fn $name / $pname(
                $($arg: $ty,)*
                comm: ::madmpi::abi::Comm,
                request: *mut ::madmpi::abi::Request,
            ) {
                use $crate::errors::On;
                let st = $crate::state::state()?;
                let c = st.comm(comm)?;
                // SAFETY: as in the `run` form.
                let op = unsafe { $build(&st, &c, stringify!($name), $($extra,)* $($arg),*) }?;
                // SAFETY: an output argument (MPI's contract).
                let request = unsafe { $crate::check::out(request, "request") }.on(&c)?;
                // SAFETY: the buffers stay valid until the request completes (MPI's contract for
                // nonblocking calls).
                let raw = unsafe { op.start() }.on(&c)?;
                *request = st.add_request(raw, &c).on(&c)?;
                Ok(())
            }
        }
    };
    (init { [$($doc:tt)*] ($($arg:ident: $ty:ty),*) => $build:ident [$($extra:expr),*] } $name:ident $pname:ident) => {
        $crate::export::export! {
            #[doc = concat!("`", stringify!($name), "`.")]
            $($doc)*
            fn $name / $pname(
                $($arg: $ty,)*
                comm: ::madmpi::abi::Comm,
                request: *mut ::madmpi::abi::Request,
            ) {
                use $crate::errors::On;
                let st = $crate::state::state()?;
                let c = st.comm(comm)?;
                // SAFETY: as in the `run` form.
                let op = unsafe { $build(&st, &c, stringify!($name), $($extra,)* $($arg),*) }?;
                // SAFETY: an output argument (MPI's contract).
                let request = unsafe { $crate::check::out(request, "request") }.on(&c)?;
                *request = st.add_persistent(op.persist(), &c).on(&c)?;
                Ok(())
            }
        }
    };
    (init_info { [$($doc:tt)*] ($($arg:ident: $ty:ty),*) => $build:ident [$($extra:expr),*] } $name:ident $pname:ident) => {
        $crate::export::export! {
            #[doc = concat!("`", stringify!($name), "`.")]
            $($doc)*
            fn $name / $pname(
                $($arg: $ty,)*
                comm: ::madmpi::abi::Comm,
                info: ::madmpi::abi::Info,
                request: *mut ::madmpi::abi::Request,
            ) {
                use $crate::errors::On;
                let st = $crate::state::state()?;
                let c = st.comm(comm)?;
                // SAFETY: as in the `run` form.
                let op = unsafe { $build(&st, &c, stringify!($name), $($extra,)* $($arg),*) }?;
                // No hint changes what a persistent collective does; the handle must be valid.
                $crate::infos::hints(info).on(&c)?;
                // SAFETY: an output argument (MPI's contract).
                let request = unsafe { $crate::check::out(request, "request") }.on(&c)?;
                *request = st.add_persistent(op.persist(), &c).on(&c)?;
                Ok(())
            }
        }
    };
}

pub(crate) use {family, form, forms};
