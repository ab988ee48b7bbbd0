//! The registry and the semantics of handles, without a runtime (counters read 0 then; their
//! arithmetic is checked with the collective choice, which a test can change).

use super::kinds::{Class, Scope, Type, Value};
use super::pvars::{Bound, sessions};
use super::*;
use std::collections::HashSet;

#[test]
fn every_setting_the_crates_read_is_a_cvar() {
    let r = registry();
    // The variables the crates read with env::var / var_os (MARCEL_STACK_TEST_CHILD is a marker
    // of marcel's own tests).
    for v in [
        "MARCEL_LWPS",
        "MARCEL_CPUSET",
        "MARCEL_STACK_SIZE",
        "MARCEL_QUANTUM_US",
        "MARCEL_SPIN_US",
        "MARCEL_PIN",
        "MARCEL_SENTINEL",
        "PIOMAN_POLICY",
        "PIOMAN_TICK_US",
        "PIOMAN_SPIN_US",
        "PIOMAN_THREADS",
        "PIOMAN_STATS",
        "PIOMAN_NO_TSC",
        "NMAD_DRIVERS",
        "NMAD_STRATEGY",
        "NMAD_EAGER_LIMIT",
        "NMAD_UNEXPECTED_BUDGET",
        "NMAD_RDV_SLOTS",
        "NMAD_SHM_RING",
        "NMAD_SHM_CMA",
        "NMAD_TCP_IFACE",
        "NMAD_TCP_SOCKBUF",
        "NMAD_TCP_BANDWIDTH",
        "MADMPI_COLL_HIERARCHICAL",
        "MADMPI_COLL_BARRIER",
        "MADMPI_COLL_BCAST",
        "MADMPI_COLL_REDUCE",
        "MADMPI_COLL_ALLREDUCE",
        "MADMPI_COLL_REDUCE_SCATTER",
        "MADMPI_COLL_SCAN",
        "MADMPI_COLL_GATHER",
        "MADMPI_COLL_SCATTER",
        "MADMPI_COLL_ALLGATHER",
        "MADMPI_COLL_ALLGATHERV",
        "MADMPI_COLL_ALLTOALL",
        "MADMPI_COLL_ALLTOALLV",
        "MADMPI_COLL_TRACE",
        "PM2_LOG",
        "MADMPI_CONNECT_TIMEOUT",
    ] {
        assert!(r.cvar_index(v).is_some(), "{v} missing");
    }
    let names: HashSet<&str> = r.cvars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names.len(), r.cvars.len(), "cvar names are unique");
}

#[test]
fn descriptions_types_and_enums_are_consistent() {
    let r = registry();
    for v in &r.cvars {
        assert!(!v.desc.is_empty(), "{}", v.name);
        assert_eq!(
            v.writable(),
            matches!(v.scope, Scope::Local | Scope::AllEq),
            "{}: scope says writable",
            v.name
        );
        if let Some(e) = v.enumtype {
            assert_eq!(v.ty, Type::Int, "{}: enumerations are int", v.name);
            let val = v.read().as_i64();
            assert!(r.enums[e].name_of(val).is_some(), "{} = {val} is in its enumeration", v.name);
        }
        match v.read() {
            Value::Text(_) => assert_eq!(v.ty, Type::Char, "{}", v.name),
            _ => assert_ne!(v.ty, Type::Char, "{}", v.name),
        }
    }
    let pairs: HashSet<(&str, i32)> = r.pvars.iter().map(|v| (v.name.as_str(), v.class.code())).collect();
    assert_eq!(pairs.len(), r.pvars.len(), "pvar (name, class) pairs are unique");
    for v in &r.pvars {
        assert!(!v.desc.is_empty(), "{}", v.name);
        assert_eq!(v.ty == Type::Double, v.class == Class::Timer, "{}: timers are seconds", v.name);
        assert_eq!(v.enumtype.is_some(), v.class == Class::State, "{}: states are enumerations", v.name);
    }
}

#[test]
fn categories_cover_everything_once_and_form_a_tree() {
    let r = registry();
    let mut seen = vec![0; r.cvars.len()];
    let mut pseen = vec![0; r.pvars.len()];
    let mut eseen = vec![0; events::types::TYPES.len()];
    let mut parents = vec![0; r.categories.len()];
    for c in &r.categories {
        c.cvars.iter().for_each(|&i| seen[i] += 1);
        c.pvars.iter().for_each(|&i| pseen[i] += 1);
        c.events.iter().for_each(|&i| eseen[i] += 1);
        c.subcategories.iter().for_each(|&i| parents[i] += 1);
    }
    assert!(seen.iter().chain(&pseen).chain(&eseen).all(|&n| n == 1), "each in exactly one category");
    assert_eq!(parents[r.category_index("pm2").unwrap()], 0);
    assert!(parents.iter().skip(1).all(|&n| n == 1), "every other category has one parent");
    let pm2 = &r.categories[r.category_index("pm2").unwrap()];
    let tops: Vec<&str> = pm2.subcategories.iter().map(|&i| r.categories[i].name.as_str()).collect();
    assert_eq!(tops, ["marcel", "pioman", "nmad", "madmpi"]);
}

#[test]
fn init_is_reference_counted() {
    // Other tests may hold the interface open: count relative to now.
    init(crate::info::Threading::Multiple);
    init(crate::info::Threading::Single);
    finalize().unwrap();
    check_initialized().unwrap();
    finalize().unwrap();
}

#[test]
fn coll_choice_written_through_its_cvar_is_what_collectives_read() {
    // The barrier has one algorithm, the default one: forcing it cannot make ranks of other
    // tests running in this process disagree.
    let r = registry();
    let v = &r.cvars[r.cvar_index("MADMPI_COLL_BARRIER").unwrap()];
    let e = &r.enums[v.enumtype.unwrap()];
    let dissemination = e.value_of("dissemination").unwrap();
    assert_eq!(e.value_of("auto"), Some(0));
    v.write(&Value::Int(dissemination.into())).unwrap();
    assert_eq!(v.read(), Value::Int(dissemination.into()));
    let f = crate::coll::choice::Forced::from_env().unwrap();
    assert_eq!(f.barrier, Some(crate::coll::choice::Barrier::Dissemination));
    v.write(&Value::Int(0)).unwrap();
    assert_eq!(crate::coll::choice::Forced::from_env().unwrap().barrier, None, "auto again");
    assert_eq!(v.write(&Value::Int(99)), Err(TError::Invalid));
}

#[test]
fn readonly_and_runtime_only_writes_are_refused() {
    let r = registry();
    let tick = &r.cvars[r.cvar_index("PIOMAN_TICK_US").unwrap()];
    assert_eq!(tick.write(&Value::Uint(500)), Err(TError::CvarSetNever));
    let policy = &r.cvars[r.cvar_index("PIOMAN_POLICY").unwrap()];
    // No MPI runtime in unit tests: the policy can only change while pioman runs.
    assert_eq!(policy.write(&Value::Int(0)), Err(TError::CvarSetNotNow));
}

#[test]
fn pvar_handles_follow_mpi_semantics() {
    let r = registry();
    let s = sessions::session_create().unwrap();
    let counter = r.pvar_index("nmad_eager_sent", Class::Counter).unwrap();
    let level = r.pvar_index("nmad_unexpected_bytes", Class::Level).unwrap();
    let (h, count) = sessions::handle_alloc(s, counter, Bound::Nothing).unwrap();
    assert_eq!(count, 1);
    let (hl, _) = sessions::handle_alloc(s, level, Bound::Nothing).unwrap();
    assert_eq!(sessions::start(s, hl), Err(TError::PvarNoStartstop), "continuous");
    assert_eq!(sessions::reset(s, hl), Err(TError::PvarNoWrite), "read-only");
    assert_eq!(sessions::write(s, hl, Value::Uint(1)), Err(TError::PvarNoWrite));
    sessions::start(s, sessions::ALL_HANDLES).unwrap();
    sessions::write(s, h, Value::Uint(42)).unwrap();
    assert_eq!(sessions::read(s, h).unwrap(), Value::Uint(42), "no traffic without a runtime");
    assert_eq!(sessions::readreset(s, h).unwrap(), Value::Uint(42));
    assert_eq!(sessions::read(s, h).unwrap(), Value::Uint(0));
    assert_eq!(sessions::read(s, sessions::ALL_HANDLES), Err(TError::InvalidHandle));
    let other = sessions::session_create().unwrap();
    assert_eq!(sessions::read(other, h), Err(TError::InvalidHandle), "handles belong to their session");
    sessions::stop(s, sessions::ALL_HANDLES).unwrap();
    sessions::session_free(s).unwrap();
    assert_eq!(sessions::read(s, h), Err(TError::InvalidSession));
    sessions::session_free(other).unwrap();
    assert_eq!(sessions::session_free(other), Err(TError::InvalidSession));
}

#[test]
fn events_reach_thread_safe_callbacks_and_losses_reach_dropped_handlers() {
    use events::registrations as regs;
    use kinds::Safety;
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    use std::sync::{Arc, Mutex};
    let ev = registry().event_index("nmad_credit_stall").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let lost = Arc::new(AtomicU64::new(0));
    let strict = regs::alloc(ev, crate::info::Info::new()).unwrap();
    let weak = regs::alloc(ev, crate::info::Info::new()).unwrap();
    let s2 = seen.clone();
    regs::set_callback(
        strict,
        Safety::ThreadSafe,
        Some(Arc::new(move |i: &events::Instance, level| {
            let peer = u32::from_ne_bytes(i.element(0).unwrap().try_into().unwrap());
            let read = events::delivery::with_instance(i as *const _ as usize, |j| j.timestamp).unwrap();
            s2.lock().unwrap().push((peer, level, read == i.timestamp));
        })),
    )
    .unwrap();
    regs::set_callback(weak, Safety::None, Some(Arc::new(|_: &events::Instance, _| panic!("never called"))))
        .unwrap();
    let l2 = lost.clone();
    regs::set_dropped_handler(
        weak,
        Some(Arc::new(move |n, source| {
            assert_eq!(source, 1, "nmad's source");
            l2.fetch_add(n, SeqCst);
        })),
    )
    .unwrap();
    // Other tests of this process may run nmad and fire real stalls: look at peers 5 and 6 only
    // (no test job has that many ranks).
    let ours = |peer: u32| seen.lock().unwrap().iter().filter(|s| s.0 == peer).cloned().collect::<Vec<_>>();
    nmad::observe::EVENTS.fire(|| nmad::observe::Event::CreditStall { peer: 5 });
    events::delivery::deliver_pending();
    assert_eq!(ours(5), vec![(5, Safety::ThreadSafe, true)]);
    assert!(lost.load(SeqCst) >= 1, "no callback for this context: reported as dropped");
    assert!(events::delivery::with_instance(8, |_| ()).is_none(), "instances live only in callbacks");
    let freed = Arc::new(AtomicU64::new(0));
    let f2 = freed.clone();
    regs::free(
        strict,
        Some(Box::new(move || {
            f2.fetch_add(1, SeqCst);
        })),
    )
    .unwrap();
    assert_eq!(freed.load(SeqCst), 1);
    regs::free(weak, None).unwrap();
    assert_eq!(regs::free(weak, None), Err(TError::InvalidHandle));
    nmad::observe::EVENTS.fire(|| nmad::observe::Event::CreditStall { peer: 6 });
    events::delivery::deliver_pending();
    assert!(ours(6).is_empty(), "freed: no callback any more");
}
