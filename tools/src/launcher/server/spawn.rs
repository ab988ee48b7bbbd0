//! madrun's `spawn` request (`MPI_Comm_spawn`): a rank asks for a new job, which madrun starts
//! next to the others (same key, same key/value store, universe ids after the existing ones).
//!
//! The request's grammar is `pmi::spawn`'s; a request that does not parse is answered rc=-1
//! with the reason (not a protocol error). Owns the new job's place in the server (its ranks,
//! KVS name and barrier); starting the processes is the event loop's.

use super::{ConnId, Event, JobInfo, RankState, Server};
use crate::pmi::spawn::SpawnRequest;
use crate::pmi::wire::Message;

impl Server {
    pub(super) fn spawn_request(&mut self, id: ConnId, m: &Message) -> Result<(), Event> {
        match SpawnRequest::parse(m) {
            Ok(req) => self.spawns.push((id, req)),
            Err(why) => {
                let why: String = why.chars().map(|c| if c.is_ascii_graphic() { c } else { '_' }).collect();
                self.reply(id, Message::new("spawn_result").with("rc", -1).with("msg", why));
            }
        }
        Ok(())
    }

    /// Spawn requests to act on, with the connection to answer.
    pub fn take_spawns(&mut self) -> Vec<(ConnId, SpawnRequest)> {
        std::mem::take(&mut self.spawns)
    }

    /// Adds a job of `size` local ranks; its universe base (its ranks' index in the server).
    pub fn add_job(&mut self, size: u32) -> u32 {
        let base = self.ranks.len() as u32;
        let job = self.jobs.len();
        let kvsname = format!("{}_spawn{job}", self.jobs[0].kvsname);
        self.jobs.push(JobInfo { kvsname: kvsname.chars().take(super::KVSNAME_MAX).collect(), size });
        self.ranks.extend((0..size).map(|_| RankState { job, ..RankState::default() }));
        base
    }

    /// How many universe ids are taken.
    pub fn universe_len(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// Answers a spawn request.
    pub fn spawn_done(&mut self, id: ConnId, result: Result<(), String>) {
        let m = Message::new("spawn_result");
        let m = match result {
            Ok(()) => m.with("rc", 0),
            Err(why) => {
                let why: String = why.chars().map(|c| if c.is_ascii_graphic() { c } else { '_' }).collect();
                m.with("rc", -1).with("msg", why)
            }
        };
        self.reply(id, m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_queued_and_bad_ones_answered() {
        let app = crate::pmi::spawn::SpawnApp {
            nprocs: 2,
            argv: vec!["./child".into(), "an arg with spaces".into()],
            wdir: Some("/tmp".into()),
            path: None,
        };
        let req = SpawnRequest { apps: vec![app], parent_port: "madmpi-port:x:0:y".into() };
        let mut s = Server::new("kvs_spawn", vec![false; 2]);
        let a = s.add_conn(Some(0), "local".into());
        s.input(a, req.to_message().encode_v1().as_bytes()).unwrap();
        assert_eq!(s.take_spawns(), vec![(a, req)]);
        s.input(a, b"cmd=spawn napps=1 nprocs0=0 argc0=1 arg0_0=41 parent_port=p\n").unwrap();
        s.input(a, b"cmd=spawn napps=1 nprocs0=1 argc0=1 arg0_0=zz parent_port=p\n").unwrap();
        assert!(s.take_spawns().is_empty());
        let out = String::from_utf8(std::mem::take(s.output(a).unwrap())).unwrap();
        assert_eq!(out.matches("cmd=spawn_result rc=-1").count(), 2, "{out}");
    }

    #[test]
    fn a_spawned_job_has_its_own_barrier_and_kvs_name() {
        let mut s = Server::new("kvs_spawn", vec![false; 2]);
        let base = s.add_job(2);
        assert_eq!((base, s.universe_len()), (2, 4));
        let c: Vec<ConnId> = (0..4).map(|r| s.add_conn(Some(r), "local".into())).collect();
        s.input(c[2], b"cmd=get_my_kvsname\n").unwrap();
        let out = String::from_utf8(std::mem::take(s.output(c[2]).unwrap())).unwrap();
        assert_eq!(out, "cmd=my_kvsname kvsname=kvs_spawn_spawn1\n");
        // The children's barrier completes without the parents, and the other way round.
        s.input(c[2], b"cmd=barrier_in\n").unwrap();
        s.input(c[0], b"cmd=barrier_in\n").unwrap();
        s.input(c[3], b"cmd=barrier_in\n").unwrap();
        assert_eq!(String::from_utf8(std::mem::take(s.output(c[3]).unwrap())).unwrap(), "cmd=barrier_out\n");
        assert!(s.output(c[0]).unwrap().is_empty());
        s.input(c[1], b"cmd=barrier_in\n").unwrap();
        assert_eq!(String::from_utf8(std::mem::take(s.output(c[0]).unwrap())).unwrap(), "cmd=barrier_out\n");
    }
}
