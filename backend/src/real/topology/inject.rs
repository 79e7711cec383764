//! The faults a managed topology takes ([`Servers::fault`]): a node paused,
//! crashed, restarted, cut from its master or promoted; its clock stepped
//! or drifting; a client's link to it slowed or cut; and the sentinels'
//! view of a failover. Apart from starting and resetting a topology
//! because each of these is one lesson's lever, added one at a time.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use super::node::{expect_ok, wait_link_up};
use super::{NodeFault, NodeInfo, NodeRole, NodeState, Servers, TopologyError};
use crate::real::conn::public_url;
use crate::real::faults::proxy::{link_seed, LinkFault, LinkProxy, LinkStats};
use crate::real::faults::sentinel::{SentinelEvent, Sentinels};
use crate::real::process::free_port;

impl Servers {
    /// Inject a fault; the answer says what was done, for the trace.
    pub fn fault(&mut self, fault: NodeFault) -> Result<String, TopologyError> {
        let m = match self {
            Servers::External(url) => return Err(TopologyError::External(public_url(url))),
            Servers::Managed(m) => m,
        };
        let i = fault.node();
        let node = m.nodes.get_mut(i as usize).ok_or(TopologyError::NoNode(i))?;
        let name = node.name.clone();
        let f = TopologyError::Fault;
        match fault {
            NodeFault::Pause { .. } => {
                node.signal("-STOP").map_err(f)?;
                node.state = NodeState::Paused;
                Ok(format!("{name} paused (SIGSTOP)"))
            }
            NodeFault::Resume { .. } => {
                node.signal("-CONT").map_err(f)?;
                node.state = NodeState::Up;
                Ok(format!("{name} resumed (SIGCONT)"))
            }
            NodeFault::Crash { .. } => {
                node.kill();
                Ok(format!("{name} crashed (SIGKILL)"))
            }
            NodeFault::Restart { .. } => {
                node.kill();
                node.spawn().map_err(f)?;
                // Under Sentinel, a restarted old master comes back a master
                // until Sentinel converts it; nobody here waits for that.
                if node.master.is_some() && m.sentinels.is_none() {
                    wait_link_up(node.port)?;
                }
                Ok(format!("{name} restarted on port {} without its data", node.port))
            }
            NodeFault::CutReplication { .. } => {
                if node.master.is_none() {
                    return Err(f(format!("{name} is not a replica")));
                }
                let nowhere = free_port().to_string();
                expect_ok(node.port, &["REPLICAOF", "127.0.0.1", &nowhere]).map_err(f)?;
                Ok(format!(
                    "{name}: replication from its master cut (now following an address where nobody listens)"
                ))
            }
            NodeFault::HealReplication { .. } => {
                let mp = node
                    .master
                    .ok_or_else(|| f(format!("{name} is not a replica")))?
                    .to_string();
                expect_ok(node.port, &["REPLICAOF", "127.0.0.1", &mp]).map_err(f)?;
                Ok(format!("{name}: replication from its master restored"))
            }
            NodeFault::Promote { .. } => {
                if node.master.is_none() {
                    return Err(f(format!("{name} is already a master")));
                }
                expect_ok(node.port, &["REPLICAOF", "NO", "ONE"]).map_err(f)?;
                node.master = None;
                // Its arguments must not make a restart follow the old master.
                node.extra.clear();
                Ok(format!("{name} promoted to master (REPLICAOF NO ONE)"))
            }
            NodeFault::JumpClock { delta_ms, .. } => {
                node.clock
                    .jump(delta_ms)
                    .map_err(|e| f(format!("moving {name}'s clock: {e}")))?;
                Ok(format!(
                    "{name}'s clock jumps {delta_ms:+} ms (now {:+} ms off)",
                    node.clock.shift_ms()
                ))
            }
            NodeFault::DriftClock { ppm, .. } => {
                node.clock
                    .set_drift(ppm)
                    .map_err(|e| f(format!("setting {name}'s clock drift: {e}")))?;
                Ok(format!("{name}'s clock drifts {:+} ppm", node.clock.drift_ppm()))
            }
        }
    }

    /// Step node `node`'s clock by `delta_ms` (an NTP step, a hand-set
    /// date): its `TIME` and its key expiry move at once. The answer says
    /// what was done, for the trace.
    pub fn shift_clock(&mut self, node: u32, delta_ms: i64) -> Result<String, TopologyError> {
        self.fault(NodeFault::JumpClock { node, delta_ms })
    }

    /// Make node `node`'s clock run `ppm` parts per million fast (negative:
    /// slow) from now on, keeping what it gained so far.
    pub fn drift_clock(&mut self, node: u32, ppm: i64) -> Result<String, TopologyError> {
        self.fault(NodeFault::DriftClock { node, ppm })
    }

    /// How far node `node`'s clock is from the real one, in ms.
    pub fn clock_shift_ms(&self, node: u32) -> Result<i64, TopologyError> {
        let m = self.managed_ref()?;
        let n = m.nodes.get(node as usize).ok_or(TopologyError::NoNode(node))?;
        Ok(n.clock.shift_ms())
    }

    /// The address client `client` reaches node `node` at: the node itself
    /// seen through its own link proxy (started here, plain, if it is not
    /// yet), so [`set_link`](Servers::set_link) can slow it later. A client
    /// that never needs a faulty link connects to the node directly and
    /// pays nothing.
    pub fn link_url(&mut self, client: &str, node: u32) -> Result<String, TopologyError> {
        Ok(self.link(client, node)?.url())
    }

    /// Make the link from client `client` to node `node` slow or lossy
    /// (`LinkFault::default()`: a plain link again). Applies to the next
    /// message on every connection through [`link_url`](Servers::link_url).
    pub fn set_link(&mut self, client: &str, node: u32, fault: LinkFault) -> Result<String, TopologyError> {
        let (name, proxy) = {
            let name = self
                .managed_ref()?
                .nodes
                .get(node as usize)
                .ok_or(TopologyError::NoNode(node))?
                .name
                .clone();
            (name, self.link(client, node)?)
        };
        proxy.set(fault);
        Ok(proxy.describe(client, &name))
    }

    /// What went through the link from `client` to `node`, if it has a proxy.
    pub fn link_stats(&self, client: &str, node: u32) -> Option<LinkStats> {
        let m = self.managed_ref().ok()?;
        m.links.get(&(client.to_owned(), node)).map(LinkProxy::stats)
    }

    pub(super) fn link(&mut self, client: &str, node: u32) -> Result<&LinkProxy, TopologyError> {
        let m = self.managed_mut()?;
        let port = m.nodes.get(node as usize).ok_or(TopologyError::NoNode(node))?.port;
        let key = (client.to_owned(), node);
        if !m.links.contains_key(&key) {
            let seed = link_seed(client, node);
            let proxy = LinkProxy::start(
                SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
                LinkFault::default(),
                seed,
            )
            .map_err(|e| TopologyError::Fault(format!("starting a link proxy: {e}")))?;
            m.links.insert(key.clone(), proxy);
        }
        Ok(&m.links[&key])
    }

    pub(super) fn sentinels(&self) -> Result<&Sentinels, TopologyError> {
        let m = self.managed_ref()?;
        m.sentinels
            .as_ref()
            .ok_or_else(|| TopologyError::Fault(format!("a {} topology has no sentinels", m.kind.as_str())))
    }

    /// The sentinels of a `sentinel` topology, as nodes the API can list
    /// (empty for every other kind). [`reset`](Servers::reset) starts
    /// fresh sentinels, on new ports.
    pub fn sentinel_nodes(&self) -> Vec<NodeInfo> {
        let Ok(s) = self.sentinels() else {
            return Vec::new();
        };
        s.ports()
            .into_iter()
            .zip(s.pids())
            .enumerate()
            .map(|(i, (port, pid))| NodeInfo {
                name: format!("s{}", i + 1),
                url: format!("redis://127.0.0.1:{port}/"),
                port,
                role: NodeRole::Sentinel,
                state: if pid.is_some() { NodeState::Up } else { NodeState::Down },
            })
            .collect()
    }

    /// Every event the sentinels published since they started (since the
    /// last [`reset`](Servers::reset)): `+sdown`, `+odown`,
    /// `+failover-end`, `+switch-master`, …, in the order read.
    pub fn sentinel_events(&self) -> Vec<SentinelEvent> {
        self.sentinels().map(Sentinels::events).unwrap_or_default()
    }

    /// The master as a client library finds it: through the sentinels
    /// (`SENTINEL GET-MASTER-ADDR-BY-NAME`, then `ROLE` on the answer).
    pub fn discover_master(&self) -> Result<SocketAddr, TopologyError> {
        self.sentinels()?.discover_master().map_err(TopologyError::Fault)
    }

    /// Ask Sentinel to fail over now (`SENTINEL FAILOVER`): Sentinel's
    /// own promotion, without waiting for the master to look down.
    pub fn sentinel_failover(&mut self) -> Result<String, TopologyError> {
        self.sentinels()?.force_failover().map_err(TopologyError::Fault)?;
        Ok("Sentinel asked to fail over (SENTINEL FAILOVER)".into())
    }

    /// Wait (at most `within`) for the sentinels to announce a new master
    /// (`+switch-master`) among their events from index `since` on, as they
    /// do after a crash or pause of the master, or
    /// [`sentinel_failover`](Servers::sentinel_failover); then record the
    /// new roles. The answer says which node is master now.
    pub fn await_failover(&mut self, since: usize, within: Duration) -> Result<String, TopologyError> {
        let event = self
            .sentinels()?
            .wait_event("+switch-master", since, within)
            .ok_or_else(|| TopologyError::Fault(format!("Sentinel did not fail over within {within:?}")))?;
        let master = self.sentinels()?.master_port();
        let m = self.managed_mut()?;
        for node in &mut m.nodes {
            if node.port == master {
                node.master = None;
                node.extra.clear();
            } else {
                node.master = Some(master);
            }
        }
        let name = m.nodes.iter().find(|n| n.port == master).map(|n| n.name.clone());
        Ok(format!(
            "Sentinel failed over: {} is master now ({})",
            name.unwrap_or_else(|| format!("port {master}")),
            event.text()
        ))
    }
}
