//! Client processes: running their programs, their requests and beliefs.
//!
//! A client is a [`Machine`](crate::client::Machine) fed inputs (start,
//! a timer, a reply, a failed request) and answering with actions (send,
//! set a timer, write to the resource, "I hold the lock"). Its timers run on
//! *its* clock, so a drifting or jumped client clock moves its deadlines;
//! a paused client queues its inputs, a crashed one loses them and drops
//! its connections, which is what lets a lock outlive its owner.

use super::monitoring::OngoingKind;
use super::queue::Item;
use super::{text, Pending, World};
use crate::actor::Actor;
use crate::client::{host, Argv, Ctx, Input, ProgramHost};
use crate::server::ConnId;
use crate::trace::{EventKind, LossReason};

impl World {
    pub(super) fn client_item(&mut self, c: u32, item: Item) {
        let ci = c as usize;
        if self.clients[ci].crashed {
            return;
        }
        if self.clients[ci].paused {
            self.clients[ci].inbox.push(item);
            return;
        }
        match item {
            Item::Start { machine, exits, .. } => {
                let slot = &mut self.clients[ci];
                // A new program must not receive the old one's timers or
                // replies: their tags would mean something else to it.
                slot.timers.clear();
                slot.pending.retain(|_, p| p.manual);
                slot.machine = Some(*machine);
                slot.exits = exits;
                slot.done = false;
                self.drive(c, Input::Start);
            }
            Item::Timer { tag, gen, .. } => {
                let slot = &mut self.clients[ci];
                if slot.timers.get(&tag).map(|t| t.0) == Some(gen) {
                    slot.timers.remove(&tag);
                    self.drive(c, Input::Timer { tag });
                }
            }
            Item::Timeout { req, gen, .. } => {
                let slot = &mut self.clients[ci];
                let matches = slot
                    .pending
                    .get(&req)
                    .is_some_and(|p| p.timeout.map(|t| t.0) == Some(gen));
                if matches {
                    if let Some(p) = slot.pending.remove(&req) {
                        self.emit(Actor::Client(c), EventKind::TimedOut { req, node: p.node });
                        if !p.manual {
                            self.drive(c, Input::Failed { tag: p.tag });
                        }
                    }
                }
            }
            Item::AtClient { node, req, replies, .. } => {
                if self.clients[ci].links[node as usize].cut {
                    self.emit(
                        Actor::Client(c),
                        EventKind::Lost {
                            req,
                            client: c,
                            node,
                            reason: LossReason::LinkCut,
                        },
                    );
                    return;
                }
                let Some(p) = self.clients[ci].pending.remove(&req) else {
                    return;
                };
                self.emit(
                    Actor::Client(c),
                    EventKind::Received {
                        req,
                        node,
                        replies: replies.clone(),
                    },
                );
                if !p.manual {
                    self.drive(c, Input::Reply { tag: p.tag, replies });
                }
            }
            _ => {}
        }
    }

    fn drive(&mut self, c: u32, input: Input) {
        let nodes = self.nodes.len() as u32;
        let now = self.now;
        let slot = &mut self.clients[c as usize];
        let Some(mut machine) = slot.machine.take() else {
            return;
        };
        let mut out = Vec::new();
        {
            let local = slot.clock.local(now);
            let name = self.names.clients[c as usize].as_str();
            let mut cx = Ctx::new(local, &mut slot.rng, name, nodes, &mut out);
            machine.handle(&mut cx, input);
        }
        slot.machine = Some(machine);
        for a in out {
            let Ok(()) = host::apply(self, &mut { c }, a);
        }
    }

    pub(super) fn send_request(
        &mut self,
        c: u32,
        node: u32,
        commands: Vec<Argv>,
        tag: u32,
        manual: bool,
        timeout_ms: Option<u64>,
    ) -> u64 {
        let req = self.next_req;
        self.next_req += 1;
        self.emit(
            Actor::Client(c),
            EventKind::Sent {
                req,
                node,
                commands: text(&commands),
            },
        );
        let ci = c as usize;
        let now = self.now;
        let timeout = timeout_ms.map(|ms| {
            let slot = &mut self.clients[ci];
            slot.gen += 1;
            (slot.gen, slot.clock.local(now).saturating_add(ms))
        });
        if let Some((gen, due)) = timeout {
            let t = self.clients[ci].clock.when(due, now);
            self.push(t, Item::Timeout { client: c, req, gen });
        }
        self.clients[ci].pending.insert(
            req,
            Pending {
                tag,
                node,
                manual,
                timeout,
            },
        );
        let link = &mut self.clients[ci].links[node as usize];
        if link.cut {
            self.emit(
                Actor::Client(c),
                EventKind::Lost {
                    req,
                    client: c,
                    node,
                    reason: LossReason::LinkCut,
                },
            );
            return req;
        }
        let t = link.send_time(now, &mut self.net);
        let inc = self.nodes[node as usize].inc;
        self.push(
            t,
            Item::AtNode {
                client: c,
                node,
                req,
                inc,
                commands,
            },
        );
        req
    }

    /// A client starts or stops believing it holds `key` (the monitor
    /// decides what that means); an overlap violation lasts while the
    /// overlap does.
    fn believe(&mut self, c: u32, key: &str, holds: bool) {
        let names = &self.names;
        let Some(change) = self
            .monitor
            .change_belief(key, c, holds, self.now, &|i| names.client(i).to_owned())
        else {
            return;
        };
        for (actor, kind) in change.events(key, c, holds) {
            self.emit(actor, kind);
        }
        if let Some(v) = change.violation {
            self.violate_ongoing(v, OngoingKind::Overlap(key.to_owned()));
        }
    }

    pub(super) fn resume(&mut self, c: u32) {
        let ci = c as usize;
        if !self.clients[ci].paused || self.clients[ci].crashed {
            return;
        }
        self.clients[ci].paused = false;
        self.emit(Actor::Client(c), EventKind::Resumed);
        let inbox = std::mem::take(&mut self.clients[ci].inbox);
        for item in inbox {
            self.process(item);
        }
    }

    pub(super) fn crash_client(&mut self, c: u32) {
        let ci = c as usize;
        if self.clients[ci].crashed {
            return;
        }
        self.deadlock_dirty = true;
        let slot = &mut self.clients[ci];
        slot.crashed = true;
        slot.paused = false;
        slot.inbox.clear();
        slot.machine = None;
        slot.timers.clear();
        slot.pending.clear();
        let conns: Vec<(usize, ConnId)> = slot
            .conns
            .iter_mut()
            .enumerate()
            .filter_map(|(n, c)| c.take().map(|c| (n, c)))
            .collect();
        for (n, conn) in conns {
            if !self.nodes[n].down {
                self.nodes[n].node.disconnect(conn);
            }
        }
        for s in &mut self.services {
            s.svc.client_gone(c);
        }
        let keys = self.locks.keys().to_vec();
        for k in keys {
            self.believe(c, &k, false);
        }
    }

    pub(super) fn reschedule_client(&mut self, c: u32) {
        let ci = c as usize;
        let now = self.now;
        let mut items = Vec::new();
        let slot = &mut self.clients[ci];
        let tags: Vec<u32> = slot.timers.keys().copied().collect();
        for tag in tags {
            slot.gen += 1;
            let gen = slot.gen;
            if let Some(t) = slot.timers.get_mut(&tag) {
                t.0 = gen;
                items.push((slot.clock.when(t.1, now), Item::Timer { client: c, tag, gen }));
            }
        }
        let reqs: Vec<u64> = slot.pending.keys().copied().collect();
        for req in reqs {
            slot.gen += 1;
            let gen = slot.gen;
            if let Some(Pending { timeout: Some(t), .. }) = slot.pending.get_mut(&req) {
                t.0 = gen;
                items.push((slot.clock.when(t.1, now), Item::Timeout { client: c, req, gen }));
            }
        }
        for (t, item) in items {
            self.push(t, item);
        }
    }

    pub(super) fn client_gone(&self, c: u32) -> bool {
        self.clients
            .get(c as usize)
            .is_some_and(|s| s.crashed || (s.done && s.exits))
    }
}

/// The simulated world carries out client programs' actions on virtual
/// time: requests travel its modelled links, timers run on the client's own
/// (drifting) clock, a write can be lost on a cut link to the resource.
impl ProgramHost for World {
    type Client = u32;
    type Error = std::convert::Infallible;

    fn master(&self) -> u32 {
        self.master
    }

    fn send(
        &mut self,
        &mut c: &mut u32,
        tag: u32,
        node: u32,
        commands: Vec<Argv>,
        timeout_ms: Option<u64>,
    ) -> Result<(), Self::Error> {
        if node as usize >= self.nodes.len() {
            self.note(Actor::Client(c), format!("no node {node}"));
        } else {
            self.send_request(c, node, commands, tag, false, timeout_ms);
        }
        Ok(())
    }

    fn timer(&mut self, &mut c: &mut u32, tag: u32, after_ms: u64) {
        let slot = &mut self.clients[c as usize];
        slot.gen += 1;
        let gen = slot.gen;
        let due = slot.clock.local(self.now).saturating_add(after_ms);
        slot.timers.insert(tag, (gen, due));
        let t = slot.clock.when(due, self.now);
        self.push(t, Item::Timer { client: c, tag, gen });
    }

    fn cancel(&mut self, &mut c: &mut u32, tag: u32) {
        self.clients[c as usize].timers.remove(&tag);
    }

    fn write(&mut self, &mut c: &mut u32, token: Option<i64>, value: String) {
        self.emit(
            Actor::Client(c),
            EventKind::WriteSent {
                token,
                value: value.clone(),
            },
        );
        let r = self.nodes.len();
        let link = &mut self.clients[c as usize].links[r];
        if link.cut {
            self.note(Actor::Client(c), "the write is lost: link to the resource is cut");
            return;
        }
        let t = link.send_time(self.now, &mut self.net);
        let lock = self.write_locks.get(&c).cloned();
        self.push(
            t,
            Item::AtResource {
                client: c,
                lock,
                token,
                value,
            },
        );
    }

    fn believe(&mut self, &mut c: &mut u32, key: &str, holds: bool) {
        World::believe(self, c, key, holds);
    }

    fn note(&mut self, &mut c: &mut u32, text: String) {
        World::note(self, Actor::Client(c), text);
    }

    fn done(&mut self, &mut c: &mut u32) {
        self.deadlock_dirty = true;
        self.clients[c as usize].done = true;
        self.emit(Actor::Client(c), EventKind::Done);
    }
}
