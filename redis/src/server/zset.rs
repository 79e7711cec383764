//! The sorted set: members with a score, ordered by (score, member).
//!
//! redis-server keeps a dict (member → score) beside a skiplist ordered by
//! score then member bytes (`zslInsert`'s comparison). Here the dict is a
//! `BTreeMap` and the skiplist a `BTreeSet` of `(Score, member)`, which gives
//! the same order, deterministic on every target, and `O(log n)` updates.
//! Ranks are found by walking the ordered set (`O(rank)`), which is fine for
//! the semaphores and queues of a lock lab.
//!
//! The encoding is state, as in redis-server 7.0: a listpack until a member
//! longer than `zset-max-listpack-value` or one member more than
//! `zset-max-listpack-entries` arrives (`zsetAdd`'s conversion), then a
//! skiplist for good. The set also keeps the two sums the memory estimate
//! needs (`memory::key_usage`), adjusted at every change.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use super::config::EncodingLimits;
use super::memory::elem_alloc;

/// A score that is never NaN (redis-server refuses NaN before storing), so
/// ordering it is total. `-0.0` and `0.0` compare equal, as C's `<` does.
#[derive(Clone, Copy, Debug)]
pub struct Score(pub f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// Members by name and by (score, name).
#[derive(Clone, Debug)]
pub struct ZSet {
    scores: BTreeMap<Vec<u8>, f64>,
    order: BTreeSet<(Score, Vec<u8>)>,
    /// A listpack (else a skiplist).
    listpack: bool,
    /// Σ member lengths.
    raw: usize,
    /// Σ `elem_alloc` of the members.
    elems: usize,
}

impl Default for ZSet {
    fn default() -> ZSet {
        ZSet {
            scores: BTreeMap::new(),
            order: BTreeSet::new(),
            listpack: true,
            raw: 0,
            elems: 0,
        }
    }
}

impl PartialEq for ZSet {
    fn eq(&self, other: &Self) -> bool {
        self.scores.len() == other.scores.len()
            && self
                .scores
                .iter()
                .zip(&other.scores)
                .all(|((a, x), (b, y))| a == b && x.to_bits() == y.to_bits())
    }
}

impl Eq for ZSet {}

impl ZSet {
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Add or update; returns the previous score. `-0` is stored as `0`:
    /// a small sorted set is a listpack in redis-server, which stores the
    /// score text `-0` as the integer 0, so `ZSCORE` then says `0`.
    /// A new member longer than `zset-max-listpack-value`, or one member
    /// too many, makes a listpack a skiplist.
    pub fn insert(&mut self, member: &[u8], score: f64, lim: &EncodingLimits) -> Option<f64> {
        let score = if score == 0.0 { 0.0 } else { score };
        let old = self.scores.insert(member.to_vec(), score);
        match old {
            Some(o) => {
                self.order.remove(&(Score(o), member.to_vec()));
            }
            None => {
                self.raw += member.len();
                self.elems += elem_alloc(member.len());
                if member.len() > lim.zset_value || self.scores.len() > lim.zset_entries {
                    self.listpack = false;
                }
            }
        }
        self.order.insert((Score(score), member.to_vec()));
        old
    }

    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let old = self.scores.remove(member)?;
        self.order.remove(&(Score(old), member.to_vec()));
        self.raw -= member.len();
        self.elems -= elem_alloc(member.len());
        Some(old)
    }

    /// Remove and return the lowest (`max` false) or highest member with
    /// its score: the skiplist's head or tail, as `genericZpopCommand`
    /// takes it. `O(log n)`.
    pub fn pop(&mut self, max: bool) -> Option<(Vec<u8>, f64)> {
        let (score, member) = if max {
            self.order.pop_last()?
        } else {
            self.order.pop_first()?
        };
        self.scores.remove(&member);
        self.raw -= member.len();
        self.elems -= elem_alloc(member.len());
        Some((member, score.0))
    }

    /// Encode from the contents, as `rdbLoadObject` does.
    pub fn settle_encoding(&mut self, lim: &EncodingLimits) {
        self.listpack = self.len() <= lim.zset_entries && self.scores.keys().all(|m| m.len() <= lim.zset_value);
    }

    /// Is this a listpack (else a skiplist)?
    pub fn is_listpack(&self) -> bool {
        self.listpack
    }

    /// Σ member lengths.
    pub fn raw_bytes(&self) -> usize {
        self.raw
    }

    /// Σ of each member's allocation.
    pub fn elem_bytes(&self) -> usize {
        self.elems
    }

    /// Members in ascending (score, member) order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> {
        self.order.iter().map(|(s, m)| (m.as_slice(), s.0))
    }

    /// 0-based rank in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let s = self.score(member)?;
        Some(self.order.range(..(Score(s), member.to_vec())).count())
    }
}

/// A score as redis-server 7.0 prints it in a reply or a listpack:
/// `addReplyDouble`'s `%.17g`, with `inf`/`-inf` spelled out — the same
/// formatting the scripting engine uses for `redis.call` arguments.
pub fn format_score(d: f64) -> String {
    crate::server::script::convert::fmt_g(d, 17)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_matches_printf() {
        for (d, want) in [
            (1.1, "1.1000000000000001"),
            (1.0, "1"),
            (1.5, "1.5"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1e17, "1e+17"),
            (12345678901234567.0, "12345678901234568"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (-2.5, "-2.5"),
            (3.0e-310, "2.9999999999999908e-310"),
        ] {
            assert_eq!(format_score(d), want, "{d}");
        }
    }

    #[test]
    fn order_is_score_then_member() {
        let lim = crate::server::config::Config::default().encoding_limits();
        let mut z = ZSet::default();
        z.insert(b"b", 1.0, &lim);
        z.insert(b"a", 1.0, &lim);
        z.insert(b"c", 0.5, &lim);
        let order: Vec<&[u8]> = z.iter().map(|(m, _)| m).collect();
        assert_eq!(order, vec![&b"c"[..], b"a", b"b"]);
        assert_eq!(z.rank(b"b"), Some(2));
        z.insert(b"b", -1.0, &lim);
        assert_eq!(z.rank(b"b"), Some(0));
    }
}
