//! Watching lock keys: one observer for every view that draws lock bars.
//!
//! A lock's life on a node — set, renewed, deleted, expired, replicated,
//! lost in a restart — is never announced by Redis; whoever draws it has to
//! *look* at the key and compare with what it saw last time, the *shadow*.
//! Three places need that: the simulated world (which looks after every
//! change to a node), the browser's free lab (after every typed command and
//! every expiry), and the real driver (which reads the keys off real
//! redis-servers after a command, see the backend's `real_env`). They used to
//! hold three copies of the comparison, already drifting apart; this module
//! is the one copy. The caller says *what it saw* ([`Seen`]: value, deadline
//! on its own clock, and the TTL to show) and *why it looked* ([`Cause`]);
//! the observer answers with [`Observed`] changes: lock events, candidate
//! grants (a client's command set the key on the node that counts), wrong
//! releases (a client's command removed a lock another client held) and
//! foreign extensions (a client's command moved the expiry of one).
//!
//! What counts as a lock depends on who asks ([`Scope`]): a lesson declares
//! its lock keys, and every value such a key takes is somebody's lock; free
//! play has no declaration, so a key becomes a lock when a client *acquires*
//! it ([`acquired_key`]: `SET … NX` answered `OK`, `SETNX` answered 1) and
//! stops being one when it no longer holds that client's value.
//!
//! Who holds the lock overall — the grant that numbers holders for the
//! stale-write check — is decided here too: on a single master, a client's
//! command that set the key on the master; on independent Redlock masters, a
//! client that newly holds the key on a majority of the live masters
//! (`recount_majority`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::reply::Reply;

/// How a lock key came to change on a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A client's command (or script, or transaction) ran on this node.
    Command,
    /// The node's own clock passed the key's deadline.
    Expiry,
    /// A replication batch from the master was applied.
    Replication,
    /// The node restarted without its data.
    Restart,
    /// A full resynchronisation replaced the node's data with its master's.
    FullSync,
    /// A replica was promoted and started expiring keys it had hidden.
    Promotion,
}

/// What happened to a lock key on one node: the lock bars of the timeline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum LockChange {
    /// The key now holds a (new) value. `owner` is the client that wrote it
    /// (the world tracks this itself, so it is right even when every client
    /// uses the same fixed value); `ttl_ms` is what `PTTL` would say.
    Acquired {
        owner: Option<u32>,
        value: String,
        ttl_ms: Option<u64>,
    },
    /// Same value, new deadline: a renewal (or, with `SETNX` then `EXPIRE`,
    /// the TTL arriving late).
    Renewed { ttl_ms: Option<u64> },
    /// The key is gone. `by` is the client whose command removed it, if a
    /// command did.
    Removed { by: Option<u32> },
}

/// Why the observer looked at a key, which is why it changed if it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A command (script, transaction) of this client ran on the node.
    Command(u32),
    /// The node's clock passed a deadline (or, on a real server, nothing the
    /// lab did: the key changed on its own).
    Expiry,
    /// A replication batch was applied; the client whose command it carries,
    /// when known.
    Replication(Option<u32>),
    /// The node restarted without its data.
    Restart,
    /// A full resynchronisation from this node.
    Sync(u32),
    /// A replica was promoted.
    Promotion,
}

impl Cause {
    /// How the timeline labels a change with this cause.
    pub fn via(self) -> Via {
        match self {
            Cause::Command(_) => Via::Command,
            Cause::Expiry => Via::Expiry,
            Cause::Replication(_) => Via::Replication,
            Cause::Restart => Via::Restart,
            Cause::Sync(_) => Via::FullSync,
            Cause::Promotion => Via::Promotion,
        }
    }

    /// The client whose command made the change, if a command did.
    pub fn client(self) -> Option<u32> {
        match self {
            Cause::Command(c) => Some(c),
            _ => None,
        }
    }
}

/// Which keys are locks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// The keys a lesson or scenario declares ([`LockObserver::watch`]):
    /// every value they take is a lock, owned by whoever wrote it.
    #[default]
    Declared,
    /// Free play: a key is a lock from a client's acquire
    /// ([`LockObserver::acquired`]) until it no longer holds that value.
    Acquired,
}

/// What the caller saw of a key on a node just now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub value: Vec<u8>,
    /// When it expires, on the caller's clock (`None`: no TTL).
    pub deadline: Option<u64>,
    /// What `PTTL` says, as the timeline shows it (a real run multiplies it
    /// back by its time compression).
    pub ttl_ms: Option<u64>,
}

impl Seen {
    /// What a simulated node holds for `key` (database 0) now, as the lock
    /// observer takes it: the free lab and a replayed MONITOR capture both
    /// watch one node this way. A key that is no longer a string cannot
    /// hold a token (its value reads as empty).
    pub fn on_node(node: &crate::server::Node, key: &str) -> Option<Seen> {
        let e = node.peek(0, key.as_bytes())?;
        let value = match &e.value {
            crate::server::db::Value::Str(v) => v.clone(),
            _ => Vec::new(),
        };
        Some(Seen {
            value,
            deadline: e.expires_at,
            ttl_ms: e.expires_at.map(|d| d.saturating_sub(node.now())),
        })
    }
}

/// The observer's record of one lock key on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The client that wrote this value, if the observer knows.
    pub owner: Option<u32>,
    pub value: Vec<u8>,
    pub deadline: Option<u64>,
    /// When the observer first saw this value.
    pub since: u64,
}

/// A change the observer saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observed {
    /// A lock bar changed on `node`. `deadline` is the old deadline of a
    /// removed key: a real run stamps an expiry there rather than when it
    /// noticed.
    Lock {
        node: u32,
        key: String,
        change: LockChange,
        via: Via,
        deadline: Option<u64>,
    },
    /// `client` is the next holder of `key`: the caller numbers the grant
    /// (`Monitor::grant`).
    Granted { client: u32, key: String },
    /// `by`'s command removed (or overwrote) the lock `held.owner` held.
    WrongRelease {
        node: u32,
        key: String,
        by: u32,
        held: Held,
    },
    /// `by`'s command moved the expiry of the lock `held.owner` held (a
    /// renewal without a token check).
    ForeignExtend {
        node: u32,
        key: String,
        by: u32,
        held: Held,
    },
}

impl Observed {
    /// The lock a client that does not own it touched (a wrong release or a
    /// foreign extension), for a caller that restamps its clock.
    pub fn held_mut(&mut self) -> Option<&mut Held> {
        match self {
            Observed::WrongRelease { held, .. } | Observed::ForeignExtend { held, .. } => Some(held),
            Observed::Lock { .. } | Observed::Granted { .. } => None,
        }
    }
}

/// The nodes that decide who holds one key, in a world where that is not
/// all of them (a `compare` world runs a single Redis, Redlock masters,
/// etcd and ZooKeeper side by side, each guarding its own key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyGroup {
    pub first: u32,
    pub count: u32,
    /// Independent masters: holding is by a majority of the group.
    pub majority: bool,
    /// Otherwise the node whose copy is the grant (the group's leader).
    pub master: u32,
}

/// Sets of clients by key, each client renamed (`to[i]` is client i's new
/// index): the Redlock majorities here, the believers in the invariant monitor.
pub(crate) fn renamed_sets(sets: &BTreeMap<String, BTreeSet<u32>>, to: &[u32]) -> BTreeMap<String, BTreeSet<u32>> {
    let map = |c: &u32| to.get(*c as usize).copied().unwrap_or(*c);
    sets.iter()
        .map(|(k, s)| (k.clone(), s.iter().map(map).collect()))
        .collect()
}

/// The shadows of the lock keys on every node, and who holds each lock.
#[derive(Clone, Debug, Default)]
pub struct LockObserver {
    scope: Scope,
    keys: Vec<String>,
    shadow: Vec<BTreeMap<String, Held>>,
    /// Independent masters (Redlock): holding is by majority.
    redlock: bool,
    /// The node whose locks are grants (single master or replicated).
    master: u32,
    /// Nodes that are down: they count for no majority.
    down: BTreeSet<u32>,
    /// Redlock: per key, the clients holding it on a majority now.
    majority: BTreeMap<String, BTreeSet<u32>>,
    /// Keys judged by a group of the nodes rather than all of them.
    groups: BTreeMap<String, KeyGroup>,
    /// A deadline read twice moves by the round trip on a real server; only
    /// a larger move is a renewal (0 in the simulator, which is exact).
    slack_ms: u64,
}

impl LockObserver {
    /// This observer with its clients renamed where they are bare numbers
    /// (the Redlock majorities' holders), as [`crate::invariants::Monitor`]'s
    /// `renamed_clients`; owners (`owner: Some(N)`) are renamed in the
    /// fingerprint's text.
    pub(crate) fn renamed_clients(&self, to: &[u32]) -> LockObserver {
        let mut o = self.clone();
        o.majority = renamed_sets(&self.majority, to);
        o
    }

    /// An observer of `nodes` nodes, `redlock` when they are independent
    /// masters.
    pub fn new(scope: Scope, nodes: usize, redlock: bool) -> LockObserver {
        LockObserver {
            scope,
            shadow: vec![BTreeMap::new(); nodes],
            redlock,
            ..LockObserver::default()
        }
    }

    /// Tolerate deadlines that move by up to `ms` between two reads.
    pub fn with_slack(mut self, ms: u64) -> LockObserver {
        self.slack_ms = ms;
        self
    }

    /// Watch `key` as a lock ([`Scope::Declared`]).
    pub fn watch(&mut self, key: &str) {
        if !self.keys.iter().any(|k| k == key) {
            self.keys.push(key.to_owned());
        }
    }

    /// Stop watching the key watched longest, and forget what was seen of
    /// it: a watcher with a bound on its keys (the real driver's free play)
    /// makes room this way. The key, if any was watched.
    pub fn unwatch_oldest(&mut self) -> Option<String> {
        if self.keys.is_empty() {
            return None;
        }
        let key = self.keys.remove(0);
        for shadow in &mut self.shadow {
            shadow.remove(&key);
        }
        self.majority.remove(&key);
        self.groups.remove(&key);
        Some(key)
    }

    /// The keys watched now.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    pub fn is_watched(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }

    /// Are the nodes independent masters (grants by majority)?
    pub fn is_redlock(&self) -> bool {
        self.redlock
    }

    /// The node whose locks count as grants (after a promotion, the new
    /// master).
    pub fn set_master(&mut self, node: u32) {
        self.master = node;
    }

    /// Judge `key` by the nodes of `group` only.
    pub fn set_group(&mut self, key: &str, group: KeyGroup) {
        self.groups.insert(key.to_owned(), group);
    }

    /// The group that judges `key`, if not all the nodes.
    pub fn group(&self, key: &str) -> Option<KeyGroup> {
        self.groups.get(key).copied()
    }

    /// The group starting at node `first` has a new leader: its copies are
    /// the grants from now on.
    pub fn set_group_master(&mut self, first: u32, node: u32) {
        for g in self.groups.values_mut().filter(|g| g.first == first) {
            g.master = node;
        }
    }

    /// Is `key` held by a majority of independent masters?
    pub fn is_majority(&self, key: &str) -> bool {
        self.groups.get(key).map_or(self.redlock, |g| g.majority)
    }

    /// A node went down or came back: a down node counts for no majority.
    pub fn set_down(&mut self, node: u32, down: bool) {
        if down {
            self.down.insert(node);
        } else {
            self.down.remove(&node);
        }
    }

    /// What the observer holds for `key` on `node`.
    pub fn held(&self, node: u32, key: &str) -> Option<&Held> {
        self.shadow.get(node as usize)?.get(key)
    }

    /// Every lock the observer sees on `node`, by key.
    pub fn held_on(&self, node: u32) -> impl Iterator<Item = (&String, &Held)> {
        self.shadow.get(node as usize).into_iter().flatten()
    }

    /// The owner of the copy of `key` with `value` on any node: whose lock a
    /// replica's copy is, when the caller cannot tell the replication's
    /// origin (a real server does not say).
    pub fn owner_of_value(&self, key: &str, value: &[u8]) -> Option<u32> {
        self.shadow
            .iter()
            .filter_map(|m| m.get(key))
            .find(|h| h.value == value && h.owner.is_some())
            .and_then(|h| h.owner)
    }

    /// The earliest deadline of a lock the observer sees: a caller that
    /// looks only when asked should look again then.
    pub fn next_deadline(&self) -> Option<u64> {
        self.shadow
            .iter()
            .flat_map(BTreeMap::values)
            .filter_map(|h| h.deadline)
            .min()
    }

    /// `node` cannot be read now: a deadline there that has passed is no
    /// longer one to wait for (the key's fate shows when it answers again).
    pub fn unreadable(&mut self, node: u32, now: u64) {
        if let Some(m) = self.shadow.get_mut(node as usize) {
            for h in m.values_mut() {
                if h.deadline.is_some_and(|d| d <= now) {
                    h.deadline = None;
                }
            }
        }
    }

    /// Free play: `client`'s command just acquired `key` on `node`, so the
    /// key is a lock from now on ([`Scope::Acquired`]); then
    /// [`LockObserver::observe`] it with the command as cause.
    pub fn acquired(&mut self, key: &str) {
        self.watch(key);
    }

    /// Compare what `node` holds for `key` now (`cur`) with the shadow, and
    /// say what changed. `now` stamps a new lock's `since`.
    pub fn observe(&mut self, node: u32, key: &str, cur: Option<Seen>, cause: Cause, now: u64) -> Vec<Observed> {
        let mut out = Vec::new();
        if !self.is_watched(key) {
            return out;
        }
        let n = node as usize;
        if self.shadow.len() <= n {
            self.shadow.resize(n + 1, BTreeMap::new());
        }
        let via = cause.via();
        let old = self.shadow[n].get(key).cloned();
        let lock = |change: LockChange, deadline: Option<u64>| Observed::Lock {
            node,
            key: key.to_owned(),
            change,
            via,
            deadline,
        };
        match (old, cur) {
            (None, None) => {}
            (Some(o), None) => {
                self.shadow[n].remove(key);
                out.push(lock(LockChange::Removed { by: cause.client() }, o.deadline));
                not_owner(node, key, cause, o, false, &mut out);
                self.released(key);
                if self.is_majority(key) {
                    self.recount_majority_into(key, &mut out);
                }
            }
            (Some(o), Some(seen)) if o.value == seen.value => {
                if self.deadline_moved(o.deadline, seen.deadline) {
                    if let Some(h) = self.shadow[n].get_mut(key) {
                        h.deadline = seen.deadline;
                    }
                    out.push(lock(LockChange::Renewed { ttl_ms: seen.ttl_ms }, None));
                    not_owner(node, key, cause, o, true, &mut out);
                }
            }
            (Some(o), Some(_)) if self.scope == Scope::Acquired => {
                // Free play: overwritten without an acquire, the lock is gone
                // (an acquire cannot overwrite: NX fails on a key that exists).
                self.shadow[n].remove(key);
                out.push(lock(LockChange::Removed { by: cause.client() }, None));
                not_owner(node, key, cause, o, false, &mut out);
                self.released(key);
            }
            (old, Some(seen)) => {
                if let Some(o) = old {
                    not_owner(node, key, cause, o, false, &mut out);
                }
                let owner = self.owner_by(cause, key);
                let change = LockChange::Acquired {
                    owner,
                    value: String::from_utf8_lossy(&seen.value).into_owned(),
                    ttl_ms: seen.ttl_ms,
                };
                self.shadow[n].insert(
                    key.to_owned(),
                    Held {
                        owner,
                        value: seen.value,
                        deadline: seen.deadline,
                        since: now,
                    },
                );
                out.push(lock(change, None));
                if let (Cause::Command(c), Some(_)) = (cause, owner) {
                    self.granted_into(node, key, c, &mut out);
                }
            }
        }
        out
    }

    /// A key kept its value: did its expiry move (a renewal)? Beyond
    /// `slack_ms`, so that reading a TTL back is not taken for one.
    fn deadline_moved(&self, old: Option<u64>, new: Option<u64>) -> bool {
        match (old, new) {
            (Some(a), Some(b)) => a.abs_diff(b) > self.slack_ms,
            (None, None) => false,
            _ => true,
        }
    }

    /// Who owns a key that appeared because of `cause`: the client whose
    /// command set it, the owner replicated or synced from elsewhere, nobody
    /// after an expiry, a restart or a promotion.
    fn owner_by(&self, cause: Cause, key: &str) -> Option<u32> {
        match cause {
            Cause::Command(c) => Some(c),
            Cause::Replication(o) => o,
            Cause::Sync(src) => self.held(src, key).and_then(|h| h.owner),
            Cause::Expiry | Cause::Restart | Cause::Promotion => None,
        }
    }

    /// Client `c`'s command set `key` on `node`: a grant when that node is
    /// the master, or (Redlock) when it makes a majority.
    fn granted_into(&mut self, node: u32, key: &str, c: u32, out: &mut Vec<Observed>) {
        let master = self.groups.get(key).map_or(self.master, |g| g.master);
        if self.is_majority(key) {
            self.recount_majority_into(key, out);
        } else if node == master {
            out.push(Observed::Granted {
                client: c,
                key: key.to_owned(),
            });
        }
    }

    /// Free play forgets a lock once no node holds it.
    fn released(&mut self, key: &str) {
        if self.scope == Scope::Acquired && self.shadow.iter().all(|m| !m.contains_key(key)) {
            self.keys.retain(|k| k != key);
        }
    }

    /// `node` restarted without its data: every lock it had is gone.
    pub fn forget_node(&mut self, node: u32, now: u64) -> Vec<Observed> {
        let keys: Vec<String> = self.held_on(node).map(|(k, _)| k.clone()).collect();
        keys.into_iter()
            .flat_map(|k| self.observe(node, &k, None, Cause::Restart, now))
            .collect()
    }

    /// Redlock: who holds `key` on a majority of the live masters? A client
    /// that newly does is the next holder (a [`Observed::Granted`]).
    pub fn recount_majority(&mut self, key: &str) -> Vec<Observed> {
        let mut out = Vec::new();
        if self.is_majority(key) {
            self.recount_majority_into(key, &mut out);
        }
        out
    }

    fn recount_majority_into(&mut self, key: &str, out: &mut Vec<Observed>) {
        let (nodes, quorum) = match self.groups.get(key) {
            Some(g) => (g.first..g.first + g.count, g.count as usize / 2 + 1),
            None => (0..self.shadow.len() as u32, self.shadow.len() / 2 + 1),
        };
        let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
        for n in nodes {
            if self.down.contains(&n) {
                continue;
            }
            let Some(m) = self.shadow.get(n as usize) else { continue };
            if let Some(o) = m.get(key).and_then(|h| h.owner) {
                *counts.entry(o).or_default() += 1;
            }
        }
        let now_set: BTreeSet<u32> = counts
            .into_iter()
            .filter(|&(_, c)| c >= quorum)
            .map(|(c, _)| c)
            .collect();
        let old = self.majority.get(key).cloned().unwrap_or_default();
        for &c in now_set.difference(&old) {
            out.push(Observed::Granted {
                client: c,
                key: key.to_owned(),
            });
        }
        self.majority.insert(key.to_owned(), now_set);
    }
}

/// The key (and value) `argv` took as a lock, judged by its reply: `SET key
/// value … NX …` answered `OK`, or `SETNX key value` answered 1. The one rule
/// for "is this an acquire", for every console.
pub fn acquired_key(argv: &[Vec<u8>], reply: &Reply) -> Option<(String, Vec<u8>)> {
    let name = argv.first()?;
    let (key, value) = (argv.get(1)?, argv.get(2)?);
    let taken = if name.eq_ignore_ascii_case(b"set") {
        argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"nx")) && *reply == Reply::ok()
    } else {
        name.eq_ignore_ascii_case(b"setnx") && *reply == Reply::Integer(1)
    };
    taken.then(|| (String::from_utf8_lossy(key).into_owned(), value.clone()))
}

/// A command by a client other than the owner of `held` changed it on
/// `node`: removed or overwrote it (a wrong release) or, with `extend`,
/// moved its deadline (another client's lock renewed). Nothing when the
/// cause is no client's command or the owner is unknown.
fn not_owner(node: u32, key: &str, cause: Cause, held: Held, extend: bool, out: &mut Vec<Observed>) {
    if let (Some(by), Some(owner)) = (cause.client(), held.owner) {
        if by != owner {
            let key = key.to_owned();
            out.push(if extend {
                Observed::ForeignExtend { node, key, by, held }
            } else {
                Observed::WrongRelease { node, key, by, held }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse;

    fn seen(v: &str, deadline: Option<u64>) -> Option<Seen> {
        Some(Seen {
            value: v.as_bytes().to_vec(),
            deadline,
            ttl_ms: deadline,
        })
    }

    fn changes(obs: &[Observed]) -> Vec<LockChange> {
        obs.iter()
            .filter_map(|o| match o {
                Observed::Lock { change, .. } => Some(change.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn what_counts_as_taking_a_lock() {
        let key = |line: &str, reply: Reply| acquired_key(&parse(line).unwrap(), &reply).map(|(k, _)| k);
        assert_eq!(key("SET lock A NX PX 100", Reply::ok()).as_deref(), Some("lock"));
        assert_eq!(key("set lock A px 100 nx", Reply::ok()).as_deref(), Some("lock"));
        assert_eq!(key("SET lock A NX PX 100", Reply::Nil), None);
        assert_eq!(key("SET lock A PX 100", Reply::ok()), None);
        assert_eq!(key("SET NX A", Reply::ok()), None, "NX as the key is not the NX option");
        assert_eq!(key("SETNX lock A", Reply::Integer(1)).as_deref(), Some("lock"));
        assert_eq!(key("SETNX lock A", Reply::Integer(0)), None);
        assert_eq!(key("SETNX lock", Reply::Integer(1)), None, "no value, no lock");
        assert_eq!(key("GET lock", Reply::bulk("A")), None);
    }

    #[test]
    fn only_another_clients_renewal_is_a_foreign_extension() {
        let mut o = LockObserver::new(Scope::Declared, 1, false);
        o.watch("lock");
        o.observe(0, "lock", seen("B", Some(100)), Cause::Command(1), 10);
        let own = o.observe(0, "lock", seen("B", Some(200)), Cause::Command(1), 20);
        assert!(
            !own.iter().any(|x| matches!(x, Observed::ForeignExtend { .. })),
            "{own:?}"
        );
        let theirs = o.observe(0, "lock", seen("B", Some(300)), Cause::Command(0), 30);
        assert_eq!(changes(&theirs), vec![LockChange::Renewed { ttl_ms: Some(300) }]);
        assert!(
            matches!(&theirs[1], Observed::ForeignExtend { by: 0, held, .. } if held.owner == Some(1) && held.since == 10),
            "{theirs:?}"
        );
        let replicated = o.observe(0, "lock", seen("B", Some(400)), Cause::Replication(Some(0)), 40);
        assert_eq!(replicated.len(), 1, "only a command extends: {replicated:?}");
    }

    #[test]
    fn a_declared_lock_is_acquired_renewed_granted_and_removed() {
        let mut o = LockObserver::new(Scope::Declared, 1, false);
        o.watch("lock");
        let got = o.observe(0, "lock", seen("A", Some(100)), Cause::Command(0), 0);
        assert_eq!(
            got[1],
            Observed::Granted {
                client: 0,
                key: "lock".into()
            }
        );
        let got = o.observe(0, "lock", seen("A", Some(200)), Cause::Command(0), 50);
        assert_eq!(changes(&got), vec![LockChange::Renewed { ttl_ms: Some(200) }]);
        assert!(o
            .observe(0, "lock", seen("A", Some(200)), Cause::Command(0), 60)
            .is_empty());
        let got = o.observe(0, "lock", None, Cause::Command(1), 70);
        assert_eq!(changes(&got), vec![LockChange::Removed { by: Some(1) }]);
        assert!(
            matches!(&got[1], Observed::WrongRelease { by: 1, held, .. } if held.owner == Some(0) && held.since == 0),
            "{got:?}"
        );
        assert!(o.observe(0, "other", seen("x", None), Cause::Command(0), 80).is_empty());
    }

    #[test]
    fn free_play_forgets_a_lock_once_it_is_overwritten() {
        let mut o = LockObserver::new(Scope::Acquired, 1, false);
        assert!(o.observe(0, "k", seen("v", None), Cause::Command(0), 0).is_empty());
        o.acquired("k");
        o.observe(0, "k", seen("A", None), Cause::Command(0), 0);
        let got = o.observe(0, "k", seen("B", None), Cause::Command(1), 5);
        assert_eq!(changes(&got), vec![LockChange::Removed { by: Some(1) }]);
        assert!(!o.is_watched("k"));
        assert!(o.observe(0, "k", None, Cause::Command(1), 6).is_empty());
    }

    #[test]
    fn redlock_grants_by_majority_of_live_masters() {
        let mut o = LockObserver::new(Scope::Declared, 5, true);
        o.watch("r");
        let grants = |obs: Vec<Observed>| obs.iter().filter(|o| matches!(o, Observed::Granted { .. })).count();
        assert_eq!(grants(o.observe(0, "r", seen("A", None), Cause::Command(0), 0)), 0);
        assert_eq!(grants(o.observe(1, "r", seen("A", None), Cause::Command(0), 0)), 0);
        assert_eq!(grants(o.observe(2, "r", seen("A", None), Cause::Command(0), 0)), 1);
        assert_eq!(grants(o.observe(3, "r", seen("A", None), Cause::Command(0), 0)), 0);
        o.set_down(0, true);
        o.set_down(1, true);
        assert_eq!(
            grants(o.recount_majority("r")),
            0,
            "2 of 5 live copies hold no majority"
        );
        o.set_down(0, false);
        assert_eq!(grants(o.recount_majority("r")), 1, "3 of 5 again: a new holder");
    }

    #[test]
    fn grouped_keys_are_judged_by_their_own_nodes() {
        // Node 0 a single Redis, nodes 1..=3 Redlock masters, node 4 a
        // service leader: three keys, three ways of granting.
        let mut o = LockObserver::new(Scope::Declared, 5, false);
        let group = |first, count, majority, master| KeyGroup {
            first,
            count,
            majority,
            master,
        };
        for (k, g) in [
            ("single", group(0, 1, false, 0)),
            ("rl", group(1, 3, true, 1)),
            ("svc", group(4, 1, false, 4)),
        ] {
            o.watch(k);
            o.set_group(k, g);
        }
        let grants = |obs: Vec<Observed>| obs.iter().filter(|o| matches!(o, Observed::Granted { .. })).count();
        assert_eq!(grants(o.observe(0, "single", seen("A", None), Cause::Command(0), 0)), 1);
        assert_eq!(grants(o.observe(1, "rl", seen("A", None), Cause::Command(0), 0)), 0);
        assert_eq!(
            grants(o.observe(2, "rl", seen("A", None), Cause::Command(0), 0)),
            1,
            "2 of the group's 3 masters are its majority, though the world has 5 nodes"
        );
        assert_eq!(grants(o.observe(4, "svc", seen("A", None), Cause::Command(0), 0)), 1);
        assert_eq!(
            grants(o.recount_majority("single")),
            0,
            "a single node's key has no majority to recount"
        );
        o.set_group_master(4, 3);
        assert_eq!(
            grants(o.observe(4, "svc", seen("B", None), Cause::Command(1), 5)),
            0,
            "node 4 no longer leads its group"
        );
    }

    #[test]
    fn a_real_read_tolerates_the_round_trip() {
        let mut o = LockObserver::new(Scope::Declared, 1, false).with_slack(2);
        o.watch("lock");
        o.observe(0, "lock", seen("A", Some(100)), Cause::Command(0), 0);
        assert!(o.observe(0, "lock", seen("A", Some(102)), Cause::Expiry, 1).is_empty());
        assert_eq!(o.next_deadline(), Some(100));
        o.unreadable(0, 100);
        assert_eq!(o.next_deadline(), None);
    }
}
