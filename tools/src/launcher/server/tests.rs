//! Unit tests of the PMI server: Hydra's replies, PMI-2 framing, the barrier, and robustness to
//! malformed, oversized and truncated input.

use super::*;
use crate::pmi::wire::{MAX_MESSAGE, parse_v1, parse_v2_body};

fn server(n: usize, remote: bool) -> Server {
    let mut s = Server::new("kvs_test", vec![remote; n]);
    s.preload(crate::launcher::JOB_KEY_NAME, "00ff");
    s
}

fn take(s: &mut Server, id: ConnId) -> String {
    String::from_utf8(std::mem::take(s.output(id).unwrap())).unwrap()
}

fn v2_replies(s: &mut Server, id: ConnId) -> Vec<Message> {
    let bytes = std::mem::take(s.output(id).unwrap());
    let mut d = Decoder::new();
    d.framing = Framing::V2;
    d.feed(&bytes);
    std::iter::from_fn(|| d.next_message().unwrap()).collect()
}

fn malformed(r: Handled) -> (Option<u32>, String) {
    match r {
        Err(Event::Malformed { rank, err, .. }) => (rank, err.to_string()),
        other => panic!("expected a malformed-request event, got {other:?}"),
    }
}

#[test]
fn pmi1_session_matches_hydra() {
    let mut s = server(2, false);
    let (a, b) = (s.add_conn(Some(0), "local".into()), s.add_conn(Some(1), "local".into()));
    s.input(a, b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\ncmd=get_appnum\n").unwrap();
    assert_eq!(
        take(&mut s, a),
        "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n\
         cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\ncmd=appnum appnum=0\n"
    );
    assert!(s.inited(0) && !s.inited(1));
    s.input(a, b"cmd=get_my_kvsname\ncmd=put kvsname=kvs_test key=k0 value=v0\n").unwrap();
    assert_eq!(take(&mut s, a), "cmd=my_kvsname kvsname=kvs_test\ncmd=put_result rc=0 msg=success\n");
    s.input(a, b"cmd=barrier_in\n").unwrap();
    assert_eq!(take(&mut s, a), "", "waits for rank 1");
    s.input(b, b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=barrier_in\n").unwrap();
    assert_eq!(take(&mut s, a), "cmd=barrier_out\n");
    assert!(take(&mut s, b).ends_with("cmd=barrier_out\n"));
    s.input(b, b"cmd=get kvsname=kvs_test key=k0\ncmd=get kvsname=kvs_test key=nope\n").unwrap();
    assert_eq!(
        take(&mut s, b),
        "cmd=get_result rc=0 msg=success value=v0\ncmd=get_result rc=-1 msg=key_nope_not_found value=unknown\n"
    );
    s.input(b, b"cmd=get kvsname=kvs_test key=PM2_JOB_KEY\ncmd=finalize\n").unwrap();
    assert_eq!(take(&mut s, b), "cmd=get_result rc=0 msg=success value=00ff\ncmd=finalize_ack\n");
    assert!(s.finalized(1) && !s.finalized(0));
}

#[test]
fn put_errors_are_replies_not_failures() {
    let mut s = server(1, false);
    let a = s.add_conn(Some(0), "local".into());
    for (req, msg) in [
        ("cmd=put kvsname=other key=k value=v\n", "unknown_kvsname"),
        ("cmd=put kvsname=kvs_test key=PM2_JOB_KEY value=v\n", "reserved_key"),
        ("cmd=put kvsname=kvs_test key=k value=a;b\n", "invalid_value"),
    ] {
        s.input(a, req.as_bytes()).unwrap();
        assert_eq!(take(&mut s, a), format!("cmd=put_result rc=-1 msg={msg}\n"));
    }
    let long = format!("cmd=put kvsname=kvs_test key=k value={}\n", "x".repeat(VALLEN_MAX + 1));
    s.input(a, long.as_bytes()).unwrap();
    assert_eq!(take(&mut s, a), "cmd=put_result rc=-1 msg=invalid_value\n");
}

#[test]
fn pmi2_switches_framing_after_init() {
    let mut s = server(1, false);
    let a = s.add_conn(Some(0), "local".into());
    let mut req = b"cmd=init pmi_version=2 pmi_subversion=0\n".to_vec();
    req.extend(Message::new("fullinit").with("pmirank", 0).encode_v2());
    s.input(a, &req).unwrap();
    let out = std::mem::take(s.output(a).unwrap());
    let line_end = out.iter().position(|&c| c == b'\n').unwrap();
    let init = parse_v1(&out[..=line_end]).unwrap();
    assert_eq!(init.encode_v1(), "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n");
    let full = parse_v2_body(&out[line_end + 7..]).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&full.encode_v2()[6..]),
        "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=0;size=1;appnum=0;debugged=FALSE;pmiverbose=FALSE;"
    );
    let mut req = Vec::new();
    for m in [
        Message::new("job-getid"),
        Message::new("kvs-put").with("key", "k").with("value", "v"),
        Message::new("kvs-fence"),
        Message::new("kvs-get").with("jobid", "kvs_test").with("srcid", -1).with("key", "k"),
        Message::new("kvs-get").with("jobid", "kvs_test").with("srcid", -1).with("key", "nope"),
        Message::new("finalize"),
    ] {
        req.extend(m.encode_v2());
    }
    // Byte by byte: the decoder must reassemble.
    for b in &req {
        s.input(a, std::slice::from_ref(b)).unwrap();
    }
    let r = v2_replies(&mut s, a);
    let cmds: Vec<&str> = r.iter().map(|m| m.cmd.as_str()).collect();
    assert_eq!(
        cmds,
        [
            "job-getid-response",
            "kvs-put-response",
            "kvs-fence-response",
            "kvs-get-response",
            "kvs-get-response",
            "finalize-response"
        ]
    );
    assert_eq!(r[0].get("jobid"), Some("kvs_test"));
    assert_eq!((r[3].get("found"), r[3].get("value")), (Some("TRUE"), Some("v")));
    assert_eq!(r[4].get("found"), Some("FALSE"));
    assert!(s.finalized(0));
}

#[test]
fn tcp_connections_identify_with_initack_or_fullinit() {
    let mut s = server(3, true);
    let a = s.add_conn(None, "10.0.0.1:5".into());
    s.input(a, b"cmd=initack pmiid=2\n").unwrap();
    assert_eq!(take(&mut s, a), "cmd=initack\ncmd=set size=3\ncmd=set rank=2\ncmd=set debug=0\n");
    assert_eq!(s.conn_of(2), Some(a));
    let b = s.add_conn(None, "10.0.0.1:6".into());
    let mut req = b"cmd=init pmi_version=2 pmi_subversion=0\n".to_vec();
    req.extend(Message::new("fullinit").with("pmirank", 1).encode_v2());
    s.input(b, &req).unwrap();
    assert_eq!(s.conn_of(1), Some(b));
    // Taken, out of range, or not said at all.
    let c = s.add_conn(None, "10.0.0.1:7".into());
    assert!(malformed(s.input(c, b"cmd=initack pmiid=2\n")).1.contains("already connected"));
    assert!(malformed(s.input(c, b"cmd=initack pmiid=3\n")).1.contains("out of range"));
    let (rank, e) = malformed(s.input(c, b"cmd=get_maxes\n"));
    assert_eq!(rank, None);
    assert!(e.contains("before initack") && e.contains("cmd=get_maxes"), "{e}");
}

#[test]
fn local_ranks_cannot_claim_another_rank() {
    let mut s = server(2, false);
    let a = s.add_conn(Some(0), "local".into());
    assert!(malformed(s.input(a, b"cmd=initack pmiid=1\n")).1.contains("rank 0 claims to be rank 1"));
    let t = s.add_conn(None, "tcp".into());
    assert!(malformed(s.input(t, b"cmd=initack pmiid=1\n")).1.contains("not a remote rank"));
}

#[test]
fn abort_is_an_event_with_its_code_and_message() {
    let mut s = server(1, false);
    let a = s.add_conn(Some(0), "local".into());
    let e = s.input(a, b"cmd=abort exitcode=7 message=pmi_check_aborts_on_purpose\n");
    assert_eq!(e, Err(Event::Abort { rank: 0, code: 7, message: "pmi_check_aborts_on_purpose".into() }));
    let e = s.input(a, b"cmd=abort exitcode=0\n");
    assert_eq!(e, Err(Event::Abort { rank: 0, code: 1, message: String::new() }));
}

#[test]
fn malformed_input_is_reported_with_the_line_never_a_panic() {
    let cases: &[&[u8]] = &[
        b"hello world\n",
        b"cmd=put key\n",
        b"cmd=\n",
        b"\n",
        b"cmd=frobnicate\n",
        b"cmd=put kvsname=kvs_test value=v\n",
        b"cmd=init\n",
        b"cmd=init pmi_version=x\n",
        b"cmd=initack\n",
        b"cmd=barrier_in\ncmd=barrier_in\n",
        b"\xff\xfe\n",
        b"cmd=get\0key=x\n",
    ];
    for &bad in cases {
        let mut s = server(2, false);
        let a = s.add_conn(Some(1), "local".into());
        let (rank, e) = malformed(s.input(a, bad));
        assert_eq!(rank, Some(1), "{e}");
        assert!(!e.is_empty());
    }
    let mut s = server(1, false);
    let a = s.add_conn(Some(0), "local".into());
    let (_, e) = malformed(s.input(a, b"hello world\n"));
    assert!(e.contains("\"hello world\\n\""), "quotes the line: {e}");
    // Oversized: no newline within the limit.
    let a = s.add_conn(Some(0), "local".into());
    let mut res = Ok(());
    for _ in 0..(MAX_MESSAGE / 4096 + 2) {
        res = s.input(a, &[b'x'; 4096]);
        if res.is_err() {
            break;
        }
    }
    assert!(malformed(res).1.contains("no newline"));
    // PMI-2 garbage length, and a bad v2 body.
    for bad in [&b"abcdefcmd=x;"[..], b"000000", b"5     cmd=;;"] {
        let a = s.add_conn(Some(0), "local".into());
        s.input(a, b"cmd=init pmi_version=2 pmi_subversion=0\n").unwrap();
        malformed(s.input(a, bad));
    }
}

#[test]
fn truncated_requests_are_reported_at_eof_only_when_asked() {
    let mut s = server(1, false);
    let a = s.add_conn(Some(0), "local".into());
    s.input(a, b"cmd=get_ma").unwrap();
    assert!(malformed(s.eof(a, true)).1.contains("truncated"));
    assert_eq!(s.conn_of(0), None);
    let a = s.add_conn(Some(0), "local".into());
    s.input(a, b"cmd=get_ma").unwrap();
    assert_eq!(s.eof(a, false), Ok(()));
}

#[test]
fn a_closed_connection_leaves_the_barrier() {
    let mut s = server(2, false);
    let (a, b) = (s.add_conn(Some(0), "local".into()), s.add_conn(Some(1), "local".into()));
    s.input(a, b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=barrier_in\n").unwrap();
    s.remove(a);
    let a2 = s.add_conn(Some(0), "local".into());
    s.input(b, b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=barrier_in\n").unwrap();
    assert!(!take(&mut s, b).contains("barrier_out"));
    s.input(a2, b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=barrier_in\n").unwrap();
    assert!(take(&mut s, b).contains("barrier_out"));
}

/// A rank that gave up its finalize fence on a failure notice and finalized among the survivors
/// is out of that barrier: another survivor that exits first does not block it.
#[test]
fn a_finalized_rank_leaves_the_barrier_it_abandoned() {
    let mut s = server(3, false);
    let ids: Vec<ConnId> = (0..3).map(|r| s.add_conn(Some(r), "local".into())).collect();
    for &id in &ids {
        s.input(id, b"cmd=init pmi_version=1 pmi_subversion=1\n").unwrap();
        take(&mut s, id);
    }
    s.mark_dead(2);
    s.input(ids[1], b"cmd=barrier_in\n").unwrap();
    s.input(ids[1], b"cmd=finalize\n").unwrap();
    s.input(ids[0], b"cmd=finalize\n").unwrap();
    s.remove(ids[0]);
    s.exited(0);
    assert_eq!(s.blocked_barrier(), None, "rank 1 left the barrier when it finalized");
}

/// `-disable-auto-cleanup`: a dead rank no longer holds barriers up, whether it died before or
/// while the others wait, and `PMI_dead_processes` lists it.
#[test]
fn barriers_complete_without_dead_ranks() {
    let mut s = server(3, false);
    let ids: Vec<ConnId> = (0..3).map(|r| s.add_conn(Some(r), "local".into())).collect();
    for &id in &ids {
        s.input(id, b"cmd=init pmi_version=1 pmi_subversion=1\n").unwrap();
        take(&mut s, id);
    }
    s.input(ids[0], b"cmd=barrier_in\n").unwrap();
    s.input(ids[2], b"cmd=barrier_in\n").unwrap();
    assert_eq!(take(&mut s, ids[0]), "", "waits for rank 1");
    s.mark_dead(1);
    assert_eq!(take(&mut s, ids[0]), "cmd=barrier_out\n", "released by rank 1's death");
    assert_eq!(take(&mut s, ids[2]), "cmd=barrier_out\n");
    s.input(ids[2], b"cmd=barrier_in\n").unwrap();
    assert_eq!(take(&mut s, ids[2]), "", "waits for rank 0");
    s.input(ids[0], b"cmd=barrier_in\ncmd=get kvsname=kvs_test key=PMI_dead_processes\n").unwrap();
    assert_eq!(take(&mut s, ids[0]), "cmd=barrier_out\ncmd=get_result rc=0 msg=success value=1\n");
    assert_eq!(take(&mut s, ids[2]), "cmd=barrier_out\n");
    s.mark_dead(0);
    s.input(ids[2], b"cmd=barrier_in\n").unwrap();
    assert_eq!(take(&mut s, ids[2]), "cmd=barrier_out\n", "alone now");
}

/// A rank that exits (before speaking PMI, or after finalizing) blocks a barrier of its job only
/// once someone waits in it (before: nothing to report; programs that never speak PMI just run).
#[test]
fn a_rank_gone_blocks_barriers_of_its_job() {
    let mut s = server(3, false);
    let ids: Vec<ConnId> = (0..3).map(|r| s.add_conn(Some(r), "local".into())).collect();
    s.remove(ids[1]);
    s.exited(1);
    assert_eq!(s.blocked_barrier(), None, "nobody waits");
    s.input(ids[2], b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=barrier_in\n").unwrap();
    assert_eq!(s.blocked_barrier(), Some((1, 2)));
    s.mark_dead(1);
    assert_eq!(s.blocked_barrier(), None, "a dead rank no longer counts");
    // Rank 0 finalizes without the barrier, and exits: rank 2 still waits for it.
    s.input(ids[0], b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=finalize\n").unwrap();
    assert_eq!(s.blocked_barrier(), None, "rank 0 may still enter");
    s.eof(ids[0], true).unwrap();
    s.exited(0);
    assert_eq!(s.blocked_barrier(), Some((0, 2)));
}

/// Puts beyond the store's bounds get a PMI error, and one notice names the rank.
#[test]
fn a_full_store_refuses_puts_and_names_the_rank_once() {
    let mut s = server(2, false);
    let ids: Vec<ConnId> = (0..2).map(|r| s.add_conn(Some(r), "local".into())).collect();
    s.input(ids[1], b"cmd=init pmi_version=1 pmi_subversion=1\n").unwrap();
    take(&mut s, ids[1]);
    for i in 0..kvs::ENTRIES_MAX - 1 {
        s.input(ids[1], format!("cmd=put kvsname=kvs_test key=k{i} value=v\n").as_bytes()).unwrap();
        take(&mut s, ids[1]);
    }
    assert!(s.take_notices().is_empty());
    s.input(ids[1], b"cmd=put kvsname=kvs_test key=x value=v\ncmd=put kvsname=kvs_test key=y value=v\n")
        .unwrap();
    assert_eq!(
        take(&mut s, ids[1]),
        "cmd=put_result rc=-1 msg=kvs_full_too_many_entries\n".repeat(2),
        "the job key took one entry"
    );
    let notices = s.take_notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0].0, 1);
    assert!(notices[0].1.contains("key-value store is full"), "{notices:?}");
    // Gets still work.
    s.input(ids[0], b"cmd=get kvsname=kvs_test key=k7\n").unwrap();
    assert_eq!(take(&mut s, ids[0]), "cmd=get_result rc=0 msg=success value=v\n");
}
