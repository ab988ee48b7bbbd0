//! The packet decoder against random and mutated input: errors, never a panic or an
//! out-of-bounds read; and encode/decode round trips of random chunk sequences.

use nmad::drivers::MAX_KEY;
use nmad::wire::{
    Chunk, Decoder, Encoder, FLAG_READ, FLAG_SYNC, MAX_AM_HEADER, MsgHeader, Piece, RemoteMem, SmallPacket,
    VERSION, small_packet,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Gen {
    Data(MsgHeader, u64, Vec<u8>),
    /// (rail name, memory key) when the sender exposed its memory.
    Rdv(MsgHeader, u64, Vec<u8>, Option<(Vec<u8>, Vec<u8>)>),
    Rtr(u64, u64, Vec<(Vec<u8>, u64)>),
    Fin(u64),
    Ack(u64),
    Credit(u64, u64),
    Am(u16, Vec<u8>, Vec<u8>),
}

fn header(flags: u8) -> impl Strategy<Value = MsgHeader> {
    (any::<u32>(), any::<u64>(), any::<u32>()).prop_map(move |(session, tag, seq)| MsgHeader {
        flags,
        session,
        tag,
        seq,
    })
}

fn chunk() -> impl Strategy<Value = Gen> {
    prop_oneof![
        (
            prop_oneof![Just(0u8), Just(FLAG_SYNC)].prop_flat_map(header),
            any::<u64>(),
            prop::collection::vec(any::<u8>(), 0..300)
        )
            .prop_map(|(h, c, p)| Gen::Data(h, c, p)),
        (
            header(0),
            any::<u64>(),
            prop::collection::vec(any::<u8>(), 0..64),
            prop::option::of((
                prop::collection::vec(b'a'..=b'z', 1..10),
                prop::collection::vec(any::<u8>(), 1..=MAX_KEY)
            ))
        )
            .prop_map(|(mut h, c, hd, r)| {
                if r.is_some() {
                    h.flags |= FLAG_READ;
                }
                Gen::Rdv(h, c, hd, r)
            }),
        (
            any::<u64>(),
            any::<u64>(),
            prop::collection::vec((prop::collection::vec(b'a'..=b'z', 1..10), 0u64..1 << 20), 0..5)
        )
            .prop_map(|(c, r, p)| Gen::Rtr(c, r, p)),
        any::<u64>().prop_map(Gen::Fin),
        any::<u64>().prop_map(Gen::Ack),
        (any::<u64>(), any::<u64>()).prop_map(|(b, s)| Gen::Credit(b, s)),
        (
            any::<u16>(),
            prop::collection::vec(any::<u8>(), 0..=MAX_AM_HEADER),
            prop::collection::vec(any::<u8>(), 0..300)
        )
            .prop_map(|(id, hd, p)| Gen::Am(id, hd, p)),
    ]
}

fn encode(chunks: &[Gen]) -> Vec<u8> {
    let mut b = vec![VERSION];
    for c in chunks {
        match c {
            Gen::Data(h, cookie, p) => {
                Encoder(&mut b).data(h, p.len(), *cookie);
                b.extend_from_slice(p);
            }
            Gen::Rdv(h, cookie, hd, r) => {
                let total = hd.len() as u64 + 5;
                let remote = r.as_ref().map(|(rail, key)| RemoteMem { rail, key });
                Encoder(&mut b).rdv(h, total, *cookie, hd, remote);
            }
            Gen::Rtr(c, r, p) => {
                let mut off = 0;
                let pieces: Vec<Piece<'_>> = p
                    .iter()
                    .map(|(n, l)| {
                        let x = Piece { rail: n, offset: off, len: *l };
                        off += l;
                        x
                    })
                    .collect();
                Encoder(&mut b).rtr(*c, *r, off, &pieces);
            }
            Gen::Fin(c) => Encoder(&mut b).fin(*c),
            Gen::Ack(c) => Encoder(&mut b).ack(*c),
            Gen::Credit(x, y) => Encoder(&mut b).credit(*x, *y),
            Gen::Am(id, hd, p) => {
                Encoder(&mut b).am(*id, hd, p.len());
                b.extend_from_slice(p);
            }
        }
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut p = vec![VERSION];
        p.extend_from_slice(&bytes);
        for c in Decoder::new(&p).unwrap() {
            match c {
                Ok(Chunk::Data { payload, .. }) => prop_assert!(payload.len() <= p.len()),
                Ok(Chunk::Am { header, payload, .. }) => {
                    prop_assert!(header.len() <= MAX_AM_HEADER);
                    prop_assert!(header.len() + payload.len() <= p.len());
                }
                _ => {}
            }
        }
    }

    #[test]
    fn chunks_round_trip(chunks in prop::collection::vec(chunk(), 0..8)) {
        let b = encode(&chunks);
        let got: Vec<Chunk<'_>> = Decoder::new(&b).unwrap().collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(got.len(), chunks.len());
        for (g, c) in got.iter().zip(&chunks) {
            match (g, c) {
                (Chunk::Data { h, cookie, payload }, Gen::Data(h2, c2, p2)) => {
                    prop_assert_eq!(h, h2);
                    prop_assert_eq!(&payload[..], &p2[..]);
                    if h.flags & FLAG_SYNC != 0 { prop_assert_eq!(cookie, c2); }
                }
                (Chunk::Rdv { h, cookie, remote, .. }, Gen::Rdv(h2, c2, _, r2)) => {
                    prop_assert_eq!(h, h2);
                    prop_assert_eq!(cookie, c2);
                    prop_assert_eq!(remote.map(|r| (r.rail.to_vec(), r.key.to_vec())), r2.clone());
                }
                (Chunk::Rtr { cookie, recv_cookie, pieces, .. }, Gen::Rtr(c2, r2, p2)) => {
                    prop_assert_eq!((cookie, recv_cookie), (c2, r2));
                    prop_assert_eq!(pieces.len(), p2.len());
                }
                (Chunk::Fin { cookie }, Gen::Fin(c2)) | (Chunk::Ack { cookie }, Gen::Ack(c2)) => prop_assert_eq!(cookie, c2),
                (Chunk::Credit { bytes, slots }, Gen::Credit(b2, s2)) => prop_assert_eq!((bytes, slots), (b2, s2)),
                (Chunk::Am { handler, header, payload }, Gen::Am(id2, hd2, p2)) => {
                    prop_assert_eq!(handler, id2);
                    prop_assert_eq!((&header[..], &payload[..]), (&hd2[..], &p2[..]));
                }
                (g, c) => prop_assert!(false, "{:?} decoded as {:?}", c, g),
            }
        }
    }

    /// The latency path's decoder (`small_packet`) answers only for packets whose chunks the
    /// general decoder reads as one DATA without flags and at most one CREDIT, and then with
    /// the same header, payload and credit: on valid packets of any chunks, cut short or with a
    /// byte changed.
    #[test]
    fn the_small_packet_decoder_agrees_with_the_general_one(chunks in prop::collection::vec(chunk(), 1..3), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
        let b = encode(&chunks);
        let mut m = b.clone();
        let i = flip.0.index(m.len() - 1) + 1;
        m[i] ^= flip.1 | 1;
        for p in [&b[..], &b[..cut.index(b.len()).max(1)], &m[..]] {
            let Some(SmallPacket { h, payload, credit }) = small_packet(p) else { continue };
            let general: Vec<Chunk<'_>> = Decoder::new(p).unwrap().collect::<Result<_, _>>().unwrap();
            let mut want = vec![Chunk::Data { h, cookie: 0, payload }];
            want.extend(credit.map(|(bytes, slots)| Chunk::Credit { bytes, slots }));
            prop_assert_eq!(general, want);
            prop_assert_eq!(h.flags, 0);
        }
    }

    /// Packets of the latency path's shape, as the general encoder writes them, decode at once
    /// to what was encoded.
    #[test]
    fn small_packets_decode_at_once(h in header(0), payload in prop::collection::vec(any::<u8>(), 0..300), credit in prop::option::of((any::<u64>(), any::<u64>()))) {
        let mut chunks = vec![Gen::Data(h, 0, payload.clone())];
        chunks.extend(credit.map(|(b, s)| Gen::Credit(b, s)));
        let b = encode(&chunks);
        prop_assert_eq!(small_packet(&b), Some(SmallPacket { h, payload: &payload, credit }));
    }

    /// Valid packets cut short or with a byte changed: errors or valid chunks, never a panic.
    #[test]
    fn mutated_packets_never_panic(chunks in prop::collection::vec(chunk(), 1..6), cut in any::<prop::sample::Index>(), flip in any::<(prop::sample::Index, u8)>()) {
        let b = encode(&chunks);
        let short = &b[..cut.index(b.len()).max(1)];
        let _ = Decoder::new(short).unwrap().count();
        let mut m = b.clone();
        let i = flip.0.index(m.len() - 1) + 1;
        m[i] ^= flip.1 | 1;
        let _ = Decoder::new(&m).unwrap().count();
    }
}
