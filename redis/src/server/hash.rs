//! The hash: fields and values, in the two encodings of redis-server 7.0.
//!
//! A small hash is a listpack in redis-server (at most
//! `hash-max-listpack-entries` fields, none longer than
//! `hash-max-listpack-value`): `HGETALL` walks it in insertion order, a
//! lookup is a linear scan, and the differential tests compare that order.
//! A bigger one is converted to a hashtable once (`hashTypeConvert`) and
//! never back. Here both keep the pairs in a `Vec`; the hashtable adds an
//! index field → position (a `BTreeMap`, not a hash map: deterministic on
//! every target and no seeded hasher an attacker could collide), so a
//! lookup is `O(log n)`, and a deletion moves the last pair into the hole
//! (`O(log n)`) as no listpack would. A hashtable's order in redis-server
//! depends on a per-process seed, so no client can rely on it.
//!
//! The hash also keeps the two sums the memory estimate needs
//! (`memory::key_usage`), adjusted at every change.

use std::collections::BTreeMap;
use std::ops::Deref;

use super::config::EncodingLimits;
use super::memory::elem_alloc;

type Pair = (Vec<u8>, Vec<u8>);

/// Fields and values; see the module notes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hash {
    pairs: Vec<Pair>,
    /// `Some` once the hash is a hashtable: each field's position.
    index: Option<BTreeMap<Vec<u8>, usize>>,
    /// Σ field and value lengths.
    raw: usize,
    /// Σ `elem_alloc` of every field and value.
    elems: usize,
}

impl Hash {
    /// A hash holding `pairs` (distinct fields), encoded as a load would
    /// encode it.
    pub fn from_pairs(pairs: Vec<Pair>, lim: &EncodingLimits) -> Hash {
        let mut h = Hash::default();
        for (f, v) in pairs {
            h.account(&f, &v, true);
            h.pairs.push((f, v));
        }
        h.settle_encoding(lim);
        h
    }

    /// Encode as `rdbLoadObject` would from the contents: a listpack when
    /// everything fits, else a hashtable.
    pub fn settle_encoding(&mut self, lim: &EncodingLimits) {
        let fits = self.pairs.len() <= lim.hash_entries
            && self
                .pairs
                .iter()
                .all(|(f, v)| f.len() <= lim.hash_value && v.len() <= lim.hash_value);
        if fits {
            self.index = None;
        } else if self.index.is_none() {
            self.convert();
        }
    }

    /// Is this a listpack (else a hashtable)?
    pub fn is_listpack(&self) -> bool {
        self.index.is_none()
    }

    fn convert(&mut self) {
        let index = self
            .pairs
            .iter()
            .enumerate()
            .map(|(i, (f, _))| (f.clone(), i))
            .collect();
        self.index = Some(index);
    }

    fn account(&mut self, f: &[u8], v: &[u8], add: bool) {
        let (raw, elems) = (f.len() + v.len(), elem_alloc(f.len()) + elem_alloc(v.len()));
        if add {
            self.raw += raw;
            self.elems += elems;
        } else {
            self.raw -= raw;
            self.elems -= elems;
        }
    }

    fn position(&self, field: &[u8]) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(field).copied(),
            None => self.pairs.iter().position(|(f, _)| f == field),
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&Vec<u8>> {
        self.position(field).map(|i| &self.pairs[i].1)
    }

    /// `hashTypeSet`: set a field, keeping its place; whether it is new. A
    /// field or value too long, or one field too many, makes a listpack a
    /// hashtable.
    pub fn insert(&mut self, field: &[u8], value: Vec<u8>, lim: &EncodingLimits) -> bool {
        let too_long = field.len() > lim.hash_value || value.len() > lim.hash_value;
        let new = match self.position(field) {
            Some(i) => {
                let (was, now) = (self.pairs[i].1.len(), value.len());
                self.raw = self.raw - was + now;
                self.elems = self.elems - elem_alloc(was) + elem_alloc(now);
                self.pairs[i].1 = value;
                false
            }
            None => {
                self.account(field, &value, true);
                if let Some(index) = &mut self.index {
                    index.insert(field.to_vec(), self.pairs.len());
                }
                self.pairs.push((field.to_vec(), value));
                true
            }
        };
        if self.index.is_none() && (too_long || self.pairs.len() > lim.hash_entries) {
            self.convert();
        }
        new
    }

    /// `hashTypeDelete`: whether the field was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let Some(i) = self.position(field) else {
            return false;
        };
        let (f, v) = match &mut self.index {
            None => self.pairs.remove(i),
            Some(index) => {
                index.remove(field);
                let gone = self.pairs.swap_remove(i);
                if let Some((moved, _)) = self.pairs.get(i) {
                    index.insert(moved.clone(), i);
                }
                gone
            }
        };
        self.account(&f, &v, false);
        true
    }

    /// Σ field and value lengths.
    pub fn raw_bytes(&self) -> usize {
        self.raw
    }

    /// Σ of each field's and value's allocation.
    pub fn elem_bytes(&self) -> usize {
        self.elems
    }
}

/// The pairs in `HGETALL` order.
impl Deref for Hash {
    type Target = [Pair];

    fn deref(&self) -> &[Pair] {
        &self.pairs
    }
}

impl<'a> IntoIterator for &'a Hash {
    type Item = &'a Pair;
    type IntoIter = std::slice::Iter<'a, Pair>;

    fn into_iter(self) -> Self::IntoIter {
        self.pairs.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIM: EncodingLimits = EncodingLimits {
        hash_entries: 2,
        hash_value: 4,
        set_entries: 512,
        zset_entries: 128,
        zset_value: 64,
    };

    #[test]
    fn converts_once_and_keeps_fields_findable() {
        let mut h = Hash::default();
        assert!(h.insert(b"a", b"1".to_vec(), &LIM));
        assert!(h.insert(b"b", b"2".to_vec(), &LIM));
        assert!(!h.insert(b"a", b"3".to_vec(), &LIM));
        assert!(h.is_listpack());
        assert!(h.insert(b"c", b"4".to_vec(), &LIM));
        assert!(!h.is_listpack());
        assert!(h.remove(b"a"));
        assert!(!h.is_listpack(), "never back");
        assert_eq!(h.get(b"c"), Some(&b"4".to_vec()));
        assert_eq!(h.get(b"b"), Some(&b"2".to_vec()));
        assert_eq!(h.get(b"a"), None);
        assert_eq!(h.raw_bytes(), 4);
        assert!(Hash::from_pairs(h.to_vec(), &LIM).is_listpack(), "a load re-encodes");
        let mut long = Hash::default();
        long.insert(b"f", b"12345".to_vec(), &LIM);
        assert!(!long.is_listpack());
    }
}
