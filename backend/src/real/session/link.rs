//! A session's connection on tokio: what lets a WebSocket's commands run on
//! the async workers instead of a blocking thread each.
//!
//! [`RealConnection`](crate::real::conn::RealConnection) is the `redis`
//! crate's blocking connection; every command on it parks a thread in
//! `read(2)`, and the web API used to pay a `spawn_blocking` hand-off (two
//! thread wake-ups) per message to keep that off its workers. A [`Link`]
//! does the same job on a tokio socket, and adds what a blocking
//! request/response connection cannot: several commands in **one write**,
//! their replies read back in order ([`Link::send`] then [`Link::read`]).
//! Redis runs a connection's commands in the order they arrive, so a
//! lock-watch peek written right behind a command sees what the command
//! left — the pipelining redis-server's own `redis-benchmark -P` relies on.
//!
//! Replies are read into core's [`Reply`] by the same rules as
//! [`value_to_reply`](crate::real::conn::value_to_reply): an error line is a
//! reply (verbatim), `+OK` a status, the one null array the lab meets
//! (`EXEC` after a `WATCH` fired) [`Reply::NilArray`] and every other null
//! [`Reply::Nil`]. The RESP3 shapes are lowered as that function lowers
//! them, for a `protocol=resp3` URL. Sizes are bounded the way redis-server
//! bounds what it accepts (`proto-max-bulk-len`, 512 MB) and nesting is
//! bounded too, so a confused peer costs an error, not the backend's memory.
//!
//! The connection is opened as `redis::Client` opens one (the URL's `AUTH`,
//! `SELECT` and `HELLO 3`), without `CLIENT SETINFO`, like
//! [`RealConnection::open`](crate::real::conn::RealConnection::open).

use std::time::Duration;

use locklab_core::reply::Reply;
use redis::{ConnectionAddr, IntoConnectionInfo, ProtocolVersion};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::real::conn::{pack_pipeline, public_url, RealError};
use crate::real::replies::{Replies, Subscriptions};

/// Longest bulk string accepted: redis-server's default
/// `proto-max-bulk-len`.
const MAX_BULK: usize = 512 * 1024 * 1024;
/// Longest status, error or length line.
const MAX_LINE: usize = 1024 * 1024;
/// Deepest nesting of arrays and maps (Lua replies nest; not this deep).
const MAX_DEPTH: usize = 128;

/// A byte stream to a redis-server: TCP or a Unix socket.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// Connect to `addr` (from `url`, for errors): TCP with Nagle off, or a
/// Unix socket, as the blocking connection can (TLS it cannot either).
async fn connect(addr: &ConnectionAddr, url: &str) -> Result<Box<dyn Stream>, RealError> {
    match addr {
        ConnectionAddr::Tcp(host, port) => {
            let tcp = TcpStream::connect((host.as_str(), *port))
                .await
                .map_err(RealError::Io)?;
            tcp.set_nodelay(true).map_err(RealError::Io)?;
            Ok(Box::new(tcp))
        }
        #[cfg(unix)]
        ConnectionAddr::Unix(path) => Ok(Box::new(
            tokio::net::UnixStream::connect(path).await.map_err(RealError::Io)?,
        )),
        _ => Err(RealError::Unsupported(format!(
            "{}: only TCP and Unix sockets are supported",
            public_url(url)
        ))),
    }
}

/// One connection to a redis-server on the tokio runtime.
pub struct Link {
    io: BufReader<Box<dyn Stream>>,
    resp3: bool,
    /// How long a reply may take before the node counts as unreachable.
    timeout: Duration,
    /// Replies written for and not yet read: a link dropped in between is
    /// out of step with its server, so it is never used again.
    pending: usize,
    /// Most bytes of one reply kept ([`Link::keep_at_most`]); the rest is
    /// read off the socket and dropped, never held.
    cap: usize,
    /// What is left of `cap` for the reply being read.
    left: usize,
    /// What was dropped that way since [`Link::take_dropped`].
    dropped: Dropped,
    /// Subscriptions the connection holds, for [`Link::read_rest`].
    held: Subscriptions,
}

/// What a capped link read off the socket and did not keep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Bytes of bulk strings past the cap.
    pub bytes: u64,
    /// Elements of aggregates read once the cap was spent.
    pub items: u64,
}

/// What each element of a reply costs of a link's cap, however short: the
/// page shows it on a line of its own, and the backend holds a `Reply` for
/// it. So a range read of a million small members (`LRANGE k 0 -1`,
/// `HGETALL`, `SMEMBERS` of a key the quota let grow) keeps at most
/// `cap / ELEMENT_BYTES` of them, not a million.
pub const ELEMENT_BYTES: usize = 16;

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("resp3", &self.resp3)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl Link {
    /// Connect to `url` and log in as it says. `timeout` bounds the connect
    /// and every reply.
    pub async fn open(url: &str, timeout: Duration) -> Result<Link, RealError> {
        let info = url.into_connection_info().map_err(|source| RealError::Connect {
            url: public_url(url),
            source,
        })?;
        let stream = tokio::time::timeout(timeout, connect(info.addr(), url))
            .await
            .map_err(|_| RealError::Io(std::io::ErrorKind::TimedOut.into()))??;
        let settings = info.redis_settings();
        let mut link = Link {
            io: BufReader::with_capacity(16 * 1024, stream),
            resp3: false,
            timeout,
            pending: 0,
            cap: usize::MAX,
            left: usize::MAX,
            dropped: Dropped::default(),
            held: Subscriptions::default(),
        };
        let auth: Vec<Vec<u8>> = match (settings.username(), settings.password()) {
            (Some(u), Some(p)) => vec![u.into(), p.into()],
            (None, Some(p)) => vec![p.into()],
            _ => Vec::new(),
        };
        if settings.protocol() != ProtocolVersion::RESP2 {
            let mut hello = vec![b"HELLO".to_vec(), b"3".to_vec()];
            if !auth.is_empty() {
                let user = if auth.len() == 2 {
                    auth[0].clone()
                } else {
                    b"default".to_vec()
                };
                hello.extend([b"AUTH".to_vec(), user, auth[auth.len() - 1].clone()]);
            }
            link.handshake(&hello).await?;
            link.resp3 = true;
        } else if !auth.is_empty() {
            let mut argv = vec![b"AUTH".to_vec()];
            argv.extend(auth);
            link.handshake(&argv).await?;
        }
        if settings.db() != 0 {
            link.handshake(&[b"SELECT".to_vec(), settings.db().to_string().into_bytes()])
                .await?;
        }
        Ok(link)
    }

    /// A login step: an error reply ends the open.
    async fn handshake(&mut self, argv: &[Vec<u8>]) -> Result<(), RealError> {
        match self.execute(argv).await? {
            Reply::Error(text) => Err(RealError::Unsupported(format!(
                "{} answered {text}",
                String::from_utf8_lossy(&argv[0])
            ))),
            _ => Ok(()),
        }
    }

    /// Keep at most `cap` bytes of each reply read from now on (a client's
    /// link: what the page is shown is cut anyway, so a 100 MB value costs
    /// the backend `cap` bytes, not 100 MB and its copies). Each element
    /// costs at least [`ELEMENT_BYTES`] of it; once it is spent, the
    /// reply's further elements are read off the socket and dropped,
    /// counted ([`Link::take_dropped`]), so its aggregates are shorter
    /// than Redis said.
    pub fn keep_at_most(&mut self, cap: usize) {
        self.cap = cap;
    }

    /// What was dropped since the last call.
    pub fn take_dropped(&mut self) -> Dropped {
        std::mem::take(&mut self.dropped)
    }

    /// Can this link still be used? Not after an I/O error, a timeout, or
    /// a write whose replies were never read.
    pub fn usable(&self) -> bool {
        self.pending == 0
    }

    /// Write `commands` in one write. Their replies are read with
    /// [`Link::read`], one each, in order.
    pub async fn send<A: AsRef<[Vec<u8>]>>(&mut self, commands: &[A]) -> Result<(), RealError> {
        let out = pack_pipeline(commands)?;
        // Counted before the write: a write cut short leaves the link out
        // of step as surely as an unread reply.
        self.pending += commands.len();
        let write = self.io.get_mut().write_all(&out);
        match tokio::time::timeout(self.timeout, write).await {
            Ok(r) => r.map_err(RealError::Io),
            Err(_) => Err(RealError::Io(std::io::ErrorKind::TimedOut.into())),
        }
    }

    /// The next reply; `exec`: it answers an `EXEC` (a null is then the
    /// null array).
    pub async fn read(&mut self, exec: bool) -> Result<Reply, RealError> {
        self.read_within(exec, Some(self.timeout)).await
    }

    /// [`Link::read`] with a bound of its own (`None`: wait as long as the
    /// server takes, for a caller that bounds the wait itself).
    pub async fn read_within(&mut self, exec: bool, within: Option<Duration>) -> Result<Reply, RealError> {
        // Each reply has the whole cap.
        self.left = self.cap;
        let reply = match within {
            Some(t) => match tokio::time::timeout(t, self.read_value()).await {
                Ok(r) => r?,
                Err(_) => return Err(RealError::Io(std::io::ErrorKind::TimedOut.into())),
            },
            None => self.read_value().await?,
        };
        self.pending = self.pending.saturating_sub(1);
        Ok(match reply {
            Reply::Nil if exec => Reply::NilArray,
            other => other,
        })
    }

    /// Send one command and read its reply.
    pub async fn execute(&mut self, argv: &[Vec<u8>]) -> Result<Reply, RealError> {
        self.send(&[argv]).await?;
        let exec = argv[0].eq_ignore_ascii_case(b"exec");
        self.read(exec).await
    }

    /// The next `count` replies (none of them an `EXEC`'s).
    pub async fn read_many(&mut self, count: usize) -> Result<Vec<Reply>, RealError> {
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            out.push(self.read(false).await?);
        }
        Ok(out)
    }

    /// Send `commands` in one write and read their replies (a pipeline;
    /// none of them an `EXEC`).
    pub async fn pipeline(&mut self, commands: &[Vec<Vec<u8>>]) -> Result<Vec<Reply>, RealError> {
        self.send(commands).await?;
        self.read_many(commands.len()).await
    }

    /// The rest of what redis-server writes for `sent` once its first
    /// reply, `first`, was read: its answer, with the link in step again
    /// ([`Replies`] says what is owed). `queued`: the transaction's
    /// commands as sent, when `sent` is an `EXEC` (empty when none of them
    /// can write more than one reply).
    pub async fn read_rest(
        &mut self,
        sent: &[Vec<u8>],
        queued: &[Vec<Vec<u8>>],
        first: Reply,
    ) -> Result<Reply, RealError> {
        let mut replies = match Replies::new(sent, queued, first) {
            Ok(r) => r,
            Err(cut) => {
                // The cap dropped values of `EXEC`'s array: which command
                // wrote which is lost. Out of step: a new link serves the
                // next line.
                self.pending += 1;
                return Ok(cut);
            }
        };
        while replies.owed(&mut self.held) {
            // A reply beyond one per command sent.
            self.pending += 1;
            let next = self.read(false).await?;
            replies.feed(next);
        }
        Ok(replies.answer())
    }

    /// One RESP value, iteratively (a stack of open aggregates rather than
    /// recursion, so depth is a counted bound, not a stack overflow).
    async fn read_value(&mut self) -> Result<Reply, RealError> {
        // (items kept, items still to read, is a map)
        let mut open: Vec<(Vec<Reply>, usize, bool)> = Vec::new();
        loop {
            let mut value = match self.read_one().await? {
                Item::Done(v) => v,
                Item::Aggregate(n, map) => {
                    if open.len() >= MAX_DEPTH {
                        return Err(protocol("nested too deep"));
                    }
                    let want = if map { n.saturating_mul(2) } else { n };
                    open.push((Vec::with_capacity(want.min(1024)), want, map));
                    Self::close_done(&mut open)
                }
                Item::Attribute(n) => {
                    // RESP3 attributes annotate the value that follows:
                    // read and drop them (as value_to_reply does).
                    Box::pin(self.skip(n.saturating_mul(2))).await?;
                    continue;
                }
            };
            while let Some(v) = value.take() {
                let Some(top) = open.last_mut() else { return Ok(v) };
                top.1 -= 1;
                // A map's value goes with its kept key.
                if self.left > 0 || (top.2 && top.0.len() % 2 == 1) {
                    self.left = self.left.saturating_sub(ELEMENT_BYTES);
                    top.0.push(v);
                } else {
                    self.dropped.items += 1;
                }
                if top.1 == 0 {
                    value = Self::close_done(&mut open);
                }
            }
        }
    }

    /// Pop the innermost aggregate if it is complete, as a value.
    fn close_done(open: &mut Vec<(Vec<Reply>, usize, bool)>) -> Option<Reply> {
        let (_, to_read, map) = open.last()?;
        if *to_read > 0 {
            return None;
        }
        let map = *map;
        let (items, _, _) = open.pop()?;
        Some(if map {
            let mut pairs = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            Reply::Map(pairs)
        } else {
            Reply::Array(items)
        })
    }

    /// Read and drop `n` values.
    async fn skip(&mut self, n: usize) -> Result<(), RealError> {
        for _ in 0..n {
            Box::pin(self.read_value()).await?;
        }
        Ok(())
    }

    /// One RESP item: a complete scalar, or the header of an aggregate.
    async fn read_one(&mut self) -> Result<Item, RealError> {
        let line = self.read_line().await?;
        let (kind, rest) = line.split_first().ok_or_else(|| protocol("empty line"))?;
        let text = || String::from_utf8(rest.to_vec()).map_err(|_| protocol("a line that is not UTF-8"));
        let len = || -> Result<i64, RealError> {
            std::str::from_utf8(rest)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| protocol("a bad length"))
        };
        let done = |r| Ok(Item::Done(Some(r)));
        match kind {
            b'+' => done(Reply::Status(text()?)),
            b'-' => done(Reply::Error(text()?)),
            b':' => done(Reply::Integer(len()?)),
            b'$' | b'=' | b'!' => match len()? {
                -1 => done(Reply::Nil),
                n if n < 0 || n as u64 > MAX_BULK as u64 => Err(protocol("a bulk length out of range")),
                n => {
                    // Grown as the bytes arrive, not as the length says:
                    // a length alone costs no memory. Past the cap, the
                    // bytes (and the CRLF) are read and dropped.
                    let n = n as usize;
                    let keep = n.min(self.left);
                    self.left -= keep;
                    let mut body = Vec::with_capacity(keep.min(64 * 1024));
                    (&mut self.io)
                        .take(keep as u64)
                        .read_to_end(&mut body)
                        .await
                        .map_err(RealError::Io)?;
                    let rest = (n - keep + 2) as u64;
                    let drained = tokio::io::copy(&mut (&mut self.io).take(rest), &mut tokio::io::sink())
                        .await
                        .map_err(RealError::Io)?;
                    if body.len() != keep || drained != rest {
                        return Err(RealError::Io(std::io::ErrorKind::UnexpectedEof.into()));
                    }
                    self.dropped.bytes += (n - keep) as u64;
                    match kind {
                        b'!' => done(Reply::Error(String::from_utf8_lossy(&body).into_owned())),
                        // A verbatim string starts with its format: `txt:`.
                        b'=' => done(Reply::Bulk(body.get(4..).unwrap_or_default().to_vec())),
                        _ => done(Reply::Bulk(body)),
                    }
                }
            },
            b'*' | b'~' | b'%' | b'|' => match len()? {
                -1 => done(Reply::Nil),
                n if n < 0 || n > i64::from(i32::MAX) => Err(protocol("an aggregate length out of range")),
                n if *kind == b'|' => Ok(Item::Attribute(n as usize)),
                n => Ok(Item::Aggregate(n as usize, *kind == b'%')),
            },
            b'_' => done(Reply::Nil),
            b'#' => done(Reply::Integer(i64::from(rest == b"t"))),
            b',' => done(Reply::Bulk(double(&text()?).into_bytes())),
            b'(' => done(Reply::Bulk(rest.to_vec())),
            _ => Err(RealError::Unsupported(format!(
                "a reply starting with {:?}",
                char::from(*kind)
            ))),
        }
    }

    /// One line, without its CRLF.
    async fn read_line(&mut self) -> Result<Vec<u8>, RealError> {
        let mut line = Vec::new();
        let n = (&mut self.io)
            .take(MAX_LINE as u64 + 2)
            .read_until(b'\n', &mut line)
            .await
            .map_err(RealError::Io)?;
        if n == 0 {
            return Err(RealError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        if !line.ends_with(b"\r\n") {
            return Err(protocol("a line longer than the limit, or without CRLF"));
        }
        line.truncate(line.len() - 2);
        Ok(line)
    }
}

/// What [`Link::read_one`] read.
enum Item {
    /// A scalar (always `Some`; an `Option` so the caller can take it).
    Done(Option<Reply>),
    /// `*n`, `~n` or `%n` (`true`: a map of n pairs).
    Aggregate(usize, bool),
    /// `|n`: n attribute pairs before the value they annotate.
    Attribute(usize),
}

fn protocol(what: &str) -> RealError {
    RealError::Unsupported(format!("redis-server sent {what}"))
}

/// A RESP3 double as [`value_to_reply`](crate::real::conn::value_to_reply)
/// lowers it.
fn double(text: &str) -> String {
    match text {
        "inf" => "inf".into(),
        "-inf" => "-inf".into(),
        t => t.parse::<f64>().map_or_else(|_| t.to_owned(), |d| d.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A [`Link`] over a real socket pair whose server side has written
    /// `wire` and closed (a reply cut short ends in EOF).
    async fn link_over(wire: &'static [u8]) -> Link {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            s.write_all(wire).await.unwrap();
        });
        let link = Link::open(&format!("redis://{addr}/"), Duration::from_secs(30))
            .await
            .unwrap();
        server.await.unwrap();
        link
    }

    /// A reply parsed from `wire` by a [`Link`] over a real socket pair.
    async fn parse(wire: &'static [u8], exec: bool) -> Result<Reply, RealError> {
        let mut link = link_over(wire).await;
        link.pending = 1;
        link.read(exec).await
    }

    #[tokio::test]
    async fn replies_are_read_as_the_blocking_connection_reads_them() {
        let b = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
        assert_eq!(parse(b"+OK\r\n", false).await.unwrap(), Reply::ok());
        assert_eq!(
            parse(b"-ERR unknown command 'FOO', with args beginning with: 'a' \r\n", false)
                .await
                .unwrap(),
            Reply::Error("ERR unknown command 'FOO', with args beginning with: 'a' ".into())
        );
        assert_eq!(parse(b"$-1\r\n", false).await.unwrap(), Reply::Nil);
        assert_eq!(parse(b"*-1\r\n", true).await.unwrap(), Reply::NilArray);
        assert_eq!(parse(b"$4\r\na\r\nb\r\n", false).await.unwrap(), b("a\r\nb"));
        assert_eq!(
            parse(b"*3\r\n:1\r\n*2\r\n$1\r\nx\r\n-WRONGTYPE no\r\n*0\r\n", false)
                .await
                .unwrap(),
            Reply::Array(vec![
                Reply::Integer(1),
                Reply::Array(vec![b("x"), Reply::Error("WRONGTYPE no".into())]),
                Reply::Array(vec![]),
            ])
        );
        assert_eq!(
            parse(b"%1\r\n+a\r\n#t\r\n", false).await.unwrap(),
            Reply::Map(vec![(Reply::Status("a".into()), Reply::Integer(1))])
        );
    }

    /// A client's link keeps the start of a long reply and drops the rest
    /// off the socket — a long string's tail, an aggregate's elements past
    /// the cap — staying in step for the next reply.
    #[tokio::test]
    async fn a_capped_link_drops_what_it_does_not_keep() {
        let mut link =
            link_over(b"$10\r\n0123456789\r\n*2\r\n$2\r\nab\r\n$5\r\nabcde\r\n+OK\r\n%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n")
                .await;
        link.keep_at_most(3);
        link.pending = 4;
        assert_eq!(link.read(false).await.unwrap(), Reply::Bulk(b"012".to_vec()));
        assert_eq!(link.take_dropped(), Dropped { bytes: 7, items: 0 });
        // "ab" and its element spend the cap: "abcde" is read and dropped.
        assert_eq!(
            link.read(false).await.unwrap(),
            Reply::Array(vec![Reply::Bulk(b"ab".to_vec())])
        );
        assert_eq!(link.take_dropped(), Dropped { bytes: 5, items: 1 });
        assert_eq!(link.read(false).await.unwrap(), Reply::ok());
        // A map keeps whole pairs; the next reply has the whole cap again.
        assert_eq!(
            link.read(false).await.unwrap(),
            Reply::Map(vec![(Reply::Integer(1), Reply::Integer(2))])
        );
        assert_eq!(link.take_dropped(), Dropped { bytes: 0, items: 2 });
        assert!(link.usable());
    }

    /// A subscribe's confirmations are read whole, and an `UNSUBSCRIBE`
    /// without names reads one per channel the confirmations counted.
    #[tokio::test]
    async fn every_confirmation_is_read_and_the_last_answers() {
        let mut link = link_over(
            b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n\
              *3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n+OK\r\n",
        )
        .await;
        let confirm = |kind: &str, name: &str, n| {
            Reply::Array(vec![
                Reply::Bulk(kind.into()),
                Reply::Bulk(name.into()),
                Reply::Integer(n),
            ])
        };
        let argv = |line: &str| line.split(' ').map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>();
        link.pending = 3;
        let first = link.read(false).await.unwrap();
        let last = link.read_rest(&argv("SUBSCRIBE a b"), &[], first).await.unwrap();
        assert_eq!(last, confirm("subscribe", "b", 2));
        let first = link.read(false).await.unwrap();
        let last = link.read_rest(&argv("UNSUBSCRIBE"), &[], first).await.unwrap();
        assert_eq!(last, confirm("unsubscribe", "b", 0));
        assert_eq!(link.read(false).await.unwrap(), Reply::ok());
        assert!(link.usable());
    }

    #[tokio::test]
    async fn what_is_not_resp_is_an_error_not_a_panic_or_an_allocation() {
        assert!(parse(b"$999999999999\r\n", false).await.is_err());
        assert!(parse(b"*-5\r\n", false).await.is_err());
        assert!(parse(b"?what\r\n", false).await.is_err());
        assert!(parse(b"$3\r\nab", false).await.is_err());
        let deep: &'static [u8] = Box::leak("*1\r\n".repeat(MAX_DEPTH + 1).into_bytes().into_boxed_slice());
        assert!(parse(deep, false).await.is_err());
    }
}
