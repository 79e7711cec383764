//! A slow or lossy link, for real: a TCP proxy between a client and a
//! managed node that delays and drops what passes through it, changed at
//! run time (the idea of Shopify's toxiproxy, in the backend).
//!
//! It mirrors core's link (`locklab_core::world::link`) so a lesson means
//! the same on both drivers: each direction delays a message by
//! `latency + uniform(0..=jitter)` ms but never lets it overtake the one
//! ahead of it (TCP does not reorder), so a round trip gains twice the
//! latency. Losses are counted in whole RESP messages, never bytes — a
//! torn frame would be a protocol error, not a lost message:
//!
//! * a lost **request** never reaches the server: the command does not run;
//! * a lost **reply** (core's `drop_reply_permille`, lesson 33) is the
//!   worse one: the command ran, the client never hears about it.
//!
//! Either way the client is left waiting, as behind a real lossy link; it
//! is the client's timeout that ends the wait. Draws come from core's
//! seeded [`Rng`], one stream per direction and purpose, so a given seed
//! and the same messages lose the same ones.
//!
//! Each proxy runs on a thread of its own with a single-threaded tokio
//! runtime, so it works the same under the backend's runtime, a blocking
//! test, or the CLI; dropping the [`LinkProxy`] stops the runtime, which
//! closes every connection through it.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use locklab_core::rng::Rng;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// How a link misbehaves. The default is a plain link: no delay, no loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkFault {
    /// Added to each direction, in ms.
    pub latency_ms: u64,
    /// Up to this much more, uniformly, per message and direction.
    pub jitter_ms: u64,
    /// Requests lost on the way to the server, per thousand.
    pub drop_request_permille: u32,
    /// Replies lost on the way back, per thousand (the command ran).
    pub drop_reply_permille: u32,
}

/// What went through a proxy, for the trace and for tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkStats {
    pub connections: u64,
    pub requests_forwarded: u64,
    pub requests_dropped: u64,
    pub replies_forwarded: u64,
    pub replies_dropped: u64,
}

/// A frame still incomplete at this size is passed on unframed (and the
/// rest of that connection with it): the lab never sends values near it,
/// and holding more would be memory a client could make us spend.
const MAX_FRAME: usize = 64 << 20;
/// Messages in flight per direction before the reader waits (backpressure
/// instead of an unbounded queue behind a long latency).
const IN_FLIGHT: usize = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Request,
    Reply,
}

#[derive(Debug)]
struct Shared {
    fault: Mutex<LinkFault>,
    /// Loss draws per direction, then jitter draws per direction: apart, so
    /// which messages are lost depends only on the messages, not on how
    /// the kernel happened to batch them into reads.
    rng: [Mutex<Rng>; 4],
    connections: AtomicU64,
    forwarded: [AtomicU64; 2],
    dropped: [AtomicU64; 2],
}

impl Shared {
    fn fault(&self) -> LinkFault {
        *self.fault.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn loss_rng(&self, dir: Direction) -> std::sync::MutexGuard<'_, Rng> {
        self.rng[dir as usize].lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn jitter_rng(&self, dir: Direction) -> std::sync::MutexGuard<'_, Rng> {
        self.rng[2 + dir as usize]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The seed of the link from `client` to node `node`: fixed per link, so
/// the same run loses the same messages.
pub fn link_seed(client: &str, node: u32) -> u64 {
    client.bytes().fold(u64::from(node) ^ 0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A running proxy: connect to [`LinkProxy::addr`] instead of the node.
#[derive(Debug)]
pub struct LinkProxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LinkProxy {
    /// Listen on a free loopback port and forward to `upstream` with
    /// `fault`; `seed` fixes the jitter and loss draws.
    pub fn start(upstream: SocketAddr, fault: LinkFault, seed: u64) -> std::io::Result<LinkProxy> {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            fault: Mutex::new(clamp(fault)),
            rng: [0, 1, 2, 3].map(|stream| Mutex::new(Rng::derive(seed, stream))),
            connections: AtomicU64::new(0),
            forwarded: [AtomicU64::new(0), AtomicU64::new(0)],
            dropped: [AtomicU64::new(0), AtomicU64::new(0)],
        });
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let inner = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("link-proxy-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        _ = stopped => {}
                        _ = accept_loop(listener, upstream, inner) => {}
                    }
                });
                // Dropping the runtime here cancels every connection task,
                // which closes both sides of every proxied connection.
            })?;
        Ok(LinkProxy {
            addr,
            upstream,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://127.0.0.1:<proxy port>/`.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// The node behind it.
    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// The fault in force.
    pub fn fault(&self) -> LinkFault {
        self.shared.fault()
    }

    /// Change the fault; it applies to the next message read on every
    /// connection (what is already in flight keeps its delay).
    pub fn set(&self, fault: LinkFault) {
        *self.shared.fault.lock().unwrap_or_else(PoisonError::into_inner) = clamp(fault);
    }

    /// What the link from `client` to `node` now does, for the log and
    /// the step's note: one wording wherever a link is set (a session's
    /// delay, a topology's injected fault).
    pub fn describe(&self, client: &str, node: &str) -> String {
        let f = self.fault();
        format!(
            "link {client} ↔ {node}: latency {} ms, jitter {} ms, requests lost {}‰, replies lost {}‰ (through a proxy on port {})",
            f.latency_ms,
            f.jitter_ms,
            f.drop_request_permille,
            f.drop_reply_permille,
            self.addr.port()
        )
    }

    /// Counts so far.
    pub fn stats(&self) -> LinkStats {
        let get = |a: &AtomicU64| a.load(Ordering::SeqCst);
        LinkStats {
            connections: get(&self.shared.connections),
            requests_forwarded: get(&self.shared.forwarded[0]),
            requests_dropped: get(&self.shared.dropped[0]),
            replies_forwarded: get(&self.shared.forwarded[1]),
            replies_dropped: get(&self.shared.dropped[1]),
        }
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn clamp(mut f: LinkFault) -> LinkFault {
    f.drop_request_permille = f.drop_request_permille.min(1000);
    f.drop_reply_permille = f.drop_reply_permille.min(1000);
    f
}

async fn accept_loop(listener: TcpListener, upstream: SocketAddr, shared: Arc<Shared>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of descriptors, say: wait a little rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            // A node that is down refuses the proxy; the client then sees
            // its connection closed, as it would see a reset.
            let Ok(server) = TcpStream::connect(upstream).await else {
                return;
            };
            shared.connections.fetch_add(1, Ordering::SeqCst);
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (client_r, client_w) = client.into_split();
            let (server_r, server_w) = server.into_split();
            tokio::join!(
                pipe(client_r, server_w, Direction::Request, shared.clone()),
                pipe(server_r, client_w, Direction::Reply, shared),
            );
        });
    }
}

/// One direction of one connection: a reader that frames, drops and
/// stamps each batch with its due time, and a writer that sends each batch
/// when it is due, in order.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, dir: Direction, shared: Arc<Shared>) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(IN_FLIGHT);
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            // Only sleep when there is time left: tokio's timer rounds up
            // to whole milliseconds, which would add a millisecond to every
            // message of a plain link.
            if due > Instant::now() {
                tokio::time::sleep_until(due).await;
            }
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        // Pass the half-close on (the client said QUIT and closed, say).
        let _ = to.shutdown().await;
    };
    let reader = async move {
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 16 * 1024];
        let mut framing = true;
        let mut last_due = Instant::now();
        loop {
            let n = match from.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            buf.extend_from_slice(&chunk[..n]);
            let fault = shared.fault();
            let permille = match dir {
                Direction::Request => fault.drop_request_permille,
                Direction::Reply => fault.drop_reply_permille,
            };
            let mut out = Vec::with_capacity(buf.len());
            let mut at = 0;
            while at < buf.len() {
                let end = if framing {
                    match frame_end(&buf[at..], dir == Direction::Request) {
                        Ok(Some(len)) => at + len,
                        Ok(None) if buf.len() - at < MAX_FRAME => break,
                        // Too big or not RESP: pass it on untouched.
                        Ok(None) | Err(()) => {
                            framing = false;
                            buf.len()
                        }
                    }
                } else {
                    buf.len()
                };
                let frame = &buf[at..end];
                at = end;
                if framing && shared.loss_rng(dir).chance_permille(permille) {
                    shared.dropped[dir as usize].fetch_add(1, Ordering::SeqCst);
                } else {
                    if framing {
                        shared.forwarded[dir as usize].fetch_add(1, Ordering::SeqCst);
                    }
                    out.extend_from_slice(frame);
                }
            }
            buf.drain(..at);
            if out.is_empty() {
                continue;
            }
            let extra = fault.latency_ms + shared.jitter_rng(dir).below(fault.jitter_ms.saturating_add(1));
            let due = (Instant::now() + Duration::from_millis(extra)).max(last_due);
            last_due = due;
            if tx.send((due, out)).await.is_err() {
                break;
            }
        }
    };
    tokio::join!(reader, writer);
}

/// The length of the RESP message at the start of `buf` (RESP2 or RESP3,
/// aggregates of any depth, counted without recursion), `None` if it is
/// not all there yet, `Err` if it is not RESP. A request that does not
/// start with `*` is an inline command, one line, as redis-server reads it
/// (`processInlineBuffer`).
fn frame_end(buf: &[u8], request: bool) -> Result<Option<usize>, ()> {
    if buf.is_empty() {
        return Ok(None);
    }
    if request && buf[0] != b'*' {
        return Ok(buf.iter().position(|&b| b == b'\n').map(|i| i + 1));
    }
    let mut at = 0usize;
    let mut pending: u64 = 1;
    while pending > 0 {
        let Some(&kind) = buf.get(at) else {
            return Ok(None);
        };
        let Some(eol) = buf[at..].windows(2).position(|w| w == b"\r\n").map(|i| at + i) else {
            return Ok(None);
        };
        let head = &buf[at + 1..eol];
        let next = eol + 2;
        pending -= 1;
        match kind {
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => at = next,
            b'$' | b'!' | b'=' => {
                let len = number(head)?;
                if len < 0 {
                    at = next;
                } else {
                    let end = next + usize::try_from(len).map_err(|_| ())? + 2;
                    if end > buf.len() {
                        return Ok(None);
                    }
                    at = end;
                }
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = number(head)?;
                at = next;
                if n > 0 {
                    let n = u64::try_from(n).map_err(|_| ())?;
                    pending += match kind {
                        b'%' => 2 * n,
                        // An attribute map, then the value it describes.
                        b'|' => 2 * n + 1,
                        _ => n,
                    };
                }
            }
            _ => return Err(()),
        }
    }
    Ok(Some(at))
}

/// A RESP length, bounded so sums cannot overflow.
fn number(head: &[u8]) -> Result<i64, ()> {
    let n: i64 = std::str::from_utf8(head).map_err(|_| ())?.parse().map_err(|_| ())?;
    if n > i64::from(i32::MAX) {
        return Err(());
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_whole_messages_of_any_depth() {
        assert_eq!(frame_end(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1", true), Ok(Some(20)));
        assert_eq!(frame_end(b"*2\r\n$3\r\nGET\r\n$1\r\n", true), Ok(None));
        assert_eq!(frame_end(b"PING\r\nPING\r\n", true), Ok(Some(6)));
        assert_eq!(frame_end(b"+OK\r\n:1\r\n", false), Ok(Some(5)));
        assert_eq!(frame_end(b"$-1\r\n", false), Ok(Some(5)));
        assert_eq!(frame_end(b"*-1\r\n", false), Ok(Some(5)));
        assert_eq!(frame_end(b"*0\r\n", false), Ok(Some(4)));
        assert_eq!(frame_end(b"%1\r\n+a\r\n*1\r\n:2\r\n", false), Ok(Some(16)));
        assert_eq!(frame_end(b"*1\r\n*1\r\n*1\r\n$2\r\nhi\r\n", false), Ok(Some(20)));
        assert_eq!(frame_end(b"$5\r\nhel", false), Ok(None));
        assert_eq!(frame_end(b"?x\r\n", false), Err(()));
        assert_eq!(frame_end(b"*99999999999\r\n", false), Err(()));
        // Deep nesting is counted, not recursed into.
        let deep = "*1\r\n".repeat(100_000) + ":1\r\n";
        assert_eq!(frame_end(deep.as_bytes(), false), Ok(Some(deep.len())));
    }
}
