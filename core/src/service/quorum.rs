//! The consensus group under both lock services: members, a leader, terms.
//!
//! etcd replicates with Raft and ZooKeeper with Zab; for a lock what both
//! promise is the same: a write is committed only once a *majority* of the
//! members has it, one leader per term orders every write, and a member cut
//! off from a majority serves nothing. This file models exactly that much:
//! which members are up, which member-to-member links are cut, who leads
//! and in which term (Zab calls it the epoch).
//!
//! What is simplified, and said so in the lessons: an election is
//! instantaneous (a real one waits an election timeout, ~1 s in etcd,
//! a few ticks in ZooKeeper) and elects the lowest-numbered member that can
//! reach a majority — every committed entry is on a majority, and any two
//! majorities meet, so whichever member of the new majority wins serves the
//! same committed history. That is why the services keep one copy of the
//! committed state rather than one per member: a member only decides
//! whether it may *serve* it.

use std::collections::BTreeSet;

/// Who is up, who reaches whom, who leads.
#[derive(Clone, Debug)]
pub struct Quorum {
    members: u32,
    down: BTreeSet<u32>,
    /// Cut member-to-member links, stored as (low, high).
    cut: BTreeSet<(u32, u32)>,
    leader: Option<u32>,
    term: u64,
}

/// Why a member cannot serve a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// The member knows of no leader that a majority follows (it is in a
    /// minority, or no majority is up at all).
    NoLeader,
}

impl Quorum {
    /// `members` members, all up; member 0 leads term 1.
    pub fn new(members: u32) -> Quorum {
        let mut q = Quorum {
            members: members.max(1),
            down: BTreeSet::new(),
            cut: BTreeSet::new(),
            leader: None,
            term: 0,
        };
        q.elect();
        q
    }

    pub fn members(&self) -> u32 {
        self.members
    }

    pub fn leader(&self) -> Option<u32> {
        self.leader
    }

    /// The current term (etcd) or epoch (ZooKeeper); starts at 1.
    pub fn term(&self) -> u64 {
        self.term
    }

    pub fn is_up(&self, m: u32) -> bool {
        m < self.members && !self.down.contains(&m)
    }

    /// Can `a` and `b` exchange messages (both up, link whole)?
    pub fn reaches(&self, a: u32, b: u32) -> bool {
        self.is_up(a) && self.is_up(b) && (a == b || !self.cut.contains(&(a.min(b), a.max(b))))
    }

    /// Does `m` reach a majority of the members, itself included?
    pub fn has_majority(&self, m: u32) -> bool {
        let n = (0..self.members).filter(|&x| self.reaches(m, x)).count() as u32;
        n > self.members / 2
    }

    /// The leader that `member` can commit through, if any: the member
    /// must reach a leader that reaches a majority.
    pub fn route(&self, member: u32) -> Result<u32, Unavailable> {
        match self.leader {
            Some(l) if self.reaches(member, l) && self.has_majority(l) => Ok(l),
            _ => Err(Unavailable::NoLeader),
        }
    }

    /// The leader, if it can commit now (lease and session expiry are
    /// decided there).
    pub fn committing_leader(&self) -> Option<u32> {
        self.leader.filter(|&l| self.has_majority(l))
    }

    pub fn set_down(&mut self, m: u32, down: bool) -> Option<u32> {
        if down {
            self.down.insert(m);
        } else {
            self.down.remove(&m);
        }
        self.elect()
    }

    pub fn set_cut(&mut self, a: u32, b: u32, cut: bool) -> Option<u32> {
        let pair = (a.min(b), a.max(b));
        if cut {
            self.cut.insert(pair);
        } else {
            self.cut.remove(&pair);
        }
        self.elect()
    }

    /// Keep a leader that still reaches a majority; otherwise elect the
    /// lowest-numbered member that does, in a new term (a leader that lost
    /// its majority steps down first). The new leader, if one was elected.
    fn elect(&mut self) -> Option<u32> {
        if self.leader.is_some_and(|l| self.has_majority(l)) {
            return None;
        }
        let next = (0..self.members).find(|&m| self.has_majority(m));
        match next {
            Some(m) => {
                self.leader = Some(m);
                self.term += 1;
                Some(m)
            }
            None => {
                // No majority anywhere: a leader that cannot hear a quorum
                // steps down (Raft's CheckQuorum); nobody commits, and the
                // next majority elects in a new term.
                self.leader = None;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_member_down_keeps_a_majority_two_do_not() {
        let mut q = Quorum::new(3);
        assert_eq!((q.leader(), q.term()), (Some(0), 1));
        assert_eq!(q.set_down(2, true), None);
        assert_eq!(q.route(1), Ok(0));
        q.set_down(1, true);
        assert_eq!(q.route(0), Err(Unavailable::NoLeader));
        assert_eq!(q.committing_leader(), None);
        assert_eq!(q.set_down(1, false), Some(0), "a majority again elects, in a new term");
        assert_eq!((q.route(1), q.term()), (Ok(0), 2));
    }

    #[test]
    fn a_leader_crash_elects_a_new_leader_in_a_new_term() {
        let mut q = Quorum::new(3);
        assert_eq!(q.set_down(0, true), Some(1));
        assert_eq!(q.term(), 2);
        assert_eq!(q.route(2), Ok(1));
        assert_eq!(q.route(0), Err(Unavailable::NoLeader), "a down member serves nothing");
        assert_eq!(
            q.set_down(0, false),
            None,
            "a returning member does not depose a leader"
        );
    }

    #[test]
    fn a_partitioned_leader_loses_to_the_majority_side() {
        let mut q = Quorum::new(3);
        q.set_cut(0, 1, true);
        assert_eq!(q.leader(), Some(0), "0 still reaches 2: a majority of three");
        assert_eq!(q.set_cut(0, 2, true), Some(1));
        assert_eq!(q.term(), 2);
        assert_eq!(
            q.route(0),
            Err(Unavailable::NoLeader),
            "the minority side cannot commit"
        );
        assert_eq!(q.route(2), Ok(1));
    }
}
