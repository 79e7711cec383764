//! The node's idea of its own memory, and `maxmemory`.
//!
//! redis-server measures `used_memory` with its allocator; the simulator has
//! no allocator to ask, so it estimates: a fixed start-up footprint plus, for
//! each key, the size `MEMORY USAGE` reports (`objectComputeSize`'s shape).
//! The estimate is good enough for what clients can observe of `maxmemory`:
//! whether a command is refused with `-OOM`, which is what the Redis test
//! suite checks (always with `maxmemory 1`, which any server exceeds) and
//! what a lock library sees when a full server refuses `SET … NX`.
//!
//! `processCommand` calls `performEvictions` before every command while
//! `maxmemory` is set; [`Engine::perform_evictions`] is that routine. With
//! `noeviction` it only reports whether memory is over the limit. With an
//! eviction policy it deletes keys until the estimate fits or no candidate
//! is left: `volatile-*` chooses among keys with a TTL, `allkeys-*` among
//! all keys; `*-ttl` takes the nearest deadline first, and `*-random`,
//! `*-lru` and `*-lfu` all take a seeded random key, because the simulator
//! keeps no access clock or counter to rank keys by (redis-server's LRU and
//! LFU are themselves approximations by sampling).

use super::config::Config;
use super::db::{Entry, Value};
use super::Engine;

/// `used_memory_startup` of redis-server 7.0.15 on x86-64 (`INFO memory`
/// of a fresh server): what the node counts before any key.
pub(crate) const STARTUP_BYTES: u64 = 876_488;

/// The error a denied command gets (`shared.oomerr`).
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// A key's estimated footprint, as `MEMORY USAGE` reports it: the value in
/// the encoding `OBJECT ENCODING` reports, plus the key's own allocation.
pub(crate) fn key_usage(key: &[u8], entry: &Entry, cfg: &Config) -> usize {
    // An allocation of n bytes, rounded up to 8 as jemalloc's small classes.
    let alloc = |n: usize| n.div_ceil(8) * 8;
    const ROBJ: usize = 16;
    const DICT_ENTRY: usize = 24;
    let elem = |b: &[u8]| alloc(b.len() + 9);
    let value = match (&entry.value, super::cmd::keys::encoding(&entry.value, cfg)) {
        (Value::Str(_), "int") => ROBJ,
        (Value::Str(s), "embstr") => alloc(ROBJ + 3 + s.len() + 1),
        (Value::Str(s), _) => ROBJ + alloc(s.len() + 9),
        (Value::Hash(h), "listpack") => ROBJ + alloc(7 + h.iter().map(|(f, v)| f.len() + v.len() + 4).sum::<usize>()),
        (Value::Hash(h), _) => ROBJ + 96 + h.iter().map(|(f, v)| DICT_ENTRY + 8 + elem(f) + elem(v)).sum::<usize>(),
        (Value::List(l), _) => ROBJ + 48 + alloc(7 + l.iter().map(|e| e.len() + 2).sum::<usize>()),
        (Value::Set(s), "intset") => ROBJ + alloc(8 + 8 * s.len()),
        (Value::Set(s), _) => ROBJ + 96 + s.iter().map(|m| DICT_ENTRY + 8 + elem(m)).sum::<usize>(),
        (Value::ZSet(z), "listpack") => ROBJ + alloc(7 + z.iter().map(|(m, _)| m.len() + 12).sum::<usize>()),
        (Value::ZSet(z), _) => ROBJ + 160 + z.iter().map(|(m, _)| DICT_ENTRY + 48 + elem(m)).sum::<usize>(),
    };
    value + alloc(key.len() + 4)
}

impl Engine {
    /// The estimated `used_memory`: the start-up footprint and every key.
    pub(crate) fn used_memory(&self) -> u64 {
        let keys: usize = self
            .dbs
            .iter()
            .flat_map(|db| db.keys())
            .map(|(k, e)| key_usage(k, e, &self.config))
            .sum();
        STARTUP_BYTES + keys as u64
    }

    /// evict.c's `performEvictions`: `false` is `EVICT_FAIL`, memory is
    /// still over `maxmemory` (and the caller refuses deny-oom commands).
    /// Always `true` without a limit.
    pub(crate) fn perform_evictions(&mut self) -> bool {
        let limit = self.config.maxmemory();
        if limit == 0 {
            return true;
        }
        let mut used = self.used_memory();
        if used <= limit {
            return true;
        }
        let policy = self.config.maxmemory_policy().to_owned();
        if policy == "noeviction" {
            return false;
        }
        let volatile = policy.starts_with("volatile-");
        // Candidates once, then removed one by one: O(keys) in all.
        let mut candidates: Vec<(Option<u64>, usize, Vec<u8>)> = Vec::new();
        for (i, db) in self.dbs.iter().enumerate() {
            for (k, e) in db.keys() {
                if !volatile || e.expires_at.is_some() {
                    candidates.push((e.expires_at, i, k.clone()));
                }
            }
        }
        if policy.ends_with("-ttl") {
            // Nearest deadline last, so `pop` takes it.
            candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        }
        while used > limit {
            let next = if policy.ends_with("-ttl") {
                candidates.pop()
            } else if candidates.is_empty() {
                None
            } else {
                let i = (self.random() % candidates.len() as u64) as usize;
                Some(candidates.swap_remove(i))
            };
            let Some((_, db, key)) = next else {
                return false;
            };
            if let Some(e) = self.dbs[db].get(&key) {
                used = used.saturating_sub(key_usage(&key, e, &self.config) as u64);
            }
            self.evict_key(db, &key);
        }
        true
    }

    /// Delete a key to free memory: counted in `evicted_keys`, signalled to
    /// watchers and propagated as a `DEL`, as evict.c does.
    fn evict_key(&mut self, db: usize, key: &[u8]) {
        self.dbs[db].remove(key);
        self.stats.evicted_keys += 1;
        self.modified(db, key);
        self.propagate(|| vec![b"DEL".to_vec(), key.to_vec()]);
    }
}
