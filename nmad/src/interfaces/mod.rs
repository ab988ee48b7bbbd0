//! What upper layers (madmpi, Rust programs) use: the send/receive interface and data
//! descriptions. Nothing here knows about drivers or packets.

pub mod data;
pub mod sendrecv;
