//! An eager message's bytes between the packet and their receive: borrowed from the packet (or
//! owned, once they had to wait), or still in the driver's memory (a packet lent in place,
//! `Sink::packet_lent`). Lent bytes are copied once, straight into the receive buffer or into
//! the bytes kept for a receive not posted yet; never borrowed (the peer may write them).
//!
//! It owns only the bytes' whereabouts; what they are for (matching, credit) is the caller's.

use super::buffers::{self, Kept};
use crate::drivers::LentPacket;
use crate::interfaces::data::Data;
use std::borrow::Cow;

pub(crate) enum Payload<'a> {
    Bytes(Cow<'a, [u8]>),
    /// Bytes `at..at + len` of a lent packet (the caller checked them against its length).
    Lent {
        packet: &'a dyn LentPacket,
        at: usize,
        len: usize,
    },
}

impl std::fmt::Debug for Payload<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            Payload::Lent { at, len, .. } => write!(f, "Lent({len} bytes at {at})"),
        }
    }
}

impl Payload<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Payload::Bytes(b) => b.len(),
            Payload::Lent { len, .. } => *len,
        }
    }

    /// The bytes, owned (copied out of the packet).
    pub(crate) fn into_owned(self) -> Payload<'static> {
        Payload::Bytes(Cow::Owned(match self {
            Payload::Bytes(Cow::Owned(v)) => v,
            Payload::Bytes(Cow::Borrowed(b)) => buffers::copy(b),
            Payload::Lent { packet, at, len } => buffers::filled(len, |dst| packet.read(at, dst)),
        }))
    }

    /// The bytes as kept for a receive to come.
    pub(crate) fn keep(self) -> Kept {
        match self {
            Payload::Bytes(b) => buffers::own(b),
            Payload::Lent { packet, at, len } => Kept::filled(len, |dst| packet.read(at, dst)),
        }
    }

    /// Copies the bytes into `data` from its start (cut at its end); returns how many.
    ///
    /// # Safety
    /// `data` describes memory valid for writes (the contract of [`Data::from_raw`]).
    pub(crate) unsafe fn unpack(&self, data: &Data) -> usize {
        match self {
            // SAFETY: the caller's contract.
            Payload::Bytes(b) => unsafe { data.unpack(0, b) },
            Payload::Lent { packet, at, len } => {
                let mut done = 0;
                data.for_each(0..*len, |ptr, n| {
                    // SAFETY: `ptr..ptr + n` is memory of `data` (caller's contract), private to
                    // this receive until it completes; `for_each` cut the range to `len`.
                    let dst = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
                    packet.read(at + done, dst);
                    done += n;
                    true
                });
                done
            }
        }
    }
}
