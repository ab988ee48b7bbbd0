//! marcel's, pioman's and nmad's settings, `MADMPI_CONNECT_TIMEOUT`, and the level of the stack's diagnostics
//! (`PM2_LOG`), as control variables. All are read from the environment when the runtime
//! starts, so they are read-only, except `PIOMAN_POLICY`: pioman
//! switches policies at run time (`Pioman::set_policy`), so writing it changes the policy of the
//! running instance (from `MPI_Init` to `MPI_Finalize`; before or after, `SET_NOT_NOW`).
//!
//! Values: what the runtime runs with when it can say (policy, strategy, drivers started), else
//! the environment's value, else the crate's default (marcel's are restated here: marcel keeps
//! them private; `MARCEL_STACK_TEST_CHILD`, a marker of marcel's own tests, is not a setting).

use super::super::enums::Enum;
use super::super::error::TError;
use super::super::kinds::{Scope, Type, Value, Verbosity};
use super::super::registry::Registry;
use super::super::runtime;
use super::{Cvar, env};
use std::sync::Arc;

/// A number from the environment, else `default`.
fn num(k: &'static str, default: u64) -> impl Fn() -> Value + Send + Sync {
    move || Value::Uint(env(k).and_then(|v| v.parse().ok()).unwrap_or(default))
}

/// A size in bytes with an optional K/M/G suffix, else `default`.
fn size(k: &'static str, default: u64) -> impl Fn() -> Value + Send + Sync {
    move || {
        let parsed = env(k).and_then(|v| {
            let (digits, shift) = match v.as_bytes().last() {
                Some(b'k' | b'K') => (&v[..v.len() - 1], 10),
                Some(b'm' | b'M') => (&v[..v.len() - 1], 20),
                Some(b'g' | b'G') => (&v[..v.len() - 1], 30),
                _ => (&v[..], 0),
            };
            digits.trim().parse::<u64>().ok().map(|n| n << shift)
        });
        Value::Uint(parsed.unwrap_or(default))
    }
}

/// A yes/no flag (1/0), else `default`.
fn flag(k: &'static str, default: bool) -> impl Fn() -> Value + Send + Sync {
    move || {
        let on = match env(k).as_deref() {
            Some("0" | "no" | "off" | "false") => false,
            Some("1" | "yes" | "on" | "true") => true,
            _ => default,
        };
        Value::Int(i64::from(on))
    }
}

/// Text from the environment, else `default`.
fn text(k: &'static str, default: &'static str) -> impl Fn() -> Value + Send + Sync {
    move || Value::Text(env(k).unwrap_or_else(|| default.to_string()))
}

fn allowed_cpus() -> u64 {
    marcel::topology::allowed_cpus().len() as u64
}

pub(crate) fn add(r: &mut Registry) {
    use Scope::Readonly;
    use Type::*;
    use Verbosity::*;
    let yes_no = r.add_enum(Enum::numbered("boolean", &["no", "yes"]));
    r.cvars.push(Cvar::new(
        pm2_log::VAR,
        Char,
        Readonly,
        UserBasic,
        "pm2",
        "diagnostics written to stderr by every layer: off, error, warn, info, debug or trace, \
         optionally per module (nmad=debug,warn)",
        text(pm2_log::VAR, "warn"),
    ));
    r.cvars.push(Cvar::new(
        crate::dynamic::CONNECT_TIMEOUT_VAR,
        Unsigned,
        Readonly,
        UserBasic,
        "madmpi",
        "seconds MPI_Comm_connect waits for the port's process to accept before failing with MPI_ERR_PORT",
        num(crate::dynamic::CONNECT_TIMEOUT_VAR, crate::dynamic::CONNECT_TIMEOUT_DEFAULT),
    ));
    let m = "marcel";
    r.cvars.extend([
        Cvar::new(
            "MARCEL_LWPS",
            Unsigned,
            Readonly,
            TunerBasic,
            m,
            "LWPs (kernel threads running user threads) of a marcel runtime; default one per allowed CPU",
            move || Value::Uint(env("MARCEL_LWPS").and_then(|v| v.parse().ok()).unwrap_or_else(allowed_cpus)),
        ),
        Cvar::new(
            "MARCEL_CPUSET",
            Char,
            Readonly,
            TunerDetail,
            m,
            "CPUs marcel's LWPs run on (a list such as 0-3,6); empty: the CPUs the process may use",
            text("MARCEL_CPUSET", ""),
        ),
        Cvar::new(
            "MARCEL_STACK_SIZE",
            UnsignedLong,
            Readonly,
            TunerDetail,
            m,
            "bytes of each user thread's stack (K/M/G suffixes; at least 16 KiB)",
            size("MARCEL_STACK_SIZE", 256 << 10),
        ),
        Cvar::new(
            "MARCEL_QUANTUM_US",
            Unsigned,
            Readonly,
            TunerDetail,
            m,
            "time slice of a user thread before preemption, in microseconds (at least 100)",
            num("MARCEL_QUANTUM_US", 10_000),
        ),
        Cvar::new(
            "MARCEL_SPIN_US",
            Unsigned,
            Readonly,
            TunerDetail,
            m,
            "how long an idle LWP spins before sleeping, in microseconds",
            num("MARCEL_SPIN_US", 50),
        ),
        Cvar::new(
            "MARCEL_PIN",
            Int,
            Readonly,
            TunerDetail,
            m,
            "whether each LWP is pinned to its CPU",
            flag("MARCEL_PIN", true),
        )
        .with_enum(yes_no),
        Cvar::new(
            "MARCEL_SENTINEL",
            Int,
            Readonly,
            DevDetail,
            m,
            "whether a sentinel rescues user threads stuck in blocking system calls (only with MARCEL_PIN)",
            flag("MARCEL_SENTINEL", true),
        )
        .with_enum(yes_no),
    ]);

    let policies = Arc::new(Enum::numbered("pioman_policy", &pioman::policy::names()));
    let policy_enum = r.add_enum((*policies).clone());
    let p = "pioman";
    let (rp, wp) = (policies.clone(), policies);
    r.cvars.extend([
        Cvar::new("PIOMAN_POLICY", Int, Scope::Local, UserBasic, p,
            "progression policy: when idle cores poll, when waiting threads spin, park or sleep in blocking \
             waits (poll, block, timer, adaptive, or a registered one); writable between MPI_Init and \
             MPI_Finalize, applied at once",
            move || {
                let name = match runtime::nmad() {
                    Some(nm) => nm.pioman().policy_name(),
                    None => env("PIOMAN_POLICY").unwrap_or_else(|| "adaptive".into()),
                };
                Value::Int(rp.value_of(&name).map_or(-1, i64::from))
            })
        .with_enum(policy_enum)
        .with_write(move |v| {
            let name = wp.name_of(v.as_i64()).ok_or(TError::Invalid)?;
            let nm = runtime::nmad().ok_or(TError::CvarSetNotNow)?;
            let policy = pioman::policy::by_name(name).map_err(|_| TError::Invalid)?;
            nm.pioman().set_policy(policy);
            Ok(())
        }),
        Cvar::new("PIOMAN_TICK_US", Unsigned, Readonly, TunerDetail, p,
            "period of pioman's tick, in microseconds: timer-policy polls and the longest sleep (at least 50)",
            num("PIOMAN_TICK_US", 1000)),
        Cvar::new("PIOMAN_SPIN_US", Unsigned, Readonly, TunerBasic, p,
            "how long a waiting thread spins before parking or blocking, in microseconds",
            move || Value::Uint(pioman::policy::default_spin().as_micros() as u64)),
        Cvar::new("PIOMAN_THREADS", Int, Readonly, TunerDetail, p,
            "progression threads without marcel; -1: the default, one per NUMA node",
            || Value::Int(env("PIOMAN_THREADS").and_then(|v| v.parse().ok()).unwrap_or(-1))),
        Cvar::new("PIOMAN_STATS", Char, Readonly, UserDetail, p,
            "file where pioman writes its statistics as JSON at exit (empty: none)",
            text("PIOMAN_STATS", "")),
        Cvar::new("PIOMAN_NO_TSC", Int, Readonly, DevDetail, p,
            "yes: timestamps from clock_gettime even where the TSC is invariant",
            move || Value::Int(i64::from(std::env::var_os("PIOMAN_NO_TSC").is_some()))).with_enum(yes_no),
    ]);

    let strategies = Arc::new(Enum::numbered("nmad_strategy", &["default", "aggreg", "split_balance"]));
    let strategy_enum = r.add_enum((*strategies).clone());
    let n = "nmad";
    let d = "nmad_drivers";
    let f = "nmad_flow_control";
    let config = || nmad::Config::from_env().ok();
    r.cvars.extend([
        Cvar::new("NMAD_DRIVERS", Char, Readonly, UserBasic, d,
            "drivers, comma-separated (self, shm, tcp, tcp:IFACE); while MPI runs, the drivers started",
            move || Value::Text(match runtime::nmad() {
                Some(nm) => nm.driver_stats().iter().map(|d| d.name.clone()).collect::<Vec<_>>().join(","),
                None => env("NMAD_DRIVERS").unwrap_or_default(),
            })),
        Cvar::new("NMAD_STRATEGY", Int, Readonly, TunerBasic, n,
            "what each packet carries: default (one message), aggreg (every waiting small message), \
             split_balance (large ones split over rails)",
            move || {
                let name = match runtime::nmad() {
                    Some(nm) => nm.strategy().to_string(),
                    None => env("NMAD_STRATEGY").unwrap_or_else(|| "aggreg".into()),
                };
                Value::Int(strategies.value_of(&name).map_or(-1, i64::from))
            })
        .with_enum(strategy_enum),
        Cvar::new("NMAD_EAGER_LIMIT", UnsignedLong, Readonly, TunerBasic, f,
            "cap on every driver's eager limit, in bytes (the drivers' own is 32 KiB; 2^64-1: no cap)",
            move || Value::Uint(config().map_or(u64::MAX, |c| c.eager_limit as u64))),
        Cvar::new("NMAD_UNEXPECTED_BUDGET", UnsignedLong, Readonly, TunerBasic, f,
            "bytes for unexpected messages, shared by the peers as the credit each may use",
            move || Value::Uint(config().map_or(64 << 20, |c| c.unexpected_budget))),
        Cvar::new("NMAD_RDV_SLOTS", UnsignedLong, Readonly, TunerDetail, f,
            "unmatched rendezvous requests a peer may have outstanding",
            move || Value::Uint(config().map_or(1024, |c| c.rdv_slots))),
        Cvar::new("NMAD_SHM_RING", UnsignedLong, Readonly, TunerDetail, d,
            "bytes of each shared-memory ring and direction (a power of two, at least 512K)",
            size("NMAD_SHM_RING", 1 << 20)),
        Cvar::new("NMAD_SHM_CMA", Int, Readonly, TunerDetail, d,
            "yes: shm rendezvous data is read from the sender's memory (process_vm_readv); no: through the ring",
            flag("NMAD_SHM_CMA", true)).with_enum(yes_no),
        Cvar::new("NMAD_TCP_IFACE", Char, Readonly, UserDetail, d,
            "interface or address tcp listens on (empty: automatic)", text("NMAD_TCP_IFACE", "")),
        Cvar::new("NMAD_TCP_SOCKBUF", UnsignedLong, Readonly, TunerDetail, d,
            "socket buffer bytes of tcp connections (0: the kernel's autotuning)", size("NMAD_TCP_SOCKBUF", 0)),
        Cvar::new("NMAD_TCP_BANDWIDTH", UnsignedLong, Readonly, TunerDetail, d,
            "nominal bandwidth of tcp rails for split_balance, in MB/s",
            move || Value::Uint(nmad::drivers::tcp::TcpOptions::from_env().map_or(0, |o| o.bandwidth_mbps))),
    ]);
}
