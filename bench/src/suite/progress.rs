//! The progress indicator on standard error: which step of how many, what runs now, the time
//! elapsed. On a terminal one line is rewritten; otherwise every step is a line (logs stay
//! readable).

use std::io::{IsTerminal, Write};
use std::time::Instant;

pub struct Progress {
    start: Instant,
    steps: usize,
    done: usize,
    tty: bool,
    quiet: bool,
}

impl Progress {
    pub fn new(steps: usize, quiet: bool) -> Progress {
        Progress { start: Instant::now(), steps, done: 0, tty: std::io::stderr().is_terminal(), quiet }
    }

    /// A step begins.
    pub fn step(&mut self, what: &str) {
        self.done += 1;
        self.note(what);
    }

    /// A message within the current step.
    pub fn note(&mut self, what: &str) {
        if self.quiet {
            return;
        }
        let line = format!(
            "[{:>3}/{} {:>4.0} s] {what}",
            self.done.min(self.steps),
            self.steps,
            self.start.elapsed().as_secs_f64()
        );
        let mut e = std::io::stderr().lock();
        if self.tty {
            let _ = write!(e, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(e, "{line}");
        }
        let _ = e.flush();
    }

    /// Ends the indicator's line before a table is printed.
    pub fn clear(&mut self) {
        if self.tty && !self.quiet {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }

    /// A problem worth a line of its own.
    pub fn warn(&mut self, what: &str) {
        self.clear();
        eprintln!("madbench: {what}");
    }

    pub fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}
