//! Info handles: `MPI_INFO_ENV` (builtin, read-only, its contents made on demand by
//! `madmpi::info::env`) and the info objects programs create.
//!
//! Created objects live in a process-wide [`Table`] (handles encoded like every user handle:
//! kind direct, object type info, as MPICH's `0x9c......` info handles), not in the MPI
//! state: MPI 4.0 lets programs create, use and free info objects before `MPI_Init` and after
//! `MPI_Finalize` (its table 11.1), from several threads at once, so they outlive both. Each
//! object has its own lock; a call holds it only while it reads or changes that object.
//!
//! `MPI_INFO_NULL`, a freed handle or any other value is `MPI_ERR_INFO` where an info object
//! is needed (MPICH 4.0.2 says `MPI_ERR_ARG` for `MPI_INFO_NULL`); where an info argument only
//! carries hints (communicator calls), `MPI_INFO_NULL` means "no hints". Changing or freeing
//! `MPI_INFO_ENV` is `MPI_ERR_INFO` (MPICH 4.0.2 allows both).
//!
//! Owns the handle ↔ object mapping; it must not know C buffers (`api::info`) nor the info
//! rules (`madmpi::info`).

use crate::table::Table;
use madmpi::abi::{self, Handle, UserObject};
use madmpi::error::{Error, Result};
use madmpi::info::Info;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

/// An info object the program created.
type Shared = Arc<RwLock<Info>>;

static INFOS: LazyLock<Table<Shared>> = LazyLock::new(|| Table::new(UserObject::Info));

/// The object of a created info's handle: `MPI_ERR_INFO` for anything else.
fn created(h: Handle) -> Result<Shared> {
    match h {
        abi::MPI_INFO_NULL => Err(Error::info("null info object (MPI_INFO_NULL)")),
        abi::MPI_INFO_ENV => Err(Error::info("MPI_INFO_ENV cannot be changed or freed")),
        _ => INFOS.get(h).ok_or_else(|| Error::info(format!("invalid info handle {h:#x}"))),
    }
}

/// Runs `f` on the info of handle `h` (`MPI_INFO_ENV` included); `MPI_ERR_INFO` if `h` is no
/// info object.
pub(crate) fn read<R>(h: Handle, f: impl FnOnce(&Info) -> R) -> Result<R> {
    if h == abi::MPI_INFO_ENV {
        return Ok(f(&madmpi::info::env()));
    }
    let shared = created(h)?;
    let info = shared.read().unwrap_or_else(PoisonError::into_inner);
    Ok(f(&info))
}

/// Runs `f` on the info of handle `h`, which it may change; `MPI_ERR_INFO` if `h` is not a
/// created info object (`MPI_INFO_ENV` is read-only).
pub(crate) fn modify<R>(h: Handle, f: impl FnOnce(&mut Info) -> Result<R>) -> Result<R> {
    let shared = created(h)?;
    let mut info = shared.write().unwrap_or_else(PoisonError::into_inner);
    f(&mut info)
}

/// A new handle for `info`.
pub(crate) fn add(info: Info) -> Result<Handle> {
    INFOS.insert(Arc::new(RwLock::new(info))).ok_or_else(|| Error::no_mem("too many live info objects"))
}

/// `MPI_Info_free` of handle `h` (a created info: `MPI_ERR_INFO` otherwise). A call using the
/// object in another thread at the same time finishes with it.
pub(crate) fn free(h: Handle) -> Result<()> {
    created(h)?;
    drop(INFOS.remove(h));
    Ok(())
}

/// The hints an info argument of a communicator call carries: `MPI_INFO_NULL` gives none (an
/// empty info), a valid handle a copy of its object, anything else `MPI_ERR_INFO`.
pub(crate) fn hints(h: Handle) -> Result<Info> {
    match h {
        abi::MPI_INFO_NULL => Ok(Info::new()),
        _ => read(h, Info::clone),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use madmpi::error::ErrorClass;

    #[test]
    fn handles_live_until_freed_and_env_is_read_only() {
        let h = add(Info::from_pairs([("a", "1")]).unwrap()).unwrap();
        assert_eq!(abi::handle_object(h), abi::ObjectType::Info);
        assert_eq!(abi::handle_kind(h), abi::HandleKind::Direct);
        modify(h, |i| i.set("b", "2")).unwrap();
        assert_eq!(read(h, Info::len).unwrap(), 2);
        assert_eq!(hints(h).unwrap().get_str("b"), Some("2"));
        assert!(read(abi::MPI_INFO_ENV, |i| i.contains("arch")).unwrap());
        let class = |r: Result<()>| r.unwrap_err().class();
        assert_eq!(class(modify(abi::MPI_INFO_ENV, |i| i.set("x", "y"))), ErrorClass::Info);
        assert_eq!(class(free(abi::MPI_INFO_ENV)), ErrorClass::Info);
        assert_eq!(class(free(abi::MPI_INFO_NULL)), ErrorClass::Info);
        assert_eq!(class(read(abi::MPI_INFO_NULL, |_| ())), ErrorClass::Info);
        assert_eq!(class(read(0x1234, |_| ())), ErrorClass::Info);
        assert!(hints(abi::MPI_INFO_NULL).unwrap().is_empty());
        free(h).unwrap();
        assert_eq!(class(free(h)), ErrorClass::Info);
        assert_eq!(class(read(h, |_| ())), ErrorClass::Info);
        assert_eq!(class(hints(h).map(drop)), ErrorClass::Info);
    }
}
