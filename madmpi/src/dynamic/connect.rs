//! `MPI_Comm_accept` and `MPI_Comm_connect`: two groups of one job build an intercommunicator
//! through a port.
//!
//! The roots meet in the world's session, with tags of kind [`Kind::Port`] made of the port's
//! token (step 0: request, 1: answer, 2: the leaders' link):
//! 1. the connecting root sends the port's full token to the port's process;
//! 2. the accepting root takes requests from any process for that tag; a request whose token is
//!    not the port's (another port whose low bits collide) is answered "no" and it waits on;
//!    the right one is answered "yes";
//! 3. each root tells its group whether it met the other (an AND over the group: a root's
//!    error, such as a closed port, fails the call at every member instead of leaving them
//!    waiting), then both groups run `MPI_Intercomm_create` with the roots as leaders;
//! 4. before that, when the two groups do not read each other's business cards from one store
//!    (jobs spawned under Hydra), the roots swap them and tell their groups (`cards`, step 4).
//!
//! Under Hydra the accepting root must know the connecting root's card before it can take its
//! request: [`connect_after`] lets the connecting root first wait for a go-ahead (`spawn`).
//!
//! Senders are processes of the job (nmad authenticated them with the job key); their requests
//! are still checked (length and token).

use super::cards;
use super::port::{Port, is_open};
use crate::comm::internal::allreduce_and;
use crate::comm::tags::{Kind, tagged};
use crate::comm::{Comm, from_nmad};
use crate::error::{Error, Result};
use crate::intercomm::{LeaderLink, intercomm_create};
use nmad::{Session, Source, scope};
use std::time::Duration;

const REQUEST: u32 = 0;
const ANSWER: u32 = 1;
const LINK: u32 = 2;
const CARDS: u32 = 4;
/// The accepting root's go-ahead to a connecting root that waits for it ([`connect_after`]).
pub(super) const GO: u32 = 5;

/// Where a root's meeting leads: the other root's world rank, the leaders' link's tag and the
/// tag of the cards' exchange.
pub(super) struct Met {
    pub to: u32,
    pub link: u64,
    pub cards: u64,
}

impl Met {
    /// The meeting through `port` with world rank `to`.
    fn through(port: &Port, to: u32) -> Met {
        Met { to, link: tagged(Kind::Port, port.tag(), LINK), cards: tagged(Kind::Port, port.tag(), CARDS) }
    }
}

/// `MPI_Comm_accept` at a member of `comm` (collective over it); `port_name` is significant at
/// rank `root` only, which must have opened it.
pub fn accept(port_name: Option<&str>, root: u32, comm: &Comm) -> Result<Comm> {
    meet("MPI_Comm_accept", comm, root, Error::port, |world| {
        let name = port_name.ok_or_else(|| Error::port("MPI_Comm_accept: no port name at the root"))?;
        let port = Port::parse(name)?;
        let nm = comm.runtime_nmad();
        if port.job != nm.job_id() || port.rank != nm.rank() || !is_open(&port.token) {
            return Err(Error::port("MPI_Comm_accept: the root did not open this port (or closed it)"));
        }
        await_connect(world, &port)
    })
}

/// At the accepting root: takes connect requests on `port` until one has its token.
pub(super) fn await_connect(world: &Session, port: &Port) -> Result<Met> {
    loop {
        let mut buf = [0u8; 16];
        let st = match world.recv(Source::Any, tagged(Kind::Port, port.tag(), REQUEST), &mut buf) {
            Ok(st) => st,
            Err(nmad::Error::Truncated { .. }) => continue, // not a request of ours
            Err(e) => return Err(from_nmad(e)),
        };
        let genuine = st.received == 16 && buf == port.token;
        world
            .send(st.source, tagged(Kind::Port, port.tag(), ANSWER), &[u8::from(genuine)])
            .map_err(from_nmad)?;
        if genuine {
            return Ok(Met::through(port, st.source));
        }
    }
}

/// `MPI_Comm_connect` at a member of `comm` (collective over it); `port_name` is significant at
/// rank `root` only. Waits until the port's process accepts, for at most
/// `MADMPI_CONNECT_TIMEOUT` seconds (180 by default): then `MPI_ERR_PORT`.
pub fn connect(port_name: Option<&str>, root: u32, comm: &Comm) -> Result<Comm> {
    connect_after(port_name, root, comm, |_, _| Ok(()))
}

/// [`connect`], the root running `prepare` once it parsed the port and before it sends its
/// request (an error fails the call at every member).
pub(super) fn connect_after(
    port_name: Option<&str>,
    root: u32,
    comm: &Comm,
    prepare: impl FnOnce(&Session, &Port) -> Result<()>,
) -> Result<Comm> {
    meet("MPI_Comm_connect", comm, root, Error::port, |world| {
        let name = port_name.ok_or_else(|| Error::port("MPI_Comm_connect: no port name at the root"))?;
        let port = Port::parse(name)?;
        let nm = comm.runtime_nmad();
        if port.job != nm.job_id() {
            return Err(Error::port(
                "MPI_Comm_connect: the port belongs to another job (only processes of one job connect)",
            ));
        }
        if port.rank >= nm.capacity() {
            return Err(Error::port(format!(
                "MPI_Comm_connect: the port names process {}, which this job cannot reach",
                port.rank
            )));
        }
        prepare(world, &port)?;
        let mut answer = [0u8; 1];
        let timeout = connect_timeout();
        let answered = scope(|sc| -> std::result::Result<bool, nmad::Error> {
            let r = sc.irecv(
                world,
                Source::Rank(port.rank),
                tagged(Kind::Port, port.tag(), ANSWER),
                &mut answer,
            )?;
            world.send(port.rank, tagged(Kind::Port, port.tag(), REQUEST), &port.token)?;
            if !r.wait_timeout(timeout) && world.cancel(r) {
                return Ok(false);
            }
            r.wait(); // answered while it timed out
            r.result().expect("waited").map(|_| true)
        })
        .map_err(from_nmad)?;
        if !answered {
            return Err(Error::port(format!(
                "MPI_Comm_connect: no answer within {} s (the port is closed, or nobody accepts on it; \
                 {CONNECT_TIMEOUT_VAR} sets the time)",
                timeout.as_secs()
            )));
        }
        if answer != [1] {
            return Err(Error::port("MPI_Comm_connect: the port's process refused the token"));
        }
        Ok(Met::through(&port, port.rank))
    })
}

/// How long `MPI_Comm_connect` waits for the port's process to accept, in whole seconds (the
/// standard lets a connect to a port without a pending accept time out; MPICH's
/// `MPIR_CVAR_CH4_COMM_CONNECT_TIMEOUT` is 180 s too).
pub const CONNECT_TIMEOUT_VAR: &str = "MADMPI_CONNECT_TIMEOUT";
pub const CONNECT_TIMEOUT_DEFAULT: u64 = 180;

pub(super) fn connect_timeout() -> Duration {
    let secs = std::env::var(CONNECT_TIMEOUT_VAR).ok().and_then(|v| v.trim().parse::<u64>().ok());
    Duration::from_secs(secs.unwrap_or(CONNECT_TIMEOUT_DEFAULT))
}

/// The common part: `at_root` runs at the root; the group learns whether it met the other
/// root (the other members fail with `failed`'s class if not), then the intercommunicator is
/// made.
pub(super) fn meet(
    call: &str,
    comm: &Comm,
    root: u32,
    failed: fn(String) -> Error,
    at_root: impl FnOnce(&Session) -> Result<Met>,
) -> Result<Comm> {
    if comm.is_inter() {
        return Err(Error::comm(format!("{call}: an intercommunicator (an intracommunicator is needed)")));
    }
    if root >= comm.size() {
        return Err(Error::root(format!(
            "{call}: root {root} is outside the communicator (size {})",
            comm.size()
        )));
    }
    let world = comm.runtime_nmad().session(crate::comm::context::WORLD);
    let met = (comm.rank() == root).then(|| at_root(&world));
    let mut ok = [match &met {
        Some(Ok(_)) => 1,
        Some(Err(_)) => 0,
        None => u64::MAX,
    }];
    comm.internal(|m| allreduce_and(m, 0, &mut ok).map_err(from_nmad))?;
    let link = match met {
        Some(Err(e)) => return Err(e),
        _ if ok[0] != 1 => {
            return Err(failed(format!("{call}: the root could not meet the other group")));
        }
        Some(Ok(met)) => Some(met),
        None => None,
    };
    if !comm.runtime_nmad().shares_cards() {
        cards::exchange(comm, link.as_ref().map(|m| (&world, m.to, m.cards)))?;
    }
    let link = link.map(|m| LeaderLink::in_session(&world, m.to, m.link));
    intercomm_create(comm, root, link.as_ref())
}
