//! The job's standard streams: ranks' stdout/stderr forwarded to madrun's (whole lines prefixed
//! `[R] ` with `--tag-output`), madrun's stdin forwarded to rank 0, and the non-blocking
//! descriptor helpers the event loop uses.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};

/// Longest partial line kept when tagging (a longer one is cut into several tagged lines).
const MAX_LINE: usize = 64 * 1024;
/// Most stdin bytes buffered for rank 0 (madrun stops reading its stdin beyond).
const STDIN_BUFFER: usize = 64 * 1024;

pub fn set_nonblocking(fd: impl AsFd) -> io::Result<()> {
    let fd = fd.as_fd().as_raw_fd();
    // SAFETY: fcntl(F_GETFL/F_SETFL) on a descriptor the caller borrows from its owner.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl < 0 || libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// One read from a non-blocking descriptor: `Ok(None)` if nothing is available, `Ok(Some(0))`
/// at end of file.
pub fn read_some(mut f: &File, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        match f.read(buf) {
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

/// One write to a non-blocking descriptor: `Ok(0)` if it would block.
pub fn write_some(mut f: &File, data: &[u8]) -> io::Result<usize> {
    loop {
        match f.write(data) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
            Err(e) => return Err(e),
        }
    }
}

/// Copies one rank's stdout or stderr to madrun's.
#[derive(Debug)]
pub struct OutputForwarder {
    /// `[R] ` when tagging: then only whole lines are written.
    tag: Option<Vec<u8>>,
    partial: Vec<u8>,
    to_stderr: bool,
}

impl OutputForwarder {
    pub fn new(rank: u32, tag: bool, to_stderr: bool) -> OutputForwarder {
        OutputForwarder {
            tag: tag.then(|| format!("[{rank}] ").into_bytes()),
            partial: Vec::new(),
            to_stderr,
        }
    }

    /// Forwards what the rank wrote (untagged: at once; tagged: its complete lines).
    pub fn push(&mut self, data: &[u8]) {
        let out = self.tagged(data);
        self.emit(&out);
    }

    /// The rank closed the stream: a tagged last line without newline gets one.
    pub fn finish(&mut self) {
        if let Some(tag) = &self.tag
            && !self.partial.is_empty()
        {
            let mut out = tag.clone();
            out.append(&mut self.partial);
            out.push(b'\n');
            self.emit(&out);
        }
    }

    /// What to write for `data` (kept separate from the writing for tests).
    fn tagged(&mut self, data: &[u8]) -> Vec<u8> {
        let Some(tag) = &self.tag else { return data.to_vec() };
        let mut out = Vec::with_capacity(data.len() + tag.len() * 2);
        let mut rest = data;
        while let Some(i) = rest.iter().position(|&c| c == b'\n') {
            out.extend_from_slice(tag);
            out.append(&mut self.partial);
            out.extend_from_slice(&rest[..=i]);
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > MAX_LINE {
            out.extend_from_slice(tag);
            out.append(&mut self.partial);
            out.push(b'\n');
        }
        out
    }

    fn emit(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        // Errors (madrun's own output closed) are ignored: the job goes on.
        if self.to_stderr {
            let mut e = io::stderr().lock();
            let _ = e.write_all(bytes).and_then(|()| e.flush());
        } else {
            let mut o = io::stdout().lock();
            let _ = o.write_all(bytes).and_then(|()| o.flush());
        }
    }
}

/// madrun's stdin is a terminal whose foreground process group is not madrun's.
fn background_on_terminal() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp only query the process and descriptor 0.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) != libc::getpgrp() }
}

/// Copies madrun's stdin to rank 0's stdin; madrun's end of file closes rank 0's stdin.
#[derive(Debug)]
pub struct StdinForwarder {
    buf: Vec<u8>,
    /// madrun's stdin has not reached end of file.
    open: bool,
    /// Rank 0's stdin pipe (non-blocking).
    dst: Option<File>,
}

impl StdinForwarder {
    /// Forwards to `dst` (rank 0's stdin), unless madrun's stdin is the terminal and madrun
    /// runs in the background: reading it would stop madrun (SIGTTIN), so rank 0 gets EOF.
    pub fn new(dst: Option<File>) -> StdinForwarder {
        let dst = dst.filter(|_| !background_on_terminal());
        StdinForwarder { buf: Vec::new(), open: dst.is_some(), dst }
    }

    /// Poll madrun's stdin (fd 0)?
    pub fn wants_read(&self) -> bool {
        self.open && self.dst.is_some() && self.buf.len() < STDIN_BUFFER
    }

    /// Rank 0's pipe to poll for writing, if there is something to write.
    pub fn pending_dst(&self) -> Option<&File> {
        self.dst.as_ref().filter(|_| !self.buf.is_empty())
    }

    /// fd 0 is readable (or hung up). It is blocking (it may be shared with a shell), so this
    /// makes exactly one read, which poll said would not block.
    pub fn read_stdin(&mut self) {
        let mut chunk = [0u8; 16 * 1024];
        // SAFETY: reads into our local buffer, at most its length.
        let n = unsafe { libc::read(0, chunk.as_mut_ptr().cast(), chunk.len()) };
        if n > 0 {
            self.buf.extend_from_slice(&chunk[..n as usize]);
            self.write_rank();
        } else if n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            self.open = false;
            self.close_if_done();
        }
    }

    /// Writes what is buffered to rank 0 (as much as its pipe takes).
    pub fn write_rank(&mut self) {
        if let Some(dst) = &self.dst {
            match write_some(dst, &self.buf) {
                Ok(n) => {
                    self.buf.drain(..n);
                }
                Err(_) => self.close(),
            }
        }
        self.close_if_done();
    }

    /// Rank 0 is gone or the job is ending: stop forwarding.
    pub fn close(&mut self) {
        self.dst = None;
        self.open = false;
        self.buf.clear();
    }

    fn close_if_done(&mut self) {
        if !self.open && self.buf.is_empty() {
            self.dst = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagging_writes_whole_lines_only() {
        let mut f = OutputForwarder::new(3, true, false);
        assert_eq!(f.tagged(b"hel"), b"");
        assert_eq!(f.tagged(b"lo\nwor"), b"[3] hello\n");
        assert_eq!(f.tagged(b"ld\n\nx\n"), b"[3] world\n[3] \n[3] x\n");
        assert_eq!(f.tagged(b"tail"), b"");
        let big = vec![b'a'; MAX_LINE + 1];
        let out = f.tagged(&big);
        assert!(out.starts_with(b"[3] tailaaa") && out.ends_with(b"a\n"));
        let mut plain = OutputForwarder::new(0, false, false);
        assert_eq!(plain.tagged(b"as it comes"), b"as it comes");
    }
}
