//! One managed redis-server ([`ManagedNode`]): its process, spawned with
//! its port, clock shim and log, killed and signalled; and the waits and
//! `redis-cli --cluster create` that bring a set of them up as a topology.
//! Apart from [`Servers`](super::Servers) because it is all about one
//! process and its readiness, not about what the topology is.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use locklab_core::reply::Reply;

use super::{NodeState, TopologyError, POLL, READY_DEADLINE};
use crate::real::conn::command;
use crate::real::faults::clock::{ClockShift, CLOCK_FILE_ENV};
use crate::real::process::{free_port, redis_cli_binary, redis_server_binary, RedisServerArgs, NOT_FOUND};

/// One managed redis-server process.
#[derive(Debug)]
pub struct ManagedNode {
    pub(super) name: String,
    pub(super) port: u16,
    /// Arguments beyond the lab defaults (`--replicaof …`, cluster flags),
    /// reused verbatim on restart.
    pub(super) extra: Vec<String>,
    pub(super) dir: PathBuf,
    pub(super) child: Option<Child>,
    pub(super) state: NodeState,
    /// The master's port, for a replica.
    pub(super) master: Option<u16>,
    /// `extra` and `master` as the topology was built, so [`Servers::reset`](super::Topology::reset)
    /// can undo a promotion.
    pub(super) original: (Vec<String>, Option<u16>),
    /// The shift of its `CLOCK_REALTIME` (kept across restarts, as a
    /// machine's wrong clock is).
    pub(super) clock: ClockShift,
    /// The preload library that applies it.
    pub(super) preload: PathBuf,
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

    pub(super) fn spawn(&mut self) -> Result<(), String> {
        let binary = redis_server_binary().ok_or_else(|| NOT_FOUND.to_owned())?;
        let _ = std::fs::create_dir_all(&self.dir);
        let child = RedisServerArgs::new(self.port)
            // Serve SCRIPT KILL after the lab's script budget (a session's
            // runaway script is killed then) rather than after 5 s.
            .option("busy-reply-threshold", "1000")
            .extra(&self.extra)
            .command(&binary, &self.dir)
            .env("LD_PRELOAD", &self.preload)
            .env(CLOCK_FILE_ENV, self.clock.path())
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", binary.display()))?;
        crate::real::reaper::record(child.id(), self.port);
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
    pub(super) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            crate::real::reaper::forget(child.id());
        }
        self.state = NodeState::Down;
    }

    pub(super) fn signal(&self, sig: &str) -> Result<(), String> {
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

pub(super) fn start_node(
    root: &std::path::Path,
    preload: &std::path::Path,
    name: &str,
    extra: Vec<String>,
    master: Option<u16>,
) -> Result<ManagedNode, TopologyError> {
    let mut last = String::new();
    for _ in 0..5 {
        let port = free_port();
        let dir = root.join(format!("{name}-{port}"));
        std::fs::create_dir_all(&dir).map_err(|e| TopologyError::Start(format!("{}: {e}", dir.display())))?;
        let clock = ClockShift::create(&dir.join("clock"))
            .map_err(|e| TopologyError::Start(format!("creating {name}'s clock file: {e}")))?;
        let mut node = ManagedNode {
            name: name.to_owned(),
            port,
            extra: extra.clone(),
            dir,
            clock,
            preload: preload.to_owned(),
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

pub(super) fn expect_ok(port: u16, argv: &[&str]) -> Result<(), String> {
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

pub(super) fn wait_until(what: &str, mut ok: impl FnMut() -> bool) -> Result<(), TopologyError> {
    let deadline = Instant::now() + READY_DEADLINE;
    while !ok() {
        if Instant::now() >= deadline {
            return Err(TopologyError::Start(format!("timed out waiting for {what}")));
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

pub(super) fn wait_link_up(replica_port: u16) -> Result<(), TopologyError> {
    wait_until("the replica's master_link_status:up", || {
        info_field(replica_port, "replication", "master_link_status").as_deref() == Some("up")
    })
}

pub(super) fn form_cluster(nodes: &[ManagedNode]) -> Result<(), TopologyError> {
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
