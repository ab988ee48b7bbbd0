//! The performance variables, by category. Timers are in seconds (doubles); latencies of the
//! generic class in nanoseconds.

use super::super::kinds::{Bind, Class, Type, Value, Verbosity};
use super::super::registry::Registry;
use super::super::runtime;
use super::{Bound, Pvar};
use pioman::{HistogramSnapshot, Snapshot, SourceSnapshot};

/// pioman's snapshot, when MPI runs.
fn pioman_stats() -> Option<Snapshot> {
    runtime::nmad().map(|nm| nm.pioman().stats())
}

/// A sum over pioman's sources.
fn per_source(f: fn(&SourceSnapshot) -> u64) -> impl Fn(&Bound) -> Value + Send + Sync {
    move |_| Value::Uint(pioman_stats().map_or(0, |s| s.sources.iter().map(f).sum()))
}

/// pioman's sources' histograms of detection latency (or of the gap between polls), merged.
fn merged(s: &Snapshot, gap: bool) -> HistogramSnapshot {
    let mut h = HistogramSnapshot::default();
    for src in &s.sources {
        h.merge(if gap { &src.poll_gap } else { &src.detect });
    }
    h
}

fn nmad_stat(f: fn(&nmad::Stats) -> u64) -> impl Fn(&Bound) -> Value + Send + Sync {
    move |_| Value::Uint(runtime::nmad().map_or(0, |nm| f(&nm.stats())))
}

/// One figure of the drivers of kind `kind` (`tcp`, and rails such as `tcp:eth1`), summed; 0
/// when none is started.
fn driver(
    kind: &'static str,
    f: impl Fn(&nmad::DriverStats) -> u64 + Send + Sync,
) -> impl Fn(&Bound) -> Value + Send + Sync {
    move |_| {
        let of_kind = |d: &&nmad::DriverStats| d.name.split(':').next() == Some(kind);
        Value::Uint(runtime::nmad().map_or(0, |nm| nm.driver_stats().iter().filter(of_kind).map(&f).sum()))
    }
}

/// One figure of the udp driver's acknowledgement layer.
type UdpFigure = fn(&nmad::reliable::StatsSnapshot) -> u64;

/// The udp driver's acknowledgement layer: one figure, summed over its rails.
fn udp(f: UdpFigure) -> impl Fn(&Bound) -> Value + Send + Sync {
    driver("udp", move |d| d.protocol.as_ref().map_or(0, f))
}

pub(crate) fn add(r: &mut Registry) {
    use Class::*;
    use Type::{Double, UnsignedLongLong as Ull};
    use Verbosity::*;
    let polling = "pioman_polling";
    let waits = "pioman_waits";
    r.pvars.extend([
        Pvar::new(
            "pioman_polls",
            Counter,
            Ull,
            UserBasic,
            polling,
            "polls of every source (driver tasks, the collective engine)",
            per_source(|s| s.polls),
        ),
        Pvar::new(
            "pioman_useful_polls",
            Counter,
            Ull,
            UserBasic,
            polling,
            "polls that found something to do",
            per_source(|s| s.useful_polls),
        ),
    ]);
    for (i, ctx) in ["idle", "switch", "tick", "waiter", "blocking", "explicit"].into_iter().enumerate() {
        r.pvars.push(Pvar::new(
            &format!("pioman_useful_polls_{ctx}"),
            Counter,
            Ull,
            TunerDetail,
            polling,
            &format!("useful polls made from the {ctx} context"),
            move |_| {
                Value::Uint(
                    pioman_stats().map_or(0, |s| s.sources.iter().map(|x| x.useful_by_context[i]).sum()),
                )
            },
        ));
    }
    r.pvars.extend([
        Pvar::new("pioman_detections", Counter, Ull, TunerBasic, polling,
            "events detected whose time of occurrence the source knew (the samples of pioman_detect_latency)",
            |_| Value::Uint(pioman_stats().map_or(0, |s| merged(&s, false).count()))),
        Pvar::new("pioman_detect_latency", Timer, Double, TunerBasic, polling,
            "time from events to their detection, summed, in seconds (divide by pioman_detections for the mean)",
            |_| Value::Double(pioman_stats().map_or(0.0, |s| merged(&s, false).sum_ns as f64 * 1e-9))),
        Pvar::new("pioman_detect_latency_p50_ns", Generic, Ull, TunerDetail, polling,
            "median detection latency since start-up, in ns (within 6 %; 0 before any detection)",
            |_| Value::Uint(pioman_stats().and_then(|s| merged(&s, false).quantile_ns(0.5)).unwrap_or(0))),
        Pvar::new("pioman_detect_latency_p99_ns", Generic, Ull, TunerDetail, polling,
            "99th percentile of the detection latency since start-up, in ns (within 6 %; 0 before any)",
            |_| Value::Uint(pioman_stats().and_then(|s| merged(&s, false).quantile_ns(0.99)).unwrap_or(0))),
        Pvar::new("pioman_poll_gap", Timer, Double, TunerDetail, polling,
            "for useful polls, the time since the previous poll of the same source, summed, in seconds",
            |_| Value::Double(pioman_stats().map_or(0.0, |s| merged(&s, true).sum_ns as f64 * 1e-9))),
        Pvar::new("pioman_blocking_waits", Counter, Ull, UserBasic, waits,
            "blocking waits entered, counted per source waited on", per_source(|s| s.blocking_waits)),
        Pvar::new("pioman_wakeups", Counter, Ull, UserBasic, waits,
            "blocking waits ended by an event rather than a timeout, per source", per_source(|s| s.wakeups)),
        Pvar::new("pioman_blocked_time", Timer, Double, UserBasic, waits,
            "time contexts spent asleep in the sources' blocking waits, summed over contexts, in seconds",
            |_| Value::Double(pioman_stats().map_or(0.0, |s| s.blocked_ns as f64 * 1e-9))),
    ]);

    let policies = r.enum_index("pioman_policy").expect("settings added first");
    let names = r.enums[policies].clone();
    r.pvars.push(
        Pvar::new(
            "pioman_policy",
            State,
            Type::Int,
            UserBasic,
            waits,
            "the policy pioman runs now (it changes when PIOMAN_POLICY is written); -1 without a runtime",
            move |_| {
                let name = runtime::nmad().map(|nm| nm.pioman().policy_name());
                Value::Int(name.and_then(|n| names.value_of(&n)).map_or(-1, i64::from))
            },
        )
        .with_enum(policies),
    );

    let flow = "nmad_flow_control";
    let drivers = "nmad_drivers";
    let n = "nmad";
    r.pvars.extend([
        Pvar::new(
            "nmad_unexpected_bytes",
            Level,
            Ull,
            UserBasic,
            flow,
            "memory held now by messages that arrived before their receive",
            nmad_stat(|s| s.unexpected_bytes),
        ),
        Pvar::new(
            "nmad_unexpected_bytes_peak",
            HighWatermark,
            Ull,
            UserBasic,
            flow,
            "the most memory unexpected messages held at once",
            nmad_stat(|s| s.peak_unexpected_bytes),
        ),
        Pvar::new(
            "nmad_unexpected_budget",
            Size,
            Ull,
            TunerBasic,
            flow,
            "memory the unexpected budget allows in all (credit granted to peers and rendezvous descriptors)",
            nmad_stat(|s| s.budget),
        ),
        Pvar::new(
            "nmad_unexpected_messages",
            Counter,
            Ull,
            UserBasic,
            flow,
            "messages that arrived before their receive was posted",
            nmad_stat(|s| s.unexpected_messages),
        ),
        Pvar::new(
            "nmad_credit_stalls",
            Counter,
            Ull,
            TunerBasic,
            flow,
            "times sends to a peer had to wait: no eager credit nor rendezvous slot left",
            nmad_stat(|s| s.credit_stalls),
        ),
        Pvar::new(
            "nmad_eager_sent",
            Counter,
            Ull,
            UserBasic,
            n,
            "messages sent eagerly (data with the header)",
            nmad_stat(|s| s.eager_sent),
        ),
        Pvar::new(
            "nmad_rendezvous_sent",
            Counter,
            Ull,
            UserBasic,
            n,
            "messages sent by rendezvous (too large for the eager limit, or no credit)",
            nmad_stat(|s| s.rendezvous_sent),
        ),
        Pvar::new(
            "nmad_rendezvous_written",
            Counter,
            Ull,
            UserBasic,
            n,
            "rendezvous received whose sender wrote the data (matched while this rank computed)",
            nmad_stat(|s| s.rendezvous_written),
        ),
        Pvar::new(
            "nmad_packets_sent",
            Counter,
            Ull,
            TunerBasic,
            n,
            "packets sent, all drivers",
            nmad_stat(|s| s.packets),
        ),
        Pvar::new(
            "nmad_chunks_sent",
            Counter,
            Ull,
            TunerDetail,
            n,
            "chunks (messages and control) the packets carried: chunks / packets is the aggregation",
            nmad_stat(|s| s.chunks),
        ),
    ]);
    for d in ["self", "shm", "tcp", "udp"] {
        r.pvars.extend([
            Pvar::new(
                &format!("nmad_{d}_packets_sent"),
                Counter,
                Ull,
                TunerBasic,
                drivers,
                &format!("packets and rendezvous data pieces the {d} driver sent (0 when not started)"),
                driver(d, |s| s.packets),
            ),
            Pvar::new(
                &format!("nmad_{d}_bytes_sent"),
                Counter,
                Ull,
                TunerBasic,
                drivers,
                &format!("bytes the {d} driver sent, headers included (0 when not started)"),
                driver(d, |s| s.bytes),
            ),
            Pvar::new(
                &format!("nmad_{d}_bytes_received"),
                Counter,
                Ull,
                TunerBasic,
                drivers,
                &format!("bytes the {d} driver brought in, rendezvous data read from the sender included"),
                driver(d, |s| s.bytes_received),
            ),
        ]);
    }
    let udp_protocol: [(&str, Class, &str, UdpFigure); 8] = [
        (
            "retransmits",
            Counter,
            "units the udp driver sent again (after a NACK, a loss or a probe timeout)",
            |s| s.retransmits,
        ),
        ("timeouts", Counter, "probe timeouts of the udp driver that expired (no ACK within the RTO)", |s| {
            s.timeouts
        }),
        ("nacks_sent", Counter, "ACKs the udp driver sent that showed a hole (PM/UDP's NACK)", |s| {
            s.nacks_sent
        }),
        ("nacks_received", Counter, "ACKs the udp driver received that showed a hole", |s| s.nacks_received),
        ("acks_sent", Counter, "ACKs the udp driver sent alone (not carried by data)", |s| s.acks_sent),
        ("duplicates", Counter, "units that arrived twice (or beyond the window) and were dropped", |s| {
            s.duplicates + s.beyond_window
        }),
        ("rtt_us", Level, "the last round trip the udp driver measured, in microseconds", |s| s.rtt_us),
        ("cwnd", Level, "the congestion window the udp driver last set, in datagrams", |s| s.cwnd),
    ];
    for (name, class, what, f) in udp_protocol {
        r.pvars.push(Pvar::new(&format!("nmad_udp_{name}"), class, Ull, TunerBasic, drivers, what, udp(f)));
    }
    r.pvars.push(
        Pvar::new(
            "madmpi_comm_unexpected_messages",
            Level,
            Ull,
            UserBasic,
            "madmpi_communicators",
            "messages of a communicator that arrived before their receive and wait to be matched",
            |b| {
                Value::Uint(match b {
                    Bound::Comm(c) => c.session().unexpected_len() as u64,
                    Bound::Nothing => 0,
                })
            },
        )
        .bound_to(Bind::Comm),
    );
}
