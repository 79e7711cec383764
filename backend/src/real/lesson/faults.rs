//! Faults done to real processes: each kind of fault the real way
//! (SIGSTOP, SIGKILL, a restart without persistence, cut replication, a
//! shifted clock), and a Sentinel failover on the `sentinel` topology.

use locklab_core::link::LinkConfig;

use super::programs::PAUSED_FOR_GOOD;
use super::*;
use crate::real::faults::proxy::LinkFault;

/// How long Sentinel may take to fail over: its down-after and election
/// take ~2–3 s here (`real/faults/sentinel.rs`); a loaded machine gets
/// ample margin, and a failover that never comes is an error, not a hang.
pub(super) const SENTINEL_FAILOVER_WITHIN: Duration = Duration::from_secs(60);

impl RealLessonRun {
    /// A failover on the `sentinel` topology is Sentinel's own: the master
    /// is killed, the sentinels see it down, agree and promote the replica
    /// (`+sdown`, `+odown`, …, `+switch-master`, their events put on the
    /// timeline), and the clients find the new master by asking Sentinel,
    /// as client libraries do. It takes seconds of wall time where the
    /// lesson's failover is an instant (lesson time stands still, as for
    /// every fault).
    /// (The other topologies keep the lab's fast path: SIGKILL and
    /// `REPLICAOF NO ONE` at once.)
    pub(super) fn sentinel_failover(
        &mut self,
        env: &mut RealEnv<'_>,
        asked: Option<u32>,
    ) -> Result<Option<String>, String> {
        let started = Instant::now();
        let since = env.topology.sentinel_events().len();
        let old = self.master;
        let infos = env.topology.nodes();
        let name = |i: u32| infos.get(i as usize).map_or("?", |n| n.name.as_str()).to_owned();
        let killed = env
            .topology
            .fault(topology::NodeFault::Crash { node: old })
            .map_err(|e| e.to_string())?;
        env.session.note_world(killed);
        env.session.forget_node(old);
        let switched = env
            .topology
            .await_failover(since, SENTINEL_FAILOVER_WITHIN)
            .map_err(|e| e.to_string())?;
        for e in env.topology.sentinel_events().iter().skip(since) {
            env.session.record(None, Actor::World, e.to_event_kind());
        }
        env.session.note_world(switched);
        let found = env.topology.discover_master().map_err(|e| e.to_string())?;
        let target = infos
            .iter()
            .position(|n| n.port == found.port())
            .ok_or_else(|| format!("Sentinel names {found} as master, which is not a node of this topology"))?
            as u32;
        // Sentinel's promotion ends with `CLIENT KILL TYPE normal` on the
        // new master (sentinelSendSlaveOf): every client connection to it
        // is closed, and clients reconnect, as libraries do.
        env.session.forget_node(target);
        self.master = target;
        self.locks.set_master(target);
        self.held_replication = None;
        // Lesson time stands still meanwhile: the caller freezes what any
        // fault spends.
        let waited = started.elapsed();
        let mut note = format!(
            "SIGKILL to {}; Sentinel saw it down and promoted {} (+switch-master after {} ms of wall time, not counted as lesson time); the clients found {} by asking Sentinel",
            name(old),
            name(target),
            waited.as_millis(),
            name(target)
        );
        if let Some(asked) = asked.filter(|&a| a != target) {
            note.push_str(&format!(" (the lesson named {}: Sentinel chooses)", name(asked)));
        }
        Ok(Some(note))
    }

    /// Carry out a fault on the real topology. `Some(note)` when the real
    /// fault differs from the simulator's in a way the transcript shows.
    // long: one arm per kind of fault, each the real processes' way of doing it
    pub(super) fn fault(&mut self, env: &mut RealEnv<'_>, fault: &Fault) -> Result<Option<String>, String> {
        let topo = |env: &mut RealEnv<'_>, f: topology::NodeFault| -> Result<String, String> {
            let text = env.topology.fault(f).map_err(|e| e.to_string())?;
            env.session.note_world(text.clone());
            Ok(text)
        };
        match fault {
            // A client at the console simply sends nothing: the lesson's
            // own waits are the pause. A client's program stops handling
            // anything until the pause ends (its timers fire late).
            Fault::PauseClient { client, ms } => {
                let until = Instant::now() + ms.map_or(PAUSED_FOR_GOOD, |ms| self.wall(ms));
                for p in self.programs.iter_mut().flatten().filter(|p| &p.client == client) {
                    p.paused_until = Some(until);
                }
                Ok(None)
            }
            Fault::ResumeClient { client } => {
                let now = Instant::now();
                for p in self.programs.iter_mut().flatten().filter(|p| &p.client == client) {
                    p.paused_until = p.paused_until.map(|t| t.min(now));
                }
                Ok(None)
            }
            Fault::CrashClient { client } => {
                self.crashed.insert(client.clone());
                let cid = env.session.client(client).map_err(|e| e.to_string())?;
                for p in self.programs.iter_mut().flatten().filter(|p| p.cid == cid) {
                    p.done = true;
                }
                let held: Vec<String> = self
                    .locks
                    .keys()
                    .iter()
                    .filter(|k| self.monitor.believes(k, cid))
                    .cloned()
                    .collect();
                for k in held {
                    self.belief(env, cid, &k, false);
                }
                Ok(None)
            }
            Fault::SetLink { a, b, config } => {
                let ((Endpoint::Client(c), Endpoint::Node(n)) | (Endpoint::Node(n), Endpoint::Client(c))) = (a, b)
                else {
                    return Ok(None);
                };
                if config.drop_reply_permille >= 1000 {
                    self.deaf.insert(c.clone());
                } else {
                    self.deaf.remove(c);
                }
                self.delay_link(env, c, *n, config)
            }
            Fault::CrashNode { node } => {
                topo(env, topology::NodeFault::Crash { node: *node })?;
                env.session.forget_node(*node);
                Ok(None)
            }
            Fault::RestartNode { node, down_ms, .. } => {
                topo(env, topology::NodeFault::Crash { node: *node })?;
                std::thread::sleep(self.wall(*down_ms));
                topo(env, topology::NodeFault::Restart { node: *node })?;
                env.session.forget_node(*node);
                // Its data is gone: say so in the trace.
                let observed = self.locks.forget_node(env.session, *node);
                self.judge(env, observed);
                Ok(Some(format!(
                    "restarted the process on the same port after {} ms, empty (no persistence)",
                    down_ms / self.factor
                )))
            }
            // A node's wall clock really moves: the lab's clock-shift
            // preload (real/faults/clock.rs) offsets CLOCK_REALTIME in that
            // redis-server alone. The jump is lesson time, so it is
            // compressed like the TTLs it is meant to outrun.
            Fault::JumpClock {
                of: ClockOf::Node(node),
                delta_ms,
            } => {
                let wall = delta_ms / self.factor.max(1) as i64;
                topo(
                    env,
                    topology::NodeFault::JumpClock {
                        node: *node,
                        delta_ms: wall,
                    },
                )?;
                Ok((self.factor > 1).then(|| {
                    format!(
                        "the node's CLOCK_REALTIME jumped {wall:+} ms ({delta_ms:+} ms of lesson time at {}×)",
                        self.factor
                    )
                }))
            }
            // Drift is a rate: the same at any time compression.
            Fault::SetDrift {
                of: ClockOf::Node(node),
                ppm,
            } => {
                topo(env, topology::NodeFault::DriftClock { node: *node, ppm: *ppm })?;
                Ok(None)
            }
            Fault::PromoteReplica { node } => {
                topo(env, topology::NodeFault::Promote { node: *node })?;
                self.master = *node;
                self.locks.set_master(*node);
                Ok(None)
            }
            Fault::Failover { node } if env.topology.kind() == Some(TopologyKind::Sentinel) => {
                self.sentinel_failover(env, *node)
            }
            Fault::Failover { node } => {
                let infos = env.topology.nodes();
                let target = node
                    .or_else(|| infos.iter().position(|n| n.role == NodeRole::Replica).map(|i| i as u32))
                    .ok_or("no replica to fail over to")?;
                if target as usize >= infos.len() || target == self.master {
                    return Err(format!("cannot fail over to node {target}"));
                }
                let old = self.master;
                topo(env, topology::NodeFault::Crash { node: old })?;
                env.session.forget_node(old);
                topo(env, topology::NodeFault::Promote { node: target })?;
                self.master = target;
                self.locks.set_master(target);
                self.held_replication = None;
                let name = |i: u32| infos.get(i as usize).map_or("?", |n| n.name.as_str()).to_owned();
                Ok(Some(format!(
                    "SIGKILL to {} and REPLICAOF NO ONE on {}; commands without a node now go to {}",
                    name(old),
                    name(target),
                    name(target)
                )))
            }
            Fault::CutLink { a, b } | Fault::HealLink { a, b } => {
                let heal = matches!(fault, Fault::HealLink { .. });
                match (a, b) {
                    (Endpoint::Node(x), Endpoint::Node(y)) => {
                        let infos = env.topology.nodes();
                        let replica = [*x, *y]
                            .into_iter()
                            .find(|&n| infos.get(n as usize).is_some_and(|i| i.role == NodeRole::Replica))
                            .ok_or("neither node is a replica: only replication links between nodes can be cut")?;
                        if heal {
                            topo(env, topology::NodeFault::HealReplication { node: replica })?;
                        } else {
                            topo(env, topology::NodeFault::CutReplication { node: replica })?;
                        }
                        Ok(None)
                    }
                    (Endpoint::Client(c), Endpoint::Node(n)) | (Endpoint::Node(n), Endpoint::Client(c)) => {
                        if heal {
                            self.cut.remove(&(c.clone(), *n));
                        } else {
                            self.cut.insert((c.clone(), *n));
                        }
                        Ok(None)
                    }
                    _ => Err("only node–node and client–node links can be cut on a real run".into()),
                }
            }
            other => Err(format!("a real run cannot inject {other:?}")),
        }
    }
}

impl RealLessonRun {
    /// A slow link, for real: the client's connections to the node go
    /// through a delaying proxy of the session's
    /// ([`crate::real::session::Session::set_link`]).
    /// The simulator's default link (1 ms, up to 2 ms of jitter) stands
    /// for the network as it is: set back to it, the proxy adds nothing.
    /// The delay is lesson time, compressed like every TTL of the run.
    /// Lost replies are the runner's `deaf` clients, not the proxy's.
    fn delay_link(
        &mut self,
        env: &mut RealEnv<'_>,
        client: &str,
        node: u32,
        config: &LinkConfig,
    ) -> Result<Option<String>, String> {
        let plain = LinkConfig::default();
        let delays = (config.latency_ms, config.jitter_ms) != (plain.latency_ms, plain.jitter_ms);
        if !delays && !env.session.has_delay(client, node) {
            return Ok(None);
        }
        let factor = self.factor.max(1);
        let fault = LinkFault {
            latency_ms: if delays { config.latency_ms / factor } else { 0 },
            jitter_ms: if delays { config.jitter_ms / factor } else { 0 },
            ..LinkFault::default()
        };
        let note = env.session.set_link(client, node, fault).map_err(|e| e.to_string())?;
        Ok(Some(match (delays, factor) {
            (true, f) if f > 1 => format!("{note}: {} ms of lesson time at {f}×", config.latency_ms),
            _ => note,
        }))
    }
}

/// Lesson time a fault itself lasts (a restart's `down_ms`): not frozen.
pub(super) fn fault_wait(f: &Fault) -> u64 {
    match f {
        Fault::RestartNode { down_ms, .. } => *down_ms,
        _ => 0,
    }
}
