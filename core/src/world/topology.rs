//! What the world is made of: the nodes, how they relate, and the knobs.
//!
//! Three shapes cover the lessons:
//!
//! * **single** — one redis-server. The lock is exactly as durable as that
//!   process (and its persistence setting).
//! * **replicated** — one master and its replicas, fed asynchronously with
//!   a lag. Clients talk to whichever node is master; a failover promotes a
//!   replica with whatever it has received, which may not include the lock.
//! * **redlock** — N independent masters that know nothing of each other;
//!   the client does the agreeing.
//! * **etcd**, **zk** — not Redis at all: the nodes are the members of one
//!   consensus-backed lock service (`world/service.rs`), for the lessons
//!   that run the same fault against every kind of lock.
//! * **compare** — all four side by side in one world, so one client's one
//!   GC pause hits every kind of lock at once: a single Redis (`redis`),
//!   Redlock masters (`r1`…), three etcd members and three ZooKeeper
//!   servers, each group guarding its own lock key ([`CompareLocks`]).

use serde::{Deserialize, Serialize};

use super::clock::ClockConfig;
use crate::invariants::InvariantConfig;
use crate::link::{LinkConfig, ReplicationConfig};
use crate::server::Profile;
use crate::service::ServiceKind;

/// Most nodes a world may have (the lessons need 5; a `compare` world
/// 1 + 3 + 3 + 3).
pub const MAX_NODES: u32 = 10;

/// The nodes and their roles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Topology {
    #[default]
    Single,
    /// Node 0 starts as master, nodes 1..=replicas as its replicas.
    Replicated {
        #[serde(default = "one")]
        replicas: u32,
    },
    /// `masters` independent masters.
    Redlock {
        #[serde(default = "five")]
        masters: u32,
    },
    /// An etcd-style cluster of `members` (a Raft majority, leases, the
    /// concurrency mutex): [`crate::service::etcd`].
    Etcd {
        #[serde(default = "three")]
        members: u32,
    },
    /// A ZooKeeper-style ensemble of `members` (sessions, ephemeral
    /// sequential znodes, watches): [`crate::service::zk`].
    Zk {
        #[serde(default = "three")]
        members: u32,
    },
    /// One world, four lock services: node 0 a single Redis, then
    /// `masters` independent Redlock masters, then three etcd members,
    /// then three ZooKeeper servers.
    Compare {
        #[serde(default = "three")]
        masters: u32,
    },
}

/// Which kind of lock a group of a [`Topology::Compare`] world serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKind {
    Redis,
    Redlock,
    Service(ServiceKind),
}

/// A run of nodes that serve one lock together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeGroup {
    pub kind: GroupKind,
    pub first: u32,
    pub count: u32,
}

impl NodeGroup {
    pub fn contains(self, node: u32) -> bool {
        (self.first..self.first + self.count).contains(&node)
    }
}

/// The members a `compare` world's etcd and ZooKeeper groups have.
const COMPARE_MEMBERS: u32 = 3;

fn three() -> u32 {
    3
}

fn one() -> u32 {
    1
}

fn five() -> u32 {
    5
}

impl Topology {
    pub fn node_count(self) -> u32 {
        match self {
            Topology::Single => 1,
            Topology::Replicated { replicas } => 1 + replicas,
            Topology::Redlock { masters } => masters,
            Topology::Etcd { members } | Topology::Zk { members } => members,
            Topology::Compare { masters } => 1 + masters + 2 * COMPARE_MEMBERS,
        }
    }

    /// The groups of nodes that serve one lock together, in node order.
    pub fn groups(self) -> Vec<NodeGroup> {
        let g = |kind, first, count| NodeGroup { kind, first, count };
        let n = self.node_count();
        match self {
            Topology::Single | Topology::Replicated { .. } => vec![g(GroupKind::Redis, 0, n)],
            Topology::Redlock { .. } => vec![g(GroupKind::Redlock, 0, n)],
            Topology::Etcd { .. } => vec![g(GroupKind::Service(ServiceKind::Etcd), 0, n)],
            Topology::Zk { .. } => vec![g(GroupKind::Service(ServiceKind::Zk), 0, n)],
            Topology::Compare { masters } => vec![
                g(GroupKind::Redis, 0, 1),
                g(GroupKind::Redlock, 1, masters),
                g(GroupKind::Service(ServiceKind::Etcd), 1 + masters, COMPARE_MEMBERS),
                g(
                    GroupKind::Service(ServiceKind::Zk),
                    1 + masters + COMPARE_MEMBERS,
                    COMPARE_MEMBERS,
                ),
            ],
        }
    }

    /// The lock-service groups: (first node, members, kind).
    pub fn service_groups(self) -> Vec<NodeGroup> {
        self.groups()
            .into_iter()
            .filter(|g| matches!(g.kind, GroupKind::Service(_)))
            .collect()
    }

    /// Display names: `redis`; `master`, `replica1`…; `r1`…`r5`. The
    /// replicated names are the *initial* roles: after a failover
    /// `replica1` is the master, and the trace says so.
    pub fn node_name(self, i: u32) -> String {
        match self {
            Topology::Single => "redis".to_owned(),
            Topology::Replicated { .. } if i == 0 => "master".to_owned(),
            Topology::Replicated { .. } => format!("replica{i}"),
            Topology::Redlock { .. } => format!("r{}", i + 1),
            Topology::Etcd { .. } => format!("etcd{}", i + 1),
            Topology::Zk { .. } => format!("zk{}", i + 1),
            Topology::Compare { masters } => match i {
                0 => "redis".to_owned(),
                i if i <= masters => format!("r{i}"),
                i if i <= masters + COMPARE_MEMBERS => format!("etcd{}", i - masters),
                i => format!("zk{}", i - masters - COMPARE_MEMBERS),
            },
        }
    }

    /// Whose replica node `i` starts as.
    pub fn initial_master_of(self, i: u32) -> Option<u32> {
        match self {
            Topology::Replicated { .. } if i > 0 => Some(0),
            _ => None,
        }
    }

    /// The lock service *all* its nodes run instead of Redis, if any.
    pub fn service(self) -> Option<ServiceKind> {
        match self {
            Topology::Etcd { .. } => Some(ServiceKind::Etcd),
            Topology::Zk { .. } => Some(ServiceKind::Zk),
            _ => None,
        }
    }

    pub fn is_redlock(self) -> bool {
        matches!(self, Topology::Redlock { .. })
    }

    pub fn name(self) -> String {
        match self {
            Topology::Single => "single".to_owned(),
            Topology::Replicated { replicas } => {
                format!(
                    "replicated (1 master, {replicas} replica{})",
                    if replicas == 1 { "" } else { "s" }
                )
            }
            Topology::Redlock { masters } => format!("redlock{masters}"),
            Topology::Etcd { members } => format!("etcd{members}"),
            Topology::Zk { members } => format!("zk{members}"),
            Topology::Compare { masters } => format!("compare (redis, redlock{masters}, etcd3, zk3)"),
        }
    }
}

/// Does a restarted node come back with its data?
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Persistence {
    /// AOF (`appendfsync always`, idealised): a restart loses nothing.
    #[default]
    #[serde(rename = "aof")]
    Aof,
    /// No persistence: a restarted node is empty — locks and counters gone.
    #[serde(rename = "none", alias = "off")]
    Off,
}

impl Persistence {
    pub fn name(self) -> &'static str {
        match self {
            Persistence::Aof => "aof",
            Persistence::Off => "none",
        }
    }

    pub fn parse(s: &str) -> Option<Persistence> {
        match s {
            "aof" => Some(Persistence::Aof),
            "none" | "off" => Some(Persistence::Off),
            _ => None,
        }
    }
}

/// A clock setting for one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeClock {
    pub node: u32,
    pub clock: ClockConfig,
}

/// A link setting for one client and one node (or, with `node: null`, the
/// resource).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkOverride {
    pub client: String,
    #[serde(default)]
    pub node: Option<u32>,
    pub config: LinkConfig,
}

/// Everything about a world except its clients and faults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorldConfig {
    pub topology: Topology,
    pub profile: Profile,
    pub persistence: Persistence,
    /// Default client ↔ node link.
    pub link: LinkConfig,
    /// Default client ↔ resource link.
    pub resource_link: LinkConfig,
    pub links: Vec<LinkOverride>,
    pub replication: ReplicationConfig,
    pub node_clocks: Vec<NodeClock>,
    /// Does the resource check fencing tokens?
    pub fencing: bool,
    pub invariants: InvariantConfig,
    /// Nothing after this world time is processed.
    pub horizon_ms: u64,
    /// Stop after this many trace events.
    pub max_events: u64,
    /// Stop at the first violation (the explorer does).
    pub stop_on_violation: bool,
    /// A `compare` world: the lock key each group guards.
    pub compare: Option<CompareLocks>,
    /// Locks whose store on the resource checks no token, fenced or not
    /// (writes name their lock: [`crate::resource::Resource::write_under`]).
    pub unfenced: Vec<String>,
    /// Client pauses land only while the client holds no lock (it is still
    /// acquiring, backing off, or done): a pause that would hit a holder
    /// does not happen. The fault model of "the acquisition was slow" —
    /// Redlock's validity exercise, where a pause during the work would
    /// break any lease without fencing and teach nothing about the check.
    pub pause_only_acquiring: bool,
    /// Every client draws from one random stream shape (each its own copy
    /// of the same seeded generator) instead of a stream per client. With
    /// equal programs and start times this makes clients interchangeable,
    /// which the breadth-first search's symmetry reduction needs
    /// (`explore::bfs::Reductions::symmetry`): tokens still differ by the
    /// client's name in them.
    pub shared_client_stream: bool,
}

/// The lock key each group of a [`Topology::Compare`] world guards: its
/// holders are judged by that group alone (one node; a majority of the
/// Redlock masters; the etcd or ZooKeeper leader).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareLocks {
    pub redis: String,
    pub redlock: String,
    pub etcd: String,
    pub zk: String,
}

impl CompareLocks {
    /// The key a group of this kind guards.
    pub fn key_of(&self, kind: GroupKind) -> &str {
        match kind {
            GroupKind::Redis => &self.redis,
            GroupKind::Redlock => &self.redlock,
            GroupKind::Service(ServiceKind::Etcd) => &self.etcd,
            GroupKind::Service(ServiceKind::Zk) => &self.zk,
        }
    }
}

impl Default for WorldConfig {
    fn default() -> Self {
        WorldConfig {
            topology: Topology::Single,
            profile: Profile::V8_4,
            persistence: Persistence::Aof,
            link: LinkConfig::default(),
            resource_link: LinkConfig::default(),
            links: Vec::new(),
            replication: ReplicationConfig::default(),
            node_clocks: Vec::new(),
            fencing: false,
            invariants: InvariantConfig::default(),
            horizon_ms: 600_000,
            max_events: 1_000_000,
            stop_on_violation: false,
            compare: None,
            unfenced: Vec::new(),
            pause_only_acquiring: false,
            shared_client_stream: false,
        }
    }
}
