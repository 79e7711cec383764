//! Reading a history: JSON lines, streamed, with bounded memory.
//!
//! A history file comes from someone else's workload script, possibly cut
//! off when its process was killed, possibly not a history at all. So the
//! reader never holds more than one line beyond what it keeps (a line longer
//! than [`Limits::max_line_bytes`] is skipped to its end without being
//! stored, then refused), keeps at most [`Limits::max_ops`] calls, and stops
//! at the first bad line with an error that names it. Blank lines are
//! allowed. A line with a `fault` field is a [`FaultMark`]; any other is an
//! [`Op`], whose unknown fields are refused (a typo in `complete_ms` would
//! otherwise silently make every call's outcome unknown).

use std::io::BufRead;

use super::{FaultMark, History, Op, OpKind};

/// How much a history may make the reader hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_line_bytes: usize,
    pub max_ops: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line_bytes: 64 * 1024,
            max_ops: 2_000_000,
        }
    }
}

/// Why a history was refused; every error names its line (1-based).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HistoryError {
    #[error("line {line}: could not read: {msg}")]
    Io { line: u64, msg: String },
    #[error("line {line}: longer than {max} bytes; refused")]
    TooLong { line: u64, max: usize },
    #[error("line {line}: not UTF-8 text (byte {column} is not); is this a history file?")]
    NotUtf8 { line: u64, column: usize },
    #[error("line {line}: truncated (the file ends inside a JSON object)")]
    Truncated { line: u64 },
    #[error("line {line}: not a JSON object: {msg}")]
    Json { line: u64, msg: String },
    #[error("line {line}: unknown op {op:?} (expected acquire, release, extend, write or read)")]
    UnknownOp { line: u64, op: String },
    #[error("line {line}: {msg}")]
    Invalid { line: u64, msg: String },
    #[error("line {line}: more than {max} operations; refused")]
    TooMany { line: u64, max: usize },
}

/// The lines of an input read with a bound: a line longer than `max`
/// bytes is consumed but not kept, so neither a history nor a capture can
/// make the reader hold more than one bounded line. Lines are numbered
/// from 1, for the errors and skips that name them.
pub(super) struct BoundedLines<R> {
    r: R,
    buf: Vec<u8>,
    max: usize,
    number: u64,
}

/// One line of [`BoundedLines`].
pub(super) struct LineRead {
    /// Its number, from 1.
    pub(super) number: u64,
    /// False when the input ended without a newline.
    pub(super) complete: bool,
    /// Longer than the bound: its bytes were not kept.
    pub(super) too_long: bool,
}

impl<R: BufRead> BoundedLines<R> {
    pub(super) fn new(r: R, max: usize) -> BoundedLines<R> {
        BoundedLines {
            r,
            buf: Vec::new(),
            max,
            number: 0,
        }
    }

    /// The last line read, without its end of line (empty when too long).
    pub(super) fn text(&self) -> &[u8] {
        &self.buf
    }

    /// Read the next line. `Ok(None)` at the end of input; an I/O error
    /// comes with the number of the line it stopped.
    pub(super) fn next_line(&mut self) -> Result<Option<LineRead>, (u64, std::io::Error)> {
        self.number += 1;
        let number = self.number;
        let read = |(complete, too_long)| LineRead {
            number,
            complete,
            too_long,
        };
        self.read().map(|l| l.map(read)).map_err(|e| (number, e))
    }

    /// `Ok(Some((complete, too_long)))`.
    fn read(&mut self) -> std::io::Result<Option<(bool, bool)>> {
        let buf = &mut self.buf;
        buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let chunk = self.r.fill_buf()?;
            if chunk.is_empty() {
                return Ok(any.then_some((false, too_long)));
            }
            any = true;
            let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if !too_long && buf.len() + take <= self.max {
                buf.extend_from_slice(&chunk[..take]);
            } else {
                too_long = true;
                buf.clear();
            }
            self.r.consume(if done { take + 1 } else { take });
            if done {
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                return Ok(Some((true, too_long)));
            }
        }
    }
}

/// Read a whole history from `r`.
pub fn parse<R: BufRead>(r: R, limits: &Limits) -> Result<History, HistoryError> {
    let mut history = History::default();
    let mut lines = BoundedLines::new(r, limits.max_line_bytes);
    loop {
        let read = lines.next_line().map_err(|(line, e)| HistoryError::Io {
            line,
            msg: e.to_string(),
        })?;
        let Some(LineRead {
            number: line,
            complete,
            too_long,
        }) = read
        else {
            return Ok(history);
        };
        if too_long {
            return Err(HistoryError::TooLong {
                line,
                max: limits.max_line_bytes,
            });
        }
        let text = std::str::from_utf8(lines.text()).map_err(|e| HistoryError::NotUtf8 {
            line,
            column: e.valid_up_to() + 1,
        })?;
        if text.trim().is_empty() {
            continue;
        }
        match parse_line(text, line) {
            Ok(Line::Op(op)) => {
                if history.ops.len() >= limits.max_ops {
                    return Err(HistoryError::TooMany {
                        line,
                        max: limits.max_ops,
                    });
                }
                history.ops.push(op);
            }
            Ok(Line::Fault(f)) => history.faults.push(f),
            Err(HistoryError::Json { .. }) if !complete => return Err(HistoryError::Truncated { line }),
            Err(e) => return Err(e),
        }
    }
}

/// [`parse`] over a string (the page's worker has the file as text).
pub fn parse_str(text: &str, limits: &Limits) -> Result<History, HistoryError> {
    parse(text.as_bytes(), limits)
}

enum Line {
    Op(Op),
    Fault(FaultMark),
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOp {
    client: String,
    op: String,
    #[serde(default = "default_key")]
    key: String,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    ttl_ms: Option<u64>,
    #[serde(default)]
    fence: Option<i64>,
    #[serde(default)]
    value: Option<String>,
    invoke_ms: u64,
    #[serde(default)]
    complete_ms: Option<u64>,
    #[serde(default)]
    ok: Option<bool>,
}

fn default_key() -> String {
    "lock".to_owned()
}

fn parse_line(text: &str, line: u64) -> Result<Line, HistoryError> {
    let json = |e: serde_json::Error| HistoryError::Json {
        line,
        msg: e.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(json)?;
    if !value.is_object() {
        return Err(HistoryError::Json {
            line,
            msg: "expected an object".to_owned(),
        });
    }
    let invalid = |msg: String| HistoryError::Invalid { line, msg };
    if value.get("fault").is_some() {
        let mut f: FaultMark = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
        f.line = line;
        return Ok(Line::Fault(f));
    }
    let raw: RawOp = serde_json::from_value(value).map_err(|e| invalid(e.to_string()))?;
    let op = OpKind::parse(&raw.op).ok_or_else(|| HistoryError::UnknownOp {
        line,
        op: raw.op.clone(),
    })?;
    if raw.complete_ms.is_some_and(|c| c < raw.invoke_ms) {
        return Err(invalid("complete_ms is before invoke_ms".to_owned()));
    }
    if raw.ok.is_some() && raw.complete_ms.is_none() {
        return Err(invalid("an outcome (ok) without complete_ms".to_owned()));
    }
    // An acquire whose outcome is unknown may have no token: the library
    // picks it inside the call that failed (redis-py does), so nobody saw it.
    let unknown_acquire = op == OpKind::Acquire && raw.ok.is_none();
    if matches!(op, OpKind::Acquire | OpKind::Release | OpKind::Extend) && raw.token.is_none() && !unknown_acquire {
        return Err(invalid(format!("{} without its token", op.name())));
    }
    if matches!(op, OpKind::Acquire | OpKind::Extend) && raw.ok == Some(true) && raw.ttl_ms.is_none() {
        return Err(invalid(format!("a successful {} without ttl_ms", op.name())));
    }
    Ok(Line::Op(Op {
        line,
        client: raw.client,
        op,
        key: raw.key,
        token: raw.token,
        ttl_ms: raw.ttl_ms,
        fence: raw.fence,
        value: raw.value,
        invoke_ms: raw.invoke_ms,
        complete_ms: raw.complete_ms,
        ok: raw.ok,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"client":"a","op":"acquire","key":"lock","token":"t1","ttl_ms":100,"invoke_ms":0,"complete_ms":2,"ok":true}
{"fault":"pause","target":"a","from_ms":5,"to_ms":300}

{"client":"a","op":"release","token":"t1","invoke_ms":10,"complete_ms":11,"ok":true}
"#;

    #[test]
    fn reads_calls_and_faults_and_names_their_lines() {
        let h = parse_str(GOOD, &Limits::default()).expect("parses");
        assert_eq!(h.ops.len(), 2);
        assert_eq!(h.faults.len(), 1);
        assert_eq!((h.ops[0].line, h.faults[0].line, h.ops[1].line), (1, 2, 4));
        assert_eq!(h.ops[1].key, "lock", "the default key");
        let again = parse_str(&h.ops[0].to_line(), &Limits::default()).expect("a witness line reads back");
        assert_eq!(again.ops[0].token, h.ops[0].token);
    }

    #[test]
    fn hostile_input_gets_an_error_naming_the_line() {
        let l = Limits::default();
        let cut = &GOOD[..GOOD.find("\"ok\":true}\n{\"fault").unwrap_or(0)];
        assert_eq!(parse_str(cut, &l), Err(HistoryError::Truncated { line: 1 }));
        let garbage = b"{\"client\":\"a\"}\n\xff\xfe\x00binary";
        assert!(matches!(
            parse(&garbage[..], &l),
            Err(HistoryError::Invalid { line: 1, .. })
        ));
        assert_eq!(
            parse(&garbage[15..], &l),
            Err(HistoryError::NotUtf8 { line: 1, column: 1 })
        );
        let unknown = GOOD.replace("\"release\"", "\"steal\"");
        assert_eq!(
            parse_str(&unknown, &l),
            Err(HistoryError::UnknownOp {
                line: 4,
                op: "steal".into()
            })
        );
        let typo = GOOD.replace("complete_ms\":11", "completed_ms\":11");
        assert!(matches!(
            parse_str(&typo, &l),
            Err(HistoryError::Invalid { line: 4, .. })
        ));
        assert!(matches!(
            parse_str("[1,2]\n", &l),
            Err(HistoryError::Json { line: 1, .. })
        ));
        let few = Limits { max_ops: 1, ..l };
        assert_eq!(parse_str(GOOD, &few), Err(HistoryError::TooMany { line: 4, max: 1 }));
    }

    /// A 100 MB line is skipped to its end without being stored, then
    /// refused: the reader's memory stays at one capped line.
    #[test]
    fn a_huge_line_is_refused_without_being_held() {
        struct Endless {
            left: usize,
            chunk: Vec<u8>,
        }
        impl std::io::Read for Endless {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let n = out.len().min(self.left).min(self.chunk.len());
                out[..n].copy_from_slice(&self.chunk[..n]);
                self.left -= n;
                if self.left == 0 && n < out.len() {
                    out[n] = b'\n';
                    return Ok(n + 1);
                }
                Ok(n)
            }
        }
        let huge = Endless {
            left: 100 * 1024 * 1024,
            chunk: vec![b'x'; 64 * 1024],
        };
        let r = std::io::BufReader::with_capacity(64 * 1024, huge);
        assert_eq!(
            parse(r, &Limits::default()),
            Err(HistoryError::TooLong {
                line: 1,
                max: 64 * 1024
            })
        );
    }
}
