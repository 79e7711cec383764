//! The set: members in byte order, and whether redis-server 7.0 would hold
//! them as an intset.
//!
//! redis-server keeps a set of integers as an intset (sorted numerically,
//! at most `set-max-intset-entries` members) and converts it to a
//! hashtable, once and for good, when a member is not an integer or one
//! member too many arrives (`setTypeAdd`). `SMEMBERS` shows an intset in
//! numeric order and a hashtable in an order seeded per process; the
//! simulator shows the latter in byte order (see `cmd::sets`). The set keeps
//! the sum the memory estimate needs, adjusted at every change.

use std::collections::BTreeSet;
use std::ops::Deref;

use super::cmd::parse_i64;
use super::config::EncodingLimits;
use super::memory::elem_alloc;

/// Members, their encoding, and Σ `elem_alloc` of the members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<Vec<u8>>,
    intset: bool,
    elems: usize,
}

impl Default for Set {
    fn default() -> Set {
        Set {
            members: BTreeSet::new(),
            intset: true,
            elems: 0,
        }
    }
}

impl Set {
    /// A set holding `members`, encoded as a load would encode it.
    pub fn from_members(members: impl IntoIterator<Item = Vec<u8>>, lim: &EncodingLimits) -> Set {
        let mut s = Set::default();
        s.members.extend(members);
        s.elems = s.members.iter().map(|m| elem_alloc(m.len())).sum();
        s.settle_encoding(lim);
        s
    }

    /// Encode from the contents, as `rdbLoadObject` does.
    pub fn settle_encoding(&mut self, lim: &EncodingLimits) {
        self.intset = self.members.len() <= lim.set_entries && self.members.iter().all(|m| parse_i64(m).is_some());
    }

    pub fn is_intset(&self) -> bool {
        self.intset
    }

    /// `setTypeAdd`: whether the member is new.
    pub fn insert(&mut self, member: &[u8], lim: &EncodingLimits) -> bool {
        if self.members.contains(member) {
            return false;
        }
        self.elems += elem_alloc(member.len());
        self.members.insert(member.to_vec());
        if self.intset && (parse_i64(member).is_none() || self.members.len() > lim.set_entries) {
            self.intset = false;
        }
        true
    }

    /// `setTypeRemove`: whether the member was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        let gone = self.members.remove(member);
        if gone {
            self.elems -= elem_alloc(member.len());
        }
        gone
    }

    /// Σ of each member's allocation.
    pub fn elem_bytes(&self) -> usize {
        self.elems
    }
}

/// The members in byte order.
impl Deref for Set {
    type Target = BTreeSet<Vec<u8>>;

    fn deref(&self) -> &BTreeSet<Vec<u8>> {
        &self.members
    }
}

impl<'a> IntoIterator for &'a Set {
    type Item = &'a Vec<u8>;
    type IntoIter = std::collections::btree_set::Iter<'a, Vec<u8>>;

    fn into_iter(self) -> Self::IntoIter {
        self.members.iter()
    }
}
