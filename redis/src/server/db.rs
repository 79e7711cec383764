//! The keyspace: values, and the deadlines that make them disappear.
//!
//! Two maps, like mini-redis's `db.rs`: the entries by key, and an ordered
//! set of `(deadline, key)` pairs. The second exists so that when the clock
//! moves forward the node can find every key whose time is up by walking the
//! front of one ordered set, instead of scanning the whole keyspace. Both are
//! `BTreeMap`/`BTreeSet` rather than hash maps so that iteration order (what
//! `KEYS` and `SCAN` show) is the same on every run and on every target,
//! native and wasm32 alike.
//!
//! Two more things are kept as keys come and go, so that no command has to
//! walk the keyspace: the estimated memory of every key (`memory::key_usage`,
//! counted again for one key when it changes, and summed per database), and
//! every key — and every key with a deadline — in a slot of a vector, so
//! eviction and `RANDOMKEY` draw a key in `O(1)` as `dictGetRandomKey` does.
//!
//! A collection is changed where it is: [`Db::value_mut`] hands it out,
//! and [`Db::resync`] counts the key again afterwards (the node's
//! `Engine::changed` does both with the signalling a write needs).
//!
//! Times are absolute Unix milliseconds on the node's own clock. A key whose
//! deadline is `d` still exists at `now == d` and is gone once `now > d`,
//! which is redis-server's rule (`keyIsExpired`: `now > when`).

use std::collections::{BTreeMap, BTreeSet};

use super::config::EncodingLimits;
pub use super::hash::Hash;
pub use super::list::List;
use super::memory::key_usage;
pub use super::set::Set;
pub use super::zset::ZSet;

/// What a key holds: the five types lock libraries use (python-redis-lock
/// signals through a list, redis-semaphore counts holders in a sorted set).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string. Integers are strings that happen to parse, as in Redis.
    Str(Vec<u8>),
    /// A hash: a listpack in insertion order, or a hashtable (see `hash`).
    Hash(Hash),
    /// A list, head first (`LPUSH` pushes at the front).
    List(List),
    /// A set, intset or hashtable (see `set`). `SMEMBERS` order in
    /// redis-server 7.0 is an intset's numeric order or a hash table's
    /// (seeded at random per process), so only the former is worth
    /// imitating; see `cmd::sets`.
    Set(Set),
    /// A sorted set: members ordered by (score, member).
    ZSet(ZSet),
}

/// A collection type a [`Value`] holds: how a command asks for a key's value
/// as its own type, the half of redis-server's `checkType` that is not the
/// error (`cmd::read_as` and `cmd::write_as` add the WRONGTYPE).
pub trait Collection: Sized {
    fn of(value: &Value) -> Option<&Self>;
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
}

macro_rules! collection {
    ($t:ty, $variant:ident) => {
        impl Collection for $t {
            fn of(value: &Value) -> Option<&$t> {
                match value {
                    Value::$variant(c) => Some(c),
                    _ => None,
                }
            }
            fn of_mut(value: &mut Value) -> Option<&mut $t> {
                match value {
                    Value::$variant(c) => Some(c),
                    _ => None,
                }
            }
        }
    };
}
collection!(Hash, Hash);
collection!(List, List);
collection!(Set, Set);
collection!(ZSet, ZSet);

impl Value {
    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }

    /// A collection with no element left: redis-server deletes the key.
    pub fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::Hash(h) => h.is_empty(),
            Value::List(l) => l.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
        }
    }

    /// Encode as a load does (`rdbLoadObject`): the compact encoding
    /// whenever the contents fit `lim`, whatever the value's history.
    pub fn settle_encoding(&mut self, lim: &EncodingLimits) {
        match self {
            Value::Hash(h) => h.settle_encoding(lim),
            Value::Set(s) => s.settle_encoding(lim),
            Value::ZSet(z) => z.settle_encoding(lim),
            Value::Str(_) | Value::List(_) => {}
        }
    }

    /// Commands that rebuild this value under `key` on an empty node (no
    /// TTL): what a full resynchronisation sends a replica.
    pub fn restore_argvs(&self, key: &[u8]) -> Vec<Vec<Vec<u8>>> {
        let with = |cmd: &[u8], items: &mut dyn Iterator<Item = Vec<u8>>| {
            let mut a = vec![cmd.to_vec(), key.to_vec()];
            a.extend(items);
            vec![a]
        };
        match self {
            Value::Str(v) => vec![vec![b"SET".to_vec(), key.to_vec(), v.clone()]],
            Value::Hash(h) => with(b"HSET", &mut h.iter().flat_map(|(f, v)| [f.clone(), v.clone()])),
            Value::List(l) => with(b"RPUSH", &mut l.iter().cloned()),
            Value::Set(s) => with(b"SADD", &mut s.iter().cloned()),
            Value::ZSet(z) => with(
                b"ZADD",
                &mut z
                    .iter()
                    .flat_map(|(m, s)| [super::zset::format_score(s).into_bytes(), m.to_vec()]),
            ),
        }
    }
}

/// One key's value and optional deadline, with what the database keeps
/// about it: its estimated size and its slots.
#[derive(Clone, Debug)]
pub struct Entry {
    pub value: Value,
    pub expires_at: Option<u64>,
    /// `memory::key_usage` when last counted.
    usage: usize,
    /// Position in `Db::keys`.
    slot: usize,
    /// Position in `Db::volatile`, when the key has a deadline.
    vslot: Option<usize>,
    /// A string changed in place (APPEND, SETRANGE): redis-server holds it
    /// as a raw sds from then on (`dbUnshareStringValue`), whatever its
    /// contents, until a write stores a new value or a load re-encodes it.
    raw: bool,
}

impl Entry {
    /// Is this a string held raw after a change in place ([`Db::set_raw`])?
    pub fn is_raw_string(&self) -> bool {
        self.raw && matches!(self.value, Value::Str(_))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.value == other.value && self.expires_at == other.expires_at
    }
}

impl Eq for Entry {}

/// Values by key, the expiry index, the slots and the memory count.
#[derive(Clone, Debug, Default)]
pub struct Db {
    entries: BTreeMap<Vec<u8>, Entry>,
    deadlines: BTreeSet<(u64, Vec<u8>)>,
    /// The first of `deadlines`, kept beside it: the node asks for expired
    /// keys in all 16 databases before every command, and a load and a
    /// compare answer that where a walk down the tree did.
    first_deadline: Option<u64>,
    /// Every key, in no particular order (`Entry::slot`).
    keys: Vec<Vec<u8>>,
    /// Every key with a deadline (`Entry::vslot`): the `expires` dict that
    /// `volatile-*` eviction draws from.
    volatile: Vec<Vec<u8>>,
    /// Σ `Entry::usage`.
    used: u64,
}

/// Take slot `i` out of `slots` by moving the last key into it; the key
/// that moved, if any, now lives at `i`.
fn free_slot(slots: &mut Vec<Vec<u8>>, i: usize) -> Option<&Vec<u8>> {
    slots.swap_remove(i);
    slots.get(i)
}

impl Db {
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// The value to change in place. Whoever changes it calls
    /// [`Db::resync`] afterwards, so the key is counted again.
    pub(crate) fn value_mut(&mut self, key: &[u8]) -> Option<&mut Value> {
        self.entries.get_mut(key).map(|e| &mut e.value)
    }

    /// After an in-place change: delete the key if it holds an emptied
    /// collection, else count its size again. Whether the key still exists.
    pub(crate) fn resync(&mut self, key: &[u8]) -> bool {
        let Some(entry) = self.entries.get_mut(key) else {
            return false;
        };
        if entry.value.is_empty_collection() {
            self.remove(key);
            return false;
        }
        let usage = key_usage(key, &entry.value);
        self.used = self.used - entry.usage as u64 + usage as u64;
        entry.usage = usage;
        true
    }

    /// Store a value, replacing any old one; `expires_at` replaces the old
    /// deadline too (SET without KEEPTTL clears a TTL). Overwriting an
    /// existing key reuses its allocation: the hot path of every benchmark.
    pub fn insert(&mut self, key: &[u8], value: Value, expires_at: Option<u64>) {
        if self.entries.contains_key(key) {
            self.set_deadline(key, expires_at);
            if let Some(entry) = self.entries.get_mut(key) {
                entry.value = value;
                entry.raw = false;
            }
            self.resync(key);
            return;
        }
        self.value_mut_or_insert(key, value);
        self.set_deadline(key, expires_at);
    }

    /// Overwrite the string or other value of a key that exists and has no
    /// deadline with a string, in one lookup: what [`Db::insert`] and a
    /// resync do for a `SET` or an `MSET` of a key that is there, the hot
    /// path of both (issue 42, item 6). The string comes back when the key
    /// is missing or has a deadline.
    pub(crate) fn overwrite_with_string(&mut self, key: &[u8], s: Vec<u8>) -> Result<(), Vec<u8>> {
        let Some(entry) = self.entries.get_mut(key).filter(|e| e.expires_at.is_none()) else {
            return Err(s);
        };
        entry.value = Value::Str(s);
        entry.raw = false;
        let usage = key_usage(key, &entry.value);
        self.used = self.used - entry.usage as u64 + usage as u64;
        entry.usage = usage;
        Ok(())
    }

    /// The value to change in place (see [`Db::value_mut`]), adding
    /// `empty` without a deadline when the key is missing.
    pub(crate) fn value_mut_or_insert(&mut self, key: &[u8], empty: Value) -> &mut Value {
        match self.entries.entry(key.to_vec()) {
            std::collections::btree_map::Entry::Occupied(o) => &mut o.into_mut().value,
            std::collections::btree_map::Entry::Vacant(v) => {
                let usage = key_usage(key, &empty);
                self.used += usage as u64;
                self.keys.push(key.to_vec());
                let entry = Entry {
                    value: empty,
                    expires_at: None,
                    usage,
                    slot: self.keys.len() - 1,
                    vslot: None,
                    raw: false,
                };
                &mut v.insert(entry).value
            }
        }
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        if let Some(at) = entry.expires_at {
            self.deadlines.remove(&(at, key.to_vec()));
            self.first_deadline = self.deadlines.first().map(|(at, _)| *at);
        }
        if let Some(moved) = free_slot(&mut self.keys, entry.slot) {
            if let Some(m) = self.entries.get_mut(moved.as_slice()) {
                m.slot = entry.slot;
            }
        }
        if let Some(v) = entry.vslot {
            self.free_volatile(v);
        }
        self.used -= entry.usage as u64;
        Some(entry)
    }

    fn free_volatile(&mut self, v: usize) {
        if let Some(moved) = free_slot(&mut self.volatile, v) {
            if let Some(m) = self.entries.get_mut(moved.as_slice()) {
                m.vslot = Some(v);
            }
        }
    }

    /// Change only the deadline of an existing key. Returns false if missing.
    pub fn set_deadline(&mut self, key: &[u8], expires_at: Option<u64>) -> bool {
        let Some(entry) = self.entries.get_mut(key) else {
            return false;
        };
        let (old, vslot) = (entry.expires_at, entry.vslot);
        entry.expires_at = expires_at;
        if old == expires_at {
            return true;
        }
        self.set_deadline_index(key, old, expires_at, vslot);
        true
    }

    /// [`Db::set_deadline`]'s bookkeeping: the deadline index, its first
    /// entry and the volatile slots.
    fn set_deadline_index(&mut self, key: &[u8], old: Option<u64>, expires_at: Option<u64>, vslot: Option<usize>) {
        if let Some(old) = old {
            self.deadlines.remove(&(old, key.to_vec()));
        }
        match (expires_at, vslot) {
            (Some(at), None) => {
                self.deadlines.insert((at, key.to_vec()));
                self.volatile.push(key.to_vec());
                let v = self.volatile.len() - 1;
                if let Some(entry) = self.entries.get_mut(key) {
                    entry.vslot = Some(v);
                }
            }
            (Some(at), Some(_)) => {
                self.deadlines.insert((at, key.to_vec()));
            }
            (None, Some(v)) => {
                if let Some(entry) = self.entries.get_mut(key) {
                    entry.vslot = None;
                }
                self.free_volatile(v);
            }
            (None, None) => {}
        }
        self.first_deadline = self.deadlines.first().map(|(at, _)| *at);
    }

    /// Mark a string changed in place as held raw (see [`Entry::is_raw_string`]).
    pub(crate) fn set_raw(&mut self, key: &[u8]) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.raw = true;
        }
    }

    /// Every value encoded as a load would encode it (`DEBUG RELOAD`).
    pub(crate) fn settle_encodings(&mut self, lim: &EncodingLimits) {
        let keys: Vec<Vec<u8>> = self.keys.clone();
        for key in keys {
            if let Some(e) = self.entries.get_mut(&key) {
                e.raw = false;
                e.value.settle_encoding(lim);
            }
            self.resync(&key);
        }
    }

    /// How many keys eviction can draw from: all of them, or (`volatile`)
    /// those with a deadline.
    pub(crate) fn slot_count(&self, volatile: bool) -> usize {
        if volatile {
            self.volatile.len()
        } else {
            self.keys.len()
        }
    }

    /// The key in slot `i` (`i < slot_count`): a random `i` is
    /// `dictGetRandomKey`.
    pub(crate) fn slot_key(&self, volatile: bool, i: usize) -> &Vec<u8> {
        if volatile {
            &self.volatile[i]
        } else {
            &self.keys[i]
        }
    }

    /// The slots hold exactly the keys (and the keys with a deadline), each
    /// where its entry says.
    #[cfg(test)]
    pub(crate) fn check_slots(&self) {
        assert_eq!(self.keys.len(), self.entries.len());
        assert_eq!(self.volatile.len(), self.deadlines.len());
        assert_eq!(self.first_deadline, self.deadlines.first().map(|(at, _)| *at));
        for (k, e) in &self.entries {
            assert_eq!(&self.keys[e.slot], k);
            assert_eq!(e.vslot.is_some(), e.expires_at.is_some());
            if let Some(v) = e.vslot {
                assert_eq!(&self.volatile[v], k);
            }
        }
    }

    /// The estimated memory of every key (`memory::key_usage`).
    pub(crate) fn used_bytes(&self) -> u64 {
        self.used
    }

    /// The earliest deadline that has passed at `now`, if any.
    pub fn first_expired(&self, now: u64) -> Option<(u64, Vec<u8>)> {
        if self.first_deadline.is_none_or(|at| at >= now) {
            return None;
        }
        self.deadlines.first().filter(|(at, _)| *at < now).cloned()
    }

    /// The next deadline still in the future.
    pub fn next_deadline(&self) -> Option<u64> {
        self.first_deadline
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn expires_count(&self) -> usize {
        self.deadlines.len()
    }

    pub fn keys(&self) -> impl Iterator<Item = (&Vec<u8>, &Entry)> {
        self.entries.iter()
    }

    /// Entries from `cursor` (a key, exclusive) in key order: SCAN's walk.
    pub fn range_after<'a>(&'a self, after: Option<&'a [u8]>) -> impl Iterator<Item = (&'a Vec<u8>, &'a Entry)> + 'a {
        use std::ops::Bound;
        let start = match after {
            Some(k) => Bound::Excluded(k.to_vec()),
            None => Bound::Unbounded,
        };
        self.entries.range((start, Bound::Unbounded))
    }

    pub fn clear(&mut self) {
        *self = Db::default();
    }
}
