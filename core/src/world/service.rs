//! Nodes that are members of an etcd-style or ZooKeeper-style cluster.
//!
//! With `Topology::Etcd` or `Topology::Zk` every node is a member of one
//! [`Service`](crate::service::Service); a `Topology::Compare` world has an
//! etcd group and a ZooKeeper group next to its Redis nodes, each a
//! [`Group`] of consecutive nodes (member `m` is node `first + m`). A
//! request reaching a member goes to
//! the service instead of a Redis keyspace, member crashes and member-to-
//! member cuts go to its quorum, and the service's own doings (an election,
//! a lease or session running out, a watch firing, a blocked `LOCK`
//! granted) become trace events here. Everything else — links, pauses,
//! client clocks, the resource, beliefs — is the world's as for Redis, so
//! the same faults mean the same thing against every lock service.
//!
//! The lock bars come from the service's committed state: for each watched
//! lock, its holder (the oldest key under `lock/`, the lowest sequential
//! znode under the lock path) is shown to the [`LockObserver`] on every
//! member that serves the committing leader, the leader first; the holder's
//! lease or session deadline is its deadline. A change of holder is shown
//! as the old one's removal (by whatever removed it: an expiry, a client's
//! `UNLOCK`) and then the new one's grant, owned by the client whose
//! request created its key — so the invariant monitor numbers holders and
//! sees wrong releases exactly as on Redis.
//!
//! Every election — the first leader included, at time 0 — is an
//! [`EventKind::Elected`] on the new leader's lane: the timeline's leader
//! marker follows them.
//!
//! [`LockObserver`]: crate::observe::LockObserver

use super::queue::Item;
use super::{text, World};
use crate::actor::Actor;
use crate::client::Argv;
use crate::observe::{Cause, Seen};
use crate::reply::Reply;
use crate::service::{Answer, Happened, Request, Service};
use crate::trace::EventKind;

/// A lock service whose members are nodes `first..first + members`.
#[derive(Clone, Debug)]
pub(super) struct Group {
    pub(super) first: u32,
    pub(super) svc: Service,
}

impl World {
    /// The service group node `node` is a member of: (group, member).
    pub(super) fn member_of(&self, node: u32) -> Option<(usize, u32)> {
        self.services.iter().enumerate().find_map(|(g, s)| {
            let m = node.checked_sub(s.first)?;
            (m < s.svc.quorum().members()).then_some((g, m))
        })
    }

    /// Every member's local time now, for group `g`.
    fn member_clocks(&self, g: usize) -> Vec<u64> {
        let s = &self.services[g];
        (0..s.svc.quorum().members())
            .map(|m| self.nodes[(s.first + m) as usize].clock.local(self.now))
            .collect()
    }

    /// The first leader of every group, at time 0.
    pub(super) fn announce_leaders(&mut self) {
        for g in 0..self.services.len() {
            let (first, q) = (self.services[g].first, self.services[g].svc.quorum());
            if let Some(l) = q.leader() {
                let term = q.term();
                self.emit(Actor::Node(first + l), EventKind::Elected { term });
            }
        }
    }

    /// A request reached a live member over a whole link.
    pub(super) fn at_member(&mut self, c: u32, node: u32, req: u64, commands: Vec<Argv>) {
        let Some((g, member)) = self.member_of(node) else {
            return;
        };
        // What ran out before this request arrived did so on its own.
        self.service_advance();
        let clocks = self.member_clocks(g);
        let svc = &mut self.services[g].svc;
        let answer = match commands.as_slice() {
            [argv] => svc.execute(
                &clocks,
                Request {
                    member,
                    client: c,
                    req,
                    argv,
                },
            ),
            _ => Answer::Now(Reply::Error("one command per request".into())),
        };
        match answer {
            Answer::Now(reply) => {
                self.emit(
                    Actor::Node(node),
                    EventKind::Executed {
                        req,
                        client: c,
                        commands: text(&commands),
                        replies: vec![reply.clone()],
                    },
                );
                self.service_effects(g, Cause::Command(c));
                self.reply_to(c, node, req, vec![reply]);
            }
            Answer::Later => {
                self.blocked_cmds.insert(req, text(&commands));
                self.note(Actor::Node(node), "blocked: waits until every older key is deleted");
                self.service_effects(g, Cause::Command(c));
            }
        }
    }

    /// Let every service expire what is due on its leader's clock.
    pub(super) fn service_advance(&mut self) {
        for g in 0..self.services.len() {
            let clocks = self.member_clocks(g);
            self.services[g].svc.advance(&clocks);
            self.service_effects(g, Cause::Expiry);
        }
    }

    /// Node `node` went down or came back, or the link between nodes `a`
    /// and `b` changed: `change` gets the members' numbers.
    pub(super) fn service_membership(&mut self, nodes: &[u32], change: impl FnOnce(&mut Service, &[u64], &[u32])) {
        let members: Vec<(usize, u32)> = nodes.iter().filter_map(|&n| self.member_of(n)).collect();
        let Some(&(g, _)) = members.first() else { return };
        if members.len() != nodes.len() || members.iter().any(|&(h, _)| h != g) {
            // A cut between two groups (or a Redis node) is no partition
            // of either.
            return;
        }
        let clocks = self.member_clocks(g);
        let ms: Vec<u32> = members.iter().map(|&(_, m)| m).collect();
        change(&mut self.services[g].svc, &clocks, &ms);
        self.service_effects(g, Cause::Promotion);
    }

    /// Turn what group `g` did into events and answers, then show the lock
    /// holders to the observer and schedule the next deadline.
    pub(super) fn service_effects(&mut self, g: usize, cause: Cause) {
        let first = self.services[g].first;
        let happened = self.services[g].svc.take_happened();
        let leader = self.services[g]
            .svc
            .quorum()
            .leader()
            .map_or(self.master, |l| first + l);
        let mut cause = cause;
        for h in happened {
            match h {
                Happened::Elected { member, term } => self.elected(first, first + member, term),
                Happened::Expired { what, deleted } => {
                    self.note(Actor::Node(leader), format!("{what}: deleted {}", deleted.join(", ")));
                    for key in deleted {
                        self.emit(Actor::Node(leader), EventKind::Expired { key });
                    }
                    cause = Cause::Expiry;
                }
                Happened::Watch { client, text } => self.note(Actor::Client(client), text),
                Happened::Answer {
                    client,
                    req,
                    member,
                    reply,
                } => {
                    let commands = self.blocked_cmds.remove(&req).unwrap_or_default();
                    let node = first + member;
                    self.emit(
                        Actor::Node(node),
                        EventKind::Executed {
                            req,
                            client,
                            commands,
                            replies: vec![reply.clone()],
                        },
                    );
                    self.reply_to(client, node, req, vec![reply]);
                }
            }
        }
        self.observe_service(g, cause);
        self.schedule_service_tick();
    }

    /// Node `node` leads the group starting at `first` from now on.
    fn elected(&mut self, first: u32, node: u32, term: u64) {
        self.emit(Actor::Node(node), EventKind::Elected { term });
        if self.cfg.topology.service().is_some() {
            // Every node is a member: the leader is where commands go.
            self.master = node;
            self.locks.set_master(node);
        }
        self.locks.set_group_master(first, node);
        self.deadlock_dirty = true;
    }

    /// Show every lock key group `g` guards to the observer, on each member
    /// that serves the committing leader.
    fn observe_service(&mut self, g: usize, cause: Cause) {
        let first = self.services[g].first;
        let q = self.services[g].svc.quorum().clone();
        let Some(leader) = q.committing_leader() else { return };
        let lead_now = self.nodes[(first + leader) as usize].clock.local(self.now);
        let members = std::iter::once(leader).chain((0..q.members()).filter(|&m| m != leader && q.reaches(m, leader)));
        let members: Vec<u32> = members.map(|m| first + m).collect();
        let leader = first + leader;
        let keys: Vec<String> = (self.locks.keys().iter())
            .filter(|k| self.locks.group(k).is_none_or(|kg| kg.first == first))
            .cloned()
            .collect();
        for key in keys {
            let holder = self.services[g].svc.holder(&key);
            for &m in &members {
                let old = self.locks.held(m, &key).map(|h| h.value.clone());
                let new = holder.as_ref().map(|h| h.value.as_bytes().to_vec());
                if old.is_some() && old != new {
                    let removal = if m == leader {
                        cause
                    } else {
                        Cause::Replication(cause.client())
                    };
                    let seen = self.locks.observe(m, &key, None, removal, self.now);
                    self.apply_observed(seen);
                }
                let Some(h) = &holder else { continue };
                let seen = Seen {
                    value: h.value.as_bytes().to_vec(),
                    deadline: h.deadline,
                    ttl_ms: h.deadline.map(|d| d.saturating_sub(lead_now)),
                };
                let by = if m == leader {
                    Cause::Command(h.owner)
                } else {
                    Cause::Replication(Some(h.owner))
                };
                let observed = self.locks.observe(m, &key, Some(seen), by, self.now);
                if !observed.is_empty() {
                    self.deadlock_dirty = true;
                }
                self.apply_observed(observed);
            }
        }
    }

    /// The next lease or session deadline of any group, as world time on
    /// its leader's clock.
    pub(super) fn schedule_service_tick(&mut self) {
        let due = self.services.iter().filter_map(|s| {
            let (leader, local) = s.svc.next_deadline()?;
            let node = &self.nodes[(s.first + leader) as usize];
            // A due deadline not yet expired is a clock's rounding: a
            // moment later it is.
            Some(node.clock.when(local, self.now).max(self.now + 1))
        });
        let Some(t) = due.min() else { return };
        if self.service_tick_at.is_some_and(|x| x <= t) {
            return;
        }
        self.service_tick_at = Some(t);
        self.push(t, Item::ServiceTick);
    }

    pub(super) fn service_tick(&mut self) {
        self.service_tick_at = None;
        self.service_advance();
    }
}
