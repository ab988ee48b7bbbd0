//! The business cards of two groups that met, when their processes do not read each other's
//! from one store (jobs spawned under Hydra: `nmad::Nmad::shares_cards`).
//!
//! The roots swap the cards of their group's members (peer id and card text, as nmad published
//! them) over the world's session, then each root tells its group the other side's with the
//! group's AND-reduction, as `MPI_Intercomm_create` tells its group the remote members; every
//! member hands them to nmad, which connects to those peers from them. What arrives is
//! untrusted: the list's size, each card's length and each peer id are bounded, and nmad
//! parses each card.
//!
//! Owns this exchange's encoding; the cards themselves are nmad's.

use crate::comm::internal::allreduce_and;
use crate::comm::{Comm, from_nmad};
use crate::error::{Error, Result};
use nmad::{Session, Source, scope};

/// Longest card accepted, and most bytes a group's list may have.
const CARD_MAX: usize = 4096;
const LIST_MAX: usize = 1 << 20;
/// The list size a root that failed tells its group.
const FAILED: u64 = u64::MAX >> 1;

/// At every member of `comm` after its root met the other group's (`link` at the root: the
/// other root and the tag of this exchange): learns the other group's cards.
pub(super) fn exchange(comm: &Comm, link: Option<(&Session, u32, u64)>) -> Result<()> {
    let nm = comm.runtime_nmad();
    // A root that fails still swaps (an invalid list) and tells its group (an impossible
    // size), so that nobody waits for it.
    let mut failed = None;
    let mut words = match link {
        Some((world, to, tag)) => {
            let mine = comm
                .group()
                .members()
                .iter()
                .try_fold(Vec::new(), |mut list, &peer| {
                    encode(&mut list, peer, &nm.card_text(peer)?);
                    Ok(list)
                })
                .map_err(from_nmad);
            let sent: &[u8] = match &mine {
                Ok(list) => list,
                Err(_) => &[0xff; 8],
            };
            let theirs = swap(world, to, tag, sent);
            match mine.and(theirs).and_then(|t| decode(&t, nm.capacity()).map(|_| to_words(&t))) {
                Ok(w) => w,
                Err(e) => {
                    failed = Some(e);
                    Vec::new()
                }
            }
        }
        None => Vec::new(),
    };
    comm.internal(|m| {
        let told = match (link, &failed) {
            (None, _) => u64::MAX,
            (Some(_), Some(_)) => FAILED,
            (Some(_), None) => words.len() as u64,
        };
        let mut len = [told];
        allreduce_and(m, 0, &mut len).map_err(from_nmad)?;
        let len = usize::try_from(len[0]).ok().filter(|&l| l <= LIST_MAX / 8 + 1);
        let len = len.ok_or_else(|| Error::intern("the root could not swap the groups' cards"))?;
        if link.is_none() {
            words = vec![u64::MAX; len];
        }
        allreduce_and(m, 1, &mut words).map_err(from_nmad)
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    for (peer, card) in decode(&bytes, nm.capacity())? {
        nm.learn_cards(peer, card).map_err(from_nmad)?;
    }
    Ok(())
}

/// Sends `mine` to the other root while receiving its list.
fn swap(world: &Session, to: u32, tag: u64, mine: &[u8]) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; LIST_MAX];
    let st = scope(|sc| -> std::result::Result<nmad::Status, nmad::Error> {
        let r = sc.irecv(world, Source::Rank(to), tag, &mut buf)?;
        world.send(to, tag, mine)?;
        r.wait();
        r.result().expect("waited")
    })
    .map_err(from_nmad)?;
    buf.truncate(st.received as usize);
    Ok(buf)
}

/// One entry: the peer id, the card's length (both u32, little-endian), the card.
fn encode(out: &mut Vec<u8>, peer: u32, card: &str) {
    out.extend_from_slice(&peer.to_le_bytes());
    out.extend_from_slice(&(card.len() as u32).to_le_bytes());
    out.extend_from_slice(card.as_bytes());
}

/// The bytes as words (zero-padded; a zero peer id and length ends the list).
fn to_words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks(8)
        .map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        })
        .collect()
}

/// The entries of a list, each peer below `capacity`; trailing zero padding ends it.
fn decode(mut bytes: &[u8], capacity: u32) -> Result<Vec<(u32, &str)>> {
    let bad = |why: &str| Error::intern(format!("the other group's cards: {why}"));
    let mut out = Vec::new();
    while bytes.len() >= 8 {
        let peer = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) as usize;
        if len == 0 {
            if bytes.iter().all(|&b| b == 0) {
                break; // padding
            }
            return Err(bad("an empty card"));
        }
        if len > CARD_MAX || len > bytes.len() - 8 {
            return Err(bad("a card too long for the list"));
        }
        if peer >= capacity {
            return Err(bad(&format!("peer {peer} is beyond the {capacity} this process may reach")));
        }
        let card = std::str::from_utf8(&bytes[8..8 + len]).map_err(|_| bad("a card that is not text"))?;
        out.push((peer, card));
        bytes = &bytes[8 + len..];
    }
    if bytes.iter().any(|&b| b != 0) {
        return Err(bad("trailing bytes"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip_through_words_and_bad_ones_are_refused() {
        let mut list = Vec::new();
        encode(&mut list, 0, "self/x|tcp/127.0.0.1:5");
        encode(&mut list, 7, "shm/abc");
        let words = to_words(&list);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(decode(&bytes, 8).unwrap(), vec![(0, "self/x|tcp/127.0.0.1:5"), (7, "shm/abc")]);
        assert!(decode(&bytes, 7).is_err(), "peer 7 beyond a capacity of 7");
        let mut long = Vec::new();
        encode(&mut long, 1, "x");
        long[4] = 200; // says 200 bytes, has 1
        assert!(decode(&long, 8).is_err());
        let mut empty = Vec::new();
        encode(&mut empty, 3, "");
        empty.push(1);
        assert!(decode(&empty, 8).is_err());
        let mut too_long = Vec::new();
        encode(&mut too_long, 1, &"c".repeat(CARD_MAX + 1));
        assert!(decode(&too_long, 8).is_err());
        assert_eq!(decode(&[0u8; 16], 8).unwrap(), vec![]);
    }
}
