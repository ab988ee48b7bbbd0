//! NewMadeleine, the communication core (not implemented yet: issue 5).
//!
//! It will own sessions, gates (peers), drivers (self, shared memory, TCP; later reliable UDP and
//! ibverbs) behind a `Driver` trait, eager and rendezvous protocols, tag matching with MPI's
//! ordering, and optimizing strategies behind a `Strategy` trait (default, aggregation,
//! multi-rail split). Progression goes through pioman ltasks.
//!
//! It must not know about MPI objects (communicators, datatypes): those belong to madmpi.
