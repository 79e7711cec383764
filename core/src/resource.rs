//! The protected resource: the thing the lock is *for*.
//!
//! A lock is only as good as what it protects. Here that is a storage
//! service (a database row, a file, a payment API) that clients write to
//! while they believe they hold the lock. It records every write — who, when,
//! with which token — so the invariants can ask "did a write from an
//! earlier holder land after a later holder's?", which is the lost update a
//! broken lock causes.
//!
//! In **fenced** mode the resource does what Martin Kleppmann's fencing
//! tokens ask of storage: it remembers the highest token it has accepted and
//! rejects any write carrying a lower one. A client that was paused past its
//! lease and wakes up with token 33 cannot overwrite the work of the client
//! that wrote with 34. A write with no token at all is rejected too: a
//! fenced resource cannot check what it is not shown. Equal tokens are
//! accepted — which is exactly why a token source that *repeats* a number
//! (a counter lost in a restart without persistence, or in a failover) is as
//! bad as none.
//!
//! In **plain** mode it accepts everything, like most real storage.
//!
//! A write may name the lock it is made under ([`Resource::write_under`]):
//! each lock then guards its own store with its own highest token, and a
//! lock may guard an unfenced one ([`Resource::unfence`]) — lesson 45 puts
//! a single Redis, Redlock, etcd and ZooKeeper side by side, and their
//! tokens (a counter, none, a revision, a zxid) are not comparable.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// One write, as the resource saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceWrite {
    pub client: u32,
    pub at_ms: u64,
    pub token: Option<i64>,
    pub value: String,
    pub accepted: bool,
}

/// The protected resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    fenced: bool,
    highest: Option<i64>,
    writes: Vec<ResourceWrite>,
    /// Per lock a write named: the highest token its store accepted.
    #[serde(default)]
    highest_under: BTreeMap<String, i64>,
    /// Locks whose store checks no token.
    #[serde(default)]
    unfenced: BTreeSet<String>,
}

impl Resource {
    /// A resource that checks fencing tokens (`fenced`) or accepts all.
    pub fn new(fenced: bool) -> Resource {
        Resource {
            fenced,
            ..Resource::default()
        }
    }

    /// The store guarded by `lock` accepts every write, fenced or not.
    pub fn unfence(&mut self, lock: &str) {
        self.unfenced.insert(lock.to_owned());
    }

    pub fn is_fenced(&self) -> bool {
        self.fenced
    }

    /// Apply one write; returns whether it was accepted.
    pub fn write(&mut self, client: u32, at_ms: u64, token: Option<i64>, value: String) -> bool {
        self.write_under(client, None, at_ms, token, value)
    }

    /// Apply one write made under `lock` (`None`: the one store every
    /// lesson but 45 has); returns whether it was accepted.
    pub fn write_under(
        &mut self,
        client: u32,
        lock: Option<&str>,
        at_ms: u64,
        token: Option<i64>,
        value: String,
    ) -> bool {
        let (fenced, highest) = match lock {
            Some(l) => (
                self.fenced && !self.unfenced.contains(l),
                self.highest_under.get(l).copied(),
            ),
            None => (self.fenced, self.highest),
        };
        let accepted = if fenced {
            match (token, highest) {
                (None, _) => false,
                (Some(t), Some(h)) => t >= h,
                (Some(_), None) => true,
            }
        } else {
            true
        };
        if let (true, Some(t)) = (accepted, token) {
            let h = highest.map_or(t, |h| h.max(t));
            match lock {
                Some(l) => {
                    self.highest_under.insert(l.to_owned(), h);
                }
                None => self.highest = Some(h),
            }
        }
        self.writes.push(ResourceWrite {
            client,
            at_ms,
            token,
            value,
            accepted,
        });
        accepted
    }

    /// The highest token accepted so far.
    pub fn highest_token(&self) -> Option<i64> {
        self.highest
    }

    /// Every write, accepted or not, in arrival order.
    pub fn writes(&self) -> &[ResourceWrite] {
        &self.writes
    }

    /// The value a reader would see now: the last accepted write.
    pub fn current(&self) -> Option<&ResourceWrite> {
        self.writes.iter().rev().find(|w| w.accepted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_accepts_everything() {
        let mut r = Resource::new(false);
        assert!(r.write(0, 1, Some(34), "b".into()));
        assert!(r.write(1, 2, Some(33), "a".into()));
        assert!(r.write(1, 3, None, "c".into()));
        assert_eq!(r.current().map(|w| w.value.as_str()), Some("c"));
    }

    #[test]
    fn fenced_rejects_lower_tokens_and_missing_ones() {
        let mut r = Resource::new(true);
        assert!(r.write(1, 1, Some(34), "b".into()));
        assert!(!r.write(0, 2, Some(33), "a".into()));
        assert!(r.write(1, 3, Some(34), "b2".into()), "equal tokens pass");
        assert!(!r.write(0, 4, None, "x".into()));
        assert_eq!(r.highest_token(), Some(34));
        assert_eq!(r.writes().iter().filter(|w| w.accepted).count(), 2);
    }

    #[test]
    fn each_lock_fences_its_own_store() {
        let mut r = Resource::new(true);
        r.unfence("redlock");
        assert!(r.write_under(1, Some("etcd"), 1, Some(3), "b".into()));
        assert!(r.write_under(1, Some("zk"), 2, Some(4_294_967_300), "b".into()));
        assert!(
            r.write_under(0, Some("redis"), 3, Some(1), "a".into()),
            "a zxid elsewhere does not fence the Redis store"
        );
        assert!(
            !r.write_under(0, Some("etcd"), 4, Some(2), "a".into()),
            "2 < 3 in etcd's store"
        );
        assert!(r.write_under(1, Some("redlock"), 5, None, "b".into()));
        assert!(
            r.write_under(0, Some("redlock"), 6, None, "a".into()),
            "an unfenced store takes a write with no token"
        );
        assert_eq!(r.highest_token(), None, "the unnamed store saw no write");
    }
}
