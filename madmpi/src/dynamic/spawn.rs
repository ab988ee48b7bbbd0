//! `MPI_Comm_spawn` and `MPI_Comm_spawn_multiple` (madrun only), and the children's side of
//! `MPI_Comm_get_parent`.
//!
//! The parents' root opens a port and asks the launcher for a job whose processes are told the
//! port (`PM2_PARENT_PORT`); the children's world connects to it from `MPI_Init`
//! ([`connect_to_parents`], as MPICH's children do), while the parents accept on it — the same
//! meeting as `MPI_Comm_accept`/`_connect`, so the result is an intercommunicator with the
//! parents' communicator as the local group. The children share the job key (madrun gives it),
//! so nmad connects parents and children like processes of one job; their peer ids follow the
//! parents' (`nmad::bootstrap::Universe`).
//!
//! A failure at the root (a launcher that cannot spawn, a program that cannot run) fails the
//! call at every parent, `MPI_ERR_SPAWN`, and nothing is started. Owns the spawn protocol; the
//! processes are the launcher's.

use super::connect::{await_connect, meet};
use super::port::{Port, close_port, open_port};
use crate::comm::Comm;
use crate::error::{Error, Result};
use tools::pmi::spawn::{SpawnApp, SpawnRequest};

/// The variable through which the launcher tells children their parents' port.
pub const PARENT_PORT_VAR: &str = "PM2_PARENT_PORT";

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
        let started = comm.runtime_nmad().spawn(&req).map_err(|e| Error::spawn(format!("{call}: {e}")));
        let met = started.and_then(|()| await_connect(world, &port));
        close_port(&name)?;
        met
    })
}

/// In a spawned process's `MPI_Init`: the intercommunicator to the parents (collective over
/// `world`), or `None` when this job was not spawned.
pub(crate) fn connect_to_parents(world: &Comm) -> Result<Option<Comm>> {
    let Ok(port) = std::env::var(PARENT_PORT_VAR) else { return Ok(None) };
    let root_port = (world.rank() == 0).then_some(port.as_str());
    super::connect(root_port, 0, world).map(Some)
}
