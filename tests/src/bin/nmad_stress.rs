//! A randomized stress job for nmad: every rank derives the same schedule of messages (random
//! source, destination — oneself included —, tag and size up to `--max-size`) from `--seed`,
//! then sends its own and receives those meant for it, with windows of outstanding requests,
//! checking every byte. Tags 14 and 15 are received with any-source receives (their payloads
//! say which message they are); the others with the exact source and tag, in order.
//!
//! `nmad_stress [--messages N] [--seed S] [--max-size BYTES] [--window W]`; prints one line per
//! rank and exits non-zero on any error.

use nmad::{Data, Nmad, Request, SendMode, Source, TagMatch};
use std::collections::HashMap;
use std::pin::Pin;
use tests::{Rng, check_payload, fill_payload, stress_size};

struct Msg {
    id: u64,
    src: u32,
    dst: u32,
    tag: u64,
    size: u64,
}

const WILD_TAGS: u64 = 14;
const WILD_MAX: u64 = 64 << 10;

fn schedule(n: u64, seed: u64, size: u32, max: u64) -> Vec<Msg> {
    let mut r = Rng::new(seed);
    (0..n)
        .map(|id| {
            let src = r.below(u64::from(size)) as u32;
            let dst = r.below(u64::from(size)) as u32;
            let tag = r.below(16);
            let mut sz = stress_size(&mut r, max);
            if tag >= WILD_TAGS {
                sz = sz.clamp(8, WILD_MAX); // self-identifying, bounded buffer
            }
            Msg { id, src, dst, tag, size: sz }
        })
        .collect()
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| v.parse().expect(name))
}

struct Slot {
    req: Pin<Box<Request>>,
    buf: Vec<u8>,
    id: Option<u64>,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (n, seed) = (arg(&args, "--messages", 100_000), arg(&args, "--seed", 1));
    let (max, window) = (arg(&args, "--max-size", 8 << 20), arg(&args, "--window", 32) as usize);
    let nm = Nmad::init().expect("nmad init");
    let (me, size) = (nm.rank(), nm.size());
    let s = nm.session(1);
    let all = schedule(n, seed, size, max);
    let sends: Vec<&Msg> = all.iter().filter(|m| m.src == me).collect();
    let recvs: Vec<&Msg> = all.iter().filter(|m| m.dst == me).collect();
    let by_id: HashMap<u64, &Msg> = recvs.iter().map(|m| (m.id, *m)).collect();
    let (mut si, mut ri) = (0, 0);
    let mut send_slots: Vec<Slot> = Vec::new();
    let mut recv_slots: Vec<Slot> = Vec::new();
    let (mut sent, mut received, mut bytes, mut errors) = (0u64, 0u64, 0u64, 0u64);
    let mut wild_seen = std::collections::HashSet::new();
    let start = std::time::Instant::now();
    while si < sends.len() || ri < recvs.len() || !send_slots.is_empty() || !recv_slots.is_empty() {
        let mut moved = false;
        while si < sends.len() && send_slots.len() < window {
            let m = sends[si];
            let mut buf = vec![0u8; m.size as usize];
            fill_payload(m.id, &mut buf);
            let req = Box::pin(Request::new());
            // SAFETY: `buf` lives in the slot with the request until the request completes.
            unsafe {
                s.isend(
                    m.dst,
                    m.tag,
                    Data::from_raw(buf.as_mut_ptr(), buf.len()),
                    SendMode { sync: m.id.is_multiple_of(7), header_len: 0 },
                    req.as_ref(),
                )
            }
            .expect("isend");
            send_slots.push(Slot { req, buf, id: Some(m.id) });
            si += 1;
            moved = true;
        }
        while ri < recvs.len() && recv_slots.len() < window {
            let m = recvs[ri];
            let wild = m.tag >= WILD_TAGS;
            let len = if wild { WILD_MAX } else { m.size + (m.id % 3) * 10 } as usize;
            let mut buf = vec![0u8; len];
            let req = Box::pin(Request::new());
            let (src, id) = if wild { (Source::Any, None) } else { (Source::Rank(m.src), Some(m.id)) };
            // SAFETY: as above.
            unsafe {
                s.irecv(src, TagMatch::exact(m.tag), Data::from_raw(buf.as_mut_ptr(), len), req.as_ref())
            }
            .expect("irecv");
            recv_slots.push(Slot { req, buf, id });
            ri += 1;
            moved = true;
        }
        let before = send_slots.len() + recv_slots.len();
        send_slots.retain(|sl| {
            if !sl.req.test() {
                return true;
            }
            if let Some(Err(e)) = sl.req.result() {
                eprintln!("rank {me}: send {:?} failed: {e}", sl.id);
                errors += 1;
            }
            sent += 1;
            false
        });
        recv_slots.retain(|sl| {
            if !sl.req.test() {
                return true;
            }
            let st = match sl.req.result().unwrap() {
                Ok(st) => st,
                Err(e) => {
                    eprintln!("rank {me}: receive {:?} failed: {e}", sl.id);
                    errors += 1;
                    return false;
                }
            };
            let data = &sl.buf[..st.received as usize];
            let id = sl.id.unwrap_or_else(|| u64::from_le_bytes(data[..8].try_into().unwrap()));
            let ok = match by_id.get(&id) {
                Some(m) => {
                    m.src == st.source
                        && m.tag == st.tag
                        && m.size == st.len
                        && check_payload(id, data)
                        && (sl.id.is_some() || wild_seen.insert(id))
                }
                None => false,
            };
            if !ok {
                eprintln!("rank {me}: message {id} wrong (status {st:?})");
                errors += 1;
            }
            received += 1;
            bytes += st.received;
            false
        });
        if !moved && send_slots.len() + recv_slots.len() == before {
            nm.pioman().progress();
            std::thread::yield_now();
        }
    }
    let stats = nm.stats();
    println!(
        "rank {me}/{size}: sent {sent} received {received} ({bytes} bytes) errors {errors} in {:.2}s; strategy {}, {} packets for {} chunks, peak unexpected {} B",
        start.elapsed().as_secs_f64(),
        nm.strategy(),
        stats.packets,
        stats.chunks,
        stats.peak_unexpected_bytes
    );
    nm.finalize().expect("finalize");
    if errors > 0 || sent != sends.len() as u64 || received != recvs.len() as u64 {
        std::process::exit(1);
    }
}
