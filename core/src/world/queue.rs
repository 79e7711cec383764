//! The queue and stepping through it.
//!
//! Everything that will happen waits in one queue ordered by world time and
//! then by scheduling order; [`World::step`] pops one item, applies it (the
//! other files say how each kind is applied) and hands out the events it
//! caused one at a time. The console's way in ([`World::send`],
//! [`World::request`]) and an injected fault go through here too, so a
//! line typed at a client is a request like any program's.

use super::{Argv, ClientId, Fault, ReqId, World, WorldError};
use crate::actor::Actor;
use crate::client::Machine;
use crate::reply::Reply;
use crate::trace::{Event, EventKind};

/// What is waiting in the queue.
#[derive(Clone, Debug)]
pub(super) enum Item {
    Start {
        client: u32,
        machine: Box<Machine>,
        exits: bool,
    },
    Timer {
        client: u32,
        tag: u32,
        gen: u64,
    },
    Timeout {
        client: u32,
        req: u64,
        gen: u64,
    },
    AtNode {
        client: u32,
        node: u32,
        req: u64,
        inc: u32,
        commands: Vec<Argv>,
    },
    AtClient {
        client: u32,
        node: u32,
        req: u64,
        replies: Vec<Reply>,
    },
    AtResource {
        client: u32,
        lock: Option<String>,
        token: Option<i64>,
        value: String,
    },
    AtReplica {
        from: u32,
        to: u32,
        inc: u32,
        offset: u64,
        batch: Vec<Argv>,
        origin: Option<u32>,
    },
    Tick {
        node: u32,
    },
    /// A lease or session deadline of the lock service.
    ServiceTick,
    WaitTimeout {
        id: u64,
    },
    Resume {
        client: u32,
        gen: u64,
    },
    NodeUp {
        node: u32,
        keep: bool,
        gen: u64,
    },
    Fault(Fault),
}

impl Item {
    /// The client whose process handles this item, if it is one of those
    /// (they wait while the client is paused and vanish if it crashed).
    fn client(&self) -> Option<u32> {
        match self {
            Item::Start { client, .. }
            | Item::Timer { client, .. }
            | Item::Timeout { client, .. }
            | Item::AtClient { client, .. } => Some(*client),
            _ => None,
        }
    }
}

impl World {
    /// Inject a fault now. Its events are visible in [`World::trace`] at
    /// once.
    pub fn inject(&mut self, fault: Fault) -> Result<(), WorldError> {
        self.validate_fault(&fault)?;
        self.apply_fault(fault);
        self.after_item();
        self.cursor = self.events.len();
        Ok(())
    }

    /// Send one command from a client to a node now, outside any program
    /// (a line typed at the client's console). The reply arrives as a
    /// `Received` event; [`World::request`] waits for it.
    pub fn send(&mut self, client: ClientId, node: u32, argv: Argv) -> Result<ReqId, WorldError> {
        let c = self.check_client(client)?;
        let node = self.check_node(node)?;
        if argv.is_empty() {
            return Err(WorldError::Invalid("empty command".into()));
        }
        if self.clients[c as usize].crashed {
            return Err(WorldError::Invalid(format!("{} has crashed", self.names.client(c))));
        }
        let req = self.send_request(c, node, vec![argv], 0, true, None);
        self.cursor = self.events.len();
        Ok(ReqId(req))
    }

    /// [`World::send`] a redis-cli line.
    pub fn send_line(&mut self, client: ClientId, node: u32, line: &str) -> Result<ReqId, WorldError> {
        let argv = crate::cli::parse(line).map_err(|e| WorldError::Invalid(format!("{line:?}: {e}")))?;
        self.send(client, node, argv)
    }

    /// Send a command and run the world until its reply arrives (`None`: it
    /// was lost, or the world stopped first). What a lesson step does.
    pub fn request(&mut self, client: ClientId, node: u32, argv: Argv) -> Result<Option<Reply>, WorldError> {
        let req = self.send(client, node, argv)?.0;
        let mut seen = self.events.len();
        loop {
            let lost = self.events[seen..]
                .iter()
                .any(|e| matches!(e.kind, EventKind::Lost { req: r, .. } if r == req));
            seen = self.events.len();
            if lost {
                self.clients[client.0 as usize].pending.remove(&req);
                self.cursor = self.events.len();
                return Ok(None);
            }
            let pending = self.clients[client.0 as usize].pending.contains_key(&req);
            if !pending {
                let got = self.events.iter().rev().find_map(|e| match &e.kind {
                    EventKind::Received { req: r, replies, .. } if *r == req => Some(replies.first().cloned()),
                    _ => None,
                });
                self.cursor = self.events.len();
                return Ok(got.flatten());
            }
            if !self.process_next() {
                self.cursor = self.events.len();
                return Ok(None);
            }
        }
    }

    /// The next event, processing the queue as far as needed; `None` when
    /// nothing more will happen (or the horizon, event limit or a violation
    /// with `stop_on_violation` stopped the world).
    pub fn step(&mut self) -> Option<&Event> {
        while self.cursor >= self.events.len() {
            if !self.process_next() {
                return None;
            }
        }
        self.cursor += 1;
        self.events.get(self.cursor - 1)
    }

    /// Would pausing `client` now change nothing but its bookkeeping? True
    /// when it is alive, not paused, and nothing can reach it: no request
    /// of its is in flight (no reply can come), it has no timer, and no
    /// queue item is for it. Such a pause ends with an empty inbox, so the
    /// world it leaves is the world without it, two trace events longer
    /// (the explorer's search skips it: the same world with a fault less to
    /// spend can do everything this one can).
    pub fn pause_is_idle(&self, client: &str) -> bool {
        let Ok(c) = self.client_index(client) else {
            return false;
        };
        let slot = &self.clients[c as usize];
        !slot.crashed
            && !slot.paused
            && slot.inbox.is_empty()
            && slot.pending.is_empty()
            && slot.timers.is_empty()
            && !self.queue.values().any(|item| item.client() == Some(c))
    }

    /// Is the next queue item one `client`'s process handles (a reply, a
    /// timer, a timeout, its program's start)? The breadth-first search
    /// lands a pause only there (`explore::bfs`, `pause_at_input`): a pause
    /// that begins earlier only holds back this same input, so it is this
    /// pause begun sooner with the time between the two taken off its length.
    pub fn next_is_for(&self, client: &str) -> bool {
        let Ok(c) = self.client_index(client) else {
            return false;
        };
        self.step_faults.is_empty()
            && self
                .queue
                .first_key_value()
                .is_some_and(|(_, item)| item.client() == Some(c))
    }

    /// Process exactly one queue item (or one due step fault), making all
    /// the events it caused visible; false when nothing is left. The
    /// explorer uses it to find the distinct points between deliveries
    /// where a fault can land.
    pub fn step_item(&mut self) -> bool {
        let more = self.process_next();
        self.cursor = self.events.len();
        more
    }

    /// Process everything up to world time `t` and move the clock there.
    pub fn advance_to(&mut self, t: u64) {
        loop {
            let fault_due = self.step_faults.first().is_some_and(|(s, _)| *s <= self.steps());
            let item_due = self.queue.first_key_value().is_some_and(|(k, _)| k.0 <= t);
            if !(fault_due || item_due) || !self.process_next() {
                break;
            }
        }
        if !self.halted {
            self.now = self.now.max(t.min(self.cfg.horizon_ms));
            self.extend_ongoing();
        }
        self.cursor = self.events.len();
    }

    /// Events so far, the forgotten ones included: the next event's step.
    pub fn steps(&self) -> u64 {
        self.forgotten + self.events.len() as u64
    }

    /// Drop the events handed out so far (their steps stay counted): the
    /// explorer's breadth-first search copies worlds at every state and
    /// reads only whether an invariant broke, so copying their whole past
    /// would make each copy cost as much as the run so far. A replay of
    /// the scenario gives the trace back.
    pub fn forget_trace(&mut self) {
        self.forgotten = self.steps();
        self.events.clear();
        self.cursor = 0;
    }

    /// Run until nothing more happens; returns the number of events.
    pub fn run(&mut self) -> usize {
        while self.process_next() {}
        self.cursor = self.events.len();
        self.events.len()
    }

    pub(super) fn push(&mut self, t: u64, item: Item) {
        self.seq += 1;
        self.queue.insert((t, self.seq), item);
    }

    fn process_next(&mut self) -> bool {
        if self.halted {
            return false;
        }
        if self.steps() >= self.cfg.max_events {
            self.halted = true;
            return false;
        }
        if self.step_faults.first().is_some_and(|(s, _)| *s <= self.steps()) {
            let (_, f) = self.step_faults.remove(0);
            self.apply_fault(f);
            self.after_item();
            return true;
        }
        let Some((&(t, _), _)) = self.queue.first_key_value() else {
            return false;
        };
        if t > self.cfg.horizon_ms {
            return false;
        }
        let Some(((t, _), item)) = self.queue.pop_first() else {
            return false;
        };
        self.now = self.now.max(t);
        self.process(item);
        self.after_item();
        true
    }

    pub(super) fn emit(&mut self, actor: Actor, kind: EventKind) {
        let step = self.steps();
        if matches!(kind, EventKind::Violation { .. }) {
            if self.first_violation.is_none() {
                self.first_violation = Some(step);
            }
            if self.cfg.stop_on_violation {
                self.halted = true;
            }
        }
        self.events.push(Event {
            step,
            at_ms: self.now,
            actor,
            kind,
        });
    }

    pub(super) fn note(&mut self, actor: Actor, text: impl Into<String>) {
        self.emit(actor, EventKind::Note { text: text.into() });
    }

    pub(super) fn process(&mut self, item: Item) {
        if let Some(c) = item.client() {
            self.client_item(c, item);
            return;
        }
        match item {
            Item::AtNode {
                client,
                node,
                req,
                inc,
                commands,
            } => self.at_node(client, node, req, inc, commands),
            Item::AtResource {
                client,
                lock,
                token,
                value,
            } => self.at_resource(client, lock, token, value),
            Item::AtReplica {
                from,
                to,
                inc,
                offset,
                batch,
                origin,
            } => self.at_replica(from, to, inc, offset, batch, origin),
            Item::Tick { node } => {
                self.nodes[node as usize].tick_at = None;
                self.sync_node(node);
                self.schedule_tick(node);
            }
            Item::WaitTimeout { id } => {
                if let Some(pos) = self.waiters.iter().position(|w| w.id == id) {
                    let w = self.waiters.remove(pos);
                    let acked = self.acked(w.node, w.target);
                    self.finish_wait(w, acked);
                }
            }
            Item::Resume { client, gen } => {
                if self.clients[client as usize].pause_gen == gen {
                    self.resume(client);
                }
            }
            Item::NodeUp { node, keep, gen } => self.node_up(node, keep, gen),
            Item::ServiceTick => self.service_tick(),
            Item::Fault(f) => self.apply_fault(f),
            Item::Start { .. } | Item::Timer { .. } | Item::Timeout { .. } | Item::AtClient { .. } => {}
        }
    }
}
