//! An etcd-style lock service: a revisioned key-value store behind a Raft
//! majority, leases, and `concurrency.Mutex`.
//!
//! What is modelled, from etcd v3.5:
//!
//! * **Revisions.** Every committed change bumps one cluster-wide revision;
//!   a key remembers the revision that created it. Only the leader commits,
//!   and only while it reaches a majority ([`Quorum`]); a member that
//!   cannot reach such a leader answers `etcdserver: no leader`.
//! * **Leases** (`server/lease/lessor.go`). `LEASE GRANT ttl` gives an id;
//!   the leader expires it `ttl` seconds after the grant or the last
//!   `LEASE KEEPALIVE`, on *its own* clock, and revoking it deletes every
//!   key attached to it. A leader that cannot commit cannot revoke, so keys
//!   outlive their lease while there is no majority. A new leader extends
//!   every lease by its full TTL (`lessor.Promote`): a leader change never
//!   expires a lease early.
//! * **The lock** (`client/v3/concurrency/mutex.go`, served as the v3lock
//!   `Lock` RPC, which is what `LOCK` is): put `name/<lease hex>` with the
//!   lease, then wait until no key under `name/` has a smaller create
//!   revision (the Mutex watches its predecessor's delete; the blocked
//!   request here is that wait). The reply is the key and its create
//!   revision — the fencing token, larger for every later holder.
//!   `UNLOCK key` deletes the key. If the waiter's own key vanished while it
//!   waited (its lease expired) it gets `mutex: session is expired`.
//!
//! Ids are decimal here (etcdctl prints them in hex); every reply is one a
//! real client gets, as a RESP value: an id or TTL as an integer, the lock
//! as `[key, revision]`.

use std::collections::{BTreeMap, BTreeSet};

use super::quorum::{Quorum, Unavailable};
use super::{arg, clock_of, err, word, Answer, Expiring, Happened, Holder, Replicated, Request};
use crate::reply::Reply;

/// etcd's `MaxLeaseTTL` (`server/lease/lessor.go`), seconds.
const MAX_TTL_S: i64 = 9_000_000_000;
/// The first lease id handed out: the n-th lease granted (0-based) is
/// `FIRST_LEASE + n`, here and on the real driver, which shows real
/// etcd's large ids by this rule (`backend/src/real/service/etcd`).
pub const FIRST_LEASE: i64 = 7001;

pub const LEASE_NOT_FOUND: &str = "etcdserver: requested lease not found";
pub const NO_LEADER: &str = "etcdserver: no leader";
pub const SESSION_EXPIRED: &str = "mutex: session is expired";

/// The key `concurrency.Mutex` puts for a lease under lock `name`:
/// `name/<lease in hex>` (mutex.go: `fmt.Sprintf("%s%x", m.pfx, lease)`).
pub fn lock_key(name: &str, lease: i64) -> String {
    format!("{name}/{lease:x}")
}

#[derive(Clone, Debug)]
struct Kv {
    value: Vec<u8>,
    create: i64,
    lease: Option<i64>,
    /// The client whose request created the key.
    owner: u32,
}

#[derive(Clone, Debug)]
pub(crate) struct Lease {
    ttl_s: i64,
    /// On the leader's clock.
    expiry: u64,
    keys: BTreeSet<String>,
}

impl Expiring for Lease {
    fn expiry(&self) -> u64 {
        self.expiry
    }

    fn renew(&mut self, now: u64) {
        self.expiry = now + self.ttl_s as u64 * 1000;
    }
}

#[derive(Clone, Debug)]
struct Blocked {
    client: u32,
    req: u64,
    member: u32,
    key: String,
    prefix: String,
}

/// The cluster's committed state and its group.
#[derive(Clone, Debug)]
pub struct Etcd {
    q: Quorum,
    rev: i64,
    kv: BTreeMap<String, Kv>,
    leases: BTreeMap<i64, Lease>,
    next_lease: i64,
    blocked: Vec<Blocked>,
    out: Vec<Happened>,
}

impl Etcd {
    pub fn new(members: u32) -> Etcd {
        Etcd {
            q: Quorum::new(members),
            rev: 1,
            kv: BTreeMap::new(),
            leases: BTreeMap::new(),
            next_lease: FIRST_LEASE,
            blocked: Vec::new(),
            out: Vec::new(),
        }
    }

    /// The current revision (what a response header carries).
    pub fn revision(&self) -> i64 {
        self.rev
    }

    pub fn execute(&mut self, clocks: &[u64], r: Request<'_>) -> Answer {
        let leader = match self.q.route(r.member) {
            Ok(l) => l,
            Err(Unavailable::NoLeader) => return err(NO_LEADER),
        };
        self.advance(clocks);
        let now = clock_of(clocks, leader);
        let argv = r.argv;
        match word(argv, 0).as_str() {
            "LEASE" => self.lease(argv, now),
            "PUT" => self.put(argv, r.client),
            "GET" if argv.len() == 2 => Answer::Now(
                self.kv
                    .get(&arg(argv, 1).unwrap_or_default())
                    .map_or(Reply::Nil, |k| Reply::Bulk(k.value.clone())),
            ),
            "GET" => err("get command needs one argument as key"),
            "DEL" if argv.len() == 2 => {
                let n = self.delete(&[arg(argv, 1).unwrap_or_default()]);
                Answer::Now(Reply::Integer(n as i64))
            }
            "DEL" => err("del command needs one argument as key"),
            "LOCK" => self.lock(r),
            "UNLOCK" if argv.len() == 2 => {
                self.delete(&[arg(argv, 1).unwrap_or_default()]);
                Answer::Now(Reply::Status("OK".into()))
            }
            "UNLOCK" => err("unlock command needs the lock's key as argument"),
            other => err(format!(
                "unknown command \"{}\" for \"etcdctl\"",
                other.to_ascii_lowercase()
            )),
        }
    }

    /// `LEASE GRANT ttl` | `LEASE KEEPALIVE id` | `LEASE REVOKE id` |
    /// `LEASE TIMETOLIVE id` (etcdctl's `lease` subcommands).
    fn lease(&mut self, argv: &[Vec<u8>], now: u64) -> Answer {
        let sub = word(argv, 1);
        let Some(a) = arg(argv, 2).filter(|_| argv.len() == 3) else {
            return match sub.as_str() {
                "GRANT" => err("lease grant command needs TTL argument"),
                "KEEPALIVE" | "REVOKE" | "TIMETOLIVE" => err(format!(
                    "lease {} command needs lease ID as argument",
                    sub.to_ascii_lowercase()
                )),
                _ => err(format!(
                    "unknown command \"{}\" for \"etcdctl lease\"",
                    sub.to_ascii_lowercase()
                )),
            };
        };
        if sub == "GRANT" {
            let ttl = match a.parse::<i64>() {
                Ok(t) => t,
                Err(_) => return err(format!("bad TTL (strconv.ParseInt: parsing {a:?}: invalid syntax)")),
            };
            if ttl > MAX_TTL_S {
                return err("etcdserver: too large lease TTL");
            }
            // A TTL below the minimum is raised to it (etcd's minTTL is a
            // few seconds; one second is the floor here).
            let ttl = ttl.max(1);
            let id = self.next_lease;
            self.next_lease += 1;
            self.leases.insert(
                id,
                Lease {
                    ttl_s: ttl,
                    expiry: now + ttl as u64 * 1000,
                    keys: BTreeSet::new(),
                },
            );
            return Answer::Now(Reply::Integer(id));
        }
        let Ok(id) = a.parse::<i64>() else {
            return err(format!(
                "bad lease ID arg (strconv.ParseInt: parsing {a:?}: invalid syntax)"
            ));
        };
        match sub.as_str() {
            "KEEPALIVE" => match self.leases.get_mut(&id) {
                Some(l) => {
                    l.renew(now);
                    Answer::Now(Reply::Integer(l.ttl_s))
                }
                None => err(LEASE_NOT_FOUND),
            },
            "REVOKE" => match self.leases.remove(&id) {
                Some(l) => {
                    self.delete(&l.keys.into_iter().collect::<Vec<_>>());
                    Answer::Now(Reply::Status("OK".into()))
                }
                None => err(LEASE_NOT_FOUND),
            },
            "TIMETOLIVE" => Answer::Now(Reply::Integer(
                self.leases
                    .get(&id)
                    .map_or(-1, |l| (l.expiry.saturating_sub(now) as i64 + 999) / 1000),
            )),
            _ => err(format!(
                "unknown command \"{}\" for \"etcdctl lease\"",
                sub.to_ascii_lowercase()
            )),
        }
    }

    /// `PUT key value [LEASE id]`.
    fn put(&mut self, argv: &[Vec<u8>], client: u32) -> Answer {
        let lease = match argv.len() {
            3 => None,
            5 if word(argv, 3) == "LEASE" => match arg(argv, 4).and_then(|s| s.parse::<i64>().ok()) {
                Some(id) if self.leases.contains_key(&id) => Some(id),
                _ => return err(LEASE_NOT_FOUND),
            },
            _ => return err("put command needs 1 argument and input from stdin or 2 arguments"),
        };
        let key = arg(argv, 1).unwrap_or_default();
        if key.is_empty() {
            return err("etcdserver: key is not provided");
        }
        self.write(&key, argv[2].clone(), lease, client);
        Answer::Now(Reply::Status("OK".into()))
    }

    /// One committed put: a new revision; a new key remembers it as its
    /// create revision.
    fn write(&mut self, key: &str, value: Vec<u8>, lease: Option<i64>, client: u32) {
        self.rev += 1;
        let rev = self.rev;
        let old = self.kv.get(key).map(|k| (k.create, k.owner, k.lease));
        if let Some((_, _, Some(l))) = old {
            if let Some(l) = self.leases.get_mut(&l) {
                l.keys.remove(key);
            }
        }
        if let Some(l) = lease.and_then(|id| self.leases.get_mut(&id)) {
            l.keys.insert(key.to_owned());
        }
        let (create, owner) = old.map_or((rev, client), |(c, o, _)| (c, o));
        self.kv.insert(
            key.to_owned(),
            Kv {
                value,
                create,
                lease,
                owner,
            },
        );
    }

    /// Delete keys in one revision; how many existed.
    fn delete(&mut self, keys: &[String]) -> usize {
        let mut n = 0;
        for k in keys {
            if let Some(kv) = self.kv.remove(k) {
                n += 1;
                if let Some(l) = kv.lease.and_then(|id| self.leases.get_mut(&id)) {
                    l.keys.remove(k);
                }
            }
        }
        if n > 0 {
            self.rev += 1;
            self.wake();
        }
        n
    }

    /// `LOCK name lease`: v3lock's `Lock`, i.e. `concurrency.Mutex.Lock`.
    fn lock(&mut self, r: Request<'_>) -> Answer {
        let argv = r.argv;
        if argv.len() != 3 {
            return err("lock takes a lock name and a lease ID as arguments");
        }
        let name = arg(argv, 1).unwrap_or_default();
        let Some(id) = arg(argv, 2).and_then(|s| s.parse::<i64>().ok()) else {
            return err(LEASE_NOT_FOUND);
        };
        if !self.leases.contains_key(&id) {
            return err(LEASE_NOT_FOUND);
        }
        let prefix = format!("{name}/");
        let key = lock_key(&name, id);
        // The same session locking again finds its key and keeps its
        // revision (mutex.go: "if the key already exists, use its revision").
        if !self.kv.contains_key(&key) {
            self.write(&key, Vec::new(), Some(id), r.client);
        }
        if let Some(reply) = self.granted(&prefix, &key) {
            return Answer::Now(reply);
        }
        self.blocked.push(Blocked {
            client: r.client,
            req: r.req,
            member: r.member,
            key,
            prefix,
        });
        Answer::Later
    }

    /// The lock reply if `key` is the oldest under `prefix`.
    fn granted(&self, prefix: &str, key: &str) -> Option<Reply> {
        let mine = self.kv.get(key)?.create;
        let older = self
            .kv
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .any(|(_, kv)| kv.create < mine);
        (!older).then(|| Reply::Array(vec![Reply::Bulk(key.as_bytes().to_vec()), Reply::Integer(mine)]))
    }

    /// After a delete: answer the waiters whose predecessors are gone, or
    /// whose own key went with their lease.
    fn wake(&mut self) {
        let blocked = std::mem::take(&mut self.blocked);
        for b in blocked {
            let reply = if !self.kv.contains_key(&b.key) {
                Some(Reply::Error(SESSION_EXPIRED.into()))
            } else {
                self.granted(&b.prefix, &b.key)
            };
            match reply {
                Some(reply) => self.out.push(Happened::Answer {
                    client: b.client,
                    req: b.req,
                    member: b.member,
                    reply,
                }),
                None => self.blocked.push(b),
            }
        }
    }

    pub fn client_gone(&mut self, client: u32) {
        self.blocked.retain(|b| b.client != client);
    }

    /// The oldest key under `lock/`: the holder, its lease's deadline and
    /// its create revision.
    pub fn holder(&self, lock: &str) -> Option<Holder> {
        let prefix = format!("{lock}/");
        let (key, kv) = self
            .kv
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .min_by_key(|(_, kv)| kv.create)?;
        Some(Holder {
            owner: kv.owner,
            value: key.clone(),
            deadline: kv.lease.and_then(|id| self.leases.get(&id)).map(|l| l.expiry),
            token: kv.create,
        })
    }
}

impl Replicated for Etcd {
    type Timed = Lease;

    /// Revoke the lease, which deletes every key attached to it — only a
    /// leader that can commit does.
    fn run_out(&mut self, id: i64) {
        if let Some(lease) = self.leases.remove(&id) {
            let keys: Vec<String> = lease.keys.into_iter().collect();
            self.delete(&keys);
            self.out.push(Happened::Expired {
                what: format!("lease {id}"),
                deleted: keys,
            });
        }
    }

    /// A member that goes down drops the requests blocked on it.
    fn going_down(&mut self, member: u32) {
        self.blocked.retain(|b| b.member != member);
    }

    fn group(&self) -> (&Quorum, &BTreeMap<i64, Lease>) {
        (&self.q, &self.leases)
    }

    fn group_mut(&mut self) -> (&mut Quorum, &mut BTreeMap<i64, Lease>, &mut Vec<Happened>) {
        (&mut self.q, &mut self.leases, &mut self.out)
    }
}
