//! The library's global state: absent before `MPI_Init` (or `MPI_Session_init`), a [`State`]
//! while MPI runs, absent again after `MPI_Finalize` and the last `MPI_Session_finalize`.
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
use crate::wins::WinObj;
use arc_swap::ArcSwapOption;
use madmpi::abi::{ObjectType, UserObject};
use madmpi::comm::Comm;
use madmpi::datatype::Datatype;
use madmpi::env::universe::{self, Threading, Universe};
use madmpi::error::Error;
use madmpi::group::Group;
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
    /// What handle [`crate::requests::COMPLETED`] stands for.
    pub(crate) completed: Arc<ReqEntry>,
    /// Freed requests whose operations were still running.
    pub(crate) detached: Mutex<Vec<Arc<ReqEntry>>>,
    /// Messages taken by matched probes and not received yet.
    pub(crate) messages: Table<Arc<MsgObj>>,
    /// Windows, and window keyvals.
    pub(crate) wins: Table<Arc<WinObj>>,
    pub(crate) win_keyvals: Keyvals,
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

/// `f` on the running state, without taking a reference to it; `None` before `MPI_Init` or
/// after the end (the general path then reports it).
pub(crate) fn with_state<R>(f: impl FnOnce(&State) -> R) -> Option<R> {
    STATE.load().as_ref().map(|s| f(s))
}

/// Whether the state exists (between `MPI_Init` or a session's start and the end), without
/// taking a reference to it.
pub(crate) fn running() -> bool {
    STATE.load().is_some()
}

/// Who keeps the state: the world model (`MPI_Init` .. `MPI_Finalize`) and each open session
/// (MPI 4.0 lets them coexist); the state goes when the last of them does.
struct Holders {
    world: bool,
    sessions: usize,
}

static HOLDERS: Mutex<Holders> = Mutex::new(Holders { world: false, sessions: 0 });

fn holders() -> std::sync::MutexGuard<'static, Holders> {
    HOLDERS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn new_state(world: Comm, self_comm: Comm, threading: Threading, universe: Option<Universe>) -> State {
    let world_obj = CommObj::world(world);
    State {
        threading,
        main_thread: std::thread::current().id(),
        world: world_obj.clone(),
        self_comm: CommObj::self_comm(self_comm),
        universe: Mutex::new(universe),
        comms: Table::new(UserObject::Comm),
        groups: Table::new(UserObject::Group),
        keyvals: Keyvals::new(),
        datatypes: Table::new(UserObject::Datatype),
        type_keyvals: Keyvals::for_objects(ObjectType::Datatype),
        type_attrs: ObjectAttrs::new(),
        requests: Table::new(UserObject::Request),
        completed: Arc::new(ReqEntry::completed(&world_obj)),
        detached: Mutex::new(Vec::new()),
        messages: Table::new(UserObject::Message),
        wins: Table::new(UserObject::Win),
        win_keyvals: Keyvals::for_objects(ObjectType::Win),
    }
}

/// `MPI_Init_thread`: starts MPI (errors: already initialized, finalized, or nmad failed). With
/// sessions open, the state they made is the world model's too.
pub(crate) fn init(threading: Threading) -> Result<Threading, Error> {
    let mut h = holders();
    let u = universe::init(threading)?;
    let provided = u.threading();
    match STATE.load_full() {
        Some(st) => *st.universe.lock().unwrap_or_else(PoisonError::into_inner) = Some(u),
        None => {
            let (w, s) = (u.world().clone(), u.self_comm().clone());
            STATE.store(Some(Arc::new(new_state(w, s, provided, Some(u)))));
        }
    }
    h.world = true;
    Ok(provided)
}

/// `MPI_Session_init`'s part: the state, made if neither MPI_Init nor another session made it
/// (`world` and `self_comm` are the process's predefined communicators).
pub(crate) fn open_session(world: Comm, self_comm: Comm, threading: Threading) -> Arc<State> {
    let mut h = holders();
    h.sessions += 1;
    match STATE.load_full() {
        Some(st) => st,
        None => {
            let st = Arc::new(new_state(world, self_comm, threading, None));
            STATE.store(Some(st.clone()));
            st
        }
    }
}

/// `MPI_Session_finalize`'s part: the last holder drops the state's objects (before the
/// session gives its reference on the runtime back).
pub(crate) fn close_session() {
    let mut h = holders();
    h.sessions = h.sessions.saturating_sub(1);
    if h.sessions == 0
        && !h.world
        && let Some(st) = STATE.swap(None)
    {
        drop(h);
        drop_objects(&st);
    }
}

/// Drops every object of the state (they are dropped unlocked, after the tables' locks).
fn drop_objects(st: &State) {
    // Buffered messages are delivered (MPI_Buffer_detach waits for them); matched messages
    // nobody received are discarded.
    let _ = st.world.comm.bsend_pool().detach();
    drop(st.messages.drain());
    drop(st.take_all_requests());
    let wins = st.wins.drain();
    crate::wins::forget_recent();
    drop(wins);
    let comms = st.comms.drain();
    crate::comms::forget_recent();
    drop(comms);
    drop(st.groups.drain());
    drop(st.datatypes.drain());
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
    let mut h = holders();
    h.world = false;
    // Open sessions keep the state (and their objects) until the last of them is finalized.
    if h.sessions == 0 {
        STATE.store(None);
        drop(h);
        drop_objects(&st);
    } else {
        drop(h);
    }
    drop(st);
    u.finalize().and(deleted)
}
