//! `locklab sim-server`: core's simulated node behind the Redis wire
//! protocol, so that redis-cli, redis-benchmark and any client library or
//! lock library talk to the simulator unchanged.
//!
//! # Shape
//!
//! ```text
//!  TCP ──▶ connection task ──(one lock per batch)──▶ State { Node, clients, outboxes }
//!          parse ▸ run ▸ encode                        │
//!          ◀── one write per batch ───────────────────┘
//! ```
//!
//! * **One node, many connections.** redis-server runs every command on one
//!   thread, one at a time; that is what makes a single command (and a Lua
//!   script, and an `EXEC`) atomic, and it is the property every Redis lock
//!   is built on. Here the one [`Node`] sits behind one mutex, and each
//!   connection gets its own [`ConnId`](locklab_core::server::ConnId), so
//!   `MULTI`/`WATCH` state is per connection, as in Redis.
//! * **Batches.** A client that pipelines sends many requests in one
//!   packet. The connection task parses every complete request in its
//!   buffer and runs them all under one lock acquisition, then writes all the
//!   replies with one `write`. That is what redis-server does too (it reads
//!   16 KB, processes every complete command, replies in one go), and what
//!   makes `redis-benchmark -P 16` fast. The lock is never held across an
//!   `.await`, so a slow client can stall only itself.
//! * **Tasks, not threads.** Connections are tokio tasks on a small
//!   multi-threaded runtime: an idle connection is a parked task and a 4 KB
//!   buffer, so a thousand of them cost a few megabytes.
//! * **Time.** The node has no clock of its own (core is deterministic). The
//!   server gives it the wall clock: before each command it calls
//!   [`Node::set_time`] with `base + elapsed`, where `base` is the Unix time
//!   at start (or core's [`EPOCH_MS`] if the machine's clock is earlier) and
//!   `elapsed` comes from the monotonic clock. So TTLs run in real time, `EXAT`/`PXAT` with real Unix times
//!   work, and a wall-clock jump on the host never jumps the node.
//! * **Stalls.** `DEBUG SLEEP` freezes redis-server's only thread, so every
//!   client waits; on a shared sim-server, `DEBUG SLEEP 1e300` would freeze
//!   everyone until a restart. So only the sleeping client waits (its reply
//!   and what it sent after come after the sleep, in wall time), and the
//!   others carry on. A `WAIT` that times out only blocks its own client on
//!   redis-server too. Both leave the node's clock alone (see `wire`), and
//!   a client that leaves while it waits is freed at once.
//! * **Busy scripts.** A script holds the node, as in redis-server, on the
//!   thread that runs it (`block_in_place`, so the runtime's other tasks
//!   move on). Past `busy-reply-threshold` (`lua-time-limit`, 5000 ms,
//!   settable with `CONFIG SET`) every other client gets redis-server's
//!   `-BUSY` reply, and `SCRIPT KILL` / `FUNCTION KILL` stop the script
//!   through core's [`ScriptControl`] (`UNKILLABLE` once it wrote). A
//!   script nobody kills is stopped by core after [`SCRIPT_WORK_LIMIT`]
//!   instructions (about half a minute of work).
//! * **Limits.** At most [`MAX_CLIENTS`] connections (redis-server's
//!   `maxclients`; the next gets `-ERR max number of clients reached`), each
//!   with a 4 KB input buffer that grows only for a request in progress (up
//!   to `client-query-buffer-limit`) and a reply buffer flushed every
//!   64 KB.
//!
//! # Layout
//!
//! * `resp` (private) — the request parser (redis-server's own rules
//!   and limits) and the RESP2/RESP3 encoder.
//! * `wire` (private) — the connection-level commands: `HELLO`, `AUTH`,
//!   `CLIENT`, `SELECT`, `QUIT`, `RESET`, `COMMAND`, `CONFIG`, `FLUSHDB`.
//! * `conn` (private) — one connection's read / run / write loop.
//! * [`benchmark`] — redis-benchmark against a real server and against us.

mod bench;
mod conn;
pub(crate) mod resp;
mod wire;

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use locklab_core::server::script::ScriptControl;
use locklab_core::server::{ConnId, Node, Profile, EPOCH_MS};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

pub use bench::{benchmark, run_redis_benchmark, BenchLine};

/// `client-query-buffer-limit`: how much a connection may have sent that
/// does not yet form a complete command (1 GB, redis-server's default). A
/// client over it is disconnected without a reply, as redis-server does.
pub const QUERY_BUFFER_LIMIT: usize = 1024 * 1024 * 1024;

/// `maxclients`: connections served at once. One more is told so and closed,
/// as redis-server does, so a flood of idle clients cannot exhaust the
/// process's file descriptors.
pub const MAX_CLIENTS: usize = 10_000;

/// The work budget of one script on sim-server (instructions plus native
/// work): far past `busy-reply-threshold`, so that BUSY and SCRIPT KILL
/// happen as in redis-server, yet finite, so a script nobody kills still
/// ends (after about half a minute natively).
pub const SCRIPT_WORK_LIMIT: u64 = 3_000_000_000;

/// Stack for the runtime's threads: scripts run on them, and Lua's pattern
/// matcher recurses natively (core bounds the depth for smaller stacks).
const THREAD_STACK: usize = 8 << 20;

/// After a failed `accept` (most likely out of file descriptors), wait this
/// long before trying again instead of spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Where to listen and which redis-server to imitate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub bind: IpAddr,
    /// 0 picks a free port (see [`Server::local_addr`]).
    pub port: u16,
    pub profile: Profile,
    /// A script's work budget ([`SCRIPT_WORK_LIMIT`] unless a test needs a
    /// script that only `SCRIPT KILL` ends, however slow the machine).
    pub script_work_limit: u64,
}

impl Config {
    /// `bind:port` imitating `profile`, with the default script budget.
    pub fn new(bind: IpAddr, port: u16, profile: Profile) -> Config {
        Config {
            bind,
            port,
            profile,
            script_work_limit: SCRIPT_WORK_LIMIT,
        }
    }
}

/// Feed `chunks` to the request parser as a connection receives them
/// (parse what is complete, keep the rest, compact as `conn` does), encode
/// a reply per command in RESP2 and RESP3, and return how many commands
/// parsed; `None` when the parser refused the stream (the connection would
/// close). For the fuzzer (`locklab-fuzz`): it must never panic, and the
/// parser's pending state must stay within the query-buffer limit.
#[doc(hidden)]
pub fn fuzz_resp(chunks: &[&[u8]]) -> Option<usize> {
    let mut parser = resp::Parser::new();
    let mut input: Vec<u8> = Vec::new();
    let mut pos = 0;
    let mut commands = 0;
    let mut out = Vec::new();
    for chunk in chunks {
        input.extend_from_slice(chunk);
        loop {
            match parser.parse(&input, &mut pos) {
                Ok(resp::Parsed::Incomplete) => break,
                Ok(resp::Parsed::Empty) => {}
                Ok(resp::Parsed::Command) => {
                    commands += 1;
                    let reply = locklab_core::Reply::Array(
                        parser
                            .argv()
                            .iter()
                            .map(|a| locklab_core::Reply::Bulk(a.clone()))
                            .collect(),
                    );
                    out.clear();
                    resp::encode(&mut out, &reply, commands % 2 == 0);
                }
                Err(e) => {
                    let _ = e.reply_bytes();
                    return None;
                }
            }
            assert!(pos <= input.len(), "the parser ran past its input");
        }
        assert!(parser.partial_bytes() <= input.len() + QUERY_BUFFER_LIMIT);
        input.drain(..pos);
        pos = 0;
    }
    Some(commands)
}

/// The wall clock the node follows: Unix milliseconds, never going back.
#[derive(Debug)]
struct Clock {
    start: Instant,
    base_ms: u64,
}

impl Clock {
    fn new() -> Clock {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        // The node starts at EPOCH_MS and never goes back, so a machine
        // whose clock is earlier still gets a clock that moves.
        Clock {
            start: Instant::now(),
            base_ms: unix_ms.max(EPOCH_MS),
        }
    }

    /// The monotonic instant at which [`Clock::now_ms`] reaches `ms`.
    fn instant_at(&self, ms: u64) -> Instant {
        let after = Duration::from_millis(ms.saturating_sub(self.base_ms));
        self.start
            .checked_add(after)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600))
    }

    fn now_ms(&self) -> u64 {
        let elapsed = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.base_ms.saturating_add(elapsed)
    }
}

/// The script running now, for the clients it keeps waiting.
struct Busy {
    since: Instant,
    /// EVAL (true) or FCALL: which BUSY text, which KILL.
    eval: bool,
}

/// What every connection task shares.
struct Shared {
    state: Mutex<wire::State>,
    env: wire::Env,
    clock: Clock,
    /// Set while a script runs (it holds `state`).
    busy: Mutex<Option<Busy>>,
    /// How the running script is killed, and whether it wrote.
    control: Arc<ScriptControl>,
    /// The work budget of one script ([`Config::script_work_limit`]).
    script_work_limit: u64,
    /// Connections that left while the node was held: taken out of the
    /// node by the next holder of the lock.
    gone: Mutex<Vec<ConnId>>,
}

impl Shared {
    /// The lock. Commands run inside `catch_unwind`, so the mutex is never
    /// poisoned by a simulator bug; if it somehow were, the node is still
    /// the best thing we have, so keep serving.
    fn lock(&self) -> MutexGuard<'_, wire::State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn busy(&self) -> MutexGuard<'_, Option<Busy>> {
        self.busy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Free the connections that left while someone else held the node.
    fn reap(&self, st: &mut wire::State) {
        let gone = std::mem::take(&mut *self.gone.lock().unwrap_or_else(PoisonError::into_inner));
        for id in gone {
            st.node.disconnect(id);
            st.clients.remove(&id);
            st.outboxes.remove(&id);
        }
    }
}

/// A running sim-server. Dropping it (or [`Server::shutdown`]) stops
/// accepting and closes every connection.
#[derive(Debug)]
pub struct Server {
    local_addr: SocketAddr,
    profile: Profile,
    shutdown: Option<oneshot::Sender<()>>,
    /// Set by [`spawn`]: the runtime the server runs on, owned by it.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// The address it listens on (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn port(&self) -> u16 {
        self.local_addr.port()
    }

    /// `redis://HOST:PORT/`, for client libraries.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.local_addr)
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Stop now (the same as dropping it).
    pub fn shutdown(self) {}
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(rt) = self.runtime.take() {
            // Waiting is only allowed outside async code; inside it, let the
            // runtime wind down in the background.
            if tokio::runtime::Handle::try_current().is_ok() {
                rt.shutdown_background();
            } else {
                rt.shutdown_timeout(Duration::from_secs(2));
            }
        }
    }
}

/// Bind and start serving on the current tokio runtime; returns once the
/// socket is listening.
pub async fn start(cfg: Config) -> io::Result<Server> {
    let listener = TcpListener::bind((cfg.bind, cfg.port)).await?;
    let local_addr = listener.local_addr()?;
    let mut node = Node::new(cfg.profile);
    wire::set_host_config(&mut node, local_addr);
    let shared = Arc::new(Shared {
        state: Mutex::new(wire::State {
            node,
            clients: BTreeMap::new(),
            outboxes: BTreeMap::new(),
        }),
        env: wire::Env {
            profile: cfg.profile,
            local_addr,
            busy_threshold_ms: Arc::new(std::sync::atomic::AtomicU64::new(wire::BUSY_REPLY_THRESHOLD_MS)),
        },
        clock: Clock::new(),
        busy: Mutex::new(None),
        control: Arc::new(ScriptControl::new()),
        script_work_limit: cfg.script_work_limit,
        gone: Mutex::new(Vec::new()),
    });
    let (tx, rx) = oneshot::channel();
    tokio::spawn(accept_loop(listener, shared, rx));
    Ok(Server {
        local_addr,
        profile: cfg.profile,
        shutdown: Some(tx),
        runtime: None,
    })
}

/// [`start`] on a runtime of its own (two worker threads), for synchronous
/// callers such as tests. Must not be called from inside async code.
pub fn spawn(cfg: Config) -> io::Result<Server> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(THREAD_STACK)
        .thread_name("sim-server")
        .enable_all()
        .build()?;
    let mut server = rt.block_on(start(cfg))?;
    server.runtime = Some(rt);
    Ok(server)
}

/// `locklab sim-server`: serve until Ctrl-C (or SIGTERM).
pub fn run(cfg: Config) -> io::Result<()> {
    // At least two workers: a busy script holds one.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_stack_size(THREAD_STACK)
        .thread_name("sim-server")
        .enable_all()
        .build()?;
    rt.block_on(async {
        let server = start(cfg).await?;
        println!(
            "locklab sim-server: simulated Redis {} (profile {}) listening on {}",
            server.profile.version(),
            server.profile,
            server.local_addr
        );
        println!(
            "try: redis-cli -h {} -p {}",
            server.local_addr.ip(),
            server.local_addr.port()
        );
        stop_signal().await?;
        println!("locklab sim-server: shutting down");
        drop(server);
        Ok(())
    })
}

#[cfg(unix)]
async fn stop_signal() -> io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r,
        _ = term.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn stop_signal() -> io::Result<()> {
    tokio::signal::ctrl_c().await
}

/// Accept connections until told to stop; each runs in its own task. The
/// tasks live in a [`JoinSet`], so stopping the server ends them all.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut shutdown: oneshot::Receiver<()>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((mut stream, _)) if conns.len() >= MAX_CLIENTS => {
                    // acceptCommonHandler: told, then closed.
                    tokio::spawn(async move {
                        use tokio::io::AsyncWriteExt;
                        let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
                    });
                }
                Ok((stream, peer)) => {
                    // Replies are written whole, once per batch: Nagle's
                    // delay would only add latency (redis-server sets it too).
                    let _ = stream.set_nodelay(true);
                    conns.spawn(conn::serve(Arc::clone(&shared), stream, peer));
                }
                Err(e) => {
                    eprintln!("locklab sim-server: accept failed: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            // Reap finished connections so the set does not grow forever.
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.shutdown().await;
}
