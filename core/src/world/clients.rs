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
use crate::client::{Action, Argv, Ctx, Input, Target};
use crate::invariants::Monitor;
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
            self.apply_action(c, a);
        }
    }

    fn apply_action(&mut self, c: u32, action: Action) {
        let ci = c as usize;
        match action {
            Action::Send {
                tag,
                target,
                commands,
                timeout_ms,
            } => {
                let node = match target {
                    Target::Master => self.master,
                    Target::Node(n) => n,
                };
                if node as usize >= self.nodes.len() {
                    self.note(Actor::Client(c), format!("no node {node}"));
                    return;
                }
                self.send_request(c, node, commands, tag, false, timeout_ms);
            }
            Action::Timer { tag, after_ms } => {
                let slot = &mut self.clients[ci];
                slot.gen += 1;
                let gen = slot.gen;
                let due = slot.clock.local(self.now).saturating_add(after_ms);
                slot.timers.insert(tag, (gen, due));
                let t = slot.clock.when(due, self.now);
                self.push(t, Item::Timer { client: c, tag, gen });
            }
            Action::Cancel { tag } => {
                self.clients[ci].timers.remove(&tag);
            }
            Action::Write { token, value } => {
                self.emit(
                    Actor::Client(c),
                    EventKind::WriteSent {
                        token,
                        value: value.clone(),
                    },
                );
                let r = self.nodes.len();
                let link = &mut self.clients[ci].links[r];
                if link.cut {
                    self.note(Actor::Client(c), "the write is lost: link to the resource is cut");
                    return;
                }
                let t = link.send_time(self.now, &mut self.net);
                self.push(
                    t,
                    Item::AtResource {
                        client: c,
                        token,
                        value,
                    },
                );
            }
            Action::Hold { key } => self.believe(c, &key, true),
            Action::Unhold { key } => self.believe(c, &key, false),
            Action::Note(text) => self.note(Actor::Client(c), text),
            Action::Done => {
                self.deadlock_dirty = true;
                self.clients[ci].done = true;
                self.emit(Actor::Client(c), EventKind::Done);
            }
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

    fn believe(&mut self, c: u32, key: &str, holds: bool) {
        if self.monitor.believes(key, c) == holds {
            return;
        }
        let change = self.monitor.believe(key, c, holds, self.now);
        self.emit(
            Actor::Client(c),
            EventKind::Belief {
                key: key.to_owned(),
                holds,
            },
        );
        if let Some(ch) = change {
            let begin = ch.begin;
            let clients = ch.clients.clone();
            self.emit(
                Actor::World,
                EventKind::Overlap {
                    key: key.to_owned(),
                    clients: ch.clients,
                    begin,
                    since_ms: ch.since_ms,
                },
            );
            if begin && self.monitor.config().overlap_is_violation {
                let names = &self.names;
                let v = Monitor::overlap_violation(key, &clients, self.now, &|i| names.client(i).to_owned());
                self.violate_ongoing(v, OngoingKind::Overlap(key.to_owned()));
            }
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
        if let Some(s) = self.service.as_mut() {
            s.client_gone(c);
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
