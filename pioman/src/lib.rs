//! PIOMan, the I/O event manager (not implemented yet: issue 3).
//!
//! It will own the progression of every pending communication request: drivers register *ltasks*
//! (poll, optional blocking wait, options, binding, hints), and pioman runs them from marcel's
//! scheduler hooks (idle LWP, context switch, periodic tick) or, without marcel, from pinned
//! progression threads, choosing per CPU load between polling and interrupt-style blocking waits
//! executed inside `marcel::blocking` so that computation goes on. Policies are a trait.
//!
//! It must not know about any network, packet or MPI concept: it sees callbacks and conditions only.
