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
//! Times are absolute Unix milliseconds on the node's own clock. A key whose
//! deadline is `d` still exists at `now == d` and is gone once `now > d`,
//! which is redis-server's rule (`keyIsExpired`: `now > when`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

pub use super::zset::ZSet;

/// What a key holds: the five types lock libraries use (python-redis-lock
/// signals through a list, redis-semaphore counts holders in a sorted set).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A string. Integers are strings that happen to parse, as in Redis.
    Str(Vec<u8>),
    /// A hash, kept in insertion order: small hashes in redis-server are
    /// listpacks, which `HGETALL` walks in insertion order, and the
    /// differential tests compare that order.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// A list, head first (`LPUSH` pushes at the front).
    List(VecDeque<Vec<u8>>),
    /// A set. `SMEMBERS` order in redis-server 7.0 is an intset's numeric
    /// order or a hash table's (seeded at random per process), so only the
    /// former is worth imitating; see `cmd::sets`.
    Set(BTreeSet<Vec<u8>>),
    /// A sorted set: members ordered by (score, member).
    ZSet(ZSet),
}

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

/// One key's value and optional deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub value: Value,
    pub expires_at: Option<u64>,
}

/// Values by key, plus the expiry index.
#[derive(Clone, Debug, Default)]
pub struct Db {
    entries: BTreeMap<Vec<u8>, Entry>,
    deadlines: BTreeSet<(u64, Vec<u8>)>,
}

impl Db {
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.entries.get(key)
    }

    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        self.entries.get_mut(key)
    }

    /// Store a value, replacing any old one; `expires_at` replaces the old
    /// deadline too (SET without KEEPTTL clears a TTL). Overwriting an
    /// existing key reuses its allocation: the hot path of every benchmark.
    pub fn insert(&mut self, key: &[u8], value: Value, expires_at: Option<u64>) {
        if let Some(entry) = self.entries.get_mut(key) {
            if entry.expires_at != expires_at {
                if let Some(old) = entry.expires_at {
                    self.deadlines.remove(&(old, key.to_vec()));
                }
                if let Some(at) = expires_at {
                    self.deadlines.insert((at, key.to_vec()));
                }
            }
            *entry = Entry { value, expires_at };
            return;
        }
        if let Some(at) = expires_at {
            self.deadlines.insert((at, key.to_vec()));
        }
        self.entries.insert(key.to_vec(), Entry { value, expires_at });
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let entry = self.entries.remove(key)?;
        if let Some(at) = entry.expires_at {
            self.deadlines.remove(&(at, key.to_vec()));
        }
        Some(entry)
    }

    /// Change only the deadline of an existing key. Returns false if missing.
    pub fn set_deadline(&mut self, key: &[u8], expires_at: Option<u64>) -> bool {
        let Some(entry) = self.entries.get_mut(key) else {
            return false;
        };
        if let Some(old) = entry.expires_at {
            self.deadlines.remove(&(old, key.to_vec()));
        }
        if let Some(at) = expires_at {
            self.deadlines.insert((at, key.to_vec()));
        }
        entry.expires_at = expires_at;
        true
    }

    /// The earliest deadline that has passed at `now`, if any.
    pub fn first_expired(&self, now: u64) -> Option<(u64, Vec<u8>)> {
        self.deadlines.first().filter(|(at, _)| *at < now).cloned()
    }

    /// The next deadline still in the future.
    pub fn next_deadline(&self) -> Option<u64> {
        self.deadlines.first().map(|(at, _)| *at)
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
        self.entries.clear();
        self.deadlines.clear();
    }
}
