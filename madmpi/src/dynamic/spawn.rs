//! `MPI_Comm_spawn` and `MPI_Comm_spawn_multiple` (under madrun and Hydra), and the children's
//! side of `MPI_Comm_get_parent`.
//!
//! The parents' root opens a port and asks the launcher for a job whose processes are told the
//! port; the children's world connects to it from `MPI_Init` ([`connect_to_parents`], as
//! MPICH's children do), while the parents accept on it — the same meeting as
//! `MPI_Comm_accept`/`_connect`, so the result is an intercommunicator with the parents'
//! communicator as the local group. The children share the job key, so nmad connects parents
//! and children like processes of one job; their peer ids follow the parents'
//! (`nmad::bootstrap::Universe`).
//!
//! - Under madrun, the children get the key, their universe and the port in their environment,
//!   and share the parents' key/value store, cards included.
//! - Under Hydra, the children are a job of their own with their own store: the parents' root
//!   preputs the key, their universe (ids it claimed in Hydra's name service), the port and its
//!   own card (`nmad::bootstrap::PmiBootstrap`). The children's root publishes its card in the
//!   name service; the parents' root waits for it, then tells the children's root to go on, and
//!   the two roots meet; the groups swap the rest of their cards in the meeting (`cards`).
//!   Children spawn in turn the same way (ids are claimed from one chain, so every job gets ids
//!   of its own).
//!
//! A failure at the root (a launcher that cannot spawn, a program that cannot run, children
//! that never show up within `MADMPI_CONNECT_TIMEOUT`) fails the call at every parent,
//! `MPI_ERR_SPAWN`; a program that cannot run is found before anything is started. Owns the
//! spawn protocol; the processes are the launcher's.

use super::connect::{GO, await_connect, connect_after, connect_timeout, meet};
use super::port::{Port, close_port, open_port};
use crate::comm::tags::{Kind, tagged};
use crate::comm::{Comm, from_nmad};
use crate::error::{Error, Result};
use nmad::{Session, Source, scope};
use tools::pmi::spawn::{SpawnApp, SpawnRequest};

/// One command of a spawn (`MPI_Comm_spawn` has one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub program: String,
    pub args: Vec<String>,
    pub maxprocs: u32,
    /// The `wdir` info key: the children's working directory.
    pub wdir: Option<String>,
    /// The `path` info key: where to look for the program first.
    pub path: Option<String>,
}

/// `MPI_Comm_spawn_multiple` at a member of `comm` (collective over it); `commands` is
/// significant at rank `root` only. The children of all commands form one world, in order.
pub fn spawn(commands: Option<&[Command]>, root: u32, comm: &Comm) -> Result<Comm> {
    let call = "MPI_Comm_spawn";
    meet(call, comm, root, Error::spawn, |world| {
        let commands = commands.ok_or_else(|| Error::spawn(format!("{call}: no command at the root")))?;
        if commands.is_empty() {
            return Err(Error::spawn(format!("{call}: no command")));
        }
        let mut apps = Vec::with_capacity(commands.len());
        for c in commands {
            if c.maxprocs == 0 {
                return Err(Error::spawn(format!("{call}: maxprocs of {:?} is 0", c.program)));
            }
            if c.program.is_empty() {
                return Err(Error::spawn(format!("{call}: an empty command")));
            }
            apps.push(SpawnApp {
                nprocs: c.maxprocs,
                argv: std::iter::once(c.program.clone()).chain(c.args.iter().cloned()).collect(),
                wdir: c.wdir.clone(),
                path: c.path.clone(),
            });
        }
        let name = open_port(comm)?;
        let port = Port::parse(&name)?;
        let req = SpawnRequest { apps, parent_port: name.clone() };
        let nm = comm.runtime_nmad();
        let started = nm.spawn(&req).map_err(|e| Error::spawn(format!("{call}: {e}")));
        let met = started.and_then(|children| {
            if let Some(child_root) = children {
                // Their root connects once we can read its card.
                nm.await_card(child_root, connect_timeout())
                    .map_err(|e| Error::spawn(format!("{call}: the children's root: {e}")))?;
                world.send(child_root, tagged(Kind::Port, port.tag(), GO), &[1]).map_err(from_nmad)?;
            }
            await_connect(world, &port)
        });
        close_port(&name)?;
        met
    })
}

/// In a spawned process's `MPI_Init`: the intercommunicator to the parents (collective over
/// `world`), or `None` when this job was not spawned.
pub(crate) fn connect_to_parents(world: &Comm) -> Result<Option<Comm>> {
    let nm = world.runtime_nmad();
    let Some(port) = nm.parent_port() else { return Ok(None) };
    let root_port = (world.rank() == 0).then_some(port.as_str());
    if nm.shares_cards() {
        return super::connect(root_port, 0, world).map(Some);
    }
    connect_after(root_port, 0, world, |session, port| {
        nm.publish_card().map_err(|e| Error::spawn(format!("MPI_Init: publishing this root's card: {e}")))?;
        await_go(session, port)
    })
    .map(Some)
}

/// At the children's root under Hydra: waits for the parents' root to say it can read our card.
/// From any source: a receive from the parents' root would connect to it before it can take
/// the connection.
fn await_go(world: &Session, port: &Port) -> Result<()> {
    let timeout = connect_timeout();
    let mut go = [0u8; 1];
    let got = scope(|sc| -> std::result::Result<Option<u32>, nmad::Error> {
        let r = sc.irecv(world, Source::Any, tagged(Kind::Port, port.tag(), GO), &mut go)?;
        if !r.wait_timeout(timeout) && world.cancel(r) {
            return Ok(None);
        }
        r.wait();
        r.result().expect("waited").map(|st| Some(st.source))
    })
    .map_err(from_nmad)?;
    match got {
        Some(from) if from == port.rank => Ok(()),
        Some(from) => Err(Error::spawn(format!("MPI_Init: process {from} spoke for the parents' root"))),
        None => Err(Error::spawn(format!(
            "MPI_Init: the parents' root did not answer within {} s",
            timeout.as_secs()
        ))),
    }
}
