//! The name service of PMI-1 (`MPI_Publish_name`, `MPI_Lookup_name`, `MPI_Unpublish_name`): the
//! launcher keeps `service → port` pairs for every process it serves.
//!
//! On the wire, as Hydra speaks it: `cmd=publish_name service=S port=P` → `cmd=publish_result
//! info=ok rc=0 msg=success` (rc≠0 with a message on failure); `cmd=lookup_name service=S` →
//! `cmd=lookup_result info=ok rc=0 port=P`; `cmd=unpublish_name service=S` →
//! `cmd=unpublish_result info=ok rc=0`. Older servers send only `info` (`ok` or a reason).
//! PMI-2 has no such commands here; a singleton keeps its names in the process.
//!
//! Owns the client side of these three commands; the server side is madrun's
//! (`launcher::server::names`).

use super::wire::{Message, WireError};
use super::{Backend, Pmi, PmiError};

/// Why a name call failed: the server's refusal (the name is taken, unknown…) is told apart
/// from a broken connection.
#[derive(Debug)]
pub enum NameError {
    /// The server refused: its reason.
    Refused(String),
    /// This launcher has no name service (PMI-2).
    Unsupported,
    Pmi(PmiError),
}

impl std::fmt::Display for NameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameError::Refused(why) => write!(f, "the name service refused: {why}"),
            NameError::Unsupported => f.write_str("the launcher's PMI-2 has no name service"),
            NameError::Pmi(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for NameError {}

impl From<PmiError> for NameError {
    fn from(e: PmiError) -> Self {
        NameError::Pmi(e)
    }
}

/// Whether a reply says yes: `rc=0` when it has an rc, `info=ok` otherwise.
fn accepted(r: &Message) -> Result<bool, WireError> {
    match r.get("rc") {
        Some(_) => Ok(r.rc()? == 0),
        None => Ok(r.get("info") == Some("ok")),
    }
}

fn reason(r: &Message) -> String {
    r.get("msg").or(r.get("info")).unwrap_or("no reason given").to_string()
}

impl Pmi {
    /// Publishes `port` under `service` (a name already published is refused).
    pub fn publish_name(&mut self, service: &str, port: &str) -> Result<(), NameError> {
        self.check_value(service)?;
        self.check_value(port)?;
        let m = Message::new("publish_name").with("service", service).with("port", port);
        self.name_call(m, "publish_result").map(drop)
    }

    /// The port published under `service`; `Refused` when there is none.
    pub fn lookup_name(&mut self, service: &str) -> Result<String, NameError> {
        self.check_value(service)?;
        let r = self.name_call(Message::new("lookup_name").with("service", service), "lookup_result")?;
        let port =
            r.require("port").map_err(|err| PmiError::Protocol { doing: "lookup_name".into(), err })?;
        Ok(port.to_string())
    }

    /// Withdraws `service` (never published: `Refused`).
    pub fn unpublish_name(&mut self, service: &str) -> Result<(), NameError> {
        self.check_value(service)?;
        self.name_call(Message::new("unpublish_name").with("service", service), "unpublish_result").map(drop)
    }

    fn check_value(&self, v: &str) -> Result<(), NameError> {
        super::wire::check_value(v).map_err(|e| NameError::Pmi(PmiError::Invalid(e)))?;
        if v.len() > self.max_value {
            return Err(NameError::Refused(format!("longer than {} bytes", self.max_value)));
        }
        Ok(())
    }

    /// Sends a name request; an accepted reply, or the refusal.
    fn name_call(&mut self, m: Message, expect: &str) -> Result<Message, NameError> {
        let doing = m.cmd.clone();
        match &mut self.backend {
            Backend::V1 { conn, .. } => {
                let r = conn.call_any_rc(m, expect)?;
                match accepted(&r) {
                    Ok(true) => Ok(r),
                    Ok(false) => Err(NameError::Refused(reason(&r))),
                    Err(err) => Err(PmiError::Protocol { doing, err }.into()),
                }
            }
            Backend::V2 { .. } => Err(NameError::Unsupported),
            Backend::Singleton(kv) => singleton_names(kv, &m),
        }
    }
}

/// The singleton's name service: its own key/value store, under a prefix no PMI key can have
/// (`=` is not a key character).
fn singleton_names(
    kv: &mut std::collections::HashMap<String, String>,
    m: &Message,
) -> Result<Message, NameError> {
    let service = m.get("service").unwrap_or_default();
    let key = format!("name={service}");
    let refused = |why: &str| Err(NameError::Refused(why.to_string()));
    match m.cmd.as_str() {
        "publish_name" if kv.contains_key(&key) => refused("key_already_present"),
        "publish_name" => {
            kv.insert(key, m.get("port").unwrap_or_default().to_string());
            Ok(Message::new("publish_result").with("rc", 0))
        }
        "lookup_name" => match kv.get(&key) {
            Some(p) => Ok(Message::new("lookup_result").with("rc", 0).with("port", p)),
            None => refused("service_not_found"),
        },
        _ => match kv.remove(&key) {
            Some(_) => Ok(Message::new("unpublish_result").with("rc", 0)),
            None => refused("service_not_found"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_as_hydra_and_older_servers_write_them() {
        let hydra = Message::new("publish_result").with("info", "ok").with("rc", 0).with("msg", "success");
        assert!(accepted(&hydra).unwrap());
        let taken = Message::new("publish_result").with("info", "ok").with("rc", 1).with("msg", "taken");
        assert!(!accepted(&taken).unwrap());
        assert_eq!(reason(&taken), "taken");
        assert!(accepted(&Message::new("publish_result").with("info", "ok")).unwrap());
        assert!(!accepted(&Message::new("publish_result").with("info", "not_implemented_yet")).unwrap());
        assert!(accepted(&Message::new("x").with("rc", "zero")).is_err());
    }

    #[test]
    fn a_singleton_publishes_looks_up_and_unpublishes_in_its_process() {
        let mut p = Pmi::singleton();
        assert!(matches!(p.lookup_name("svc"), Err(NameError::Refused(_))));
        p.publish_name("svc", "port-1").unwrap();
        assert!(matches!(p.publish_name("svc", "port-2"), Err(NameError::Refused(_))));
        assert_eq!(p.lookup_name("svc").unwrap(), "port-1");
        p.unpublish_name("svc").unwrap();
        assert!(matches!(p.unpublish_name("svc"), Err(NameError::Refused(_))));
        assert!(matches!(p.publish_name("a b", "p"), Err(NameError::Pmi(PmiError::Invalid(_)))));
    }
}
