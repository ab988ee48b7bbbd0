use super::*;
use crate::datatype::Predefined;
use crate::error::ErrorClass;
use crate::testing::on_all;
use std::path::PathBuf;

/// A fresh path in the temporary directory (the file is removed by the test).
fn path(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("madmpi-io-{}-{n}-{name}", std::process::id()))
}

fn rw_create() -> Amode {
    Amode::new(Amode::RDWR | Amode::CREATE).unwrap()
}

fn int() -> Datatype {
    Datatype::predefined(Predefined::Int)
}

fn info(pairs: &[(&str, &str)]) -> Info {
    let mut i = Info::new();
    for (k, v) in pairs {
        i.set(k, v).unwrap();
    }
    i
}

#[test]
fn explicit_offsets_and_the_individual_pointer_read_back_what_was_written() {
    let p = path("basic");
    let ps = p.to_str().unwrap().to_string();
    on_all(2, |world| {
        let f = File::open(&world, &ps, rw_create(), &Info::new()).unwrap();
        let me = world.rank() as i32;
        let mine: Vec<i32> = (0..100).map(|i| me * 1000 + i).collect();
        f.write_at_from(i64::from(me) * 400, &mine).unwrap();
        world.barrier().unwrap();
        assert_eq!(f.size().unwrap(), 800);
        let mut back = vec![0i32; 100];
        let other = 1 - me;
        let s = f.read_at_into(i64::from(other) * 400, &mut back).unwrap();
        assert_eq!(s.bytes, 400);
        assert_eq!(back, (0..100).map(|i| other * 1000 + i).collect::<Vec<_>>());
        // The individual pointer advances; a read past the end is short.
        f.seek(700, Whence::Set).unwrap();
        let s = f.read_into(&mut back).unwrap();
        assert_eq!((s.bytes, f.position()), (100, 800));
        world.barrier().unwrap();
        f.close().unwrap();
    });
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn an_interleaved_collective_write_through_strided_views_lands_in_place() {
    // 4 processes, each a column of 2 ints in rows of 8 ints; rounds of 24 bytes over two
    // aggregators: many rounds, pieces from every process in each.
    let p = path("strided");
    let ps = p.to_str().unwrap().to_string();
    on_all(4, |world| {
        let hints = info(&[("cb_nodes", "2"), ("cb_buffer_size", "24"), ("romio_cb_write", "enable")]);
        let f = File::open(&world, &ps, rw_create(), &hints).unwrap();
        let me = world.rank() as i32;
        let ft = Datatype::vector(1, 2, 8, &int()).unwrap();
        let ft = Datatype::resized(&ft, 0, 32).unwrap();
        ft.commit().unwrap();
        f.set_view(Disp::Bytes(i64::from(me) * 8), &int(), &ft, "native", &Info::new()).unwrap();
        let rows = 10;
        let mine: Vec<i32> = (0..2 * rows).map(|i| me * 100 + i).collect();
        f.write_all_from(&mine).unwrap();
        // Read back the whole file as plain ints, and through the view collectively.
        let byte_view = Datatype::predefined(Predefined::Byte);
        let mut back = vec![0i32; 2 * rows as usize];
        let s = f.read_at_all_into(0, &mut back).unwrap();
        assert_eq!((s.bytes, &back), (80, &mine));
        f.set_view(Disp::Bytes(0), &int(), &int(), "native", &Info::new()).unwrap();
        let mut all = vec![0i32; 8 * rows as usize];
        f.read_at_all_into(0, &mut all).unwrap();
        for row in 0..rows as usize {
            for q in 0..4 {
                for k in 0..2 {
                    assert_eq!(all[row * 8 + q * 2 + k], q as i32 * 100 + 2 * row as i32 + k as i32);
                }
            }
        }
        let _ = byte_view;
        f.close().unwrap();
    });
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn sieving_and_range_by_range_reads_agree_and_stop_at_the_end_of_the_file() {
    let p = path("sieve");
    std::fs::write(&p, (0..=255u8).cycle().take(10_000).collect::<Vec<_>>()).unwrap();
    let ps = p.to_str().unwrap().to_string();
    on_all(1, |world| {
        // One byte of every three.
        let byte = Datatype::predefined(Predefined::Byte);
        let ft = Datatype::resized(&byte, 0, 3).unwrap();
        ft.commit().unwrap();
        let mut got = Vec::new();
        for (ds, window) in [("enable", "64"), ("disable", "64"), ("enable", "4194304")] {
            let hints = info(&[("romio_ds_read", ds), ("ind_rd_buffer_size", window)]);
            let f = File::open(&world, &ps, Amode::new(Amode::RDONLY).unwrap(), &hints).unwrap();
            f.set_view(Disp::Bytes(1), &byte, &ft, "native", &Info::new()).unwrap();
            let mut buf = vec![0u8; 4000];
            let s = f.read_at_into(0, &mut buf).unwrap();
            assert_eq!(s.bytes, 3333, "bytes 1, 4, …, 9997 exist ({ds}, {window})");
            assert!(buf[..3333].iter().enumerate().all(|(i, &b)| b == ((1 + 3 * i) % 256) as u8));
            got.push(buf);
            f.close().unwrap();
        }
        assert!(got.windows(2).all(|w| w[0] == w[1]));
    });
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn shared_and_ordered_pointers_give_each_record_one_place() {
    let p = path("shared");
    let ps = p.to_str().unwrap().to_string();
    on_all(3, |world| {
        let f = File::open(&world, &ps, rw_create(), &Info::new()).unwrap();
        f.set_view(Disp::Bytes(0), &int(), &int(), "native", &Info::new()).unwrap();
        let me = world.rank() as i32;
        for k in 0..5 {
            f.write_shared_from(&[me * 10 + k, -1]).unwrap();
        }
        world.barrier().unwrap();
        assert_eq!(f.position_shared().unwrap(), 30);
        let mut all = vec![0i32; 30];
        f.read_at_into(0, &mut all).unwrap();
        let mut records: Vec<i32> = all.chunks(2).map(|c| c[0]).collect();
        records.sort_unstable();
        let mut want: Vec<i32> = (0..3).flat_map(|r| (0..5).map(move |k| r * 10 + k)).collect();
        want.sort_unstable();
        assert_eq!(records, want);
        // Ordered: rank order after what is there.
        f.write_ordered_from(&vec![me; me as usize + 1]).unwrap();
        world.barrier().unwrap();
        assert_eq!(f.position_shared().unwrap(), 36);
        let mut tail = vec![0i32; 6];
        f.read_at_into(30, &mut tail).unwrap();
        assert_eq!(tail, [0, 1, 1, 2, 2, 2]);
        f.seek_shared(0, Whence::Set).unwrap();
        assert_eq!(f.position_shared().unwrap(), 0);
        f.close().unwrap();
    });
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn nonblocking_and_split_collective_accesses_complete_in_order() {
    let p = path("nonblocking");
    let ps = p.to_str().unwrap().to_string();
    on_all(2, |world| {
        let f = File::open(&world, &ps, rw_create(), &Info::new()).unwrap();
        let me = world.rank() as i64;
        let a: Vec<u8> = vec![b'a' + me as u8; 1 << 20];
        let r = f.iwrite_at_all_from(me << 20, &a).unwrap();
        let mut back = vec![0u8; 1 << 20];
        // Queued after the write: it sees it.
        let r2 = f.iread_at_all_into((1 - me) << 20, &mut back).unwrap();
        assert_eq!(r.wait().unwrap().bytes, 1 << 20);
        assert_eq!(r2.wait().unwrap().bytes, 1 << 20);
        assert!(back.iter().all(|&b| b == b'a' + (1 - me) as u8));
        // A split collective.
        let b = [me as u8; 16];
        // SAFETY: `b` outlives the end below.
        unsafe { f.write_begin(Position::At(me * 16), buffer_of(&b)) }.unwrap();
        // SAFETY: refused at once: `b` is not used.
        assert!(unsafe { f.write_begin(Position::At(0), buffer_of(&b)) }.is_err(), "one at a time");
        assert!(f.split_end(b.as_ptr(), true, Split::All).is_err(), "another kind's end");
        assert_eq!(f.split_end(b.as_ptr(), true, Split::AtAll).unwrap().bytes, 16);
        assert!(f.split_end(b.as_ptr(), true, Split::AtAll).is_err(), "no begin");
        f.close().unwrap();
    });
    std::fs::remove_file(&p).unwrap();
}

fn buffer_of(b: &[u8]) -> Buffer {
    Buffer {
        ptr: b.as_ptr().cast_mut(),
        count: b.len() as u64,
        datatype: Datatype::predefined(Predefined::Byte),
    }
}

#[test]
fn open_errors_have_mpis_classes_at_every_process() {
    let p = path("errors");
    let ps = p.to_str().unwrap().to_string();
    on_all(2, |world| {
        let class = |r: Result<File>| r.err().map(|e| e.class());
        let rd = Amode::new(Amode::RDONLY).unwrap();
        assert_eq!(class(File::open(&world, &ps, rd, &Info::new())), Some(ErrorClass::NoSuchFile));
        let f = File::open(&world, &ps, rw_create(), &Info::new()).unwrap();
        f.close().unwrap();
        let excl = Amode::new(Amode::WRONLY | Amode::CREATE | Amode::EXCL).unwrap();
        assert_eq!(class(File::open(&world, &ps, excl, &Info::new())), Some(ErrorClass::FileExists));
        let f = File::open(&world, &ps, rd, &Info::new()).unwrap();
        assert_eq!(f.write_at_from(0, &[1u8]).unwrap_err().class(), ErrorClass::ReadOnly);
        assert_eq!(
            f.set_view(Disp::Bytes(0), &int(), &int(), "no-such-rep", &Info::new()).unwrap_err().class(),
            ErrorClass::UnsupportedDatarep
        );
        f.close().unwrap();
        world.barrier().unwrap();
        if world.rank() == 0 {
            File::delete(&ps, &Info::new()).unwrap();
            assert_eq!(File::delete(&ps, &Info::new()).unwrap_err().class(), ErrorClass::NoSuchFile);
        }
    });
}

#[test]
fn external32_stores_big_endian_ints() {
    let p = path("external32");
    let ps = p.to_str().unwrap().to_string();
    on_all(1, |world| {
        let f = File::open(&world, &ps, rw_create(), &Info::new()).unwrap();
        f.set_view(Disp::Bytes(0), &int(), &int(), "external32", &Info::new()).unwrap();
        f.write_at_from(0, &[0x01020304i32, -2]).unwrap();
        let mut back = [0i32; 2];
        f.read_at_into(0, &mut back).unwrap();
        assert_eq!(back, [0x01020304, -2]);
        assert_eq!(f.type_extent(&int()).unwrap(), 4);
        f.close().unwrap();
    });
    assert_eq!(std::fs::read(&p).unwrap(), [1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe]);
    std::fs::remove_file(&p).unwrap();
}

#[test]
fn strided_pieces_batched_through_io_uring_land_as_one_call_each_would() {
    // One int in every three, 200 pieces (many batches of the ring's 64), written and read
    // back with the ring and without; the read runs past the end of the file and is short.
    let files: Vec<Vec<u8>> = ["enable", "disable"]
        .into_iter()
        .map(|ring| {
            let p = path(&format!("batch-{ring}"));
            let ps = p.to_str().unwrap().to_string();
            on_all(1, |world| {
                let hints = info(&[("madmpi_io_uring", ring), ("romio_ds_read", "disable")]);
                let f = File::open(&world, &ps, rw_create(), &hints).unwrap();
                let ft = Datatype::resized(&int(), 0, 12).unwrap();
                ft.commit().unwrap();
                f.set_view(Disp::Bytes(4), &int(), &ft, "native", &Info::new()).unwrap();
                let mine: Vec<i32> = (0..200).collect();
                f.write_at_from(0, &mine).unwrap();
                let mut back = vec![-1i32; 210];
                let s = f.read_at_into(0, &mut back).unwrap();
                assert_eq!(s.bytes, 800, "the read stops at the end of the file");
                assert_eq!(back[..200], mine[..]);
                assert_eq!(back[200..], [-1; 10]);
                f.close().unwrap();
            });
            let bytes = std::fs::read(&p).unwrap();
            std::fs::remove_file(&p).unwrap();
            bytes
        })
        .collect();
    assert_eq!(files[0].len(), 4 + 199 * 12 + 4);
    assert_eq!(files[0], files[1]);
}
