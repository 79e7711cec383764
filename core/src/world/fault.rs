//! Faults: the things that go wrong, on purpose.
//!
//! Each lesson's failure story is one or two of these at the right moment:
//! a client paused by its garbage collector past its lease (lessons 05, 13,
//! 22), a client crashing between `SETNX` and `EXPIRE` (03), a master dying
//! before it replicated the lock (15), a node restarting without its data
//! (21), a clock jumping (20). A fault is scheduled at a world time or at a
//! step of the trace ([`At`]); the explorer uses steps, because "right after
//! the node executed A's SET" is a point in the story, not in milliseconds.
//!
//! The `impl World` at the end carries a fault out: it checks the names a
//! fault uses when it is scheduled (a wrong one is a [`WorldError`]), and
//! when it fires hands it to the part of the world it hits (a client, a
//! node, a link, a clock).

use serde::{Deserialize, Serialize};

use super::link::{self, LinkConfig};
use super::{Clock, Item, Persistence, World, WorldError};
use crate::observe::Cause;
use crate::trace::Names;
use crate::trace::{Actor, EventKind};

/// One end of a link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    Client(String),
    Node(u32),
    Resource,
}

/// Whose clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockOf {
    Client(String),
    Node(u32),
}

/// A fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Fault {
    /// Stop the client's process (a stop-the-world GC, a VM migration, a
    /// `SIGSTOP`) for `ms` of real time, or until `resume_client`. Messages
    /// already on the wire keep going; what arrives waits in its socket.
    PauseClient {
        client: String,
        #[serde(default)]
        ms: Option<u64>,
    },
    ResumeClient {
        client: String,
    },
    /// Kill the client. Its locks stay until their TTL — if they have one.
    CrashClient {
        client: String,
    },
    /// Kill a node; it stays down. Requests to it are lost (clients time
    /// out), replication batches it had not yet sent are lost.
    CrashNode {
        node: u32,
    },
    /// Kill a node (if up) and bring it back after `down_ms`, with its data
    /// (`keep_data: true`, AOF) or empty (`false`), or as the world's
    /// persistence setting says (`null`).
    RestartNode {
        node: u32,
        #[serde(default)]
        down_ms: u64,
        #[serde(default)]
        keep_data: Option<bool>,
    },
    /// Make a replica the master, with whatever it has received so far.
    PromoteReplica {
        node: u32,
    },
    /// Sentinel's failover: crash the master, promote the replica that
    /// received the most (or `node`).
    Failover {
        #[serde(default)]
        node: Option<u32>,
    },
    /// Partition two endpoints (client–node, client–resource, or
    /// master–replica).
    CutLink {
        a: Endpoint,
        b: Endpoint,
    },
    HealLink {
        a: Endpoint,
        b: Endpoint,
    },
    /// Change a client–node or client–resource link's behaviour (a slow
    /// node, a lossy network).
    SetLink {
        a: Endpoint,
        b: Endpoint,
        config: LinkConfig,
    },
    /// Step a clock by `delta_ms` (negative: backwards).
    JumpClock {
        of: ClockOf,
        delta_ms: i64,
    },
    /// Make a clock run fast or slow from now on.
    SetDrift {
        of: ClockOf,
        ppm: i64,
    },
}

/// When a scheduled fault happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// At this world time (ms).
    Time(u64),
    /// Right after the trace has this many events (at the first moment
    /// between two deliveries when it has at least that many).
    Step(u64),
}

/// A fault and its moment, as a scenario lists them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledFault {
    pub at: At,
    pub fault: Fault,
}

fn endpoint(e: &Endpoint, names: &Names) -> String {
    match e {
        Endpoint::Client(c) => c.clone(),
        Endpoint::Node(n) => names.node(*n).to_owned(),
        Endpoint::Resource => "resource".to_owned(),
    }
}

fn clock_of(c: &ClockOf, names: &Names) -> String {
    match c {
        ClockOf::Client(c) => c.clone(),
        ClockOf::Node(n) => names.node(*n).to_owned(),
    }
}

fn endpoint_zh(e: &Endpoint, names: &Names) -> String {
    match e {
        Endpoint::Resource => "受保护资源".to_owned(),
        other => endpoint(other, names),
    }
}

impl Fault {
    /// [`Fault::describe`] in Chinese (node and client names as they are).
    pub fn describe_zh(&self, names: &Names) -> String {
        let link = |a: &Endpoint, b: &Endpoint| format!("{} ↔ {}", endpoint_zh(a, names), endpoint_zh(b, names));
        match self {
            Fault::PauseClient { client, ms: Some(ms) } => format!("暂停 {client} {ms} ms（GC）"),
            Fault::PauseClient { client, ms: None } => format!("暂停 {client}"),
            Fault::ResumeClient { client } => format!("恢复 {client}"),
            Fault::CrashClient { client } => format!("{client} 崩溃"),
            Fault::CrashNode { node } => format!("{} 宕机", names.node(*node)),
            Fault::RestartNode {
                node,
                down_ms,
                keep_data,
            } => format!(
                "{} 宕机 {down_ms} ms 后重启{}",
                names.node(*node),
                match keep_data {
                    Some(true) => "，保留数据",
                    Some(false) => "，数据丢失",
                    None => "",
                }
            ),
            Fault::PromoteReplica { node } => format!("提升 {} 为主节点", names.node(*node)),
            Fault::Failover { node: Some(n) } => format!("故障切换到 {}", names.node(*n)),
            Fault::Failover { node: None } => "故障切换（主节点宕机，提升数据最全的从节点）".to_owned(),
            Fault::CutLink { a, b } => format!("断开 {}", link(a, b)),
            Fault::HealLink { a, b } => format!("恢复 {}", link(a, b)),
            Fault::SetLink { a, b, config } => format!(
                "链路 {}：{} ms ± {} ms，丢失 {}‰ 的回复",
                link(a, b),
                config.latency_ms,
                config.jitter_ms,
                config.drop_reply_permille
            ),
            Fault::JumpClock { of, delta_ms } => format!("{} 的时钟跳变 {delta_ms:+} ms", clock_of(of, names)),
            Fault::SetDrift { of, ppm } => format!("{} 的时钟漂移 {ppm:+} ppm", clock_of(of, names)),
        }
    }

    /// A short sentence for transcripts.
    pub fn describe(&self, names: &Names) -> String {
        match self {
            Fault::PauseClient { client, ms: Some(ms) } => format!("pause {client} for {ms} ms (GC)"),
            Fault::PauseClient { client, ms: None } => format!("pause {client}"),
            Fault::ResumeClient { client } => format!("resume {client}"),
            Fault::CrashClient { client } => format!("crash {client}"),
            Fault::CrashNode { node } => format!("crash {}", names.node(*node)),
            Fault::RestartNode {
                node,
                down_ms,
                keep_data,
            } => format!(
                "restart {} after {down_ms} ms{}",
                names.node(*node),
                match keep_data {
                    Some(true) => " with its data",
                    Some(false) => " without its data",
                    None => "",
                }
            ),
            Fault::PromoteReplica { node } => format!("promote {}", names.node(*node)),
            Fault::Failover { node: Some(n) } => format!("failover to {}", names.node(*n)),
            Fault::Failover { node: None } => "failover (master dies, best replica promoted)".to_owned(),
            Fault::CutLink { a, b } => format!("cut {} ↔ {}", endpoint(a, names), endpoint(b, names)),
            Fault::HealLink { a, b } => format!("heal {} ↔ {}", endpoint(a, names), endpoint(b, names)),
            Fault::SetLink { a, b, config } => format!(
                "link {} ↔ {}: {} ms ± {} ms, {}‰ replies lost",
                endpoint(a, names),
                endpoint(b, names),
                config.latency_ms,
                config.jitter_ms,
                config.drop_reply_permille
            ),
            Fault::JumpClock { of, delta_ms } => format!("{}'s clock jumps {delta_ms:+} ms", clock_of(of, names)),
            Fault::SetDrift { of, ppm } => format!("{}'s clock drifts {ppm:+} ppm", clock_of(of, names)),
        }
    }
}

impl World {
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

    pub(super) fn validate_fault(&self, f: &Fault) -> Result<(), WorldError> {
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

    pub(super) fn apply_fault(&mut self, f: Fault) {
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
}
