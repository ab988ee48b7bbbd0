//! madrun's name service (PMI-1 `publish_name`, `lookup_name`, `unpublish_name`, as Hydra
//! answers them): `service → port` pairs published by any rank, visible to every rank at once
//! (no fence), kept until unpublished or the job ends.
//!
//! Requests are untrusted: names and ports must be valid PMI values of bounded length, and the
//! table is bounded; a refusal is an `rc=1` reply with a reason, not a protocol error. A missing
//! field is one (the connection is malformed). Owns the table; it must not touch the KVS.

use super::{Event, Server, VALLEN_MAX};
use crate::launcher::server::ConnId;
use crate::pmi::wire::{Message, check_value};
use std::collections::HashMap;

/// Most names published at once.
const NAMES_MAX: usize = 4096;

#[derive(Debug, Default)]
pub(super) struct Names(HashMap<String, String>);

impl Names {
    fn publish(&mut self, service: &str, port: &str) -> Result<(), &'static str> {
        valid(service)?;
        valid(port)?;
        if self.0.contains_key(service) {
            return Err("key_already_present");
        }
        if self.0.len() >= NAMES_MAX {
            return Err("too_many_names");
        }
        self.0.insert(service.to_string(), port.to_string());
        Ok(())
    }

    fn lookup(&self, service: &str) -> Result<&str, &'static str> {
        self.0.get(service).map(String::as_str).ok_or("service_not_found")
    }

    fn unpublish(&mut self, service: &str) -> Result<(), &'static str> {
        self.0.remove(service).map(drop).ok_or("service_not_found")
    }
}

fn valid(v: &str) -> Result<(), &'static str> {
    if v.len() > VALLEN_MAX || check_value(v).is_err() { Err("invalid_value") } else { Ok(()) }
}

impl Server {
    /// The reply to a name request (the command is one of the three).
    pub(super) fn name_request(&mut self, id: ConnId, m: &Message) -> Result<Message, Event> {
        let service = self.require(id, m, "service")?;
        let (cmd, result) = match m.cmd.as_str() {
            "publish_name" => {
                let port = self.require(id, m, "port")?;
                ("publish_result", self.names.publish(service, port).map(|()| None))
            }
            "lookup_name" => ("lookup_result", self.names.lookup(service).map(Some)),
            _ => ("unpublish_result", self.names.unpublish(service).map(|()| None)),
        };
        let reply = Message::new(cmd).with("info", "ok");
        Ok(match result {
            Ok(None) => reply.with("rc", 0).with("msg", "success"),
            Ok(Some(port)) => reply.with("rc", 0).with("port", port),
            Err(why) => reply.with("rc", 1).with("msg", why),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(s: &mut Server, id: ConnId, line: &str) -> String {
        s.input(id, line.as_bytes()).unwrap();
        String::from_utf8(std::mem::take(s.output(id).unwrap())).unwrap()
    }

    #[test]
    fn names_published_by_one_rank_are_seen_by_another_until_unpublished() {
        let mut s = Server::new("kvs_names", vec![false; 2]);
        let (a, b) = (s.add_conn(Some(0), "local".into()), s.add_conn(Some(1), "local".into()));
        assert_eq!(
            ask(&mut s, a, "cmd=publish_name service=svc port=tag#1\n"),
            "cmd=publish_result info=ok rc=1 msg=invalid_value\n",
            "`#` is not a value character"
        );
        assert_eq!(
            ask(&mut s, a, "cmd=publish_name service=svc port=p:1\n"),
            "cmd=publish_result info=ok rc=0 msg=success\n"
        );
        assert_eq!(
            ask(&mut s, b, "cmd=publish_name service=svc port=p:2\n"),
            "cmd=publish_result info=ok rc=1 msg=key_already_present\n"
        );
        assert_eq!(
            ask(&mut s, b, "cmd=lookup_name service=svc\n"),
            "cmd=lookup_result info=ok rc=0 port=p:1\n"
        );
        assert_eq!(
            ask(&mut s, b, "cmd=unpublish_name service=svc\n"),
            "cmd=unpublish_result info=ok rc=0 msg=success\n"
        );
        assert_eq!(
            ask(&mut s, a, "cmd=lookup_name service=svc\n"),
            "cmd=lookup_result info=ok rc=1 msg=service_not_found\n"
        );
        assert_eq!(
            ask(&mut s, a, "cmd=unpublish_name service=svc\n"),
            "cmd=unpublish_result info=ok rc=1 msg=service_not_found\n"
        );
    }

    #[test]
    fn a_name_request_without_its_fields_is_malformed_and_the_table_is_bounded() {
        let mut s = Server::new("kvs_names", vec![false; 1]);
        let a = s.add_conn(Some(0), "local".into());
        assert!(matches!(s.input(a, b"cmd=publish_name service=x\n"), Err(Event::Malformed { .. })));
        let b = s.add_conn(Some(0), "local".into());
        assert!(matches!(s.input(b, b"cmd=lookup_name\n"), Err(Event::Malformed { .. })));
        let mut names = Names::default();
        for i in 0..NAMES_MAX {
            names.publish(&format!("s{i}"), "p").unwrap();
        }
        assert_eq!(names.publish("one-more", "p"), Err("too_many_names"));
    }
}
