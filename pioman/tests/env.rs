//! Configuration through the environment, in child processes (the environment is process-wide).

use std::process::Command;

const MODE: &str = "PIOMAN_ENV_TEST_CHILD";

#[test]
fn environment_selects_the_policy_and_the_stats_file() {
    if let Ok(mode) = std::env::var(MODE) {
        match mode.as_str() {
            "policy" => {
                let p = pioman::Pioman::builder().without_marcel().build().unwrap();
                println!("policy={}", p.policy_name());
                // Leaked on purpose: its statistics must still be written at exit.
                std::mem::forget(p);
            }
            _ => match pioman::Pioman::builder().without_marcel().build() {
                Ok(_) => println!("unexpected success"),
                Err(e) => println!("error={e}"),
            },
        }
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let stats = std::env::temp_dir().join(format!("pioman-env-{}.json", std::process::id()));
    let out = Command::new(&exe)
        .args(["--exact", "environment_selects_the_policy_and_the_stats_file", "--nocapture"])
        .env(MODE, "policy")
        .env("PIOMAN_POLICY", "timer")
        .env("PIOMAN_STATS", &stats)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("policy=timer"), "{stdout}");
    let json = std::fs::read_to_string(&stats).expect("statistics written at exit");
    std::fs::remove_file(&stats).ok();
    assert!(json.contains("\"policy\": \"timer\""), "{json}");
    let out = Command::new(&exe)
        .args(["--exact", "environment_selects_the_policy_and_the_stats_file", "--nocapture"])
        .env(MODE, "bad")
        .env("PIOMAN_POLICY", "fastest")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("error=pioman: unknown policy \"fastest\""), "{stdout}");
}
