//! Golden tests: what each strategy puts on the wire for a given queue, decoded from the packets
//! a recording link receives; and how credit turns eager messages into rendezvous requests.

use super::*;
use crate::core::Core;
use crate::core::request::{Kind, Request};
use crate::core::wire::{Chunk, Decoder};
use crate::drivers::Sent;
use crate::drivers::{BulkHeader, Link, PeerId};
use crate::drivers::{Caps, LargePath, Profile, Segment};
use crate::interfaces::data::Data;
use std::io;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

/// A link that records packets, or says busy.
#[derive(Default)]
struct Recording {
    packets: Mutex<Vec<Vec<u8>>>,
    busy: AtomicBool,
}

impl Link for Recording {
    fn peer(&self) -> PeerId {
        0
    }
    fn try_send(&self, packet: &[IoSlice<'_>]) -> io::Result<Sent> {
        if self.busy.load(Relaxed) {
            return Ok(Sent::Busy);
        }
        self.packets.lock().unwrap().push(packet.iter().flat_map(|s| s.iter().copied()).collect());
        Ok(Sent::Done)
    }
    unsafe fn send_bulk(&self, _: BulkHeader, _: &[Segment], _: u64) -> io::Result<()> {
        Ok(())
    }
}

fn core() -> Arc<Core> {
    crate::core::test_core(1 << 20, 16)
}

fn rail(name: &str, latency_ns: u64, max_packet: usize) -> RailInfo {
    RailInfo {
        name: name.into(),
        caps: Caps {
            max_packet,
            eager_limit: 16 << 10,
            iovec: true,
            large: LargePath::Bulk,
            blocking: false,
        },
        profile: Profile { latency_ns, bandwidth_mbps: 1000 },
        busy: false,
    }
}

fn gate_with(rails: &[(RailInfo, Arc<Recording>)], credit: u64, slots: u64) -> Gate {
    let rails = rails
        .iter()
        .map(|(info, link)| {
            let r = Rail::new(0, info.clone(), String::new(), 0);
            r.adopt(link.clone(), false);
            r
        })
        .collect();
    Gate::new(0, rails, (credit, slots), (1 << 20, 16), usize::MAX, None)
}

/// Queues a send of `data` with `tag` on session 1.
fn send(core: &Arc<Core>, gate: &Gate, tag: u64, data: &'static [u8], sync: bool) -> Pin<Box<Request>> {
    let req = Box::pin(Request::new());
    // SAFETY: the request lives in the returned box (the test keeps it); `data` is static.
    unsafe {
        let p = req.as_ref().begin(core, None).unwrap();
        let st = p.state();
        st.kind = Kind::Send { session: 1, tag, flags: if sync { wire::FLAG_SYNC } else { 0 } };
        st.data = Data::from_raw(data.as_ptr().cast_mut(), data.len());
        gate.enqueue(core, p).unwrap();
    }
    req
}

/// Ends a test: the core stops, and the gate's pending sends fail (so their requests can drop).
fn finish(core: &Arc<Core>, gate: &Gate) {
    core.shutdown();
    gate.fail(core, "test over");
}

/// One line per packet, chunks separated by " | ".
fn decode(link: &Recording) -> Vec<String> {
    link.packets
        .lock()
        .unwrap()
        .iter()
        .map(|p| {
            Decoder::new(p)
                .unwrap()
                .map(|c| match c.unwrap() {
                    Chunk::Data { h, payload, .. } => {
                        format!("DATA t{} #{} {}B", h.tag, h.seq, payload.len())
                    }
                    Chunk::Rdv { h, total, .. } => format!("RDV t{} #{} {total}B", h.tag, h.seq),
                    Chunk::Ack { cookie } => format!("ACK {cookie}"),
                    Chunk::Fin { cookie } => format!("FIN {cookie}"),
                    Chunk::Rtr { accepted, pieces, .. } => format!("RTR {accepted}B/{}", pieces.len()),
                    Chunk::Credit { bytes, slots } => format!("CREDIT {bytes}B {slots}"),
                    Chunk::Nak { cookie } => format!("NAK {cookie}"),
                    Chunk::Am { handler, header, payload } => {
                        format!("AM h{handler} {}+{}B", header.len(), payload.len())
                    }
                    Chunk::Rtw { accepted, .. } => format!("RTW {accepted}B"),
                    Chunk::Written { recv_cookie } => format!("WRITTEN {recv_cookie}"),
                    Chunk::Seq { n } => format!("SEQ {n}"),
                    Chunk::GateAck(a) => format!("GACK {}B", a.len()),
                    Chunk::Heartbeat(ping) => (if ping { "PING" } else { "PONG" }).into(),
                    Chunk::RailDown { rail } => format!("RAILDOWN {}", String::from_utf8_lossy(rail)),
                })
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect()
}

static SMALL: [u8; 30] = [7; 30];
static BIG: [u8; 100_000] = [1; 100_000];

/// Fills the queue while the link is busy, then lets it go.
fn golden(strategy: &str, rails: &[(RailInfo, Arc<Recording>)]) -> Vec<Vec<String>> {
    let core = core();
    let gate = gate_with(rails, 1 << 20, 16);
    let strat = crate::strategies::by_name(strategy).unwrap();
    for (_, l) in rails {
        l.busy.store(true, Relaxed);
    }
    gate.out.lock().unwrap().control.push_back(Control::Ack(5));
    let _keep = [
        send(&core, &gate, 1, &SMALL[..10], false),
        send(&core, &gate, 2, &SMALL[..20], false),
        send(&core, &gate, 4, &SMALL[..0], false),
        send(&core, &gate, 3, &BIG, false),
        send(&core, &gate, 5, &SMALL[..30], false),
    ];
    assert!(rails.iter().all(|(_, l)| l.packets.lock().unwrap().is_empty()), "busy: nothing sent");
    for (_, l) in rails {
        l.busy.store(false, Relaxed);
    }
    gate.flush_with(&core, &*strat);
    let out = rails.iter().map(|(_, l)| decode(l)).collect();
    finish(&core, &gate);
    out
}

#[test]
fn default_sends_one_chunk_per_packet() {
    let l = Arc::new(Recording::default());
    assert_eq!(
        golden("default", &[(rail("shm", 300, 65536), l)]),
        vec![vec![
            "ACK 5",
            "DATA t1 #0 10B",
            "DATA t2 #1 20B",
            "DATA t4 #2 0B",
            "RDV t3 #3 100000B",
            "DATA t5 #4 30B",
        ]]
    );
}

#[test]
fn aggreg_puts_everything_waiting_in_one_packet() {
    let l = Arc::new(Recording::default());
    assert_eq!(
        golden("aggreg", &[(rail("shm", 300, 65536), l)]),
        vec![vec![
            "ACK 5 | DATA t1 #0 10B | DATA t2 #1 20B | DATA t4 #2 0B | RDV t3 #3 100000B | DATA t5 #4 30B"
        ]]
    );
}

#[test]
fn aggreg_respects_the_packet_size() {
    let core = core();
    let l = Arc::new(Recording::default());
    let gate = gate_with(&[(rail("small", 300, 4096), l.clone())], 1 << 20, 16);
    l.busy.store(true, Relaxed);
    static K: [u8; 1000] = [3; 1000];
    let _keep: Vec<_> = (0..7).map(|t| send(&core, &gate, t, &K, false)).collect();
    l.busy.store(false, Relaxed);
    gate.flush_with(&core, &crate::strategies::aggreg::Aggreg);
    let got = decode(&l);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got.iter().all(|p| p.matches("DATA").count() <= 3));
    assert_eq!(got.iter().map(|p| p.matches("DATA").count()).sum::<usize>(), 7);
    finish(&core, &gate);
}

#[test]
fn split_balance_uses_the_fast_rail_and_another_when_it_is_busy() {
    let (fast, slow) = (Arc::new(Recording::default()), Arc::new(Recording::default()));
    let rails = [(rail("fast", 300, 65536), fast.clone()), (rail("slow", 20_000, 65536), slow.clone())];
    let got = golden("split_balance", &rails);
    assert_eq!(
        got[0],
        vec!["ACK 5 | DATA t1 #0 10B | DATA t2 #1 20B | DATA t4 #2 0B | RDV t3 #3 100000B | DATA t5 #4 30B"]
    );
    assert!(got[1].is_empty(), "nothing on the slow rail while the fast one is free");
    // The fast rail busy: the slow one carries the packet.
    let core = core();
    let gate = gate_with(&rails, 1 << 20, 16);
    fast.packets.lock().unwrap().clear();
    fast.busy.store(true, Relaxed);
    let _keep = send(&core, &gate, 9, &SMALL[..8], false);
    gate.flush_with(&core, &crate::strategies::split_balance::SplitBalance::default());
    assert_eq!(decode(&slow), vec!["DATA t9 #0 8B"]);
    finish(&core, &gate);
}

#[test]
fn without_credit_eager_messages_become_rendezvous_then_wait() {
    let core = core();
    let l = Arc::new(Recording::default());
    // Credit for one 30-byte message (30 + 64), one rendezvous slot.
    let gate = gate_with(&[(rail("shm", 300, 65536), l.clone())], 100, 1);
    l.busy.store(true, Relaxed);
    let _keep = [
        send(&core, &gate, 1, &SMALL, false),
        send(&core, &gate, 2, &SMALL, false),
        send(&core, &gate, 3, &SMALL, false),
    ];
    l.busy.store(false, Relaxed);
    gate.flush_with(&core, &crate::strategies::aggreg::Aggreg);
    assert_eq!(decode(&l), vec!["DATA t1 #0 30B | RDV t2 #1 30B"], "the third waits for credit");
    gate.add_credit(&core, 94, 0);
    assert_eq!(decode(&l)[1], "DATA t3 #2 30B", "credit came back");
    finish(&core, &gate);
}

/// The packets one 20-byte message leaves on a fresh gate (owing the peer credit) when sent by
/// `how`: the express send, a request's latency path, or the queue and `flush`.
fn one_message(how: &str) -> Vec<Vec<u8>> {
    let core = core();
    let l = Arc::new(Recording::default());
    let gate = gate_with(&[(rail("shm", 300, 65536), l.clone())], 1 << 20, 16);
    gate.owed_bytes.store(500, Relaxed);
    gate.owed_slots.store(1, Relaxed);
    let _keep = match how {
        "express" => {
            assert!(gate.send_now(&core, 1, 6, &SMALL[..20]), "the express send takes it");
            None
        }
        "latency" => Some(send(&core, &gate, 6, &SMALL[..20], false)),
        _ => {
            l.busy.store(true, Relaxed);
            let r = send(&core, &gate, 6, &SMALL[..20], false);
            l.busy.store(false, Relaxed);
            gate.flush_with(&core, &*crate::strategies::by_name("default").unwrap());
            Some(r)
        }
    };
    let p = l.packets.lock().unwrap().clone();
    finish(&core, &gate);
    p
}

/// The express send (`Gate::send_now`, no request) puts on the wire byte for byte what a
/// request's latency path and the queue's `flush` do, the credit owed to the peer included: the
/// receiver cannot tell them apart.
#[test]
fn the_express_send_puts_the_general_paths_bytes_on_the_wire() {
    let express = one_message("express");
    assert_eq!(express, one_message("latency"));
    assert_eq!(express, one_message("flush"));
    let l = Recording::default();
    *l.packets.lock().unwrap() = express;
    assert_eq!(decode(&l), vec!["DATA t6 #0 20B | CREDIT 500B 1"]);
}

/// The express send takes the session's next sequence number, and declines (sending nothing)
/// while a message waits in the queue, so that messages leave in the order they were sent.
#[test]
fn the_express_send_waits_its_turn() {
    let core = core();
    let l = Arc::new(Recording::default());
    let gate = gate_with(&[(rail("shm", 300, 65536), l.clone())], 1 << 20, 16);
    l.busy.store(true, Relaxed);
    let _first = send(&core, &gate, 1, &SMALL[..10], false);
    assert!(!gate.send_now(&core, 1, 2, &SMALL[..10]), "declined behind a queued message");
    l.busy.store(false, Relaxed);
    gate.flush(&core);
    assert!(gate.send_now(&core, 1, 3, &SMALL[..10]));
    let _last = send(&core, &gate, 4, &SMALL[..10], false);
    assert!(gate.send_now(&core, 2, 5, &SMALL[..10]), "another session counts apart");
    assert!(gate.send_now(&core, 1, 6, &SMALL[..10]));
    assert_eq!(
        decode(&l),
        vec!["DATA t1 #0 10B", "DATA t3 #1 10B", "DATA t4 #2 10B", "DATA t5 #0 10B", "DATA t6 #3 10B"]
    );
    finish(&core, &gate);
}

/// A failover gate numbers every packet that carries more than acknowledgements, keeps it
/// until acknowledged, and when its rail fails sends what is not acknowledged again on the
/// other rail; the receiving side hands packets over in order, once.
#[test]
fn failover_numbers_packets_and_resends_a_failed_rails_on_the_other() {
    let core = core();
    let (a, b) = (Arc::new(Recording::default()), Arc::new(Recording::default()));
    let rails: Vec<Rail> =
        [(rail("tcp:a", 20_000, 65536), a.clone()), (rail("tcp:b", 30_000, 65536), b.clone())]
            .into_iter()
            .map(|(info, link)| {
                let r = Rail::new(0, info, String::new(), 0);
                r.adopt(link, false);
                r
            })
            .collect();
    let gate = Gate::new(0, rails, (1 << 20, 16), (1 << 20, 16), usize::MAX, Some(Default::default()));
    let _keep: Vec<_> = (1..=3).map(|t| send(&core, &gate, t, &SMALL[..10], false)).collect();
    assert_eq!(decode(&a), ["SEQ 0 | DATA t1 #0 10B", "SEQ 1 | DATA t2 #1 10B", "SEQ 2 | DATA t3 #2 10B"]);
    gate.on_gate_ack(&core, &crate::reliable::Ack::new(1, None));
    gate.rail_failed(&core, 0, "cut by the test");
    assert_eq!(
        decode(&b),
        ["SEQ 1 | DATA t2 #1 10B", "SEQ 2 | DATA t3 #2 10B", "SEQ 3 | RAILDOWN tcp:a"],
        "what rail a may have lost, then the news"
    );
    let _more = send(&core, &gate, 4, &SMALL[..10], false);
    assert_eq!(decode(&b).last().map(String::as_str), Some("SEQ 4 | DATA t4 #3 10B"), "new traffic on b");
    let f = gate.failover.as_ref().unwrap();
    let mut got = Vec::new();
    let mut arrive = |n: u64| f.arrived(n, &[n as u8], |p| got.push(p[0]));
    assert_eq!([arrive(0), arrive(2), arrive(2), arrive(0), arrive(3), arrive(1)], [1, 0, 0, 0, 0, 3]);
    assert_eq!(got, [0, 1, 2, 3], "in order, once: early ones kept, duplicates dropped");
    finish(&core, &gate);
}
