//! The resource and the invariants: what the world checks after every item.
//!
//! A write reaching the resource is checked against fencing; after every
//! queue item the world looks for deadlocks (a lock with no TTL whose owner
//! is gone, or one held past `max_hold_ms`) and stretches the span of each
//! violation still going on, so the timeline paints how long it lasted.

use super::World;
use crate::actor::Actor;
use crate::invariants::Violation;
use crate::trace::EventKind;

/// A violation whose condition still holds.
#[derive(Clone, Debug)]
pub(super) struct Ongoing {
    what: OngoingKind,
    /// Index in the monitor's violations.
    violation: usize,
    /// Step of its `Violation` event (its index in the trace once the
    /// forgotten events are subtracted).
    event: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum OngoingKind {
    /// Two or more clients believe they hold this key.
    Overlap(String),
    /// This node still has this key, held by the same owner since then.
    Deadlock { node: u32, key: String, since: u64 },
}

impl World {
    pub(super) fn violate(&mut self, v: Violation) {
        self.monitor.record(v.clone());
        self.emit(Actor::World, EventKind::Violation { violation: v });
    }

    /// Record a violation whose condition lasts: its span grows with the
    /// clock until [`World::extend_ongoing`] sees the condition stop.
    pub(super) fn violate_ongoing(&mut self, v: Violation, what: OngoingKind) {
        let violation = self.monitor.violations().len();
        let event = self.steps();
        self.violate(v);
        self.ongoing.push(Ongoing { what, violation, event });
    }

    /// Stretch the span of every violation still going on to now; drop
    /// those whose condition has stopped (their span ends at the item that
    /// stopped it, which is now: this runs after every item).
    pub(super) fn extend_ongoing(&mut self) {
        if self.ongoing.is_empty() {
            return;
        }
        let now = self.now;
        let ongoing = std::mem::take(&mut self.ongoing);
        for o in ongoing {
            self.monitor.extend(o.violation, now);
            if let Some(EventKind::Violation { violation }) = (o.event.checked_sub(self.forgotten))
                .and_then(|i| self.events.get_mut(i as usize))
                .map(|e| &mut e.kind)
            {
                violation.to_ms = violation.to_ms.max(now);
            }
            let still = match &o.what {
                OngoingKind::Overlap(key) => self.monitor.believers(key).len() >= 2,
                OngoingKind::Deadlock { node, key, since } => {
                    let slot = &self.nodes[*node as usize];
                    !slot.down
                        && self
                            .locks
                            .held(*node, key)
                            .is_some_and(|sh| sh.owner.is_some() && sh.since == *since)
                }
            };
            if still {
                self.ongoing.push(o);
            }
        }
    }

    pub(super) fn at_resource(&mut self, c: u32, lock: Option<String>, token: Option<i64>, value: String) {
        let r = self.nodes.len();
        if self.clients[c as usize].links[r].cut {
            self.note(
                Actor::Resource,
                format!("{}'s write is lost: link cut", self.names.client(c)),
            );
            return;
        }
        let accepted = (self.resource).write_under(c, lock.as_deref(), self.now, token, value.clone());
        self.emit(
            Actor::Resource,
            EventKind::Write {
                client: c,
                token,
                value,
                accepted,
            },
        );
        if accepted {
            let names = &self.names;
            let v = self
                .monitor
                .accepted_write_under(c, lock.as_deref(), self.now, token, &|i| names.client(i).to_owned());
            if let Some(v) = v {
                self.violate(v);
            }
        }
    }

    pub(super) fn after_item(&mut self) {
        self.extend_ongoing();
        let max_hold = self.monitor.config().max_hold_ms;
        if self.halted || !(self.deadlock_dirty || max_hold.is_some()) {
            return;
        }
        self.deadlock_dirty = false;
        let (first, last) = if self.cfg.topology.is_redlock() || self.cfg.compare.is_some() {
            (0, self.nodes.len() as u32)
        } else {
            (self.master, self.master + 1)
        };
        let mut found = Vec::new();
        for node in first..last {
            if self.nodes[node as usize].down {
                continue;
            }
            for (key, sh) in self.locks.held_on(node) {
                let Some(owner) = sh.owner else { continue };
                if sh.deadline.is_none() && self.client_gone(owner) {
                    found.push((node, key.clone(), owner, sh.since, None));
                } else if let Some(max) = max_hold {
                    if self.now.saturating_sub(sh.since) > max && !self.client_gone(owner) {
                        found.push((node, key.clone(), owner, sh.since, Some(max)));
                    }
                }
            }
        }
        for (node, key, owner, since, bound) in found {
            let detail = match bound {
                None => format!(
                    "{key} on {} has no TTL and its owner {} is gone: it can never expire, nobody can acquire it",
                    self.names.node(node),
                    self.names.client(owner)
                ),
                Some(max) => format!(
                    "{} has held {key} on {} for {} ms, beyond the {max} ms bound: nobody else can acquire it",
                    self.names.client(owner),
                    self.names.node(node),
                    self.now - since
                ),
            };
            // A key past its bound is a deadlock from the moment the bound
            // passed, not from when it was taken: the first `max` ms were a
            // legitimate hold.
            let from = bound.map_or(since, |max| since + max);
            if let Some(v) = self.monitor.deadlock(node, &key, owner, since, from, self.now, detail) {
                let what = OngoingKind::Deadlock {
                    node,
                    key: key.clone(),
                    since,
                };
                self.violate_ongoing(v, what);
                if self.halted {
                    return;
                }
            }
        }
    }
}
