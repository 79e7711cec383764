//! Nodes: executing requests, expiring keys, crashing, restarting, promotion.
//!
//! A request reaches a node only if the node is up, still the same process
//! (its incarnation) and the link is whole; the node's clock is brought to
//! the present first, so keys expire by the node's own time. After anything
//! touches a node, [`World::node_effects`] ships its replication stream and
//! updates the lock shadows. A crash loses what was in flight; a restart
//! keeps its data only with AOF; a promotion makes a replica the master
//! with whatever it had received.

use super::queue::Item;
use super::{text, World};
use crate::actor::Actor;
use crate::client::Argv;
use crate::observe::Cause;
use crate::reply::Reply;
use crate::server::{ConnId, NodeEvent, Role};
use crate::trace::{EventKind, LossReason};

impl World {
    pub(super) fn conn(&mut self, c: u32, node: u32) -> ConnId {
        let n = node as usize;
        if let Some(conn) = self.clients[c as usize].conns[n] {
            return conn;
        }
        let conn = self.nodes[n].node.connect();
        self.clients[c as usize].conns[n] = Some(conn);
        conn
    }

    pub(super) fn at_node(&mut self, c: u32, node: u32, req: u64, inc: u32, commands: Vec<Argv>) {
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
        if self.member_of(node).is_some() {
            self.at_member(c, node, req, commands);
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

    pub(super) fn reply_to(&mut self, c: u32, node: u32, req: u64, replies: Vec<Reply>) {
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
    pub(super) fn sync_node(&mut self, node: u32) {
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
    pub(super) fn node_effects(&mut self, node: u32, cause: Cause) {
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

    pub(super) fn schedule_tick(&mut self, node: u32) {
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

    pub(super) fn crash_node(&mut self, node: u32) {
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
        if self.cfg.topology.is_redlock() || self.cfg.compare.is_some() {
            self.recount_majorities();
        }
        self.service_membership(&[node], |s, clocks, m| s.set_down(clocks, m[0], true));
    }

    pub(super) fn node_up(&mut self, node: u32, keep: bool, gen: u64) {
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
        if self.member_of(node).is_some() {
            // A member comes back with its log and catches up from the
            // leader: the service's committed state is what it serves.
            self.service_membership(&[node], |s, clocks, m| s.set_down(clocks, m[0], false));
            return;
        }
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
        if self.cfg.topology.is_redlock() || self.cfg.compare.is_some() {
            self.recount_majorities();
        }
    }

    pub(super) fn promote(&mut self, r: u32) {
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
}
