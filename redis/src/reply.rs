//! The reply a Redis node sends back, and how `redis-cli` prints it.
//!
//! Redis has two wire protocols. RESP2 knows five types (status, error,
//! integer, bulk string, array) plus two flavours of "nothing": the null bulk
//! string (`$-1`, what `GET missing` sends) and the null array (`*-1`, what an
//! aborted `EXEC` sends). RESP3 adds maps, sets, doubles, booleans and a single
//! null. A node builds replies in the richer shape (a hash's `HGETALL` is a
//! [`Reply::Map`]) and the wire layer lowers it for RESP2 clients, exactly as
//! redis-server's `addReplyMapLen` does.
//!
//! [`Reply::to_cli`] reproduces `redis-cli --no-raw` byte for byte on a RESP2
//! connection (redis-cli's default), because that text is what the articles
//! show and what lessons assert: `OK`, `(nil)`, `(integer) 1`,
//! `"token-A-111"`, `(error) ERR …`, and numbered, indented arrays.

use serde::{Deserialize, Serialize};

/// One reply, in RESP3's vocabulary (a superset of RESP2's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Reply {
    /// `+OK`: a simple string, printed bare by redis-cli.
    Status(String),
    /// `-ERR …`: the full error line, code included (`WRONGTYPE …`, `ERR …`).
    Error(String),
    /// `:1`
    Integer(i64),
    /// `$5 hello`: binary-safe.
    Bulk(#[serde(with = "bytes_as_text")] Vec<u8>),
    /// `$-1` (RESP2) / `_` (RESP3): a missing value.
    Nil,
    /// `*-1` (RESP2) / `_` (RESP3): what `EXEC` sends after a `WATCH` fired.
    NilArray,
    /// `*N …`
    Array(Vec<Reply>),
    /// `%N …` in RESP3; a flat array of 2N elements in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// `,1.5` in RESP3; a bulk string in RESP2. Kept as the text
    /// redis-server prints (`addReplyDouble`: `%.17g`, `inf`, `-inf`), so
    /// that replies stay comparable and serialisable.
    Double(String),
    /// `#t` / `#f` in RESP3; `:1` / `:0` in RESP2 (`addReplyBool`).
    Boolean(bool),
    /// `~N …` in RESP3 (SMEMBERS); an array in RESP2.
    Set(Vec<Reply>),
    /// `(123…` in RESP3; a bulk string in RESP2.
    BigNumber(String),
    /// `=N txt:…` in RESP3; a bulk string of the text alone in RESP2.
    Verbatim {
        format: String,
        #[serde(with = "bytes_as_text")]
        text: Vec<u8>,
    },
    /// `>N …` in RESP3: an out-of-band message (pub/sub); an array in RESP2.
    Push(Vec<Reply>),
    /// Pairs that RESP3 sends as an array of two-element arrays and RESP2
    /// as one flat array: `ZRANGE … WITHSCORES` (redis-server writes
    /// `addReplyArrayLen(c,2)` per pair only when `c->resp > 2`).
    Pairs(Vec<(Reply, Reply)>),
}

impl Reply {
    /// The `+OK` status, the most common reply of all.
    pub fn ok() -> Reply {
        Reply::Status("OK".into())
    }

    /// A status reply from text.
    pub fn status(s: impl Into<String>) -> Reply {
        Reply::Status(s.into())
    }

    /// An error reply from its full text (`"ERR syntax error"`).
    pub fn error(s: impl Into<String>) -> Reply {
        Reply::Error(s.into())
    }

    /// A bulk string reply.
    pub fn bulk(b: impl Into<Vec<u8>>) -> Reply {
        Reply::Bulk(b.into())
    }

    /// A scalar that is not an error: nothing inside to sanitize.
    pub fn is_plain(&self) -> bool {
        !matches!(
            self,
            Reply::Error(_) | Reply::Array(_) | Reply::Map(_) | Reply::Set(_) | Reply::Push(_) | Reply::Pairs(_)
        )
    }

    /// Is this an error reply?
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Replace CR and LF inside error texts with spaces, recursively, as
    /// redis-server's `addReplyErrorFormat` does: an error is one protocol
    /// line, whatever an argument it quotes contained.
    pub fn sanitize_errors(&mut self) {
        match self {
            Reply::Error(e) if e.contains(['\r', '\n']) => *e = e.replace(['\r', '\n'], " "),
            Reply::Array(items) | Reply::Set(items) | Reply::Push(items) => {
                items.iter_mut().for_each(Reply::sanitize_errors)
            }
            Reply::Map(pairs) | Reply::Pairs(pairs) => pairs.iter_mut().for_each(|(k, v)| {
                k.sanitize_errors();
                v.sanitize_errors();
            }),
            _ => {}
        }
    }

    /// The reply as a RESP2 client sees it: maps become flat arrays, sets
    /// and pushes arrays, doubles and big numbers bulk strings, booleans
    /// integers — what redis-server sends a RESP2 client for each.
    pub fn into_resp2(self) -> Reply {
        match self {
            Reply::Pairs(pairs) => Reply::Array(
                pairs
                    .into_iter()
                    .flat_map(|(k, v)| [k.into_resp2(), v.into_resp2()])
                    .collect(),
            ),
            Reply::Set(items) | Reply::Push(items) => Reply::Array(items.into_iter().map(Reply::into_resp2).collect()),
            Reply::Double(d) | Reply::BigNumber(d) => Reply::Bulk(d.into_bytes()),
            Reply::Boolean(b) => Reply::Integer(i64::from(b)),
            Reply::Verbatim { text, .. } => Reply::Bulk(text),
            Reply::Map(pairs) => Reply::Array(
                pairs
                    .into_iter()
                    .flat_map(|(k, v)| [k.into_resp2(), v.into_resp2()])
                    .collect(),
            ),
            Reply::Array(items) => Reply::Array(items.into_iter().map(Reply::into_resp2).collect()),
            other => other,
        }
    }

    /// Render as `redis-cli --no-raw` prints it on a RESP2 connection,
    /// without the trailing newline.
    pub fn to_cli(&self) -> String {
        let mut out = String::new();
        format_tty(&self.clone().into_resp2(), "", &mut out);
        // redis-cli's formatter ends every scalar with '\n'; callers print
        // lines, so strip the last one.
        if out.ends_with('\n') {
            out.pop();
        }
        out
    }
}

/// redis-cli's `cliFormatReplyTTY`, transcribed: each element of an array is
/// numbered, the number right-aligned to the width of the largest index, and
/// nested arrays are indented by that width plus two.
fn format_tty(r: &Reply, prefix: &str, out: &mut String) {
    match r {
        Reply::Error(e) => {
            out.push_str("(error) ");
            out.push_str(e);
            out.push('\n');
        }
        Reply::Status(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Reply::Integer(i) => {
            out.push_str("(integer) ");
            out.push_str(&i.to_string());
            out.push('\n');
        }
        Reply::Bulk(b) => {
            out.push_str(&repr(b));
            out.push('\n');
        }
        Reply::Nil | Reply::NilArray => out.push_str("(nil)\n"),
        Reply::Map(_)
        | Reply::Set(_)
        | Reply::Push(_)
        | Reply::Pairs(_)
        | Reply::Double(_)
        | Reply::Boolean(_)
        | Reply::BigNumber(_)
        | Reply::Verbatim { .. } => format_tty(&r.clone().into_resp2(), prefix, out),
        Reply::Array(items) => {
            if items.is_empty() {
                out.push_str("(empty array)\n");
                return;
            }
            let idxlen = items.len().to_string().len();
            let child_prefix = format!("{prefix}{}", " ".repeat(idxlen + 2));
            for (i, item) in items.iter().enumerate() {
                // The first element follows the parent's own index number.
                let lead = if i == 0 { "" } else { prefix };
                out.push_str(&format!("{lead}{:>idxlen$}) ", i + 1));
                format_tty(item, &child_prefix, out);
            }
        }
    }
}

/// Append `n` in decimal, as RESP writes every length and integer
/// (`ll2string` into the reply buffer), without a formatter.
pub fn push_int(out: &mut Vec<u8>, n: i64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
}

/// `sdscatrepr`: how redis-cli quotes a bulk string. Printable ASCII stays,
/// `\` and `"` are escaped, the usual control characters get their C escape
/// and every other byte becomes `\xHH`.
pub fn repr(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() + 2);
    s.push('"');
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x07 => s.push_str("\\a"),
            0x08 => s.push_str("\\b"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s.push('"');
    s
}

/// Bulk strings are bytes, but traces and lessons are JSON read by people:
/// serialise valid UTF-8 as a string and anything else as an array of bytes.
mod bytes_as_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub(super) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(v) {
            Ok(t) => Repr::Text(t.to_owned()).serialize(s),
            Err(_) => Repr::Bytes(v.to_vec()).serialize(s),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Text(t) => t.into_bytes(),
            Repr::Bytes(b) => b,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_print_like_redis_cli() {
        assert_eq!(Reply::ok().to_cli(), "OK");
        assert_eq!(Reply::Nil.to_cli(), "(nil)");
        assert_eq!(Reply::NilArray.to_cli(), "(nil)");
        assert_eq!(Reply::Integer(-2).to_cli(), "(integer) -2");
        assert_eq!(Reply::bulk("token-A-111").to_cli(), "\"token-A-111\"");
        assert_eq!(Reply::error("ERR syntax error").to_cli(), "(error) ERR syntax error");
        assert_eq!(
            Reply::bulk(b"a\"b\\\n\x01\xff".to_vec()).to_cli(),
            r#""a\"b\\\n\x01\xff""#
        );
    }

    #[test]
    fn arrays_are_numbered_and_nested_like_redis_cli() {
        assert_eq!(Reply::Array(vec![]).to_cli(), "(empty array)");
        let items: Vec<Reply> = (1..=10).map(Reply::Integer).collect();
        let text = Reply::Array(items).to_cli();
        assert!(text.starts_with(" 1) (integer) 1\n 2) (integer) 2"));
        assert!(text.ends_with("10) (integer) 10"));
        let nested = Reply::Array(vec![
            Reply::bulk("0"),
            Reply::Array(vec![Reply::bulk("a"), Reply::bulk("b")]),
        ]);
        assert_eq!(nested.to_cli(), "1) \"0\"\n2) 1) \"a\"\n   2) \"b\"");
    }

    #[test]
    fn maps_print_flat_on_resp2() {
        let m = Reply::Map(vec![(Reply::bulk("f"), Reply::bulk("v"))]);
        assert_eq!(m.to_cli(), "1) \"f\"\n2) \"v\"");
    }
}
