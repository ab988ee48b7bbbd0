//! Performance-variable sessions and handles (MPI 4.0 §15.3.7). Sessions isolate tools from
//! each other: a handle belongs to one session, and starting, stopping or resetting it affects
//! no other handle of the same variable.
//!
//! A handle of an accumulating variable (counter, timer) keeps what accumulated in its
//! completed started intervals (`accum`) and the raw value when its current interval began
//! (`base`): it reads `accum + (raw - base)` while started, `accum` while stopped. A reset sets
//! `accum` to 0 (and `base` to the raw value now); a write sets `accum`. Reading and resetting
//! use one raw sample, so `readreset` loses no counts.
//!
//! Ids are process-wide and never reused; [`ALL_HANDLES`] is `MPI_T_PVAR_ALL_HANDLES`.
//! Owns sessions and handles; the variables are in [`super::list`].

use super::super::error::{TError, TResult};
use super::super::kinds::Value;
use super::super::registry::registry;
use super::Bound;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

/// The id standing for every handle of a session (`MPI_T_PVAR_ALL_HANDLES`).
pub const ALL_HANDLES: u64 = 1;

struct Handle {
    pvar: usize,
    bound: Bound,
    started: bool,
    base: Value,
    accum: Value,
}

#[derive(Default)]
struct Session {
    handles: HashMap<u64, Handle>,
}

/// Sessions by id. MPI_T calls are tool calls, not communication: a mutex is fine here.
static SESSIONS: Mutex<Option<HashMap<u64, Session>>> = Mutex::new(None);
/// Ids of sessions and handles (above [`ALL_HANDLES`]).
static NEXT_ID: AtomicU64 = AtomicU64::new(ALL_HANDLES + 1);

fn with_sessions<R>(f: impl FnOnce(&mut HashMap<u64, Session>) -> R) -> R {
    let mut g = SESSIONS.lock().unwrap_or_else(PoisonError::into_inner);
    f(g.get_or_insert_with(HashMap::new))
}

fn with_session<R>(s: u64, f: impl FnOnce(&mut Session) -> TResult<R>) -> TResult<R> {
    with_sessions(|all| f(all.get_mut(&s).ok_or(TError::InvalidSession)?))
}

fn plus(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Double(_), _) | (_, Value::Double(_)) => Value::Double(a.as_f64() + b.as_f64()),
        _ => Value::Uint(a.as_u64().wrapping_add(b.as_u64())),
    }
}

fn minus(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Double(_), _) | (_, Value::Double(_)) => Value::Double(a.as_f64() - b.as_f64()),
        _ => Value::Uint(a.as_u64().wrapping_sub(b.as_u64())),
    }
}

fn zero_like(v: &Value) -> Value {
    match v {
        Value::Double(_) => Value::Double(0.0),
        _ => Value::Uint(0),
    }
}

impl Handle {
    fn raw(&self) -> Value {
        registry().pvars[self.pvar].sample(&self.bound)
    }

    fn accumulates(&self) -> bool {
        registry().pvars[self.pvar].class.accumulates()
    }

    /// The handle's value, given a raw sample.
    fn value_at(&self, raw: &Value) -> Value {
        if !self.accumulates() {
            return raw.clone();
        }
        if self.started { plus(&self.accum, &minus(raw, &self.base)) } else { self.accum.clone() }
    }

    fn start(&mut self) {
        if !self.started {
            self.base = self.raw();
            self.started = true;
        }
    }

    fn stop(&mut self) {
        if self.started {
            let raw = self.raw();
            self.accum = self.value_at(&raw);
            self.started = false;
        }
    }

    fn reset_at(&mut self, raw: Value) {
        self.accum = zero_like(&raw);
        self.base = raw;
    }
}

pub fn session_create() -> TResult<u64> {
    let id = NEXT_ID.fetch_add(1, Relaxed);
    with_sessions(|all| all.insert(id, Session::default()));
    Ok(id)
}

/// Frees a session and its handles.
pub fn session_free(s: u64) -> TResult<()> {
    with_sessions(|all| all.remove(&s).map(drop).ok_or(TError::InvalidSession))
}

/// A handle of variable `pvar` bound to `bound`, stopped, reading 0 (accumulating variables).
/// Returns its id and its element count.
pub fn handle_alloc(s: u64, pvar: usize, bound: Bound) -> TResult<(u64, usize)> {
    let v = registry().pvars.get(pvar).ok_or(TError::InvalidIndex)?;
    let zero = zero_like(&v.sample(&Bound::Nothing));
    with_session(s, |sess| {
        let id = NEXT_ID.fetch_add(1, Relaxed);
        sess.handles.insert(id, Handle { pvar, bound, started: false, base: zero.clone(), accum: zero });
        Ok((id, 1))
    })
}

pub fn handle_free(s: u64, h: u64) -> TResult<()> {
    with_session(s, |sess| sess.handles.remove(&h).map(drop).ok_or(TError::InvalidHandle))
}

/// The handle `h` of session `sess` (not [`ALL_HANDLES`]).
fn one(sess: &mut Session, h: u64) -> TResult<&mut Handle> {
    sess.handles.get_mut(&h).ok_or(TError::InvalidHandle)
}

/// Applies `f` to handle `h`, or to every handle of the session for which `applies` holds when
/// `h` is [`ALL_HANDLES`]; a single handle for which it does not hold gives `refused`.
fn each(s: u64, h: u64, applies: fn(&Handle) -> bool, refused: TError, f: fn(&mut Handle)) -> TResult<()> {
    with_session(s, |sess| {
        if h == ALL_HANDLES {
            sess.handles.values_mut().filter(|x| applies(x)).for_each(f);
            return Ok(());
        }
        let x = one(sess, h)?;
        if !applies(x) {
            return Err(refused);
        }
        f(x);
        Ok(())
    })
}

pub fn start(s: u64, h: u64) -> TResult<()> {
    each(s, h, Handle::accumulates, TError::PvarNoStartstop, Handle::start)
}

pub fn stop(s: u64, h: u64) -> TResult<()> {
    each(s, h, Handle::accumulates, TError::PvarNoStartstop, Handle::stop)
}

pub fn reset(s: u64, h: u64) -> TResult<()> {
    each(s, h, Handle::accumulates, TError::PvarNoWrite, |x| {
        let raw = x.raw();
        x.reset_at(raw)
    })
}

pub fn read(s: u64, h: u64) -> TResult<Value> {
    with_session(s, |sess| {
        let x = one(sess, h)?;
        Ok(x.value_at(&x.raw()))
    })
}

/// Reads, then resets, with one sample.
pub fn readreset(s: u64, h: u64) -> TResult<Value> {
    with_session(s, |sess| {
        let x = one(sess, h)?;
        if !x.accumulates() {
            return Err(TError::PvarNoWrite);
        }
        let raw = x.raw();
        let v = x.value_at(&raw);
        x.reset_at(raw);
        Ok(v)
    })
}

/// Sets the handle's value (it goes on accumulating from there if started).
pub fn write(s: u64, h: u64, v: Value) -> TResult<()> {
    with_session(s, |sess| {
        let x = one(sess, h)?;
        if !x.accumulates() {
            return Err(TError::PvarNoWrite);
        }
        let raw = x.raw();
        x.accum = match raw {
            Value::Double(_) => Value::Double(v.as_f64()),
            _ => Value::Uint(v.as_u64()),
        };
        x.base = raw;
        Ok(())
    })
}

/// The variable of handle `h` in session `s`, and the object it is bound to.
pub fn handle_pvar(s: u64, h: u64) -> TResult<usize> {
    with_session(s, |sess| Ok(one(sess, h)?.pvar))
}
