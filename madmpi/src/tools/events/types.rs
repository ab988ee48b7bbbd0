//! The event types and their sources. Each instance carries its elements packed at fixed
//! displacements in `data` (the layout `MPI_T_event_get_info` describes and `MPI_T_event_copy`
//! copies).

use super::super::kinds::{Type, Verbosity};

/// Room for an instance's elements.
pub const DATA_BYTES: usize = 24;

/// One element of an event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element {
    pub name: &'static str,
    pub ty: Type,
    pub displacement: usize,
}

pub struct EventType {
    pub name: &'static str,
    pub desc: &'static str,
    pub verbosity: Verbosity,
    pub source: usize,
    pub category: &'static str,
    pub elements: &'static [Element],
}

impl EventType {
    /// Bytes from the first element to the end of the last (what `MPI_T_event_copy` writes).
    pub fn extent(&self) -> usize {
        self.elements.iter().map(|e| e.displacement + e.ty.size()).max().unwrap_or(0)
    }
}

pub struct EventSource {
    pub name: &'static str,
    pub desc: &'static str,
}

/// Timestamps: pioman's monotonic clock, in nanoseconds.
pub const TICKS_PER_SECOND: i64 = 1_000_000_000;

/// The time now on the sources' clock.
pub fn now() -> u64 {
    pioman::clock::now_ns()
}

pub const SOURCES: &[EventSource] = &[
    EventSource {
        name: "pioman",
        desc: "pioman's engine (every instance of the process); pioman's clock, ns",
    },
    EventSource { name: "nmad", desc: "nmad's protocol (every gate and session); pioman's clock, ns" },
];

const fn el(name: &'static str, ty: Type, displacement: usize) -> Element {
    Element { name, ty, displacement }
}

pub const BLOCKING_WAIT_BEGIN: usize = 0;
pub const BLOCKING_WAIT_END: usize = 1;
pub const UNEXPECTED_MESSAGE: usize = 2;
pub const RENDEZVOUS_STARTED: usize = 3;
pub const CREDIT_STALL: usize = 4;
pub const RAIL_DOWN: usize = 5;
pub const RAIL_UP: usize = 6;

pub const TYPES: &[EventType] = &[
    EventType {
        name: "pioman_blocking_wait_begin",
        desc: "a context starts sleeping in the sources' blocking waits (elements: pioman instance, \
               sources armed)",
        verbosity: Verbosity::TunerBasic,
        source: 0,
        category: "pioman_waits",
        elements: &[el("instance", Type::UnsignedLongLong, 0), el("sources", Type::Unsigned, 8)],
    },
    EventType {
        name: "pioman_blocking_wait_end",
        desc: "it woke up (elements: pioman instance, 1 if an event woke it and 0 at a timeout, ns asleep)",
        verbosity: Verbosity::TunerBasic,
        source: 0,
        category: "pioman_waits",
        elements: &[
            el("instance", Type::UnsignedLongLong, 0),
            el("woke", Type::Int, 8),
            el("slept_ns", Type::UnsignedLongLong, 16),
        ],
    },
    EventType {
        name: "nmad_unexpected_message",
        desc: "a message arrived before its receive and was stored (elements: session = context id, \
               source rank in the world, nmad tag, payload bytes)",
        verbosity: Verbosity::UserBasic,
        source: 1,
        category: "nmad_flow_control",
        elements: &[
            el("session", Type::Unsigned, 0),
            el("source", Type::Unsigned, 4),
            el("tag", Type::UnsignedLongLong, 8),
            el("bytes", Type::UnsignedLongLong, 16),
        ],
    },
    EventType {
        name: "nmad_rendezvous_started",
        desc: "a send went as a rendezvous request (elements: peer rank in the world, bytes)",
        verbosity: Verbosity::UserBasic,
        source: 1,
        category: "nmad",
        elements: &[el("peer", Type::Unsigned, 0), el("bytes", Type::UnsignedLongLong, 8)],
    },
    EventType {
        name: "nmad_credit_stall",
        desc: "sends to a peer wait: no eager credit nor rendezvous slot left (element: peer rank)",
        verbosity: Verbosity::TunerBasic,
        source: 1,
        category: "nmad_flow_control",
        elements: &[el("peer", Type::Unsigned, 0)],
    },
    EventType {
        name: "nmad_rail_down",
        desc: "a rail to a peer failed and its traffic went over the others (elements: peer rank in \
               the world, driver index: see the cvar NMAD_DRIVERS)",
        verbosity: Verbosity::UserBasic,
        source: 1,
        category: "nmad",
        elements: &[el("peer", Type::Unsigned, 0), el("driver", Type::Unsigned, 4)],
    },
    EventType {
        name: "nmad_rail_up",
        desc: "a failed rail to a peer came back and carries traffic again (elements: peer rank in \
               the world, driver index)",
        verbosity: Verbosity::UserBasic,
        source: 1,
        category: "nmad",
        elements: &[el("peer", Type::Unsigned, 0), el("driver", Type::Unsigned, 4)],
    },
];

/// An event that happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    pub event: usize,
    pub timestamp: u64,
    pub data: [u8; DATA_BYTES],
}

impl Instance {
    pub fn source(&self) -> usize {
        TYPES[self.event].source
    }

    /// The bytes of element `i`.
    pub fn element(&self, i: usize) -> Option<&[u8]> {
        let e = TYPES[self.event].elements.get(i)?;
        self.data.get(e.displacement..e.displacement + e.ty.size())
    }
}

/// Packs `values` (one per element, in order) into an instance of `event`.
fn pack(event: usize, values: &[u64]) -> Instance {
    let mut data = [0u8; DATA_BYTES];
    for (e, &v) in TYPES[event].elements.iter().zip(values) {
        let at = e.displacement;
        match e.ty.size() {
            4 => data[at..at + 4].copy_from_slice(&(v as u32).to_ne_bytes()),
            _ => data[at..at + 8].copy_from_slice(&v.to_ne_bytes()),
        }
    }
    Instance { event, timestamp: now(), data }
}

pub(crate) fn from_pioman(e: &pioman::observe::Event) -> Instance {
    use pioman::observe::Event::*;
    match *e {
        BlockingWaitBegin { instance, sources } => pack(BLOCKING_WAIT_BEGIN, &[instance, sources.into()]),
        BlockingWaitEnd { instance, woke, slept_ns } => {
            pack(BLOCKING_WAIT_END, &[instance, u64::from(woke), slept_ns])
        }
    }
}

pub(crate) fn from_nmad(e: &nmad::observe::Event) -> Instance {
    use nmad::observe::Event::*;
    match *e {
        Unexpected { session, source, tag, len } => {
            pack(UNEXPECTED_MESSAGE, &[session.into(), source.into(), tag, len])
        }
        RendezvousStarted { peer, len } => pack(RENDEZVOUS_STARTED, &[peer.into(), len]),
        CreditStall { peer } => pack(CREDIT_STALL, &[peer.into()]),
        RailDown { peer, driver } => pack(RAIL_DOWN, &[peer.into(), driver.into()]),
        RailUp { peer, driver } => pack(RAIL_UP, &[peer.into(), driver.into()]),
    }
}

/// Which event type an event of the runtime is, without building the instance.
pub(crate) fn pioman_type(e: &pioman::observe::Event) -> usize {
    match e {
        pioman::observe::Event::BlockingWaitBegin { .. } => BLOCKING_WAIT_BEGIN,
        pioman::observe::Event::BlockingWaitEnd { .. } => BLOCKING_WAIT_END,
    }
}

pub(crate) fn nmad_type(e: &nmad::observe::Event) -> usize {
    match e {
        nmad::observe::Event::Unexpected { .. } => UNEXPECTED_MESSAGE,
        nmad::observe::Event::RendezvousStarted { .. } => RENDEZVOUS_STARTED,
        nmad::observe::Event::CreditStall { .. } => CREDIT_STALL,
        nmad::observe::Event::RailDown { .. } => RAIL_DOWN,
        nmad::observe::Event::RailUp { .. } => RAIL_UP,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_fit_and_do_not_overlap() {
        for t in TYPES {
            assert!(t.extent() <= DATA_BYTES, "{}", t.name);
            for (i, a) in t.elements.iter().enumerate() {
                assert_eq!(a.displacement % a.ty.size(), 0, "{}.{} aligned", t.name, a.name);
                for b in &t.elements[i + 1..] {
                    assert!(
                        a.displacement + a.ty.size() <= b.displacement,
                        "{}: {} / {}",
                        t.name,
                        a.name,
                        b.name
                    );
                }
            }
        }
    }

    #[test]
    fn instances_carry_their_elements() {
        let i = from_nmad(&nmad::observe::Event::Unexpected { session: 3, source: 1, tag: 77, len: 4096 });
        assert_eq!(i.event, UNEXPECTED_MESSAGE);
        assert_eq!(i.source(), 1);
        assert_eq!(i.element(0).unwrap(), 3u32.to_ne_bytes());
        assert_eq!(i.element(2).unwrap(), 77u64.to_ne_bytes());
        assert_eq!(i.element(3).unwrap(), 4096u64.to_ne_bytes());
        assert!(i.element(4).is_none());
        let w =
            from_pioman(&pioman::observe::Event::BlockingWaitEnd { instance: 0, woke: true, slept_ns: 9 });
        assert_eq!(w.element(1).unwrap(), 1i32.to_ne_bytes());
        assert_eq!(w.element(2).unwrap(), 9u64.to_ne_bytes());
    }
}
