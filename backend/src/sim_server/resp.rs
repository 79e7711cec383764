//! The Redis wire protocol: an incremental request parser that behaves like
//! redis-server 7.0's `networking.c`, and the RESP2/RESP3 reply encoder.
//!
//! # Why not a codec crate
//!
//! The point of `sim-server` is that a client cannot tell it from
//! redis-server, and that includes how it fails. redis-server has quirks a
//! general-purpose codec would "fix": it accepts telnet-style inline
//! commands, it never checks the two bytes after a bulk string (it just skips
//! them), it treats `*0` and `*-1` as "no command" rather than as errors, and
//! its integers are parsed by `string2ll`, which refuses `+1`, `01` and
//! `-0`. Each refusal has an exact error text and closes the connection. The
//! parser below is a transcription of `processMultibulkBuffer` and
//! `processInlineBuffer` with those rules, and nothing more.
//!
//! # Incremental, bounded, panic-free
//!
//! A request may arrive one byte at a time or as one megabyte of pipelined
//! commands. The parser keeps its place between reads (how many arguments
//! are still due, the length of the bulk string being read, the arguments
//! read so far) so nothing is ever scanned twice: a 500 MB argument costs
//! one copy, not a rescan per read. Every index is checked, so no sequence
//! of bytes can make it panic; every length is checked against redis-server's
//! limits before anything is allocated for it.

use locklab_redis::reply::push_int;
use locklab_redis::Reply;
use thiserror::Error;

/// `PROTO_INLINE_MAX_SIZE`: the longest inline request, and the longest
/// `*<count>` / `$<len>` header line, redis-server accepts (64 KB).
pub(crate) const INLINE_MAX: usize = 64 * 1024;

/// `proto-max-bulk-len`: the largest bulk string a client may send (512 MB).
pub(crate) const PROTO_MAX_BULK_LEN: usize = 512 * 1024 * 1024;

/// The largest `*<count>` redis-server 7.0 accepts: `INT_MAX`. (Older
/// servers stopped at 1024*1024; 7.0.15 really does wait for two billion
/// arguments, bounded in practice by the query buffer limit.)
pub(crate) const MAX_MULTIBULK: i64 = i32::MAX as i64;

/// What one argument costs beyond its bytes, for the query-buffer limit: an
/// argument is a `Vec` header, and a flood of empty arguments must not be
/// free.
const ARG_OVERHEAD: usize = 32;

/// Arguments kept between commands for reuse; a command with more gives the
/// extra back.
const KEEP_ARGS: usize = 64;

/// An argument buffer larger than this is not kept for reuse after its
/// command ran, so one huge `SET` does not pin its memory forever.
const KEEP_ARG_CAPACITY: usize = 64 * 1024;

/// Spare argument buffers kept between batches: enough for a batch of
/// pipelined commands with a few arguments each, none over
/// [`KEEP_SPARE_CAPACITY`] bytes (keys, fields, small values), so an idle
/// connection holds at most a few tens of kilobytes of them.
const KEEP_SPARE: usize = 256;
const KEEP_SPARE_CAPACITY: usize = 128;
/// Spare argv vectors kept between batches, none with room for more than
/// [`KEEP_SPARE_ARGC`] arguments.
const KEEP_SPARE_ARGVS: usize = 64;
const KEEP_SPARE_ARGC: usize = 32;

/// A request redis-server would refuse. Each one is answered with
/// `-ERR <Display text>` and then the connection is closed, exactly as
/// `setProtocolError` does. The texts are redis-server 7.0's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum ProtocolError {
    /// `*abc`, `*+1`, `*01`, or a count above `INT_MAX`.
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// `$abc`, `$-5`, or a length above `proto-max-bulk-len`.
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// Something other than `$` where an argument's header should start.
    /// The byte is shown as `%c` shows it, CR and LF turned to spaces.
    #[error("Protocol error: expected '$', got '{}'", shown(*.0))]
    ExpectedDollar(u8),
    /// An inline request with no newline in its first 64 KB.
    #[error("Protocol error: too big inline request")]
    TooBigInline,
    /// A `*<count>` line with no CR in its first 64 KB.
    #[error("Protocol error: too big mbulk count string")]
    TooBigMbulkCount,
    /// A `$<len>` line with no CR in its first 64 KB.
    #[error("Protocol error: too big bulk count string")]
    TooBigBulkCount,
    /// An inline request `sdssplitargs` cannot split.
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
}

/// A byte as C's `%c` would print it in an error line (which redis-server
/// then sanitises: CR and LF become spaces).
fn shown(b: u8) -> char {
    match b {
        b'\r' | b'\n' => ' ',
        _ => b as char,
    }
}

impl ProtocolError {
    /// The reply that precedes closing the connection, byte for byte.
    /// (Bytes above 0x7f in `ExpectedDollar` go out raw, as in C.)
    pub(crate) fn reply_bytes(&self) -> Vec<u8> {
        let mut out = b"-ERR ".to_vec();
        match self {
            ProtocolError::ExpectedDollar(b) => {
                out.extend_from_slice(b"Protocol error: expected '$', got '");
                out.push(match *b {
                    b'\r' | b'\n' => b' ',
                    other => other,
                });
                out.push(b'\'');
            }
            other => out.extend_from_slice(other.to_string().as_bytes()),
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

/// C's `string2ll` (util.c): the only integer syntax redis-server accepts
/// in a frame header — core's, so the wire and the commands agree.
pub(crate) use locklab_redis::server::string2ll;

/// Where the parser is inside a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between requests: the next byte decides multibulk (`*`) or inline.
    Idle,
    /// Inside `*<count>`: `remaining` arguments still due, and the length
    /// of the one being read once its `$<len>` header has been seen.
    Multibulk { remaining: usize, bulk: Option<usize> },
}

/// What [`Parser::parse`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A complete command: [`Parser::take_argv`] takes its arguments.
    Command,
    /// A request with no arguments (`*0`, `*-1`, a blank inline line):
    /// redis-server skips those without a reply.
    Empty,
    /// The buffer ends inside a request; read more and call again.
    Incomplete,
}

/// The request parser of one connection. See the module documentation.
#[derive(Debug)]
pub(crate) struct Parser {
    state: State,
    /// Argument buffers, reused from command to command; the first `argc`
    /// belong to the current command.
    args: Vec<Vec<u8>>,
    argc: usize,
    /// Bytes (plus per-argument overhead) of the arguments of a command
    /// still being read, for the query-buffer limit.
    partial_bytes: usize,
    /// How many bytes after `pos` are already known to hold no line
    /// terminator: a line that trickles in one byte per read is scanned
    /// once, not once per read (which would be quadratic up to 64 KB).
    scanned: usize,
    /// Argument buffers and argv vectors of commands that have run, given
    /// back by the connection ([`Parser::give_back`]) for the next ones:
    /// a pipelined batch of small commands then allocates nothing, where
    /// one allocation per argument was most of what a connection's
    /// thread spent under `redis-benchmark -P 16`.
    spare_args: Vec<Vec<u8>>,
    spare_argvs: Vec<Vec<Vec<u8>>>,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    pub(crate) fn new() -> Parser {
        Parser {
            state: State::Idle,
            args: Vec::new(),
            argc: 0,
            partial_bytes: 0,
            scanned: 0,
            spare_args: Vec::new(),
            spare_argvs: Vec::new(),
        }
    }

    /// Take the arguments of the command [`Parser::parse`] just completed
    /// (their buffers move out; nothing is copied).
    pub(crate) fn take_argv(&mut self) -> Vec<Vec<u8>> {
        let mut argv = self.spare_argvs.pop().unwrap_or_default();
        argv.extend(self.args.drain(..self.argc));
        self.argc = 0;
        argv
    }

    /// Keep the buffers of commands that have run for the next commands'
    /// arguments, within [`KEEP_SPARE`] and [`KEEP_SPARE_ARGVS`], so what
    /// is kept stays small.
    pub(crate) fn give_back(&mut self, argvs: impl IntoIterator<Item = Vec<Vec<u8>>>) {
        for mut argv in argvs {
            for mut arg in argv.drain(..) {
                if self.spare_args.len() < KEEP_SPARE && arg.capacity() <= KEEP_SPARE_CAPACITY {
                    arg.clear();
                    self.spare_args.push(arg);
                }
            }
            if self.spare_argvs.len() < KEEP_SPARE_ARGVS && argv.capacity() <= KEEP_SPARE_ARGC {
                self.spare_argvs.push(argv);
            }
        }
    }

    /// Memory held for a command that has not finished arriving: what the
    /// connection's query-buffer limit counts besides unread bytes.
    pub(crate) fn partial_bytes(&self) -> usize {
        self.partial_bytes
    }

    /// How many more bytes the argument being read needs, if one is being
    /// read: lets the reader size its next read for a large bulk string.
    pub(crate) fn bulk_remaining(&self, available: usize) -> usize {
        match self.state {
            State::Multibulk { bulk: Some(len), .. } => (len + 2).saturating_sub(available),
            _ => 0,
        }
    }

    /// Give back what the last command's arguments held beyond the usual,
    /// so a connection that once sent a huge request shrinks again.
    fn recycle(&mut self) {
        self.args.truncate(KEEP_ARGS);
        for a in &mut self.args {
            if a.capacity() > KEEP_ARG_CAPACITY {
                *a = Vec::new();
            }
        }
        self.argc = 0;
    }

    /// Store the next argument, reusing a buffer when there is one.
    fn push_arg(&mut self, bytes: &[u8]) {
        if let Some(slot) = self.args.get_mut(self.argc) {
            slot.clear();
            slot.extend_from_slice(bytes);
        } else if let Some(mut spare) = self.spare_args.pop() {
            spare.extend_from_slice(bytes);
            self.args.push(spare);
        } else {
            self.args.push(bytes.to_vec());
        }
        self.argc += 1;
    }

    /// Parse the next request from `buf[*pos..]`, advancing `*pos` past
    /// what was consumed. On [`Parsed::Incomplete`] everything consumed so
    /// far is remembered; call again with the same buffer, grown, and the
    /// same `pos`.
    pub(crate) fn parse(&mut self, buf: &[u8], pos: &mut usize) -> Result<Parsed, ProtocolError> {
        if self.state == State::Idle {
            if self.argc > 0 {
                self.recycle();
            }
            let Some(&first) = buf.get(*pos) else {
                return Ok(Parsed::Incomplete);
            };
            if first != b'*' {
                return self.parse_inline(buf, pos);
            }
            match self.multibulk_header(buf, pos)? {
                None => return Ok(Parsed::Incomplete),
                Some(0) => return Ok(Parsed::Empty),
                Some(count) => {
                    self.state = State::Multibulk {
                        remaining: count,
                        bulk: None,
                    };
                    self.partial_bytes = 0;
                }
            }
        }
        self.parse_bulks(buf, pos)
    }

    /// The first `byte` in `buf[start..]`, relative to `start`, resuming
    /// where the previous unsuccessful search of the same line stopped.
    fn find(&mut self, byte: u8, buf: &[u8], start: usize) -> Option<usize> {
        let rest = &buf[start..];
        let from = self.scanned.min(rest.len());
        match memchr(byte, &rest[from..]) {
            Some(i) => {
                self.scanned = from + i;
                Some(from + i)
            }
            None => {
                self.scanned = rest.len();
                None
            }
        }
    }

    /// Move past `n` consumed bytes; the next line starts a new search.
    fn advance(&mut self, pos: &mut usize, n: usize) {
        *pos += n;
        self.scanned = 0;
    }

    /// `processInlineBuffer`: a telnet-style line, split like redis-cli
    /// splits what you type.
    fn parse_inline(&mut self, buf: &[u8], pos: &mut usize) -> Result<Parsed, ProtocolError> {
        let Some(nl) = self.find(b'\n', buf, *pos) else {
            let rest = &buf[*pos..];
            if rest.len() > INLINE_MAX {
                return Err(ProtocolError::TooBigInline);
            }
            return Ok(Parsed::Incomplete);
        };
        // redis-server only notices the size while it waits for the
        // newline, so how much it tolerates depends on how the bytes were
        // split into reads; refusing every line over the limit is the
        // deterministic version of the same rule.
        if nl > INLINE_MAX {
            return Err(ProtocolError::TooBigInline);
        }
        let rest = &buf[*pos..];
        let line = match rest[..nl].strip_suffix(b"\r") {
            Some(l) => l,
            None => &rest[..nl],
        };
        let argv = locklab_redis::cli::parse_line(line).map_err(|_| ProtocolError::UnbalancedQuotes)?;
        self.advance(pos, nl + 1);
        if argv.is_empty() {
            return Ok(Parsed::Empty);
        }
        for a in &argv {
            self.push_arg(a);
        }
        Ok(Parsed::Command)
    }

    /// Find the CR ending a header line that starts at `start`. `Ok(None)`:
    /// not all here yet. Like redis-server, the byte after the CR is
    /// skipped without being looked at, but it must have arrived.
    fn header_line(
        &mut self,
        buf: &[u8],
        start: usize,
        too_big: ProtocolError,
    ) -> Result<Option<usize>, ProtocolError> {
        let available = buf.len() - start;
        match self.find(b'\r', buf, start) {
            Some(cr) if cr > INLINE_MAX => Err(too_big),
            Some(cr) if cr + 1 < available => Ok(Some(cr)),
            Some(_) => Ok(None),
            None if available > INLINE_MAX => Err(too_big),
            None => Ok(None),
        }
    }

    /// `*<count>\r\n`: `Some(0)` for an empty request.
    fn multibulk_header(&mut self, buf: &[u8], pos: &mut usize) -> Result<Option<usize>, ProtocolError> {
        let Some(cr) = self.header_line(buf, *pos, ProtocolError::TooBigMbulkCount)? else {
            return Ok(None);
        };
        let digits = &buf[*pos + 1..*pos + cr];
        let count = match string2ll(digits) {
            Some(n) if n <= MAX_MULTIBULK => n,
            _ => return Err(ProtocolError::InvalidMultibulkLength),
        };
        self.advance(pos, cr + 2);
        Ok(Some(usize::try_from(count).unwrap_or(0)))
    }

    /// The `$<len>\r\n<bytes>\r\n` arguments of a multibulk request.
    fn parse_bulks(&mut self, buf: &[u8], pos: &mut usize) -> Result<Parsed, ProtocolError> {
        while let State::Multibulk { remaining, bulk } = self.state {
            let len = match bulk {
                Some(len) => len,
                None => {
                    let Some(cr) = self.header_line(buf, *pos, ProtocolError::TooBigBulkCount)? else {
                        return Ok(Parsed::Incomplete);
                    };
                    let line = &buf[*pos..*pos + cr];
                    match line.first() {
                        Some(b'$') => {}
                        Some(&other) => return Err(ProtocolError::ExpectedDollar(other)),
                        // An empty line: the CR itself is where `$` should be.
                        None => return Err(ProtocolError::ExpectedDollar(b'\r')),
                    }
                    let len = match string2ll(&line[1..]) {
                        Some(n) if n >= 0 && n as u64 <= PROTO_MAX_BULK_LEN as u64 => n as usize,
                        _ => return Err(ProtocolError::InvalidBulkLength),
                    };
                    self.advance(pos, cr + 2);
                    self.state = State::Multibulk {
                        remaining,
                        bulk: Some(len),
                    };
                    len
                }
            };
            // The argument and the two bytes after it (meant to be CRLF;
            // redis-server skips them unchecked, and so do we).
            if buf.len() - *pos < len + 2 {
                return Ok(Parsed::Incomplete);
            }
            let start = *pos;
            self.push_arg(&buf[start..start + len]);
            self.advance(pos, len + 2);
            self.partial_bytes += len + ARG_OVERHEAD;
            self.state = if remaining > 1 {
                State::Multibulk {
                    remaining: remaining - 1,
                    bulk: None,
                }
            } else {
                State::Idle
            };
        }
        self.partial_bytes = 0;
        Ok(Parsed::Command)
    }
}

/// The position of `needle` in `hay`. (`<[u8]>::iter().position` compiles
/// to a tight loop; no need for the memchr crate at these sizes.)
fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

/// `<prefix><n>\r\n`, the header of every aggregate and bulk (the real
/// driver frames its commands with it too).
pub(crate) fn push_header(out: &mut Vec<u8>, prefix: u8, n: usize) {
    out.push(prefix);
    push_int(out, n as i64);
    out.extend_from_slice(b"\r\n");
}

/// A one-line reply (status or error): CR and LF would end the line early
/// and desynchronise the client, so redis-server turns them into spaces.
fn push_line(out: &mut Vec<u8>, prefix: u8, text: &str) {
    out.push(prefix);
    let start = out.len();
    out.extend_from_slice(text.as_bytes());
    for b in &mut out[start..] {
        if *b == b'\r' || *b == b'\n' {
            *b = b' ';
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// Encode `reply` for a client speaking RESP3 (`resp3`) or RESP2.
///
/// The differences are exactly redis-server's: a RESP2 client gets a map
/// as a flat array of keys and values (`addReplyMapLen` doubles the
/// count), and the two RESP2 nulls (`$-1` for a missing value, `*-1` for an
/// aborted `EXEC`) are both RESP3's single null `_`.
pub(crate) fn encode(out: &mut Vec<u8>, reply: &Reply, resp3: bool) {
    match reply {
        Reply::Status(s) => push_line(out, b'+', s),
        Reply::Error(e) if e.is_empty() => out.extend_from_slice(b"-ERR\r\n"),
        Reply::Error(e) => push_line(out, b'-', e),
        Reply::Integer(i) => {
            out.push(b':');
            push_int(out, *i);
            out.extend_from_slice(b"\r\n");
        }
        Reply::Bulk(b) => {
            push_header(out, b'$', b.len());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        Reply::Nil if resp3 => out.extend_from_slice(b"_\r\n"),
        Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
        Reply::NilArray if resp3 => out.extend_from_slice(b"_\r\n"),
        Reply::NilArray => out.extend_from_slice(b"*-1\r\n"),
        Reply::Array(items) => {
            push_header(out, b'*', items.len());
            for item in items {
                encode(out, item, resp3);
            }
        }
        Reply::Map(pairs) => {
            if resp3 {
                push_header(out, b'%', pairs.len());
            } else {
                push_header(out, b'*', pairs.len() * 2);
            }
            for (k, v) in pairs {
                encode(out, k, resp3);
                encode(out, v, resp3);
            }
        }
        // RESP3's other types, as redis-server writes them
        // (`addReplyDouble`, `addReplyBool`, `addReplySetLen`,
        // `addReplyBigNum`, `addReplyVerbatim`, `addReplyPushLen`); a RESP2
        // client gets them lowered.
        Reply::Double(d) if resp3 => push_line(out, b',', d),
        Reply::Boolean(b) if resp3 => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        Reply::BigNumber(n) if resp3 => push_line(out, b'(', n),
        Reply::Verbatim { format, text } if resp3 => {
            push_header(out, b'=', text.len() + 4);
            out.extend_from_slice(format.as_bytes());
            out.push(b':');
            out.extend_from_slice(text);
            out.extend_from_slice(b"\r\n");
        }
        Reply::Set(items) | Reply::Push(items) if resp3 => {
            push_header(
                out,
                if matches!(reply, Reply::Set(_)) { b'~' } else { b'>' },
                items.len(),
            );
            for item in items {
                encode(out, item, resp3);
            }
        }
        Reply::Pairs(pairs) if resp3 => {
            push_header(out, b'*', pairs.len());
            for (k, v) in pairs {
                out.extend_from_slice(b"*2\r\n");
                encode(out, k, resp3);
                encode(out, v, resp3);
            }
        }
        other => encode(out, &other.clone().into_resp2(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parse everything in `input`, fed in one go: the commands, then the
    /// error or `None` if the input ended cleanly or mid-request.
    fn parse_all(input: &[u8]) -> (Vec<Vec<String>>, Option<ProtocolError>) {
        let mut p = Parser::new();
        let mut pos = 0;
        let mut cmds = Vec::new();
        loop {
            match p.parse(input, &mut pos) {
                Ok(Parsed::Command) => cmds.push(
                    p.take_argv()
                        .iter()
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect(),
                ),
                Ok(Parsed::Empty) => {}
                Ok(Parsed::Incomplete) => return (cmds, None),
                Err(e) => return (cmds, Some(e)),
            }
        }
    }

    #[test]
    fn string2ll_is_strict() {
        assert_eq!(string2ll(b"0"), Some(0));
        assert_eq!(string2ll(b"-1"), Some(-1));
        assert_eq!(string2ll(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(string2ll(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"-0",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"1x",
            b"123456789012345678901",
        ] {
            assert_eq!(string2ll(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn multibulk_and_inline() {
        let (cmds, err) = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n  \r\n*0\r\n*-1\r\nECHO \"a b\"\n");
        assert_eq!(err, None);
        assert_eq!(cmds, vec![vec!["GET", "k"], vec!["PING"], vec!["ECHO", "a b"]]);
    }

    #[test]
    fn byte_at_a_time_gives_the_same_commands() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\nPING\r\n*1\r\n$4\r\nPING\r\n";
        let mut p = Parser::new();
        let mut buf = Vec::new();
        let mut pos = 0;
        let mut cmds = Vec::new();
        for &b in input.iter() {
            buf.push(b);
            loop {
                match p.parse(&buf, &mut pos).unwrap() {
                    Parsed::Command => cmds.push(p.take_argv()),
                    Parsed::Empty => {}
                    Parsed::Incomplete => break,
                }
            }
        }
        assert_eq!(cmds.len(), 3);
        assert_eq!(cmds[0], vec![b"SET".to_vec(), b"k".to_vec(), b"hello".to_vec()]);
    }

    #[test]
    fn redis_quirks_are_kept() {
        // The two bytes after a bulk are skipped, whatever they are.
        let (cmds, err) = parse_all(b"*1\r\n$4\r\nPINGxxPING\r\n");
        assert_eq!((cmds.len(), err), (2, None));
        // The byte after a header's CR is skipped too.
        let (_, err) = parse_all(b"*1\r$4\r\nPING\r\n");
        assert_eq!(err, Some(ProtocolError::ExpectedDollar(b'4')));
    }

    #[test]
    fn protocol_errors() {
        let cases: &[(&[u8], ProtocolError)] = &[
            (b"*abc\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*+1\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*2147483648\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*1\r\n$-5\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\n$536870913\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\nPING\r\n", ProtocolError::ExpectedDollar(b'P')),
            (b"PING \"a\r\n", ProtocolError::UnbalancedQuotes),
        ];
        for (input, want) in cases {
            let (_, err) = parse_all(input);
            assert_eq!(err.as_ref(), Some(want), "{:?}", String::from_utf8_lossy(input));
        }
        assert_eq!(parse_all(&[b'x'; INLINE_MAX + 1]).1, Some(ProtocolError::TooBigInline));
        assert_eq!(parse_all(&[b'x'; INLINE_MAX]).1, None);
        let mut big = b"*1\r\n$".to_vec();
        big.extend(std::iter::repeat_n(b'1', INLINE_MAX + 1));
        assert_eq!(parse_all(&big).1, Some(ProtocolError::TooBigBulkCount));
        assert_eq!(
            ProtocolError::ExpectedDollar(b'\n').reply_bytes(),
            b"-ERR Protocol error: expected '$', got ' '\r\n"
        );
    }

    #[test]
    fn commands_before_an_error_still_count() {
        let (cmds, err) = parse_all(b"PING\r\n*1\r\n$x\r\n");
        assert_eq!((cmds.len(), err), (1, Some(ProtocolError::InvalidBulkLength)));
    }

    #[test]
    fn a_huge_count_allocates_nothing_up_front() {
        let mut p = Parser::new();
        let mut pos = 0;
        assert_eq!(p.parse(b"*2147483647\r\n", &mut pos), Ok(Parsed::Incomplete));
        assert_eq!(p.args.capacity(), 0);
    }

    /// The buffers of commands that ran carry the next commands'
    /// arguments; a large one is not kept.
    #[test]
    fn buffers_of_commands_that_ran_are_reused_within_bounds() {
        let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        let mut p = Parser::new();
        let mut pos = 0;
        assert_eq!(p.parse(input, &mut pos), Ok(Parsed::Command));
        let argv = p.take_argv();
        let want = argv.clone();
        p.give_back([argv, vec![vec![0u8; 1 << 20]]]);
        assert_eq!((p.spare_args.len(), p.spare_argvs.len()), (3, 2));
        pos = 0;
        assert_eq!(p.parse(input, &mut pos), Ok(Parsed::Command));
        assert_eq!(p.take_argv(), want);
        assert_eq!((p.spare_args.len(), p.spare_argvs.len()), (0, 1));
        p.give_back((0..1000).map(|_| vec![b"x".to_vec(); 40]));
        // Only the small argument buffers stay; argvs of 40 do not.
        assert_eq!((p.spare_args.len(), p.spare_argvs.len()), (KEEP_SPARE, 1));
    }

    fn enc(r: &Reply, resp3: bool) -> String {
        let mut out = Vec::new();
        encode(&mut out, r, resp3);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn encoding() {
        assert_eq!(enc(&Reply::ok(), false), "+OK\r\n");
        assert_eq!(enc(&Reply::error("ERR a\r\nb"), false), "-ERR a  b\r\n");
        assert_eq!(enc(&Reply::Integer(-42), false), ":-42\r\n");
        assert_eq!(enc(&Reply::Integer(i64::MIN), false), ":-9223372036854775808\r\n");
        assert_eq!(enc(&Reply::bulk("hi"), false), "$2\r\nhi\r\n");
        assert_eq!(enc(&Reply::Nil, false), "$-1\r\n");
        assert_eq!(enc(&Reply::NilArray, false), "*-1\r\n");
        assert_eq!(enc(&Reply::Nil, true), "_\r\n");
        assert_eq!(enc(&Reply::NilArray, true), "_\r\n");
        let map = Reply::Map(vec![(Reply::bulk("f"), Reply::Array(vec![Reply::Nil]))]);
        assert_eq!(enc(&map, false), "*2\r\n$1\r\nf\r\n*1\r\n$-1\r\n");
        assert_eq!(enc(&map, true), "%1\r\n$1\r\nf\r\n*1\r\n_\r\n");
    }
}
