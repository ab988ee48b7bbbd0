//! madrun's `spawn` request (`MPI_Comm_spawn`): a rank asks madrun for a new job, which madrun
//! starts next to the others (same key and key/value store, universe ids after those taken).
//!
//! madrun's own one-line form (Hydra's multi-line form is [`super::hydra_spawn`]'s):
//! `cmd=spawn napps=A` then, for each command `a`, `nprocs{a}=N argc{a}=K arg{a}_0=HEX ...
//! [wdir{a}=HEX] [path{a}=HEX]`, and `parent_port=PORT`; strings hex-encoded
//! ([`super::wire::encode_value`]), `arg{a}_0` the program; the commands form one job;
//! answered `cmd=spawn_result rc=0` once the processes are started (rc=-1 and `msg` otherwise).
//! The server parses requests as untrusted: every field is checked and bounded.

use super::wire::{Message, decode_value};
use super::{Backend, Pmi, PmiError};

/// Most processes one request may start, commands and arguments per command it may carry.
pub const SPAWN_PROCS_MAX: u32 = 256;
const APPS_MAX: usize = 64;
const ARGS_MAX: usize = 256;

/// One command of a spawn request (`MPI_Comm_spawn_multiple` has several, one world).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnApp {
    pub nprocs: u32,
    /// The program and its arguments.
    pub argv: Vec<String>,
    pub wdir: Option<String>,
    /// Where to look for the program first (prepended to `PATH`).
    pub path: Option<String>,
}

/// A checked spawn request: its commands' processes form one job, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpawnRequest {
    pub apps: Vec<SpawnApp>,
    pub parent_port: String,
}

fn text(hex: &str) -> Result<String, String> {
    let bytes = decode_value(hex).map_err(|e| e.to_string())?;
    let s = String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    if s.contains('\0') { Err("contains NUL".into()) } else { Ok(s) }
}

impl SpawnRequest {
    /// Every process of the request.
    pub fn nprocs(&self) -> u32 {
        self.apps.iter().map(|a| a.nprocs).sum()
    }

    pub fn parse(m: &Message) -> Result<SpawnRequest, String> {
        let field = |k: &str| m.get(k).ok_or_else(|| format!("no {k:?}"));
        let number = |k: &str| field(k)?.parse::<usize>().map_err(|_| format!("{k} is not a number"));
        let napps = number("napps")?;
        if napps == 0 || napps > APPS_MAX {
            return Err(format!("napps {napps} is not within 1..={APPS_MAX}"));
        }
        let mut apps = Vec::with_capacity(napps);
        let mut total = 0usize;
        for a in 0..napps {
            let nprocs = number(&format!("nprocs{a}"))?;
            total += nprocs;
            if nprocs == 0 || total > SPAWN_PROCS_MAX as usize {
                return Err(format!("nprocs{a} {nprocs}: 1 to {SPAWN_PROCS_MAX} processes in all"));
            }
            let argc = number(&format!("argc{a}"))?;
            if argc == 0 || argc > ARGS_MAX {
                return Err(format!("argc{a} {argc} is not within 1..={ARGS_MAX}"));
            }
            let argv = (0..argc)
                .map(|i| text(field(&format!("arg{a}_{i}"))?).map_err(|e| format!("arg{a}_{i}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            if argv[0].is_empty() {
                return Err(format!("command {a} is empty"));
            }
            let optional =
                |k: String| m.get(&k).map(|v| text(v).map_err(|e| format!("{k}: {e}"))).transpose();
            apps.push(SpawnApp {
                nprocs: nprocs as u32,
                argv,
                wdir: optional(format!("wdir{a}"))?,
                path: optional(format!("path{a}"))?,
            });
        }
        Ok(SpawnRequest { apps, parent_port: field("parent_port")?.to_string() })
    }

    /// The request on the wire.
    pub fn to_message(&self) -> Message {
        let hex = |s: &str| super::wire::encode_value(s.as_bytes());
        let mut m = Message::new("spawn").with("napps", self.apps.len());
        for (a, app) in self.apps.iter().enumerate() {
            m = m.with(&format!("nprocs{a}"), app.nprocs).with(&format!("argc{a}"), app.argv.len());
            for (i, arg) in app.argv.iter().enumerate() {
                m = m.with(&format!("arg{a}_{i}"), hex(arg));
            }
            if let Some(w) = &app.wdir {
                m = m.with(&format!("wdir{a}"), hex(w));
            }
            if let Some(p) = &app.path {
                m = m.with(&format!("path{a}"), hex(p));
            }
        }
        m.with("parent_port", &self.parent_port)
    }
}

impl Pmi {
    /// Asks the launcher to start `req` (madrun only: `Err(None)` elsewhere, nothing sent).
    pub fn spawn(&mut self, req: &SpawnRequest) -> Result<(), Option<PmiError>> {
        if std::env::var_os("PM2_UNIVERSE").is_none() {
            return Err(None); // not madrun's PMI
        }
        match &mut self.backend {
            Backend::V1 { conn, .. } => conn.call(req.to_message(), "spawn_result").map(drop).map_err(Some),
            _ => Err(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_ones_are_refused() {
        let app = |n, argv: &[&str]| SpawnApp {
            nprocs: n,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            wdir: None,
            path: None,
        };
        let mut two = app(1, &["./other"]);
        two.wdir = Some("/tmp".into());
        let req = SpawnRequest {
            apps: vec![app(2, &["./child", "an arg with spaces"]), two],
            parent_port: "madmpi-port:x:0:y".into(),
        };
        assert_eq!(req.nprocs(), 3);
        assert_eq!(SpawnRequest::parse(&req.to_message()), Ok(req));
        let parse = |line: &str| SpawnRequest::parse(&super::super::wire::parse_v1(line.as_bytes()).unwrap());
        let ok = "cmd=spawn napps=1 nprocs0=1 argc0=1 arg0_0=41 parent_port=p";
        assert!(parse(ok).is_ok());
        for bad in [
            "cmd=spawn napps=0 parent_port=p",
            "cmd=spawn napps=1 nprocs0=0 argc0=1 arg0_0=41 parent_port=p",
            "cmd=spawn napps=1 nprocs0=257 argc0=1 arg0_0=41 parent_port=p",
            "cmd=spawn napps=1 nprocs0=1 argc0=1 arg0_0=zz parent_port=p",
            "cmd=spawn napps=1 nprocs0=1 argc0=2 arg0_0=41 parent_port=p",
            "cmd=spawn napps=1 nprocs0=1 argc0=1 arg0_0=41",
            "cmd=spawn napps=1 nprocs0=1 argc0=1 arg0_0=00 parent_port=p",
            "cmd=spawn napps=2 nprocs0=1 argc0=1 arg0_0=41 parent_port=p",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
