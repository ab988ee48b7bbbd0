//! Hydra's PMI-1 spawn, as MPICH's simple PMI client sends it (`PMI_Spawn_multiple`, MPICH
//! 4.0's `simple_pmi.c`; served by `fn_spawn` in Hydra's `pmiserv_pmi_v1.c`).
//!
//! One block per command, each written whole (Hydra's proxy waits for `endcmd`), fields one a
//! line: `mcmd=spawn`, `nprocs=N`, `execname=PROGRAM`, `totspawns=C`, `spawnssofar=I` (1-based),
//! `arg1=…` … `argK=…` (the arguments after the program), `argcnt=K`, `preput_num=P`,
//! `preput_key_i=…`/`preput_val_i=…`, `info_num=J`, `info_key_i=…`/`info_val_i=…` (Hydra reads
//! `wdir` and `path`), then `endcmd`. The server answers the last block with
//! `cmd=spawn_result rc=0` once it launched the processes. Hydra 4.0 sends no answer when it
//! cannot parse a request, and answers rc=0 before its proxies try to execute the programs (a
//! failure there is not reported to the caller), so everything is checked here first: values hold no newline or NUL and are not empty, blocks are bounded, and
//! each program must be an executable file on this host.
//!
//! Owns the client side of this form; madrun's one-line form is [`super::spawn`]'s.

use super::spawn::SpawnRequest;
use super::wire::{self, WireError};
use super::{Backend, Pmi, PmiError};
use std::path::Path;

/// Longest block sent (Hydra's proxy buffers 64 KiB of a process's PMI input).
const BLOCK_MAX: usize = 16 * 1024;

fn invalid(reason: impl Into<String>, what: &str) -> PmiError {
    PmiError::Invalid(WireError { reason: reason.into(), quoted: wire::quote(what.as_bytes()) })
}

/// A field value of a block: a line of its own, so anything but a newline or NUL (Hydra drops
/// empty values).
fn line_value(v: &str, what: &str) -> Result<(), PmiError> {
    if v.is_empty() || v.contains(['\n', '\0']) {
        return Err(invalid(format!("{what}: empty, or holds a newline or NUL"), v));
    }
    Ok(())
}

/// The blocks of `req` for Hydra, `preput` (keys and values as `put` takes them) in each.
pub fn blocks(req: &SpawnRequest, preput: &[(String, String)]) -> Result<Vec<String>, PmiError> {
    for (k, v) in preput {
        wire::check_key(k).map_err(PmiError::Invalid)?;
        wire::check_value(v).map_err(PmiError::Invalid)?;
    }
    let count = req.apps.len();
    let mut out = Vec::with_capacity(count);
    for (i, app) in req.apps.iter().enumerate() {
        let program = app.argv.first().ok_or_else(|| invalid("a command without a program", ""))?;
        line_value(program, "the program")?;
        let mut b = format!(
            "mcmd=spawn\nnprocs={}\nexecname={program}\ntotspawns={count}\nspawnssofar={}\n",
            app.nprocs,
            i + 1
        );
        for (k, arg) in app.argv[1..].iter().enumerate() {
            line_value(arg, "an argument")?;
            b.push_str(&format!("arg{}={arg}\n", k + 1));
        }
        b.push_str(&format!("argcnt={}\npreput_num={}\n", app.argv.len() - 1, preput.len()));
        for (k, (key, val)) in preput.iter().enumerate() {
            b.push_str(&format!("preput_key_{k}={key}\npreput_val_{k}={val}\n"));
        }
        let info: Vec<(&str, &String)> = [("wdir", &app.wdir), ("path", &app.path)]
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.as_ref()?)))
            .collect();
        b.push_str(&format!("info_num={}\n", info.len()));
        for (k, (key, val)) in info.iter().enumerate() {
            line_value(val, key)?;
            b.push_str(&format!("info_key_{k}={key}\ninfo_val_{k}={val}\n"));
        }
        b.push_str("endcmd\n");
        if b.len() > BLOCK_MAX {
            return Err(invalid(format!("a spawn command longer than {BLOCK_MAX} bytes"), &b));
        }
        out.push(b);
    }
    Ok(out)
}

/// Whether Hydra can execute `program` of a command with `wdir` and `path` on this host: with
/// `path`, Hydra runs `path/program`; a relative path is relative to `wdir`; a bare name is
/// looked up in `PATH`.
pub fn runnable(program: &str, wdir: Option<&str>, path: Option<&str>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let program = match path {
        Some(dir) => format!("{dir}/{program}"),
        None => program.to_string(),
    };
    if program.contains('/') {
        let p = Path::new(&program);
        return executable(
            &wdir.filter(|_| p.is_relative()).map_or(p.to_path_buf(), |d| Path::new(d).join(p)),
        );
    }
    let search = std::env::var("PATH").unwrap_or_default();
    search.split(':').filter(|d| !d.is_empty()).any(|d| executable(&Path::new(d).join(&program)))
}

/// Checks that Hydra can start every command of `req` on this host ([`runnable`], and `wdir` a
/// directory).
pub fn check_programs(req: &SpawnRequest) -> Result<(), PmiError> {
    for app in &req.apps {
        let program = &app.argv[0];
        if !runnable(program, app.wdir.as_deref(), app.path.as_deref()) {
            return Err(invalid("not an executable program on this host", program));
        }
        if let Some(w) = &app.wdir
            && !Path::new(w).is_dir()
        {
            return Err(invalid("wdir is not a directory", w));
        }
    }
    Ok(())
}

impl Pmi {
    /// Asks a PMI-1 server that speaks Hydra's form to start `req`, `preput` in the new job's
    /// key/value store. `Err(None)` (nothing sent) when this process has no PMI-1 server.
    pub fn spawn_hydra(
        &mut self,
        req: &SpawnRequest,
        preput: &[(String, String)],
    ) -> Result<(), Option<PmiError>> {
        let Backend::V1 { conn, .. } = &mut self.backend else { return Err(None) };
        check_programs(req).map_err(Some)?;
        let blocks = blocks(req, preput).map_err(Some)?;
        let doing = "spawn (expecting spawn_result)";
        for b in &blocks {
            conn.send_raw(b.as_bytes(), doing).map_err(Some)?;
        }
        let r = conn.recv(doing).map_err(Some)?;
        let quoted = || r.encode_v1();
        if r.cmd != "spawn_result" {
            let err = WireError { reason: format!("unexpected reply {:?}", r.cmd), quoted: quoted() };
            return Err(Some(PmiError::Protocol { doing: doing.into(), err }));
        }
        let rc = r.rc().map_err(|err| Some(PmiError::Protocol { doing: doing.into(), err }))?;
        if rc != 0 {
            let msg = r.get("msg").or(r.get("errmsg")).unwrap_or("").to_string();
            return Err(Some(PmiError::Server { doing: doing.into(), rc, msg }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmi::spawn::SpawnApp;

    fn app(n: u32, argv: &[&str]) -> SpawnApp {
        SpawnApp { nprocs: n, argv: argv.iter().map(|s| s.to_string()).collect(), wdir: None, path: None }
    }

    #[test]
    fn blocks_are_framed_as_mpichs_simple_pmi_frames_them() {
        let mut second = app(1, &["/bin/other"]);
        second.wdir = Some("/tmp".into());
        let req = SpawnRequest {
            apps: vec![app(2, &["./child", "an arg", "x=y"]), second],
            parent_port: "p".into(),
        };
        let preput = vec![("PM2_UNIVERSE".to_string(), "2/1026".to_string())];
        let b = blocks(&req, &preput).unwrap();
        assert_eq!(
            b[0],
            "mcmd=spawn\nnprocs=2\nexecname=./child\ntotspawns=2\nspawnssofar=1\narg1=an arg\narg2=x=y\n\
             argcnt=2\npreput_num=1\npreput_key_0=PM2_UNIVERSE\npreput_val_0=2/1026\ninfo_num=0\nendcmd\n"
        );
        assert_eq!(
            b[1],
            "mcmd=spawn\nnprocs=1\nexecname=/bin/other\ntotspawns=2\nspawnssofar=2\nargcnt=0\npreput_num=1\n\
             preput_key_0=PM2_UNIVERSE\npreput_val_0=2/1026\ninfo_num=1\ninfo_key_0=wdir\ninfo_val_0=/tmp\nendcmd\n"
        );
    }

    #[test]
    fn values_that_would_break_the_frame_are_refused() {
        let one = |argv: &[&str]| SpawnRequest { apps: vec![app(1, argv)], parent_port: "p".into() };
        assert!(blocks(&one(&["a\nb"]), &[]).is_err());
        assert!(blocks(&one(&["a", ""]), &[]).is_err());
        assert!(blocks(&one(&["a", "x\0"]), &[]).is_err());
        assert!(blocks(&one(&["a", &"x".repeat(BLOCK_MAX)]), &[]).is_err());
        assert!(blocks(&one(&["a"]), &[("bad key".into(), "v".into())]).is_err());
        assert!(blocks(&one(&["a"]), &[("k".into(), "a value".into())]).is_err());
        assert!(blocks(&one(&["a"]), &[("k".into(), "v".into())]).is_ok());
    }

    /// A PMI-1 client whose server is the returned socket's other end.
    fn client() -> (Pmi, std::os::unix::net::UnixStream) {
        let (ours, server) = std::os::unix::net::UnixStream::pair().unwrap();
        let conn = super::super::Conn::new(ours).unwrap();
        let mut pmi = Pmi::singleton();
        pmi.backend = Backend::V1 { conn, kvsname: "kvs".into() };
        (pmi, server)
    }

    /// Serves one spawn request of `count` blocks: reads up to the last `endcmd`, answers `reply`.
    fn serve(
        mut server: std::os::unix::net::UnixStream,
        count: usize,
        reply: &'static str,
    ) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while String::from_utf8_lossy(&got).matches("endcmd\n").count() < count {
                let n = server.read(&mut buf).unwrap();
                assert!(n > 0, "the client closed");
                got.extend_from_slice(&buf[..n]);
            }
            server.write_all(reply.as_bytes()).unwrap();
            String::from_utf8(got).unwrap()
        })
    }

    #[test]
    fn requests_go_out_in_blocks_and_the_servers_rc_is_the_answer() {
        let req = SpawnRequest {
            apps: vec![app(2, &["/bin/sh", "-c"]), app(1, &["/bin/sh"])],
            parent_port: "p".into(),
        };
        let (mut pmi, server) = client();
        let seen = serve(server, 2, "cmd=spawn_result rc=0\n");
        pmi.spawn_hydra(&req, &[]).unwrap();
        assert_eq!(seen.join().unwrap(), blocks(&req, &[]).unwrap().concat());

        let (mut pmi, server) = client();
        let seen = serve(server, 2, "cmd=spawn_result rc=-1 msg=refused\n");
        match pmi.spawn_hydra(&req, &[]) {
            Err(Some(PmiError::Server { rc: -1, msg, .. })) => assert_eq!(msg, "refused"),
            other => panic!("{other:?}"),
        }
        seen.join().unwrap();

        let (mut pmi, server) = client();
        let seen = serve(server, 2, "cmd=barrier_out\n");
        assert!(matches!(pmi.spawn_hydra(&req, &[]), Err(Some(PmiError::Protocol { .. }))));
        seen.join().unwrap();

        let missing = SpawnRequest { apps: vec![app(1, &["/no/such/program"])], parent_port: "p".into() };
        let (mut pmi, _server) = client();
        assert!(
            matches!(pmi.spawn_hydra(&missing, &[]), Err(Some(PmiError::Invalid(_)))),
            "refused before sending"
        );
        assert!(matches!(Pmi::singleton().spawn_hydra(&req, &[]), Err(None)));
    }

    #[test]
    fn programs_are_found_as_hydra_finds_them() {
        assert!(runnable("/bin/sh", None, None));
        assert!(runnable("sh", None, Some("/bin")));
        assert!(!runnable("sh", None, Some("/nonexistent")));
        assert!(runnable("./sh", Some("/bin"), None));
        assert!(!runnable("/tmp", None, None), "a directory");
        assert!(!runnable("/no/such/program", None, None));
    }
}
