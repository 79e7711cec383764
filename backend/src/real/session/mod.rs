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
//! Sizes and rates are bounded by [`SessionLimits`]: a line, an argv, a script, a
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
use std::time::{Duration, Instant};

use locklab_core::actor::{Actor, Names};
use locklab_core::reply::Reply;
use locklab_core::trace::{Event, EventKind};
use thiserror::Error;

/// The nodes a session is opened on (their home is [`crate::real::conn`]).
pub use crate::real::conn::NodeTarget;
use crate::real::conn::{display_addr, RealConnection, RealError};
use crate::real::stages::{Book, Stage, Stages};
use sandbox::{Rewritten, Sandbox};

mod acl;
mod blocking;
mod cluster;
mod delay;
pub mod effects;
mod fast;
mod flight;
pub mod functions;
mod janitor;
mod limits;
pub mod link;
mod peek;
mod phases;
mod pool;
pub mod preflight;
pub mod quota;
pub mod sandbox;
mod watchdog;

use acl::setuser;
pub use acl::{acl_rules, acl_rules_later};
pub use flight::{Flight, TakeOff};
use janitor::{Cleanup, Janitor};
use limits::Bucket;
pub use limits::{Scripts, SessionLimits};
use link::Link;
pub use peek::Peeked;
use phases::Prepared;
pub use pool::SessionPool;
use pool::Slot;
use preflight::Preflight;
use watchdog::Killer;

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
    /// Where its commands' time went ([`crate::real::stages`]); added to
    /// the process's total when the session is dropped, before its slot.
    stages: Book,
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

    /// Where this session's commands spent their time so far.
    pub fn stages(&self) -> Stages {
        self.stages.0
    }

    /// Add the time since `since` to `stage` of this session's commands.
    pub fn stage(&mut self, stage: Stage, since: Instant) {
        self.stages.0.add(stage, since);
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
    pub fn limits(&self) -> &SessionLimits {
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

/// One command's arguments.
type Argv = Vec<Vec<u8>>;

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
