//! Worlds whose nodes are an etcd-style or ZooKeeper-style cluster.
//!
//! With `Topology::Etcd` or `Topology::Zk` every node is a member of one
//! [`Service`](crate::service::Service): a request reaching a member goes to
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
//! [`LockObserver`]: crate::observe::LockObserver

use super::queue::Item;
use super::{text, World};
use crate::actor::Actor;
use crate::client::Argv;
use crate::observe::{Cause, Seen};
use crate::reply::Reply;
use crate::service::{Answer, Happened, Request};
use crate::trace::EventKind;

impl World {
    /// Every member's local time now.
    fn member_clocks(&self) -> Vec<u64> {
        self.nodes.iter().map(|s| s.clock.local(self.now)).collect()
    }

    /// A request reached a live member over a whole link.
    pub(super) fn at_member(&mut self, c: u32, node: u32, req: u64, commands: Vec<Argv>) {
        // What ran out before this request arrived did so on its own.
        self.service_advance();
        let clocks = self.member_clocks();
        let Some(svc) = self.service.as_mut() else { return };
        let answer = match commands.as_slice() {
            [argv] => svc.execute(
                &clocks,
                Request {
                    member: node,
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
                self.service_effects(Cause::Command(c));
                self.reply_to(c, node, req, vec![reply]);
            }
            Answer::Later => {
                self.blocked_cmds.insert(req, text(&commands));
                self.note(Actor::Node(node), "blocked: waits until every older key is deleted");
                self.service_effects(Cause::Command(c));
            }
        }
    }

    /// Let the service expire what is due on the leader's clock.
    pub(super) fn service_advance(&mut self) {
        let clocks = self.member_clocks();
        if let Some(svc) = self.service.as_mut() {
            svc.advance(&clocks);
        }
        self.service_effects(Cause::Expiry);
    }

    /// A member went down or came back, or a member-to-member link changed.
    pub(super) fn service_membership(&mut self, change: impl FnOnce(&mut crate::service::Service, &[u64])) {
        let clocks = self.member_clocks();
        if let Some(svc) = self.service.as_mut() {
            change(svc, &clocks);
        }
        self.service_effects(Cause::Promotion);
    }

    /// Turn what the service did into events and answers, then show the
    /// lock holders to the observer and schedule the next deadline.
    pub(super) fn service_effects(&mut self, cause: Cause) {
        let Some(svc) = self.service.as_mut() else { return };
        let happened = svc.take_happened();
        let leader = svc.quorum().leader().unwrap_or(self.master);
        let mut cause = cause;
        for h in happened {
            match h {
                Happened::Elected { member, term } => {
                    self.note(Actor::Node(member), format!("elected leader (term {term})"));
                    self.master = member;
                    self.locks.set_master(member);
                    self.deadlock_dirty = true;
                }
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
                    self.emit(
                        Actor::Node(member),
                        EventKind::Executed {
                            req,
                            client,
                            commands,
                            replies: vec![reply.clone()],
                        },
                    );
                    self.reply_to(client, member, req, vec![reply]);
                }
            }
        }
        self.observe_service(cause);
        self.schedule_service_tick();
    }

    /// Show every watched lock's holder to the observer on each member that
    /// serves the committing leader.
    fn observe_service(&mut self, cause: Cause) {
        let Some(svc) = self.service.as_ref() else { return };
        let q = svc.quorum().clone();
        let Some(leader) = q.committing_leader() else { return };
        let lead_now = self.nodes[leader as usize].clock.local(self.now);
        let members = std::iter::once(leader).chain((0..q.members()).filter(|&m| m != leader && q.reaches(m, leader)));
        let members: Vec<u32> = members.collect();
        for key in self.locks.keys().to_vec() {
            let holder = self.service.as_ref().and_then(|s| s.holder(&key));
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

    /// The next lease or session deadline, as world time on the leader's
    /// clock.
    pub(super) fn schedule_service_tick(&mut self) {
        let Some((leader, local)) = self.service.as_ref().and_then(|s| s.next_deadline()) else {
            return;
        };
        // A due deadline not yet expired is a clock's rounding: a moment
        // later it is.
        let t = self.nodes[leader as usize]
            .clock
            .when(local, self.now)
            .max(self.now + 1);
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
