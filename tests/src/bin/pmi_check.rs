//! A job member for launcher tests: each rank puts a value, fences, and reads everyone's; it also
//! checks the job key. Options make one rank misbehave (for failure-handling tests):
//! `--exit R CODE` (rank R exits with CODE after the fence), `--kill R` (rank R kills itself with
//! SIGKILL), `--abort R` (rank R calls PMI abort), `--stranger` (rank 0 connects to PMI_PORT without
//! the key first), `--echo` (rank 0 copies its stdin to stdout), `--hang R` (rank R sleeps forever),
//! `--exit-before-init R` (rank R, as `PMI_RANK` says, exits 0 before speaking PMI).
//! `--names` checks the launcher's name service (rank 0 publishes, everyone looks up, a second
//! publisher is refused, rank 0 unpublishes, the name is gone).

use std::io::Read;
use tools::pmi::{self, Pmi};

fn arg_pair(args: &[String], flag: &str) -> Option<(u32, i32)> {
    let i = args.iter().position(|a| a == flag)?;
    Some((args.get(i + 1)?.parse().ok()?, args.get(i + 2).and_then(|v| v.parse().ok()).unwrap_or(0)))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some((r, _)) = arg_pair(&args, "--exit-before-init")
        && std::env::var("PMI_RANK").is_ok_and(|v| v == r.to_string())
    {
        std::process::exit(0);
    }
    let mut p = Pmi::init().unwrap_or_else(|e| {
        eprintln!("pmi_check: {e}");
        std::process::exit(2)
    });
    let (rank, size) = (p.rank(), p.size());
    if args.iter().any(|a| a == "--stranger")
        && rank == 0
        && let Ok(port) = std::env::var("PMI_PORT")
    {
        {
            use std::io::Write;
            let mut s = std::net::TcpStream::connect(port.trim()).expect("connect as a stranger");
            let _ = s.write_all(b"cmd=init pmi_version=1 pmi_subversion=1\n");
            let mut buf = [0u8; 64];
            s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
            let n = s.read(&mut buf).unwrap_or(0);
            println!("stranger got {n} bytes");
        }
    }
    let key = pmi::job_key(&mut p).unwrap_or_else(|e| {
        eprintln!("pmi_check: job key: {e}");
        std::process::exit(2)
    });
    p.put(&format!("rank-{rank}"), &format!("value-{rank}-of-{size}")).unwrap();
    p.put(&format!("key-{rank}"), &key.to_hex()[..16]).unwrap();
    p.fence().unwrap();
    for r in 0..size {
        let v = p.get(&format!("rank-{r}")).unwrap();
        assert_eq!(
            v.as_deref(),
            Some(format!("value-{r}-of-{size}").as_str()),
            "rank {rank} reading rank {r}"
        );
        let k = p.get(&format!("key-{r}")).unwrap();
        assert_eq!(k.as_deref(), Some(&key.to_hex()[..16]), "rank {r} has another job key");
    }
    assert_eq!(p.get("no-such-key").unwrap(), None);
    if let Some((r, code)) = arg_pair(&args, "--exit")
        && r == rank
    {
        std::process::exit(code);
    }
    if let Some((r, _)) = arg_pair(&args, "--kill")
        && r == rank
    {
        // SAFETY: raise has no preconditions; SIGKILL ends the process here.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    if let Some((r, _)) = arg_pair(&args, "--hang")
        && r == rank
    {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
    }
    if let Some((r, code)) = arg_pair(&args, "--abort")
        && r == rank
    {
        let e = p.abort(if code == 0 { 7 } else { code }, "pmi_check aborts on purpose");
        eprintln!("pmi_check: abort failed: {e}");
        std::process::exit(3);
    }
    if args.iter().any(|a| a == "--echo") && rank == 0 {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).unwrap();
        print!("echo:{s}");
    }
    if args.iter().any(|a| a == "--names") {
        check_names(&mut p);
    }
    p.fence().unwrap();
    let kind = p.kind();
    p.finalize().unwrap();
    let net = std::fs::read_link("/proc/self/ns/net").map(|p| p.display().to_string()).unwrap_or_default();
    println!("rank {rank}/{size} ok ({kind:?}) {net}");
}

/// The name service, seen from every rank (fences order the steps).
fn check_names(p: &mut Pmi) {
    use tools::pmi::names::NameError;
    let (rank, size) = (p.rank(), p.size());
    let service = "pmi-check-service";
    if rank == 0 {
        p.publish_name(service, "port-of-rank-0").unwrap();
    }
    p.fence().unwrap();
    assert_eq!(p.lookup_name(service).unwrap(), "port-of-rank-0", "rank {rank}");
    if rank == size - 1 {
        let taken = p.publish_name(service, "another-port");
        assert!(matches!(taken, Err(NameError::Refused(_))), "a published name is taken: {taken:?}");
    }
    p.fence().unwrap();
    if rank == 0 {
        p.unpublish_name(service).unwrap();
    }
    p.fence().unwrap();
    let gone = p.lookup_name(service);
    assert!(matches!(gone, Err(NameError::Refused(_))), "rank {rank}: unpublished, yet {gone:?}");
    println!("rank {rank}: names ok");
}
