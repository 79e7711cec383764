//! Lock services that are not Redis: an etcd-style and a ZooKeeper-style
//! cluster, for the lessons that run the same fault against every kind of
//! lock.
//!
//! Both are a consensus group ([`quorum`]) in front of one committed state
//! ([`etcd`]: a revisioned key-value store with leases; [`zk`]: a tree of
//! znodes with sessions). The world ([`crate::world`]) plugs either in as
//! its nodes — every node is a member — and hands each request a client
//! sends to a member to [`Service::execute`]; faults reach it as
//! [`Service::set_down`] and [`Service::set_cut`]; time reaches it through
//! [`Service::advance`], with every member's clock, so a lease or session
//! runs out on the *leader's* clock, as in the real systems.
//!
//! The command vocabulary is small and maps one to one onto a real client
//! (etcd-client's `lease_grant`, `lease_keep_alive`, `lock`, …; a ZooKeeper
//! client's `create`, `get_children`, `exists` with a watch, …), so a real
//! driver can later send the same lesson steps to real servers. Error texts
//! are the ones etcdctl and the ZooKeeper Java client print.
//!
//! A request may have to wait (etcd's `LOCK` blocks until the caller's key
//! is the oldest): [`Answer::Later`], then a [`Happened::Answer`] when it is
//! granted. Everything else the service did on its own — an election, a
//! lease or session that ran out and the keys it took with it, a watch that
//! fired — comes out of [`Service::take_happened`] for the trace.
//!
//! What runs out on the leader's clock — etcd's leases, ZooKeeper's
//! sessions — runs out alike in both, and so does what a change to the
//! group does to it: [`Replicated`] is that part, written once.

pub mod etcd;
pub mod quorum;
pub mod zk;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::reply::Reply;

pub use etcd::Etcd;
pub use quorum::Quorum;
pub use zk::Zk;

/// Which lock service a world runs instead of Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceKind {
    Etcd,
    Zk,
}

/// One request as the member sees it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub member: u32,
    pub client: u32,
    pub req: u64,
    pub argv: &'a [Vec<u8>],
}

/// What a member answers at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Now(Reply),
    /// Blocked (etcd's `LOCK` behind an older key): answered later by a
    /// [`Happened::Answer`].
    Later,
}

/// What the service did, for the trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Happened {
    /// `member` leads from now on, in `term` (Zab's epoch).
    Elected { member: u32, term: u64 },
    /// A lease or session ran out on the leader's clock, taking these
    /// keys or ephemeral znodes with it.
    Expired { what: String, deleted: Vec<String> },
    /// A ZooKeeper watch fired for `client` (delivered to its session).
    Watch { client: u32, text: String },
    /// A blocked request is answered now.
    Answer {
        client: u32,
        req: u64,
        member: u32,
        reply: Reply,
    },
}

/// Who holds a lock, as the service's committed state says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The client whose request created the holding key or znode.
    pub owner: u32,
    /// The key (etcd) or znode path (ZooKeeper) that holds it.
    pub value: String,
    /// When its lease or session runs out, on the leader's clock.
    pub deadline: Option<u64>,
    /// Its fencing number: the key's create revision, the znode's czxid.
    pub token: i64,
}

/// An etcd-style or ZooKeeper-style cluster.
#[derive(Clone, Debug)]
pub enum Service {
    Etcd(Etcd),
    Zk(Zk),
}

impl Service {
    pub fn new(kind: ServiceKind, members: u32) -> Service {
        match kind {
            ServiceKind::Etcd => Service::Etcd(Etcd::new(members)),
            ServiceKind::Zk => Service::Zk(Zk::new(members)),
        }
    }

    pub fn kind(&self) -> ServiceKind {
        match self {
            Service::Etcd(_) => ServiceKind::Etcd,
            Service::Zk(_) => ServiceKind::Zk,
        }
    }

    pub fn quorum(&self) -> &Quorum {
        match self {
            Service::Etcd(s) => s.quorum(),
            Service::Zk(s) => s.quorum(),
        }
    }

    /// Run one request; `clocks` is every member's local time now.
    pub fn execute(&mut self, clocks: &[u64], r: Request<'_>) -> Answer {
        match self {
            Service::Etcd(s) => s.execute(clocks, r),
            Service::Zk(s) => s.execute(clocks, r),
        }
    }

    /// Expire what ran out on the leader's clock.
    pub fn advance(&mut self, clocks: &[u64]) {
        match self {
            Service::Etcd(s) => s.advance(clocks),
            Service::Zk(s) => s.advance(clocks),
        }
    }

    /// The next lease or session deadline: (the leader, its local time).
    pub fn next_deadline(&self) -> Option<(u32, u64)> {
        match self {
            Service::Etcd(s) => s.next_deadline(),
            Service::Zk(s) => s.next_deadline(),
        }
    }

    pub fn set_down(&mut self, clocks: &[u64], member: u32, down: bool) {
        match self {
            Service::Etcd(s) => s.set_down(clocks, member, down),
            Service::Zk(s) => s.set_down(clocks, member, down),
        }
    }

    pub fn set_cut(&mut self, clocks: &[u64], a: u32, b: u32, cut: bool) {
        match self {
            Service::Etcd(s) => s.set_cut(clocks, a, b, cut),
            Service::Zk(s) => s.set_cut(clocks, a, b, cut),
        }
    }

    pub fn take_happened(&mut self) -> Vec<Happened> {
        match self {
            Service::Etcd(s) => s.take_happened(),
            Service::Zk(s) => s.take_happened(),
        }
    }

    /// Who holds the lock `lock` (etcd: the key prefix `lock/`; ZooKeeper:
    /// the lock znode whose children queue).
    pub fn holder(&self, lock: &str) -> Option<Holder> {
        match self {
            Service::Etcd(s) => s.holder(lock),
            Service::Zk(s) => s.holder(lock),
        }
    }

    /// A client crashed: its connection closes. etcd forgets its blocked
    /// requests (its lease lives on until its TTL); ZooKeeper likewise
    /// keeps the session until its timeout.
    pub fn client_gone(&mut self, client: u32) {
        match self {
            Service::Etcd(s) => s.client_gone(client),
            Service::Zk(s) => s.client_gone(client),
        }
    }
}

/// What runs out on the leader's clock unless it is renewed: an etcd
/// lease, a ZooKeeper session.
pub(crate) trait Expiring {
    /// When it runs out, on the leader's clock.
    fn expiry(&self) -> u64;
    /// Renewed at `now`: its whole TTL (etcd) or session timeout
    /// (ZooKeeper) from then on.
    fn renew(&mut self, now: u64);
}

/// A lock service over a consensus group: etcd and ZooKeeper keep what
/// runs out on the leader's clock by id ([`Expiring`]) and treat it alike.
/// Only a leader that can commit expires anything, so what runs out
/// outlives its time while there is no majority; and a newly elected
/// leader renews everything in full on its own clock (etcd's
/// `lessor.Promote`, ZooKeeper's new session tracker), so a leader change
/// never expires anything early. Each service says what it keeps and what
/// running out deletes; the rest is here.
pub(crate) trait Replicated {
    type Timed: Expiring;

    /// The group and what runs out on its leader's clock, by id.
    fn group(&self) -> (&Quorum, &BTreeMap<i64, Self::Timed>);
    /// The same, and what happened, for the trace.
    fn group_mut(&mut self) -> (&mut Quorum, &mut BTreeMap<i64, Self::Timed>, &mut Vec<Happened>);
    /// `id` ran out on the leader's clock: delete what it kept.
    fn run_out(&mut self, id: i64);
    /// `member` is going down: forget what waits on it.
    fn going_down(&mut self, _member: u32) {}

    fn quorum(&self) -> &Quorum {
        self.group().0
    }

    /// Expire what ran out on the committing leader's clock.
    fn advance(&mut self, clocks: &[u64]) {
        let (q, timed) = self.group();
        let Some(l) = q.committing_leader() else { return };
        let now = clock_of(clocks, l);
        let due: Vec<i64> = timed
            .iter()
            .filter(|(_, t)| t.expiry() <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.run_out(id);
        }
    }

    /// The next deadline: (the leader, its local time).
    fn next_deadline(&self) -> Option<(u32, u64)> {
        let (q, timed) = self.group();
        let l = q.committing_leader()?;
        timed.values().map(Expiring::expiry).min().map(|t| (l, t))
    }

    fn set_down(&mut self, clocks: &[u64], member: u32, down: bool) {
        if down {
            self.going_down(member);
        }
        self.regroup(clocks, |q| q.set_down(member, down));
    }

    fn set_cut(&mut self, clocks: &[u64], a: u32, b: u32, cut: bool) {
        self.regroup(clocks, |q| q.set_cut(a, b, cut));
    }

    /// The group changed (`change` answers whom it elected, if anyone): a
    /// new leader renews everything on its own clock and goes on the
    /// trace; then what ran out expires.
    fn regroup(&mut self, clocks: &[u64], change: impl FnOnce(&mut Quorum) -> Option<u32>) {
        let (q, timed, out) = self.group_mut();
        if let Some(m) = change(q) {
            let now = clock_of(clocks, m);
            for t in timed.values_mut() {
                t.renew(now);
            }
            out.push(Happened::Elected {
                member: m,
                term: q.term(),
            });
        }
        self.advance(clocks);
    }

    fn take_happened(&mut self) -> Vec<Happened> {
        std::mem::take(self.group_mut().2)
    }
}

/// Member `m`'s local time now, among every member's `clocks`.
pub(crate) fn clock_of(clocks: &[u64], m: u32) -> u64 {
    clocks.get(m as usize).copied().unwrap_or(0)
}

/// An argument as text.
pub(crate) fn arg(argv: &[Vec<u8>], i: usize) -> Option<String> {
    argv.get(i).map(|b| String::from_utf8_lossy(b).into_owned())
}

/// The command name, upper-cased.
pub(crate) fn word(argv: &[Vec<u8>], i: usize) -> String {
    arg(argv, i).unwrap_or_default().to_ascii_uppercase()
}

pub(crate) fn err(text: impl Into<String>) -> Answer {
    Answer::Now(Reply::Error(text.into()))
}
