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
//! all keys, by sampling as evict.c does (never by walking the keyspace);
//! `*-ttl` takes the nearest deadline among the samples, and `*-random`,
//! `*-lru` and `*-lfu` a seeded random key, because the simulator keeps no
//! access clock or counter to rank keys by (redis-server's LRU and LFU are
//! themselves approximations by sampling).
//!
//! The estimate is kept as keys change (each database sums its keys'
//! `key_usage`, counted again for the one key a write touched), so checking
//! the limit before every command costs nothing however many keys there are.

use super::db::Value;
use super::Engine;

/// `used_memory_startup` of redis-server 7.0.15 on x86-64 (`INFO memory`
/// of a fresh server): what the node counts before any key.
pub(crate) const STARTUP_BYTES: u64 = 876_488;

/// The error a denied command gets (`shared.oomerr`).
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// An allocation of `n` bytes, rounded up to 8 as jemalloc's small classes.
pub(crate) fn alloc(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// One element of a hashtable, skiplist or dict-encoded set: an sds of
/// `len` bytes with its header. Collections keep the sum of these for their
/// elements (see [`key_usage`]).
pub(crate) fn elem_alloc(len: usize) -> usize {
    alloc(len + 9)
}

/// A key's estimated footprint, as `MEMORY USAGE` reports it: the value in
/// the encoding `OBJECT ENCODING` reports, plus the key's own allocation.
/// `O(1)`: each collection keeps the sums it needs, adjusted at every
/// change, so the node can count a key again after each write.
pub(crate) fn key_usage(key: &[u8], value: &Value) -> usize {
    const ROBJ: usize = 16;
    const DICT_ENTRY: usize = 24;
    let value = match (value, super::cmd::keys::encoding(value)) {
        (Value::Str(_), "int") => ROBJ,
        (Value::Str(s), "embstr") => alloc(ROBJ + 3 + s.len() + 1),
        (Value::Str(s), _) => ROBJ + alloc(s.len() + 9),
        (Value::Hash(h), "listpack") => ROBJ + alloc(7 + h.raw_bytes() + 4 * h.len()),
        (Value::Hash(h), _) => ROBJ + 96 + (DICT_ENTRY + 8) * h.len() + h.elem_bytes(),
        (Value::List(l), _) => ROBJ + 48 + alloc(7 + l.bytes() + 2 * l.len()),
        (Value::Set(s), "intset") => ROBJ + alloc(8 + 8 * s.len()),
        (Value::Set(s), _) => ROBJ + 96 + (DICT_ENTRY + 8) * s.len() + s.elem_bytes(),
        (Value::ZSet(z), "listpack") => ROBJ + alloc(7 + z.raw_bytes() + 12 * z.len()),
        (Value::ZSet(z), _) => ROBJ + 160 + (DICT_ENTRY + 48) * z.len() + z.elem_bytes(),
    };
    value + alloc(key.len() + 4)
}

impl Engine {
    /// The estimated `used_memory`: the start-up footprint and every key,
    /// as each database keeps the sum.
    pub(crate) fn used_memory(&self) -> u64 {
        STARTUP_BYTES + self.dbs.iter().map(|db| db.used_bytes()).sum::<u64>()
    }

    /// evict.c's `performEvictions`: `false` is `EVICT_FAIL`, memory is
    /// still over `maxmemory` (and the caller refuses deny-oom commands).
    /// Always `true` without a limit.
    pub(crate) fn perform_evictions(&mut self) -> bool {
        let limit = self.config.maxmemory();
        if limit == 0 || self.used_memory() <= limit {
            return true;
        }
        let policy = self.config.maxmemory_policy().to_owned();
        if policy == "noeviction" {
            return false;
        }
        while self.used_memory() > limit {
            let Some((db, key)) = self.eviction_candidate(&policy) else {
                return false;
            };
            self.evict_key(db, &key);
        }
        true
    }

    /// `performEvictions`' choice of `bestkey`, never a walk of the
    /// keyspace. `*-random`: `dictGetRandomKey` of the next database with
    /// keys, from all keys or (`volatile-*`) those with a TTL. The others:
    /// `evictionPoolPopulate`, `maxmemory-samples` keys of each database
    /// (all of them when it has no more), the best one evicted: the nearest
    /// deadline for `*-ttl`; `*-lru` and `*-lfu` have no access clock or
    /// counter to rank by here, so the first one sampled.
    fn eviction_candidate(&mut self, policy: &str) -> Option<(usize, Vec<u8>)> {
        let volatile = policy.starts_with("volatile-");
        let dbs = self.dbs.len();
        if policy.ends_with("-random") {
            for _ in 0..dbs {
                self.evict_next_db = (self.evict_next_db + 1) % dbs;
                let (d, n) = (self.evict_next_db, self.dbs[self.evict_next_db].slot_count(volatile));
                if n > 0 {
                    let i = (self.random() % n as u64) as usize;
                    return Some((d, self.dbs[d].slot_key(volatile, i).clone()));
                }
            }
            return None;
        }
        let samples = self.config.maxmemory_samples();
        let ttl = policy.ends_with("-ttl");
        let mut best: Option<(u64, usize, usize)> = None;
        for d in 0..dbs {
            let n = self.dbs[d].slot_count(volatile);
            for j in 0..samples.min(n) {
                let i = if n <= samples {
                    j
                } else {
                    (self.random() % n as u64) as usize
                };
                let key = self.dbs[d].slot_key(volatile, i);
                let rank = match self.dbs[d].get(key) {
                    Some(e) if ttl => e.expires_at.unwrap_or(u64::MAX),
                    _ => 0,
                };
                if best.is_none_or(|(r, _, _)| rank < r) {
                    best = Some((rank, d, i));
                }
            }
        }
        best.map(|(_, d, i)| (d, self.dbs[d].slot_key(volatile, i).clone()))
    }

    /// Delete a key to free memory: counted in `evicted_keys`, signalled to
    /// watchers and propagated as a `DEL`, as evict.c does.
    fn evict_key(&mut self, db: usize, key: &[u8]) {
        self.dbs[db].remove(key);
        self.stats.evicted_keys += 1;
        self.modified(db, key);
        self.propagate_in(db, || vec![b"DEL".to_vec(), key.to_vec()]);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{alloc, elem_alloc, key_usage, STARTUP_BYTES};
    use crate::server::db::Value;
    use crate::server::{ConnId, Node, Profile};

    /// `key_usage` the long way: every element summed, as it was computed
    /// before collections kept their sums. What the kept sums must equal.
    fn walked(key: &[u8], value: &Value) -> usize {
        const ROBJ: usize = 16;
        const DICT_ENTRY: usize = 24;
        let elem = |b: &[u8]| elem_alloc(b.len());
        let v = match (value, crate::server::cmd::keys::encoding(value)) {
            (Value::Str(_), _) => key_usage(b"", value) - alloc(4),
            (Value::Hash(h), "listpack") => {
                ROBJ + alloc(7 + h.iter().map(|(f, v)| f.len() + v.len() + 4).sum::<usize>())
            }
            (Value::Hash(h), _) => ROBJ + 96 + h.iter().map(|(f, v)| DICT_ENTRY + 8 + elem(f) + elem(v)).sum::<usize>(),
            (Value::List(l), _) => ROBJ + 48 + alloc(7 + l.iter().map(|e| e.len() + 2).sum::<usize>()),
            (Value::Set(s), "intset") => ROBJ + alloc(8 + 8 * s.len()),
            (Value::Set(s), _) => ROBJ + 96 + s.iter().map(|m| DICT_ENTRY + 8 + elem(m)).sum::<usize>(),
            (Value::ZSet(z), "listpack") => ROBJ + alloc(7 + z.iter().map(|(m, _)| m.len() + 12).sum::<usize>()),
            (Value::ZSet(z), _) => ROBJ + 160 + z.iter().map(|(m, _)| DICT_ENTRY + 48 + elem(m)).sum::<usize>(),
        };
        v + alloc(key.len() + 4)
    }

    const COMMANDS: &[&str] = &[
        "SET {k} {v}",
        "APPEND {k} {v}",
        "SETRANGE {k} {n} {v}",
        "INCR {k}",
        "DEL {k}",
        "PEXPIRE {k} {n}",
        "PERSIST {k}",
        "RENAME {k} {k2}",
        "COPY {k} {k2} REPLACE",
        "LPUSH {k} {v} {m}",
        "RPUSH {k} {v}",
        "LPOP {k}",
        "RPOP {k} 2",
        "LREM {k} 0 {v}",
        "LMOVE {k} {k2} LEFT RIGHT",
        "HSET {k} {m} {v}",
        "HDEL {k} {m}",
        "HINCRBY {k} {m} 1",
        "SADD {k} {m} {v}",
        "SREM {k} {m}",
        "SPOP {k} 2",
        "ZADD {k} {n} {m}",
        "ZREM {k} {m}",
        "ZINCRBY {k} 1 {m}",
        "ZREMRANGEBYSCORE {k} 0 3",
        "DEBUG RELOAD",
        "CONFIG SET maxmemory {mem}",
        "CONFIG SET maxmemory-policy {policy}",
        "SELECT {n}",
        "FLUSHDB",
    ];

    fn line(op: usize, k: usize, a: usize, b: usize) -> Vec<Vec<u8>> {
        let values = ["1", "22", "-7", "x", "abc", "0123456789abcdef", "yy", "5"];
        let policies = ["allkeys-random", "volatile-ttl", "allkeys-lru", "volatile-random"];
        COMMANDS[op]
            .replace("{k2}", &format!("k{}", (k + 1) % 4))
            .replace("{k}", &format!("k{k}"))
            .replace("{v}", values[a])
            .replace("{m}", values[b])
            .replace("{n}", &(a % 4).to_string())
            .replace("{mem}", &(STARTUP_BYTES + 300 * b as u64).to_string())
            .replace("{policy}", policies[a % 4])
            .split(' ')
            .map(|s| s.as_bytes().to_vec())
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        /// After any sequence of writes (small encoding thresholds, so
        /// values change encoding; evictions; expiries; reloads), the kept
        /// `used_memory` equals every key summed element by element, and
        /// the slots eviction draws from hold exactly the keys.
        #[test]
        fn used_memory_is_kept_exactly(ops in prop::collection::vec((0..COMMANDS.len(), 0usize..4, 0usize..8, 0usize..8), 1..150)) {
            let mut node = Node::new(Profile::V7_0);
            let c = ConnId(1);
            for set in ["hash-max-listpack-entries 3", "hash-max-listpack-value 4", "set-max-intset-entries 3",
                        "zset-max-listpack-entries 3", "zset-max-listpack-value 4"] {
                let mut argv = vec![b"CONFIG".to_vec(), b"SET".to_vec()];
                argv.extend(set.split(' ').map(|s| s.as_bytes().to_vec()));
                node.execute(c, &argv);
            }
            for (op, k, a, b) in ops {
                node.execute(c, &line(op, k, a, b));
                node.advance(1);
                let walked_sum: usize = node.engine.dbs.iter()
                    .flat_map(|db| db.keys())
                    .map(|(k, e)| walked(k, &e.value))
                    .sum();
                prop_assert_eq!(node.engine.used_memory(), STARTUP_BYTES + walked_sum as u64);
                for db in &node.engine.dbs {
                    db.check_slots();
                }
            }
        }
    }
}
