//! `locklab check --library L --nemesis F`: a real lock library, unchanged,
//! under a seeded nemesis, turned into a history core checks.
//!
//! ```text
//!  client processes (checks/*.py, *.js) ──RESP──▶ nodes: sim-server in this process (or --redis URLs)
//!        │   └──── `W client key fence data` ───▶ the resource: a fenced store served here
//!        └─ one history file each (JSON lines) ◀── the nemesis reads them, strikes when one holds
//! ```
//!
//! * **Nodes.** One sim-server per node the library needs (one; five Redlock
//!   masters), started in this process on loopback ports, or the real
//!   servers `--redis` names (the same workload against redis-server).
//! * **The resource** witnesses writes instead of leaving them to be
//!   inferred: a line protocol on a loopback socket, `W client key fence
//!   data`, answered `OK seq` or `NO why`. Without `--fenced` it accepts every
//!   write, as a store that knows nothing of locks does; with it, only a
//!   write whose fence is at least the highest it accepted (Kleppmann's
//!   fencing token). It records every write it accepts, and its record, not
//!   the client's word, decides each write's outcome in the history.
//! * **The lab's fence**: the fenced workloads ask the lock's (first) node
//!   for `INCR key:fence` in one script that first checks they still hold the
//!   lock, so fences are handed out in the order of grants on that node.
//! * **One clock.** Every client stamps its calls with CLOCK_MONOTONIC minus
//!   the run's start (`t0_ns`, taken here), in milliseconds; the nemesis
//!   stamps its faults on the same clock.
//! * **The nemesis** (`check_nemesis`): whenever a client's last history
//!   line is a granted acquire (it is inside its critical section, before
//!   its write), a fault strikes — the holder paused (SIGSTOP), the lock's
//!   node paused, its clock jumped or drifting, the node restarted empty, a
//!   client's links delayed or cut — and is recorded as a fault marker.
//!   Which client and the gaps between faults come from `--seed`.
//! * **Deadline.** Clients stop starting rounds at the run's end; one that
//!   has not exited some seconds later is killed, and the card says so. No
//!   client is ever left stopped: [`Clients`] continues and kills them all
//!   when dropped, on every path.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::PoisonError;
use std::time::Duration;

use locklab_core::history::{parse, FaultMark, History, HistoryError, Limits, Op, OpKind};
use locklab_core::server::Profile;
use thiserror::Error;

use super::check_libs::{self, LibError, Libraries};
use super::check_nemesis::{self, Targets, PAUSE_LEASES};
use super::check_resource::{Accepted, Resource};
use crate::sim_server;

/// The lock libraries a run can use, as their workloads in `checks/` drive them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockLibrary {
    /// redis-py's `Lock` with `timeout` (a lease).
    RedisPy,
    /// redis-py's `Lock` with `timeout=None`: the lock never expires.
    RedisPyNoTimeout,
    /// redis-py's `Lock` with `timeout=0` ("held until released"), renewed with `reacquire()` in every round:
    /// redis-py #4279, the renewal deletes the lock and reports success.
    #[value(name = "redis-py-timeout-0")]
    #[serde(rename = "redis-py-timeout-0")]
    RedisPyTimeout0,
    /// python-redis-lock's `Lock` (whole-second `expire`).
    PythonRedisLock,
    /// pottery's `Redlock` over five masters.
    Pottery,
    /// node-redlock (Redlock over ioredis) over five masters.
    NodeRedlock,
}

impl LockLibrary {
    pub fn name(self) -> &'static str {
        match self {
            LockLibrary::RedisPy => "redis-py",
            LockLibrary::RedisPyNoTimeout => "redis-py-no-timeout",
            LockLibrary::RedisPyTimeout0 => "redis-py-timeout-0",
            LockLibrary::PythonRedisLock => "python-redis-lock",
            LockLibrary::Pottery => "pottery",
            LockLibrary::NodeRedlock => "node-redlock",
        }
    }

    /// Redlock wants a majority of independent masters; the others one node.
    pub fn nodes(self) -> usize {
        match self {
            LockLibrary::Pottery | LockLibrary::NodeRedlock => 5,
            _ => 1,
        }
    }

    /// The lock key the library itself writes for the lock named `name`.
    fn key(self, name: &str) -> String {
        match self {
            LockLibrary::PythonRedisLock => format!("lock:{name}"),
            LockLibrary::Pottery => format!("redlock:{name}"),
            _ => name.to_owned(),
        }
    }

    fn workload(self) -> (&'static str, &'static str) {
        match self {
            LockLibrary::NodeRedlock => ("node_redlock.js", include_str!("../../../checks/node_redlock.js")),
            _ => ("python_locks.py", include_str!("../../../checks/python_locks.py")),
        }
    }

    /// The lease, or `None` (no expiry).
    fn ttl_ms(self, ttl_ms: u64) -> Option<u64> {
        match self {
            LockLibrary::RedisPyNoTimeout | LockLibrary::RedisPyTimeout0 => None,
            // python-redis-lock's expire is whole seconds.
            LockLibrary::PythonRedisLock => Some(ttl_ms.div_ceil(1000).max(1) * 1000),
            _ => Some(ttl_ms),
        }
    }
}

/// The faults the nemesis can inject (see `check_nemesis` for how each is done).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Nemesis {
    /// A client stopped (SIGSTOP) inside its critical section for 3–4 lease times, then continued: a GC pause.
    Pause,
    /// The lock's node stopped for 3–4 lease times (as `kill -STOP` of redis-server), then continued.
    NodePause,
    /// The lock's node's clock stepped 3–4 lease times forward while a client holds the lock.
    ClockJump,
    /// The lock's node's clock running four times fast for one lease time while a client holds the lock.
    ClockDrift,
    /// The lock's node restarted without persistence while a client holds the lock.
    Restart,
    /// A waiting client's links to the nodes delayed 1.5 lease times each way, for 3–4 lease times.
    LinkDelay,
    /// The holder's links to the nodes cut (every request and reply lost) for 3–4 lease times.
    LinkCut,
    /// Master + replica: replication cut, then at the next grant the master killed and the replica,
    /// which never got that lock, promoted. sim-server has no replication, so these are two real
    /// redis-servers the lab starts on loopback ports (redis-server must be installed).
    Failover,
    /// No fault: the library on its own (a baseline; redis-py-timeout-0 needs none).
    None,
}

impl Nemesis {
    pub fn name(self) -> &'static str {
        match self {
            Nemesis::Pause => "pause",
            Nemesis::NodePause => "node-pause",
            Nemesis::ClockJump => "clock-jump",
            Nemesis::ClockDrift => "clock-drift",
            Nemesis::Restart => "restart",
            Nemesis::LinkDelay => "link-delay",
            Nemesis::LinkCut => "link-cut",
            Nemesis::Failover => "failover",
            Nemesis::None => "none",
        }
    }

    /// It acts on a node, so the node must be the lab's own sim-server.
    pub fn on_node(self) -> bool {
        matches!(
            self,
            Nemesis::NodePause | Nemesis::ClockJump | Nemesis::ClockDrift | Nemesis::Restart
        )
    }

    /// It acts on a client's links: every client connects through proxies.
    pub fn on_link(self) -> bool {
        matches!(self, Nemesis::LinkDelay | Nemesis::LinkCut)
    }
}

/// How each round of a workload goes, beyond acquire → work → write →
/// release: chosen for the library and the fault, so that what the fault
/// breaks reaches the resource (see `checks/python_locks.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Round {
    /// Also write right after the grant. Two holders at once (a promoted
    /// replica that lost the first one's lock; a renewal that deleted it)
    /// then each write while the other holds: the resource witnesses the
    /// overlap and the stale write, not only the lock key's history.
    write_first: bool,
    /// The work reads from the lock's node before the write, across the
    /// client's link: a delayed or cut link stretches the work past the
    /// lease, and the write lands after the next holder's.
    read: bool,
    /// Renew the lock after the first write (the library's own renewal).
    renew: bool,
}

impl Round {
    fn of(library: LockLibrary, nemesis: Nemesis) -> Round {
        let renew = library == LockLibrary::RedisPyTimeout0;
        Round {
            write_first: nemesis == Nemesis::Failover || renew,
            read: nemesis.on_link(),
            renew,
        }
    }

    /// Writes per round: the nemesis strikes before the last.
    fn writes(self) -> u32 {
        1 + u32::from(self.write_first)
    }
}

/// Said on the card of every `failover` run: where it ran, and why not on
/// sim-server.
pub const FAILOVER_NOTE: &str = "failover ran on a master + replica of real redis-servers the lab started on loopback \
     ports, not on sim-server: sim-server has no replication, and a promoted replica that was never sent the lock \
     is what this fault is about";

/// One run: a library, a fault, and how.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub library: LockLibrary,
    pub nemesis: Nemesis,
    pub clients: u32,
    pub seconds: u64,
    pub seed: u64,
    pub fenced: bool,
    pub ttl_ms: u64,
    /// Real servers instead of sim-server nodes (as many as the library needs).
    pub redis: Vec<String>,
    /// Another workload script (`.py` or `.js`) in place of the library's own.
    pub workload: Option<PathBuf>,
    /// Where the histories go.
    pub dir: PathBuf,
    pub libs: Libraries,
}

#[derive(Debug, Error)]
pub enum RunError {
    #[error(transparent)]
    Lib(#[from] LibError),
    #[error("{library} needs {need} Redis nodes; --redis gave {got}")]
    Nodes {
        library: &'static str,
        need: usize,
        got: usize,
    },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{client}'s history ({path}): {source}")]
    History {
        client: String,
        path: String,
        source: HistoryError,
    },
    #[error("--workload {0}: expected a .py or .js file")]
    Workload(String),
    #[error("{0} acts on a node, so it needs the lab's own sim-server nodes: a server given with --redis is never paused, restarted or moved in time")]
    NeedsOwnNodes(&'static str),
    #[error("{0}: a link fault needs a redis://HOST:PORT/ URL with an IP address")]
    Url(String),
    #[error("failover needs a library on one node (master + replica); {0} runs on five independent masters")]
    FailoverNeedsOneNode(&'static str),
    #[error("the master + replica topology: {0}")]
    Topology(#[from] crate::real::topology::TopologyError),
}

pub(super) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunError {
    let what = what.into();
    move |source| RunError::Io { what, source }
}

/// What a run produced: the merged history (also written to `path`), and
/// what happened to the clients that the history cannot say.
#[derive(Debug)]
pub struct Run {
    pub history: History,
    pub path: PathBuf,
    pub backend: &'static str,
    pub notes: Vec<String>,
    pub accepted: usize,
    pub refused: usize,
}

/// The lease the runs use unless told otherwise.
pub const TTL_MS: u64 = 1000;
/// A client still running this long after the run's end (plus one pause)
/// is killed.
const GRACE_MS: u64 = 10_000;
/// How often the nemesis looks at the histories.
pub(super) const POLL: Duration = Duration::from_millis(10);

/// Now on the run's clock: CLOCK_MONOTONIC in nanoseconds (the clock
/// Python's `time.monotonic_ns` and Node's `process.hrtime` read).
pub(super) fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// Run one library under one nemesis.
pub fn run(spec: &RunSpec) -> Result<Run, RunError> {
    let (program, script, node_path) = interpreter(spec)?;
    std::fs::create_dir_all(&spec.dir).map_err(io(format!("mkdir {}", spec.dir.display())))?;
    let (urls, nodes, backend) = nodes(spec)?;
    let mut targets = Targets {
        nodes,
        links: Vec::new(),
        topology: None,
    };
    let urls = match spec.nemesis {
        Nemesis::Failover => targets.replicated()?,
        _ => urls,
    };
    let backend = if targets.topology.is_some() {
        "redis-server (master + replica)"
    } else {
        backend
    };
    targets.links(spec.nemesis, spec.clients, &urls)?;
    let t0 = mono_ns();
    let resource = Resource::start(spec.fenced, t0)?;
    let name = format!("locklab:check:{}:{}", spec.library.name(), spec.seed);
    let key = spec.library.key(&name);
    let end_ms = spec.seconds * 1000;
    let round = Round::of(spec.library, spec.nemesis);
    let mut clients = Clients::default();
    for i in 1..=spec.clients.max(1) {
        let client = format!("c{i}");
        let cfg = serde_json::json!({
            "library": spec.library.name(), "client": client, "urls": targets.urls_for(i as usize - 1, &urls),
            "key": key, "resource": resource.addr, "history": spec.dir.join(format!("{client}.jsonl")),
            "ttl_ms": spec.library.ttl_ms(spec.ttl_ms), "work_ms": spec.ttl_ms / 2, "end_ms": end_ms,
            "fenced": spec.fenced, "t0_ns": t0.to_string(), "failover": targets.failover_url(),
            "write_first": round.write_first, "read": round.read, "renew": round.renew,
        });
        clients.all.push(start_client(
            spec,
            (&program, &script, node_path.as_deref()),
            client,
            &cfg,
            round.writes(),
        )?);
    }
    let lease = spec.library.ttl_ms(spec.ttl_ms).unwrap_or(spec.ttl_ms);
    let faults = check_nemesis::run(spec.nemesis, &mut clients, &mut targets, (spec.seed, lease, end_ms, t0))?;
    let mut notes = Vec::new();
    if spec.nemesis == Nemesis::Failover {
        notes.push(FAILOVER_NOTE.to_owned());
    }
    notes.extend(clients.finish(end_ms + lease * (PAUSE_LEASES + 1) + GRACE_MS, t0));
    let (merged, accepted, refused) = merge(&clients, faults, &resource)?;
    let path = spec.dir.join("history.jsonl");
    write_history(&path, &merged)?;
    // Read back, so that every witness names its line in history.jsonl.
    let file = File::open(&path).map_err(io(format!("open {}", path.display())))?;
    let history = parse(BufReader::new(file), &Limits::default()).map_err(|source| RunError::History {
        client: "the merged history".to_owned(),
        path: path.display().to_string(),
        source,
    })?;
    Ok(Run {
        history,
        path,
        backend,
        notes,
        accepted,
        refused,
    })
}

/// Start one client process with its config (one JSON argument); its
/// history file is created first, so the nemesis can read it at once.
fn start_client(
    spec: &RunSpec,
    (program, script, node_path): (&Path, &Path, Option<&Path>),
    client: String,
    cfg: &serde_json::Value,
    writes: u32,
) -> Result<Client, RunError> {
    let history = spec.dir.join(format!("{client}.jsonl"));
    File::create(&history).map_err(io(format!("create {}", history.display())))?;
    let log = File::create(spec.dir.join(format!("{client}.log"))).map_err(io("create a client log"))?;
    let err = log.try_clone().map_err(io("a client log"))?;
    let mut cmd = Command::new(program);
    cmd.arg(script)
        .arg(cfg.to_string())
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err);
    if let Some(p) = node_path {
        cmd.env("NODE_PATH", p);
    }
    let child = cmd.spawn().map_err(io(format!("start {}", program.display())))?;
    Ok(Client {
        name: client,
        child,
        tail: Tail::new(history, writes),
    })
}

/// The program, the script and `NODE_PATH` for the library (or `--workload`).
fn interpreter(spec: &RunSpec) -> Result<(PathBuf, PathBuf, Option<PathBuf>), RunError> {
    let (file, text) = spec.library.workload();
    let script = match &spec.workload {
        Some(w) => w.clone(),
        None => {
            std::fs::create_dir_all(&spec.dir).map_err(io(format!("mkdir {}", spec.dir.display())))?;
            let path = spec.dir.join(file);
            std::fs::write(&path, text).map_err(io(format!("write {}", path.display())))?;
            path
        }
    };
    let js = match script.extension().and_then(|e| e.to_str()) {
        Some("js") => true,
        Some("py") => false,
        _ => return Err(RunError::Workload(script.display().to_string())),
    };
    if js {
        check_libs::need_node()?;
        let modules = spec
            .libs
            .node_modules_with(&[check_libs::IOREDIS_FOR_REDLOCK, check_libs::REDLOCK])?;
        return Ok((PathBuf::from("node"), script, Some(modules)));
    }
    let python = spec
        .libs
        .python_with(&[check_libs::REDIS_PY, check_libs::PYTHON_REDIS_LOCK, check_libs::POTTERY])?;
    Ok((python, script, None))
}

/// The nodes' URLs, the sim-servers kept alive for the run, and which
/// server it is.
fn nodes(spec: &RunSpec) -> Result<(Vec<String>, Vec<sim_server::Server>, &'static str), RunError> {
    let need = spec.library.nodes();
    if spec.nemesis == Nemesis::Failover {
        if need != 1 {
            return Err(RunError::FailoverNeedsOneNode(spec.library.name()));
        }
        if !spec.redis.is_empty() {
            return Err(RunError::NeedsOwnNodes(spec.nemesis.name()));
        }
        // The master and its replica are started by `Targets::replicated`.
        return Ok((Vec::new(), Vec::new(), "redis-server"));
    }
    if !spec.redis.is_empty() {
        if spec.nemesis.on_node() {
            return Err(RunError::NeedsOwnNodes(spec.nemesis.name()));
        }
        if spec.redis.len() != need {
            return Err(RunError::Nodes {
                library: spec.library.name(),
                need,
                got: spec.redis.len(),
            });
        }
        return Ok((spec.redis.clone(), Vec::new(), "redis-server"));
    }
    let mut servers = Vec::new();
    for _ in 0..need {
        let cfg = sim_server::SimServerConfig::new(Ipv4Addr::LOCALHOST.into(), 0, Profile::V7_0);
        servers.push(sim_server::spawn(cfg).map_err(io("start a sim-server node"))?);
    }
    Ok((servers.iter().map(|s| s.url()).collect(), servers, "sim-server"))
}

/// A client's history file as it grows: enough to see whether it holds the
/// lock with its last write still to come.
pub(super) struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    /// Writes in a round; the client holds until its last one.
    writes: u32,
    /// Writes since its grant.
    written: u32,
    pub(super) holding: bool,
    /// Granted acquires so far.
    pub(super) grants: u64,
}

impl Tail {
    fn new(path: PathBuf, writes: u32) -> Tail {
        Tail {
            path,
            offset: 0,
            partial: Vec::new(),
            writes: writes.max(1),
            written: 0,
            holding: false,
            grants: 0,
        }
    }

    /// Read what was appended since; malformed lines are left to [`merge`].
    pub(super) fn poll(&mut self) {
        let Ok(mut f) = File::open(&self.path) else { return };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut chunk = Vec::new();
        let Ok(n) = f.take(1 << 20).read_to_end(&mut chunk) else {
            return;
        };
        self.offset += n as u64;
        self.partial.extend_from_slice(&chunk);
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) {
                let granted = v["op"] == "acquire" && v["ok"] == true;
                self.grants += u64::from(granted);
                if granted {
                    self.written = 0;
                } else if v["op"] == "write" {
                    self.written += 1;
                }
                let last_written = v["op"] == "write" && self.written >= self.writes;
                self.holding = granted || (self.holding && !last_written && v["op"] != "release");
            }
        }
        if self.partial.len() > 64 * 1024 {
            self.partial.clear();
        }
    }
}

pub(super) struct Client {
    pub(super) name: String,
    pub(super) child: Child,
    pub(super) tail: Tail,
}

/// The client processes. Dropped: continued and killed, so none is left
/// stopped or running whatever went wrong.
#[derive(Default)]
pub(super) struct Clients {
    pub(super) all: Vec<Client>,
}

pub(super) fn signal(child: &Child, sig: rustix::process::Signal) {
    let pid = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

impl Clients {
    /// Wait for every client to exit by `deadline_ms`; kill the rest.
    fn finish(&mut self, deadline_ms: u64, t0: u64) -> Vec<String> {
        let mut notes = Vec::new();
        loop {
            let mut running = 0;
            for c in &mut self.all {
                if matches!(c.child.try_wait(), Ok(None)) {
                    running += 1;
                }
            }
            let now = (mono_ns() - t0) / 1_000_000;
            if running == 0 || now >= deadline_ms {
                break;
            }
            std::thread::sleep(POLL * 5);
        }
        for c in &mut self.all {
            match c.child.try_wait() {
                Ok(Some(status)) if !status.success() => {
                    notes.push(format!("{} exited with {status} (see {}.log)", c.name, c.name));
                }
                Ok(None) | Err(_) => {
                    let _ = c.child.kill();
                    let _ = c.child.wait();
                    notes.push(format!(
                        "{} had not exited {} s after the run's end (and its last pause); killed",
                        c.name,
                        GRACE_MS / 1000
                    ));
                }
                Ok(Some(_)) => {}
            }
            c.tail.poll();
        }
        notes
    }
}

impl Drop for Clients {
    fn drop(&mut self) {
        for c in &mut self.all {
            if matches!(c.child.try_wait(), Ok(None)) {
                signal(&c.child, rustix::process::Signal::CONT);
                let _ = c.child.kill();
                let _ = c.child.wait();
            }
        }
    }
}

/// Every client's history in one, each write's outcome as the resource
/// recorded it; accepted writes no client logged (it was killed first) are
/// added at the moment the resource accepted them.
fn merge(clients: &Clients, faults: Vec<FaultMark>, resource: &Resource) -> Result<(History, usize, usize), RunError> {
    let mut history = History {
        faults,
        ..History::default()
    };
    for c in &clients.all {
        let path = c.tail.path.display().to_string();
        let file = File::open(&c.tail.path).map_err(io(format!("open {path}")))?;
        let h = parse(BufReader::new(file), &Limits::default()).map_err(|source| RunError::History {
            client: c.name.clone(),
            path,
            source,
        })?;
        history.ops.extend(h.ops);
    }
    let store = resource.store.lock().unwrap_or_else(PoisonError::into_inner);
    let mut recorded: BTreeMap<(String, String), &Accepted> = BTreeMap::new();
    for a in &store.accepted {
        recorded.insert((a.client.clone(), a.value.clone()), a);
    }
    for op in history.ops.iter_mut().filter(|o| o.op == OpKind::Write) {
        let key = (op.client.clone(), op.value.clone().unwrap_or_default());
        match (recorded.remove(&key), op.complete_ms) {
            (Some(_), Some(_)) => op.ok = Some(true),
            // The client never heard back, but the resource did accept it.
            (Some(a), None) => {
                op.complete_ms = Some(a.at_ms.max(op.invoke_ms));
                op.ok = Some(true);
            }
            (None, Some(_)) => op.ok = Some(false),
            (None, None) => {}
        }
    }
    let unlogged: Vec<Op> = recorded
        .values()
        .map(|a| Op {
            line: 0,
            client: a.client.clone(),
            op: OpKind::Write,
            key: a.key.clone(),
            token: None,
            ttl_ms: None,
            fence: a.fence,
            value: Some(a.value.clone()),
            invoke_ms: a.at_ms,
            complete_ms: Some(a.at_ms),
            ok: Some(true),
        })
        .collect();
    history.ops.extend(unlogged);
    history.ops.sort_by_key(|o| (o.invoke_ms, o.complete_ms));
    Ok((history, store.accepted.len(), store.refused))
}

fn write_history(path: &Path, history: &History) -> Result<(), RunError> {
    let mut out = String::new();
    for f in &history.faults {
        out.push_str(&serde_json::to_string(f).unwrap_or_default());
        out.push('\n');
    }
    for op in &history.ops {
        out.push_str(&op.to_line());
        out.push('\n');
    }
    std::fs::write(path, out).map_err(io(format!("write {}", path.display())))
}
