//! The library's global state: absent before `MPI_Init`, a [`State`] while MPI runs, absent
//! again after `MPI_Finalize`.
//!
//! The state is an `Arc` in an `ArcSwapOption`: a call takes its own reference without any
//! lock ([`state`]), so no global lock is ever held while a call waits on communication, and
//! `MPI_Finalize` swaps the state out while calls that erroneously race with it keep theirs
//! alive. Object tables inside are sharded (see [`Table`]).
//!
//! Owns the lifecycle (init, finalize) and the tables; it must not validate arguments or talk
//! to C.

use crate::attrs::{Keyvals, ObjectAttrs};
use crate::comms::CommObj;
use crate::messages::MsgObj;
use crate::requests::ReqEntry;
use crate::table::Table;
use arc_swap::ArcSwapOption;
use madmpi::abi::{ObjectType, UserObject};
use madmpi::datatype::Datatype;
use madmpi::error::Error;
use madmpi::group::Group;
use madmpi::universe::{self, Threading, Universe};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

/// What the library holds while MPI runs.
pub(crate) struct State {
    /// Taken by `MPI_Finalize`.
    pub(crate) universe: Mutex<Option<Universe>>,
    pub(crate) threading: Threading,
    pub(crate) main_thread: ThreadId,
    pub(crate) world: Arc<CommObj>,
    pub(crate) self_comm: Arc<CommObj>,
    /// Communicators created by the program.
    pub(crate) comms: Table<Arc<CommObj>>,
    /// Groups created by the program (`MPI_GROUP_EMPTY` is not in it).
    pub(crate) groups: Table<Group>,
    /// Communicator keyvals.
    pub(crate) keyvals: Keyvals,
    /// Datatypes created by the program (predefined ones are in `datatypes`).
    pub(crate) datatypes: Table<Datatype>,
    /// Datatype keyvals, and the attributes of datatypes.
    pub(crate) type_keyvals: Keyvals,
    pub(crate) type_attrs: ObjectAttrs,
    pub(crate) requests: Table<Arc<ReqEntry>>,
    /// Freed requests whose operations were still running.
    pub(crate) detached: Mutex<Vec<Arc<ReqEntry>>>,
    /// Messages taken by matched probes and not received yet.
    pub(crate) messages: Table<Arc<MsgObj>>,
}

static STATE: ArcSwapOption<State> = ArcSwapOption::const_empty();

/// The running state, or the `MPI_ERR_OTHER` error of a call made before `MPI_Init` or after
/// `MPI_Finalize`.
pub(crate) fn state() -> Result<Arc<State>, Error> {
    STATE.load_full().ok_or_else(|| {
        Error::other(if universe::finalized() {
            "MPI was finalized (only MPI_Initialized, MPI_Finalized, MPI_Get_version, \
             MPI_Get_library_version, MPI_Error_class and MPI_Error_string may be called now)"
        } else {
            "MPI is not initialized (call MPI_Init or MPI_Init_thread first)"
        })
    })
}

/// `MPI_Init_thread`: starts MPI (errors: already initialized, finalized, or nmad failed).
pub(crate) fn init(threading: Threading) -> Result<Threading, Error> {
    let u = universe::init(threading)?;
    let state = State {
        threading: u.threading(),
        main_thread: std::thread::current().id(),
        world: CommObj::world(u.world().clone()),
        self_comm: CommObj::self_comm(u.self_comm().clone()),
        universe: Mutex::new(Some(u)),
        comms: Table::new(UserObject::Comm),
        groups: Table::new(UserObject::Group),
        keyvals: Keyvals::new(),
        datatypes: Table::new(UserObject::Datatype),
        type_keyvals: Keyvals::for_objects(ObjectType::Datatype),
        type_attrs: ObjectAttrs::new(),
        requests: Table::new(UserObject::Request),
        detached: Mutex::new(Vec::new()),
        messages: Table::new(UserObject::Message),
    };
    let provided = state.threading;
    STATE.store(Some(Arc::new(state)));
    Ok(provided)
}

/// `MPI_Finalize`: deletes the attributes of `MPI_COMM_SELF` and `MPI_COMM_WORLD` (the first
/// failure of their callbacks is returned once MPI is finalized), completes what is left
/// (pending sends are waited for, unmatched receives cancelled), then ends MPI with the other
/// processes.
pub(crate) fn finalize(st: Arc<State>) -> Result<(), Error> {
    // First, while MPI is fully up: the attributes of MPI_COMM_SELF and MPI_COMM_WORLD.
    let deleted = crate::attrs::delete_at_finalize(&st);
    let Some(u) = st.universe.lock().unwrap_or_else(PoisonError::into_inner).take() else {
        return Err(Error::other("MPI_Finalize was already called"));
    };
    STATE.store(None);
    // Buffered messages are delivered (MPI_Buffer_detach waits for them); matched messages
    // nobody received are discarded.
    let _ = st.world.comm.bsend_pool().detach();
    drop(st.messages.drain());
    drop(st.take_all_requests());
    drop(st.comms.drain());
    drop(st.groups.drain());
    drop(st.datatypes.drain());
    drop(st);
    u.finalize().and(deleted)
}
