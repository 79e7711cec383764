//! Carrying faults out in the simulated world.
//!
//! A fault ([`crate::fault`]) is checked when it is scheduled — the clients
//! and nodes it names must exist, or it is a [`WorldError`] — and when it
//! fires it is handed to the part of the world it hits: a client is paused,
//! resumed or crashed, a node crashed, restarted or promoted, a link cut,
//! healed or reconfigured, a clock jumped or set drifting.

use super::queue::Item;
use super::{Clock, Persistence, World, WorldError};
use crate::actor::Actor;
use crate::fault::{At, ClockOf, Endpoint, Fault};
use crate::link;
use crate::observe::Cause;
use crate::trace::EventKind;

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

    /// Is `f` a pause that does not happen: the world lets pauses land
    /// only while a client acquires ([`super::WorldConfig::pause_only_acquiring`])
    /// and this client believes it holds a lock now.
    fn spares(&self, f: &Fault) -> bool {
        let Fault::PauseClient { client, .. } = f else {
            return false;
        };
        let Ok(c) = self.client_index(client) else { return false };
        self.cfg.pause_only_acquiring
            && self
                .monitor
                .config()
                .lock_keys
                .iter()
                .any(|k| self.monitor.believes(k, c))
    }

    pub(super) fn apply_fault(&mut self, f: Fault) {
        if self.spares(&f) {
            return;
        }
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
            // Between lock-service members the cut is a partition of the
            // consensus group.
            let (x, y) = (*x, *y);
            self.service_membership(&[x, y], |s, clocks, m| s.set_cut(clocks, m[0], m[1], cut_repl));
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
                // A lease or session runs out by the leader's clock.
                self.service_tick_at = None;
                self.service_advance();
            }
        }
    }
}
