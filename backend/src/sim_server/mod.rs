//! `locklab sim-server`: core's simulated node behind the Redis wire
//! protocol, so that redis-cli, redis-benchmark and any client library or
//! lock library talk to the simulator unchanged.
//!
//! # Shape
//!
//! ```text
//!  TCP ──▶ connection task ──(try_lock: plain commands, inline)──▶ owner: State { Node, clients, outboxes }
//!          parse ▸ BUSY answers    ──(bounded job queue: scripts, ──▶ node thread  (behind one lock)
//!                                     or the owner was taken)
//!          ◀── busy watch, replies of its batch (returned / oneshot)
//!          ◀── pushes, served BLPOPs (outbox)
//! ```
//!
//! * **One node, one thread.** redis-server runs every command on one
//!   thread, one at a time; that is what makes a single command (and a Lua
//!   script, and an `EXEC`) atomic, and it is the property every Redis lock
//!   is built on. Here one owner holds the [`Node`] behind a lock (module
//!   `node`) and runs every command and script, one batch at a time;
//!   each connection gets its own
//!   [`ConnId`](locklab_redis::server::ConnId), so `MULTI`/`WATCH` state is
//!   per connection, as in Redis.
//! * **Connections never wait on the node's thread.** Each connection is a
//!   tokio task that parses its requests and runs them as a batch: inline,
//!   on the runtime's thread, when the owner's lock is free (`try_lock`,
//!   never a wait) and the batch starts with plain commands — redis-server's
//!   own shape, read, run, write on one thread, without a thread hand-off
//!   (two wake-ups a batch, issue 42's throughput item) — or else through a
//!   bounded queue to the node's thread (each connection has at most one
//!   job in it, so it is bounded by `maxclients`), awaiting the replies.
//!   Scripts always run on the node's thread: a busy script holds only that
//!   thread and the lock, so the runtime keeps accepting, reading and
//!   answering.
//! * **Batches.** A client that pipelines sends many requests in one
//!   packet. The connection parses every complete request in its buffer and
//!   sends them as one batch, then writes all the replies with one `write`.
//!   That is what redis-server does too (it reads 16 KB, processes every
//!   complete command, replies in one go), and what makes
//!   `redis-benchmark -P 16` fast.
//! * **Busy scripts**, as in redis-server's `processCommand` while
//!   `scriptIsTimedout`: past `busy-reply-threshold` (`lua-time-limit`,
//!   5000 ms, settable with `CONFIG SET`) a connection whose batch the node
//!   has not started takes it back and answers it itself, at once, from any
//!   connection, old or new: `-BUSY` for most commands, `SCRIPT KILL` /
//!   `FUNCTION KILL` through core's [`ScriptControl`] (`UNKILLABLE` once it
//!   wrote), `FUNCTION STATS`, `SHUTDOWN NOSAVE` (which stops the server),
//!   `AUTH`, `QUIT`, `MULTI`/`DISCARD`/`EXEC`; an unknown command and a
//!   wrong number of arguments are refused first, as there. `HELLO`, `WATCH`, `UNWATCH`
//!   and `RESET` need the node, so they (and what follows them) wait for the
//!   script. The parser's state is the connection's and survives all this.
//!   A script nobody kills is stopped by core after [`SCRIPT_WORK_LIMIT`]
//!   units of work.
//! * **Tasks, not threads.** Connections are tokio tasks on a runtime of
//!   [`WORKERS`] thread (no blocking pool is used): an idle connection
//!   is a parked task and a 4 KB buffer, so a thousand of them cost a few
//!   megabytes, and the process has a fixed number of threads.
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
//!   redis-server too. The node runs on the host's clock
//!   ([`Node::set_host_clock`]), so neither moves time for the others, alone
//!   or inside `EXEC`; a client that leaves while it waits is freed at once.
//! * **SessionLimits**, redis-server's: `maxclients` ([`MAX_CLIENTS`], lowered to
//!   fit the process's fd limit as `adjustOpenFilesLimit` does; the next
//!   client gets `-ERR max number of clients reached`), a listen backlog of
//!   511 (`tcp-backlog`), `client-query-buffer-limit` on every read (also
//!   while blocked or delayed), `client-output-buffer-limit` on what the
//!   node queues for a client that does not read (pub/sub messages: the
//!   client is closed past 32 MB, or past 8 MB for 60 s) and, once the
//!   normal class has a limit (its default is none), on a client's own
//!   unread replies, all settable with `CONFIG SET`.
//!
//! # Layout
//!
//! * `resp` (private) — the request parser (redis-server's own rules
//!   and limits) and the RESP2/RESP3 encoder.
//! * `wire` (private) — the connection-level commands: `HELLO`, `AUTH`,
//!   `CLIENT`, `SELECT`, `QUIT`, `RESET`, `COMMAND`, `CONFIG`, `FLUSHDB`.
//! * `conn` (private) — one connection's read / parse / write loop, and its
//!   answers while a script is busy.
//! * `node` (private) — the node's owner, its lock and its thread.
//! * `fds` (private) — `maxclients` fitted to the process's descriptor limit.
//! * [`benchmark`] — redis-benchmark against a real server and against us.

mod bench;
mod conn;
mod fds;
mod node;
pub(crate) mod resp;
mod wire;

pub use fds::fit_maxclients;

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use locklab_redis::server::config::{ClientClass, ObufLimit};
use locklab_redis::server::script::ScriptControl;
use locklab_redis::server::{ConnId, Node, Profile, EPOCH_MS};
use locklab_redis::Reply;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use bench::{benchmark, benchmark_with, run_redis_benchmark, BenchLine, REQUESTS};

/// `client-query-buffer-limit` at start: how much a connection may have
/// sent that does not yet form a complete command (1 GB, redis-server's
/// default; `CONFIG SET` changes it). A client over it is disconnected
/// without a reply, as redis-server does.
pub const QUERY_BUFFER_LIMIT: usize = 1024 * 1024 * 1024;

/// `maxclients`: connections served at once. One more is told so and closed,
/// as redis-server does, so a flood of idle clients cannot exhaust the
/// process's file descriptors. Lowered at start when the fd limit is lower
/// (see [`fit_maxclients`]).
pub const MAX_CLIENTS: usize = 10_000;

/// `tcp-backlog`: redis-server's default listen backlog. A burst of
/// connects beyond the kernel's queue would wait for SYN retries.
const TCP_BACKLOG: u32 = 511;

/// The work budget of one script on sim-server (instructions plus native
/// work): far past `busy-reply-threshold`, so that BUSY and SCRIPT KILL
/// happen as in redis-server, yet finite, so a script nobody kills still
/// ends (after about half a minute natively).
pub const SCRIPT_WORK_LIMIT: u64 = 3_000_000_000;

/// Stack for the node's thread: scripts run on it, and Lua's pattern
/// matcher recurses natively, one frame per level of [`PATTERN_DEPTH`]
/// (only the pages a script touches are ever committed).
const THREAD_STACK: usize = 256 << 20;

/// The deepest pattern a script may match here: redis-server 7.0.15 answers
/// `1 100000` for `string.find(string.rep('a', 1e5), string.rep('a?', 1e5))`
/// on its 8 MB C stack (and dies at 200,000), so the simulator matches as
/// deep (a pattern of n `a?` is n + 1 levels), on [`THREAD_STACK`], and
/// answers Lua 5.2's "pattern too complex" beyond (core's default, for
/// browsers' and workers' stacks, is `MAX_PATTERN_DEPTH`).
const PATTERN_DEPTH: usize = 150_000;

/// The runtime's threads: one, as redis-server reads, runs and writes on
/// one. Batches of plain commands run inline on it under the node's lock
/// (module `node`); a second worker would only contend for that lock and
/// send the loser's batch through the node's thread, paying the wake-ups
/// inline running saves. Scripts run on the node's thread, so this one
/// keeps answering while a script is busy.
const WORKERS: usize = 1;

/// How often [`busy_watch`] looks whether the running script has passed
/// `busy-reply-threshold`.
const BUSY_POLL: Duration = Duration::from_millis(10);

/// After a failed `accept` (most likely out of file descriptors), wait this
/// long before trying again instead of spinning.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// `PROTO_REPLY_CHUNK_BYTES`: each redis-server client has a static reply
/// buffer of 16 KB that `getClientOutputBufferMemoryUsage` does not count;
/// only what overflows it into the reply list counts against
/// `client-output-buffer-limit`.
const REPLY_CHUNK: usize = 16 * 1024;

/// What `client-output-buffer-limit` counts of `pending` bytes of output
/// not yet written to a client (see [`REPLY_CHUNK`]).
fn obuf_usage(pending: usize) -> u64 {
    pending.saturating_sub(REPLY_CHUNK) as u64
}

/// networking.c's `checkClientOutputBufferLimits` for client `id` with
/// `pending` bytes of output not yet written: over `limit`'s hard limit,
/// or over its soft one for longer than its seconds (`soft_since`: since
/// when it has been over). Logged as redis-server logs the client it
/// closes (`pubsub`: its class).
fn output_limit_reached(
    limit: ObufLimit,
    pending: usize,
    soft_since: &mut Option<Instant>,
    id: ConnId,
    class: ClientClass,
) -> bool {
    let used = obuf_usage(pending);
    let hard = limit.hard > 0 && used >= limit.hard;
    let soft = if limit.soft > 0 && used >= limit.soft {
        let since = *soft_since.get_or_insert_with(Instant::now);
        since.elapsed() > Duration::from_secs(limit.soft_seconds)
    } else {
        *soft_since = None;
        false
    };
    if hard || soft {
        let class = class.name();
        eprintln!(
            "locklab sim-server: client id={} ({class}) closed for overcoming of output buffer limits ({pending} bytes pending)",
            id.0
        );
    }
    hard || soft
}

/// Where to listen and which redis-server to imitate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimServerConfig {
    pub bind: IpAddr,
    /// 0 picks a free port (see [`Server::local_addr`]).
    pub port: u16,
    pub profile: Profile,
    /// A script's work budget ([`SCRIPT_WORK_LIMIT`] unless a test needs a
    /// script that only `SCRIPT KILL` ends, however slow the machine).
    pub script_work_limit: u64,
}

impl SimServerConfig {
    /// `bind:port` imitating `profile`, with the default script budget.
    pub fn new(bind: IpAddr, port: u16, profile: Profile) -> SimServerConfig {
        SimServerConfig {
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
    let (commands, error) = parse_chunks(chunks);
    let mut out = Vec::new();
    for (i, argv) in commands.iter().enumerate() {
        let reply = Reply::Array(argv.iter().map(|a| Reply::Bulk(a.clone())).collect());
        out.clear();
        resp::encode(&mut out, &reply, i % 2 == 0);
    }
    error.is_none().then_some(commands.len())
}

/// The fuzzer's split check: `input` in one read, and split in two at
/// every point (at most 256 points, spread over the input: each is a
/// whole parse, so more would make the CI's fuzz run quadratic), must give the
/// same commands and the same protocol error — what a connection answers
/// must not depend on how TCP cut the stream (issue 42, row 3). The first
/// difference, if any. (For inputs under 64 KB: past that, redis-server's
/// own "too big" checks depend on where the stream was cut.)
#[doc(hidden)]
pub fn fuzz_resp_split(input: &[u8]) -> Result<(), String> {
    let whole = parse_chunks(&[input]);
    let step = (input.len() / 256).max(1);
    for cut in (1..input.len()).step_by(step) {
        let split = parse_chunks(&[&input[..cut], &input[cut..]]);
        if split != whole {
            return Err(format!(
                "split at {cut} of {}: {} commands, error {:?}; whole: {} commands, error {:?}",
                input.len(),
                split.0.len(),
                split.1.as_deref().map(String::from_utf8_lossy),
                whole.0.len(),
                whole.1.as_deref().map(String::from_utf8_lossy),
            ));
        }
    }
    Ok(())
}

/// The commands a connection parses from `chunks` (read one after the
/// other), and the protocol error's reply that closes it, if any.
fn parse_chunks(chunks: &[&[u8]]) -> (Vec<Vec<Vec<u8>>>, Option<Vec<u8>>) {
    let mut parser = resp::Parser::new();
    let mut input: Vec<u8> = Vec::new();
    let mut pos = 0;
    let mut commands = Vec::new();
    for chunk in chunks {
        input.extend_from_slice(chunk);
        loop {
            match parser.parse(&input, &mut pos) {
                Ok(resp::Parsed::Incomplete) => break,
                Ok(resp::Parsed::Empty) => {}
                Ok(resp::Parsed::Command) => commands.push(parser.take_argv()),
                Err(e) => return (commands, Some(e.reply_bytes())),
            }
            assert!(pos <= input.len(), "the parser ran past its input");
        }
        assert!(parser.partial_bytes() <= input.len() + QUERY_BUFFER_LIMIT);
        input.drain(..pos);
        pos = 0;
    }
    (commands, None)
}

/// The wall clock the node follows: Unix milliseconds, never going back
/// (core's [`Node::set_time`] ignores a step back, so a jump back holds
/// the node's clock until real time catches up).
///
/// `locklab check`'s clock nemeses move it ([`Server::jump_clock`],
/// [`Server::drift_clock`]): the skew is an offset taken at the last
/// change plus `ppm` parts per million of the real time since, as the
/// managed topologies' `LD_PRELOAD` clock does for a real redis-server
/// (`real::faults::clock`). Read on every command, so the skew lives in
/// atomics; the rare writer takes the mutex.
#[derive(Debug)]
struct Clock {
    start: Instant,
    base_ms: u64,
    /// Real ms since `start` at the last change of the skew.
    skew_at: AtomicU64,
    skew_ms: AtomicI64,
    drift_ppm: AtomicI64,
    change: Mutex<()>,
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
            skew_at: AtomicU64::new(0),
            skew_ms: AtomicI64::new(0),
            drift_ppm: AtomicI64::new(0),
            change: Mutex::new(()),
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The skew `elapsed` ms after start.
    fn skew(&self, elapsed: u64) -> i64 {
        let skew = self.skew_ms.load(Ordering::Relaxed);
        let ppm = self.drift_ppm.load(Ordering::Relaxed);
        if ppm == 0 {
            return skew;
        }
        let since = i128::from(elapsed.saturating_sub(self.skew_at.load(Ordering::Relaxed)));
        let drift = i64::try_from(since * i128::from(ppm) / 1_000_000).unwrap_or(0);
        skew.saturating_add(drift)
    }

    /// Step the clock by `delta_ms` and/or run it `ppm` fast (negative: slow) from now on.
    fn change(&self, delta_ms: i64, ppm: Option<i64>) {
        let _one_writer = self.change.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.elapsed_ms();
        let skew = self.skew(now).saturating_add(delta_ms);
        self.skew_ms.store(skew, Ordering::Relaxed);
        self.skew_at.store(now, Ordering::Relaxed);
        if let Some(ppm) = ppm {
            self.drift_ppm.store(ppm, Ordering::Relaxed);
        }
    }

    /// The monotonic instant at which [`Clock::now_ms`] reaches `ms`
    /// (with the skew as it is now; a drift only makes it a little early
    /// or late, and a blocked client's timeout is then looked at again).
    fn instant_at(&self, ms: u64) -> Instant {
        let real = i128::from(ms) - i128::from(self.base_ms) - i128::from(self.skew(self.elapsed_ms()));
        let after = Duration::from_millis(u64::try_from(real.max(0)).unwrap_or(u64::MAX));
        self.start
            .checked_add(after)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600))
    }

    fn now_ms(&self) -> u64 {
        let elapsed = self.elapsed_ms();
        let real = self.base_ms.saturating_add(elapsed);
        real.saturating_add_signed(self.skew(elapsed))
    }
}

/// The script running now, for the clients it keeps waiting: published
/// by the node's thread when a script starts, `None` when it ends.
#[derive(Clone, Debug)]
struct Busy {
    since: Instant,
    /// EVAL (true) or FCALL: which BUSY text, which KILL.
    eval: bool,
    /// The command that runs it, for `FUNCTION STATS`.
    argv: Vec<Vec<u8>>,
    /// `FUNCTION STATS` as it was when the script started (the libraries
    /// cannot change while it runs).
    stats: Reply,
}

/// What the connection tasks and the node's thread share.
struct Shared {
    env: wire::Env,
    clock: Clock,
    /// The running script once it has run past `busy-reply-threshold`
    /// (published by [`busy_watch`]): what the connections answer BUSY by.
    busy: watch::Sender<Option<Busy>>,
    /// The running script as the node's thread records it at its start
    /// (`None` between scripts). Nobody is woken for it: [`busy_watch`]
    /// looks every [`BUSY_POLL`], and the connections are told only once
    /// it passes the threshold. Waking every waiting connection at each
    /// script's start and end cost more than a short `EVAL` itself.
    running: Mutex<Option<Busy>>,
    /// How the running script is killed, and whether it wrote.
    control: Arc<ScriptControl>,
    /// While a script runs: what the connections answered by themselves
    /// during it, for the node to catch up on at its end (`None` between
    /// scripts: a connection that finds it so sends its requests to the
    /// node).
    answered_while_busy: Mutex<Option<node::AnsweredWhileBusy>>,
    /// The next connection's id: numbered when accepted, so a connection
    /// can answer (and be freed) while a script holds the node.
    next_id: AtomicU64,
    /// Set by `SHUTDOWN`: stop accepting and close every connection.
    stop: watch::Sender<bool>,
    /// Connections that left when the job queue was full: freed by the
    /// node's thread before its next job.
    gone: Mutex<Vec<ConnId>>,
    /// Set by [`Server::pause`]: the node's thread takes no job until
    /// [`Server::resume`] (or the server stops).
    paused: AtomicBool,
}

impl Shared {
    fn take_gone(&self) -> Vec<ConnId> {
        std::mem::take(&mut *self.gone.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn answered_while_busy(&self) -> std::sync::MutexGuard<'_, Option<node::AnsweredWhileBusy>> {
        self.answered_while_busy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `busy-reply-threshold` now.
    fn busy_threshold(&self) -> Duration {
        Duration::from_millis(self.env.busy_threshold_ms.load(Ordering::Relaxed))
    }

    /// `client-query-buffer-limit` now.
    fn query_limit(&self) -> usize {
        usize::try_from(self.env.query_limit.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
    }

    /// `client-output-buffer-limit` now (see [`wire::Env`]) of the normal
    /// class, or of the pub/sub class for a client with subscriptions.
    fn output_limit(&self, class: ClientClass) -> ObufLimit {
        let [hard, soft, soft_seconds] = &self.env.obuf[class.index()];
        ObufLimit {
            hard: hard.load(Ordering::Relaxed),
            soft: soft.load(Ordering::Relaxed),
            soft_seconds: soft_seconds.load(Ordering::Relaxed),
        }
    }

    /// Stop the server (`SHUTDOWN`): no new connections, the others closed,
    /// a running script killed.
    fn shut_down(&self) {
        self.paused.store(false, Ordering::Release);
        self.control.kill();
        self.stop.send_replace(true);
    }
}

/// A running sim-server. Dropping it (or [`Server::shutdown`]) stops
/// accepting and closes every connection.
pub struct Server {
    local_addr: SocketAddr,
    profile: Profile,
    maxclients: usize,
    shared: Arc<Shared>,
    /// Set by [`spawn`]: the runtime the server runs on, owned by it.
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("profile", &self.profile)
            .field("maxclients", &self.maxclients)
            .finish_non_exhaustive()
    }
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

    /// `maxclients` as fitted to the fd limit at start.
    pub fn maxclients(&self) -> usize {
        self.maxclients
    }

    /// Resolves once a client's `SHUTDOWN` (or [`Server::shutdown`]) stopped it.
    pub async fn stopped(&self) {
        let mut rx = self.shared.stop.subscribe();
        while !*rx.borrow_and_update() {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Stop now (the same as dropping it).
    pub fn shutdown(self) {}

    /// The node's process stopped, as `kill -STOP` stops a redis-server
    /// (`locklab check --nemesis node-pause`): connections are still
    /// accepted and read, nothing is answered, and the clock runs on, so
    /// keys whose time passed are gone once [`Server::resume`] lets the
    /// node's thread take its next job. Only the embedding process can do
    /// this: there is no command for it on the wire.
    pub fn pause(&self) {
        self.shared.paused.store(true, Ordering::Release);
    }

    /// Continue after [`Server::pause`] (`kill -CONT`).
    pub fn resume(&self) {
        self.shared.paused.store(false, Ordering::Release);
    }

    /// Step the node's clock by `delta_ms` (negative: back): a forward jump
    /// expires keys early, which is what NTP stepping a server's clock does
    /// to a lock's TTL (`locklab check --nemesis clock-jump`). In-process
    /// only, like [`Server::pause`].
    pub fn jump_clock(&self, delta_ms: i64) {
        self.shared.clock.change(delta_ms, None);
    }

    /// Run the node's clock `ppm` parts per million fast from now on
    /// (negative: slow; 0: at the right rate again, keeping the skew it
    /// gathered): `locklab check --nemesis clock-drift`.
    pub fn drift_clock(&self, ppm: i64) {
        self.shared.clock.change(0, Some(ppm));
    }

    /// Where the node's clock is now (Unix ms, skew included).
    pub fn clock_ms(&self) -> u64 {
        self.shared.clock.now_ms()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.shut_down();
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

/// Listen with redis-server's backlog (`tcp-backlog` 511; tokio's default
/// is 1024 but a plain `TcpListener::bind` uses the std default of 128).
fn listen(bind: IpAddr, port: u16) -> io::Result<TcpListener> {
    let addr = SocketAddr::new(bind, port);
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(TCP_BACKLOG)
}

/// Bind and start serving on the current tokio runtime; returns once the
/// socket is listening.
pub async fn start(cfg: SimServerConfig) -> io::Result<Server> {
    let listener = listen(cfg.bind, cfg.port)?;
    let local_addr = listener.local_addr()?;
    let maxclients = fit_maxclients(MAX_CLIENTS);
    let mut node = Node::new(cfg.profile);
    wire::set_host_config(&mut node, local_addr, maxclients);
    let env = wire::Env::new(cfg.profile, local_addr, QUERY_BUFFER_LIMIT as u64);
    wire::publish_limits(&node, &env);
    let shared = Arc::new(Shared {
        env,
        clock: Clock::new(),
        busy: watch::Sender::new(None),
        running: Mutex::new(None),
        answered_while_busy: Mutex::new(None),
        control: Arc::new(ScriptControl::new()),
        next_id: AtomicU64::new(1),
        stop: watch::Sender::new(false),
        gone: Mutex::new(Vec::new()),
        paused: AtomicBool::new(false),
    });
    tokio::spawn(busy_watch(Arc::clone(&shared)));
    let state = wire::State {
        node,
        clients: BTreeMap::new(),
        outboxes: BTreeMap::new(),
    };
    // Room for every connection's connect, one job and its leaving.
    let node = node::spawn(state, Arc::clone(&shared), 4 * maxclients + 64, cfg.script_work_limit)?;
    tokio::spawn(accept_loop(listener, Arc::clone(&shared), node, maxclients));
    Ok(Server {
        local_addr,
        profile: cfg.profile,
        maxclients,
        shared,
        runtime: None,
    })
}

/// [`start`] on a runtime of its own ([`WORKERS`]), for synchronous
/// callers such as tests. Must not be called from inside async code.
pub fn spawn(cfg: SimServerConfig) -> io::Result<Server> {
    let rt = runtime(WORKERS)?;
    let mut server = rt.block_on(start(cfg))?;
    server.runtime = Some(rt);
    Ok(server)
}

/// `locklab sim-server`: serve until Ctrl-C (or SIGTERM).
pub fn run(cfg: SimServerConfig) -> io::Result<()> {
    let rt = runtime(WORKERS)?;
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
        tokio::select! {
            r = stop_signal() => r?,
            () = server.stopped() => {}
        }
        println!("locklab sim-server: shutting down");
        drop(server);
        Ok(())
    })
}

/// The runtime the connections run on: `workers` threads and a blocking
/// pool kept small (the server never uses it), so the thread count stays
/// fixed however many clients connect (issue 42: 3 → 101 threads under
/// `redis-benchmark -c 50`, when scripts ran in `block_in_place`).
fn runtime(workers: usize) -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .max_blocking_threads(1)
        .thread_name("sim-server")
        .enable_all()
        .build()
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

/// Publish the running script to the connections once it has run past
/// `busy-reply-threshold` (read at each look, as `CONFIG SET` may change
/// it), looking every [`BUSY_POLL`]: only a script that goes busy wakes
/// them, at most one poll late (redis-server too notices the timeout at
/// its script hook's next call). Ends when the server stops.
async fn busy_watch(shared: Arc<Shared>) {
    let mut stop = shared.stop.subscribe();
    let mut tick = tokio::time::interval(BUSY_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let running = shared.running.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(busy) = running.as_ref() else {
            continue;
        };
        let published = shared.busy.borrow().as_ref().map(|b| b.since);
        if published != Some(busy.since) && busy.since.elapsed() >= shared.busy_threshold() {
            shared.busy.send_replace(Some(busy.clone()));
        }
    }
}

/// Accept connections until told to stop; each runs in its own task. The
/// tasks live in a [`JoinSet`], so stopping the server ends them all.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, node: node::NodeLink, maxclients: usize) {
    let mut conns = JoinSet::new();
    let mut stop = shared.stop.subscribe();
    loop {
        tokio::select! {
            changed = stop.changed() => if changed.is_err() || *stop.borrow() {
                break;
            },
            accepted = listener.accept() => match accepted {
                Ok((mut stream, _)) if conns.len() >= maxclients => {
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
                    conns.spawn(conn::serve(Arc::clone(&shared), node.clone(), stream, peer));
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
    drop(listener);
    conns.shutdown().await;
}
