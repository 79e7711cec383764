//! The list: a deque of elements, changed where it is.
//!
//! redis-server 7.0 keeps every list as a quicklist (a linked list of
//! listpacks): pushing or popping at either end is `O(1)`, and so it is
//! here. The one thing a `VecDeque` does not know is the total length of its
//! elements, which the memory estimate (`memory::key_usage`) needs for every
//! key after every change; so the list keeps it, adjusted by each push and
//! pop, instead of summing the elements again.

use std::collections::VecDeque;
use std::ops::Deref;

/// Elements head first (`LPUSH` pushes at the front), and their total length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct List {
    items: VecDeque<Vec<u8>>,
    bytes: usize,
}

impl List {
    pub fn push_front(&mut self, v: Vec<u8>) {
        self.bytes += v.len();
        self.items.push_front(v);
    }

    pub fn push_back(&mut self, v: Vec<u8>) {
        self.bytes += v.len();
        self.items.push_back(v);
    }

    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        let v = self.items.pop_front()?;
        self.bytes -= v.len();
        Some(v)
    }

    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        let v = self.items.pop_back()?;
        self.bytes -= v.len();
        Some(v)
    }

    /// Pop at the head (`left`) or the tail.
    pub fn pop(&mut self, left: bool) -> Option<Vec<u8>> {
        if left {
            self.pop_front()
        } else {
            self.pop_back()
        }
    }

    /// Push at the head (`left`) or the tail.
    pub fn push(&mut self, left: bool, v: Vec<u8>) {
        if left {
            self.push_front(v);
        } else {
            self.push_back(v);
        }
    }

    /// `LREM`'s walk: remove up to `limit` elements equal to `element`,
    /// from the head, or from the tail when `from_tail`; how many went.
    pub fn remove_equal(&mut self, element: &[u8], limit: usize, from_tail: bool) -> usize {
        let n = self.items.len();
        let mut doomed = vec![false; n];
        let mut removed = 0;
        let order: Box<dyn Iterator<Item = usize>> = if from_tail {
            Box::new((0..n).rev())
        } else {
            Box::new(0..n)
        };
        for i in order {
            if removed == limit {
                break;
            }
            if self.items[i] == element {
                doomed[i] = true;
                removed += 1;
            }
        }
        if removed > 0 {
            let mut i = 0;
            self.items.retain(|_| {
                i += 1;
                !doomed[i - 1]
            });
            self.bytes -= removed * element.len();
        }
        removed
    }

    /// Replace the element at `index` (`quicklistReplaceAtIndex`); false
    /// when there is none.
    pub fn set(&mut self, index: usize, v: Vec<u8>) -> bool {
        let Some(slot) = self.items.get_mut(index) else {
            return false;
        };
        self.bytes = self.bytes - slot.len() + v.len();
        *slot = v;
        true
    }

    /// Insert `v` so that it is at `index` (`listTypeInsert`).
    pub fn insert(&mut self, index: usize, v: Vec<u8>) {
        self.bytes += v.len();
        self.items.insert(index, v);
    }

    /// Drop `head` elements at the head and `tail` at the tail (LTRIM's two
    /// `quicklistDelRange`s).
    pub fn trim(&mut self, head: usize, tail: usize) {
        for _ in 0..head.min(self.items.len()) {
            self.pop_front();
        }
        for _ in 0..tail.min(self.items.len()) {
            self.pop_back();
        }
    }

    /// The total length of the elements.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Deref for List {
    type Target = VecDeque<Vec<u8>>;

    fn deref(&self) -> &VecDeque<Vec<u8>> {
        &self.items
    }
}

impl FromIterator<Vec<u8>> for List {
    fn from_iter<I: IntoIterator<Item = Vec<u8>>>(iter: I) -> List {
        let mut l = List::default();
        for v in iter {
            l.push_back(v);
        }
        l
    }
}

impl<'a> IntoIterator for &'a List {
    type Item = &'a Vec<u8>;
    type IntoIter = std::collections::vec_deque::Iter<'a, Vec<u8>>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lrem_from_either_end_keeps_order_and_length() {
        let mut l: List = ["a", "b", "a", "c", "a"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        assert_eq!(l.remove_equal(b"a", 2, true), 2);
        let left: Vec<&[u8]> = l.iter().map(Vec::as_slice).collect();
        assert_eq!(left, vec![&b"a"[..], b"b", b"c"]);
        assert_eq!(l.bytes(), 3);
        assert_eq!(l.remove_equal(b"a", usize::MAX, false), 1);
        assert_eq!(l.bytes(), 2);
    }
}
