//! What the IP drivers (tcp, udp) share: where an instance listens and what its business card
//! says ([`card`]), their tunables from the environment ([`options`]), and the `libc` calls std does not offer ([`sys`]). It owns no socket and
//! keeps no state; it knows nothing of either driver's protocol.

pub mod card;
pub mod options;
pub mod sys;
