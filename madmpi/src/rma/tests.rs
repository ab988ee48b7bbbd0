use super::dynamic::Regions;
use super::*;
use crate::comm::internal::allgather;
use crate::error::ErrorClass;
use crate::info::Info;
use crate::testing::on_all;

fn barrier(c: &crate::comm::Comm) {
    c.internal(|m| allgather(m, 0, &[0]).map_err(crate::comm::from_nmad)).unwrap();
}

#[test]
fn hints_round_trip_and_keep_old_values_on_bad_ones() {
    let mut h = WinHints::default();
    assert_eq!(h.to_info().get_str("accumulate_ordering"), Some("rar,raw,war,waw"));
    let info = Info::from_pairs([
        ("no_locks", "true"),
        ("accumulate_ordering", "waw,rar"),
        ("accumulate_ops", "same_op"),
        ("same_size", "maybe"),
        ("same_disp_unit", "true"),
    ])
    .unwrap();
    h.update(&info);
    assert!(h.no_locks && h.same_disp_unit && !h.same_size);
    assert_eq!(h.accumulate_ops, AccumulateOps::SameOp);
    let back = h.to_info();
    assert_eq!(back.get_str("accumulate_ordering"), Some("rar,waw"));
    assert_eq!(back.get_str("accumulate_ops"), Some("same_op"));
    h.update(&Info::from_pairs([("accumulate_ordering", "rar,bad")]).unwrap());
    assert_eq!(h.to_info().get_str("accumulate_ordering"), Some("rar,waw"), "invalid list ignored");
    h.update(&Info::from_pairs([("accumulate_ordering", "none")]).unwrap());
    assert_eq!(h.to_info().get_str("accumulate_ordering"), Some("none"));
    assert_eq!(
        WinHints::from_info(&back),
        h.with_ordering(AccumulateOrdering { rar: true, raw: false, war: false, waw: true })
    );
}

impl WinHints {
    fn with_ordering(mut self, o: AccumulateOrdering) -> Self {
        self.accumulate_ordering = o;
        self
    }
}

#[test]
fn attached_regions_never_overlap() {
    let mut r = Regions::default();
    r.attach(100, 50).unwrap();
    r.attach(150, 10).unwrap();
    r.attach(90, 10).unwrap();
    for (b, l) in [(120, 1), (95, 10), (149, 2), (100, 1), (80, 200)] {
        assert_eq!(r.attach(b, l).unwrap_err().class(), ErrorClass::RmaAttach, "{b}+{l}");
    }
    assert_eq!(r.attach(usize::MAX - 1, 4).unwrap_err().class(), ErrorClass::RmaAttach);
    assert!(r.covers(100, 50) && r.covers(155, 5) && !r.covers(140, 20) && !r.covers(85, 2));
    assert_eq!(r.detach(120).unwrap_err().class(), ErrorClass::RmaAttach);
    assert_eq!(r.detach(100).unwrap(), 50);
    assert!(!r.covers(100, 1));
    r.attach(110, 40).unwrap();
    assert!(r.covers(110, 40) && r.covers(150, 10) && r.covers(90, 10));
}

#[test]
fn every_flavour_exchanges_each_members_exposure() {
    let out = on_all(3, |world| {
        let me = world.rank() as usize;
        let info = Info::new();
        let mut mem = vec![0u64; me + 1];
        // SAFETY: `mem` outlives the window, freed below.
        let w = unsafe { Win::create(mem.as_mut_ptr().cast(), (me + 1) * 8, 8, &info, &world) }.unwrap();
        assert_ne!(w.comm().context_id(), world.context_id(), "a window has its own context");
        assert_eq!(w.flavor(), Flavor::Create);
        assert_eq!(w.local().base, mem.as_ptr() as usize);
        let sizes: Vec<usize> = (0..3).map(|r| w.exposure(r).unwrap().size).collect();
        assert!(w.exposure(3).is_none());
        assert_eq!(w.shared_query(None).unwrap_err().class(), ErrorClass::RmaFlavor);
        assert_eq!(w.attach(mem.as_ptr().cast(), 8).unwrap_err().class(), ErrorClass::RmaFlavor);
        w.free().unwrap();

        let a = Win::allocate(me * 16, me + 1, &info, &world).unwrap();
        assert_eq!((a.flavor(), a.local().size, a.local().disp_unit), (Flavor::Allocate, me * 16, me + 1));
        assert_eq!(a.exposure(2).unwrap().disp_unit, 3);
        a.free().unwrap();

        let d = Win::create_dynamic(&info, &world).unwrap();
        assert_eq!(d.local(), Exposure { base: 0, size: 0, disp_unit: 1 });
        d.attach(mem.as_ptr().cast(), 8).unwrap();
        assert!(d.attached(mem.as_ptr() as usize, 8));
        assert_eq!(d.attach(mem.as_ptr().cast(), 4).unwrap_err().class(), ErrorClass::RmaAttach);
        d.detach(mem.as_ptr().cast()).unwrap();
        d.free().unwrap();
        sizes
    });
    assert!(out.iter().all(|s| *s == [8, 16, 24]));
}

#[test]
fn shared_windows_alias_across_mappings() {
    for noncontig in [false, true] {
        on_all(4, |world| {
            let me = world.rank();
            let info = Info::from_pairs([("alloc_shared_noncontig", noncontig.to_string())]).unwrap();
            let w: Window<u32> = Window::allocate_shared(me as usize + 1, &info, &world).unwrap();
            let (mine, len) = w.local_part();
            assert_eq!(len, me as usize + 1);
            for i in 0..len {
                // SAFETY: this member's own part, written before the barrier, read after it.
                unsafe { mine.add(i).write_volatile(100 * me + i as u32) };
            }
            barrier(&world);
            for r in 0..4 {
                let (p, n) = w.shared_part(r).unwrap();
                assert_eq!(n, r as usize + 1);
                // SAFETY: member r's part of `n` elements, written before the barrier above.
                let got: Vec<u32> = (0..n).map(|i| unsafe { p.add(i).read_volatile() }).collect();
                assert_eq!(got, (0..n as u32).map(|i| 100 * r + i).collect::<Vec<_>>());
            }
            let (p0, _) = w.shared_part(0).unwrap();
            let (p1, _) = w.shared_part(1).unwrap();
            let gap = p1 as usize - p0 as usize;
            if noncontig {
                assert_eq!(gap % crate::node_shm::segment::page_size(), 0);
            } else {
                assert_eq!(gap, 4, "contiguous parts");
            }
            assert_eq!(w.shared_part(4).unwrap_err().class(), ErrorClass::Rank);
            let (first, _, _) = w.win().shared_query(None).unwrap();
            assert_eq!(first, p0.cast());
            w.free().unwrap();
        });
    }
}

#[test]
fn typed_windows_keep_their_memory_and_free_on_drop() {
    on_all(2, |world| {
        let me = world.rank() as f64;
        {
            let w = Window::create(vec![me; 4], &Info::new(), &world).unwrap();
            assert_eq!(w.flavor(), Flavor::Create);
            assert_eq!(w.local_part().1, 4);
            assert_eq!(w.win().local().disp_unit, 8);
        } // freed here, collectively
        let w = Window::create(vec![me; 3], &Info::new(), &world).unwrap();
        let (p, _) = w.local_part();
        // SAFETY: this member's own part, no operation targets it.
        unsafe { p.add(2).write(me + 0.5) };
        assert_eq!(w.into_memory().unwrap(), Some(vec![me, me, me + 0.5]), "the memory comes back");
        let a: Window<i32> = Window::allocate(3, &Info::new(), &world).unwrap();
        assert_eq!(a.local_part().1, 3);
        assert_eq!(a.shared_part(0).unwrap_err().class(), ErrorClass::RmaFlavor);
    });
}

#[test]
fn shared_layouts_and_the_one_node_rule() {
    use super::create::{Plan, in_segment, layout};
    let plan = |node, size, noncontig| Plan { node, pid: 1, nonce: 0, size, noncontig, direct: true };
    let page = crate::node_shm::segment::page_size();
    let one_node = [plan(7, 10, false), plan(7, 0, true), plan(7, 3, true)];
    assert_eq!(Plan::decode(&one_node[2].encode()), one_node[2]);
    // Member 0's noncontig value decides.
    // The control area of the fast path follows the parts, on a page of its own.
    assert_eq!(layout(&one_node).unwrap(), (vec![0, 10, 10], page, 2 * page));
    let spread = [plan(7, 10, true), plan(7, 0, false), plan(7, 3, false)];
    assert_eq!(layout(&spread).unwrap(), (vec![0, page, page], 2 * page, 3 * page));
    assert_eq!(layout(&[plan(7, 0, false)]).unwrap(), (vec![0], page, 2 * page), "never an empty mapping");
    assert!(layout(&[plan(7, u64::MAX, false), plan(7, 1, false)]).is_err());
    assert!(in_segment(Flavor::Shared, &one_node).unwrap());
    assert!(in_segment(Flavor::Allocate, &one_node).unwrap());
    let no_shm = [plan(7, 1, false), Plan { direct: false, ..plan(7, 1, false) }];
    assert!(!in_segment(Flavor::Allocate, &no_shm).unwrap(), "messages when a member runs without shm");
    assert!(in_segment(Flavor::Shared, &no_shm).unwrap());
    let two_nodes = [plan(7, 1, false), plan(8, 1, false)];
    assert!(!in_segment(Flavor::Allocate, &two_nodes).unwrap());
    assert_eq!(in_segment(Flavor::Shared, &two_nodes).unwrap_err().class(), ErrorClass::RmaShared);
}

#[test]
fn the_segment_fd_passes_over_the_socket_and_maps_the_same_memory() {
    use crate::node_shm::fdpass;
    use crate::node_shm::segment::{Segment, page_size};
    let page = page_size();
    let server = fdpass::Server::bind().unwrap();
    let (seg, fd) = Segment::create(page).unwrap();
    let (me, nonce) = (std::process::id(), server.nonce);
    // Two "members" of this very process (the expected pids form a multiset).
    let fetcher =
        std::thread::spawn(move || [fdpass::fetch(me, nonce).unwrap(), fdpass::fetch(me, nonce).unwrap()]);
    server.serve(&fd, &[me, me]).unwrap();
    for got in fetcher.join().unwrap() {
        assert!(Segment::attach(&got, 2 * page).is_err(), "the size is checked");
        let other = Segment::attach(&got, page).unwrap();
        // SAFETY: both mappings are `page` bytes long; one thread writes then reads.
        unsafe {
            seg.base().add(page - 1).write_volatile(0x5a);
            assert_eq!(other.base().add(page - 1).read_volatile(), 0x5a);
            other.base().write_volatile(7);
            assert_eq!(seg.base().read_volatile(), 7);
            seg.base().write_volatile(0);
        }
    }
    drop(server);
    assert!(fdpass::fetch(me, nonce).is_err(), "the socket goes with its server");
}

#[test]
fn private_parts_are_aligned_zeroed_and_never_empty() {
    for size in [0, 1, 100, 1 << 20] {
        let (memory, base) = super::create::private_part(size).unwrap();
        assert_eq!(base % 64, 0, "{size} bytes: cache-line aligned");
        // SAFETY: the allocation holds max(size, 1) bytes until `memory` is dropped.
        let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, size.max(1)) };
        assert!(bytes.iter().all(|&b| b == 0));
        drop(memory);
    }
    assert_eq!(super::create::private_part(usize::MAX).unwrap_err().class(), ErrorClass::NoMem);
}
