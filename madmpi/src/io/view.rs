//! A file view: where the bytes of a process's data stream lie in the file.
//!
//! The data stream is what the process reads or writes, packed: offsets of the MPI calls count
//! etypes of it. Its byte `p` lies in filetype tile `p / size`, at the block of that tile's type
//! map that holds byte `p % size`: the tile starts at `disp + k × extent`. The type map is
//! flattened once, at `set_view`, into blocks and their starts in the stream, so a lookup is a
//! binary search and a run of blocks is walked in order.
//!
//! Owns the view's checks and its mapping; it must not do I/O.

use super::datarep::Datarep;
use crate::datatype::Datatype;
use crate::error::{Error, Result};
use std::sync::Arc;

/// The displacement of `MPI_File_set_view`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disp {
    Bytes(i64),
    /// `MPI_DISPLACEMENT_CURRENT`: the shared file pointer's position (sequential files).
    Current,
}

/// `MPI_SEEK_SET`, `MPI_SEEK_CUR`, `MPI_SEEK_END`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whence {
    Set,
    Cur,
    End,
}

/// A view (`MPI_File_get_view`'s answer, and what every access maps through).
#[derive(Clone)]
pub struct View {
    pub disp: i64,
    pub etype: Datatype,
    pub filetype: Datatype,
    pub(super) datarep: Datarep,
    map: Arc<Map>,
}

/// The flattened filetype.
struct Map {
    /// `(offset from the tile's start, length)`, offsets nondecreasing.
    blocks: Vec<(i64, u64)>,
    /// Where each block starts in the tile's data bytes.
    starts: Vec<u64>,
    /// Data bytes per tile (the filetype's size) and the tile's extent in the file.
    size: u64,
    extent: i64,
    /// Bytes of an etype in the data stream.
    esize: u64,
}

impl View {
    /// The view of a file just opened: displacement 0, etype and filetype `MPI_BYTE`, native.
    pub(super) fn initial() -> View {
        let byte = Datatype::predefined(crate::datatype::Predefined::Byte);
        View::new(0, &byte, &byte, Datarep::Native).expect("the default view is valid")
    }

    /// Checks MPI's rules: committed types, a filetype made of whole etypes whose blocks do not
    /// go backwards nor below the tile's start, a non-negative displacement.
    pub(super) fn new(disp: i64, etype: &Datatype, filetype: &Datatype, datarep: Datarep) -> Result<View> {
        if disp < 0 {
            return Err(Error::arg(format!("negative displacement ({disp})")));
        }
        let blocks_of = |t: &Datatype, what: &str| {
            t.blocks()
                .map(<[_]>::to_vec)
                .ok_or_else(|| Error::datatype(format!("the {what} is not committed")))
        };
        blocks_of(etype, "etype")?;
        let esize = datarep.stream_size(etype)?;
        if esize == 0 {
            return Err(Error::datatype("the etype has size 0"));
        }
        let size = datarep.stream_size(filetype)?;
        if size == 0 || !size.is_multiple_of(esize) {
            return Err(Error::datatype(format!(
                "the filetype ({size} bytes) is not made of whole etypes ({esize} bytes each)"
            )));
        }
        if datarep.stream_size(filetype)? != filetype.size() {
            return Err(Error::unsupported_operation(format!(
                "a filetype whose size in data representation \"{}\" ({size} bytes) differs from its native size \
                 ({} bytes)",
                datarep.name(),
                filetype.size()
            )));
        }
        let mut blocks = Vec::new();
        let mut starts = Vec::new();
        let mut at = 0u64;
        let mut end = 0i64;
        for (off, len) in blocks_of(filetype, "filetype")? {
            let (off, len) = (off as i64, len as u64);
            if off < 0 || !blocks.is_empty() && off < end {
                return Err(Error::arg(
                    "the filetype's displacements go backwards or below 0 (MPI requires them nonnegative and \
                     monotonically nondecreasing)",
                ));
            }
            starts.push(at);
            blocks.push((off, len));
            at += len;
            end = off + len as i64;
        }
        let extent = filetype.extent();
        if extent <= 0 {
            return Err(Error::arg(format!("the filetype's extent ({extent}) is not positive")));
        }
        let map = Map { blocks, starts, size, extent, esize };
        Ok(View { disp, etype: etype.clone(), filetype: filetype.clone(), datarep, map: Arc::new(map) })
    }

    /// The name of the data representation.
    pub fn datarep(&self) -> &str {
        self.datarep.name()
    }

    /// Bytes of an etype in the data stream.
    pub(super) fn etype_size(&self) -> u64 {
        self.map.esize
    }

    /// `MPI_File_get_type_extent`.
    pub fn type_extent(&self, datatype: &Datatype) -> Result<i64> {
        self.datarep.extent(datatype)
    }

    /// The file position of stream byte `p`.
    pub(super) fn file_offset(&self, p: u64) -> i64 {
        let m = &*self.map;
        let (tile, within) = (p / m.size, p % m.size);
        let b = m.starts.partition_point(|&s| s <= within) - 1;
        self.disp + tile as i64 * m.extent + m.blocks[b].0 + (within - m.starts[b]) as i64
    }

    /// `MPI_File_get_byte_offset`: the absolute byte position of etype `offset` of the view.
    pub fn byte_offset(&self, offset: i64) -> Result<i64> {
        let p = u64::try_from(offset).map_err(|_| Error::arg(format!("negative offset ({offset})")))?;
        let p =
            p.checked_mul(self.map.esize).ok_or_else(|| Error::arg(format!("offset {offset} overflows")))?;
        Ok(self.file_offset(p))
    }

    /// Stream bytes `start..start + len` as file ranges `(position, length)`, in stream order
    /// (so in file order: the blocks never go backwards), adjacent ranges merged; `f` returns
    /// `false` to stop.
    pub(super) fn ranges(&self, start: u64, len: u64, f: &mut dyn FnMut(i64, u64) -> bool) {
        let m = &*self.map;
        let (mut tile, mut within) = (start / m.size, start % m.size);
        let mut b = m.starts.partition_point(|&s| s <= within) - 1;
        let mut left = len;
        let mut pending: Option<(i64, u64)> = None;
        while left > 0 {
            let (off, blen) = m.blocks[b];
            let skip = within - m.starts[b];
            let n = (blen - skip).min(left);
            let pos = self.disp + tile as i64 * m.extent + off + skip as i64;
            pending = match pending {
                Some((p, l)) if p + l as i64 == pos => Some((p, l + n)),
                Some((p, l)) => {
                    if !f(p, l) {
                        return;
                    }
                    Some((pos, n))
                }
                None => Some((pos, n)),
            };
            left -= n;
            within += n;
            b += 1;
            if b == m.blocks.len() {
                (b, within, tile) = (0, 0, tile + 1);
            }
        }
        if let Some((p, l)) = pending {
            f(p, l);
        }
    }

    /// The first stream byte whose file position is at or after `pos` (the stream's length up to
    /// a file size, for `MPI_SEEK_END` and the end of a read).
    pub(super) fn stream_at(&self, pos: i64) -> u64 {
        let m = &*self.map;
        let rel = pos - self.disp;
        if rel <= 0 {
            return 0;
        }
        let (tile, inner) = ((rel / m.extent) as u64, rel % m.extent);
        let mut data = 0;
        for (i, &(off, len)) in m.blocks.iter().enumerate() {
            if inner >= off + len as i64 {
                data = m.starts[i] + len;
            } else if inner > off {
                data = m.starts[i] + (inner - off) as u64;
            }
        }
        tile * m.size + data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::Predefined;

    fn int() -> Datatype {
        Datatype::predefined(Predefined::Int)
    }

    fn collect(v: &View, start: u64, len: u64) -> Vec<(i64, u64)> {
        let mut out = Vec::new();
        v.ranges(start, len, &mut |p, l| {
            out.push((p, l));
            true
        });
        out
    }

    #[test]
    fn a_strided_view_maps_stream_bytes_to_its_blocks() {
        // Two ints of every five, from byte 100.
        let ft = Datatype::vector(1, 2, 5, &int()).unwrap();
        let ft = Datatype::resized(&ft, 0, 20).unwrap();
        ft.commit().unwrap();
        let v = View::new(100, &int(), &ft, Datarep::Native).unwrap();
        assert_eq!(collect(&v, 0, 24), [(100, 8), (120, 8), (140, 8)]);
        assert_eq!(collect(&v, 4, 8), [(104, 4), (120, 4)]);
        assert_eq!(v.byte_offset(3).unwrap(), 124);
        assert_eq!(v.stream_at(100), 0);
        assert_eq!(v.stream_at(110), 8);
        assert_eq!(v.stream_at(124), 12);
    }

    #[test]
    fn filetypes_mpi_forbids_are_refused() {
        let byte = Datatype::predefined(Predefined::Byte);
        let three = Datatype::contiguous(3, &byte).unwrap();
        three.commit().unwrap();
        assert!(View::new(0, &int(), &three, Datarep::Native).is_err(), "not whole etypes");
        assert!(View::new(-1, &int(), &int(), Datarep::Native).is_err(), "negative displacement");
        let back = Datatype::indexed(&[1, 1], &[2, 0], &int()).unwrap();
        back.commit().unwrap();
        assert!(View::new(0, &int(), &back, Datarep::Native).is_err(), "going backwards");
    }
}
