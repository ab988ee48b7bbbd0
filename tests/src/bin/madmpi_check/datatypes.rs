//! Scenario `datatypes`: derived datatypes between processes. Rank 0 sends, every other rank
//! receives and checks element by element, including that the receive wrote nothing outside the
//! type map:
//! - a vector (a column of a row-major matrix; eager and rendezvous sizes), received as the
//!   same vector into a matrix (the other cells untouched) and as contiguous `i32`s;
//! - an indexed type, received as contiguous `f64`s and as another indexed type;
//! - a struct type matching a `#[repr(C)]` Rust struct with padding, received into bytes whose
//!   padding must stay as it was.
//!
//! Derived types travel through the raw API (`Datatype::data` + `Comm::send_data`/`recv_data`):
//! the typed API takes slices of `Equivalence` types only.

use crate::ok;
use madmpi::comm::Comm;
use madmpi::datatype::{Datatype, Predefined};
use madmpi::env::universe::Universe;
use madmpi::p2p::{From, Rank, Status, Tag};
use madmpi::request::Mode;

/// Sends `count` elements of `dt` from `buf` to `dest`.
fn send_typed<T>(w: &Comm, buf: &[T], dt: &Datatype, count: i64, dest: u32, tag: i32) {
    // The type map of `count` elements must lie within `buf`.
    let span = dt.true_lb() + (count - 1) * dt.extent() + dt.true_extent();
    assert!(dt.true_lb() >= 0 && span as usize <= std::mem::size_of_val(buf), "the type fits the buffer");
    // SAFETY: every block of the layout lies within `buf` (checked above), which is borrowed
    // until `send_data` returns, and `send_data` only reads.
    let data = unsafe { dt.data(buf.as_ptr().cast_mut().cast(), count) }.expect("layout");
    // SAFETY: as above: `buf` outlives the blocking call.
    unsafe { w.send_data("MPI_Send", data, Rank::Rank(dest), tag, Mode::Standard) }.expect("send_data");
}

/// Receives `count` elements of `dt` into `buf` from rank 0.
fn recv_typed<T>(w: &Comm, buf: &mut [T], dt: &Datatype, count: i64, tag: i32) -> Status {
    let span = dt.true_lb() + (count - 1) * dt.extent() + dt.true_extent();
    assert!(dt.true_lb() >= 0 && span as usize <= std::mem::size_of_val(buf), "the type fits the buffer");
    // SAFETY: every block lies within `buf` (checked above), exclusively borrowed until
    // `recv_data` returns; `T` is a plain number or byte type here, valid for any bytes.
    let data = unsafe { dt.data(buf.as_mut_ptr().cast(), count) }.expect("layout");
    // SAFETY: as above.
    let o = unsafe { w.recv_data("MPI_Recv", data, From::Rank(0), Tag::Tag(tag)) }.expect("recv_data");
    assert!(o.error.is_none(), "receive of tag {tag}: {:?}", o.error);
    assert_eq!((o.status.source, o.status.tag), (Some(0), tag));
    o.status
}

pub fn run(u: &Universe) {
    let w = u.world();
    vector(w);
    indexed(w);
    structs(w);
}

/// Column `c` of a `rows` x `cols` row-major `i32` matrix, `count` columns at a time.
fn vector(w: &Comm) {
    let int = Datatype::predefined(Predefined::Int32);
    for (rows, cols, tag) in [(10i64, 7i64, 1), (9000, 5, 2)] {
        let column = Datatype::vector(rows, 1, cols, &int).expect("vector");
        column.commit().expect("commit");
        assert_eq!((column.size(), column.extent()), (4 * rows as u64, 4 * ((rows - 1) * cols + 1)));
        // Two adjacent columns: the second element starts one int after the first.
        let two = Datatype::resized(&column, 0, 4).expect("resized");
        two.commit().expect("commit");
        let cell = |r: i64, c: i64| (r * 1000 + c) as i32;
        let n = (rows * cols) as usize;
        if w.rank() == 0 {
            let m: Vec<i32> = (0..n as i64).map(|i| cell(i / cols, i % cols)).collect();
            for dest in [1, 2] {
                // Columns 1 and 2, as one message of two resized columns.
                send_typed(w, &m[1..], &two, 2, dest, tag);
                send_typed(w, &m[3..], &column, 1, dest, tag + 10);
            }
        } else {
            // Same type: columns 1 and 2 of a matrix of -1s; nothing else written.
            let mut m = vec![-1i32; n];
            let st = recv_typed(w, &mut m[1..], &two, 2, tag);
            assert_eq!(st.bytes, 8 * rows as u64);
            for (i, &v) in m.iter().enumerate() {
                let (r, c) = (i as i64 / cols, i as i64 % cols);
                let want = if c == 1 || c == 2 { cell(r, c) } else { -1 };
                assert_eq!(v, want, "vector: cell ({r}, {c}) of {rows}x{cols}");
            }
            // Contiguous ints: column 3, in row order.
            let mut col = vec![0i32; rows as usize + 1];
            let st = w.recv(&mut col, From::Rank(0), Tag::Tag(tag + 10)).expect("recv column");
            assert_eq!(st.count::<i32>(), Some(rows as u64));
            for (r, &v) in col[..rows as usize].iter().enumerate() {
                assert_eq!(v, cell(r as i64, 3), "column as contiguous ints: row {r}");
            }
            assert_eq!(col[rows as usize], 0, "nothing past the message");
        }
    }
    ok("vector (resized columns, eager and rendezvous) into a matrix and into contiguous i32");
}

/// Blocks of 2, 3 and 1 `f64` at 0, 5 and 12; received as 6 contiguous `f64`s, and as blocks of
/// 3, 1 and 2 at 1, 6 and 9 resized to an extent of 11 `f64`s from 0.
fn indexed(w: &Comm) {
    let double = Datatype::predefined(Predefined::Double);
    let send = Datatype::indexed(&[2, 3, 1], &[0, 5, 12], &double).expect("indexed");
    let recv = Datatype::indexed(&[3, 1, 2], &[1, 6, 9], &double).expect("indexed");
    assert_eq!((recv.lb(), recv.extent()), (8, 10 * 8));
    let recv = Datatype::resized(&recv, 0, 11 * 8).expect("resized");
    send.commit().expect("commit");
    recv.commit().expect("commit");
    assert_eq!((send.size(), send.extent()), (48, 13 * 8));
    const COUNT: i64 = 1000;
    let packed = |k: usize| k as f64 * 0.5 + 3.0;
    if w.rank() == 0 {
        // Element e, block offsets [0, 1, 5, 6, 7, 12]: packed index 6e + j.
        let mut src = vec![f64::NAN; 13 * COUNT as usize];
        for e in 0..COUNT as usize {
            for (j, off) in [0, 1, 5, 6, 7, 12].into_iter().enumerate() {
                src[13 * e + off] = packed(6 * e + j);
            }
        }
        for dest in [1, 2] {
            send_typed(w, &src, &send, 1, dest, 20);
            send_typed(w, &src, &send, COUNT, dest, 21);
        }
    } else {
        let mut flat = [0f64; 7];
        let st = recv_typed(w, &mut flat, &Datatype::predefined(Predefined::Double), 7, 20);
        assert_eq!(st.count::<f64>(), Some(6));
        for (k, &v) in flat.iter().enumerate() {
            assert_eq!(v, if k < 6 { packed(k) } else { 0.0 }, "indexed as contiguous: element {k}");
        }
        // Receive offsets [1, 2, 3, 6, 9, 10] per element of extent 11.
        let mut dst = vec![-7f64; 11 * COUNT as usize];
        recv_typed(w, &mut dst, &recv, COUNT, 21);
        let offs = [1, 2, 3, 6, 9, 10];
        for (i, &v) in dst.iter().enumerate() {
            let (e, off) = (i / 11, i % 11);
            let want = offs.iter().position(|&o| o == off).map_or(-7.0, |j| packed(6 * e + j));
            assert_eq!(v, want, "indexed: element {e}, offset {off}");
        }
    }
    ok("indexed into contiguous f64 and into another indexed type");
}

/// A particle, with 4 bytes of padding after `id` and 7 after `kind`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Particle {
    id: i32,
    pos: [f64; 3],
    kind: u8,
}

fn structs(w: &Comm) {
    use std::mem::{offset_of, size_of};
    let t = Datatype::create_struct(
        &[1, 3, 1],
        &[
            offset_of!(Particle, id) as i64,
            offset_of!(Particle, pos) as i64,
            offset_of!(Particle, kind) as i64,
        ],
        &[
            Datatype::predefined(Predefined::Int32),
            Datatype::predefined(Predefined::Double),
            Datatype::predefined(Predefined::Uint8),
        ],
    )
    .expect("struct");
    t.commit().expect("commit");
    assert_eq!((t.size(), t.extent()), (29, size_of::<Particle>() as i64), "MPI's padding is C's");
    const N: usize = 5000;
    let p = |i: usize| Particle {
        id: i as i32 - 7,
        pos: [i as f64, -(i as f64), 0.25 * i as f64],
        kind: i as u8,
    };
    if w.rank() == 0 {
        let ps: Vec<Particle> = (0..N).map(p).collect();
        for dest in [1, 2] {
            send_typed(w, &ps, &t, N as i64, dest, 30);
        }
    } else {
        // Into bytes: the padding must keep its 0xEE.
        let mut bytes = vec![0xEEu8; N * size_of::<Particle>()];
        let st = recv_typed(w, &mut bytes, &t, N as i64, 30);
        assert_eq!(st.bytes, 29 * N as u64);
        let f64_at = |b: &[u8], o: usize| f64::from_ne_bytes(b[o..o + 8].try_into().unwrap());
        for (i, b) in bytes.chunks(size_of::<Particle>()).enumerate() {
            let want = p(i);
            let id = i32::from_ne_bytes(b[..4].try_into().unwrap());
            let pos = [f64_at(b, 8), f64_at(b, 16), f64_at(b, 24)];
            assert_eq!((id, pos, b[32]), (want.id, want.pos, want.kind), "particle {i}");
            assert!(
                b[4..8].iter().chain(&b[33..]).all(|&x| x == 0xEE),
                "particle {i}: padding written: {b:?}"
            );
        }
    }
    ok("struct type of a repr(C) struct, padding untouched");
}
