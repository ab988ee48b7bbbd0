//! 100k user threads spawning, joining and contending one mutex.

use marcel::Runtime;
use marcel::sync::Mutex;
use std::sync::Arc;

#[test]
fn hundred_thousand_threads_spawn_join_and_contend() {
    let rt = Runtime::builder().ignore_env().build().unwrap();
    let m = Arc::new(Mutex::new(0u64));
    let m2 = m.clone();
    rt.block_on(move || {
        // 1000 parents each spawn 100 children and join them; every child takes the lock, some
        // hold it across a switch so that waiters really block.
        let parents: Vec<_> = (0..1000u64)
            .map(|p| {
                let m = m2.clone();
                marcel::spawn(move || {
                    let children: Vec<_> = (0..100u64)
                        .map(|c| {
                            let m = m.clone();
                            marcel::spawn(move || {
                                let mut g = m.lock();
                                *g += 1;
                                if (p + c) % 10 == 0 {
                                    marcel::yield_now();
                                }
                                drop(g);
                                p * 100 + c
                            })
                        })
                        .collect();
                    children.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
                })
            })
            .collect();
        let total: u64 = parents.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(total, (0..100_000u64).sum::<u64>());
        marcel::current(); // still alive and well
    });
    assert_eq!(*m.lock(), 100_000);
    let st = rt.handle().stats();
    assert!(st.spawned >= 101_000, "{st:?}");
    assert_eq!(st.live, 0);
}
