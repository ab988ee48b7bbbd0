use super::*;
use crate::error::ErrorClass;
use crate::testing::on_all;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

/// Callbacks that count their calls; `query` sets the tag to 7 and fails with `query_error`.
#[derive(Default)]
struct Counted {
    query: AtomicU32,
    free: AtomicU32,
    cancel: AtomicU32,
    cancel_complete: AtomicU32,
    polls: AtomicU32,
    /// With a poll callback: the request completes itself at this poll.
    complete_at_poll: Option<u32>,
    query_error: Option<ErrorClass>,
    me: std::sync::OnceLock<std::sync::Weak<Generalized>>,
}

struct Shared(Arc<Counted>);

impl Callbacks for Shared {
    fn query(&self, status: &mut Status) -> Result<()> {
        self.0.query.fetch_add(1, SeqCst);
        status.tag = 7;
        self.0.query_error.map_or(Ok(()), |c| Err(Error::new(c, "from query")))
    }
    fn free(&self) -> Result<()> {
        self.0.free.fetch_add(1, SeqCst);
        Ok(())
    }
    fn cancel(&self, complete: bool) -> Result<()> {
        self.0.cancel.fetch_add(1, SeqCst);
        self.0.cancel_complete.fetch_add(u32::from(complete), SeqCst);
        Ok(())
    }
    fn polls(&self) -> bool {
        self.0.complete_at_poll.is_some()
    }
    fn poll(&self, _status: &mut Status) -> Option<Result<()>> {
        let at = self.0.complete_at_poll?;
        if self.0.polls.fetch_add(1, SeqCst) + 1 == at {
            let me = self.0.me.get().and_then(std::sync::Weak::upgrade).expect("set");
            me.complete().unwrap();
        }
        Some(Ok(()))
    }
}

fn counted(c: Counted) -> (Arc<Counted>, Arc<Generalized>) {
    let c = Arc::new(c);
    let g = Arc::new(Generalized::new(Box::new(Shared(c.clone()))));
    c.me.set(Arc::downgrade(&g)).unwrap();
    (c, g)
}

#[test]
fn completed_by_another_thread_while_waiting_then_queried_and_freed_once() {
    on_all(1, |w| {
        let pio = w.runtime_nmad().pioman();
        let (c, g) = counted(Counted::default());
        assert!(!g.is_complete());
        let g2 = g.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            assert!(!g2.complete().unwrap(), "not freed by the program: the wait frees it");
        });
        g.wait(pio);
        assert!(g.is_complete());
        t.join().unwrap();
        g.cancel().unwrap();
        assert_eq!(c.cancel_complete.load(SeqCst), 1);
        let mut st = Status::default();
        g.report(&mut st, false).unwrap();
        g.report(&mut st, true).unwrap();
        assert_eq!((st.tag, st.source), (7, abi::MPI_UNDEFINED));
        assert_eq!((c.query.load(SeqCst), c.free.load(SeqCst)), (2, 1));
        assert!(!g.complete().unwrap(), "completing again does nothing");
        assert_eq!(c.free.load(SeqCst), 1);
    });
}

#[test]
fn freed_before_completion_frees_at_completion() {
    let (c, g) = counted(Counted::default());
    g.cancel().unwrap();
    assert_eq!((c.cancel.load(SeqCst), c.cancel_complete.load(SeqCst)), (1, 0));
    assert!(g.release().is_none(), "still running: it stays");
    assert_eq!(c.free.load(SeqCst), 0);
    assert!(g.complete().unwrap(), "completion frees it");
    assert_eq!((c.free.load(SeqCst), c.query.load(SeqCst)), (1, 0));
    // Freed after completion: at the free.
    let (c, g) = counted(Counted::default());
    g.complete().unwrap();
    assert!(matches!(g.release(), Some(Ok(()))));
    assert_eq!(c.free.load(SeqCst), 1);
}

#[test]
fn query_errors_are_the_request_errors_and_polls_drive_completion() {
    on_all(1, |w| {
        let pio = w.runtime_nmad().pioman();
        let (c, g) = counted(Counted {
            complete_at_poll: Some(100),
            query_error: Some(ErrorClass::Tag),
            ..Default::default()
        });
        g.poke();
        assert_eq!(c.polls.load(SeqCst), 1);
        g.wait(pio);
        assert_eq!(c.polls.load(SeqCst), 100, "polled until it completed itself");
        let mut st = Status::default();
        assert_eq!(g.report(&mut st, true).unwrap_err().class(), ErrorClass::Tag);
        assert_eq!(c.free.load(SeqCst), 1, "freed even when the query failed");
        g.poke();
        assert_eq!(c.polls.load(SeqCst), 100, "no poll once complete");
    });
}

/// A wait on several generalized requests sleeps on its own condition, which the one another
/// thread completes signals (the others stay incomplete, and their watch ends with the wait).
#[test]
fn a_wait_on_several_is_woken_by_the_one_another_thread_completes() {
    use crate::request::RawRequest;
    on_all(1, |w| {
        let counted: Vec<_> = (0..3).map(|_| Arc::new(Counted::default())).collect();
        let reqs: Vec<RawRequest> = counted
            .iter()
            .map(|c| RawRequest::generalized_on(&w, Generalized::new(Box::new(Shared(c.clone())))))
            .collect();
        let refs: Vec<&RawRequest> = reqs.iter().collect();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                reqs[1].generalized().unwrap().complete().unwrap();
            });
            let t0 = std::time::Instant::now();
            crate::request::completion::wait_any_complete(&refs);
            assert!(t0.elapsed() >= Duration::from_millis(90));
        });
        assert!(reqs[1].is_complete() && !reqs[0].is_complete() && !reqs[2].is_complete());
        let g = reqs[0].generalized().unwrap();
        assert!(g.life().watchers.is_empty(), "unwatched when the wait ended");
        g.complete().unwrap();
        assert_eq!(counted.iter().map(|c| c.query.load(SeqCst)).sum::<u32>(), 0, "waits do not query");
    });
}
