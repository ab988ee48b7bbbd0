//! The `shm` driver: the conformance suite (with and without cross-memory attach), strangers,
//! segments, and real peer processes (cross-process reads, a peer killed with SIGKILL).

use nmad::drivers::conformance::Pair;
use nmad::drivers::shm::{ShmDriver, ShmOptions};
use nmad::drivers::{Driver, DriverEnv, node_id};
use std::sync::Arc;
use tools::secret::JobKey;

fn env(rank: u32, key: &JobKey) -> DriverEnv {
    DriverEnv { rank, size: 2, job_key: key.clone(), node: node_id() }
}

fn pair(opts: ShmOptions) -> Pair {
    let key = JobKey::generate().unwrap();
    let a: Arc<dyn Driver> = ShmDriver::with_options(&env(0, &key), opts.clone()).unwrap();
    let b: Arc<dyn Driver> = ShmDriver::with_options(&env(1, &key), opts).unwrap();
    Pair { a, b, a_rank: 0, b_rank: 1 }
}

mod with_cma {
    use super::*;
    fn make() -> Pair {
        pair(ShmOptions::default())
    }
    nmad::driver_conformance_tests!(make);
}

mod without_cma {
    use super::*;
    fn make() -> Pair {
        pair(ShmOptions { cma: false, ..ShmOptions::default() })
    }
    nmad::driver_conformance_tests!(make);
}
