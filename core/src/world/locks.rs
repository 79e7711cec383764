//! Watching lock keys: what each node holds, and who put it there.
//!
//! After every change to a node the world peeks at each lock key and shows
//! it to the [`LockObserver`](crate::observe::LockObserver), which turns a
//! changed value into lock events, numbered grants, wrong releases and
//! foreign extensions. This
//! file feeds it and carries out what it saw.

use super::World;
use crate::actor::Actor;
use crate::invariants::Monitor;
use crate::observe::{Cause, Observed, Seen};
use crate::server::db::Value;
use crate::trace::EventKind;

fn value_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Str(s) => s.clone(),
        Value::Hash(fields) => {
            let mut out = Vec::new();
            for (i, (f, x)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(f);
                out.push(b'=');
                out.extend_from_slice(x);
            }
            out
        }
        // The lock shadows only read strings and hashes; other types show
        // as the commands that would rebuild them.
        other => other
            .restore_argvs(b"")
            .concat()
            .iter()
            .skip(2)
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect::<Vec<_>>()
            .join(",")
            .into_bytes(),
    }
}

impl Observed {
    /// What the lock observer saw, as the trace tells it: a lock bar's
    /// change on its node, or a grant on its client's lane, numbered by
    /// `monitor` (which orders holders for the resource's fence). A wrong
    /// release or a foreign extension is the caller's to judge, and comes
    /// back as it is. The simulated world and the real lock-service runs
    /// both trace what they saw this way.
    pub fn into_event(self, monitor: &mut Monitor) -> Result<(Actor, EventKind), Observed> {
        match self {
            Observed::Lock {
                node, key, change, via, ..
            } => Ok((Actor::Node(node), EventKind::Lock { key, change, via })),
            Observed::Granted { client, key } => {
                let seq = monitor.grant(client, &key);
                Ok((Actor::Client(client), EventKind::Granted { key, seq }))
            }
            not_owner => Err(not_owner),
        }
    }
}

impl World {
    pub(super) fn observe_locks(&mut self, node: u32, cause: Cause) {
        if self.member_of(node).is_some() {
            // The members hold no Redis keys: `world/service.rs` shows the
            // service's holders instead.
            return;
        }
        let keys = self.locks.keys().to_vec();
        for key in &keys {
            self.observe_key(node, key, cause);
        }
    }

    /// Show the observer what `node` holds for `key` now, and turn what
    /// changed into events, grants and wrong releases.
    fn observe_key(&mut self, node: u32, key: &str, cause: Cause) {
        let n = node as usize;
        let node_now = self.nodes[n].node.now();
        let cur = self.nodes[n].node.peek(0, key.as_bytes()).map(|e| Seen {
            value: value_bytes(&e.value),
            deadline: e.expires_at,
            ttl_ms: e.expires_at.map(|d| d.saturating_sub(node_now)),
        });
        if cur.is_some() || self.locks.held(node, key).is_some() {
            self.deadlock_dirty = true;
        }
        let observed = self.locks.observe(node, key, cur, cause, self.now);
        self.apply_observed(observed);
    }

    /// Carry out what the lock observer saw: lock events, numbered grants,
    /// and a wrong release as a violation.
    pub(super) fn apply_observed(&mut self, observed: Vec<Observed>) {
        for o in observed {
            match o.into_event(&mut self.monitor) {
                Ok((actor, kind)) => self.emit(actor, kind),
                Err(not_owner) => {
                    let names = &self.names;
                    let client = |i| names.client(i).to_owned();
                    if let Some(v) = self
                        .monitor
                        .not_owner(&not_owner, self.now, &client, &|i| names.node(i).to_owned())
                    {
                        self.violate(v);
                    }
                }
            }
        }
    }

    /// Redlock: after a node went down or came back, who holds each lock by
    /// majority now.
    pub(super) fn recount_majorities(&mut self) {
        for k in self.locks.keys().to_vec() {
            let observed = self.locks.recount_majority(&k);
            self.apply_observed(observed);
        }
    }
}
