//! The flood job: ranks 1.. each send `--messages` messages (8 B to 32 KiB, random tags) to
//! rank 0, which posts no receive for a while. Flow control must hold rank 0's unexpected memory
//! within its budget (`NMAD_UNEXPECTED_BUDGET`) — senders wait instead — and once rank 0 posts
//! its receives, every message must arrive intact. Rank 0 prints its peak unexpected memory and
//! the budget, and exits non-zero if the budget was exceeded or a message was lost.

use nmad::{Data, Nmad, Request, SendMode, Source, TagMatch};
use std::pin::Pin;
use std::time::{Duration, Instant};
use tests::{Rng, check_payload, fill_payload};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect(name))
}

/// (tag, size) of message `i` from `src`.
fn message(src: u32, i: u64) -> (u64, usize) {
    let mut r = Rng::new(u64::from(src) << 32 | i);
    (r.below(8), 8 + r.below(32 << 10) as usize)
}

fn id(src: u32, i: u64) -> u64 {
    u64::from(src) << 32 | i
}

/// A posted receive: its request, buffer, source rank and message index.
type PostedRecv = (Pin<Box<Request>>, Vec<u8>, u32, u64);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = arg(&args, "--messages", 10_000);
    let hold = Duration::from_millis(arg(&args, "--hold-ms", 1500));
    let nm = Nmad::init().expect("nmad init");
    let (me, size) = (nm.rank(), nm.size());
    let s = nm.session(2);
    if me != 0 {
        let mut reqs: Vec<(Pin<Box<Request>>, Vec<u8>)> = Vec::with_capacity(n as usize);
        for i in 0..n {
            let (tag, len) = message(me, i);
            let mut buf = vec![0u8; len];
            fill_payload(id(me, i), &mut buf);
            let req = Box::pin(Request::new());
            // SAFETY: `buf` stays with its request until the end.
            unsafe {
                s.isend(0, tag, Data::from_raw(buf.as_mut_ptr(), len), SendMode::default(), req.as_ref())
            }
            .expect("isend");
            reqs.push((req, buf));
        }
        for (r, _) in &reqs {
            r.wait();
            r.result().unwrap().expect("send");
        }
        println!("rank {me}: {n} messages sent");
        nm.finalize().expect("finalize");
        return;
    }
    // Rank 0: let the flood come, polling, without receiving.
    let end = Instant::now() + hold;
    while Instant::now() < end {
        nm.pioman().progress();
        std::thread::sleep(Duration::from_micros(200));
    }
    let held = s.unexpected_len();
    let mid = nm.stats();
    // Now receive everything, in each sender's order per tag.
    let mut errors = 0;
    // (request, buffer, source, index)
    let mut reqs: Vec<PostedRecv> = Vec::new();
    for src in 1..size {
        for i in 0..n {
            let (tag, len) = message(src, i);
            let mut buf = vec![0u8; len];
            let req = Box::pin(Request::new());
            // SAFETY: as above.
            unsafe {
                s.irecv(
                    Source::Rank(src),
                    TagMatch::exact(tag),
                    Data::from_raw(buf.as_mut_ptr(), len),
                    req.as_ref(),
                )
            }
            .expect("irecv");
            reqs.push((req, buf, src, i));
        }
    }
    for (r, buf, src, i) in &reqs {
        r.wait();
        match r.result().unwrap() {
            Ok(st) if st.len as usize == buf.len() && check_payload(id(*src, *i), buf) => {}
            other => {
                eprintln!("rank 0: message {i} from {src}: {other:?}");
                errors += 1;
            }
        }
    }
    let st = nm.stats();
    println!(
        "rank 0: held {held} unexpected messages after {hold:?} ({} B); peak unexpected {} B, budget {} B; received {} messages, {errors} errors",
        mid.unexpected_bytes,
        st.peak_unexpected_bytes,
        st.budget,
        reqs.len()
    );
    let over = st.peak_unexpected_bytes > st.budget;
    if over {
        eprintln!("rank 0: the unexpected budget was exceeded");
    }
    if held as u64 >= n * u64::from(size - 1) {
        eprintln!("rank 0: every message was buffered: flow control did not hold anything back");
        errors += 1;
    }
    nm.finalize().expect("finalize");
    if errors > 0 || over {
        std::process::exit(1);
    }
}
