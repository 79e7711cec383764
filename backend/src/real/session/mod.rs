//! A lab session on real redis-server nodes: the backend half of the
//! `RealDriver`.
//!
//! # Why a session is more than a connection
//!
//! The browser lets anyone type any redis-cli line, and the server it runs
//! on may be someone's own Redis (`locklab serve --redis URL`). So a session
//! is a *sandbox* built from three independent walls, each of which would
//! stop most mistakes alone:
//!
//! 1. **The lab's command table, default deny.** Every argv is looked up
//!    in core's [`table`] before anything is sent, and the row's `lab`
//!    column ([`lab`]) decides: a command the table does not have, one the
//!    row denies (`CONFIG`, `FLUSHALL`, `KEYS`, `MEMORY`, `RANDOMKEY`,
//!    `COPY`, `DBSIZE`, `PUBSUB`, …), a container's subcommand the row does
//!    not list (`SCRIPT DEBUG`, `SCRIPT KILL`, `OBJECT FREQ`, `FUNCTION
//!    FLUSH`, …), or a count or offset past the row's bound is refused
//!    *here*, with a redis-style error, and never reaches Redis. What passes
//!    is charged to the session's [`quota`] first. Function libraries are
//!    server-wide, so a session's live in a namespace of its own
//!    ([`functions`]): it can neither replace, delete nor shadow one it did
//!    not load, and they are deleted when it ends. `SCRIPT FLUSH` is allowed
//!    on purpose: lessons use it to show `NOSCRIPT`, and the worst it does to
//!    a neighbour is make its next `EVALSHA` fall back to `EVAL`, which is
//!    exactly what correct clients do.
//! 2. **A key prefix.** Every key position the table knows (`SET k`, `DEL k1
//!    k2`, `EVAL … numkeys k…`, `WATCH k…`) is rewritten to
//!    `lab:<session-id>:k`, so two sessions typing `SET lock A` never touch
//!    the same key. `SCAN` is run by the lab on its admin connection with a
//!    `MATCH` that confines it to the prefix, and its keys are shown
//!    unprefixed; every other reply is shown exactly as Redis sent it (a
//!    value that starts with the prefix is a value).
//! 3. **An ACL user** per session, `lab-<id>`, with [`acl_rules`]
//!    generated from the same table (`~lab:<id>:* -@all` and exactly the
//!    pairs it allows: no `SCAN`, `RANDOMKEY`, `SCRIPT DEBUG`, `MEMORY`, …),
//!    made by the server's own credentials and deleted when the session
//!    drops. This is the wall that holds inside Lua: a
//!    script that calls `redis.call('FLUSHALL')` or touches a key outside
//!    the prefix is refused by Redis itself, because redis-server checks
//!    ACLs for every command a script runs.
//!
//! Scripts get more ([`Scripts`]). On a server the lab does not own, none
//! runs there: each runs on core's simulator against the keys it declares,
//! and only its writes are sent ([`effects`]). On the lab's own servers (and
//! on an owner's with `--scripts=run`) each runs first on the simulator on a
//! copy of the session's keys ([`preflight`]), and one that runs past the
//! budget on Redis anyway is killed ([`watchdog`]). What a session leaves when it ends
//! is cleaned up, later if the server was busy ([`janitor`]).
//!
//! # A managed cluster is the session's own
//!
//! Lesson 31 is about what a real cluster does with a script's keys, and
//! two of the walls above would change its answers. A prefix moves a key
//! to another hash slot (`lab:<id>:lock:order:1001` is not in slot 3766),
//! and it cannot reach a key a script builds itself or takes from `ARGV`,
//! which is exactly the mistake the lesson shows; and the ACL's key
//! pattern is checked *before* the cluster's locality rule inside a
//! script, so `redis.call('incr', 'fence:order:1001')` would come back as
//! an ACL error instead of Redis's `non local key` error. So a session on
//! a managed `cluster3` ([`Confinement::OwnCluster`]) uses the keys as
//! typed, with an ACL user on `~*` that has the same commands. That is
//! safe because the cluster is the session's alone: the backend starts it
//! for one WebSocket (or one CLI run), resets it before every lesson and
//! kills it with its owner, so there is no one else's key to reach. The
//! command table and the ACL's command rules stay as they are. Such a
//! session also behaves like a cluster client (`redis-cli -c`): a command
//! with keys goes to the node that owns their slot (read from `CLUSTER
//! SLOTS`), and a `MOVED` or `ASK` that still comes back is followed.
//!
//! Sizes and rates are bounded by [`Limits`]: a line, an argv, a script, a
//! token bucket of commands per second (which waits briefly for a token
//! before refusing, so a fast but honest client sees backpressure rather
//! than errors), and the number of live sessions ([`SessionPool`]).
//!
//! # Two lanes
//!
//! A session runs a command on blocking connections ([`Session::run`]: the
//! lesson runner, the CLI, a session on its own cluster) or on tokio
//! ([`Session::run_async`], in `fast.rs`: the WebSocket's free play, where
//! a thread hand-off per message cost more than the round trip). Both go
//! through the same stages (`phases.rs`: checks, rewrite, pre-flight, rate
//! limit, trace); only the I/O differs, and the async lane pipelines the
//! lock watch's peek behind the command where Redis allows it. A client's
//! connection to a node lives in one lane at a time.
//!
//! # Trace
//!
//! Every command becomes core's trace events, so the timeline renders a
//! real run like a simulated one: `Sent` (client lane) when it goes on the
//! wire, `Executed` (node lane) and `Received` (client lane) when the reply
//! is back. A real server does not say *when* inside the round trip it ran
//! the command, so `Executed` is stamped at the midpoint of the round trip
//! — an estimate, and the only honest one. `at_ms` is wall time since the
//! session started. A refused command yields a `Note` and no `Sent`: it
//! never left the backend. A node that cannot be reached yields `Lost`
//! with reason `node_down`, and the next command reconnects (and re-creates
//! the ACL user, which a restart without persistence has forgotten).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_core::actor::{Actor, Names};
use locklab_core::cli;
use locklab_core::reply::Reply;
use locklab_core::server::cluster::key_slot;
use locklab_core::server::lab;
use locklab_core::server::table;
use locklab_core::server::Profile;
use locklab_core::trace::{Event, EventKind};
use thiserror::Error;

/// The nodes a session is opened on (their home is [`crate::real::conn`]).
pub use crate::real::conn::NodeTarget;
use crate::real::conn::{display_addr, random_hex, RealConnection, RealError};
use crate::real::topology::{Topology, TopologyKind};
use sandbox::{Rewritten, Sandbox};

mod delay;
pub mod effects;
mod fast;
mod flight;
pub mod functions;
mod janitor;
pub mod link;
mod phases;
pub mod preflight;
pub mod quota;
pub mod sandbox;
mod watchdog;

pub use flight::{Flight, TakeOff};
use janitor::{Cleanup, Janitor};
use link::Link;
use phases::{Before, Loaded, Outcome, Prepared};
use preflight::{Preflight, Verdict};
use watchdog::{Killer, Watchdog};

/// Bounds on what one session may send.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Longest redis-cli line accepted, in bytes.
    pub max_line: usize,
    /// Most arguments in one argv (command name included).
    pub max_args: usize,
    /// Longest script body (`EVAL`, `SCRIPT LOAD`, `FUNCTION LOAD`).
    pub max_script: usize,
    /// Most bytes in one argv, all arguments together.
    pub max_argv_bytes: usize,
    /// Sustained commands per second per session (token bucket refill).
    /// `f64::INFINITY` disables the limit (the bench does, to measure the
    /// checks rather than the limit).
    pub commands_per_sec: f64,
    /// Bucket size: how many commands may go at once after a quiet spell.
    pub burst: f64,
    /// How long a command may wait for a token before it is refused.
    pub max_wait: Duration,
    /// Most live sessions in one [`SessionPool`].
    pub max_sessions: usize,
    /// How long to wait for a reply before calling a node unreachable (a
    /// SIGSTOPped server accepts the bytes and never answers).
    pub reply_timeout: Duration,
    /// How long a session's script or function may run on Redis before
    /// the lab kills it (`SCRIPT KILL` / `FUNCTION KILL`, see
    /// [`watchdog`]). Redis serves the kill only after its own
    /// `busy-reply-threshold`, so on a server left at the default the
    /// kill lands after about 5 s.
    pub script_budget: Duration,
    /// A WebSocket with no message for this long is closed and its session
    /// ended (its keys, ACL user and libraries deleted).
    pub idle_timeout: Duration,
    /// Most bytes one script may ask `redis.log` to write (as the
    /// simulator counts them in the pre-flight).
    pub max_log_bytes: u64,
    /// Most keys a session may name and still have its scripts checked
    /// (each check copies them into the simulator).
    pub max_tracked_keys: usize,
    /// Most clients (A, B, …) in one session.
    pub max_clients: usize,
    /// Most bytes the session's keys may hold, by the lab's upper-bound
    /// account ([`quota`]): `--session-quota`.
    pub session_quota: u64,
    /// Most scripts (distinct `EVAL` and `SCRIPT LOAD` bodies, and
    /// `FUNCTION LOAD` libraries) one session may have the server keep.
    pub max_scripts: usize,
    /// Most bytes of those scripts together.
    pub max_script_bytes: u64,
    /// Most bytes of one reply shown to the page; a longer one is cut,
    /// with a note, and never held whole by the async lane.
    pub max_reply_bytes: usize,
    /// Most keys free play watches for locks; past that the oldest is
    /// dropped, with a note.
    pub max_watched_locks: usize,
    /// `--scripts=run`: on a server the lab does not own, scripts run there
    /// after the pre-flight, with the watchdog, as on the lab's own servers
    /// (except those that read the server's state, which are refused). Off
    /// (the default), they run on the simulator and only their writes are
    /// sent ([`Scripts::Simulated`]).
    pub run_scripts: bool,
}

/// How a session's scripts reach its servers (issue 35, design item 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scripts {
    /// The lab's own servers: pre-flight on the simulator, then run for
    /// real with the watchdog. The lab can kill and restart them.
    Managed,
    /// A server the lab does not own, by default: no user Lua runs there.
    /// Each script runs on the simulator against its declared keys read
    /// under `WATCH`, and its writes are sent as one `MULTI … EXEC`
    /// ([`effects`]).
    Simulated,
    /// A server the lab does not own with `--scripts=run` (a speaker alone
    /// on a laptop): as [`Scripts::Managed`], but a script that reads the
    /// server's own state is refused, since that is how its run there can
    /// go another way than on the simulator.
    Run,
}

impl Scripts {
    /// How scripts reach a server the lab owns (`managed`) or not, under
    /// `limits`.
    pub fn on(managed: bool, limits: &Limits) -> Scripts {
        match (managed, limits.run_scripts) {
            (true, _) => Scripts::Managed,
            (false, false) => Scripts::Simulated,
            (false, true) => Scripts::Run,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line: 64 * 1024,
            max_args: 1024,
            max_script: 64 * 1024,
            max_argv_bytes: 256 * 1024,
            commands_per_sec: 200.0,
            burst: 200.0,
            max_wait: Duration::from_millis(500),
            max_sessions: 64,
            reply_timeout: Duration::from_secs(10),
            script_budget: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(600),
            max_log_bytes: 4096,
            max_tracked_keys: 10_000,
            max_clients: 16,
            session_quota: 64 << 20,
            max_scripts: 256,
            max_script_bytes: 4 << 20,
            max_reply_bytes: 256 << 10,
            max_watched_locks: 256,
            run_scripts: false,
        }
    }
}

/// Why a session refused or failed a command. Each one also has a
/// redis-style error line ([`SessionError::to_reply`]) for the console.
#[derive(Debug, Error)]
pub enum SessionError {
    /// A script the pre-flight on the simulator refused (see
    /// [`preflight`]).
    #[error("ERR locklab: the script was not sent to Redis: {0}")]
    ScriptRefused(String),
    /// A script ran on the simulator, and Redis refused its writes.
    #[error(
        "ERR locklab: the script ran on the lab's simulator, but your Redis refused its writes (a transaction is not \
         rolled back: writes before the refused one stay): {0}"
    )]
    WritesRefused(String),
    /// A script ran past the budget and the lab killed it.
    #[error(
        "ERR locklab: the script ran past the lab's budget of {budget_ms} ms and was killed so the server could \
         serve everyone again; Redis answered: {reply}"
    )]
    ScriptKilled { budget_ms: u64, reply: String },
    /// The session has as many clients as it may.
    #[error("ERR locklab: a lab session has at most {0} clients (A, B, …); use one of them")]
    TooManyClients(usize),
    /// The command is not one the lab teaches, or it is dangerous.
    #[error("ERR locklab: '{name}' is not allowed in a lab session ({why})")]
    NotAllowed { name: String, why: &'static str },
    /// An argument the lab's table bounds (a count, an offset) past its
    /// bound.
    #[error("ERR locklab: '{name}' is refused: {what} is {got}, the lab's bound is {max}")]
    OverBound {
        name: String,
        what: &'static str,
        got: u64,
        max: u64,
    },
    /// A command that would take the session past one of its quotas.
    #[error("ERR locklab: '{name}' is refused: {what} would be {got}, the session's quota is {quota}{hint}")]
    OverQuota {
        name: String,
        what: &'static str,
        got: u64,
        quota: u64,
        hint: &'static str,
    },
    /// A size limit.
    #[error("ERR locklab: {what} is {got} bytes or items, the limit is {limit}")]
    TooLarge {
        what: &'static str,
        got: usize,
        limit: usize,
    },
    /// The token bucket stayed empty for longer than `max_wait`.
    #[error("ERR locklab: rate limit of {0} commands per second exceeded, slow down")]
    RateLimited(f64),
    /// The line could not be split into arguments (unbalanced quotes).
    #[error("ERR locklab: Invalid argument(s)")]
    BadLine,
    /// An empty line.
    #[error("ERR locklab: empty command")]
    Empty,
    /// There is no node with this index in the session.
    #[error("ERR locklab: no node {0} in this session")]
    NoNode(u32),
    /// Too many live sessions.
    #[error("ERR locklab: too many lab sessions ({0}), try again later")]
    TooManySessions(usize),
    /// A client name that is empty or too long.
    #[error("ERR locklab: a client name must be 1 to 32 characters")]
    BadClient,
    /// The node could not be reached, or stopped answering.
    #[error("ERR locklab: node {node} ({addr}) is unreachable: {source}. The session reconnects on the next command.")]
    Unreachable {
        node: String,
        addr: String,
        #[source]
        source: RealError,
    },
    /// The session's ACL user could not be set up on a node.
    #[error("ERR locklab: cannot set up the session's ACL user on {node}: {text}")]
    Setup { node: String, text: String },
    /// A lesson slows a link to a node the lab cannot put a proxy in front
    /// of (a Unix socket, a TLS URL whose certificate names the host).
    #[error("ERR locklab: the link to {node} ({addr}) cannot be slowed: only a redis:// TCP address can have the lab's delaying proxy in front of it")]
    NoProxy { node: String, addr: String },
}

impl SessionError {
    /// The error as the console shows it: a Redis error reply.
    pub fn to_reply(&self) -> Reply {
        Reply::Error(self.to_string())
    }
}

/// How a session keeps its keys apart from everything else on the servers
/// (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confinement {
    /// Shared servers: keys under `lab:<id>:`, an ACL user on that prefix.
    Prefix,
    /// A managed cluster started for this session's owner alone: keys as
    /// typed (so their hash slots are the lesson's), an ACL user on `~*`
    /// without `@dangerous`, and commands routed by slot.
    OwnCluster,
}

/// Counts live sessions and hands out new ones within [`Limits`].
/// Cloning shares the count.
#[derive(Clone, Debug)]
pub struct SessionPool {
    live: Arc<AtomicUsize>,
    limits: Limits,
    janitor: Janitor,
}

impl Default for SessionPool {
    fn default() -> Self {
        SessionPool::new(Limits::default())
    }
}

impl SessionPool {
    pub fn new(limits: Limits) -> Self {
        SessionPool {
            live: Arc::new(AtomicUsize::new(0)),
            limits,
            janitor: Janitor::default(),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// How many sessions are open now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// How many ended sessions still wait for their cleanup (their server
    /// was busy or down when they ended; retried every few seconds).
    pub fn pending_cleanups(&self) -> usize {
        self.janitor.pending()
    }

    /// Open a session on `nodes`, each key under the session's prefix: make
    /// its ACL user on each reachable node. A node that is down now is not
    /// an error — it is set up when the first command reaches it.
    pub fn open(&self, nodes: Vec<NodeTarget>) -> Result<Session, SessionError> {
        self.open_with(nodes, Confinement::Prefix, false)
    }

    /// Open a session on `topology`'s nodes, confined as that topology
    /// needs: a managed cluster is the session's own
    /// ([`Confinement::OwnCluster`]), everything else gets the prefix.
    pub fn open_on(&self, topology: &Topology) -> Result<Session, SessionError> {
        let confinement = match topology.kind() {
            Some(TopologyKind::Cluster3) => Confinement::OwnCluster,
            _ => Confinement::Prefix,
        };
        self.open_with(topology.targets(), confinement, topology.kind().is_some())
    }

    /// Open a session on `nodes`, confined as `confinement` says, on
    /// servers the lab started (`managed`) or someone's own: that decides
    /// how its scripts run ([`Scripts::on`]).
    pub fn open_with(
        &self,
        nodes: Vec<NodeTarget>,
        confinement: Confinement,
        managed: bool,
    ) -> Result<Session, SessionError> {
        let max = self.limits.max_sessions;
        let taken = self
            .live
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1));
        if taken.is_err() {
            return Err(SessionError::TooManySessions(max));
        }
        let slot = Slot(self.live.clone());
        let id = random_hex(12);
        let password = random_hex(32);
        let names = Names {
            clients: Vec::new(),
            nodes: nodes.iter().map(|n| n.name.clone()).collect(),
        };
        let scripts = Scripts::on(managed, &self.limits);
        let mut session = Session {
            sandbox: Sandbox::new(&id, confinement, self.limits.clone()),
            quota: quota::Quota::default(),
            console_notes: Vec::new(),
            preflight: Preflight::new(self.limits.max_tracked_keys, self.limits.max_log_bytes, scripts),
            scripts,
            multi: HashMap::new(),
            killers: HashMap::new(),
            janitor: self.janitor.clone(),
            slots: Vec::new(),
            user: format!("lab-{id}"),
            id,
            password,
            nodes: nodes
                .into_iter()
                .map(|target| NodeSlot {
                    target,
                    admin: None,
                    user_ready: false,
                    reader: None,
                })
                .collect(),
            conns: HashMap::new(),
            links: HashMap::new(),
            delays: HashMap::new(),
            clients: BTreeMap::new(),
            names,
            bucket: Bucket::new(self.limits.burst),
            started: Instant::now(),
            step: 0,
            req: 0,
            events: Vec::new(),
            _slot: slot,
        };
        for i in 0..session.nodes.len() {
            match session.ensure_user(i) {
                Ok(()) => {}
                // Down now: retried on first use.
                Err(SessionError::Unreachable { .. }) => {}
                Err(other) => return Err(other),
            }
        }
        Ok(session)
    }
}

/// Gives a pool slot back when the session drops.
#[derive(Debug)]
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Debug)]
struct NodeSlot {
    target: NodeTarget,
    /// The administrative connection, kept to re-create the ACL user.
    admin: Option<RealConnection>,
    /// Has the ACL user been made since the admin connection opened?
    user_ready: bool,
    /// The async lane's administrative connection ([`fast`]): peeks that
    /// cannot ride on a client's link, the pre-flight's snapshot, `SCAN`,
    /// and the kill of a runaway script. Opened (and the ACL user made
    /// through it) on first use.
    reader: Option<Link>,
}

/// A token bucket: `tokens` refill at `rate` per second up to `burst`.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn new(burst: f64) -> Self {
        Bucket {
            tokens: burst,
            last: Instant::now(),
        }
    }

    /// Take a token: `Some(None)` now, `Some(Some(wait))` once the caller
    /// has waited `wait` (at most `max_wait`; the token is spent already),
    /// `None` when it would have to wait longer.
    fn take(&mut self, rate: f64, burst: f64, max_wait: Duration) -> Option<Option<Duration>> {
        if rate.is_infinite() {
            return Some(None);
        }
        let now = Instant::now();
        self.tokens = (self.tokens + now.saturating_duration_since(self.last).as_secs_f64() * rate).min(burst);
        self.last = self.last.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Some(None);
        }
        let wait = Duration::from_secs_f64((1.0 - self.tokens) / rate.max(f64::MIN_POSITIVE));
        if wait > max_wait {
            return None;
        }
        // The token will be there after `wait`: spend it now.
        self.last = now + wait;
        self.tokens = 0.0;
        Some(Some(wait))
    }
}

/// One lab session: clients A, B, … each with their own connection per
/// node (so `MULTI`/`WATCH` state is per client, as in Redis), all under
/// the session's prefix and ACL user.
#[derive(Debug)]
pub struct Session {
    id: String,
    /// The prefix, the namespace, the limits: what an argv may be and how
    /// it is rewritten, and how a reply is shown back ([`sandbox`]).
    sandbox: Sandbox,
    /// The simulator every script runs on: before Redis runs it, or
    /// instead ([`Scripts::Simulated`]).
    preflight: Preflight,
    /// What the session's keys may hold and the scripts it had the server
    /// keep, charged before each command is sent.
    quota: quota::Quota,
    /// Notes for the console under the next reply (a reply cut, a lock
    /// no longer watched).
    console_notes: Vec<String>,
    scripts: Scripts,
    /// Per (client, node) link in `MULTI`: the queued commands, as typed
    /// and as sent, checked whole at `EXEC`.
    multi: HashMap<(u32, u32), Vec<(Argv, Argv)>>,
    /// Per node, the admin connection script watchdogs use.
    killers: HashMap<usize, Killer>,
    janitor: Janitor,
    /// The cluster's slot ranges and the node serving each, from `CLUSTER
    /// SLOTS`, loaded on first use and dropped when a `MOVED` says it is
    /// stale. Empty unless [`Confinement::OwnCluster`].
    slots: Vec<(u16, u16, u32)>,
    user: String,
    password: String,
    nodes: Vec<NodeSlot>,
    /// (client index, node index) → connection authenticated as the user.
    conns: HashMap<(u32, u32), RealConnection>,
    /// The same for the async lane ([`fast`]). A link lives in one of the
    /// two maps at a time: the lane that opens one drops the other's, so a
    /// client's `MULTI` or `WATCH` is never split over two sockets.
    links: HashMap<(u32, u32), Link>,
    /// (client index, node index) → the proxy that client's link to that
    /// node goes through, once a lesson slowed it ([`delay`]).
    delays: HashMap<(u32, u32), crate::real::faults::proxy::LinkProxy>,
    clients: BTreeMap<String, u32>,
    names: Names,
    bucket: Bucket,
    started: Instant,
    step: u64,
    req: u64,
    events: Vec<Event>,
    _slot: Slot,
}

impl Session {
    /// The session id (hex), as in the prefix and the ACL user name.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `lab:<id>:`, prepended to every key (empty on the session's own
    /// cluster).
    pub fn prefix(&self) -> &str {
        &self.sandbox.prefix
    }

    /// `lab-<id>`, the session's ACL user.
    pub fn acl_user(&self) -> &str {
        &self.user
    }

    /// The names the trace's actor indexes refer to.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// The events recorded since the last call, in order.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// Record something that happened to the world (a fault injected on a
    /// managed node), in the world's lane.
    pub fn note_world(&mut self, text: impl Into<String>) {
        let at_ms = self.now_ms();
        self.push(at_ms, Actor::World, EventKind::Note { text: text.into() });
    }

    /// Wall milliseconds since the session started: the clock its events
    /// are stamped with.
    pub fn elapsed_ms(&self) -> u64 {
        self.now_ms()
    }

    /// Register `client` (so a lesson's actors get the trace indexes in
    /// the lesson's order) and return its index.
    pub fn client(&mut self, client: &str) -> Result<u32, SessionError> {
        self.client_index(client)
    }

    /// Record an event the session itself cannot see (a lock key changing,
    /// a belief, a write to the resource), at `at_ms` on the session clock
    /// or now. A lesson runner builds the rest of the simulator's trace
    /// with this.
    pub fn record(&mut self, at_ms: Option<u64>, actor: Actor, kind: EventKind) {
        let at_ms = at_ms.unwrap_or_else(|| self.now_ms());
        self.push(at_ms, actor, kind);
    }

    /// Look at a key of this session on node `n` without going through the
    /// session user (no rate limit, no trace): its value (`GET`, or the
    /// type's name for a non-string) and `PTTL`. `None` when the key does
    /// not exist. A lesson runner calls this after every step to turn what
    /// the server now holds into lock events.
    pub fn peek(&mut self, node: u32, key: &str) -> Result<Option<(String, i64)>, SessionError> {
        Ok(self.peek_many(node, &[key.to_owned()])?.pop().flatten())
    }

    /// [`peek`](Session::peek) for several keys in one round trip (one
    /// write of [`peek_commands`](Session::peek_commands)), whatever their
    /// number: a watcher looks at every lock key after a command, and one
    /// round trip per key made free play cost quadratically many as locks
    /// piled up.
    pub fn peek_many(&mut self, node: u32, keys: &[String]) -> Result<Vec<Peeked>, SessionError> {
        let n = node as usize;
        if n >= self.nodes.len() {
            return Err(SessionError::NoNode(node));
        }
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.ensure_user(n)?;
        let commands = self.peek_commands(keys);
        let result = self.nodes[n]
            .admin
            .as_mut()
            .ok_or(RealError::EmptyCommand)
            .and_then(|a| a.pipeline(&commands));
        let replies = result.map_err(|source| {
            self.nodes[n].admin = None;
            self.nodes[n].user_ready = false;
            self.unreachable(n, source)
        })?;
        self.parse_peek(n, keys, replies)
    }

    /// The commands that peek at `keys` (as typed; prefixed here), to go
    /// in one write: for each key `MGET` (a one-key `MGET`, which reads a
    /// non-string as nil where `GET` would fail), `PTTL` and `TYPE`.
    ///
    /// Plain reads rather than a script: Redis runs the commands of one
    /// write back to back (`processInputBuffer` goes through what one read
    /// brought, 16 KB, before it serves another client), so a key's three
    /// answers agree as a script's would (past 16 KB, hundreds of keys, a
    /// key may change between two of its reads; the next look sees it
    /// whole), and they cost Redis about what three `GET`s do. The Lua
    /// script this replaced cost a command's worth more per look
    /// (measured with one client: 9.5 µs of redis-server's CPU per look
    /// against 1.5, and 15 µs against 4 on the round trip), and every
    /// watched command carries a look.
    fn peek_commands(&self, keys: &[String]) -> Vec<Argv> {
        let mut out = Vec::with_capacity(keys.len() * PEEK_PER_KEY);
        for k in keys {
            let key = format!("{}{k}", self.sandbox.prefix).into_bytes();
            for name in [&b"MGET"[..], b"PTTL", b"TYPE"] {
                out.push(vec![name.to_vec(), key.clone()]);
            }
        }
        out
    }

    /// What a peek's `replies` (one per [`peek_commands`](Session::peek_commands)
    /// command, in order) say of each of `keys`. A key that expired
    /// between its reads (`PTTL` -2, or its value gone) is absent. An
    /// error reply (`BUSY`, `LOADING`) makes the look unreadable.
    fn parse_peek(&self, n: usize, keys: &[String], replies: Vec<Reply>) -> Result<Vec<Peeked>, SessionError> {
        let refused = |text: String| SessionError::Setup {
            node: self.nodes[n].target.name.clone(),
            text,
        };
        if replies.len() != keys.len() * PEEK_PER_KEY {
            return Err(refused(format!(
                "{} replies to a look at {} keys",
                replies.len(),
                keys.len()
            )));
        }
        if let Some(Reply::Error(text)) = replies.iter().find(|r| r.is_error()) {
            return Err(refused(text.clone()));
        }
        Ok(replies
            .chunks(PEEK_PER_KEY)
            .map(|read| match read {
                [_, Reply::Integer(-2), _] => None,
                [Reply::Array(value), Reply::Integer(pttl), kind] => match (value.as_slice(), kind) {
                    ([Reply::Bulk(v)], _) => Some((String::from_utf8_lossy(v).into_owned(), *pttl)),
                    (_, Reply::Status(t)) if t != "string" && t != "none" => Some((format!("({t})"), *pttl)),
                    _ => None,
                },
                _ => None,
            })
            .collect())
    }

    /// Open `client`'s connection to node `node` now rather than on its
    /// first command, so a timed run does not count connecting and `AUTH`
    /// as lesson time.
    pub fn connect(&mut self, client: &str, node: u32) -> Result<(), SessionError> {
        let c = self.client_index(client)?;
        let n = node as usize;
        if n >= self.nodes.len() {
            return Err(SessionError::NoNode(node));
        }
        match self.conn(c, n) {
            Ok(_) => Ok(()),
            Err(source) => Err(self.unreachable(n, source)),
        }
    }

    /// Drop every connection to node `node`: its process was killed or
    /// restarted, so the sockets are dead and (after a restart without
    /// persistence) the ACL user is gone. The next command reconnects and
    /// re-creates the user instead of failing once on a dead socket.
    pub fn forget_node(&mut self, node: u32) {
        self.conns.retain(|&(_, n), _| n != node);
        self.links.retain(|&(_, n), _| n != node);
        self.killers.remove(&(node as usize));
        if let Some(slot) = self.nodes.get_mut(node as usize) {
            slot.admin = None;
            slot.reader = None;
            slot.user_ready = false;
        }
    }

    /// Run one redis-cli line as `client` on node `node`.
    pub fn run_line(&mut self, client: &str, node: u32, line: &str) -> Result<Reply, SessionError> {
        if line.len() > self.sandbox.limits.max_line {
            let e = SessionError::TooLarge {
                what: "the line",
                got: line.len(),
                limit: self.sandbox.limits.max_line,
            };
            self.note(client, &e);
            return Err(e);
        }
        let argv = match cli::parse(line) {
            Ok(a) if a.is_empty() => return Err(SessionError::Empty),
            Ok(a) => a,
            Err(_) => {
                self.note(client, &SessionError::BadLine);
                return Err(SessionError::BadLine);
            }
        };
        self.run(client, node, &argv)
    }

    /// Run one argv as `client` on node `node`: check it, rewrite its keys,
    /// send it, and record the trace. A server error reply is `Ok` (it is
    /// Redis's answer); `Err` is the session refusing or failing.
    ///
    /// On the session's own cluster, a command with keys goes to the node
    /// that serves their slot whatever `node` says (a note records the
    /// routing), and a `MOVED` or `ASK` reply is followed, as `redis-cli -c`
    /// follows it: the redirect is in the trace, the reply is the final one.
    pub fn run(&mut self, client: &str, node: u32, argv: &[Vec<u8>]) -> Result<Reply, SessionError> {
        self.run_routed(client, node, argv).map(|(_, reply)| reply)
    }

    /// [`run`](Session::run), and the node whose reply it is: on the
    /// session's own cluster, after routing by slot and following any
    /// redirect, that is where the command ran, so it is where a lock
    /// watcher must look.
    pub fn run_routed(&mut self, client: &str, node: u32, argv: &[Vec<u8>]) -> Result<(u32, Reply), SessionError> {
        let c = self.client_index(client)?;
        let routed = self.route(node, argv);
        if routed != node {
            let text = format!(
                "routed to {} by the slot of its first key, as a cluster client routes it",
                self.nodes[routed as usize].target.name
            );
            let at_ms = self.now_ms();
            self.push(at_ms, Actor::Client(c), EventKind::Note { text });
        }
        let mut at = routed;
        let mut result = self.run_inner(c, routed, argv);
        for _ in 0..MAX_REDIRECTS {
            let Ok(Reply::Error(e)) = &result else { break };
            let Some((to, ask, text)) = self.redirect(e) else { break };
            let at_ms = self.now_ms();
            self.push(at_ms, Actor::Client(c), EventKind::Note { text });
            if ask {
                // ASK: this one command, on the importing node, after ASKING.
                let asking = self
                    .conn(c, to as usize)
                    .and_then(|conn| conn.execute(&[b"ASKING".to_vec()]));
                if let Err(source) = asking {
                    return Err(self.unreachable(to as usize, source));
                }
            } else {
                // MOVED: the slot has a new owner for good; re-read them all.
                self.slots.clear();
            }
            at = to;
            result = self.run_inner(c, to, argv);
        }
        if let Err(e) = &result {
            if !matches!(e, SessionError::Unreachable { .. }) {
                let at_ms = self.now_ms();
                self.push(at_ms, Actor::Client(c), EventKind::Note { text: e.to_string() });
            }
        }
        result.map(|reply| (at, reply))
    }

    /// The node `argv` goes to: `node`, except that on the session's own
    /// cluster a command with keys goes to the node serving its first
    /// key's slot (Redis answers `CROSSSLOT` there if the others differ).
    /// A lesson runner asks first, to know which client–node link the
    /// command takes.
    pub fn route(&mut self, node: u32, argv: &[Vec<u8>]) -> u32 {
        if self.sandbox.confinement != Confinement::OwnCluster {
            return node;
        }
        let Some(cmd) = argv.first().and_then(|name| table::find(name, Profile::V8_4)) else {
            return node;
        };
        let Some(&first) = cmd.key_indexes(argv).first() else {
            return node;
        };
        let slot = key_slot(&argv[first]);
        if self.slots.is_empty() {
            self.load_slots();
        }
        self.slots
            .iter()
            .find(|&&(lo, hi, _)| (lo..=hi).contains(&slot))
            .map_or(node, |&(_, _, n)| n)
    }

    /// Read the slot map with `CLUSTER SLOTS` from the first node that
    /// answers. Best effort: without a map, commands go where they are
    /// sent and a `MOVED` brings them to the right node.
    fn load_slots(&mut self) {
        for n in 0..self.nodes.len() {
            if self.ensure_user(n).is_err() {
                continue;
            }
            let Some(admin) = self.nodes[n].admin.as_mut() else {
                continue;
            };
            let Ok(Reply::Array(ranges)) = admin.execute(&[b"CLUSTER".to_vec(), b"SLOTS".to_vec()]) else {
                continue;
            };
            let mut slots = Vec::new();
            for range in &ranges {
                // [start, end, [ip, port, id], replicas…]
                let Reply::Array(parts) = range else { continue };
                let (Some(Reply::Integer(lo)), Some(Reply::Integer(hi)), Some(Reply::Array(master))) =
                    (parts.first(), parts.get(1), parts.get(2))
                else {
                    continue;
                };
                let (Some(Reply::Bulk(ip)), Some(Reply::Integer(port))) = (master.first(), master.get(1)) else {
                    continue;
                };
                let addr = format!("{}:{port}", String::from_utf8_lossy(ip));
                if let (Some(node), Ok(lo), Ok(hi)) = (self.node_at(&addr), u16::try_from(*lo), u16::try_from(*hi)) {
                    slots.push((lo, hi, node));
                }
            }
            self.slots = slots;
            return;
        }
    }

    /// The node whose address is `host:port`.
    fn node_at(&self, addr: &str) -> Option<u32> {
        self.nodes
            .iter()
            .position(|n| display_addr(&n.target.url) == addr)
            .map(|i| i as u32)
    }

    /// For a `MOVED <slot> <host:port>` or `ASK …` error on the session's
    /// own cluster: the node to follow to, whether it is an `ASK`, and the
    /// line `redis-cli -c` prints for it.
    fn redirect(&self, error: &str) -> Option<(u32, bool, String)> {
        if self.sandbox.confinement != Confinement::OwnCluster {
            return None;
        }
        let mut words = error.split(' ');
        let ask = match words.next()? {
            "MOVED" => false,
            "ASK" => true,
            _ => return None,
        };
        let slot = words.next()?;
        let addr = words.next()?;
        let to = self.node_at(addr)?;
        Some((to, ask, format!("-> Redirected to slot [{slot}] located at {addr}")))
    }

    /// The blocking lane: one command, checked, judged, sent and booked
    /// by the stages in [`phases`], on blocking connections.
    fn run_inner(&mut self, c: u32, node: u32, argv: &[Vec<u8>]) -> Result<Reply, SessionError> {
        let n = node as usize;
        let prep = match self.prepare(c, node, argv)? {
            Before::Answer(reply) => return Ok(reply),
            Before::Send(p) => p,
        };
        if let Some(reply) = self.preflight_blocking(c, n, &prep)? {
            return Ok(reply);
        }
        if let Some(wait) = self.take_token()? {
            // Backpressure: the token will be there after `wait`.
            std::thread::sleep(wait);
        }
        if prep.simulate {
            let sent_at = self.now_ms();
            let reply = self.simulate_blocking(c, n, argv, &prep)?;
            return self.finish_simulated((c, node), argv, &prep, (sent_at, reply));
        }
        let begun = self.begin(c, node, argv);
        let watchdog = self.watchdog(n, &prep)?;
        let reply = if prep.scan {
            // The session's SCAN: the ACL user may not SCAN (its results
            // are not confined by key patterns), so the admin connection
            // runs it, confined by MATCH to the session's prefix.
            self.admin_execute(n, &prep.rewritten)
        } else {
            let queued = self.queued_for_exec(&prep);
            self.conn(c, n).and_then(|conn| {
                let first = conn.execute(&prep.rewritten)?;
                conn.read_rest(&prep.rewritten, &queued, first)
            })
        };
        let killed = watchdog.is_some_and(Watchdog::done);
        let loaded = match self.loaded_library(argv, &reply) {
            Some(lib) => self.check_loaded_blocking(n, &lib),
            None => Ok(()),
        };
        let outcome = Outcome {
            reply,
            killed,
            loaded,
            dropped: Default::default(),
        };
        self.finish((c, node), argv, &prep, begun, outcome)
    }

    /// `argv` on node `n`'s admin connection (made, with the ACL user, if
    /// need be).
    fn admin_execute(&mut self, n: usize, argv: &[Vec<u8>]) -> Result<Reply, RealError> {
        self.ensure_user(n)
            .map_err(|e| match e {
                SessionError::Unreachable { source, .. } => source,
                other => RealError::Unsupported(other.to_string()),
            })
            .and_then(|()| self.nodes[n].admin.as_mut().ok_or(RealError::EmptyCommand))
            .and_then(|admin| admin.execute(argv))
    }

    /// The pre-flight of a command that runs Lua, on blocking connections:
    /// `Some(reply)` when the simulator's answer is the reply; `Err` when
    /// the script is refused (a refused `EXEC` discards its transaction).
    fn preflight_blocking(&mut self, c: u32, n: usize, prep: &Prepared) -> Result<Option<Reply>, SessionError> {
        let Some((batch, _)) = prep.checked.as_ref().filter(|_| prep.preflight) else {
            return Ok(None);
        };
        let verdict = match (self.verdict_unread(prep), self.snapshot_request()) {
            (Some(verdict), _) => verdict,
            (None, Err(why)) => Verdict::Refuse(why),
            (None, Ok(None)) => self.judge(&[], None, batch),
            (None, Ok(Some((keys, argv)))) => {
                self.ensure_user(n)?;
                let read = self.nodes[n]
                    .admin
                    .as_mut()
                    .ok_or(RealError::EmptyCommand)
                    .and_then(|a| a.execute(&argv));
                match read {
                    Ok(reply) => self.judge(&keys, Some(&reply), batch),
                    Err(source) => {
                        self.nodes[n].admin = None;
                        self.nodes[n].user_ready = false;
                        return Err(self.unreachable(n, source));
                    }
                }
            }
        };
        match verdict {
            Verdict::Send => Ok(None),
            Verdict::Answer(reply) => Ok(Some(reply)),
            Verdict::Refuse(why) => {
                if prep.is_exec {
                    // The transaction is over either way: discard it.
                    self.multi.remove(&prep.link);
                    let _ = self.conn(c, n).and_then(|conn| conn.execute(&[b"DISCARD".to_vec()]));
                }
                Err(SessionError::ScriptRefused(why))
            }
        }
    }

    /// [`Session::loaded_library`]'s check on the blocking admin
    /// connection.
    fn check_loaded_blocking(&mut self, n: usize, lib: &[u8]) -> Result<(), SessionError> {
        let Some(admin) = self.nodes[n].admin.as_mut() else {
            return Err(SessionError::NoNode(n as u32));
        };
        let list = admin.execute(&phases::function_list(lib));
        match self.judge_loaded(lib, list.as_ref().ok()) {
            Loaded::Fine => Ok(()),
            Loaded::Delete => {
                if let Some(admin) = self.nodes[n].admin.as_mut() {
                    let _ = admin.execute(&phases::function_delete(lib));
                }
                Err(phases::library_refused())
            }
            Loaded::Refuse => Err(phases::library_refused()),
        }
    }

    /// A watchdog for a checked script about to go out on node `n` (none
    /// for anything else): it kills the script if it outruns the budget.
    fn watchdog(&mut self, n: usize, prep: &Prepared) -> Result<Option<Watchdog>, SessionError> {
        let Some((_, sent)) = &prep.checked else {
            return Ok(None);
        };
        let url = self.nodes[n].target.url.clone();
        let killer = self.killer(n).map_err(|source| self.unreachable(n, source))?;
        Ok(Some(Watchdog::start(
            killer,
            url,
            sent.clone(),
            self.sandbox.limits.script_budget,
        )))
    }

    /// Node `n`'s connection for script watchdogs, opened now if needed,
    /// and seen to answer `PING`: the server runs no script right before
    /// the session's goes out, which is what lets the watchdog take a
    /// running `EVAL` for the session's own.
    fn killer(&mut self, n: usize) -> Result<Killer, RealError> {
        let ping = [b"PING".to_vec()];
        if let Some(k) = self.killers.get(&n) {
            let mut conn = k.lock().unwrap_or_else(|e| e.into_inner());
            if matches!(conn.execute(&ping), Ok(Reply::Status(_))) {
                return Ok(k.clone());
            }
            *conn = watchdog::open_killer(&self.nodes[n].target.url)?;
            drop(conn);
            return Ok(k.clone());
        }
        let mut conn = watchdog::open_killer(&self.nodes[n].target.url)?;
        conn.execute(&ping)?;
        let k: Killer = std::sync::Arc::new(std::sync::Mutex::new(conn));
        self.killers.insert(n, k.clone());
        Ok(k)
    }

    /// Bookkeeping after Redis answered `argv` (sent as `sent`): the
    /// transaction queue of the link, the simulator's scripts and
    /// libraries, the originals of the session's libraries.
    fn after_reply(&mut self, prep: &Prepared, argv: &[Vec<u8>], reply: &Reply) {
        let (link, sent) = (prep.link, prep.rewritten.as_slice());
        let name = argv[0].to_ascii_lowercase();
        match name.as_slice() {
            b"multi" if *reply == Reply::ok() => {
                self.multi.insert(link, Vec::new());
            }
            b"exec" | b"discard" => {
                self.multi.remove(&link);
            }
            _ => {
                if let Some(q) = self.multi.get_mut(&link) {
                    if matches!(reply, Reply::Status(s) if s == "QUEUED") {
                        q.push((argv.to_vec(), sent.to_vec()));
                    }
                }
            }
        }
        if !self.multi.contains_key(&link) {
            self.preflight.mirror(argv, reply, prep.checked.is_some());
        }
        let is = |i: usize, w: &str| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
        if is(0, "function") && is(1, "load") && !matches!(reply, Reply::Error(_)) {
            if let Ok(h) = locklab_core::server::script::meta::library_header(&argv[argv.len() - 1]) {
                self.sandbox.originals.insert(h.name, argv[argv.len() - 1].clone());
            }
        }
    }

    fn unreachable(&self, n: usize, source: RealError) -> SessionError {
        let t = &self.nodes[n].target;
        SessionError::Unreachable {
            node: t.name.clone(),
            addr: display_addr(&t.url),
            source,
        }
    }

    /// The connection of client `c` to node `n`, opened (and authenticated
    /// as the session's user) on first use.
    fn conn(&mut self, c: u32, n: usize) -> Result<&mut RealConnection, RealError> {
        let key = (c, n as u32);
        if !self.conns.contains_key(&key) {
            let conn = self.opener(c, n)?.open()?;
            self.links.remove(&key);
            self.conns.insert(key, conn);
        }
        self.conns.get_mut(&key).ok_or(RealError::EmptyCommand)
    }

    /// What opening client `c`'s connection to node `n` takes, for whoever
    /// opens it: the session's ACL user made on the node first (through
    /// the admin connection, never a slowed link), then the address the
    /// client reaches the node at. A concurrent request opens its own on
    /// its worker ([`flight`]), so a handshake over a slow link never
    /// blocks the runner.
    pub(super) fn opener(&mut self, c: u32, n: usize) -> Result<Opener, RealError> {
        if let Err(e) = self.ensure_user(n) {
            return Err(match e {
                SessionError::Unreachable { source, .. } => source,
                other => RealError::Unsupported(other.to_string()),
            });
        }
        Ok(Opener {
            url: self.client_url(c, n),
            reply_timeout: self.sandbox.limits.reply_timeout,
            user: self.user.clone(),
            password: self.password.clone(),
        })
    }

    /// Make (or re-make) the ACL user on node `n` through its admin
    /// connection. `ACL SETUSER` is idempotent, and after a restart without
    /// persistence the user is gone, so this runs whenever the admin
    /// connection is new.
    fn ensure_user(&mut self, n: usize) -> Result<(), SessionError> {
        if self.nodes[n].user_ready && self.nodes[n].admin.is_some() {
            return Ok(());
        }
        let url = self.nodes[n].target.url.clone();
        let mut admin = RealConnection::open(&url).map_err(|source| self.unreachable(n, source))?;
        admin
            .set_read_timeout(Some(self.sandbox.limits.reply_timeout))
            .map_err(|source| self.unreachable(n, source))?;
        let argv = setuser(acl_rules(&self.user, &self.password, &self.sandbox.prefix));
        match admin.execute(&argv) {
            Ok(Reply::Error(text)) => {
                return Err(SessionError::Setup {
                    node: self.nodes[n].target.name.clone(),
                    text,
                })
            }
            Ok(_) => {}
            Err(source) => return Err(self.unreachable(n, source)),
        }
        if let Err(source) = admin.execute(&setuser(acl_rules_later(&self.user))) {
            return Err(self.unreachable(n, source));
        }
        self.nodes[n].admin = Some(admin);
        self.nodes[n].user_ready = true;
        Ok(())
    }

    fn client_index(&mut self, client: &str) -> Result<u32, SessionError> {
        if client.is_empty() || client.chars().count() > 32 {
            return Err(SessionError::BadClient);
        }
        if let Some(&i) = self.clients.get(client) {
            return Ok(i);
        }
        if self.clients.len() >= self.sandbox.limits.max_clients {
            return Err(SessionError::TooManyClients(self.sandbox.limits.max_clients));
        }
        let i = self.names.clients.len() as u32;
        self.names.clients.push(client.to_owned());
        self.clients.insert(client.to_owned(), i);
        Ok(i)
    }

    /// A note shown under the console's next reply, and in client `c`'s
    /// lane of the timeline.
    pub fn console_note(&mut self, c: u32, text: String) {
        let at_ms = self.now_ms();
        self.push(at_ms, Actor::Client(c), EventKind::Note { text: text.clone() });
        self.console_notes.push(text);
    }

    /// A note for the console under `client`'s next reply (and in its
    /// lane of the timeline).
    pub fn note_console(&mut self, client: &str, text: String) {
        if let Ok(c) = self.client_index(client) {
            self.console_note(c, text);
        }
    }

    /// The notes for the console since the last call.
    pub fn take_console_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.console_notes)
    }

    /// The session's limits.
    pub fn limits(&self) -> &Limits {
        &self.sandbox.limits
    }

    /// The bytes the session's keys may hold, by its quota's account.
    pub fn quota_bytes(&self) -> u64 {
        self.quota.total()
    }

    fn note(&mut self, client: &str, e: &SessionError) {
        if let Ok(c) = self.client_index(client) {
            let at_ms = self.now_ms();
            self.push(at_ms, Actor::Client(c), EventKind::Note { text: e.to_string() });
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn push(&mut self, at_ms: u64, actor: Actor, kind: EventKind) {
        self.events.push(Event {
            step: self.step,
            at_ms,
            actor,
            kind,
        });
        self.step += 1;
    }
}

impl Drop for Session {
    /// Delete the ACL user on every node (this also closes the user's
    /// connections), the session's keys and its function libraries. A node
    /// that is busy (a script the lab could not kill) or down now is left
    /// to the pool's janitor, which tries again every few seconds.
    fn drop(&mut self) {
        self.conns.clear();
        self.links.clear();
        let cleanup = Cleanup {
            nodes: self.nodes.iter().map(|n| n.target.clone()).collect(),
            user: self.user.clone(),
            prefix: self.sandbox.prefix.clone(),
            ns: self.sandbox.ns.clone(),
            own_cluster: self.sandbox.confinement == Confinement::OwnCluster,
        };
        let admins: Vec<Option<RealConnection>> = self.nodes.iter_mut().map(|n| n.admin.take()).collect();
        let left = cleanup.run(admins);
        if !left.nodes.is_empty() {
            self.janitor.hand_over(left);
        }
    }
}

/// How many `MOVED`/`ASK` redirects one command may follow (`redis-cli -c`
/// follows without a bound; a loop between two confused nodes must not
/// hang a session).
const MAX_REDIRECTS: usize = 5;

/// The session user's ACL rules, in `ACL SETUSER` order. `reset` first so
/// re-applying is exact, whatever the user had before.
///
/// Generated from the lab's command table ([`lab::acl_commands`]):
/// `-@all`, then exactly the (command, subcommand) pairs the table allows,
/// so a script's `redis.call` meets the same list as a typed line — no
/// `SCRIPT DEBUG`, `MEMORY`, `OBJECT FREQ`, `CONFIG`, … anywhere. `SCAN`
/// is not in it: key patterns confine what a command *names*, not what
/// `SCAN` *returns*, so the lab runs a session's `SCAN` itself on its
/// administrative connection, confined to the prefix. A session on its own
/// cluster also gets `ASKING`, which it sends when it follows an `ASK`.
/// The commands of profile 8.4 (`DELEX`) go in a second call
/// ([`acl_rules_later`]), which a 7.0 server refuses harmlessly.
pub fn acl_rules(user: &str, password: &str, prefix: &str) -> Vec<String> {
    let mut rules = vec![
        user.to_owned(),
        "reset".to_owned(),
        "on".to_owned(),
        format!(">{password}"),
        format!("~{prefix}*"),
        "resetchannels".to_owned(),
        "-@all".to_owned(),
    ];
    rules.extend(lab::acl_commands(false));
    if prefix.is_empty() {
        rules.push("+asking".to_owned());
    }
    rules
}

/// The rules for the table's commands of profile 8.4, added to `user` by
/// a second `ACL SETUSER` whose error (an older server does not know
/// them) is ignored.
pub fn acl_rules_later(user: &str) -> Vec<String> {
    std::iter::once(user.to_owned())
        .chain(lab::acl_commands(true))
        .collect()
}

/// `ACL SETUSER` with `rules`.
fn setuser(rules: Vec<String>) -> Argv {
    let mut argv: Argv = vec![b"ACL".to_vec(), b"SETUSER".to_vec()];
    argv.extend(rules.into_iter().map(String::into_bytes));
    argv
}

/// One command's arguments.
type Argv = Vec<Vec<u8>>;

/// What a peek saw of one key: its value (or `(type)`) and `PTTL`; `None`
/// when it does not exist.
pub type Peeked = Option<(String, i64)>;

/// The function names in a `FUNCTION LIST` reply.
fn function_names(list: Option<&Reply>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let Some(Reply::Array(libs)) = list else { return out };
    for lib in libs {
        let Reply::Array(pairs) = lib else { continue };
        for pair in pairs.chunks(2) {
            if let [Reply::Bulk(k), Reply::Array(fs)] = pair {
                if k == b"functions" {
                    for f in fs {
                        let Reply::Array(fp) = f else { continue };
                        for p in fp.chunks(2) {
                            if let [Reply::Bulk(k), Reply::Bulk(v)] = p {
                                if k == b"name" {
                                    out.push(v.clone());
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The commands [`Session::peek_commands`] sends for each key.
const PEEK_PER_KEY: usize = 3;

/// How to open a client's connection to a node as the session's user: its
/// address and credentials, to carry to the thread that opens it.
pub(super) struct Opener {
    url: String,
    reply_timeout: Duration,
    user: String,
    password: String,
}

impl Opener {
    /// Connect and authenticate (`AUTH user password`).
    pub(super) fn open(&self) -> Result<RealConnection, RealError> {
        let mut conn = RealConnection::open(&self.url)?;
        conn.set_read_timeout(Some(self.reply_timeout))?;
        let auth = [
            b"AUTH".to_vec(),
            self.user.clone().into_bytes(),
            self.password.clone().into_bytes(),
        ];
        match conn.execute(&auth)? {
            Reply::Error(text) => Err(RealError::Unsupported(format!(
                "AUTH as the session user failed: {text}"
            ))),
            _ => Ok(conn),
        }
    }
}

/// Never the password (a flight is `Debug`, and debug output ends up in
/// logs).
impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opener")
            .field("url", &display_addr(&self.url))
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_addr_hides_credentials() {
        assert_eq!(display_addr("redis://u:p@127.0.0.1:6379/0"), "127.0.0.1:6379");
        assert_eq!(display_addr("redis://127.0.0.1:7000/"), "127.0.0.1:7000");
        // A password with '@' or '/' in it (redis-rs takes the last '@'
        // before the path as the end of the credentials).
        assert_eq!(display_addr("redis://u:p@ss@10.0.0.1:6380"), "10.0.0.1:6380");
        assert_eq!(
            crate::real::conn::public_url("redis://default:s3cret@h:1/0?protocol=resp3"),
            "redis://h:1"
        );
    }
}
