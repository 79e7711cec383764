//! Watching lock keys on real servers, so a real run's timeline has lock
//! bars like the simulator's.
//!
//! The simulator *knows* when a lock key is set, renewed, deleted or
//! expires: it is the server. A real redis-server tells a client none of
//! that (keyspace notifications would need `CONFIG SET`, which the lab
//! never sends to someone's own server), so the lab *looks*: after a
//! command it reads the keys it watches (value and `PTTL`, one `EVAL` per
//! key, through the session's administrative connection so it neither
//! counts against the rate limit nor shows in the trace), compares them
//! with what it saw last time — the *shadow* — and turns the difference
//! into core's `Lock` events. The cause is inferred: a key that changed on
//! the node a client's command just ran on changed by that command; one
//! that vanished on its own expired (stamped at the deadline its `PTTL`
//! implied, not when the lab noticed); on a replica it came by replication;
//! after a restart without persistence it went with the restart.
//!
//! The lesson runner watches its lesson's lock keys ([`LockWatch::new`]);
//! the browser's free play on the real driver watches every key a client
//! acquired with `SET … NX` or `SETNX` ([`acquired_key`]), as the
//! simulator's console does.

use std::collections::BTreeMap;

use locklab_core::reply::Reply;
use locklab_core::trace::{Actor, EventKind, LockChange, Via};

use crate::session::Session;
use crate::topology::{NodeInfo, NodeState};

/// Why a lock key changed on a node, as far as the watcher can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A command of client `client` ran on `node`.
    Cmd { client: u32, node: u32 },
    /// `node` restarted without its data.
    Restart(u32),
    /// Nothing the lab did: expiry (or replication, on a replica).
    None,
}

/// What the watcher last saw of a lock key on one node.
#[derive(Clone, Debug)]
struct Shadow {
    value: String,
    /// Session-clock ms at which `PTTL` says it expires.
    deadline: Option<u64>,
    owner: Option<u32>,
}

/// A lock key a client's command just set on a node: the runner decides
/// whether that is a grant of the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acquired {
    pub node: u32,
    pub key: String,
    pub client: u32,
}

/// The keys watched, and the shadow of each on every node.
#[derive(Debug)]
pub struct LockWatch {
    /// TTLs go into the trace in lesson ms: `PTTL` × `factor`.
    factor: u64,
    keys: Vec<String>,
    shadow: Vec<BTreeMap<String, Shadow>>,
}

impl LockWatch {
    /// Watch `keys` on `nodes` nodes; `factor` is the run's time compression
    /// (1 for free play).
    pub fn new(keys: Vec<String>, nodes: usize, factor: u64) -> LockWatch {
        LockWatch {
            factor: factor.max(1),
            keys,
            shadow: vec![BTreeMap::new(); nodes],
        }
    }

    /// Watch one more key (a program's lock, a key a client just took).
    pub fn add(&mut self, key: &str) {
        if !self.keys.iter().any(|k| k == key) {
            self.keys.push(key.to_owned());
        }
    }

    /// The keys watched.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// Who the watcher last saw owning `key` on node `n`.
    pub fn owner_on(&self, n: usize, key: &str) -> Option<u32> {
        self.shadow.get(n).and_then(|m| m.get(key)).and_then(|s| s.owner)
    }

    /// The earliest instant (session ms) at which a watched key is due to
    /// expire: free play looks again then, so the lock bar ends on time
    /// even when nobody types.
    pub fn next_deadline(&self) -> Option<u64> {
        self.shadow
            .iter()
            .flat_map(BTreeMap::values)
            .filter_map(|s| s.deadline)
            .min()
    }

    /// Read the watched keys on `only` (or every live node) and record what
    /// changed as `Lock` events in the session's trace. Returns the keys a
    /// client's command set.
    pub fn observe(
        &mut self,
        session: &mut Session,
        nodes: &[NodeInfo],
        only: Option<u32>,
        cause: Cause,
    ) -> Vec<Acquired> {
        let mut acquired = Vec::new();
        for (n, info) in nodes.iter().enumerate() {
            let n = n as u32;
            if only.is_some_and(|o| o != n) {
                continue;
            }
            let replica = info.role == locklab_core::protocol::Role::Replica;
            let keys = self.keys.clone();
            // One round trip for every watched key on this node.
            let seen = match info.state {
                NodeState::Up => session.peek_many(n, &keys).ok(),
                _ => None,
            };
            for (i, key) in keys.iter().enumerate() {
                match seen.as_ref().and_then(|s| s.get(i)) {
                    Some(cur) => {
                        if let Some(a) = self.update(session, n, key, cur.clone(), cause, replica) {
                            acquired.push(a);
                        }
                    }
                    None => self.unknown(session.elapsed_ms(), n, key),
                }
            }
        }
        acquired
    }

    /// Node `n` cannot be read now (down, paused, unreachable): a deadline
    /// of `key` there that has passed is no longer one to wait for, or
    /// free play would wake every millisecond to look at a node that does
    /// not answer. The key's fate shows when the node answers again.
    fn unknown(&mut self, now: u64, n: u32, key: &str) {
        if let Some(s) = self.shadow.get_mut(n as usize).and_then(|m| m.get_mut(key)) {
            if s.deadline.is_some_and(|d| d <= now) {
                s.deadline = None;
            }
        }
    }

    /// Node `n` restarted without its data: every key it had is gone.
    pub fn forget_node(&mut self, session: &mut Session, n: u32) {
        let keys: Vec<String> = self
            .shadow
            .get(n as usize)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for k in keys {
            self.update(session, n, &k, None, Cause::Restart(n), false);
        }
    }

    /// Compare what node `n` holds for `key` now (`cur`: value and `PTTL`)
    /// with the shadow, and record the change.
    fn update(
        &mut self,
        session: &mut Session,
        n: u32,
        key: &str,
        cur: Option<(String, i64)>,
        cause: Cause,
        replica: bool,
    ) -> Option<Acquired> {
        let now = session.elapsed_ms();
        let by = match cause {
            Cause::Cmd { client, node } if node == n => Some(client),
            _ => None,
        };
        let via = match cause {
            _ if by.is_some() => Via::Command,
            Cause::Restart(r) if r == n => Via::Restart,
            _ if replica => Via::Replication,
            _ => Via::Expiry,
        };
        let map = self.shadow.get_mut(n as usize)?;
        let old = map.get(key).cloned();
        let record = |session: &mut Session, at: u64, change: LockChange| {
            session.record(
                Some(at),
                Actor::Node(n),
                EventKind::Lock {
                    key: key.to_owned(),
                    change,
                    via,
                },
            );
        };
        match (old, cur) {
            (None, None) => None,
            (Some(o), None) => {
                map.remove(key);
                let at = if via == Via::Expiry {
                    o.deadline.map_or(now, |d| d.min(now))
                } else {
                    now
                };
                record(session, at, LockChange::Removed { by });
                None
            }
            (old, Some((value, pttl))) => {
                let deadline = u64::try_from(pttl).ok().map(|p| now + p);
                let ttl_ms = u64::try_from(pttl).ok().map(|p| p * self.factor);
                if let Some(o) = old.as_ref().filter(|o| o.value == value) {
                    // A deadline read twice moves by the round trip; only a
                    // real move (PEXPIRE, a new SET) is a renewal.
                    let moved = match (o.deadline, deadline) {
                        (Some(a), Some(b)) => a.abs_diff(b) > 2,
                        (None, None) => false,
                        _ => true,
                    };
                    if moved {
                        if let Some(s) = map.get_mut(key) {
                            s.deadline = deadline;
                        }
                        record(session, now, LockChange::Renewed { ttl_ms });
                    }
                    return None;
                }
                // A replica's copy belongs to whoever set it on its master.
                let owner = match by {
                    Some(c) => Some(c),
                    None if replica => self
                        .shadow
                        .iter()
                        .filter_map(|m| m.get(key))
                        .find(|s| s.value == value && s.owner.is_some())
                        .and_then(|s| s.owner),
                    None => None,
                };
                self.shadow[n as usize].insert(
                    key.to_owned(),
                    Shadow {
                        value: value.clone(),
                        deadline,
                        owner,
                    },
                );
                record(session, now, LockChange::Acquired { owner, value, ttl_ms });
                by.map(|client| Acquired {
                    node: n,
                    key: key.to_owned(),
                    client,
                })
            }
        }
    }
}

/// The key `argv` took as a lock, judged by its reply: `SET key v … NX`
/// answered `OK`, or `SETNX key v` answered 1 — the simulator console's
/// rule for what is a lock.
pub fn acquired_key(argv: &[Vec<u8>], reply: &Reply) -> Option<String> {
    let name = argv.first()?;
    let key = argv.get(1)?;
    let taken = if name.eq_ignore_ascii_case(b"set") {
        argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"nx")) && *reply == Reply::ok()
    } else {
        name.eq_ignore_ascii_case(b"setnx") && *reply == Reply::Integer(1)
    };
    taken.then(|| String::from_utf8_lossy(key).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_core::cli::parse;

    #[test]
    fn what_counts_as_taking_a_lock() {
        let key = |line: &str, reply: Reply| acquired_key(&parse(line).unwrap(), &reply);
        assert_eq!(key("SET lock A NX PX 100", Reply::ok()).as_deref(), Some("lock"));
        assert_eq!(key("set lock A px 100 nx", Reply::ok()).as_deref(), Some("lock"));
        assert_eq!(key("SET lock A NX PX 100", Reply::Nil), None);
        assert_eq!(key("SET lock A PX 100", Reply::ok()), None);
        assert_eq!(key("SET NX A", Reply::ok()), None, "NX as the key is not the NX option");
        assert_eq!(key("SETNX lock A", Reply::Integer(1)).as_deref(), Some("lock"));
        assert_eq!(key("SETNX lock A", Reply::Integer(0)), None);
        assert_eq!(key("GET lock", Reply::bulk("A")), None);
    }
}
