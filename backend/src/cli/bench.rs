//! `locklab bench`: how fast is the simulator, next to a real redis-server?
//!
//! One run prints three figures and their ratios: simple commands per second
//! on the simulator (SET then GET, native, no I/O); lock cycles per second
//! on the simulator (`SET lock token NX PX 30000`, then the Lua
//! compare-and-delete by `EVALSHA`); and the same lock cycle against a real
//! redis-server over loopback, one round trip per command, as a client
//! library would do it. Numbers are wall-clock and belong here, never in a
//! test.
//!
//! [`backend_report`] then asks what the lab's backend costs on top of that
//! real server: the same lock cycle direct, through a lab session in this
//! process, and through the `/api/session` WebSocket a browser uses, with
//! one client and with several; and the CPU a command takes on each path,
//! by whom (redis-server, the lab, the clients), with how often their
//! threads had to be woken. A bare WebSocket relay with no lab in it
//! ([`relay`]) is measured alongside: what it reaches is the ceiling of
//! any backend over a WebSocket on this machine, and the lab's WebSocket
//! figures are read against it too. The WebSocket's clients stand for a browser:
//! they run on a thread (and a tokio runtime) of their own, apart from the
//! backend's, and their CPU is counted apart from the backend's.

use std::time::{Duration, Instant};

use locklab_core::server::{Node, Profile};
use locklab_core::Reply;

use futures_util::{SinkExt, StreamExt};
use locklab_core::protocol::ClientMsg;
use thiserror::Error;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::real::conn::{display_addr, NodeTarget, RealConnection, RealError};
use crate::real::session::{acl_rules, SessionError, SessionLimits, SessionPool};
use crate::real::stages::{self, Stage, Stages};
use crate::web::{no_delay, site, ApiState};

mod class;
mod relay;

pub use class::{class_report, class_room};

/// The compare-and-delete release every lesson ends with.
pub const RELEASE: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

fn args(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// Operations per second of `f`, run in batches until `budget` has passed.
fn rate(budget: Duration, batch: u64, mut f: impl FnMut(u64)) -> f64 {
    let start = Instant::now();
    let mut done = 0u64;
    while start.elapsed() < budget {
        for i in 0..batch {
            f(done + i);
        }
        done += batch;
    }
    done as f64 / start.elapsed().as_secs_f64()
}

/// Simple commands per second on the simulator: alternating SET and GET.
pub fn sim_simple_ops(budget: Duration) -> f64 {
    let mut node = Node::new(Profile::V7_0);
    let c = node.connect();
    let set = args(&["SET", "bench:key", "value"]);
    let get = args(&["GET", "bench:key"]);
    rate(budget, 10_000, |i| {
        let r = node.execute(c, if i % 2 == 0 { &set } else { &get });
        debug_assert!(!r.is_error());
    })
}

/// Lock cycles (acquire + safe release) per second on the simulator.
pub fn sim_lock_cycles(budget: Duration) -> Result<f64, String> {
    let mut node = Node::new(Profile::V7_0);
    let c = node.connect();
    let sha = match node.execute(c, &args(&["SCRIPT", "LOAD", RELEASE])) {
        Reply::Bulk(s) => String::from_utf8_lossy(&s).into_owned(),
        other => return Err(format!("SCRIPT LOAD failed: {}", other.to_cli())),
    };
    let acquire = args(&["SET", "lock:bench", "token-1", "NX", "PX", "30000"]);
    let release = args(&["EVALSHA", &sha, "1", "lock:bench", "token-1"]);
    let first = node.execute(c, &acquire);
    let second = node.execute(c, &release);
    if first != Reply::ok() || second != Reply::Integer(1) {
        return Err(format!(
            "lock cycle misbehaved: {} / {}",
            first.to_cli(),
            second.to_cli()
        ));
    }
    Ok(rate(budget, 1_000, |_| {
        node.execute(c, &acquire);
        node.execute(c, &release);
    }))
}

/// Lock cycles per second against a real server, one round trip per command.
pub fn real_lock_cycles(url: &str, budget: Duration) -> Result<f64, RealError> {
    let mut conn = RealConnection::open(url)?;
    let sha = match conn.execute(&args(&["SCRIPT", "LOAD", RELEASE]))? {
        Reply::Bulk(s) => String::from_utf8_lossy(&s).into_owned(),
        other => {
            return Err(RealError::Unsupported(format!(
                "SCRIPT LOAD answered {}",
                other.to_cli()
            )))
        }
    };
    let acquire = args(&["SET", "lock:bench", "token-1", "NX", "PX", "30000"]);
    let release = args(&["EVALSHA", &sha, "1", "lock:bench", "token-1"]);
    let mut failure = None;
    let r = rate(budget, 200, |_| {
        if failure.is_some() {
            return;
        }
        if let Err(e) = conn.execute(&acquire).and_then(|_| conn.execute(&release)) {
            failure = Some(e);
        }
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(r),
    }
}

/// Run everything and print a report. `real` is a redis:// URL, if any.
pub fn report(real: Option<&str>, budget: Duration) -> String {
    let mut out = String::new();
    let simple = sim_simple_ops(budget);
    out.push_str(&format!(
        "simulator, simple commands (SET/GET):  {simple:>12.0} ops/s  (target ≥ 5 000 000)\n"
    ));
    let sim = sim_lock_cycles(budget);
    match &sim {
        Ok(s) => out.push_str(&format!(
            "simulator, lock cycles (SET NX PX + EVALSHA release): {s:>10.0} cycles/s\n"
        )),
        Err(e) => out.push_str(&format!("simulator, lock cycles: failed: {e}\n")),
    }
    match real {
        None => out.push_str(
            "real redis-server: not measured (pass --redis redis://127.0.0.1:PORT or install redis-server)\n",
        ),
        Some(url) => match real_lock_cycles(url, budget) {
            Ok(r) => {
                out.push_str(&format!(
                    "real redis-server {url}, lock cycles over loopback: {r:>10.0} cycles/s\n"
                ));
                if let Ok(s) = sim {
                    out.push_str(&format!("ratio simulator / real: {:.1}×\n", s / r));
                }
            }
            Err(e) => out.push_str(&format!("real redis-server {url}: failed: {e}\n")),
        },
    }
    out
}

/// redis-benchmark's default tests and the lock release's `EVAL` (`-c 50
/// -P 16`) against the real server on `real_port` and against a sim-server
/// started here, with the ratios (issue 42's targets: ≥ 0.8×, EVAL ≥ 0.5×),
/// the 20 k one-element push timing, and with `soak` the RSS over a soak
/// (`locklab bench --sim-server`).
pub fn wire_report(real_port: u16, requests: u64, soak: Option<u64>) -> std::io::Result<String> {
    use crate::sim_server::{self, SimServerConfig};
    let Some(tool) = crate::real::process::find_on_path("redis-benchmark") else {
        return Ok("redis-benchmark not found: install redis-tools to compare sim-server with redis-server\n".into());
    };
    let sim = sim_server::spawn(SimServerConfig::new(
        std::net::Ipv4Addr::LOCALHOST.into(),
        0,
        Profile::V7_0,
    ))?;
    let mut out = String::from("\nredis-server vs sim-server over the Redis protocol:\n");
    out.push_str(&sim_server::benchmark_with(
        &tool,
        real_port,
        sim.port(),
        requests,
        soak,
    )?);
    Ok(out)
}

// ---------------------------------------------------------------------------
// The backend's cost: direct vs a lab session vs the WebSocket.

/// Clients in the concurrent figures: enough to keep a single-threaded
/// redis-server busy while each client waits out its own round trips, so
/// the figure shows throughput rather than one client's latency.
pub const CONCURRENT_CLIENTS: usize = 8;

/// Every figure is measured in this many short rounds that alternate
/// between the paths, so a burst of other load on the machine hits all of
/// them rather than one; the best round is reported. Many rounds, because
/// a loopback round trip on a small VM is bimodal (a core woken from idle
/// answers several times slower than a busy one), and a few long rounds
/// could give one path only slow phases and another only fast ones.
const ROUNDS: u32 = 10;

/// Issue 18's targets: through the WebSocket, at least this fraction of
/// the direct lock cycles, with one client and with
/// [`CONCURRENT_CLIENTS`]. A proxy adds a loopback round trip per command,
/// so one sequential client cannot do much better than half.
const TARGET_RATIO: [f64; 2] = [0.5, 0.8];

/// The lock cycle on `key` as the console sends it (the release is the
/// Lua compare-and-delete); redis-cli prints `OK` and `(integer) 1`.
fn cycle_lines(key: &str) -> [String; 2] {
    [
        format!("SET {key} tok NX PX 10000"),
        format!("EVAL \"{}\" 1 {key} tok", RELEASE.replace('"', "\\\"")),
    ]
}

/// The key a lab session's cycle takes: the session prefixes it, so every
/// client has its own.
const LAB_KEY: &str = "lock";

/// Why one figure of [`backend_report`] could not be measured.
#[derive(Debug, Error)]
pub enum BackendBenchError {
    #[error(transparent)]
    Real(#[from] RealError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("WebSocket: {0}")]
    WebSocket(#[from] tungstenite::Error),
    /// A cycle did not acquire and release the lock: its rate would not be
    /// a rate of lock cycles.
    #[error("lock cycle misbehaved: {0}")]
    Misbehaved(String),
    #[error("the backend closed the WebSocket")]
    Closed,
}

/// The four ways the bench sends a lock cycle to the same server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// The `redis` crate, one connection per client, no lab in between.
    Direct,
    /// The same, authenticated as a user with a session's ACL rules: what
    /// Redis's own ACL checks cost, apart from what the lab costs.
    DirectAcl,
    /// [`Session::run_line`](crate::real::session::Session::run_line) in this process: table check, key prefix,
    /// ACL user, trace events; no network hop of its own.
    Session,
    /// [`relay`]: the same WebSocket server and link to Redis with no lab
    /// in between, each client on a key of its own.
    Relay,
    /// `/api/session` served on a loopback port, a WebSocket client per
    /// lab client: what a browser or `locklab cli --via` goes through.
    WebSocket,
}

impl Path {
    const ALL: [Path; 5] = [
        Path::Direct,
        Path::DirectAcl,
        Path::Session,
        Path::Relay,
        Path::WebSocket,
    ];

    fn label(self) -> &'static str {
        match self {
            Path::Direct => "direct (redis crate)",
            Path::DirectAcl => "direct as an ACL user",
            Path::Session => "lab session, in-process",
            Path::Relay => "bare WebSocket relay",
            Path::WebSocket => "backend over WebSocket",
        }
    }

    fn measure(
        self,
        url: &str,
        backends: &mut Backends,
        clients: usize,
        budget: Duration,
    ) -> Result<Measured, BackendBenchError> {
        match self {
            Path::Direct => direct_cycles(url, None, clients, budget),
            Path::DirectAcl => {
                let user = format!("bench-{}", crate::real::conn::random_hex(8));
                let pw = crate::real::conn::random_hex(16);
                let mut admin = RealConnection::open(url)?;
                let mut argv = args(&["ACL", "SETUSER"]);
                argv.extend(
                    acl_rules(&user, &pw, "bench:direct:")
                        .into_iter()
                        .map(String::into_bytes),
                );
                expect(admin.execute(&argv)?, &Reply::ok(), "ACL SETUSER")?;
                let r = direct_cycles(url, Some((&user, &pw)), clients, budget);
                let _ = admin.execute(&args(&["ACL", "DELUSER", &user]));
                r
            }
            Path::Session => session_cycles(url, clients, budget),
            Path::Relay => {
                let relay = match &mut backends.relay {
                    Some(b) => b,
                    none => none.insert(WsBackend::relay(url)?),
                };
                websocket_cycles(relay, url, clients, budget)
            }
            Path::WebSocket => {
                let lab = match &mut backends.lab {
                    Some(b) => b,
                    none => none.insert(WsBackend::lab(url)?),
                };
                websocket_cycles(lab, url, clients, budget)
            }
        }
    }
}

/// `Ok` when the server answered `want`.
fn expect(got: Reply, want: &Reply, what: &str) -> Result<(), BackendBenchError> {
    if &got == want {
        Ok(())
    } else {
        Err(BackendBenchError::Misbehaved(format!(
            "{what} answered {}",
            got.to_cli()
        )))
    }
}

/// What one round of one path measured: its rate, the commands it
/// counted, and the CPU they took.
#[derive(Clone, Copy, Debug, Default)]
struct Measured {
    /// Lock cycles per second.
    rate: f64,
    /// Commands sent in the timed window (two per cycle).
    commands: u64,
    cpu: Cpu,
}

/// CPU time spent in a timed window, in µs, by whom: the lab backend (the
/// WebSocket server's threads, or a session's work in the threads calling
/// it), the clients (the `redis` crate's or the WebSocket client's
/// thread), and redis-server (its `INFO cpu`).
#[derive(Clone, Copy, Debug, Default)]
struct Cpu {
    backend_us: f64,
    client_us: f64,
    redis_us: f64,
    /// How many times the lab's and the clients' threads were put on a
    /// CPU (a wake-up each, after a wait for I/O or another thread).
    runs: f64,
}

impl Cpu {
    fn add(&mut self, o: Cpu) {
        self.backend_us += o.backend_us;
        self.client_us += o.client_us;
        self.redis_us += o.redis_us;
        self.runs += o.runs;
    }
}

/// CPU time the calling thread has run, in µs, and how many times it was
/// put on a CPU (Linux's `/proc/thread-self/schedstat`; 0 where there is
/// none).
pub(crate) fn thread_cpu_us() -> (f64, f64) {
    schedstat_us("/proc/thread-self/schedstat").unwrap_or_default()
}

fn schedstat_us(path: &str) -> Option<(f64, f64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut fields = text.split_whitespace();
    let ns: u64 = fields.next()?.parse().ok()?;
    let runs: u64 = fields.nth(1)?.parse().ok()?;
    Some((ns as f64 / 1000.0, runs as f64))
}

/// Every thread of this process, the CPU it has run (µs) and how many
/// times it was put on a CPU.
fn threads_cpu_us() -> std::collections::HashMap<String, (f64, f64)> {
    let mut out = std::collections::HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            let tid = e.file_name().to_string_lossy().into_owned();
            if let Some(us) = schedstat_us(&format!("/proc/self/task/{tid}/schedstat")) {
                out.insert(tid, us);
            }
        }
    }
    out
}

/// The calling thread's id, as `/proc/self/task` names it.
fn this_tid() -> Option<String> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// redis-server's own CPU time so far (user + system), in µs, from
/// `INFO cpu`; `None` when it does not say.
fn redis_cpu_us(admin: &mut RealConnection) -> Option<f64> {
    let Ok(Reply::Bulk(text)) = admin.execute(&args(&["INFO", "cpu"])) else {
        return None;
    };
    let text = String::from_utf8_lossy(&text);
    let field = |name: &str| -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
    };
    Some((field("used_cpu_user")? + field("used_cpu_sys")?) * 1e6)
}

/// redis-server's CPU over a window: read before, and after.
struct RedisCpu {
    admin: Option<RealConnection>,
    start: Option<f64>,
}

impl RedisCpu {
    fn start(url: &str) -> Self {
        let mut admin = RealConnection::open(url).ok();
        let start = admin.as_mut().and_then(redis_cpu_us);
        RedisCpu { admin, start }
    }

    /// µs since [`RedisCpu::start`] (0 when it cannot be read).
    fn since(&mut self) -> f64 {
        let end = self.admin.as_mut().and_then(redis_cpu_us);
        match (self.start, end) {
            (Some(a), Some(b)) => b - a,
            _ => 0.0,
        }
    }
}

/// Run `cycle` for every client on a thread of its own until `budget` has
/// passed, and return the cycles per second of all of them together, with
/// the CPU time those threads took (each thread reads its own). Each
/// client runs one cycle before the clock starts (a session's first command
/// creates its ACL user, which is not what is measured).
fn threaded<C: Send>(
    url: &str,
    clients: Vec<C>,
    budget: Duration,
    cycle: impl Fn(&mut C) -> Result<(), BackendBenchError> + Sync,
) -> Result<(Measured, f64), BackendBenchError> {
    let barrier = std::sync::Barrier::new(clients.len() + 1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = clients
            .into_iter()
            .map(|mut c| {
                let (barrier, cycle) = (&barrier, &cycle);
                scope.spawn(move || -> Result<(u64, (f64, f64)), BackendBenchError> {
                    let warm = cycle(&mut c);
                    // Every thread reaches the barrier, failed or not, or
                    // the others would wait for it forever.
                    barrier.wait();
                    warm?;
                    let (cpu, runs) = thread_cpu_us();
                    let deadline = Instant::now() + budget;
                    let mut n = 0u64;
                    while Instant::now() < deadline {
                        cycle(&mut c)?;
                        n += 1;
                    }
                    let (cpu_end, runs_end) = thread_cpu_us();
                    Ok((n, (cpu_end - cpu, runs_end - runs)))
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut redis = RedisCpu::start(url);
        let (mut total, mut cpu, mut runs) = (0u64, 0.0, 0.0);
        let mut failure = None;
        for w in workers {
            match w.join() {
                Ok(Ok((n, (us, r)))) => {
                    total += n;
                    cpu += us;
                    runs += r;
                }
                Ok(Err(e)) => failure = failure.or(Some(e)),
                Err(_) => failure = failure.or(Some(BackendBenchError::Misbehaved("a client thread panicked".into()))),
            }
        }
        let rate = total as f64 / start.elapsed().as_secs_f64();
        let redis_us = redis.since();
        match failure {
            Some(e) => Err(e),
            None => Ok((
                Measured {
                    rate,
                    commands: total * 2,
                    cpu: Cpu {
                        redis_us,
                        runs,
                        ..Cpu::default()
                    },
                },
                cpu,
            )),
        }
    })
}

/// Lock cycles per second with the `redis` crate straight to the server,
/// one connection (and key) per client.
fn direct_cycles(
    url: &str,
    auth: Option<(&str, &str)>,
    clients: usize,
    budget: Duration,
) -> Result<Measured, BackendBenchError> {
    let mut conns = Vec::with_capacity(clients);
    for i in 0..clients {
        let mut c = RealConnection::open(url)?;
        if let Some((user, pw)) = auth {
            expect(c.execute(&args(&["AUTH", user, pw]))?, &Reply::ok(), "AUTH")?;
        }
        let key = format!("bench:direct:{i}:lock");
        let acquire = args(&["SET", &key, "tok", "NX", "PX", "10000"]);
        let release = args(&["EVAL", RELEASE, "1", &key, "tok"]);
        conns.push((c, acquire, release));
    }
    let (mut m, cpu) = threaded(url, conns, budget, |(c, acquire, release)| {
        expect(c.execute(acquire)?, &Reply::ok(), "SET NX")?;
        expect(c.execute(release)?, &Reply::Integer(1), "the release")
    })?;
    m.cpu.client_us = cpu;
    Ok(m)
}

/// SessionLimits for the bench's sessions: the defaults, without the rate limit
/// (the point is what the walls cost, not the limit).
fn unlimited() -> SessionLimits {
    SessionLimits {
        commands_per_sec: f64::INFINITY,
        max_sessions: CONCURRENT_CLIENTS + 1,
        ..SessionLimits::default()
    }
}

/// Lock cycles per second through lab sessions in this process, one per
/// client, each line parsed as the console sends it; the events are drained
/// after every cycle, as the WebSocket does after every command.
fn session_cycles(url: &str, clients: usize, budget: Duration) -> Result<Measured, BackendBenchError> {
    let pool = SessionPool::new(unlimited());
    let mut sessions = Vec::with_capacity(clients);
    for _ in 0..clients {
        sessions.push(pool.open(vec![NodeTarget::new("redis", url)])?);
    }
    let [acquire, release] = &cycle_lines(LAB_KEY);
    // The session's work runs in the threads that call it: the lab's.
    let (mut m, cpu) = threaded(url, sessions, budget, |s| {
        expect(s.run_line("A", 0, acquire)?, &Reply::ok(), "SET NX")?;
        expect(s.run_line("A", 0, release)?, &Reply::Integer(1), "the release")?;
        s.take_events();
        Ok(())
    })?;
    m.cpu.backend_us = cpu;
    Ok(m)
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// What the bench's WebSocket client reads of every message: its type, and
/// a reply's text or an error's message. The rest of the message is still
/// parsed (serde_json checks every value it skips), as a browser's
/// `JSON.parse` parses all of it; it is not built into core's types, whose
/// internally tagged enums make serde buffer every value first (that cost
/// the client half its CPU, which a browser spends in its own process).
#[derive(serde::Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    message: Option<String>,
}

/// Send one `command` message and read messages until its `reply`, which
/// must be `want` (as redis-cli prints it). Every message is parsed
/// ([`Frame`]), as a browser parses every one.
async fn ws_command(ws: &mut Ws, msg: &tungstenite::Utf8Bytes, want: &str) -> Result<(), BackendBenchError> {
    ws.send(Message::Text(msg.clone())).await?;
    loop {
        let frame = ws.next().await.ok_or(BackendBenchError::Closed)??;
        let Message::Text(text) = frame else { continue };
        let m: Frame<'_> =
            serde_json::from_str(&text).map_err(|e| BackendBenchError::Misbehaved(format!("bad message: {e}")))?;
        match (&*m.kind, m.text) {
            ("reply", Some(text)) if text == want => return Ok(()),
            ("reply", text) => {
                return Err(BackendBenchError::Misbehaved(format!(
                    "reply {text:?}, expected {want:?}"
                )))
            }
            ("error", _) => return Err(BackendBenchError::Misbehaved(m.message.unwrap_or_default())),
            _ => {}
        }
    }
}

/// One lock cycle over a WebSocket.
async fn ws_cycle(
    ws: &mut Ws,
    acquire: &tungstenite::Utf8Bytes,
    release: &tungstenite::Utf8Bytes,
) -> Result<(), BackendBenchError> {
    ws_command(ws, acquire, "OK").await?;
    ws_command(ws, release, "(integer) 1").await
}

/// The WebSocket servers of a report, each started when first measured.
#[derive(Default)]
struct Backends {
    lab: Option<WsBackend>,
    relay: Option<WsBackend>,
}

/// A server the WebSocket figures go through: a router served on a
/// loopback port by a multi-thread runtime of its own, as `locklab serve`
/// serves the lab, started once for the whole report, as a server runs
/// for long (a fresh runtime every round would make the backend's threads
/// pay their first use, such as the simulator's Lua VM each thread makes
/// once, in every round).
struct WsBackend {
    rt: tokio::runtime::Runtime,
    addr: std::net::SocketAddr,
    /// The socket's path on the server.
    path: &'static str,
    /// The lab's state (`None` for the relay, which keeps none).
    state: Option<ApiState>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl WsBackend {
    /// The lab's `/api/session`, the rate limit lifted.
    fn lab(url: &str) -> Result<Self, BackendBenchError> {
        let state = ApiState::with_limits(Some(url.to_owned()), unlimited());
        Self::start(site(None, state.clone()), "/api/session", Some(state))
    }

    /// The bare [`relay`] to the server at `url`.
    fn relay(url: &str) -> Result<Self, BackendBenchError> {
        Self::start(relay::router(url.to_owned()), relay::PATH, None)
    }

    fn start(router: axum::Router, path: &'static str, state: Option<ApiState>) -> Result<Self, BackendBenchError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("lab-backend")
            .build()?;
        let listener = rt.block_on(tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)))?;
        let addr = listener.local_addr()?;
        // With each connection's peer, as `locklab serve` runs it (the lab's
        // routes answer loopback peers only).
        let app = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
        let server = rt.spawn(async move { axum::serve(no_delay(listener), app).await });
        Ok(WsBackend {
            rt,
            addr,
            path,
            state,
            server,
        })
    }

    /// Do the clients need keys of their own? The lab's sessions prefix
    /// one name apart ([`LAB_KEY`]); the relay passes names through.
    fn keyed(&self) -> bool {
        self.state.is_none()
    }

    /// Wait until the labs of the sockets that closed are dropped (their
    /// ACL users deleted on the server), as long as 5 s.
    fn settle(&self) {
        let Some(state) = &self.state else { return };
        self.rt.block_on(async {
            let wait = Instant::now() + Duration::from_secs(5);
            while state.live_sessions() > 0 && Instant::now() < wait {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            // And every book is in the stages' total (a socket's session
            // ends on the blocking pool): what the round measured is read
            // now, not in the next path's round.
            let wait = Instant::now() + Duration::from_secs(5);
            while stages::open_books() > 0 && Instant::now() < wait {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
    }
}

impl Drop for WsBackend {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Lock cycles per second through `backend`, one WebSocket (so one lab
/// session, on the lab) per client, every command a `command` message
/// answered by its `reply` (on the lab, after its events).
///
/// The clients are another program's: they run on a thread of their own
/// with a current-thread runtime, as a browser runs in a process of its
/// own, and the CPU they take is counted apart from the backend's (the
/// machine's cores are still shared, as with a browser on the same
/// machine).
fn websocket_cycles(
    backend: &WsBackend,
    url: &str,
    clients: usize,
    budget: Duration,
) -> Result<Measured, BackendBenchError> {
    let ws_url = format!("ws://{}{}", backend.addr, backend.path);
    let (keyed, redis_url) = (backend.keyed(), url.to_owned());
    let client = std::thread::Builder::new().name("ws-client".into()).spawn(
        move || -> Result<Measured, BackendBenchError> {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(ws_clients(&ws_url, keyed, &redis_url, clients, budget))
        },
    )?;
    let measured = client
        .join()
        .unwrap_or_else(|_| Err(BackendBenchError::Misbehaved("the client thread panicked".into())));
    // The clients closed politely: the next round starts with no lab left.
    backend.settle();
    measured
}

/// The client side of [`websocket_cycles`], on its own thread: connect
/// `clients` WebSockets to `ws_url`, run lock cycles on all of them for
/// `budget` (on a key each when `keyed`, else on [`LAB_KEY`]), and count
/// them and the CPU every thread took.
async fn ws_clients(
    ws_url: &str,
    keyed: bool,
    url: &str,
    clients: usize,
    budget: Duration,
) -> Result<Measured, BackendBenchError> {
    let command = |line: &str| -> tungstenite::Utf8Bytes {
        let msg = ClientMsg::Command {
            client: "A".into(),
            line: line.to_owned(),
            node: 0,
        };
        serde_json::to_string(&msg).unwrap_or_default().into()
    };
    let mut sockets = Vec::with_capacity(clients);
    for i in 0..clients {
        let key = if keyed {
            format!("bench:relay:{i}:lock")
        } else {
            LAB_KEY.to_owned()
        };
        let [acquire, release] = cycle_lines(&key).map(|line| command(&line));
        let ws = ws_open(ws_url, &acquire, &release).await?;
        sockets.push((ws, acquire, release));
    }
    let me = this_tid();
    let threads_before = threads_cpu_us();
    let mut redis = RedisCpu::start(url);
    let start = Instant::now();
    let deadline = start + budget;
    // A task per client, so they run side by side like separate browsers.
    let tasks: Vec<_> = sockets
        .into_iter()
        .map(|(mut ws, acquire, release)| {
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    ws_cycle(&mut ws, &acquire, &release).await?;
                    n += 1;
                }
                Ok::<(u64, Ws), BackendBenchError>((n, ws))
            })
        })
        .collect();
    let mut total = 0u64;
    let mut failure = None;
    let mut done = Vec::with_capacity(clients);
    for t in tasks {
        match t.await {
            Ok(Ok((n, ws))) => {
                total += n;
                done.push(ws);
            }
            Ok(Err(e)) => failure = failure.or(Some(e)),
            Err(e) => {
                failure = failure.or(Some(BackendBenchError::Misbehaved(format!(
                    "a client task failed: {e}"
                ))))
            }
        }
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    let cpu = ws_cpu(redis.since(), &threads_before, me);
    for mut ws in done {
        let _ = ws.close(None).await;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(Measured {
            rate,
            commands: total * 2,
            cpu,
        }),
    }
}

/// One WebSocket to `ws_url`, connected as a browser
/// connects (Nagle off, as browsers set TCP_NODELAY; a read buffer that
/// tungstenite does not zero-fill 128 KiB of before every read, a
/// client-side cost a browser does not have and which is not the
/// backend's), its session opened by a first lock cycle (and its ACL user).
async fn ws_open(
    ws_url: &str,
    acquire: &tungstenite::Utf8Bytes,
    release: &tungstenite::Utf8Bytes,
) -> Result<Ws, BackendBenchError> {
    let config = WebSocketConfig::default().read_buffer_size(8 * 1024);
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(ws_url, Some(config), true).await?;
    ws_cycle(&mut ws, acquire, release).await?;
    Ok(ws)
}

/// The CPU a WebSocket round took: redis-server's (`redis_us`), the
/// clients' thread's (`me`), and every other thread's since `before`
/// (the backend's), with the times threads were put on a CPU.
fn ws_cpu(redis_us: f64, before: &std::collections::HashMap<String, (f64, f64)>, me: Option<String>) -> Cpu {
    let mut cpu = Cpu {
        redis_us,
        ..Cpu::default()
    };
    for (tid, (us, runs)) in threads_cpu_us() {
        let (us0, runs0) = before.get(&tid).copied().unwrap_or_default();
        let used = us - us0;
        cpu.runs += runs - runs0;
        if Some(&tid) == me.as_ref() {
            cpu.client_us += used;
        } else {
            cpu.backend_us += used;
        }
    }
    cpu
}

/// One figure: the best round's rate, or why it could not be measured.
type Figure = Result<f64, String>;

/// Lock cycles per second (`SET lock tok NX PX 10000`, then the Lua
/// compare-and-delete `EVAL`) on the server at `url`, four ways: directly
/// with the `redis` crate; directly as an ACL user with a session's rules;
/// through a lab [`Session`](crate::real::session::Session) in this process (table check, key prefix, ACL
/// user, trace events); and through the backend's `/api/session`
/// WebSocket, as a browser drives it. Each with one client and with
/// [`CONCURRENT_CLIENTS`], the rate limit lifted (the point is what the lab
/// costs, not the limit), about `seconds` per figure. Returns a report
/// with each path's rate as a fraction of direct, and issue 18's targets
/// for the WebSocket ([`TARGET_RATIO`]).
pub fn backend_report(url: &str, seconds: f64) -> String {
    let secs = if seconds.is_finite() && seconds > 0.0 {
        seconds.min(600.0)
    } else {
        1.0
    };
    let round = Duration::from_secs_f64(secs / f64::from(ROUNDS));
    let counts = [1, CONCURRENT_CLIENTS];
    let mut best: Vec<Vec<Figure>> = counts
        .iter()
        .map(|_| Path::ALL.iter().map(|_| Ok(0.0)).collect())
        .collect();
    // Every round's commands and CPU, summed: the CPU a command costs is
    // an average, not a best.
    let mut spent: Vec<Vec<(u64, Cpu)>> = counts
        .iter()
        .map(|_| Path::ALL.iter().map(|_| (0, Cpu::default())).collect())
        .collect();
    // The lab's stages ([`stages`]) on each path, every round's summed.
    let mut staged: Vec<Vec<Stages>> = counts
        .iter()
        .map(|_| Path::ALL.iter().map(|_| Stages::default()).collect())
        .collect();
    let mut backends = Backends::default();
    for _ in 0..ROUNDS {
        for (ci, &clients) in counts.iter().enumerate() {
            for (pi, path) in Path::ALL.iter().enumerate() {
                let slot = &mut best[ci][pi];
                if let Ok(so_far) = *slot {
                    let before = stages::total();
                    *slot = match path.measure(url, &mut backends, clients, round) {
                        Ok(m) => {
                            spent[ci][pi].0 += m.commands;
                            spent[ci][pi].1.add(m.cpu);
                            Ok(m.rate.max(so_far))
                        }
                        Err(e) => Err(e.to_string()),
                    };
                    staged[ci][pi].merge(&stages::total().since(&before));
                }
            }
        }
    }
    drop(backends);
    let mut out = format!(
        "lock cycles/s on {} (SET NX PX + EVAL release; best of {ROUNDS} alternating rounds of {:.2} s):\n",
        display_addr(url),
        round.as_secs_f64()
    );
    out.push_str(&ratio_table(&best, counts));
    out.push_str(&cpu_table(&spent));
    out.push_str(&stage_table(&staged));
    out.push_str(&issue41(&best));
    out
}

/// Issue 41's targets: the lab's WebSocket at least this share of the
/// bare relay, with 1 client and with [`CONCURRENT_CLIENTS`] ...
const TARGET_OF_RELAY: f64 = 0.9;
/// ... and the in-process session at least this fraction of direct with
/// [`CONCURRENT_CLIENTS`].
const TARGET_SESSION: f64 = 0.85;

/// Issue 41's two ratios, from this run's best rounds, against their
/// targets.
fn issue41(best: &[Vec<Figure>]) -> String {
    let of = |ci: usize, a: Path, b: Path| match (&best[ci][a as usize], &best[ci][b as usize]) {
        (Ok(a), Ok(b)) if *b > 0.0 => Some(a / b),
        _ => None,
    };
    let verdict = |r: Option<f64>, target: f64, pct: bool| match r {
        Some(r) if pct => format!("{:.0} % ({})", r * 100.0, met(r >= target)),
        Some(r) => format!("{r:.2}× ({})", met(r >= target)),
        None => "not measured".to_owned(),
    };
    format!(
        "issue 41: the lab's WebSocket vs the bare relay ≥ {:.0} %: 1 client {}, {CONCURRENT_CLIENTS} clients {}; the \
         in-process session vs direct ≥ {TARGET_SESSION:.2}× with {CONCURRENT_CLIENTS} clients: {}\n",
        TARGET_OF_RELAY * 100.0,
        verdict(of(0, Path::WebSocket, Path::Relay), TARGET_OF_RELAY, true),
        verdict(of(1, Path::WebSocket, Path::Relay), TARGET_OF_RELAY, true),
        verdict(of(1, Path::Session, Path::Direct), TARGET_SESSION, false),
    )
}

fn met(yes: bool) -> &'static str {
    if yes {
        "met"
    } else {
        "NOT met"
    }
}

/// The lab's µs per command by stage ([`Stage`]) on the paths that go
/// through it, every round's time over every round's commands: wall time
/// in each stage (`send` includes the wait for Redis's replies; `checks`
/// a script's run on the simulator). A path whose lab did no work, or a
/// stage it has none of (the in-process session reads no JSON and has no
/// lock watch), shows `-`.
fn stage_table(staged: &[Vec<Stages>]) -> String {
    let mut out = format!(
        "\nthe lab's µs per command by stage (wall time; send includes waiting for Redis):\n{:<26}{:<9}",
        "", "clients"
    );
    for st in Stage::ALL {
        out.push_str(&format!("{:>9}", st.label()));
    }
    out.push_str(&format!("{:>9}\n", "all"));
    for (pi, path) in Path::ALL.iter().enumerate() {
        for (ci, clients) in [(0, 1), (1, CONCURRENT_CLIENTS)] {
            let s = &staged[ci][pi];
            if s.commands == 0 {
                continue;
            }
            out.push_str(&format!("{:<26}{clients:<9}", path.label()));
            let mut all = 0.0;
            for st in Stage::ALL {
                match s.per_command_us(st).filter(|us| *us > 0.0) {
                    Some(us) => {
                        all += us;
                        out.push_str(&format!("{us:>9.1}"));
                    }
                    None => out.push_str(&format!("{:>9}", "-")),
                }
            }
            out.push_str(&format!("{all:>9.1}\n"));
        }
    }
    out
}

/// CPU µs per command of each path (every round's CPU over every round's
/// commands), by whom, and what that allows with [`CONCURRENT_CLIENTS`]:
/// when direct keeps every core busy (redis-server one, the clients the
/// rest), the WebSocket path, sharing those cores, can reach at most the
/// ratio of the CPU a command takes on each path.
fn cpu_table(spent: &[Vec<(u64, Cpu)>]) -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut out = format!(
        "\nCPU µs per command (all rounds; redis-server's from INFO cpu; WebSocket clients on a thread of their own, \
         sessions' work in the threads that call them; wakes: times the lab's and the clients' threads were put on \
         a CPU):\n{:<26}{:>36} {:>36}\n{:<26}{:>9}{:>9}{:>9}{:>9}{:>10}{:>9}{:>9}{:>9}\n",
        "",
        "1 client",
        format!("{CONCURRENT_CLIENTS} clients"),
        "",
        "redis",
        "lab",
        "client",
        "wakes",
        "redis",
        "lab",
        "client",
        "wakes"
    );
    let per = |ci: usize, pi: usize| -> Option<Cpu> {
        let (n, c) = spent[ci][pi];
        (n > 0).then(|| Cpu {
            redis_us: c.redis_us / n as f64,
            backend_us: c.backend_us / n as f64,
            client_us: c.client_us / n as f64,
            runs: c.runs / n as f64,
        })
    };
    let total = |c: Cpu| c.redis_us + c.backend_us + c.client_us;
    for (pi, path) in Path::ALL.iter().enumerate() {
        out.push_str(&format!("{:<26}", path.label()));
        for (ci, gap) in [(0, ""), (1, " ")] {
            match per(ci, pi) {
                Some(c) => out.push_str(&format!(
                    "{gap}{:>9.1}{:>9.1}{:>9.1}{:>9.1}",
                    c.redis_us, c.backend_us, c.client_us, c.runs
                )),
                None => out.push_str(&format!("{gap}{:>36}", "-")),
            }
        }
        out.push('\n');
    }
    let (ws, direct) = (Path::WebSocket as usize, Path::Direct as usize);
    if let (Some(w), Some(d)) = (per(1, ws), per(1, direct)) {
        out.push_str(&format!(
            "{CONCURRENT_CLIENTS} clients on {cores} cores: a command takes {:.1} µs of CPU direct and {:.1} through the \
             WebSocket (redis-server, lab and client together): where the cores are the limit, the WebSocket reaches \
             at most {:.2}× direct\n",
            total(d),
            total(w),
            total(d) / total(w)
        ));
    }
    out
}

/// What the bare relay says of the targets: its ratio to direct is what
/// any backend over a WebSocket reaches on this machine, and the lab's
/// WebSocket is also given as a share of it.
fn ceiling(best: &[Vec<Figure>]) -> String {
    let (direct, relay, lab) = (Path::Direct as usize, Path::Relay as usize, Path::WebSocket as usize);
    let part = |ci: usize| match (&best[ci][direct], &best[ci][relay], &best[ci][lab]) {
        (Ok(d), Ok(r), Ok(l)) if *d > 0.0 && *r > 0.0 => Some((r / d, l / r)),
        _ => None,
    };
    match (part(0), part(1)) {
        (Some((r1, l1)), Some((r8, l8))) => format!(
            "ceiling: a bare WebSocket relay (the same server and link to Redis, no lab: no session, checks, trace or \
             lock watch) reaches {r1:.2}× direct with 1 client and {r8:.2}× with {CONCURRENT_CLIENTS} on this machine; \
             the lab's WebSocket reaches {:.0} % and {:.0} % of the relay\n",
            l1 * 100.0,
            l8 * 100.0
        ),
        _ => String::new(),
    }
}

/// The table of [`backend_report`]: each path's best rate with one client
/// and with [`CONCURRENT_CLIENTS`], as a fraction of direct, what failed,
/// and the verdict on issue 18's targets ([`TARGET_RATIO`]).
fn ratio_table(best: &[Vec<Figure>], counts: [usize; 2]) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<26}{:>12}{:>11}{:>14}{:>11}\n",
        "",
        "1 client",
        "vs direct",
        format!("{CONCURRENT_CLIENTS} clients"),
        "vs direct"
    ));
    let ratio = |ci: usize, pi: usize| -> Option<f64> {
        match (&best[ci][0], &best[ci][pi]) {
            (Ok(d), Ok(t)) if *d > 0.0 => Some(t / d),
            _ => None,
        }
    };
    let mut failures = String::new();
    for (pi, path) in Path::ALL.iter().enumerate() {
        out.push_str(&format!("{:<26}", path.label()));
        for (ci, width) in [(0, 12), (1, 14)] {
            let rate = match &best[ci][pi] {
                Ok(r) => format!("{r:.0}"),
                Err(e) => {
                    failures.push_str(&format!("{}, {} client(s): failed: {e}\n", path.label(), counts[ci]));
                    "failed".into()
                }
            };
            let vs = match (pi, ratio(ci, pi)) {
                (0, _) => "-".to_owned(),
                (_, Some(r)) => format!("{r:.2}×"),
                (_, None) => "?".to_owned(),
            };
            out.push_str(&format!("{rate:>width$}{vs:>11}"));
        }
        out.push('\n');
    }
    out.push_str(&failures);
    let verdict = |ci: usize| match ratio(ci, Path::WebSocket as usize) {
        Some(r) => format!(
            "{r:.2}× (overhead {:.0} %), {}",
            (1.0 - r) * 100.0,
            if r >= TARGET_RATIO[ci] { "met" } else { "NOT met" }
        ),
        None => "not measured".to_owned(),
    };
    out.push_str(&format!(
        "target: through the WebSocket ≥ {:.1}× direct with 1 client: {}; ≥ {:.1}× with {CONCURRENT_CLIENTS} clients: {}\n",
        TARGET_RATIO[0],
        verdict(0),
        TARGET_RATIO[1],
        verdict(1)
    ));
    out.push_str(&ceiling(best));
    out.push_str(
        "(ratios within this one run: every path alternates over the same rounds on the same, possibly busy, machine)\n",
    );
    out
}
