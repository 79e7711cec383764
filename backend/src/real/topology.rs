//! Managed topologies: real redis-server processes on free loopback ports,
//! arranged the way the lessons need them, with real faults.
//!
//! The simulator's world has masters, replicas, independent Redlock masters
//! and a cluster; this module builds the same shapes out of real processes
//! so a lesson's failure can be watched on the real thing:
//!
//! * `single` — one master.
//! * `replicated` — a master and a replica started with `--replicaof`.
//!   Replication is Redis's own, asynchronous: [`Servers::start`] returns
//!   once the replica reports `master_link_status:up`, and after that the
//!   replica lags by whatever the network and scheduler make it lag.
//! * `redlock5` — five independent masters (no replication between them:
//!   that independence is Redlock's whole premise).
//! * `cluster3` — three `--cluster-enabled` masters joined by
//!   `redis-cli --cluster create … --cluster-replicas 0`, ready once every
//!   node reports `cluster_state:ok`.
//! * `sentinel` — `replicated` plus three `redis-sentinel` processes
//!   watching it ([`crate::real::faults::sentinel`]): crash or pause the master
//!   and Sentinel itself fails over; ready once every sentinel knows the
//!   replica and the other two.
//!
//! Nothing persists (`--save ''`, no AOF), each process runs in its own
//! temporary directory, and everything is killed when the [`Servers`]
//! drops.
//!
//! # Faults, and why each mechanism
//!
//! * **pause / resume** — `kill -STOP` / `kill -CONT` on the process. The
//!   kernel stops scheduling it: sockets stay open, TCP still accepts bytes,
//!   nothing answers and no key expires. That is a GC pause or a frozen VM,
//!   the fault Martin Kleppmann's critique of Redlock is about.
//! * **crash** — SIGKILL: no shutdown, no save.
//! * **restart** — start the same binary on the *same port* with the same
//!   arguments, without persistence, so it comes back empty (a replica
//!   comes back and full-syncs from its master; a restarted master hands its
//!   empty dataset to its replica). Lesson 21's failure, for real.
//! * **cut replication** — on the replica, `REPLICAOF 127.0.0.1 <port where
//!   nobody listens>`. The replica keeps its data and keeps serving reads,
//!   the master keeps serving writes, and writes stop flowing between them:
//!   from the replica's side exactly a partition from its master. We do not
//!   use `CLIENT KILL TYPE master` (the replica reconnects within a second,
//!   so it is a blip, not a cut), nor a pause (the replica would stop
//!   answering clients too). **heal** points it back at the master; Redis
//!   then resyncs, partially if the backlog still covers the gap.
//! * **promote** — `REPLICAOF NO ONE` on the replica: it becomes a master
//!   with whatever it had received, which is how a failover loses a lock.
//!   This is the *fast path*: the lab decides, instantly. On a `sentinel`
//!   topology the *real path* is Sentinel's own failover
//!   ([`Servers::await_failover`] after a crash or pause of the master,
//!   or [`Servers::sentinel_failover`]); a manual promote there is undone
//!   by Sentinel, which still knows the old master.
//! * **slow or lossy link** — a delaying proxy between one client and one
//!   node ([`Servers::set_link`], [`crate::real::faults::proxy`]): latency and
//!   jitter per direction, lost requests or lost replies. The client must
//!   connect through [`Servers::link_url`]; other clients are untouched,
//!   as in the simulator, where links are per client and node.
//! * **clock jump and drift** — every managed redis-server runs with
//!   [`crate::real::faults::clock`]'s preload library, which adds a shift to its
//!   `CLOCK_REALTIME` read from a file the backend rewrites
//!   ([`Servers::shift_clock`], [`Servers::drift_clock`]). Keys expire
//!   and `TIME` answers by the shifted clock; nothing else changes.
//!
//! A user's own server ([`Servers::External`]) is never killed, paused or
//! reconfigured: every fault on it is refused with a message saying so.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::real::conn::{command, public_url, NodeTarget};
use crate::real::faults::clock::{self};
use crate::real::faults::proxy::{LinkFault, LinkProxy};
use crate::real::faults::sentinel::Sentinels;

/// How long a node may take to answer after start, a replica to link up,
/// or a cluster to become `ok`.
const READY_DEADLINE: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(5);

/// The shapes a managed topology can take: the protocol's type, so the
/// page, the CLI and the backend name them alike.
pub use locklab_core::protocol::TopologyKind;

mod inject;
mod node;

use node::{expect_ok, form_cluster, start_node, wait_link_up};
pub use node::{info_field, ManagedNode};

/// A fault to inject on node `node` (an index into [`Servers::nodes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum NodeFault {
    Pause {
        node: u32,
    },
    Resume {
        node: u32,
    },
    Crash {
        node: u32,
    },
    Restart {
        node: u32,
    },
    /// `node` is the replica whose link to its master is cut.
    CutReplication {
        node: u32,
    },
    HealReplication {
        node: u32,
    },
    Promote {
        node: u32,
    },
    /// Step the node's clock by `delta_ms` (negative: back).
    JumpClock {
        node: u32,
        delta_ms: i64,
    },
    /// Make the node's clock run `ppm` parts per million fast from now on.
    DriftClock {
        node: u32,
        ppm: i64,
    },
}

impl NodeFault {
    pub fn node(self) -> u32 {
        match self {
            NodeFault::Pause { node }
            | NodeFault::Resume { node }
            | NodeFault::Crash { node }
            | NodeFault::Restart { node }
            | NodeFault::CutReplication { node }
            | NodeFault::HealReplication { node }
            | NodeFault::Promote { node }
            | NodeFault::JumpClock { node, .. }
            | NodeFault::DriftClock { node, .. } => node,
        }
    }
}

#[derive(Debug, Error)]
pub enum TopologyError {
    #[error("{0}")]
    Start(String),
    #[error("faults are refused on your own server ({0}): locklab never kills, pauses or reconfigures a server it did not start")]
    External(String),
    #[error("no node {0} in this topology")]
    NoNode(u32),
    #[error("{0}")]
    Fault(String),
}

/// A node's state and how the API reports a node: the protocol's types.
pub use locklab_core::protocol::{NodeInfo, NodeRole, NodeState};

/// A set of managed nodes, killed on drop.
#[derive(Debug)]
pub struct Managed {
    kind: TopologyKind,
    nodes: Vec<ManagedNode>,
    root: PathBuf,
    /// The preload library every node runs with.
    preload: PathBuf,
    /// Link proxies by (client, node), started on first use.
    links: std::collections::BTreeMap<(String, u32), LinkProxy>,
    /// The `sentinel` kind's sentinels.
    sentinels: Option<Sentinels>,
}

impl Managed {
    /// No nodes yet: a fresh folder with the clock preload in it.
    fn new(kind: TopologyKind) -> Result<Managed, TopologyError> {
        let root = std::env::temp_dir().join(format!(
            "locklab-topo-{}-{}",
            std::process::id(),
            crate::real::conn::random_hex(8)
        ));
        let preload = clock::install_preload(&root)
            .map_err(|e| TopologyError::Start(format!("writing the clock preload library: {e}")))?;
        Ok(Managed {
            kind,
            nodes: Vec::new(),
            root,
            preload,
            links: Default::default(),
            sentinels: None,
        })
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        // Sentinels first, so none of them reacts to the nodes going.
        self.sentinels = None;
        self.links.clear();
        for n in &mut self.nodes {
            // A stopped process dies of SIGKILL too; no SIGCONT needed.
            n.kill();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Where a session's commands go: servers we started, or the user's own.
#[derive(Debug)]
pub enum Servers {
    /// The user's server (`--redis URL`): used, never touched otherwise.
    External(String),
    Managed(Managed),
}

impl Servers {
    /// A user's server.
    pub fn external(url: impl Into<String>) -> Servers {
        Servers::External(url.into())
    }

    /// The redis-servers a managed topology of `kind` runs.
    fn servers(kind: TopologyKind) -> usize {
        match kind {
            TopologyKind::Single => 1,
            TopologyKind::Replicated | TopologyKind::Sentinel => 2,
            TopologyKind::Redlock5 => 5,
            TopologyKind::Cluster3 => 3,
        }
    }

    /// The processes a managed topology of `kind` runs: its redis-servers,
    /// and Sentinel's sentinels.
    pub fn processes(kind: TopologyKind) -> usize {
        Servers::servers(kind)
            + match kind {
                TopologyKind::Sentinel => crate::real::faults::sentinel::SENTINELS,
                _ => 0,
            }
    }

    /// Start a managed topology and wait until it is ready.
    pub fn start(kind: TopologyKind) -> Result<Servers, TopologyError> {
        let mut m = Managed::new(kind)?;
        let count = Servers::servers(kind);
        for i in 0..count {
            let (name, extra, master) = match kind {
                TopologyKind::Single => ("master".to_owned(), vec![], None),
                TopologyKind::Replicated | TopologyKind::Sentinel if i == 0 => ("master".to_owned(), vec![], None),
                TopologyKind::Replicated | TopologyKind::Sentinel => {
                    let mp = m.nodes[0].port;
                    (
                        "replica".to_owned(),
                        vec!["--replicaof".into(), "127.0.0.1".into(), mp.to_string()],
                        Some(mp),
                    )
                }
                TopologyKind::Redlock5 => (format!("r{}", i + 1), vec![], None),
                TopologyKind::Cluster3 => (
                    format!("c{}", i + 1),
                    vec![
                        "--cluster-enabled".into(),
                        "yes".into(),
                        "--cluster-config-file".into(),
                        "nodes.conf".into(),
                    ],
                    None,
                ),
            };
            let node = start_node(&m.root, &m.preload, &name, extra, master)?;
            m.nodes.push(node);
        }
        match kind {
            TopologyKind::Replicated => wait_link_up(m.nodes[1].port)?,
            TopologyKind::Sentinel => {
                wait_link_up(m.nodes[1].port)?;
                m.sentinels = Some(Sentinels::start(&m.root, m.nodes[0].port, 1).map_err(TopologyError::Start)?);
            }
            TopologyKind::Cluster3 => form_cluster(&m.nodes)?,
            _ => {}
        }
        Ok(Servers::Managed(m))
    }

    /// Independent masters with these names (lesson 45's single Redis and
    /// its three Redlock masters: `redis`, `r1`…`r3`), managed as the
    /// Redlock kind is.
    pub fn start_masters(names: &[&str]) -> Result<Servers, TopologyError> {
        let mut m = Managed::new(TopologyKind::Redlock5)?;
        for name in names {
            let node = start_node(&m.root, &m.preload, name, vec![], None)?;
            m.nodes.push(node);
        }
        Ok(Servers::Managed(m))
    }

    /// `single`, `replicated`, …, or `external`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Servers::External(_) => "external",
            Servers::Managed(m) => m.kind.as_str(),
        }
    }

    /// What the protocol calls this topology.
    pub fn served(&self) -> locklab_core::protocol::Served {
        match self {
            Servers::External(_) => locklab_core::protocol::Served::External,
            Servers::Managed(m) => m.kind.into(),
        }
    }

    /// The nodes, in index order.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        match self {
            Servers::External(url) => vec![NodeInfo {
                name: "redis".into(),
                url: public_url(url),
                port: 0,
                role: NodeRole::External,
                state: NodeState::Up,
            }],
            Servers::Managed(m) => m
                .nodes
                .iter()
                .map(|n| NodeInfo {
                    name: n.name.clone(),
                    url: n.url(),
                    port: n.port,
                    role: match &m.sentinels {
                        // Sentinel decides who is master, not the lab.
                        Some(s) if s.master_port() == n.port => NodeRole::Master,
                        Some(_) => NodeRole::Replica,
                        None if n.master.is_some() => NodeRole::Replica,
                        None => NodeRole::Master,
                    },
                    state: n.state,
                })
                .collect(),
        }
    }

    /// The managed kind, `None` for the user's server.
    pub fn kind(&self) -> Option<TopologyKind> {
        match self {
            Servers::External(_) => None,
            Servers::Managed(m) => Some(m.kind),
        }
    }

    /// Put a managed topology back the way [`Servers::start`] left it, so
    /// a lesson played again behaves like the first time: every node that
    /// an earlier run crashed is started again, a paused one resumed, a
    /// promoted replica (or one whose replication was cut) made to follow
    /// its master again, and every dataset, script cache and function
    /// library emptied. Ports stay the same, so the node list the browser
    /// has stays right. The user's server is refused, as every fault is.
    pub fn reset(&mut self) -> Result<(), TopologyError> {
        let m = match self {
            Servers::External(url) => return Err(TopologyError::External(public_url(url))),
            Servers::Managed(m) => m,
        };
        let f = TopologyError::Fault;
        // Sentinels would fight the reset (and remember the failover):
        // they are started afresh once the nodes are as at the start.
        let had_sentinels = m.sentinels.take().is_some();
        for link in m.links.values() {
            link.set(LinkFault::default());
        }
        for node in &mut m.nodes {
            node.clock
                .reset()
                .map_err(|e| f(format!("resetting {}'s clock: {e}", node.name)))?;
            if node.state == NodeState::Paused {
                node.signal("-CONT").map_err(f)?;
                node.state = NodeState::Up;
            }
            if node.child.is_none() || node.state == NodeState::Down {
                // Restart as a master even if it was a replica: it is
                // pointed back at its master below, once the master is up.
                let (extra, master) = node.original.clone();
                node.extra = extra.into_iter().filter(|_| master.is_none()).collect();
                node.master = None;
                node.spawn().map_err(f)?;
            }
        }
        for node in &mut m.nodes {
            for cmd in [&["FLUSHALL"][..], &["SCRIPT", "FLUSH"], &["FUNCTION", "FLUSH"]] {
                // A replica refuses writes (FUNCTION FLUSH) while it follows;
                // the full resync below empties it anyway.
                let _ = command(node.port, cmd);
            }
            let (extra, master) = node.original.clone();
            node.extra = extra;
            if let Some(mp) = master {
                expect_ok(node.port, &["REPLICAOF", "127.0.0.1", &mp.to_string()]).map_err(f)?;
                node.master = Some(mp);
            } else if had_sentinels {
                // Sentinel may have made the old master a replica.
                expect_ok(node.port, &["REPLICAOF", "NO", "ONE"]).map_err(f)?;
                node.master = None;
            }
        }
        for node in &m.nodes {
            if node.master.is_some() {
                wait_link_up(node.port)?;
            }
        }
        if had_sentinels {
            m.sentinels =
                Some(Sentinels::start(&m.root, m.nodes[0].port, m.nodes.len() - 1).map_err(TopologyError::Start)?);
        }
        Ok(())
    }

    /// The nodes as a session's targets.
    /// The nodes as a session's targets: with the URL *as given* (the
    /// owner's credentials, for the admin connection), which
    /// [`nodes`](Servers::nodes) never shows.
    pub fn targets(&self) -> Vec<NodeTarget> {
        match self {
            Servers::External(url) => vec![NodeTarget::new("redis", url.clone())],
            Servers::Managed(_) => self
                .nodes()
                .into_iter()
                .map(|n| NodeTarget::new(n.name, n.url))
                .collect(),
        }
    }

    /// A managed node, for tests and the API.
    pub fn managed_node(&self, i: u32) -> Option<&ManagedNode> {
        match self {
            Servers::External(_) => None,
            Servers::Managed(m) => m.nodes.get(i as usize),
        }
    }

    fn managed_mut(&mut self) -> Result<&mut Managed, TopologyError> {
        match self {
            Servers::External(url) => Err(TopologyError::External(public_url(url))),
            Servers::Managed(m) => Ok(m),
        }
    }

    fn managed_ref(&self) -> Result<&Managed, TopologyError> {
        match self {
            Servers::External(url) => Err(TopologyError::External(public_url(url))),
            Servers::Managed(m) => Ok(m),
        }
    }
}
