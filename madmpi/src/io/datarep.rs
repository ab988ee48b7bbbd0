//! Data representations: how a process's data is laid out in the file's data stream.
//!
//! "native" and "internal" store the bytes as memory holds them (packed along the type map);
//! "external32" is the portable big-endian representation of `MPI_Pack_external`; a
//! representation the program registers (`MPI_Register_datarep`) converts through its own
//! functions, or stores native bytes if it has none.
//!
//! Owns the registry and the conversion of a buffer to and from its stream bytes; it must not
//! know where the stream lies in the file (the view does).

use super::Buffer;
use crate::datatype::Datatype;
use crate::error::{Error, Result};
use nmad::Layout;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

/// The functions of a registered representation (`MPI_Register_datarep`'s arguments).
pub trait Conversion: Send + Sync {
    /// The extent of `datatype` in the file (the extent function).
    fn extent(&self, datatype: &Datatype) -> Result<i64>;
    /// Whether data is converted (`false`: `MPI_CONVERSION_FN_NULL`, stored native).
    fn converts(&self) -> bool;
    /// Converts `count` elements of `datatype` from their file form in `file` to memory, from
    /// element `position` of the buffer at `user`.
    ///
    /// # Safety
    /// `count` elements of `datatype` from element `position` of `user` are writable.
    unsafe fn read(
        &self,
        user: *mut u8,
        datatype: &Datatype,
        count: i64,
        file: &[u8],
        position: i64,
    ) -> Result<()>;
    /// Converts `count` elements of `datatype` from element `position` of `user` to their file
    /// form in `file`.
    ///
    /// # Safety
    /// `count` elements of `datatype` from element `position` of `user` are readable.
    unsafe fn write(
        &self,
        user: *const u8,
        datatype: &Datatype,
        count: i64,
        file: &mut [u8],
        position: i64,
    ) -> Result<()>;
}

pub(crate) struct Registered {
    name: String,
    conv: Arc<dyn Conversion>,
}

static REGISTRY: LazyLock<Mutex<HashMap<String, Arc<Registered>>>> = LazyLock::new(Default::default);

/// `MPI_Register_datarep`: `name` becomes usable in views (`MPI_ERR_DUP_DATAREP` if taken).
pub fn register_datarep(name: &str, conv: Arc<dyn Conversion>) -> Result<()> {
    if ["native", "internal", "external32"].contains(&name) {
        return Err(Error::dup_datarep(format!("\"{name}\" is predefined")));
    }
    if name.is_empty() || name.len() >= 128 {
        return Err(Error::arg("a data representation name is 1 to 127 characters"));
    }
    let mut r = REGISTRY.lock().unwrap();
    if r.contains_key(name) {
        return Err(Error::dup_datarep(format!("\"{name}\" is registered already")));
    }
    r.insert(name.to_string(), Arc::new(Registered { name: name.to_string(), conv }));
    Ok(())
}

/// A view's representation.
#[derive(Clone)]
pub(crate) enum Datarep {
    Native,
    Internal,
    External32,
    User(Arc<Registered>),
}

impl Datarep {
    /// The representation `name` (`MPI_ERR_UNSUPPORTED_DATAREP` if unknown; the predefined
    /// ones in capitals too, as ROMIO takes them).
    pub(super) fn named(name: &str) -> Result<Datarep> {
        Ok(match name {
            "native" | "NATIVE" => Datarep::Native,
            "internal" | "INTERNAL" => Datarep::Internal,
            "external32" | "EXTERNAL32" => Datarep::External32,
            _ => match REGISTRY.lock().unwrap().get(name) {
                Some(r) => Datarep::User(r.clone()),
                None => return Err(Error::unsupported_datarep(format!("no data representation \"{name}\""))),
            },
        })
    }

    pub(super) fn name(&self) -> &str {
        match self {
            Datarep::Native => "native",
            Datarep::Internal => "internal",
            Datarep::External32 => "external32",
            Datarep::User(r) => &r.name,
        }
    }

    /// Whether the stream holds memory's bytes (no conversion).
    pub(super) fn is_native(&self) -> bool {
        match self {
            Datarep::Native | Datarep::Internal => true,
            Datarep::External32 => false,
            Datarep::User(r) => !r.conv.converts(),
        }
    }

    /// Stream bytes of one element of `datatype`.
    pub(super) fn stream_size(&self, datatype: &Datatype) -> Result<u64> {
        match self {
            Datarep::External32 => Ok(datatype.external32_size(1)?),
            // A registered representation sizes basic types by its extent function.
            Datarep::User(r) if r.conv.converts() && datatype.as_predefined().is_some() => {
                u64::try_from(r.conv.extent(datatype)?).map_err(|_| Error::conversion("a negative extent"))
            }
            _ => Ok(datatype.size()),
        }
    }

    /// `MPI_File_get_type_extent`.
    pub(super) fn extent(&self, datatype: &Datatype) -> Result<i64> {
        match self {
            Datarep::External32 => Ok(datatype.external32_size(1)? as i64),
            Datarep::User(r) => r.conv.extent(datatype),
            _ => Ok(datatype.extent()),
        }
    }

    /// The stream bytes of `buf` (all its elements).
    ///
    /// # Safety
    /// `buf`'s blocks are readable.
    pub(super) unsafe fn encode(&self, buf: &Buffer) -> Result<Vec<u8>> {
        let count = count(buf)?;
        let n = self.stream_size(&buf.datatype)?.checked_mul(buf.count).ok_or_else(too_big)?;
        let mut out = vec![0u8; usize::try_from(n).map_err(|_| too_big())?];
        match self {
            Datarep::External32 => {
                let mut at = 0;
                // SAFETY: the caller vouches for the buffer; `out` is ours and sized for it.
                unsafe { buf.datatype.pack_external32(buf.ptr, count, &mut out, &mut at) }?;
            }
            Datarep::User(r) if r.conv.converts() => {
                // SAFETY: the caller vouches for the buffer's elements.
                unsafe { r.conv.write(buf.ptr, &buf.datatype, count, &mut out, 0) }?;
            }
            _ => {
                let mut at = 0;
                // SAFETY: the caller vouches for the buffer; `out` holds its packed size.
                unsafe { buf.datatype.pack(buf.ptr, count, &mut out, &mut at) }?;
            }
        }
        Ok(out)
    }

    /// Stores the stream bytes `data` (a prefix of `buf`'s: a short read) into `buf`; returns
    /// the memory bytes filled (whole elements only when converting).
    ///
    /// # Safety
    /// `buf`'s blocks are writable.
    pub(super) unsafe fn decode(&self, data: &[u8], buf: &Buffer) -> Result<u64> {
        let per = self.stream_size(&buf.datatype)?;
        let whole = (data.len() as u64).checked_div(per).unwrap_or(0).min(buf.count) as i64;
        match self {
            Datarep::External32 => {
                let mut at = 0;
                // SAFETY: the caller vouches for the buffer; `data` holds `whole` elements.
                unsafe { buf.datatype.unpack_external32(data, &mut at, buf.ptr, whole) }?;
                Ok(whole as u64 * buf.datatype.size())
            }
            Datarep::User(r) if r.conv.converts() => {
                let n = (whole as u64 * per) as usize;
                // SAFETY: the caller vouches for the buffer's elements.
                unsafe { r.conv.read(buf.ptr, &buf.datatype, whole, &data[..n], 0) }?;
                Ok(whole as u64 * buf.datatype.size())
            }
            // SAFETY: the caller vouches for the buffer.
            _ => unsafe { scatter(data, buf) },
        }
    }
}

fn too_big() -> Error {
    Error::count("the access does not fit in memory")
}

fn count(buf: &Buffer) -> Result<i64> {
    i64::try_from(buf.count).map_err(|_| too_big())
}

/// Copies `data` into `buf`'s blocks, in order, as far as it goes (`Datatype::unpack` without
/// its whole-elements rule: a short read fills part of an element); the bytes copied.
///
/// # Safety
/// `buf`'s blocks are writable and do not overlap `data`.
unsafe fn scatter(data: &[u8], buf: &Buffer) -> Result<u64> {
    let layout = buf.datatype.layout(count(buf)?)?;
    let mut rest = data;
    layout.blocks(0, &mut |off, len| {
        let n = len.min(rest.len());
        // SAFETY: a block of the buffer (its first `n` bytes), writable by the caller's
        // contract; `rest` has at least `n` bytes.
        unsafe { std::ptr::copy_nonoverlapping(rest.as_ptr(), buf.ptr.wrapping_offset(off), n) };
        rest = &rest[n..];
        !rest.is_empty()
    });
    Ok((data.len() - rest.len()) as u64)
}

/// The stream bytes of `buf`: its own memory when it is contiguous and native (no copy), else
/// encoded.
///
/// # Safety
/// `buf`'s blocks are readable, and not written while the result lives.
pub(super) unsafe fn stream_of<'a>(rep: &Datarep, buf: &'a Buffer) -> Result<std::borrow::Cow<'a, [u8]>> {
    Ok(match contiguous(rep, buf) {
        // SAFETY: the caller vouches for the buffer: readable, `len` bytes from `p`, for `'a`.
        Some((p, len)) => std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(p, len) }),
        // SAFETY: as above.
        None => std::borrow::Cow::Owned(unsafe { rep.encode(buf) }?),
    })
}

/// Where a contiguous buffer's bytes are, when the stream is exactly them (no copy).
pub(super) fn contiguous(rep: &Datarep, buf: &Buffer) -> Option<(*mut u8, usize)> {
    if !rep.is_native() {
        return None;
    }
    let off = buf.datatype.contiguous_offset()?;
    let single = buf.count <= 1 || buf.datatype.extent() as u64 == buf.datatype.size();
    if !single {
        return None;
    }
    let len = usize::try_from(buf.datatype.size().checked_mul(buf.count)?).ok()?;
    Some((buf.ptr.wrapping_offset(off as isize), len))
}
