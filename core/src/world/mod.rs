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
//! * **clients** know what their program decided ([`ProgramAction::Hold`]: "I hold
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
//!
//! ## Where things are
//!
//! This file holds the world's state and its constructor; its behaviour is
//! one `impl World` per concern: `setup` (clients, programs, watched keys),
//! `queue` (the queue, stepping, the console's requests), `clients`
//! (programs, requests, beliefs), `nodes` (executing, expiring, crashing,
//! promoting), `replication` (shipping batches, `WAIT`), `locks` (the lock
//! shadows), `fault` (carrying out a [`crate::fault::Fault`]), `monitoring`
//! (the resource and the invariants), `service` (nodes that are etcd or
//! ZooKeeper members instead of Redis) and `views` (read-only accessors).

pub mod clock;
pub mod scenario;
pub mod topology;

mod clients;
mod fault;
mod fingerprint;
mod locks;
mod monitoring;
mod nodes;
mod queue;
mod replication;
mod service;
mod setup;
mod views;

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::actor::Names;
use crate::client::{Argv, Machine, ProgramError};
use crate::fault::Fault;
use crate::invariants::Monitor;
use crate::link;
use crate::observe::{KeyGroup, LockObserver, Scope};
use crate::resource::Resource;
use crate::rng::Rng;
use crate::server::{ConnId, Node, Role, EPOCH_MS};
use crate::service::Service;
use crate::trace::Event;

use monitoring::Ongoing;
use queue::Item;

pub use clock::{Clock, ClockConfig};
pub use scenario::{replay, ClientSpec, Scenario};
pub use topology::{
    CompareLocks, GroupKind, LinkOverride, NodeClock, NodeGroup, Persistence, Topology, WorldConfig, MAX_NODES,
};
pub use views::{ClientState, LockView, NodeState};

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

#[derive(Clone, Debug, Default)]
struct ReplLink {
    cut: bool,
    lane: link::Lane,
    /// Batches produced while the link was cut, sent when it heals (a
    /// partial resync from the backlog).
    backlog: Vec<(u64, Vec<Argv>, Option<u32>)>,
}

/// A node a world shares with its copies until one of them changes it:
/// the explorer's breadth-first search copies whole worlds, and a step
/// changes one node at most, so copying is a reference count for the
/// rest. Every mutable access goes through [`DerefMut`], which copies the
/// node if it is shared and forgets its cached fingerprint.
#[derive(Clone, Debug)]
struct SharedNode {
    node: Arc<Node>,
    /// [`World::fingerprint`]'s hash of this node, until it changes.
    fp: OnceLock<u64>,
}

impl SharedNode {
    fn new(node: Node) -> SharedNode {
        SharedNode {
            node: Arc::new(node),
            fp: OnceLock::new(),
        }
    }
}

impl Deref for SharedNode {
    type Target = Node;
    fn deref(&self) -> &Node {
        &self.node
    }
}

impl DerefMut for SharedNode {
    fn deref_mut(&mut self) -> &mut Node {
        self.fp = OnceLock::new();
        Arc::make_mut(&mut self.node)
    }
}

#[derive(Clone, Debug)]
struct NodeSlot {
    node: SharedNode,
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

impl NodeSlot {
    /// Node `i` of a new world, on its own clock, a replica if the topology
    /// starts it as one.
    fn new(cfg: &WorldConfig, i: u32) -> NodeSlot {
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
        NodeSlot {
            node: SharedNode::new(node),
            clock,
            down: false,
            inc: 0,
            up_gen: 0,
            master_of,
            offset: 0,
            applied: 0,
            tick_at: None,
            internal: None,
        }
    }
}

#[derive(Clone, Debug)]
struct Pending {
    tag: u32,
    node: u32,
    manual: bool,
    timeout: Option<(u64, u64)>,
}

#[derive(Clone, Debug)]
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

/// A simulated deployment: Redis nodes, client processes, the resource.
#[derive(Clone)]
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
    /// Events dropped by [`World::forget_trace`], still counted as steps.
    forgotten: u64,
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
    /// The lock services some or all nodes are members of (etcd,
    /// ZooKeeper) instead of being Redis.
    services: Vec<service::Group>,
    /// When the next service deadline tick is queued.
    service_tick_at: Option<u64>,
    /// Blocked service requests' commands, by request, for the trace
    /// when they are answered.
    blocked_cmds: BTreeMap<u64, Vec<Vec<String>>>,
    /// The lock each client's writes are made under, when it names one
    /// ([`World::write_under`]).
    write_locks: BTreeMap<u32, String>,
}

/// A `compare` world: each group's lock key is watched, and judged by
/// that group's nodes alone.
fn watch_groups(cfg: &WorldConfig, monitor: &mut Monitor, locks: &mut LockObserver) {
    let Some(c) = &cfg.compare else { return };
    for g in cfg.topology.groups() {
        let key = c.key_of(g.kind);
        monitor.watch_key(key);
        locks.watch(key);
        let group = KeyGroup {
            first: g.first,
            count: g.count,
            majority: g.kind == GroupKind::Redlock,
            master: g.first,
        };
        locks.set_group(key, group);
    }
}

/// Commands as text, for the trace.
fn text(commands: &[Argv]) -> Vec<Vec<String>> {
    commands
        .iter()
        .map(|a| a.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect())
        .collect()
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
            names.nodes.push(cfg.topology.node_name(i));
            nodes.push(NodeSlot::new(&cfg, i));
        }
        let mut monitor = Monitor::new(cfg.invariants.clone());
        for k in cfg.invariants.lock_keys.clone() {
            monitor.watch_key(&k);
        }
        let mut locks = LockObserver::new(Scope::Declared, nodes.len(), cfg.topology.is_redlock());
        for k in &monitor.config().lock_keys {
            locks.watch(k);
        }
        watch_groups(&cfg, &mut monitor, &mut locks);
        let services = (cfg.topology.service_groups().into_iter())
            .filter_map(|g| match g.kind {
                GroupKind::Service(k) => Some(service::Group {
                    first: g.first,
                    svc: Service::new(k, g.count),
                }),
                _ => None,
            })
            .collect();
        let mut resource = Resource::new(cfg.fencing);
        for l in &cfg.unfenced {
            resource.unfence(l);
        }
        let mut world = World {
            resource,
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
            forgotten: 0,
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
            services,
            service_tick_at: None,
            blocked_cmds: BTreeMap::new(),
            write_locks: BTreeMap::new(),
        };
        world.announce_leaders();
        Ok(world)
    }
}
