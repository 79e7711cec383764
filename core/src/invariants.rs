//! What "the lock worked" means, checked on every event.
//!
//! A distributed lock promises mutual exclusion, but "two clients were
//! inside at once" is not, on its own, a bug you can see: a client paused by
//! a garbage collector *always* overlaps with the next holder for a while,
//! and with fencing tokens that overlap is harmless. So the monitor records
//! overlap (it is the root of everything else, and the timeline draws it as
//! a band) and reports as violations only what actually does damage:
//!
//! * **stale-write** — the resource accepted a write from a holder after it
//!   had accepted one from a *later* holder: a lost update, the thing
//!   fencing exists to prevent.
//! * **wrong-release** — a client's release removed a lock that another
//!   client had acquired (bare `DEL`, `GET` then `DEL`, `GETDEL`).
//! * **deadlock** — a lock key that can never expire while its owner is
//!   gone (`SETNX` then a crash before `EXPIRE`), or, when a bound is set, a
//!   key one owner keeps longer than that bound (an unbounded watchdog):
//!   nobody else can ever acquire.
//! * **foreign-extend** — a client's command moved the expiry of a lock
//!   that another client had acquired (a bare `PEXPIRE key ttl` as the
//!   renewal): renewing a lock you do not own is the bug itself, even when
//!   a fence later refuses the renewer's write.
//! * **overlap** — two clients believe they hold the lock at once; a
//!   violation only when a scenario asks for strict mutual exclusion.
//!
//! "Later holder" needs an order the clients themselves cannot know. The
//! world knows it: it watches the lock key on the node and numbers each
//! acquisition as it *happens on the server* (the `Granted` event). Every
//! client remembers the number of its latest grant; a write is judged by
//! that number.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::actor::Actor;
use crate::observe::{Held, Observed};

/// The invariants, with the stable names the explorer prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invariant {
    StaleWrite,
    WrongRelease,
    Deadlock,
    ForeignExtend,
    Overlap,
}

impl Invariant {
    /// Every invariant, in the order the explorer lists them.
    pub const ALL: [Invariant; 5] = [
        Invariant::StaleWrite,
        Invariant::WrongRelease,
        Invariant::Deadlock,
        Invariant::ForeignExtend,
        Invariant::Overlap,
    ];

    /// `stale-write`, `wrong-release`, `deadlock`, `foreign-extend`, `overlap`.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::StaleWrite => "stale-write",
            Invariant::WrongRelease => "wrong-release",
            Invariant::Deadlock => "deadlock",
            Invariant::ForeignExtend => "foreign-extend",
            Invariant::Overlap => "overlap",
        }
    }

    /// What a person calls it, for the timeline's violation band and the
    /// outcome box: both drivers and the CLI show the same words.
    pub fn title(self) -> &'static str {
        match self {
            Invariant::StaleWrite => "stale write accepted",
            Invariant::WrongRelease => "lock deleted by a non-owner",
            Invariant::Deadlock => "lock never expires",
            Invariant::ForeignExtend => "lock extended by a non-owner",
            Invariant::Overlap => "two holders",
        }
    }

    /// [`Invariant::title`] in Chinese.
    pub fn title_zh(self) -> &'static str {
        match self {
            Invariant::StaleWrite => "过期写入被接受",
            Invariant::WrongRelease => "锁被非持有者删除",
            Invariant::Deadlock => "锁永不过期",
            Invariant::ForeignExtend => "锁被非持有者续期",
            Invariant::Overlap => "两个持有者",
        }
    }

    pub fn parse(s: &str) -> Option<Invariant> {
        Invariant::ALL.into_iter().find(|i| i.name() == s)
    }
}

impl std::fmt::Display for Invariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A broken invariant: which, over what span of world time, who was
/// involved, and a sentence saying why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    pub invariant: Invariant,
    pub from_ms: u64,
    pub to_ms: u64,
    pub actors: Vec<Actor>,
    pub detail: String,
}

impl Violation {
    /// Is `self` a later state of `earlier`: the same broken invariant, from
    /// the same moment, with the same people, only lasting longer? A
    /// violation still going on grows; the simulator stretches its event in
    /// place, a driver that streams events sends it again (see
    /// [`crate::trace::append_streamed`]).
    pub fn amends(&self, earlier: &Violation) -> bool {
        self.invariant == earlier.invariant
            && self.from_ms == earlier.from_ms
            && self.actors == earlier.actors
            && self.detail == earlier.detail
            && self.to_ms >= earlier.to_ms
    }
}

/// What the monitor watches and how strict it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct InvariantConfig {
    /// The keys that are locks. Lock and Redlock programs add their own key;
    /// plain command scenarios list theirs here.
    pub lock_keys: Vec<String>,
    /// Report overlap itself as a violation (strict mutual exclusion).
    pub overlap_is_violation: bool,
    /// A key held by one owner longer than this is a deadlock (for the
    /// unbounded-watchdog lesson). `None`: no bound.
    pub max_hold_ms: Option<u64>,
}

impl Default for InvariantConfig {
    fn default() -> Self {
        InvariantConfig {
            lock_keys: vec!["lock".to_owned()],
            overlap_is_violation: false,
            max_hold_ms: None,
        }
    }
}

/// The last accepted write from the latest holder seen so far.
#[derive(Clone, Debug)]
struct LatestWrite {
    grant: u32,
    client: u32,
    at_ms: u64,
    token: Option<i64>,
}

/// A change in who overlaps on a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverlapChange {
    pub clients: Vec<u32>,
    pub begin: bool,
    pub since_ms: u64,
}

/// A client's belief changed ([`Monitor::change_belief`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BeliefChange {
    /// The overlap that began or ended with it.
    pub overlap: Option<OverlapChange>,
    /// The overlap violation that began with it, when the lesson counts an
    /// overlap as one.
    pub violation: Option<Violation>,
}

/// The invariant state the world updates as events happen.
#[derive(Clone, Debug, Default)]
pub struct Monitor {
    config: InvariantConfig,
    /// Grants so far, per lock key.
    grants: BTreeMap<String, u32>,
    /// Per client: the key of its latest grant and that grant's number.
    latest_grant: Vec<(Option<String>, u32)>,
    /// Per client and key: its latest grant of that key (a client may hold
    /// several locks at once: lesson 45's one process, four services).
    grant_of: BTreeMap<(u32, String), u32>,
    /// key → clients that believe they hold it.
    beliefs: BTreeMap<String, BTreeSet<u32>>,
    /// key → when the current overlap began.
    overlapping: BTreeMap<String, u64>,
    /// Per lock key: the last accepted write from its latest holder. Keys
    /// are separate resources (stock item 1001 and item 1002): a holder of
    /// one is never "later" than a holder of another.
    latest_write: BTreeMap<String, LatestWrite>,
    /// (node, key, held since) already reported as deadlocked.
    deadlocks: BTreeSet<(u32, String, u64)>,
    violations: Vec<Violation>,
    /// A streaming driver's overlaps still going on: by key, their index in
    /// `violations` ([`Monitor::record_overlap`]).
    ongoing: BTreeMap<String, usize>,
}

impl Monitor {
    /// This monitor with its clients renamed (`to[i]` is client i's new
    /// index) where they are bare numbers: the per-client grants, the
    /// grants' keys, the believers. What `Debug` writes as `client: N`
    /// (the latest writes) is renamed in the fingerprint's text instead
    /// (`World::symmetric_fingerprint`, the symmetry reduction).
    pub(crate) fn renamed_clients(&self, to: &[u32]) -> Monitor {
        let map = |c: u32| to.get(c as usize).copied().unwrap_or(c);
        let mut m = self.clone();
        for (old, g) in self.latest_grant.iter().enumerate() {
            if let Some(slot) = m.latest_grant.get_mut(map(old as u32) as usize) {
                *slot = g.clone();
            }
        }
        m.grant_of = self
            .grant_of
            .iter()
            .map(|((c, k), g)| ((map(*c), k.clone()), *g))
            .collect();
        m.beliefs = crate::observe::renamed_sets(&self.beliefs, to);
        m
    }

    pub fn new(config: InvariantConfig) -> Monitor {
        Monitor {
            config,
            ..Monitor::default()
        }
    }

    pub fn config(&self) -> &InvariantConfig {
        &self.config
    }

    /// Watch one more key as a lock.
    pub fn watch_key(&mut self, key: &str) {
        if !self.config.lock_keys.iter().any(|k| k == key) {
            self.config.lock_keys.push(key.to_owned());
        }
    }

    pub fn add_client(&mut self) {
        self.latest_grant.push((None, 0));
    }

    /// Number the next acquisition of `key` and remember it as `client`'s
    /// latest.
    pub fn grant(&mut self, client: u32, key: &str) -> u32 {
        let n = self.grants.entry(key.to_owned()).or_default();
        *n += 1;
        let n = *n;
        // A client the caller never added (a real session's console client)
        // still has its grant remembered.
        if self.latest_grant.len() <= client as usize {
            self.latest_grant.resize(client as usize + 1, (None, 0));
        }
        if let Some(g) = self.latest_grant.get_mut(client as usize) {
            *g = (Some(key.to_owned()), n);
        }
        self.grant_of.insert((client, key.to_owned()), n);
        n
    }

    /// The client's latest grant: its key and number (0: it never held a
    /// lock).
    pub fn latest_grant(&self, client: u32) -> (Option<&str>, u32) {
        self.latest_grant
            .get(client as usize)
            .map_or((None, 0), |(k, n)| (k.as_deref(), *n))
    }

    /// Clients that believe they hold `key` now.
    pub fn believers(&self, key: &str) -> Vec<u32> {
        self.beliefs
            .get(key)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Does `client` believe it holds `key`?
    pub fn believes(&self, key: &str, client: u32) -> bool {
        self.beliefs.get(key).is_some_and(|s| s.contains(&client))
    }

    /// Record that `client` now believes (or no longer believes) it holds
    /// `key`; returns an overlap that began or ended.
    pub fn believe(&mut self, key: &str, client: u32, holds: bool, now: u64) -> Option<OverlapChange> {
        let set = self.beliefs.entry(key.to_owned()).or_default();
        let changed = if holds { set.insert(client) } else { set.remove(&client) };
        if !changed {
            return None;
        }
        let clients: Vec<u32> = set.iter().copied().collect();
        match (self.overlapping.get(key).copied(), clients.len() >= 2) {
            (None, true) => {
                self.overlapping.insert(key.to_owned(), now);
                Some(OverlapChange {
                    clients,
                    begin: true,
                    since_ms: now,
                })
            }
            (Some(since), false) => {
                self.overlapping.remove(key);
                Some(OverlapChange {
                    clients,
                    begin: false,
                    since_ms: since,
                })
            }
            _ => None,
        }
    }

    /// `client` now believes (or no longer believes) it holds `key`:
    /// `None` when that is what it believed already (nothing to trace),
    /// otherwise the overlap that began or ended and the violation that
    /// began. The bookkeeping of a belief, done once for the simulated world
    /// and the real runner; each only puts the result in its trace.
    pub fn change_belief(
        &mut self,
        key: &str,
        client: u32,
        holds: bool,
        now: u64,
        name: &dyn Fn(u32) -> String,
    ) -> Option<BeliefChange> {
        if self.believes(key, client) == holds {
            return None;
        }
        let overlap = self.believe(key, client, holds, now);
        let violation = overlap
            .as_ref()
            .filter(|ch| ch.begin && self.config.overlap_is_violation)
            .map(|ch| Monitor::overlap_violation(key, &ch.clients, now, name));
        Some(BeliefChange { overlap, violation })
    }

    /// The resource accepted a write from `client`: was it stale? `names`
    /// renders the detail sentence.
    pub fn accepted_write(
        &mut self,
        client: u32,
        now: u64,
        token: Option<i64>,
        name: &dyn Fn(u32) -> String,
    ) -> Option<Violation> {
        self.accepted_write_under(client, None, now, token, name)
    }

    /// [`Monitor::accepted_write`] for a write made under `lock`: judged by
    /// the client's latest grant of that lock rather than of any (`None`:
    /// its latest grant).
    pub fn accepted_write_under(
        &mut self,
        client: u32,
        lock: Option<&str>,
        now: u64,
        token: Option<i64>,
        name: &dyn Fn(u32) -> String,
    ) -> Option<Violation> {
        let (key, grant) = match lock {
            Some(l) => (
                l.to_owned(),
                self.grant_of.get(&(client, l.to_owned())).copied().unwrap_or(0),
            ),
            None => {
                let (key, grant) = self.latest_grant(client);
                (key.unwrap_or_default().to_owned(), grant)
            }
        };
        let mut violation = None;
        if let Some(w) = self.latest_write.get(&key) {
            if w.grant > grant && w.client != client {
                let tok = |t: Option<i64>| t.map_or("no token".to_owned(), |t| format!("token {t}"));
                let reused = match (token, w.token) {
                    (Some(a), Some(b)) if a == b => format!(" — fencing token {a} was handed out twice"),
                    _ => String::new(),
                };
                violation = Some(Violation {
                    invariant: Invariant::StaleWrite,
                    from_ms: w.at_ms,
                    to_ms: now,
                    actors: vec![Actor::Client(client), Actor::Client(w.client), Actor::Resource],
                    detail: format!(
                        "the resource accepted {}'s write ({}, holder #{grant}) after {}'s ({}, holder #{}): {}'s update is lost{reused}",
                        name(client),
                        tok(token),
                        name(w.client),
                        tok(w.token),
                        w.grant,
                        name(w.client),
                    ),
                });
            }
        }
        if self.latest_write.get(&key).is_none_or(|w| grant >= w.grant) {
            self.latest_write.insert(
                key,
                LatestWrite {
                    grant,
                    client,
                    at_ms: now,
                    token,
                },
            );
        }
        violation
    }

    /// A lock key on `node`, owned by `owner` and held since `since`, that
    /// nobody else can acquire from `from` on: report it once.
    #[allow(clippy::too_many_arguments)]
    pub fn deadlock(
        &mut self,
        node: u32,
        key: &str,
        owner: u32,
        since: u64,
        from: u64,
        now: u64,
        detail: String,
    ) -> Option<Violation> {
        if !self.deadlocks.insert((node, key.to_owned(), since)) {
            return None;
        }
        Some(Violation {
            invariant: Invariant::Deadlock,
            from_ms: from.min(now),
            to_ms: now,
            actors: vec![Actor::Client(owner), Actor::Node(node)],
            detail,
        })
    }

    /// `by`'s command removed (or overwrote) on `node` the lock `held` that
    /// another client acquired: a wrong release, from the lock's acquisition
    /// to now. `None` when the observer knew no owner or `by` was it.
    #[allow(clippy::too_many_arguments)]
    pub fn wrong_release(
        &mut self,
        node: u32,
        key: &str,
        by: u32,
        held: &Held,
        now: u64,
        client: &dyn Fn(u32) -> String,
        node_name: &dyn Fn(u32) -> String,
    ) -> Option<Violation> {
        not_owners(Invariant::WrongRelease, node, key, by, held, now, client, node_name)
    }

    /// A lock touched by a client that does not own it, as the observer saw
    /// it: [`Observed::WrongRelease`] judged by [`Monitor::wrong_release`];
    /// [`Observed::ForeignExtend`], `by`'s command moving the expiry of a lock
    /// another client acquired (renewing a lock you do not own, a bare
    /// `PEXPIRE` as the renewal: the history checker's
    /// extension-after-expiry seen from inside, where the world knows the
    /// key's owner at the moment of the command); `None` for any other
    /// observation or when the observer knew no owner or `by` was it. One arm
    /// serves the world, the real runner and the history monitor.
    pub fn not_owner(
        &mut self,
        observed: &Observed,
        now: u64,
        client: &dyn Fn(u32) -> String,
        node_name: &dyn Fn(u32) -> String,
    ) -> Option<Violation> {
        match observed {
            Observed::WrongRelease { node, key, by, held } => {
                self.wrong_release(*node, key, *by, held, now, client, node_name)
            }
            Observed::ForeignExtend { node, key, by, held } => {
                not_owners(Invariant::ForeignExtend, *node, key, *by, held, now, client, node_name)
            }
            Observed::Lock { .. } | Observed::Granted { .. } => None,
        }
    }

    /// Keep a violation the world found.
    pub fn record(&mut self, v: Violation) {
        self.violations.push(v);
    }

    /// Two or more clients believe they hold `key` since `now`: the overlap
    /// violation a strict-mutual-exclusion lesson reports, worded once for
    /// both drivers.
    pub fn overlap_violation(key: &str, clients: &[u32], now: u64, name: &dyn Fn(u32) -> String) -> Violation {
        let who: Vec<String> = clients.iter().map(|&i| name(i)).collect();
        Violation {
            invariant: Invariant::Overlap,
            from_ms: now,
            to_ms: now,
            actors: clients.iter().map(|&i| Actor::Client(i)).collect(),
            detail: format!("{} all believe they hold {key}", who.join(" and ")),
        }
    }

    /// A violation still going on lasts until `to_ms` so far.
    /// Record `v`, the overlap of `key` that just began, for a driver that
    /// streams its events (a real run): the overlap goes on, growing with
    /// [`Monitor::stretch`], until [`Monitor::overlap_ended`]. The
    /// simulator's world stretches its violation events in place instead.
    pub fn record_overlap(&mut self, key: &str, v: Violation) {
        self.ongoing.insert(key.to_owned(), self.violations.len());
        self.violations.push(v);
    }

    /// Every overlap still going on lasts until `now` so far: the ones that
    /// grew, as they are now, for the driver to send again (an event once
    /// streamed cannot be stretched in place; the page keeps the latest
    /// copy, [`crate::trace::append_streamed`]).
    pub fn stretch(&mut self, now: u64) -> Vec<Violation> {
        let mut grown = Vec::new();
        for &i in self.ongoing.values() {
            if let Some(v) = self.violations.get_mut(i).filter(|v| v.to_ms < now) {
                v.to_ms = now;
                grown.push(v.clone());
            }
        }
        grown
    }

    /// The overlap of `key` ended at `now`: its violation, stretched to
    /// `now`, goes on no longer. The grown copy, if it grew.
    pub fn overlap_ended(&mut self, key: &str, now: u64) -> Option<Violation> {
        let i = self.ongoing.remove(key)?;
        let v = self.violations.get_mut(i).filter(|v| v.to_ms < now)?;
        v.to_ms = now;
        Some(v.clone())
    }

    /// What a belief `change` of `key` at `now` means for a streaming
    /// driver's band: the overlap violation that began (recorded, going
    /// on), or the last grown copy of the one that ended.
    pub fn stream_overlap(&mut self, key: &str, change: &BeliefChange, now: u64) -> Option<Violation> {
        match (&change.violation, &change.overlap) {
            (Some(v), _) => {
                self.record_overlap(key, v.clone());
                Some(v.clone())
            }
            (None, Some(o)) if !o.begin => self.overlap_ended(key, now),
            _ => None,
        }
    }

    /// The run is over: every overlap still going on ends where it is.
    pub fn stop_ongoing(&mut self) {
        self.ongoing.clear();
    }

    pub fn extend(&mut self, index: usize, to_ms: u64) {
        if let Some(v) = self.violations.get_mut(index) {
            v.to_ms = v.to_ms.max(to_ms);
        }
    }

    /// Every violation so far, in order.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }
}

/// A command by `by` on a lock `owner` holds (a wrong release or a foreign
/// extension): the span from the lock's acquisition to now, the two clients
/// and the node.
#[allow(clippy::too_many_arguments)]
fn not_owners(
    invariant: Invariant,
    node: u32,
    key: &str,
    by: u32,
    held: &Held,
    now: u64,
    client: &dyn Fn(u32) -> String,
    node_name: &dyn Fn(u32) -> String,
) -> Option<Violation> {
    let owner = held.owner.filter(|&o| o != by)?;
    let (did, tail) = match invariant {
        Invariant::ForeignExtend => ("extended", ": it renewed a lock it does not own"),
        _ => ("removed", ""),
    };
    let detail = format!(
        "{}'s command {did} the lock {key} that {} acquired on {} at {} ms{tail}",
        client(by),
        client(owner),
        node_name(node),
        held.since
    );
    Some(Violation {
        invariant,
        from_ms: held.since,
        to_ms: now,
        actors: vec![Actor::Client(by), Actor::Client(owner), Actor::Node(node)],
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(i: u32) -> String {
        ["A", "B", "C"][i as usize].to_owned()
    }

    #[test]
    fn names_are_stable() {
        for i in Invariant::ALL {
            assert_eq!(Invariant::parse(i.name()), Some(i));
        }
        assert_eq!(serde_json_like(Invariant::StaleWrite), "stale-write");
    }

    fn serde_json_like(i: Invariant) -> &'static str {
        i.name()
    }

    #[test]
    fn overlap_begins_and_ends() {
        let mut m = Monitor::new(InvariantConfig::default());
        m.add_client();
        m.add_client();
        assert_eq!(m.believe("lock", 0, true, 10), None);
        let b = m.believe("lock", 1, true, 20).expect("begins");
        assert!(b.begin);
        assert_eq!(b.clients, vec![0, 1]);
        let e = m.believe("lock", 0, false, 30).expect("ends");
        assert!(!e.begin);
        assert_eq!(e.since_ms, 20);
    }

    #[test]
    fn a_belief_change_is_traced_once_and_an_overlap_is_a_violation_only_when_strict() {
        for strict in [false, true] {
            let mut m = Monitor::new(InvariantConfig {
                overlap_is_violation: strict,
                ..InvariantConfig::default()
            });
            m.add_client();
            m.add_client();
            let first = m.change_belief("lock", 0, true, 10, &n).expect("a change");
            assert_eq!((first.overlap, first.violation), (None, None));
            assert_eq!(m.change_belief("lock", 0, true, 15, &n), None, "already believed");
            let both = m.change_belief("lock", 1, true, 20, &n).expect("a change");
            assert!(both.overlap.as_ref().is_some_and(|o| o.begin && o.clients == [0, 1]));
            assert_eq!(both.violation.is_some(), strict);
            if let Some(v) = both.violation {
                assert_eq!(v.invariant, Invariant::Overlap);
                assert_eq!(v.detail, "A and B all believe they hold lock");
            }
            let end = m.change_belief("lock", 0, false, 30, &n).expect("a change");
            assert!(end.overlap.is_some_and(|o| !o.begin && o.since_ms == 20));
            assert_eq!(end.violation, None);
        }
    }

    #[test]
    fn a_write_from_an_earlier_holder_after_a_later_one_is_stale() {
        let mut m = Monitor::new(InvariantConfig::default());
        m.add_client();
        m.add_client();
        assert_eq!(m.grant(0, "lock"), 1);
        assert_eq!(m.grant(1, "lock"), 2);
        assert!(m.accepted_write(1, 100, Some(34), &n).is_none());
        let v = m.accepted_write(0, 120, Some(33), &n).expect("stale");
        assert_eq!(v.invariant, Invariant::StaleWrite);
        assert_eq!((v.from_ms, v.to_ms), (100, 120));
        assert!(v.detail.contains("A's write"), "{}", v.detail);
    }

    #[test]
    fn writes_in_holder_order_are_fine() {
        let mut m = Monitor::new(InvariantConfig::default());
        m.add_client();
        m.add_client();
        m.grant(0, "lock");
        assert!(m.accepted_write(0, 10, None, &n).is_none());
        m.grant(1, "lock");
        assert!(m.accepted_write(1, 20, None, &n).is_none());
        assert!(m.accepted_write(1, 30, None, &n).is_none());
    }

    #[test]
    fn holders_of_different_keys_are_not_ordered() {
        // Item 1001 and item 1002 are separate resources: B holding 1002
        // after A took 1001 does not make A's write stale.
        let mut m = Monitor::new(InvariantConfig::default());
        m.add_client();
        m.add_client();
        m.grant(0, "stock_lock:1001");
        m.grant(1, "stock_lock:1002");
        assert!(m.accepted_write(1, 10, None, &n).is_none());
        assert!(m.accepted_write(0, 20, None, &n).is_none());
    }

    #[test]
    fn a_write_under_a_lock_is_judged_by_that_locks_holders() {
        // One process holding four locks at once (lesson 45): A's write
        // under the Redlock key is stale once B held that key, whatever A
        // was granted last elsewhere.
        let mut m = Monitor::new(InvariantConfig::default());
        m.add_client();
        m.add_client();
        m.grant(0, "redlock");
        m.grant(0, "etcd");
        m.grant(1, "redlock");
        assert!(m.accepted_write_under(1, Some("redlock"), 10, None, &n).is_none());
        assert!(
            m.accepted_write(0, 20, None, &n).is_none(),
            "judged by A's latest grant (etcd), nothing is stale"
        );
        let v = m.accepted_write_under(0, Some("redlock"), 30, None, &n).expect("stale");
        assert_eq!(v.invariant, Invariant::StaleWrite);
        assert!(v.detail.contains("holder #1"), "{}", v.detail);
        assert!(m.accepted_write_under(0, Some("etcd"), 40, Some(2), &n).is_none());
    }

    #[test]
    fn a_deadlock_is_reported_once() {
        let mut m = Monitor::new(InvariantConfig::default());
        assert!(m.deadlock(0, "lock", 0, 5, 5, 10, "x".into()).is_some());
        assert!(m.deadlock(0, "lock", 0, 5, 5, 11, "x".into()).is_none());
    }

    #[test]
    fn a_streamed_overlap_grows_until_it_ends_and_stops_with_the_run() {
        let mut m = Monitor::default();
        let n = |i: u32| ["A", "B", "C"][i as usize].to_owned();
        let v = Monitor::overlap_violation("k", &[0, 1], 100, &n);
        m.record_overlap("k", v);
        m.record_overlap("j", Monitor::overlap_violation("j", &[0, 2], 150, &n));
        assert!(m.stretch(100).is_empty(), "nothing grew");
        let grown = m.stretch(300);
        assert_eq!(
            grown.iter().map(|v| (v.from_ms, v.to_ms)).collect::<Vec<_>>(),
            [(150, 300), (100, 300)]
        );
        assert!(
            grown.iter().all(|v| v.amends(&v.clone())),
            "the page replaces the copy it sent"
        );
        let ended = m.overlap_ended("k", 400).expect("grew to its end");
        assert_eq!((ended.from_ms, ended.to_ms), (100, 400));
        assert_eq!(m.overlap_ended("k", 500), None, "k ended already");
        assert_eq!(m.stretch(500).len(), 1, "j goes on");
        m.stop_ongoing();
        assert!(m.stretch(900).is_empty(), "the run is over");
        assert_eq!(
            m.violations().iter().map(|v| v.to_ms).collect::<Vec<_>>(),
            [400, 500],
            "the monitor keeps each at its last span"
        );
    }
}
