//! The real side: one connection to a real redis-server, speaking core's
//! [`Reply`].
//!
//! `locklab cli --real` and the differential tests both need the same thing
//! from a real Redis: send an argv exactly as typed, get back what the server
//! sent, *including its errors*, as a [`Reply`] that prints the way redis-cli
//! prints it. The `redis` crate gets us most of the way, with three corners
//! worth knowing:
//!
//! * **Server errors are replies, not failures.** `Cmd::query` turns a `-ERR …`
//!   line into an `Err(RedisError)` whose display text is reworded
//!   (`ResponseError: syntax error`). We go one level lower, to
//!   [`ConnectionLike::req_packed_command`], which hands back the parsed
//!   [`Value::ServerError`] untouched. redis-rs splits the error line at its
//!   first space into a code and an optional detail and stores both verbatim,
//!   so `code + " " + detail` rebuilds the line byte for byte (trailing
//!   blanks included, as in `ERR unknown command 'FOO', with args beginning
//!   with: 'a' `). Errors nested in an array (an `EXEC` whose second command
//!   hit `WRONGTYPE`) are rebuilt the same way, element by element. Only I/O
//!   and protocol failures become [`RealError`].
//! * **`+OK` is special-cased** by redis-rs as [`Value::Okay`]; it becomes
//!   `Reply::Status("OK")` again, while a bulk `"OK"` stays a bulk.
//! * **The two RESP2 nulls collapse.** redis-rs parses both `$-1` (null bulk)
//!   and `*-1` (null array) to [`Value::Nil`]. In the command set the lab uses
//!   only `EXEC` answers `*-1` (after a `WATCH` fired, or … never otherwise:
//!   Lua cannot produce a null array, it turns `false`/`nil` into `$-1`), so a
//!   nil reply *to `EXEC`* is reported as [`Reply::NilArray`] and every other
//!   nil as [`Reply::Nil`]. redis-cli prints both as `(nil)` anyway.
//!
//! The connection is opened without redis-rs's `CLIENT SETINFO` handshake:
//! redis-server 7.0 does not know that subcommand and would count the two
//! rejected calls in its `INFO` error statistics, which the lessons read.
//!
//! Status and error lines must be UTF-8 for redis-rs to parse them (bulk
//! strings are binary-safe); a server that sends anything else is reported as
//! a protocol error.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use locklab_core::reply::Reply;
use redis::{ConnectionLike, IntoConnectionInfo, Value};
use thiserror::Error;

use crate::sim_server::resp::push_header;

/// A failure to talk to the server at all. A reply the server sent, even an
/// error reply, is never one of these.
#[derive(Debug, Error)]
pub enum RealError {
    /// The URL could not be understood, or the connection could not be made.
    #[error("cannot connect to {url}: {source}")]
    Connect {
        /// The URL given to [`RealConnection::open`], without credentials
        /// ([`public_url`]): this text reaches browsers and logs.
        url: String,
        /// What redis-rs reported.
        #[source]
        source: redis::RedisError,
    },
    /// Reading or writing the socket failed, or the reply could not be parsed.
    #[error("connection to redis-server failed: {0}")]
    Transport(#[source] redis::RedisError),
    /// Reading or writing a session's async link failed, or timed out
    /// ([`Link`](crate::real::session::link::Link)).
    #[error("connection to redis-server failed: {0}")]
    Io(#[source] std::io::Error),
    /// The server sent a RESP3 value core's [`Reply`] has no place for.
    #[error("unsupported reply from redis-server: {0}")]
    Unsupported(String),
    /// An empty argv cannot be sent (redis-cli ignores an empty line).
    #[error("empty command")]
    EmptyCommand,
}

/// `host:port` of a redis URL: what may be shown of it anywhere (a
/// message, an error, a log line, the health report). The user name,
/// password, database and query of `redis://user:pass@host:port/2?…` stay in
/// the backend: a lab page is served to a browser that also visits other
/// sites, and `locklab serve --redis URL` may carry the owner's password.
pub fn display_addr(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    // The last '@' first: a password may hold '/', '?' or '#' unescaped,
    // and cutting the path before it would show part of the password.
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.split(['/', '?', '#']).next().unwrap_or(rest).to_owned()
}

/// A redis URL as it may be shown: `redis://host:port`, never credentials.
pub fn public_url(url: &str) -> String {
    let scheme = url.split_once("://").map_or("redis", |(s, _)| s);
    format!("{scheme}://{}", display_addr(url))
}

/// Does this redis URL carry a password (`redis://user:PW@host`,
/// `redis://:PW@host`)? Such a URL on a command line is visible to every
/// local user in `ps`.
pub fn has_password(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
}

/// `url` with `password` put in (percent-encoded, as redis-rs decodes
/// it), for a password that comes from a file rather than the command
/// line; the user name, if the URL has one, is kept.
pub fn with_password(url: &str, password: &str) -> Result<String, String> {
    if has_password(url) {
        return Err(format!(
            "{} already has a password; give it in the URL or in the file, not both",
            public_url(url)
        ));
    }
    let (scheme, rest) = url.split_once("://").unwrap_or(("redis", url));
    let (user, host) = rest.rsplit_once('@').unwrap_or(("", rest));
    let encoded: String = password
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    Ok(format!("{scheme}://{user}:{encoded}@{host}"))
}

/// How long to wait for the TCP connection itself.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection to a real redis-server. Commands run in order on the same
/// socket, so `MULTI`/`WATCH` state lives as long as the value does.
pub struct RealConnection {
    conn: redis::Connection,
    /// Subscriptions it holds, for [`RealConnection::read_rest`].
    held: crate::real::replies::Subscriptions,
}

impl std::fmt::Debug for RealConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealConnection").finish_non_exhaustive()
    }
}

impl RealConnection {
    /// Connect to `url` (`redis://127.0.0.1:6379/`, with an optional database
    /// number and credentials as redis-rs understands them).
    pub fn open(url: &str) -> Result<Self, RealError> {
        let connect_err = |source| RealError::Connect {
            url: public_url(url),
            source,
        };
        let info = url.into_connection_info().map_err(connect_err)?;
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let info = info.set_redis_settings(settings);
        let client = redis::Client::open(info).map_err(connect_err)?;
        let conn = client
            .get_connection_with_timeout(CONNECT_TIMEOUT)
            .map_err(connect_err)?;
        Ok(RealConnection::from_connection(conn))
    }

    /// Wrap a connection opened elsewhere.
    pub fn from_connection(conn: redis::Connection) -> Self {
        RealConnection {
            conn,
            held: Default::default(),
        }
    }

    /// Send one command, exactly these arguments, and return the server's
    /// reply. Server errors come back as `Ok(Reply::Error(full line))`.
    pub fn execute(&mut self, argv: &[Vec<u8>]) -> Result<Reply, RealError> {
        let name = argv.first().ok_or(RealError::EmptyCommand)?;
        let packed = pack_command(argv);
        let value = self.conn.req_packed_command(&packed).map_err(RealError::Transport)?;
        let is_exec = name.eq_ignore_ascii_case(b"exec");
        match value {
            Value::Nil if is_exec => Ok(Reply::NilArray),
            other => value_to_reply(other),
        }
    }

    /// The rest of what redis-server writes for `sent` once its first
    /// reply, `first`, was read ([`Replies`](crate::real::replies::Replies)
    /// says what is owed): its answer, with the connection in step again.
    /// `queued`: the transaction's commands as sent, when `sent` is an
    /// `EXEC`.
    pub fn read_rest(&mut self, sent: &[Vec<u8>], queued: &[Vec<Vec<u8>>], first: Reply) -> Result<Reply, RealError> {
        // A blocking connection keeps every value: `Err` cannot happen.
        let mut replies = match crate::real::replies::Replies::new(sent, queued, first) {
            Ok(r) => r,
            Err(whole) => return Ok(whole),
        };
        while replies.owed(&mut self.held) {
            let value = self.conn.recv_response().map_err(RealError::Transport)?;
            replies.feed(value_to_reply(value)?);
        }
        Ok(replies.answer())
    }

    /// Send `commands` in one write and return their replies, in order
    /// (a pipeline; none of them an `EXEC`). A server error is that
    /// command's reply, as [`execute`](RealConnection::execute) gives it.
    pub fn pipeline(&mut self, commands: &[Vec<Vec<u8>>]) -> Result<Vec<Reply>, RealError> {
        let packed = pack_pipeline(commands)?;
        let values = self
            .conn
            .req_packed_commands(&packed, 0, commands.len())
            .map_err(RealError::Transport)?;
        values.into_iter().map(value_to_reply).collect()
    }

    /// Set (or clear) the socket's read timeout. `DEBUG SLEEP` and `WAIT`
    /// legitimately block, so the default is no timeout.
    pub fn set_read_timeout(&self, dur: Option<Duration>) -> Result<(), RealError> {
        self.conn.set_read_timeout(dur).map_err(RealError::Transport)
    }

    /// Is the connection still usable as far as redis-rs knows?
    pub fn is_open(&self) -> bool {
        self.conn.is_open()
    }
}

/// RESP2 multibulk framing of an argv: `*N\r\n` then `$len\r\narg\r\n` each.
pub fn pack_command(argv: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + argv.iter().map(|a| a.len() + 16).sum::<usize>());
    pack_into(&mut out, argv);
    out
}

/// `commands` packed one after the other, for one write; an empty
/// command is refused before anything is packed to be sent.
pub fn pack_pipeline<A: AsRef<[Vec<u8>]>>(commands: &[A]) -> Result<Vec<u8>, RealError> {
    let mut out = Vec::new();
    for argv in commands {
        if argv.as_ref().is_empty() {
            return Err(RealError::EmptyCommand);
        }
        pack_into(&mut out, argv.as_ref());
    }
    Ok(out)
}

/// [`pack_command`] appended to `out`, with no allocation of its own (a
/// pipeline packs its commands into one buffer).
pub fn pack_into(out: &mut Vec<u8>, argv: &[Vec<u8>]) {
    push_header(out, b'*', argv.len());
    for arg in argv {
        push_header(out, b'$', arg.len());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// The full error line redis-server sent, rebuilt from redis-rs's split.
pub fn server_error_text(err: &redis::ServerError) -> String {
    match err.details() {
        Some(detail) => format!("{} {}", err.code(), detail),
        None => err.code().to_owned(),
    }
}

/// Convert a redis-rs value to core's reply, faithfully: status stays status,
/// bulk stays bulk, errors (at any depth) stay error replies.
pub fn value_to_reply(value: Value) -> Result<Reply, RealError> {
    Ok(match value {
        Value::Nil => Reply::Nil,
        Value::Int(i) => Reply::Integer(i),
        Value::BulkString(b) => Reply::Bulk(b),
        Value::Okay => Reply::Status("OK".to_owned()),
        Value::SimpleString(s) => Reply::Status(s),
        Value::ServerError(e) => Reply::Error(server_error_text(&e)),
        Value::Array(items) | Value::Set(items) => {
            Reply::Array(items.into_iter().map(value_to_reply).collect::<Result<_, _>>()?)
        }
        Value::Map(pairs) => Reply::Map(
            pairs
                .into_iter()
                .map(|(k, v)| Ok((value_to_reply(k)?, value_to_reply(v)?)))
                .collect::<Result<_, RealError>>()?,
        ),
        // RESP3-only shapes, lowered the way redis-server lowers them for a
        // RESP2 client. The lab speaks RESP2, so these are defensive.
        Value::Double(d) => Reply::Bulk(format_double(d).into_bytes()),
        Value::Boolean(b) => Reply::Integer(i64::from(b)),
        Value::VerbatimString { text, .. } => Reply::Bulk(text.into_bytes()),
        Value::BigNumber(n) => Reply::Bulk(n.to_string().into_bytes()),
        Value::Attribute { data, .. } => value_to_reply(*data)?,
        other => return Err(RealError::Unsupported(format!("{other:?}"))),
    })
}

/// A double as redis-server writes it in RESP2 (`%.17g`-ish; only for the
/// defensive RESP3 arm above).
fn format_double(d: f64) -> String {
    if d.is_infinite() {
        if d > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        d.to_string()
    }
}

/// One command on a fresh connection to a loopback port (a managed
/// server or sentinel the lab started): for setting up and watching them.
pub fn command(port: u16, argv: &[&str]) -> Result<Reply, String> {
    let mut conn = RealConnection::open(&format!("redis://127.0.0.1:{port}/")).map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let argv: Vec<Vec<u8>> = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
    conn.execute(&argv).map_err(|e| e.to_string())
}

/// A node a session may talk to: a display name and the URL to reach it
/// with *administrative* credentials (used only to create and delete the
/// session's ACL user; commands go through the ACL user's connection).
#[derive(Clone, Debug)]
pub struct NodeTarget {
    pub name: String,
    pub url: String,
}

impl NodeTarget {
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> Self {
        NodeTarget {
            name: name.into(),
            url: url.into(),
        }
    }
}

/// `n` hex digits from the standard library's randomly keyed SipHash
/// (`RandomState` is seeded from the OS per process and perturbed per
/// instance): unguessable enough for a per-session ACL password on
/// loopback, without another dependency.
pub fn random_hex(n: usize) -> String {
    let mut out = String::with_capacity(n + 16);
    let mut counter = 0u64;
    while out.len() < n {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(counter);
        h.write_u128(std::time::Instant::now().elapsed().as_nanos());
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        out.push_str(&format!("{:016x}", h.finish()));
        counter += 1;
    }
    out.truncate(n);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_packed_as_resp_multibulk() {
        let argv = [b"SET".to_vec(), b"k".to_vec(), Vec::new(), vec![b'x'; 1234]];
        let mut want = b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$1234\r\n".to_vec();
        want.extend(vec![b'x'; 1234]);
        want.extend(b"\r\n");
        assert_eq!(pack_command(&argv), want);
        let mut two = Vec::new();
        pack_into(&mut two, &argv[..1]);
        pack_into(&mut two, &argv[..1]);
        assert_eq!(two, b"*1\r\n$3\r\nSET\r\n*1\r\n$3\r\nSET\r\n");
        let many: Vec<Vec<u8>> = (0..10).map(|i| i.to_string().into_bytes()).collect();
        assert!(pack_command(&many).starts_with(b"*10\r\n$1\r\n0\r\n"));
    }

    #[test]
    fn a_password_from_a_file_goes_into_the_url_encoded() {
        assert!(has_password("redis://default:pw@127.0.0.1:6379/"));
        assert!(has_password("redis://:pw@127.0.0.1:6379"));
        assert!(!has_password("redis://default@127.0.0.1:6379"));
        assert!(!has_password("redis://127.0.0.1:6379"));
        assert_eq!(
            with_password("redis://127.0.0.1:6379/", "p@ss:w/rd ü").unwrap(),
            "redis://:p%40ss%3Aw%2Frd%20%C3%BC@127.0.0.1:6379/"
        );
        assert_eq!(
            with_password("redis://alice@127.0.0.1:6379", "pw").unwrap(),
            "redis://alice:pw@127.0.0.1:6379"
        );
        let e = with_password("redis://alice:old@127.0.0.1:6379", "pw").unwrap_err();
        assert_eq!(
            e,
            "redis://127.0.0.1:6379 already has a password; give it in the URL or in the file, not both"
        );
    }

    #[test]
    fn random_hex_is_hex_and_varies() {
        let a = random_hex(32);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, random_hex(32));
    }
}
