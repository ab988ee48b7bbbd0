//! `MPI_Comm_join`: two processes connected by a socket of the program's build an
//! intercommunicator of one process each.
//!
//! Each side writes one hello on the socket and reads the other's: `MMPIJOIN`, the job's
//! fingerprint (16 characters), its world rank and a random 32-bit nonce (little-endian). The
//! hello is untrusted: its length, magic, job and rank are checked (a process of another job
//! cannot be joined: `MPI_ERR_OTHER`). The two then meet as a port's roots do (`connect`), in
//! the world's session with a tag made of both nonces, and `MPI_Intercomm_create` over their
//! `MPI_COMM_SELF`s does the rest.

use super::connect::{Met, meet};
use crate::comm::Comm;
use crate::comm::tags::{Kind, tagged};
use crate::error::{Error, Result};
use std::os::fd::RawFd;

const MAGIC: &[u8; 8] = b"MMPIJOIN";
const HELLO: usize = 8 + 16 + 4 + 4;

/// `MPI_Comm_join` over `fd` (a connected stream socket), from `self_comm` (`MPI_COMM_SELF`).
pub fn join(self_comm: &Comm, fd: RawFd) -> Result<Comm> {
    let nm = self_comm.runtime_nmad();
    let (job, me) = (nm.job_id(), nm.rank());
    let mut nonce = [0u8; 4];
    tools::secret::random_bytes(&mut nonce).map_err(|e| Error::other(format!("MPI_Comm_join: {e}")))?;
    let mut hello = Vec::with_capacity(HELLO);
    hello.extend_from_slice(MAGIC);
    hello.extend_from_slice(job.as_bytes());
    hello.extend_from_slice(&me.to_le_bytes());
    hello.extend_from_slice(&nonce);
    if hello.len() != HELLO {
        return Err(Error::intern(format!("MPI_Comm_join: a job fingerprint of {} bytes", job.len())));
    }
    write_all(fd, &hello)?;
    let mut theirs = [0u8; HELLO];
    read_exact(fd, &mut theirs)?;
    if &theirs[..8] != MAGIC {
        return Err(Error::other("MPI_Comm_join: the other end of the socket is not joining"));
    }
    if &theirs[8..24] != job.as_bytes() {
        return Err(Error::other("MPI_Comm_join: the other end is a process of another job"));
    }
    let other = u32::from_le_bytes(theirs[24..28].try_into().expect("4 bytes"));
    if other >= nm.capacity() || other == me {
        return Err(Error::other(format!("MPI_Comm_join: the other end says it is rank {other}")));
    }
    let mixed = u32::from_le_bytes(nonce) ^ u32::from_le_bytes(theirs[28..32].try_into().expect("4 bytes"));
    let tag = mixed & 0x7fff_ffff;
    meet("MPI_Comm_join", self_comm, 0, Error::other, |_| {
        Ok(Met { to: other, link: tagged(Kind::Port, tag, 3), cards: tagged(Kind::Port, tag, 6) })
    })
}

fn io_err(what: &str) -> Error {
    Error::other(format!("MPI_Comm_join: {what}: {}", std::io::Error::last_os_error()))
}

fn write_all(fd: RawFd, mut buf: &[u8]) -> Result<()> {
    while !buf.is_empty() {
        // SAFETY: send reads at most `buf.len()` bytes of our buffer; MSG_NOSIGNAL keeps a
        // closed peer from killing the process with SIGPIPE. A bad fd is an error return.
        let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(io_err("writing to the socket"));
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

fn read_exact(fd: RawFd, buf: &mut [u8]) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: recv writes at most `buf.len() - done` bytes into our buffer, past `done`.
        let n = unsafe { libc::recv(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done, 0) };
        match n {
            0 => return Err(Error::other("MPI_Comm_join: the other end closed the socket")),
            n if n < 0 => {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(io_err("reading from the socket"));
            }
            n => done += n as usize,
        }
    }
    Ok(())
}
