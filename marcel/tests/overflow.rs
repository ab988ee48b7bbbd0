//! A user thread that overflows its stack ends the process with a clear message (checked in a
//! child process), never silent corruption.

use std::process::Command;

const MODE: &str = "MARCEL_TEST_OVERFLOW_CHILD";

#[inline(never)]
#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let buf = [depth as u8; 512];
    std::hint::black_box(&buf);
    recurse(depth + 1) + std::hint::black_box(buf[7]) as u64
}

#[test]
fn stack_overflow_is_reported_and_aborts() {
    if std::env::var_os(MODE).is_some() {
        let rt = marcel::Runtime::builder().lwps(1).stack_size(64 << 10).ignore_env().build().unwrap();
        rt.block_on(|| {
            marcel::thread::Builder::new().name("deep").spawn(|| recurse(0)).join().unwrap();
        });
        unreachable!("the overflow must end the process");
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "stack_overflow_is_reported_and_aborts", "--nocapture"])
        .env(MODE, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "status {:?}, stderr:\n{stderr}", out.status);
    assert!(stderr.contains("marcel: stack overflow in user thread"), "{stderr}");
    assert!(stderr.contains("\"deep\""), "{stderr}");
    assert!(stderr.contains("MARCEL_STACK_SIZE"), "{stderr}");
}
