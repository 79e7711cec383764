//! Watching lock keys on real servers, so a real run's timeline has lock
//! bars like the simulator's.
//!
//! The simulator *knows* when a lock key is set, renewed, deleted or
//! expires: it is the server. A real redis-server tells a client none of
//! that (keyspace notifications would need `CONFIG SET`, which the lab
//! never sends to someone's own server), so the lab *looks*: after a
//! command it reads the keys it watches (value, `PTTL` and type: plain
//! reads, in one write for all of them, which neither count against the
//! rate limit nor show in the trace: through the session's administrative
//! connection, or, on the WebSocket's async lane, written behind the
//! command on the client's own connection so they cost no round trip of
//! their own), compares them with what it saw last time — the *shadow*, kept by core's one lock
//! observer ([`LockObserver`], the same comparison the simulator and the
//! browser's free lab make) — and turns the difference into core's `Lock`
//! events. The cause is inferred: a key that changed on
//! the node a client's command just ran on changed by that command; one
//! that vanished on its own expired (stamped at the deadline its `PTTL`
//! implied, not when the lab noticed); on a replica it came by replication;
//! after a restart without persistence it went with the restart.
//!
//! The lesson's real environment watches its lesson's lock keys
//! ([`LockWatch::new`]); the browser's free play on the real driver watches
//! every key a client acquired (core's [`acquired_key`] rule, as the
//! simulator's free lab does: [`LockWatch::free`]).

use std::collections::BTreeMap;

use locklab_core::actor::Actor;
pub use locklab_core::observe::acquired_key;
use locklab_core::observe::{Cause as Why, LockObserver, Observed, Scope, Seen, Via};
use locklab_core::trace::EventKind;

use crate::real::session::{Peeked, Session};
use crate::real::topology::{NodeInfo, NodeState};

/// Why the watcher looks at a node's lock keys, and so why one changed, as
/// far as it can tell: core's [`Why`] with the node it happened on (core's
/// observer sees one node at a time; the real lab asks which node to read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    /// A command of client `client` ran on `node`.
    Cmd { client: u32, node: u32 },
    /// `node` restarted without its data.
    Restart(u32),
    /// Nothing the lab did: expiry (or replication, on a replica).
    None,
}

/// A deadline read twice moves by the round trip: a move up to this many
/// session ms is no renewal.
const ROUND_TRIP_SLACK_MS: u64 = 2;

/// Core's lock observer over real nodes, on the session's clock.
#[derive(Debug)]
pub struct LockWatch {
    /// TTLs go into the trace in lesson ms: `PTTL` × `factor`.
    factor: u64,
    observer: LockObserver,
    /// Concurrent programs: the client that sent each acquire's value, so
    /// a lock a look finds is credited to whoever wrote it, not to the
    /// command whose reply the lab happened to book first.
    owners: BTreeMap<Vec<u8>, u32>,
    /// Clients with a command still on its way to the node looked at: a
    /// lock of theirs that is gone went with their command (their release
    /// ran before the command being booked), not with the booked one.
    busy: Vec<u32>,
}

impl LockWatch {
    /// Watch a lesson's `keys` on `nodes` nodes (independent masters when
    /// `redlock`); `factor` is the run's time compression.
    pub fn new(keys: Vec<String>, nodes: usize, factor: u64, redlock: bool) -> LockWatch {
        let mut observer = LockObserver::new(Scope::Declared, nodes, redlock).with_slack(ROUND_TRIP_SLACK_MS);
        for k in &keys {
            observer.watch(k);
        }
        LockWatch {
            factor: factor.max(1),
            observer,
            owners: BTreeMap::new(),
            busy: Vec::new(),
        }
    }

    /// Free play on `nodes` nodes: a key is watched from a client's acquire
    /// ([`LockWatch::add`]) until it no longer holds that value.
    pub fn free(nodes: usize) -> LockWatch {
        LockWatch {
            factor: 1,
            observer: LockObserver::new(Scope::Acquired, nodes, false).with_slack(ROUND_TRIP_SLACK_MS),
            owners: BTreeMap::new(),
            busy: Vec::new(),
        }
    }

    /// Watch one more key (a program's lock, a key a client just took).
    pub fn add(&mut self, key: &str) {
        self.observer.watch(key);
    }

    /// [`LockWatch::add`] with at most `max` keys watched: the oldest are
    /// dropped to make room, and returned (every look reads every watched
    /// key, so an unbounded watch made each command cost the server
    /// thousands of reads).
    pub fn add_bounded(&mut self, key: &str, max: usize) -> Vec<String> {
        self.observer.watch(key);
        let mut dropped = Vec::new();
        while self.observer.keys().len() > max.max(1) {
            dropped.extend(self.observer.unwatch_oldest());
        }
        dropped
    }

    /// `client` sent `value` to be a lock's value (a concurrent program's
    /// acquire, before its reply is in).
    pub fn claim(&mut self, value: &[u8], client: u32) {
        self.owners.insert(value.to_vec(), client);
    }

    /// The clients whose commands are on their way to the node the next
    /// look is caused by (empty when commands run one at a time).
    pub fn set_busy(&mut self, clients: Vec<u32>) {
        self.busy = clients;
    }

    /// What a command of `client` changed of `key` on node `n`, credited
    /// to whoever did it: a new value to the client that sent it, a lock
    /// that went to its holder when the holder's own command (its release)
    /// was on the wire too. One command at a time, that is always `client`.
    fn command_steps(&self, n: u32, key: &str, cur: Option<Seen>, client: u32) -> Vec<(Option<Seen>, Why)> {
        let writer = cur
            .as_ref()
            .and_then(|s| self.owners.get(&s.value))
            .copied()
            .unwrap_or(client);
        let gone_by = self
            .observer
            .held(n, key)
            .filter(|h| cur.as_ref().is_none_or(|s| s.value != h.value))
            .and_then(|h| h.owner)
            .filter(|&o| o != writer && (o == client || self.busy.contains(&o)));
        match (gone_by, cur) {
            (Some(o), None) => vec![(None, Why::Command(o))],
            (Some(o), Some(s)) => vec![(None, Why::Command(o)), (Some(s), Why::Command(writer))],
            (None, cur) => vec![(cur, Why::Command(writer))],
        }
    }

    /// The keys watched.
    pub fn keys(&self) -> &[String] {
        self.observer.keys()
    }

    /// Judge `key` by the nodes of `group` only (lesson 45: the single
    /// Redis's key by node 0, Redlock's by a majority of its masters).
    pub fn set_group(&mut self, key: &str, group: locklab_core::observe::KeyGroup) {
        self.observer.set_group(key, group);
    }

    /// The node whose locks are grants (after a failover, the new master).
    pub fn set_master(&mut self, node: u32) {
        self.observer.set_master(node);
    }

    /// The earliest instant (session ms) at which a watched key is due to
    /// expire: free play looks again then, so the lock bar ends on time
    /// even when nobody types.
    pub fn next_deadline(&self) -> Option<u64> {
        self.observer.next_deadline()
    }

    /// Read the watched keys on `only` (or every live node), record what
    /// changed as `Lock` events in the session's trace, and return the rest
    /// of what the observer saw (grants, wrong releases) for the runner.
    pub fn observe(
        &mut self,
        session: &mut Session,
        nodes: &[NodeInfo],
        only: Option<u32>,
        cause: Look,
    ) -> Vec<Observed> {
        self.observe_with(session, nodes, only, cause, |s, n, keys| s.peek_many(n, keys).ok())
    }

    /// [`observe`](LockWatch::observe) with the keys read by `read` (what
    /// each watched key holds on a node, in [`keys`](LockWatch::keys)'
    /// order; `None`: unreadable): the WebSocket's async lane has read
    /// them already, in the command's own round trip.
    pub fn observe_with(
        &mut self,
        session: &mut Session,
        nodes: &[NodeInfo],
        only: Option<u32>,
        cause: Look,
        mut read: impl FnMut(&mut Session, u32, &[String]) -> Option<Vec<Peeked>>,
    ) -> Vec<Observed> {
        let mut out = Vec::new();
        for (n, info) in nodes.iter().enumerate() {
            let n = n as u32;
            let down = info.state != NodeState::Up;
            self.observer.set_down(n, down);
            if only.is_some_and(|o| o != n) {
                continue;
            }
            let keys = self.observer.keys().to_vec();
            // One round trip for every watched key on this node.
            let seen = match down {
                false => read(session, n, &keys),
                true => None,
            };
            let Some(seen) = seen else {
                self.observer.unreadable(n, session.elapsed_ms());
                continue;
            };
            let replica = info.role == locklab_core::protocol::NodeRole::Replica;
            for (key, cur) in keys.iter().zip(seen) {
                let why = match cause {
                    Look::Cmd { client, node } if node == n => Why::Command(client),
                    Look::Restart(r) if r == n => Why::Restart,
                    // A replica's copy belongs to whoever set it on its master.
                    _ if replica => Why::Replication(
                        cur.as_ref()
                            .and_then(|(v, _)| self.observer.owner_of_value(key, v.as_bytes())),
                    ),
                    _ => Why::Expiry,
                };
                let now = session.elapsed_ms();
                let cur = cur.map(|(value, pttl)| Seen {
                    value: value.into_bytes(),
                    deadline: u64::try_from(pttl).ok().map(|p| now + p),
                    ttl_ms: u64::try_from(pttl).ok().map(|p| p * self.factor),
                });
                let steps = match (cause, why) {
                    (Look::Cmd { client, .. }, Why::Command(_)) => self.command_steps(n, key, cur, client),
                    _ => vec![(cur, why)],
                };
                for (cur, why) in steps {
                    let observed = self.observer.observe(n, key, cur, why, now);
                    out.extend(self.record(session, observed));
                }
            }
        }
        // Held by a majority of independent masters (Redlock's keys).
        for key in self.observer.keys().to_vec() {
            out.extend(self.observer.recount_majority(&key));
        }
        out
    }

    /// Node `n` restarted without its data: every key it had is gone.
    pub fn forget_node(&mut self, session: &mut Session, n: u32) -> Vec<Observed> {
        let observed = self.observer.forget_node(n, session.elapsed_ms());
        self.record(session, observed)
    }

    /// Put the lock events in the session's trace (an expiry stamped at the
    /// deadline `PTTL` implied, not when the lab noticed); the rest is the
    /// caller's.
    fn record(&self, session: &mut Session, observed: Vec<Observed>) -> Vec<Observed> {
        let now = session.elapsed_ms();
        let mut rest = Vec::new();
        for o in observed {
            match o {
                Observed::Lock {
                    node,
                    key,
                    change,
                    via,
                    deadline,
                } => {
                    let at = match via {
                        Via::Expiry => deadline.map_or(now, |d| d.min(now)),
                        _ => now,
                    };
                    session.record(Some(at), Actor::Node(node), EventKind::Lock { key, change, via });
                }
                other => rest.push(other),
            }
        }
        rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_play_watches_only_what_was_acquired() {
        let mut w = LockWatch::free(1);
        assert!(w.keys().is_empty());
        w.add("lock");
        assert_eq!(w.keys(), ["lock"]);
    }
}
