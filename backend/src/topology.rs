//! Managed topologies: real redis-server processes on free loopback ports,
//! arranged the way the lessons need them, with real faults.
//!
//! The simulator's world has masters, replicas, independent Redlock masters
//! and a cluster; this module builds the same shapes out of real processes
//! so a lesson's failure can be watched on the real thing:
//!
//! * `single` — one master.
//! * `replicated` — a master and a replica started with `--replicaof`.
//!   Replication is Redis's own, asynchronous: [`Topology::start`] returns
//!   once the replica reports `master_link_status:up`, and after that the
//!   replica lags by whatever the network and scheduler make it lag.
//! * `redlock5` — five independent masters (no replication between them:
//!   that independence is Redlock's whole premise).
//! * `cluster3` — three `--cluster-enabled` masters joined by
//!   `redis-cli --cluster create … --cluster-replicas 0`, ready once every
//!   node reports `cluster_state:ok`.
//!
//! Nothing persists (`--save ''`, no AOF), each process runs in its own
//! temporary directory, and everything is killed when the [`Topology`]
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
//!
//! A user's own server ([`Topology::External`]) is never killed, paused or
//! reconfigured: every fault on it is refused with a message saying so.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use locklab_core::reply::Reply;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::real::{public_url, RealConnection};
use crate::redis_server::{free_port, redis_cli_binary, redis_server_binary, NOT_FOUND};
use crate::session::NodeTarget;

/// How long a node may take to answer after start, a replica to link up,
/// or a cluster to become `ok`.
const READY_DEADLINE: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(5);

/// The shapes a managed topology can take: the protocol's type, so the
/// page, the CLI and the backend name them alike.
pub use locklab_core::protocol::TopologyKind;

/// A fault to inject on node `node` (an index into [`Topology::nodes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum Fault {
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
}

impl Fault {
    pub fn node(self) -> u32 {
        match self {
            Fault::Pause { node }
            | Fault::Resume { node }
            | Fault::Crash { node }
            | Fault::Restart { node }
            | Fault::CutReplication { node }
            | Fault::HealReplication { node }
            | Fault::Promote { node } => node,
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
pub use locklab_core::protocol::{NodeInfo, NodeState, Role};

/// One managed redis-server process.
#[derive(Debug)]
pub struct ManagedNode {
    name: String,
    port: u16,
    /// Arguments beyond the lab defaults (`--replicaof …`, cluster flags),
    /// reused verbatim on restart.
    extra: Vec<String>,
    dir: PathBuf,
    child: Option<Child>,
    state: NodeState,
    /// The master's port, for a replica.
    master: Option<u16>,
    /// `extra` and `master` as the topology was built, so [`Topology::reset`]
    /// can undo a promotion.
    original: (Vec<String>, Option<u16>),
}

impl ManagedNode {
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn spawn(&mut self) -> Result<(), String> {
        let binary = redis_server_binary().ok_or_else(|| NOT_FOUND.to_owned())?;
        let _ = std::fs::create_dir_all(&self.dir);
        let port = self.port.to_string();
        let child = Command::new(&binary)
            .args([
                "--port",
                &port,
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--daemonize", "no", "--logfile", ""])
            // Serve SCRIPT KILL after the lab's script budget (a session's
            // runaway script is killed then) rather than after 5 s.
            .args(["--busy-reply-threshold", "1000"])
            .args(&self.extra)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", binary.display()))?;
        crate::reaper::record(child.id(), self.port);
        self.child = Some(child);
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            if let Ok(Reply::Status(s)) = command(self.port, &["PING"]) {
                if s == "PONG" {
                    self.state = NodeState::Up;
                    return Ok(());
                }
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!("redis-server on port {} exited early: {status}", self.port));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "redis-server on port {} did not answer PING in time",
                    self.port
                ));
            }
            std::thread::sleep(POLL);
        }
    }

    /// SIGKILL and reap.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            crate::reaper::forget(child.id());
        }
        self.state = NodeState::Down;
    }

    fn signal(&self, sig: &str) -> Result<(), String> {
        let pid = self.pid().ok_or_else(|| format!("{} is not running", self.name))?;
        let status = Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .map_err(|e| format!("kill {sig} {pid}: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("kill {sig} {pid} failed: {status}"))
        }
    }
}

/// A set of managed nodes, killed on drop.
#[derive(Debug)]
pub struct Managed {
    kind: TopologyKind,
    nodes: Vec<ManagedNode>,
    root: PathBuf,
}

impl Drop for Managed {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            // A stopped process dies of SIGKILL too; no SIGCONT needed.
            n.kill();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Where a session's commands go: servers we started, or the user's own.
#[derive(Debug)]
pub enum Topology {
    /// The user's server (`--redis URL`): used, never touched otherwise.
    External(String),
    Managed(Managed),
}

impl Topology {
    /// A user's server.
    pub fn external(url: impl Into<String>) -> Topology {
        Topology::External(url.into())
    }

    /// Start a managed topology and wait until it is ready.
    pub fn start(kind: TopologyKind) -> Result<Topology, TopologyError> {
        let root = std::env::temp_dir().join(format!(
            "locklab-topo-{}-{}",
            std::process::id(),
            crate::session::random_hex(8)
        ));
        let mut m = Managed {
            kind,
            nodes: Vec::new(),
            root,
        };
        let count = match kind {
            TopologyKind::Single => 1,
            TopologyKind::Replicated => 2,
            TopologyKind::Redlock5 => 5,
            TopologyKind::Cluster3 => 3,
        };
        for i in 0..count {
            let (name, extra, master) = match kind {
                TopologyKind::Single => ("master".to_owned(), vec![], None),
                TopologyKind::Replicated if i == 0 => ("master".to_owned(), vec![], None),
                TopologyKind::Replicated => {
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
            let node = start_node(&m.root, &name, extra, master)?;
            m.nodes.push(node);
        }
        match kind {
            TopologyKind::Replicated => wait_link_up(m.nodes[1].port)?,
            TopologyKind::Cluster3 => form_cluster(&m.nodes)?,
            _ => {}
        }
        Ok(Topology::Managed(m))
    }

    /// `single`, `replicated`, …, or `external`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Topology::External(_) => "external",
            Topology::Managed(m) => m.kind.as_str(),
        }
    }

    /// What the protocol calls this topology.
    pub fn served(&self) -> locklab_core::protocol::Served {
        match self {
            Topology::External(_) => locklab_core::protocol::Served::External,
            Topology::Managed(m) => m.kind.into(),
        }
    }

    /// The nodes, in index order.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        match self {
            Topology::External(url) => vec![NodeInfo {
                name: "redis".into(),
                url: public_url(url),
                port: 0,
                role: Role::External,
                state: NodeState::Up,
            }],
            Topology::Managed(m) => m
                .nodes
                .iter()
                .map(|n| NodeInfo {
                    name: n.name.clone(),
                    url: n.url(),
                    port: n.port,
                    role: if n.master.is_some() {
                        Role::Replica
                    } else {
                        Role::Master
                    },
                    state: n.state,
                })
                .collect(),
        }
    }

    /// The managed kind, `None` for the user's server.
    pub fn kind(&self) -> Option<TopologyKind> {
        match self {
            Topology::External(_) => None,
            Topology::Managed(m) => Some(m.kind),
        }
    }

    /// Put a managed topology back the way [`Topology::start`] left it, so
    /// a lesson played again behaves like the first time: every node that
    /// an earlier run crashed is started again, a paused one resumed, a
    /// promoted replica (or one whose replication was cut) made to follow
    /// its master again, and every dataset, script cache and function
    /// library emptied. Ports stay the same, so the node list the browser
    /// has stays right. The user's server is refused, as every fault is.
    pub fn reset(&mut self) -> Result<(), TopologyError> {
        let m = match self {
            Topology::External(url) => return Err(TopologyError::External(public_url(url))),
            Topology::Managed(m) => m,
        };
        let f = TopologyError::Fault;
        for node in &mut m.nodes {
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
            }
        }
        for node in &m.nodes {
            if node.master.is_some() {
                wait_link_up(node.port)?;
            }
        }
        Ok(())
    }

    /// The nodes as a session's targets.
    /// The nodes as a session's targets: with the URL *as given* (the
    /// owner's credentials, for the admin connection), which
    /// [`nodes`](Topology::nodes) never shows.
    pub fn targets(&self) -> Vec<NodeTarget> {
        match self {
            Topology::External(url) => vec![NodeTarget::new("redis", url.clone())],
            Topology::Managed(_) => self
                .nodes()
                .into_iter()
                .map(|n| NodeTarget::new(n.name, n.url))
                .collect(),
        }
    }

    /// A managed node, for tests and the API.
    pub fn managed_node(&self, i: u32) -> Option<&ManagedNode> {
        match self {
            Topology::External(_) => None,
            Topology::Managed(m) => m.nodes.get(i as usize),
        }
    }

    /// Inject a fault; the answer says what was done, for the trace.
    pub fn fault(&mut self, fault: Fault) -> Result<String, TopologyError> {
        let m = match self {
            Topology::External(url) => return Err(TopologyError::External(public_url(url))),
            Topology::Managed(m) => m,
        };
        let i = fault.node();
        let node = m.nodes.get_mut(i as usize).ok_or(TopologyError::NoNode(i))?;
        let name = node.name.clone();
        let f = TopologyError::Fault;
        match fault {
            Fault::Pause { .. } => {
                node.signal("-STOP").map_err(f)?;
                node.state = NodeState::Paused;
                Ok(format!("{name} paused (SIGSTOP)"))
            }
            Fault::Resume { .. } => {
                node.signal("-CONT").map_err(f)?;
                node.state = NodeState::Up;
                Ok(format!("{name} resumed (SIGCONT)"))
            }
            Fault::Crash { .. } => {
                node.kill();
                Ok(format!("{name} crashed (SIGKILL)"))
            }
            Fault::Restart { .. } => {
                node.kill();
                node.spawn().map_err(f)?;
                if let Some(_mp) = node.master {
                    wait_link_up(node.port)?;
                }
                Ok(format!("{name} restarted on port {} without its data", node.port))
            }
            Fault::CutReplication { .. } => {
                if node.master.is_none() {
                    return Err(f(format!("{name} is not a replica")));
                }
                let nowhere = free_port().to_string();
                expect_ok(node.port, &["REPLICAOF", "127.0.0.1", &nowhere]).map_err(f)?;
                Ok(format!(
                    "{name}: replication from its master cut (now following an address where nobody listens)"
                ))
            }
            Fault::HealReplication { .. } => {
                let mp = node
                    .master
                    .ok_or_else(|| f(format!("{name} is not a replica")))?
                    .to_string();
                expect_ok(node.port, &["REPLICAOF", "127.0.0.1", &mp]).map_err(f)?;
                Ok(format!("{name}: replication from its master restored"))
            }
            Fault::Promote { .. } => {
                if node.master.is_none() {
                    return Err(f(format!("{name} is already a master")));
                }
                expect_ok(node.port, &["REPLICAOF", "NO", "ONE"]).map_err(f)?;
                node.master = None;
                // Its arguments must not make a restart follow the old master.
                node.extra.clear();
                Ok(format!("{name} promoted to master (REPLICAOF NO ONE)"))
            }
        }
    }
}

fn start_node(
    root: &std::path::Path,
    name: &str,
    extra: Vec<String>,
    master: Option<u16>,
) -> Result<ManagedNode, TopologyError> {
    let mut last = String::new();
    for _ in 0..5 {
        let port = free_port();
        let mut node = ManagedNode {
            name: name.to_owned(),
            port,
            extra: extra.clone(),
            dir: root.join(format!("{name}-{port}")),
            child: None,
            state: NodeState::Down,
            master,
            original: (extra.clone(), master),
        };
        match node.spawn() {
            Ok(()) => return Ok(node),
            Err(why) if why == NOT_FOUND => return Err(TopologyError::Start(why)),
            Err(why) => last = why,
        }
    }
    Err(TopologyError::Start(format!("redis-server did not start: {last}")))
}

/// One command on a fresh connection to a loopback port.
pub fn command(port: u16, argv: &[&str]) -> Result<Reply, String> {
    let mut conn = RealConnection::open(&format!("redis://127.0.0.1:{port}/")).map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let argv: Vec<Vec<u8>> = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
    conn.execute(&argv).map_err(|e| e.to_string())
}

fn expect_ok(port: u16, argv: &[&str]) -> Result<(), String> {
    match command(port, argv)? {
        Reply::Error(e) => Err(format!("{}: {e}", argv.join(" "))),
        _ => Ok(()),
    }
}

/// `field` from `INFO section` on `port`.
pub fn info_field(port: u16, section: &str, field: &str) -> Option<String> {
    let reply = command(port, &["INFO", section]).ok()?;
    let Reply::Bulk(text) = reply else { return None };
    let text = String::from_utf8_lossy(&text).into_owned();
    text.lines().find_map(|l| {
        l.strip_prefix(field)
            .and_then(|r| r.strip_prefix(':'))
            .map(|v| v.trim().to_owned())
    })
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) -> Result<(), TopologyError> {
    let deadline = Instant::now() + READY_DEADLINE;
    while !ok() {
        if Instant::now() >= deadline {
            return Err(TopologyError::Start(format!("timed out waiting for {what}")));
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

fn wait_link_up(replica_port: u16) -> Result<(), TopologyError> {
    wait_until("the replica's master_link_status:up", || {
        info_field(replica_port, "replication", "master_link_status").as_deref() == Some("up")
    })
}

fn form_cluster(nodes: &[ManagedNode]) -> Result<(), TopologyError> {
    let cli = redis_cli_binary().ok_or_else(|| TopologyError::Start("redis-cli not found".into()))?;
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| SocketAddr::from((Ipv4Addr::LOCALHOST, n.port)).to_string())
        .collect();
    let out = Command::new(cli)
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| TopologyError::Start(format!("redis-cli --cluster create: {e}")))?;
    if !out.status.success() {
        return Err(TopologyError::Start(format!(
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        )));
    }
    for n in nodes {
        wait_until("cluster_state:ok", || {
            matches!(command(n.port, &["CLUSTER", "INFO"]), Ok(Reply::Bulk(b))
                if String::from_utf8_lossy(&b).contains("cluster_state:ok"))
        })?;
    }
    Ok(())
}
