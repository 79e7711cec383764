//! The world: nodes, clients, links and clocks on one virtual timeline.
//!
//! A [`World`] is a discrete-event simulation. There is one queue of things
//! that will happen — a request arriving at a node, a reply arriving at a
//! client, a timer firing, a key's deadline passing on some node's clock, a
//! replication batch reaching a replica, a fault — ordered by world time and,
//! for equal times, by the order they were scheduled. [`World::step`] takes
//! the next one, applies it, and appends what it caused to the trace. Nothing
//! else can happen in between, so every run is a pure function of the
//! scenario and its seed: no threads, no wall clock, no I/O, and the same
//! answer on native and wasm32.
//!
//! ## Who knows what
//!
//! The interesting part of a lock is the gap between what each party
//! believes, so the world keeps the three views apart:
//!
//! * **nodes** know their keyspace (a real [`Node`] each, expiring keys by
//!   its *own* [`Clock`]);
//! * **clients** know what their program decided ([`Action::Hold`]: "I hold
//!   the lock"), measured by *their* clocks;
//! * **the world** knows the truth neither can see: after every change it
//!   peeks at each lock key on each node, remembers which client's command
//!   put the value there (a *shadow* of the lock, so ownership is right even
//!   when every client writes the same fixed value), and numbers holders in
//!   the order their acquisitions happened on the server. The invariants
//!   ([`crate::invariants`]) are checked against that.
//!
//! ## Replication
//!
//! After a master runs a command, the world drains the batches the node
//! would propagate and ships each to every replica over a replication link
//! with a lag. The lag is the master's output buffer: if the master crashes
//! first, those batches are gone, and a promoted replica starts with
//! whatever it had received — the failover lesson in one sentence. `WAIT`
//! on a master is answered by the world from real acknowledgements (a
//! replica acknowledges a batch when it applies it).
//!
//! ## Stepping
//!
//! One queue item can cause several events (a reply arrives, the program
//! reacts, a new request goes out). [`World::step`] hands them out one at a
//! time; [`World::trace`] is what has been handed out. The world's *state*
//! may be up to one instant ahead of the last event stepped to — the rest of
//! that instant's events — which is invisible on a timeline, and replay is
//! exact regardless: [`replay`]`(scenario, n)` always yields the same first
//! `n` events.

pub mod clock;
pub mod fault;
pub mod link;
pub mod scenario;
pub mod topology;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::client::{Action, Argv, Ctx, Input, Machine, Program, ProgramError, Target};
use crate::invariants::{InvariantConfig, Monitor, Violation};
use crate::observe::{Cause, LockObserver, Observed, Scope, Seen};
use crate::reply::Reply;
use crate::resource::Resource;
use crate::rng::Rng;
use crate::server::db::Value;
use crate::server::{ConnId, Node, NodeEvent, Role, EPOCH_MS};
use crate::trace::{Actor, Event, EventKind, LossReason, Names, Trace};

pub use clock::{Clock, ClockConfig};
pub use fault::{At, ClockOf, Endpoint, Fault, ScheduledFault};
pub use link::{LinkConfig, ReplicationConfig};
pub use scenario::{replay, ClientSpec, Scenario};
pub use topology::{LinkOverride, NodeClock, Persistence, Topology, WorldConfig, MAX_NODES};

/// A client, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClientId(pub u32);

/// A request a client sent, by number (unique in a world).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ReqId(pub u64);

/// Why the world refused a call or a scenario.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum WorldError {
    #[error("unknown client {0:?}")]
    UnknownClient(String),
    #[error("client {0:?} already exists")]
    DuplicateClient(String),
    #[error("a client needs a name")]
    EmptyName,
    #[error("no node {0} (this world has {1})")]
    UnknownNode(u32, u32),
    #[error("topology: {0}")]
    Topology(String),
    #[error("client {client}: {source}")]
    Program {
        client: String,
        #[source]
        source: ProgramError,
    },
    #[error("{0}")]
    Invalid(String),
}

/// What is waiting in the queue.
#[derive(Clone, Debug)]
enum Item {
    Start {
        client: u32,
        machine: Box<Machine>,
        exits: bool,
    },
    Timer {
        client: u32,
        tag: u32,
        gen: u64,
    },
    Timeout {
        client: u32,
        req: u64,
        gen: u64,
    },
    AtNode {
        client: u32,
        node: u32,
        req: u64,
        inc: u32,
        commands: Vec<Argv>,
    },
    AtClient {
        client: u32,
        node: u32,
        req: u64,
        replies: Vec<Reply>,
    },
    AtResource {
        client: u32,
        token: Option<i64>,
        value: String,
    },
    AtReplica {
        from: u32,
        to: u32,
        inc: u32,
        offset: u64,
        batch: Vec<Argv>,
        origin: Option<u32>,
    },
    Tick {
        node: u32,
    },
    WaitTimeout {
        id: u64,
    },
    Resume {
        client: u32,
        gen: u64,
    },
    NodeUp {
        node: u32,
        keep: bool,
        gen: u64,
    },
    Fault(Fault),
}

impl Item {
    /// The client whose process handles this item, if it is one of those
    /// (they wait while the client is paused and vanish if it crashed).
    fn client(&self) -> Option<u32> {
        match self {
            Item::Start { client, .. }
            | Item::Timer { client, .. }
            | Item::Timeout { client, .. }
            | Item::AtClient { client, .. } => Some(*client),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct ReplLink {
    cut: bool,
    lane: link::Lane,
    /// Batches produced while the link was cut, sent when it heals (a
    /// partial resync from the backlog).
    backlog: Vec<(u64, Vec<Argv>, Option<u32>)>,
}

struct NodeSlot {
    node: Node,
    clock: Clock,
    down: bool,
    /// Bumped on every crash: what was in flight from or to the old
    /// process is lost.
    inc: u32,
    /// Bumped on crash and restart, so a superseded restart is ignored.
    up_gen: u64,
    master_of: Option<u32>,
    /// Batches this node has produced as a master.
    offset: u64,
    /// The last batch applied from its master.
    applied: u64,
    tick_at: Option<u64>,
    internal: Option<ConnId>,
}

#[derive(Clone, Debug)]
struct Pending {
    tag: u32,
    node: u32,
    manual: bool,
    timeout: Option<(u64, u64)>,
}

struct ClientSlot {
    clock: Clock,
    rng: Rng,
    machine: Option<Machine>,
    exits: bool,
    crashed: bool,
    done: bool,
    paused: bool,
    pause_gen: u64,
    inbox: Vec<Item>,
    gen: u64,
    /// tag → (generation, due on the client clock)
    timers: BTreeMap<u32, (u64, u64)>,
    pending: BTreeMap<u64, Pending>,
    /// One per node, then the resource.
    links: Vec<link::Link>,
    conns: Vec<Option<ConnId>>,
}

#[derive(Clone, Debug)]
struct Waiter {
    id: u64,
    node: u32,
    client: u32,
    req: u64,
    target: u64,
    need: u64,
    argv: Argv,
}

/// A lock key as one node has it right now (for views and tests).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockView {
    pub node: u32,
    pub key: String,
    pub value: String,
    pub owner: Option<u32>,
    pub ttl_ms: Option<u64>,
    pub since_ms: u64,
}

/// A client's process state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientState {
    pub crashed: bool,
    pub paused: bool,
    pub done: bool,
    pub running: bool,
}

/// A node's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    pub down: bool,
    pub role: Role,
    pub master_of: Option<u32>,
    pub offset: u64,
    pub applied: u64,
    /// The node's own clock (Unix ms).
    pub clock_ms: u64,
}

/// A simulated deployment: Redis nodes, client processes, the resource.
pub struct World {
    cfg: WorldConfig,
    seed: u64,
    now: u64,
    seq: u64,
    queue: BTreeMap<(u64, u64), Item>,
    nodes: Vec<NodeSlot>,
    clients: Vec<ClientSlot>,
    master: u32,
    resource: Resource,
    net: Rng,
    events: Vec<Event>,
    cursor: usize,
    step_faults: Vec<(u64, Fault)>,
    monitor: Monitor,
    /// The lock keys' shadows on every node, and who holds each lock.
    locks: LockObserver,
    next_req: u64,
    next_wait: u64,
    waiters: Vec<Waiter>,
    repl: BTreeMap<(u32, u32), ReplLink>,
    names: Names,
    halted: bool,
    first_violation: Option<u64>,
    /// Something the deadlock check depends on changed (a lock shadow, a
    /// client's liveness) since it last ran.
    deadlock_dirty: bool,
    /// Violations still going on (an overlap whose holders still both
    /// believe, a deadlock whose key is still held): their span's end
    /// follows the clock until the condition stops, so the timeline can
    /// paint how long two clients were inside, not the instant it began.
    ongoing: Vec<Ongoing>,
}

/// A violation whose condition still holds.
#[derive(Clone, Debug)]
struct Ongoing {
    what: OngoingKind,
    /// Index in the monitor's violations.
    violation: usize,
    /// Index of its `Violation` event in the trace.
    event: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum OngoingKind {
    /// Two or more clients believe they hold this key.
    Overlap(String),
    /// This node still has this key, held by the same owner since then.
    Deadlock { node: u32, key: String, since: u64 },
}

fn text(commands: &[Argv]) -> Vec<Vec<String>> {
    commands
        .iter()
        .map(|a| a.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect())
        .collect()
}

fn value_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Str(s) => s.clone(),
        Value::Hash(fields) => {
            let mut out = Vec::new();
            for (i, (f, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(f);
                out.push(b'=');
                out.extend_from_slice(x);
            }
            out
        }
        // The lock shadows only read strings and hashes; other types show
        // as the commands that would rebuild them.
        other => other
            .restore_argvs(b"")
            .concat()
            .iter()
            .skip(2)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect::<Vec<_>>()
            .join(",")
            .into_bytes(),
    }
}

fn parse_u64(b: &[u8]) -> Option<u64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

impl World {
    /// An empty world (no clients yet) with its nodes at [`EPOCH_MS`] on
    /// their own clocks.
    pub fn new(cfg: WorldConfig, seed: u64) -> Result<World, WorldError> {
        let n = cfg.topology.node_count();
        if n == 0 || n > MAX_NODES {
            return Err(WorldError::Topology(format!("{n} nodes: a world has 1 to {MAX_NODES}")));
        }
        for nc in &cfg.node_clocks {
            if nc.node >= n {
                return Err(WorldError::UnknownNode(nc.node, n));
            }
        }
        for o in &cfg.links {
            if let Some(node) = o.node {
                if node >= n {
                    return Err(WorldError::UnknownNode(node, n));
                }
            }
        }
        let mut names = Names::default();
        let mut nodes = Vec::with_capacity(n as usize);
        for i in 0..n {
            let clock_cfg = cfg
                .node_clocks
                .iter()
                .rev()
                .find(|c| c.node == i)
                .map(|c| c.clock)
                .unwrap_or_default();
            let clock = Clock::new(EPOCH_MS, clock_cfg);
            let mut node = Node::new(cfg.profile);
            // The world wants every expiry (for the trace) and, where a
            // node may ever have replicas, the replication stream.
            node.record_events(true);
            node.record_propagation(matches!(cfg.topology, Topology::Replicated { .. }));
            node.jump_clock(clock.local(0));
            let master_of = cfg.topology.initial_master_of(i);
            if master_of.is_some() {
                node.set_role(Role::Replica);
            }
            names.nodes.push(cfg.topology.node_name(i));
            nodes.push(NodeSlot {
                node,
                clock,
                down: false,
                inc: 0,
                up_gen: 0,
                master_of,
                offset: 0,
                applied: 0,
                tick_at: None,
                internal: None,
            });
        }
        let mut monitor = Monitor::new(cfg.invariants.clone());
        for k in cfg.invariants.lock_keys.clone() {
            monitor.watch_key(&k);
        }
        let mut locks = LockObserver::new(Scope::Declared, nodes.len(), cfg.topology.is_redlock());
        for k in &monitor.config().lock_keys {
            locks.watch(k);
        }
        Ok(World {
            resource: Resource::new(cfg.fencing),
            cfg,
            seed,
            now: 0,
            seq: 0,
            queue: BTreeMap::new(),
            nodes,
            clients: Vec::new(),
            master: 0,
            net: Rng::derive(seed, 0),
            events: Vec::new(),
            cursor: 0,
            step_faults: Vec::new(),
            monitor,
            locks,
            next_req: 1,
            next_wait: 1,
            waiters: Vec::new(),
            repl: BTreeMap::new(),
            names,
            halted: false,
            first_violation: None,
            deadlock_dirty: false,
            ongoing: Vec::new(),
        })
    }

    // ----- building -------------------------------------------------------

    /// Add a client with a perfect clock.
    pub fn add_client(&mut self, name: &str) -> Result<ClientId, WorldError> {
        self.add_client_with(name, ClockConfig::default())
    }

    /// Add a client whose clock has an offset and drift.
    pub fn add_client_with(&mut self, name: &str, clock: ClockConfig) -> Result<ClientId, WorldError> {
        if name.is_empty() {
            return Err(WorldError::EmptyName);
        }
        if self.names.clients.iter().any(|c| c == name) {
            return Err(WorldError::DuplicateClient(name.to_owned()));
        }
        let idx = self.clients.len() as u32;
        let n = self.nodes.len() as u32;
        let links = (0..=n)
            .map(|j| {
                let default = if j == n { self.cfg.resource_link } else { self.cfg.link };
                let wanted = if j == n { None } else { Some(j) };
                let cfg = self
                    .cfg
                    .links
                    .iter()
                    .rev()
                    .find(|o| o.client == name && o.node == wanted)
                    .map_or(default, |o| o.config);
                link::Link::new(cfg)
            })
            .collect();
        self.clients.push(ClientSlot {
            clock: Clock::new(EPOCH_MS, clock),
            rng: Rng::derive(self.seed, 1_000 + u64::from(idx)),
            machine: None,
            exits: false,
            crashed: false,
            done: false,
            paused: false,
            pause_gen: 0,
            inbox: Vec::new(),
            gen: 0,
            timers: BTreeMap::new(),
            pending: BTreeMap::new(),
            links,
            conns: vec![None; n as usize],
        });
        self.names.clients.push(name.to_owned());
        self.monitor.add_client();
        Ok(ClientId(idx))
    }

    /// The client called `name`.
    pub fn client_id(&self, name: &str) -> Option<ClientId> {
        self.names
            .clients
            .iter()
            .position(|c| c == name)
            .map(|i| ClientId(i as u32))
    }

    fn client_index(&self, name: &str) -> Result<u32, WorldError> {
        self.client_id(name)
            .map(|c| c.0)
            .ok_or_else(|| WorldError::UnknownClient(name.to_owned()))
    }

    fn check_client(&self, c: ClientId) -> Result<u32, WorldError> {
        if (c.0 as usize) < self.clients.len() {
            Ok(c.0)
        } else {
            Err(WorldError::UnknownClient(format!("#{}", c.0)))
        }
    }

    fn check_node(&self, n: u32) -> Result<u32, WorldError> {
        if (n as usize) < self.nodes.len() {
            Ok(n)
        } else {
            Err(WorldError::UnknownNode(n, self.nodes.len() as u32))
        }
    }

    /// Start a program on a client now (replacing any it was running).
    pub fn run_program(&mut self, client: ClientId, program: Program) -> Result<(), WorldError> {
        self.run_program_at(client, program, self.now)
    }

    /// Start a program on a client at world time `at_ms`.
    pub fn run_program_at(&mut self, client: ClientId, program: Program, at_ms: u64) -> Result<(), WorldError> {
        let c = self.check_client(client)?;
        let machine = Machine::new(&program, self.nodes.len() as u32).map_err(|source| WorldError::Program {
            client: self.names.client(c).to_owned(),
            source,
        })?;
        for k in program.lock_keys() {
            self.watch_key(&k);
        }
        let exits = program.exits_when_done();
        self.push(
            at_ms.max(self.now),
            Item::Start {
                client: c,
                machine: Box::new(machine),
                exits,
            },
        );
        Ok(())
    }

    /// Treat `key` as a lock: track it on every node and check invariants.
    pub fn watch_key(&mut self, key: &str) {
        if !self.locks.is_watched(key) {
            self.monitor.watch_key(key);
            self.locks.watch(key);
        }
    }

    /// Schedule a fault.
    pub fn schedule(&mut self, at: At, fault: Fault) -> Result<(), WorldError> {
        self.validate_fault(&fault)?;
        match at {
            At::Time(t) => self.push(t.max(self.now), Item::Fault(fault)),
            At::Step(s) => {
                let pos = self.step_faults.partition_point(|(x, _)| *x <= s);
                self.step_faults.insert(pos, (s, fault));
            }
        }
        Ok(())
    }

    fn validate_fault(&self, f: &Fault) -> Result<(), WorldError> {
        let ep = |e: &Endpoint| -> Result<(), WorldError> {
            match e {
                Endpoint::Client(c) => self.client_index(c).map(|_| ()),
                Endpoint::Node(n) => self.check_node(*n).map(|_| ()),
                Endpoint::Resource => Ok(()),
            }
        };
        let link_pair = |a: &Endpoint, b: &Endpoint| -> Result<(), WorldError> {
            ep(a)?;
            ep(b)?;
            match (a, b) {
                (Endpoint::Client(_), Endpoint::Node(_) | Endpoint::Resource)
                | (Endpoint::Node(_) | Endpoint::Resource, Endpoint::Client(_)) => Ok(()),
                (Endpoint::Node(x), Endpoint::Node(y)) if x != y => Ok(()),
                _ => Err(WorldError::Invalid(
                    "a link joins a client and a node (or the resource), or two nodes".into(),
                )),
            }
        };
        match f {
            Fault::PauseClient { client, .. } | Fault::ResumeClient { client } | Fault::CrashClient { client } => {
                self.client_index(client).map(|_| ())
            }
            Fault::CrashNode { node } | Fault::RestartNode { node, .. } | Fault::PromoteReplica { node } => {
                self.check_node(*node).map(|_| ())
            }
            Fault::Failover { node } => node.map_or(Ok(()), |n| self.check_node(n).map(|_| ())),
            Fault::CutLink { a, b } | Fault::HealLink { a, b } => link_pair(a, b),
            Fault::SetLink { a, b, .. } => {
                link_pair(a, b)?;
                if matches!((a, b), (Endpoint::Node(_), Endpoint::Node(_))) {
                    return Err(WorldError::Invalid("set_link is for client links".into()));
                }
                Ok(())
            }
            Fault::JumpClock { of, .. } | Fault::SetDrift { of, .. } => match of {
                ClockOf::Client(c) => self.client_index(c).map(|_| ()),
                ClockOf::Node(n) => self.check_node(*n).map(|_| ()),
            },
        }
    }

    // ----- driving --------------------------------------------------------

    /// Inject a fault now. Its events are visible in [`World::trace`] at
    /// once.
    pub fn inject(&mut self, fault: Fault) -> Result<(), WorldError> {
        self.validate_fault(&fault)?;
        self.apply_fault(fault);
        self.after_item();
        self.cursor = self.events.len();
        Ok(())
    }

    /// Send one command from a client to a node now, outside any program
    /// (a line typed at the client's console). The reply arrives as a
    /// `Received` event; [`World::request`] waits for it.
    pub fn send(&mut self, client: ClientId, node: u32, argv: Argv) -> Result<ReqId, WorldError> {
        let c = self.check_client(client)?;
        let node = self.check_node(node)?;
        if argv.is_empty() {
            return Err(WorldError::Invalid("empty command".into()));
        }
        if self.clients[c as usize].crashed {
            return Err(WorldError::Invalid(format!("{} has crashed", self.names.client(c))));
        }
        let req = self.send_request(c, node, vec![argv], 0, true, None);
        self.cursor = self.events.len();
        Ok(ReqId(req))
    }

    /// [`World::send`] a redis-cli line.
    pub fn send_line(&mut self, client: ClientId, node: u32, line: &str) -> Result<ReqId, WorldError> {
        let argv = crate::cli::parse(line).map_err(|e| WorldError::Invalid(format!("{line:?}: {e}")))?;
        self.send(client, node, argv)
    }

    /// Send a command and run the world until its reply arrives (`None`: it
    /// was lost, or the world stopped first). What a lesson step does.
    pub fn request(&mut self, client: ClientId, node: u32, argv: Argv) -> Result<Option<Reply>, WorldError> {
        let req = self.send(client, node, argv)?.0;
        let mut seen = self.events.len();
        loop {
            let lost = self.events[seen..]
                .iter()
                .any(|e| matches!(e.kind, EventKind::Lost { req: r, .. } if r == req));
            seen = self.events.len();
            if lost {
                self.clients[client.0 as usize].pending.remove(&req);
                self.cursor = self.events.len();
                return Ok(None);
            }
            let pending = self.clients[client.0 as usize].pending.contains_key(&req);
            if !pending {
                let got = self.events.iter().rev().find_map(|e| match &e.kind {
                    EventKind::Received { req: r, replies, .. } if *r == req => Some(replies.first().cloned()),
                    _ => None,
                });
                self.cursor = self.events.len();
                return Ok(got.flatten());
            }
            if !self.process_next() {
                self.cursor = self.events.len();
                return Ok(None);
            }
        }
    }

    /// The next event, processing the queue as far as needed; `None` when
    /// nothing more will happen (or the horizon, event limit or a violation
    /// with `stop_on_violation` stopped the world).
    pub fn step(&mut self) -> Option<&Event> {
        while self.cursor >= self.events.len() {
            if !self.process_next() {
                return None;
            }
        }
        self.cursor += 1;
        self.events.get(self.cursor - 1)
    }

    /// Process exactly one queue item (or one due step fault), making all
    /// the events it caused visible; false when nothing is left. The
    /// explorer uses it to find the distinct points between deliveries
    /// where a fault can land.
    pub fn step_item(&mut self) -> bool {
        let more = self.process_next();
        self.cursor = self.events.len();
        more
    }

    /// Process everything up to world time `t` and move the clock there.
    pub fn advance_to(&mut self, t: u64) {
        loop {
            let fault_due = self
                .step_faults
                .first()
                .is_some_and(|(s, _)| *s <= self.events.len() as u64);
            let item_due = self.queue.first_key_value().is_some_and(|(k, _)| k.0 <= t);
            if !(fault_due || item_due) || !self.process_next() {
                break;
            }
        }
        if !self.halted {
            self.now = self.now.max(t.min(self.cfg.horizon_ms));
            self.extend_ongoing();
        }
        self.cursor = self.events.len();
    }

    /// Stretch the span of every violation still going on to now; drop
    /// those whose condition has stopped (their span ends at the item that
    /// stopped it, which is now: this runs after every item).
    fn extend_ongoing(&mut self) {
        if self.ongoing.is_empty() {
            return;
        }
        let now = self.now;
        let ongoing = std::mem::take(&mut self.ongoing);
        for o in ongoing {
            self.monitor.extend(o.violation, now);
            if let Some(EventKind::Violation { violation }) = self.events.get_mut(o.event).map(|e| &mut e.kind) {
                violation.to_ms = violation.to_ms.max(now);
            }
            let still = match &o.what {
                OngoingKind::Overlap(key) => self.monitor.believers(key).len() >= 2,
                OngoingKind::Deadlock { node, key, since } => {
                    let slot = &self.nodes[*node as usize];
                    !slot.down
                        && self
                            .locks
                            .held(*node, key)
                            .is_some_and(|sh| sh.owner.is_some() && sh.since == *since)
                }
            };
            if still {
                self.ongoing.push(o);
            }
        }
    }

    /// Run until nothing more happens; returns the number of events.
    pub fn run(&mut self) -> usize {
        while self.process_next() {}
        self.cursor = self.events.len();
        self.events.len()
    }

    fn push(&mut self, t: u64, item: Item) {
        self.seq += 1;
        self.queue.insert((t, self.seq), item);
    }

    fn process_next(&mut self) -> bool {
        if self.halted {
            return false;
        }
        if self.events.len() as u64 >= self.cfg.max_events {
            self.halted = true;
            return false;
        }
        if self
            .step_faults
            .first()
            .is_some_and(|(s, _)| *s <= self.events.len() as u64)
        {
            let (_, f) = self.step_faults.remove(0);
            self.apply_fault(f);
            self.after_item();
            return true;
        }
        let Some((&(t, _), _)) = self.queue.first_key_value() else {
            return false;
        };
        if t > self.cfg.horizon_ms {
            return false;
        }
        let Some(((t, _), item)) = self.queue.pop_first() else {
            return false;
        };
        self.now = self.now.max(t);
        self.process(item);
        self.after_item();
        true
    }

    fn emit(&mut self, actor: Actor, kind: EventKind) {
        let step = self.events.len() as u64;
        if matches!(kind, EventKind::Violation { .. }) {
            if self.first_violation.is_none() {
                self.first_violation = Some(step);
            }
            if self.cfg.stop_on_violation {
                self.halted = true;
            }
        }
        self.events.push(Event {
            step,
            at_ms: self.now,
            actor,
            kind,
        });
    }

    fn note(&mut self, actor: Actor, text: impl Into<String>) {
        self.emit(actor, EventKind::Note { text: text.into() });
    }

    fn violate(&mut self, v: Violation) {
        self.monitor.record(v.clone());
        self.emit(Actor::World, EventKind::Violation { violation: v });
    }

    /// Record a violation whose condition lasts: its span grows with the
    /// clock until [`World::extend_ongoing`] sees the condition stop.
    fn violate_ongoing(&mut self, v: Violation, what: OngoingKind) {
        let violation = self.monitor.violations().len();
        let event = self.events.len();
        self.violate(v);
        self.ongoing.push(Ongoing { what, violation, event });
    }

    fn process(&mut self, item: Item) {
        if let Some(c) = item.client() {
            self.client_item(c, item);
            return;
        }
        match item {
            Item::AtNode {
                client,
                node,
                req,
                inc,
                commands,
            } => self.at_node(client, node, req, inc, commands),
            Item::AtResource { client, token, value } => self.at_resource(client, token, value),
            Item::AtReplica {
                from,
                to,
                inc,
                offset,
                batch,
                origin,
            } => self.at_replica(from, to, inc, offset, batch, origin),
            Item::Tick { node } => {
                self.nodes[node as usize].tick_at = None;
                self.sync_node(node);
                self.schedule_tick(node);
            }
            Item::WaitTimeout { id } => {
                if let Some(pos) = self.waiters.iter().position(|w| w.id == id) {
                    let w = self.waiters.remove(pos);
                    let acked = self.acked(w.node, w.target);
                    self.finish_wait(w, acked);
                }
            }
            Item::Resume { client, gen } => {
                if self.clients[client as usize].pause_gen == gen {
                    self.resume(client);
                }
            }
            Item::NodeUp { node, keep, gen } => self.node_up(node, keep, gen),
            Item::Fault(f) => self.apply_fault(f),
            Item::Start { .. } | Item::Timer { .. } | Item::Timeout { .. } | Item::AtClient { .. } => {}
        }
    }

    // ----- clients --------------------------------------------------------

    fn client_item(&mut self, c: u32, item: Item) {
        let ci = c as usize;
        if self.clients[ci].crashed {
            return;
        }
        if self.clients[ci].paused {
            self.clients[ci].inbox.push(item);
            return;
        }
        match item {
            Item::Start { machine, exits, .. } => {
                let slot = &mut self.clients[ci];
                // A new program must not receive the old one's timers or
                // replies: their tags would mean something else to it.
                slot.timers.clear();
                slot.pending.retain(|_, p| p.manual);
                slot.machine = Some(*machine);
                slot.exits = exits;
                slot.done = false;
                self.drive(c, Input::Start);
            }
            Item::Timer { tag, gen, .. } => {
                let slot = &mut self.clients[ci];
                if slot.timers.get(&tag).map(|t| t.0) == Some(gen) {
                    slot.timers.remove(&tag);
                    self.drive(c, Input::Timer { tag });
                }
            }
            Item::Timeout { req, gen, .. } => {
                let slot = &mut self.clients[ci];
                let matches = slot
                    .pending
                    .get(&req)
                    .is_some_and(|p| p.timeout.map(|t| t.0) == Some(gen));
                if matches {
                    if let Some(p) = slot.pending.remove(&req) {
                        self.emit(Actor::Client(c), EventKind::TimedOut { req, node: p.node });
                        if !p.manual {
                            self.drive(c, Input::Failed { tag: p.tag });
                        }
                    }
                }
            }
            Item::AtClient { node, req, replies, .. } => {
                if self.clients[ci].links[node as usize].cut {
                    self.emit(
                        Actor::Client(c),
                        EventKind::Lost {
                            req,
                            client: c,
                            node,
                            reason: LossReason::LinkCut,
                        },
                    );
                    return;
                }
                let Some(p) = self.clients[ci].pending.remove(&req) else {
                    return;
                };
                self.emit(
                    Actor::Client(c),
                    EventKind::Received {
                        req,
                        node,
                        replies: replies.clone(),
                    },
                );
                if !p.manual {
                    self.drive(c, Input::Reply { tag: p.tag, replies });
                }
            }
            _ => {}
        }
    }

    fn drive(&mut self, c: u32, input: Input) {
        let nodes = self.nodes.len() as u32;
        let now = self.now;
        let slot = &mut self.clients[c as usize];
        let Some(mut machine) = slot.machine.take() else {
            return;
        };
        let mut out = Vec::new();
        {
            let local = slot.clock.local(now);
            let name = self.names.clients[c as usize].as_str();
            let mut cx = Ctx::new(local, &mut slot.rng, name, nodes, &mut out);
            machine.handle(&mut cx, input);
        }
        slot.machine = Some(machine);
        for a in out {
            self.apply_action(c, a);
        }
    }

    fn apply_action(&mut self, c: u32, action: Action) {
        let ci = c as usize;
        match action {
            Action::Send {
                tag,
                target,
                commands,
                timeout_ms,
            } => {
                let node = match target {
                    Target::Master => self.master,
                    Target::Node(n) => n,
                };
                if node as usize >= self.nodes.len() {
                    self.note(Actor::Client(c), format!("no node {node}"));
                    return;
                }
                self.send_request(c, node, commands, tag, false, timeout_ms);
            }
            Action::Timer { tag, after_ms } => {
                let slot = &mut self.clients[ci];
                slot.gen += 1;
                let gen = slot.gen;
                let due = slot.clock.local(self.now).saturating_add(after_ms);
                slot.timers.insert(tag, (gen, due));
                let t = slot.clock.when(due, self.now);
                self.push(t, Item::Timer { client: c, tag, gen });
            }
            Action::Cancel { tag } => {
                self.clients[ci].timers.remove(&tag);
            }
            Action::Write { token, value } => {
                self.emit(
                    Actor::Client(c),
                    EventKind::WriteSent {
                        token,
                        value: value.clone(),
                    },
                );
                let r = self.nodes.len();
                let link = &mut self.clients[ci].links[r];
                if link.cut {
                    self.note(Actor::Client(c), "the write is lost: link to the resource is cut");
                    return;
                }
                let t = link.send_time(self.now, &mut self.net);
                self.push(
                    t,
                    Item::AtResource {
                        client: c,
                        token,
                        value,
                    },
                );
            }
            Action::Hold { key } => self.believe(c, &key, true),
            Action::Unhold { key } => self.believe(c, &key, false),
            Action::Note(text) => self.note(Actor::Client(c), text),
            Action::Done => {
                self.deadlock_dirty = true;
                self.clients[ci].done = true;
                self.emit(Actor::Client(c), EventKind::Done);
            }
        }
    }

    fn send_request(
        &mut self,
        c: u32,
        node: u32,
        commands: Vec<Argv>,
        tag: u32,
        manual: bool,
        timeout_ms: Option<u64>,
    ) -> u64 {
        let req = self.next_req;
        self.next_req += 1;
        self.emit(
            Actor::Client(c),
            EventKind::Sent {
                req,
                node,
                commands: text(&commands),
            },
        );
        let ci = c as usize;
        let now = self.now;
        let timeout = timeout_ms.map(|ms| {
            let slot = &mut self.clients[ci];
            slot.gen += 1;
            (slot.gen, slot.clock.local(now).saturating_add(ms))
        });
        if let Some((gen, due)) = timeout {
            let t = self.clients[ci].clock.when(due, now);
            self.push(t, Item::Timeout { client: c, req, gen });
        }
        self.clients[ci].pending.insert(
            req,
            Pending {
                tag,
                node,
                manual,
                timeout,
            },
        );
        let link = &mut self.clients[ci].links[node as usize];
        if link.cut {
            self.emit(
                Actor::Client(c),
                EventKind::Lost {
                    req,
                    client: c,
                    node,
                    reason: LossReason::LinkCut,
                },
            );
            return req;
        }
        let t = link.send_time(now, &mut self.net);
        let inc = self.nodes[node as usize].inc;
        self.push(
            t,
            Item::AtNode {
                client: c,
                node,
                req,
                inc,
                commands,
            },
        );
        req
    }

    fn believe(&mut self, c: u32, key: &str, holds: bool) {
        if self.monitor.believes(key, c) == holds {
            return;
        }
        let change = self.monitor.believe(key, c, holds, self.now);
        self.emit(
            Actor::Client(c),
            EventKind::Belief {
                key: key.to_owned(),
                holds,
            },
        );
        if let Some(ch) = change {
            let begin = ch.begin;
            let clients = ch.clients.clone();
            self.emit(
                Actor::World,
                EventKind::Overlap {
                    key: key.to_owned(),
                    clients: ch.clients,
                    begin,
                    since_ms: ch.since_ms,
                },
            );
            if begin && self.monitor.config().overlap_is_violation {
                let names = &self.names;
                let v = Monitor::overlap_violation(key, &clients, self.now, &|i| names.client(i).to_owned());
                self.violate_ongoing(v, OngoingKind::Overlap(key.to_owned()));
            }
        }
    }

    fn resume(&mut self, c: u32) {
        let ci = c as usize;
        if !self.clients[ci].paused || self.clients[ci].crashed {
            return;
        }
        self.clients[ci].paused = false;
        self.emit(Actor::Client(c), EventKind::Resumed);
        let inbox = std::mem::take(&mut self.clients[ci].inbox);
        for item in inbox {
            self.process(item);
        }
    }

    fn crash_client(&mut self, c: u32) {
        let ci = c as usize;
        if self.clients[ci].crashed {
            return;
        }
        self.deadlock_dirty = true;
        let slot = &mut self.clients[ci];
        slot.crashed = true;
        slot.paused = false;
        slot.inbox.clear();
        slot.machine = None;
        slot.timers.clear();
        slot.pending.clear();
        let conns: Vec<(usize, ConnId)> = slot
            .conns
            .iter_mut()
            .enumerate()
            .filter_map(|(n, c)| c.take().map(|c| (n, c)))
            .collect();
        for (n, conn) in conns {
            if !self.nodes[n].down {
                self.nodes[n].node.disconnect(conn);
            }
        }
        let keys = self.locks.keys().to_vec();
        for k in keys {
            self.believe(c, &k, false);
        }
    }

    fn reschedule_client(&mut self, c: u32) {
        let ci = c as usize;
        let now = self.now;
        let mut items = Vec::new();
        let slot = &mut self.clients[ci];
        let tags: Vec<u32> = slot.timers.keys().copied().collect();
        for tag in tags {
            slot.gen += 1;
            let gen = slot.gen;
            if let Some(t) = slot.timers.get_mut(&tag) {
                t.0 = gen;
                items.push((slot.clock.when(t.1, now), Item::Timer { client: c, tag, gen }));
            }
        }
        let reqs: Vec<u64> = slot.pending.keys().copied().collect();
        for req in reqs {
            slot.gen += 1;
            let gen = slot.gen;
            if let Some(Pending { timeout: Some(t), .. }) = slot.pending.get_mut(&req) {
                t.0 = gen;
                items.push((slot.clock.when(t.1, now), Item::Timeout { client: c, req, gen }));
            }
        }
        for (t, item) in items {
            self.push(t, item);
        }
    }

    fn client_gone(&self, c: u32) -> bool {
        self.clients
            .get(c as usize)
            .is_some_and(|s| s.crashed || (s.done && s.exits))
    }

    // ----- nodes ----------------------------------------------------------

    fn conn(&mut self, c: u32, node: u32) -> ConnId {
        let n = node as usize;
        if let Some(conn) = self.clients[c as usize].conns[n] {
            return conn;
        }
        let conn = self.nodes[n].node.connect();
        self.clients[c as usize].conns[n] = Some(conn);
        conn
    }

    fn at_node(&mut self, c: u32, node: u32, req: u64, inc: u32, commands: Vec<Argv>) {
        let n = node as usize;
        if self.nodes[n].down || self.nodes[n].inc != inc {
            self.emit(
                Actor::Node(node),
                EventKind::Lost {
                    req,
                    client: c,
                    node,
                    reason: LossReason::NodeDown,
                },
            );
            return;
        }
        if self.clients[c as usize].links[n].cut {
            self.emit(
                Actor::Node(node),
                EventKind::Lost {
                    req,
                    client: c,
                    node,
                    reason: LossReason::LinkCut,
                },
            );
            return;
        }
        self.sync_node(node);
        if commands.len() == 1 && self.try_wait(c, node, req, &commands[0]) {
            return;
        }
        let conn = self.conn(c, node);
        let replies: Vec<Reply> = commands.iter().map(|a| self.nodes[n].node.execute(conn, a)).collect();
        self.emit(
            Actor::Node(node),
            EventKind::Executed {
                req,
                client: c,
                commands: text(&commands),
                replies: replies.clone(),
            },
        );
        self.node_effects(node, Cause::Command(c));
        self.reply_to(c, node, req, replies);
    }

    fn reply_to(&mut self, c: u32, node: u32, req: u64, replies: Vec<Reply>) {
        let link = &mut self.clients[c as usize].links[node as usize];
        if link.cut {
            self.emit(
                Actor::Node(node),
                EventKind::Lost {
                    req,
                    client: c,
                    node,
                    reason: LossReason::LinkCut,
                },
            );
            return;
        }
        if self.net.chance_permille(link.config.drop_reply_permille) {
            self.emit(
                Actor::Node(node),
                EventKind::Lost {
                    req,
                    client: c,
                    node,
                    reason: LossReason::Dropped,
                },
            );
            return;
        }
        let t = link.reply_time(self.now, &mut self.net);
        self.push(
            t,
            Item::AtClient {
                client: c,
                node,
                req,
                replies,
            },
        );
    }

    /// Bring a node's clock to the present; expiries happen here.
    fn sync_node(&mut self, node: u32) {
        let s = &mut self.nodes[node as usize];
        if s.down {
            return;
        }
        let local = s.clock.local(self.now);
        if local > s.node.now() {
            s.node.set_time(local);
            self.node_effects(node, Cause::Expiry);
        }
    }

    /// After anything touched a node: report expiries, ship replication,
    /// update the lock shadows and the next expiry tick.
    fn node_effects(&mut self, node: u32, cause: Cause) {
        let n = node as usize;
        let events = self.nodes[n].node.take_events();
        // A replica never expires keys on its own clock; when the node
        // reports one, it is the master's DEL (or a resync) removing a key
        // the replica was hiding, and the Replicated event already says so.
        if self.nodes[n].master_of.is_none() {
            for ev in events {
                let NodeEvent::Expired { key, .. } = ev;
                self.emit(Actor::Node(node), EventKind::Expired { key });
            }
        }
        let batches = self.nodes[n].node.take_propagated();
        if !batches.is_empty() && self.nodes[n].master_of.is_none() {
            let origin = match cause {
                Cause::Command(c) => Some(c),
                Cause::Replication(o) => o,
                _ => None,
            };
            self.ship(node, batches, origin);
        }
        self.observe_locks(node, cause);
        self.schedule_tick(node);
    }

    fn schedule_tick(&mut self, node: u32) {
        let s = &self.nodes[node as usize];
        if s.down {
            return;
        }
        let Some(d) = s.node.next_deadline() else { return };
        // Already past: a replica hiding the key until its master's DEL.
        if d < s.node.now() {
            return;
        }
        let t = s.clock.when(d.saturating_add(1), self.now);
        if s.tick_at.is_some_and(|x| x <= t) {
            return;
        }
        self.nodes[node as usize].tick_at = Some(t);
        self.push(t, Item::Tick { node });
    }

    fn observe_locks(&mut self, node: u32, cause: Cause) {
        let keys = self.locks.keys().to_vec();
        for key in &keys {
            self.observe_key(node, key, cause);
        }
    }

    /// Show the observer what `node` holds for `key` now, and turn what
    /// changed into events, grants and wrong releases.
    fn observe_key(&mut self, node: u32, key: &str, cause: Cause) {
        let n = node as usize;
        let node_now = self.nodes[n].node.now();
        let cur = self.nodes[n].node.peek(0, key.as_bytes()).map(|e| Seen {
            value: value_bytes(&e.value),
            deadline: e.expires_at,
            ttl_ms: e.expires_at.map(|d| d.saturating_sub(node_now)),
        });
        if cur.is_some() || self.locks.held(node, key).is_some() {
            self.deadlock_dirty = true;
        }
        let observed = self.locks.observe(node, key, cur, cause, self.now);
        self.apply_observed(observed);
    }

    /// Carry out what the lock observer saw: lock events, numbered grants,
    /// and a wrong release as a violation.
    fn apply_observed(&mut self, observed: Vec<Observed>) {
        for o in observed {
            match o {
                Observed::Lock {
                    node, key, change, via, ..
                } => self.emit(Actor::Node(node), EventKind::Lock { key, change, via }),
                Observed::Granted { client, key } => {
                    let seq = self.monitor.grant(client, &key);
                    self.emit(Actor::Client(client), EventKind::Granted { key, seq });
                }
                Observed::WrongRelease { node, key, by, held } => {
                    let names = &self.names;
                    let v = self.monitor.wrong_release(
                        node,
                        &key,
                        by,
                        &held,
                        self.now,
                        &|i| names.client(i).to_owned(),
                        &|i| names.node(i).to_owned(),
                    );
                    if let Some(v) = v {
                        self.violate(v);
                    }
                }
            }
        }
    }

    /// Redlock: after a node went down or came back, who holds each lock by
    /// majority now.
    fn recount_majorities(&mut self) {
        for k in self.locks.keys().to_vec() {
            let observed = self.locks.recount_majority(&k);
            self.apply_observed(observed);
        }
    }

    // ----- replication ----------------------------------------------------

    fn ship(&mut self, master: u32, batches: Vec<Vec<Argv>>, origin: Option<u32>) {
        let lag = self.cfg.replication;
        // A follower that is down resyncs in full when it comes back.
        let followers: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&r| self.nodes[r as usize].master_of == Some(master) && !self.nodes[r as usize].down)
            .collect();
        for batch in batches {
            let m = &mut self.nodes[master as usize];
            m.offset += 1;
            let offset = m.offset;
            let inc = m.inc;
            for &r in &followers {
                let link = self.repl.entry((master, r)).or_default();
                if link.cut {
                    link.backlog.push((offset, batch.clone(), origin));
                    continue;
                }
                let t = link.lane.transit(self.now, lag.lag_ms, lag.jitter_ms, &mut self.net);
                self.push(
                    t,
                    Item::AtReplica {
                        from: master,
                        to: r,
                        inc,
                        offset,
                        batch: batch.clone(),
                        origin,
                    },
                );
            }
        }
    }

    fn at_replica(&mut self, from: u32, to: u32, inc: u32, offset: u64, batch: Vec<Argv>, origin: Option<u32>) {
        let ok = !self.nodes[to as usize].down
            && self.nodes[to as usize].master_of == Some(from)
            && self.nodes[from as usize].inc == inc;
        if !ok {
            self.emit(Actor::Node(to), EventKind::ReplicationLost { from, offset });
            return;
        }
        self.sync_node(to);
        let r = &mut self.nodes[to as usize];
        r.node.apply_replicated(&batch);
        let _ = r.node.take_propagated();
        r.applied = offset;
        self.emit(
            Actor::Node(to),
            EventKind::Replicated {
                from,
                offset,
                commands: text(&batch),
            },
        );
        self.node_effects(to, Cause::Replication(origin));
        self.check_waiters(from);
    }

    /// Replace `dst`'s data with `src`'s (a replica's full resync).
    fn full_sync(&mut self, src: u32, dst: u32) {
        let (s, d) = (src as usize, dst as usize);
        if self.nodes[s].down || self.nodes[d].down {
            return;
        }
        self.sync_node(src);
        self.sync_node(dst);
        let conn = match self.nodes[s].internal {
            Some(c) => c,
            None => {
                let c = self.nodes[s].node.connect();
                self.nodes[s].internal = Some(c);
                c
            }
        };
        let keys = match self.nodes[s].node.execute(conn, &[b"KEYS".to_vec(), b"*".to_vec()]) {
            Reply::Array(items) => items
                .into_iter()
                .filter_map(|r| match r {
                    Reply::Bulk(b) => Some(b),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        self.node_effects(src, Cause::Expiry);
        let mut batch: Vec<Argv> = Vec::new();
        for k in keys {
            let Some(e) = self.nodes[s].node.peek(0, &k) else {
                continue;
            };
            match &e.value {
                Value::Str(v) => {
                    let mut a = vec![b"SET".to_vec(), k.clone(), v.clone()];
                    if let Some(at) = e.expires_at {
                        a.push(b"PXAT".to_vec());
                        a.push(at.to_string().into_bytes());
                    }
                    batch.push(a);
                }
                other => {
                    batch.extend(other.restore_argvs(&k));
                    if let Some(at) = e.expires_at {
                        batch.push(vec![b"PEXPIREAT".to_vec(), k.clone(), at.to_string().into_bytes()]);
                    }
                }
            }
        }
        let offset = self.nodes[s].offset;
        let r = &mut self.nodes[d];
        r.node.wipe();
        if !batch.is_empty() {
            r.node.apply_replicated(&batch);
        }
        let _ = r.node.take_propagated();
        r.applied = offset;
        self.node_effects(dst, Cause::Sync(src));
    }

    fn flush_backlog(&mut self, master: u32, replica: u32) {
        let lag = self.cfg.replication;
        let inc = self.nodes[master as usize].inc;
        let Some(link) = self.repl.get_mut(&(master, replica)) else {
            return;
        };
        let backlog = std::mem::take(&mut link.backlog);
        let mut items = Vec::new();
        for (offset, batch, origin) in backlog {
            let t = link.lane.transit(self.now, lag.lag_ms, lag.jitter_ms, &mut self.net);
            items.push((
                t,
                Item::AtReplica {
                    from: master,
                    to: replica,
                    inc,
                    offset,
                    batch,
                    origin,
                },
            ));
        }
        for (t, item) in items {
            self.push(t, item);
        }
    }

    fn acked(&self, master: u32, target: u64) -> u64 {
        self.nodes
            .iter()
            .filter(|r| r.master_of == Some(master) && !r.down && r.applied >= target)
            .count() as u64
    }

    /// `WAIT numreplicas timeout` on a master, answered from real
    /// acknowledgements. Returns false when the node should answer itself
    /// (a replica, inside MULTI, or arguments it will reject).
    fn try_wait(&mut self, c: u32, node: u32, req: u64, argv: &Argv) -> bool {
        if argv.len() != 3 || !argv[0].eq_ignore_ascii_case(b"WAIT") {
            return false;
        }
        if self.nodes[node as usize].master_of.is_some() {
            return false;
        }
        let conn = self.conn(c, node);
        if self.nodes[node as usize].node.in_multi(conn) {
            return false;
        }
        let (Some(need), Some(timeout)) = (parse_u64(&argv[1]), parse_u64(&argv[2])) else {
            return false;
        };
        let target = self.nodes[node as usize].offset;
        let id = self.next_wait;
        self.next_wait += 1;
        let w = Waiter {
            id,
            node,
            client: c,
            req,
            target,
            need,
            argv: argv.clone(),
        };
        let acked = self.acked(node, target);
        if need == 0 || acked >= need {
            self.finish_wait(w, acked);
            return true;
        }
        if timeout > 0 {
            self.push(self.now.saturating_add(timeout), Item::WaitTimeout { id });
        }
        self.waiters.push(w);
        true
    }

    fn finish_wait(&mut self, w: Waiter, acked: u64) {
        let replies = vec![Reply::Integer(acked as i64)];
        self.emit(
            Actor::Node(w.node),
            EventKind::Executed {
                req: w.req,
                client: w.client,
                commands: text(&[w.argv]),
                replies: replies.clone(),
            },
        );
        self.reply_to(w.client, w.node, w.req, replies);
    }

    fn check_waiters(&mut self, master: u32) {
        let mut i = 0;
        while i < self.waiters.len() {
            let w = &self.waiters[i];
            if w.node == master {
                let acked = self.acked(master, w.target);
                if acked >= w.need {
                    let w = self.waiters.remove(i);
                    self.finish_wait(w, acked);
                    continue;
                }
            }
            i += 1;
        }
    }

    // ----- faults ---------------------------------------------------------

    fn apply_fault(&mut self, f: Fault) {
        let actor = match &f {
            Fault::PauseClient { client, .. } | Fault::ResumeClient { client } | Fault::CrashClient { client } => {
                self.client_id(client).map_or(Actor::World, |c| Actor::Client(c.0))
            }
            Fault::CrashNode { node } | Fault::RestartNode { node, .. } | Fault::PromoteReplica { node } => {
                Actor::Node(*node)
            }
            _ => Actor::World,
        };
        self.emit(actor, EventKind::Fault { fault: f.clone() });
        match f {
            Fault::PauseClient { client, ms } => {
                let Ok(c) = self.client_index(&client) else { return };
                let slot = &mut self.clients[c as usize];
                if slot.crashed {
                    return;
                }
                slot.paused = true;
                slot.pause_gen += 1;
                let gen = slot.pause_gen;
                if let Some(ms) = ms {
                    self.push(self.now.saturating_add(ms), Item::Resume { client: c, gen });
                }
            }
            Fault::ResumeClient { client } => {
                if let Ok(c) = self.client_index(&client) {
                    self.resume(c);
                }
            }
            Fault::CrashClient { client } => {
                if let Ok(c) = self.client_index(&client) {
                    self.crash_client(c);
                }
            }
            Fault::CrashNode { node } => {
                self.crash_node(node);
                self.nodes[node as usize].up_gen += 1;
            }
            Fault::RestartNode {
                node,
                down_ms,
                keep_data,
            } => {
                let keep = keep_data.unwrap_or(self.cfg.persistence == Persistence::Aof);
                self.crash_node(node);
                let s = &mut self.nodes[node as usize];
                s.up_gen += 1;
                let gen = s.up_gen;
                self.push(self.now.saturating_add(down_ms), Item::NodeUp { node, keep, gen });
            }
            Fault::PromoteReplica { node } => self.promote(node),
            Fault::Failover { node } => {
                let m = self.master;
                let target = node.or_else(|| {
                    let mut best: Option<(u64, u32)> = None;
                    for (i, s) in self.nodes.iter().enumerate() {
                        if s.master_of == Some(m) && !s.down && best.is_none_or(|(a, _)| s.applied > a) {
                            best = Some((s.applied, i as u32));
                        }
                    }
                    best.map(|b| b.1)
                });
                let Some(target) = target else {
                    self.note(Actor::World, "failover: no replica to promote");
                    return;
                };
                self.crash_node(m);
                self.promote(target);
            }
            Fault::CutLink { a, b } => self.set_link(&a, &b, |l| l.cut = true, true),
            Fault::HealLink { a, b } => self.set_link(&a, &b, |l| l.cut = false, false),
            Fault::SetLink { a, b, config } => self.set_link(&a, &b, |l| l.config = config, false),
            Fault::JumpClock { of, delta_ms } => self.change_clock(&of, |c, now| c.jump(now, delta_ms)),
            Fault::SetDrift { of, ppm } => self.change_clock(&of, |c, now| c.set_drift(now, ppm)),
        }
    }

    fn set_link(&mut self, a: &Endpoint, b: &Endpoint, f: impl Fn(&mut link::Link), cut_repl: bool) {
        let n = self.nodes.len();
        let client_side = |e: &Endpoint| match e {
            Endpoint::Client(c) => Some(c.clone()),
            _ => None,
        };
        let other = |e: &Endpoint| match e {
            Endpoint::Node(x) => Some(*x as usize),
            Endpoint::Resource => Some(n),
            Endpoint::Client(_) => None,
        };
        if let (Endpoint::Node(x), Endpoint::Node(y)) = (a, b) {
            let healing = !cut_repl;
            for (p, q) in [(*x, *y), (*y, *x)] {
                self.repl.entry((p, q)).or_default().cut = cut_repl;
                if healing {
                    self.flush_backlog(p, q);
                }
            }
            return;
        }
        let (name, to) = match (client_side(a), client_side(b)) {
            (Some(c), None) => (c, other(b)),
            (None, Some(c)) => (c, other(a)),
            _ => return,
        };
        let (Ok(c), Some(to)) = (self.client_index(&name), to) else {
            return;
        };
        if let Some(l) = self.clients[c as usize].links.get_mut(to) {
            f(l);
        }
    }

    fn change_clock(&mut self, of: &ClockOf, f: impl Fn(&mut Clock, u64)) {
        let now = self.now;
        match of {
            ClockOf::Client(name) => {
                let Ok(c) = self.client_index(name) else { return };
                f(&mut self.clients[c as usize].clock, now);
                self.reschedule_client(c);
            }
            ClockOf::Node(node) => {
                let n = *node as usize;
                f(&mut self.nodes[n].clock, now);
                if self.nodes[n].down {
                    return;
                }
                let local = self.nodes[n].clock.local(now);
                self.nodes[n].node.jump_clock(local);
                self.nodes[n].tick_at = None;
                self.node_effects(*node, Cause::Expiry);
            }
        }
    }

    fn crash_node(&mut self, node: u32) {
        let n = node as usize;
        if self.nodes[n].down {
            return;
        }
        self.deadlock_dirty = true;
        self.locks.set_down(node, true);
        let s = &mut self.nodes[n];
        s.down = true;
        s.inc += 1;
        s.tick_at = None;
        s.internal = None;
        for slot in &mut self.clients {
            if let Some(conn) = slot.conns[n].take() {
                self.nodes[n].node.disconnect(conn);
            }
        }
        self.waiters.retain(|w| w.node != node);
        if self.cfg.topology.is_redlock() {
            self.recount_majorities();
        }
    }

    fn node_up(&mut self, node: u32, keep: bool, gen: u64) {
        let n = node as usize;
        if !self.nodes[n].down || self.nodes[n].up_gen != gen {
            return;
        }
        self.nodes[n].down = false;
        self.locks.set_down(node, false);
        self.deadlock_dirty = true;
        if !keep {
            self.nodes[n].node.wipe();
        }
        self.emit(Actor::Node(node), EventKind::Restarted { kept_data: keep });
        let local = self.nodes[n].clock.local(self.now);
        self.nodes[n].node.jump_clock(local);
        self.node_effects(node, if keep { Cause::Expiry } else { Cause::Restart });
        match self.nodes[n].master_of {
            Some(m) => self.full_sync(m, node),
            None => {
                let followers: Vec<u32> = (0..self.nodes.len() as u32)
                    .filter(|&r| self.nodes[r as usize].master_of == Some(node))
                    .collect();
                for r in followers {
                    self.full_sync(node, r);
                }
            }
        }
        if self.cfg.topology.is_redlock() {
            self.recount_majorities();
        }
    }

    fn promote(&mut self, r: u32) {
        let ri = r as usize;
        let Some(old) = self.nodes[ri].master_of else {
            self.note(Actor::Node(r), "promote: already a master");
            return;
        };
        if self.nodes[ri].down {
            self.note(Actor::Node(r), "promote: the node is down");
            return;
        }
        self.nodes[ri].master_of = None;
        self.nodes[ri].node.set_role(Role::Master);
        self.node_effects(r, Cause::Promotion);
        if !self.cfg.topology.is_redlock() {
            self.master = r;
            self.locks.set_master(r);
            self.deadlock_dirty = true;
        }
        self.waiters.retain(|w| w.node != old);
        let others: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&x| x != r && (x == old || self.nodes[x as usize].master_of == Some(old)))
            .collect();
        for x in others {
            let s = &mut self.nodes[x as usize];
            s.master_of = Some(r);
            s.node.set_role(Role::Replica);
            if !s.down {
                self.full_sync(r, x);
            }
        }
    }

    // ----- the resource and the invariants --------------------------------

    fn at_resource(&mut self, c: u32, token: Option<i64>, value: String) {
        let r = self.nodes.len();
        if self.clients[c as usize].links[r].cut {
            self.note(
                Actor::Resource,
                format!("{}'s write is lost: link cut", self.names.client(c)),
            );
            return;
        }
        let accepted = self.resource.write(c, self.now, token, value.clone());
        self.emit(
            Actor::Resource,
            EventKind::Write {
                client: c,
                token,
                value,
                accepted,
            },
        );
        if accepted {
            let names = &self.names;
            let v = self
                .monitor
                .accepted_write(c, self.now, token, &|i| names.client(i).to_owned());
            if let Some(v) = v {
                self.violate(v);
            }
        }
    }

    fn after_item(&mut self) {
        self.extend_ongoing();
        let max_hold = self.monitor.config().max_hold_ms;
        if self.halted || !(self.deadlock_dirty || max_hold.is_some()) {
            return;
        }
        self.deadlock_dirty = false;
        let (first, last) = if self.cfg.topology.is_redlock() {
            (0, self.nodes.len() as u32)
        } else {
            (self.master, self.master + 1)
        };
        let mut found = Vec::new();
        for node in first..last {
            if self.nodes[node as usize].down {
                continue;
            }
            for (key, sh) in self.locks.held_on(node) {
                let Some(owner) = sh.owner else { continue };
                if sh.deadline.is_none() && self.client_gone(owner) {
                    found.push((node, key.clone(), owner, sh.since, None));
                } else if let Some(max) = max_hold {
                    if self.now.saturating_sub(sh.since) > max && !self.client_gone(owner) {
                        found.push((node, key.clone(), owner, sh.since, Some(max)));
                    }
                }
            }
        }
        for (node, key, owner, since, bound) in found {
            let detail = match bound {
                None => format!(
                    "{key} on {} has no TTL and its owner {} is gone: it can never expire, nobody can acquire it",
                    self.names.node(node),
                    self.names.client(owner)
                ),
                Some(max) => format!(
                    "{} has held {key} on {} for {} ms, beyond the {max} ms bound: nobody else can acquire it",
                    self.names.client(owner),
                    self.names.node(node),
                    self.now - since
                ),
            };
            // A key past its bound is a deadlock from the moment the bound
            // passed, not from when it was taken: the first `max` ms were a
            // legitimate hold.
            let from = bound.map_or(since, |max| since + max);
            if let Some(v) = self.monitor.deadlock(node, &key, owner, since, from, self.now, detail) {
                let what = OngoingKind::Deadlock {
                    node,
                    key: key.clone(),
                    since,
                };
                self.violate_ongoing(v, what);
                if self.halted {
                    return;
                }
            }
        }
    }

    // ----- observing ------------------------------------------------------

    /// World time (ms since the start).
    pub fn now(&self) -> u64 {
        self.now
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn config(&self) -> &WorldConfig {
        &self.cfg
    }

    pub fn names(&self) -> &Names {
        &self.names
    }

    /// The events stepped to so far.
    pub fn trace(&self) -> &[Event] {
        &self.events[..self.cursor]
    }

    /// The stepped-to events with their name tables, for a view.
    pub fn to_trace(&self) -> Trace {
        Trace {
            names: self.names.clone(),
            events: self.trace().to_vec(),
        }
    }

    /// Did the world stop (horizon, event limit, or a violation with
    /// `stop_on_violation`)? A world with an empty queue is merely quiet.
    pub fn is_halted(&self) -> bool {
        self.halted
    }

    /// Nothing left to happen.
    pub fn is_quiet(&self) -> bool {
        self.queue.is_empty() && self.step_faults.is_empty()
    }

    /// Every violation so far.
    pub fn violations(&self) -> &[Violation] {
        self.monitor.violations()
    }

    /// The step of the first `Violation` event.
    pub fn first_violation_step(&self) -> Option<u64> {
        self.first_violation
    }

    pub fn resource(&self) -> &Resource {
        &self.resource
    }

    pub fn monitor(&self) -> &Monitor {
        &self.monitor
    }

    pub fn invariant_config(&self) -> &InvariantConfig {
        self.monitor.config()
    }

    pub fn node_count(&self) -> u32 {
        self.nodes.len() as u32
    }

    pub fn client_count(&self) -> u32 {
        self.clients.len() as u32
    }

    /// A node, read-only (`peek`, `dbsize`, `stats`…). Mutate it only
    /// through the world, or replay breaks.
    /// Make node `i` one node of a Redis Cluster owning some slots (lesson
    /// 31), or standalone again.
    pub fn set_node_cluster(
        &mut self,
        i: u32,
        cfg: Option<crate::server::cluster::ClusterConfig>,
    ) -> Result<(), WorldError> {
        let n = self.check_node(i)?;
        self.nodes[n as usize].node.set_cluster(cfg);
        Ok(())
    }

    pub fn node(&self, i: u32) -> Option<&Node> {
        self.nodes.get(i as usize).map(|s| &s.node)
    }

    pub fn node_state(&self, i: u32) -> Option<NodeState> {
        self.nodes.get(i as usize).map(|s| NodeState {
            down: s.down,
            role: s.node.role(),
            master_of: s.master_of,
            offset: s.offset,
            applied: s.applied,
            clock_ms: s.clock.local(self.now),
        })
    }

    /// The current master (for single and replicated topologies).
    pub fn master(&self) -> u32 {
        self.master
    }

    pub fn client_state(&self, c: ClientId) -> Option<ClientState> {
        self.clients.get(c.0 as usize).map(|s| ClientState {
            crashed: s.crashed,
            paused: s.paused,
            done: s.done,
            running: s.machine.is_some() && !s.done && !s.crashed,
        })
    }

    /// A client's clock now (Unix ms).
    pub fn client_clock(&self, c: ClientId) -> Option<u64> {
        self.clients.get(c.0 as usize).map(|s| s.clock.local(self.now))
    }

    /// Every lock key on every node, as the world tracks it.
    pub fn locks(&self) -> Vec<LockView> {
        let mut out = Vec::new();
        for (i, s) in self.nodes.iter().enumerate() {
            for (key, sh) in self.locks.held_on(i as u32) {
                out.push(LockView {
                    node: i as u32,
                    key: key.clone(),
                    value: String::from_utf8_lossy(&sh.value).into_owned(),
                    owner: sh.owner,
                    ttl_ms: sh.deadline.map(|d| d.saturating_sub(s.node.now())),
                    since_ms: sh.since,
                });
            }
        }
        out
    }

    /// Who owns `key` on node `i`, as far as the world can tell.
    pub fn lock_owner(&self, i: u32, key: &str) -> Option<u32> {
        self.locks.held(i, key)?.owner
    }

    /// The clients that believe they hold `key` now.
    pub fn believers(&self, key: &str) -> Vec<u32> {
        self.monitor.believers(key)
    }
}
