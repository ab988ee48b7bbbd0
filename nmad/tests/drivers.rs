//! The driver conformance suite over every driver.

use nmad::drivers::conformance::Pair;
use nmad::drivers::{DriverEnv, by_spec, node_id};

fn env(rank: u32) -> DriverEnv {
    DriverEnv {
        rank,
        size: 2,
        job_key: tools::secret::JobKey::generate().unwrap(),
        node: node_id(),
        single_node: false,
    }
}

mod self_driver {
    use super::*;
    fn make() -> Pair {
        let d = by_spec("self", &env(0)).unwrap();
        Pair { a: d.clone(), b: d, a_rank: 0, b_rank: 0 }
    }
    nmad::driver_conformance_tests!(make);

    #[test]
    fn reaches_only_itself() {
        let (a, b) = (by_spec("self", &env(0)).unwrap(), by_spec("self", &env(0)).unwrap());
        assert!(!a.reaches(&b.card()), "another core instance is not `self`");
        assert!(a.connect(1, &a.card()).is_err(), "another rank is not `self`");
    }
}
