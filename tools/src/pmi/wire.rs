//! The PMI wire formats, shared by the client and madrun's server. Everything that crosses the
//! socket is untrusted: every length is bounded, every field checked, and errors quote the line.
//!
//! - **v1** (PMI-1, and PMI-2's initial `init`): one line, `cmd=NAME key=value key=value\n`.
//!   Values end at a space or the newline.
//! - **v2** (PMI-2): a 6-character decimal length (right- or left-justified with spaces: Slurm
//!   writes `%-6d`) followed by that many bytes, `cmd=NAME;key=value;...;`. Values end at `;`;
//!   Slurm supports no escaping, so values never contain `;`.
//!
//! Keys are `[A-Za-z0-9_/-]+` (MPICH's rule). Values we send are restricted to [`is_value_char`]
//! so that they are safe on both wires; binary data goes through [`encode_value`].

use std::fmt;

/// Longest message accepted or sent (MPICH's own limit is 64 KiB).
pub const MAX_MESSAGE: usize = 64 * 1024;

/// A parsed message: the command and its attributes, in order (keys may repeat).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub cmd: String,
    pub attrs: Vec<(String, String)>,
}

/// What went wrong with a message, quoting it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError {
    pub reason: String,
    /// The offending bytes (lossily decoded, shortened to 200 characters).
    pub quoted: String,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {:?}", self.reason, self.quoted)
    }
}

impl std::error::Error for WireError {}

pub(crate) fn quote(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let mut q: String = s.chars().take(200).collect();
    if s.chars().count() > 200 {
        q.push_str("...");
    }
    q
}

fn err(reason: impl Into<String>, bytes: &[u8]) -> WireError {
    WireError { reason: reason.into(), quoted: quote(bytes) }
}

pub fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'/')
}

/// Characters allowed in values we send: printable ASCII except space, `=`, `;`, `\` and `#`.
pub fn is_value_char(c: u8) -> bool {
    c.is_ascii_graphic() && !matches!(c, b'=' | b';' | b'\\' | b'#')
}

/// Checks a key we are about to send.
pub fn check_key(k: &str) -> Result<(), WireError> {
    if k.is_empty() || !k.bytes().all(is_key_char) {
        return Err(err("invalid key (allowed: letters, digits, _ / -)", k.as_bytes()));
    }
    Ok(())
}

/// Checks a value we are about to send.
pub fn check_value(v: &str) -> Result<(), WireError> {
    if v.is_empty() || !v.bytes().all(is_value_char) {
        return Err(err(
            "invalid value (allowed: printable ASCII except space = ; \\ #; use encode_value for binary)",
            v.as_bytes(),
        ));
    }
    Ok(())
}

/// Encodes bytes as a value (lower-case hex: safe on every wire, twice the size).
pub fn encode_value(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Decodes [`encode_value`]'s output.
pub fn decode_value(s: &str) -> Result<Vec<u8>, WireError> {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err(err("encoded value has an odd length", b));
    }
    b.chunks(2)
        .map(|p| {
            std::str::from_utf8(p)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| err("encoded value is not hexadecimal", b))
        })
        .collect()
}

impl Message {
    pub fn new(cmd: &str) -> Message {
        Message { cmd: cmd.to_string(), attrs: Vec::new() }
    }

    /// Adds an attribute (builder style). The caller checked key and value.
    pub fn with(mut self, k: &str, v: impl ToString) -> Message {
        self.attrs.push((k.to_string(), v.to_string()));
        self
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key`, which must be present.
    pub fn require(&self, key: &str) -> Result<&str, WireError> {
        self.get(key)
            .ok_or_else(|| err(format!("reply to {:?} lacks {key:?}", self.cmd), self.encode_v1().as_bytes()))
    }

    /// The integer value of `key`, which must be present.
    pub fn require_int(&self, key: &str) -> Result<i64, WireError> {
        let v = self.require(key)?;
        v.parse().map_err(|_| err(format!("{key:?} is not an integer"), self.encode_v1().as_bytes()))
    }

    /// The `rc` attribute (0 when absent).
    pub fn rc(&self) -> Result<i64, WireError> {
        match self.get("rc") {
            None => Ok(0),
            Some(v) => v.parse().map_err(|_| err("rc is not an integer", self.encode_v1().as_bytes())),
        }
    }

    /// `cmd=NAME k=v ...\n`.
    pub fn encode_v1(&self) -> String {
        let mut s = format!("cmd={}", self.cmd);
        for (k, v) in &self.attrs {
            s.push(' ');
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s.push('\n');
        s
    }

    /// 6-character length + `cmd=NAME;k=v;...;`.
    pub fn encode_v2(&self) -> Vec<u8> {
        let mut body = format!("cmd={};", self.cmd);
        for (k, v) in &self.attrs {
            body.push_str(k);
            body.push('=');
            body.push_str(v);
            body.push(';');
        }
        let mut out = format!("{:<6}", body.len()).into_bytes();
        out.extend_from_slice(body.as_bytes());
        out
    }
}

/// Parses one v1 line (with or without its newline).
pub fn parse_v1(line: &[u8]) -> Result<Message, WireError> {
    if line.len() > MAX_MESSAGE {
        return Err(err(format!("message longer than {MAX_MESSAGE} bytes"), line));
    }
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    if body.contains(&b'\n') || body.contains(&0) {
        return Err(err("embedded newline or NUL", line));
    }
    let text = std::str::from_utf8(body).map_err(|_| err("not UTF-8", line))?;
    parse_fields(text.split(' ').filter(|t| !t.is_empty()), line)
}

/// Parses a v2 body (after the length field).
pub fn parse_v2_body(body: &[u8]) -> Result<Message, WireError> {
    if body.len() > MAX_MESSAGE {
        return Err(err(format!("message longer than {MAX_MESSAGE} bytes"), body));
    }
    if body.contains(&0) || body.contains(&b'\n') {
        return Err(err("embedded newline or NUL", body));
    }
    let text = std::str::from_utf8(body).map_err(|_| err("not UTF-8", body))?;
    let text = text.strip_suffix(';').unwrap_or(text);
    parse_fields(text.split(';'), body)
}

/// Parses a v2 length field (6 bytes).
pub fn parse_v2_len(field: &[u8]) -> Result<usize, WireError> {
    if field.len() != 6 {
        return Err(err("length field shorter than 6 bytes", field));
    }
    let t = std::str::from_utf8(field).map_err(|_| err("length field is not text", field))?.trim();
    let n: usize = if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
        t.parse().map_err(|_| err("bad length field", field))?
    } else {
        return Err(err("length field is not a decimal number", field));
    };
    if n == 0 || n > MAX_MESSAGE {
        return Err(err(format!("length {n} out of range 1..={MAX_MESSAGE}"), field));
    }
    Ok(n)
}

fn parse_fields<'a>(fields: impl Iterator<Item = &'a str>, whole: &[u8]) -> Result<Message, WireError> {
    let mut cmd = None;
    let mut attrs = Vec::new();
    for (i, f) in fields.enumerate() {
        let (k, v) = f.split_once('=').ok_or_else(|| err(format!("field {f:?} has no '='"), whole))?;
        if k.is_empty() || !k.bytes().all(is_key_char) {
            return Err(err(format!("bad key {k:?}"), whole));
        }
        if i == 0 {
            if k != "cmd" && k != "mcmd" {
                return Err(err("message does not start with cmd=", whole));
            }
            if v.is_empty() || !v.bytes().all(is_key_char) {
                return Err(err("bad command name", whole));
            }
            cmd = Some(v.to_string());
        } else {
            attrs.push((k.to_string(), v.to_string()));
        }
    }
    match cmd {
        Some(cmd) => Ok(Message { cmd, attrs }),
        None => Err(err("empty message", whole)),
    }
}

/// Which framing a connection uses now (PMI-2 starts with one v1 `init` line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    V1,
    V2,
}

/// Cuts a byte stream into messages, bounding what it buffers.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    pub framing: Framing,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder { buf: Vec::new(), framing: Framing::V1 }
    }
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    pub fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// Bytes received and not yet consumed.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The next complete message, `None` if more bytes are needed, or an error (the stream is
    /// then unusable: the caller drops the connection).
    pub fn next_message(&mut self) -> Result<Option<Message>, WireError> {
        match self.framing {
            Framing::V1 => match self.buf.iter().position(|&c| c == b'\n') {
                Some(i) => {
                    let line: Vec<u8> = self.buf.drain(..=i).collect();
                    parse_v1(&line).map(Some)
                }
                None if self.buf.len() > MAX_MESSAGE => {
                    Err(err(format!("no newline within {MAX_MESSAGE} bytes"), &self.buf))
                }
                None => Ok(None),
            },
            Framing::V2 => {
                if self.buf.len() < 6 {
                    return Ok(None);
                }
                let n = parse_v2_len(&self.buf[..6])?;
                if self.buf.len() < 6 + n {
                    return Ok(None);
                }
                let msg: Vec<u8> = self.buf.drain(..6 + n).collect();
                parse_v2_body(&msg[6..]).map(Some)
            }
        }
    }

    /// The peer closed the stream: leftover bytes are a truncated message.
    pub fn finish(&self) -> Result<(), WireError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(err("truncated message (connection closed in the middle)", &self.buf))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoder_splits_streams_and_detects_truncation() {
        let mut d = Decoder::new();
        d.feed(b"cmd=a x=1\ncmd=b");
        assert_eq!(d.next_message().unwrap().unwrap().cmd, "a");
        assert_eq!(d.next_message().unwrap(), None);
        assert!(d.finish().unwrap_err().to_string().contains("cmd=b"));
        d.feed(b"\n");
        assert_eq!(d.next_message().unwrap().unwrap().cmd, "b");
        d.framing = Framing::V2;
        let m = Message::new("kvs-fence").encode_v2();
        d.feed(&m[..4]);
        assert_eq!(d.next_message().unwrap(), None);
        d.feed(&m[4..]);
        assert_eq!(d.next_message().unwrap().unwrap().cmd, "kvs-fence");
        let mut d = Decoder::new();
        d.feed(&vec![b'x'; MAX_MESSAGE + 1]);
        assert!(d.next_message().is_err());
    }

    #[test]
    fn v1_round_trip_and_hydra_replies() {
        let m = Message::new("put").with("kvsname", "kvs_1").with("key", "k0").with("value", "v0");
        assert_eq!(m.encode_v1(), "cmd=put kvsname=kvs_1 key=k0 value=v0\n");
        assert_eq!(parse_v1(m.encode_v1().as_bytes()).unwrap(), m);
        let r = parse_v1(b"cmd=get_result rc=-1 msg=key_nope_not_found value=unknown\n").unwrap();
        assert_eq!(r.cmd, "get_result");
        assert_eq!(r.rc().unwrap(), -1);
        assert_eq!(r.get("value"), Some("unknown"));
    }

    #[test]
    fn v2_round_trip_and_slurm_framing() {
        let m = Message::new("kvs-put").with("key", "k").with("value", "v");
        let wire = m.encode_v2();
        assert_eq!(&wire[..6], b"26    "); // cmd=kvs-put;key=k;value=v;
        assert_eq!(parse_v2_len(&wire[..6]).unwrap(), wire.len() - 6);
        assert_eq!(parse_v2_body(&wire[6..]).unwrap(), m);
        assert_eq!(parse_v2_len(b"    23").unwrap(), 23, "right-justified too");
        assert!(parse_v2_len(b"  x23 ").is_err());
        assert!(parse_v2_len(b"999999").is_err(), "over the limit");
        assert!(parse_v2_len(b"      ").is_err());
    }

    #[test]
    fn malformed_lines_are_errors_that_quote_them() {
        for bad in [
            &b"hello\n"[..],
            b"cmd=\n",
            b"cmd=put key\n",
            b"key=v cmd=put\n",
            b"cmd=put a=b\nc=d\n",
            b"\n",
            b"cmd=p\xffx\n",
        ] {
            let e = parse_v1(bad).unwrap_err();
            assert!(!e.quoted.is_empty() || bad.is_empty(), "{e}");
        }
        let e = parse_v1(b"cmd=put key\n").unwrap_err();
        assert!(e.to_string().contains("cmd=put key"), "{e}");
        let big = vec![b'a'; MAX_MESSAGE + 1];
        assert!(parse_v1(&big).unwrap_err().to_string().contains("longer than"));
    }

    #[test]
    fn values_and_encoding() {
        assert!(check_value("abc-123_x.y:z/w+").is_ok());
        for bad in ["", "a b", "a=b", "a;b", "a\\b", "é"] {
            assert!(check_value(bad).is_err(), "{bad:?}");
        }
        let bytes = [0u8, 1, 0xfe, 0xff, b' '];
        assert_eq!(decode_value(&encode_value(&bytes)).unwrap(), bytes);
        assert!(decode_value("abc").is_err());
        assert!(decode_value("zz").is_err());
        assert!(check_key("kvs/a_b-1").is_ok());
        assert!(check_key("a b").is_err());
    }
}
