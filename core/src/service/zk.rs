//! A ZooKeeper-style lock service: a znode tree behind a Zab majority,
//! sessions, ephemeral sequential znodes, one-shot watches — what Curator's
//! `InterProcessMutex` stands on.
//!
//! What is modelled, from ZooKeeper 3.8 and Curator's `LockInternals`:
//!
//! * **zxids.** Every committed change gets a zxid: the leader's epoch in
//!   the high 32 bits, a counter in the low 32 that restarts at each new
//!   epoch — so a zxid only grows, across leader changes too, and a
//!   znode's creation zxid (`czxid`) is a fencing token.
//! * **Sessions.** `SESSION timeout_ms` opens one (the timeout negotiated
//!   into 2–20 ticks of 2 s, as a default server does); every request of
//!   the session, `PING` included, resets its timer on the leader. When the
//!   leader's clock passes it, the session expires and its *ephemeral*
//!   znodes are deleted. A new leader gives every session a fresh timeout
//!   (its session tracker starts over), and a leader without a majority
//!   expires nothing.
//! * **The lock** is Curator's recipe spelled out as steps: `CREATE
//!   /locks/x/lock- "" EPHEMERAL SEQUENTIAL` (reply: the path with its
//!   10-digit sequence, and the czxid, as `create2` returns them);
//!   `CHILDREN /locks/x`; the lowest sequence holds the lock, every other
//!   client `EXISTS predecessor WATCH` and waits for the watch's
//!   `NodeDeleted`. `DELETE` releases.
//!
//! A request from a client with no session gets `ConnectionLoss`; one
//! whose session expired gets `Session expired` — as the Java client's
//! `KeeperException` messages print them.

use std::collections::BTreeMap;

use super::quorum::Quorum;
use super::{arg, clock_of, err, word, Answer, Expiring, Happened, Holder, Replicated, Request};
use crate::reply::Reply;

/// A default server's tickTime (ms): sessions are negotiated to 2–20 ticks.
pub const TICK_MS: u64 = 2000;
/// The first session id a run hands out (the real driver numbers its
/// sessions from here too).
pub const FIRST_SESSION: i64 = 0x1001;

/// The session timeout a default server negotiates for `asked_ms`.
pub fn negotiated_timeout(asked_ms: u64) -> u64 {
    asked_ms.clamp(2 * TICK_MS, 20 * TICK_MS)
}

#[derive(Clone, Debug)]
struct Znode {
    data: Vec<u8>,
    czxid: i64,
    mzxid: i64,
    /// The session owning an ephemeral znode.
    ephemeral: Option<i64>,
    /// The client whose request created it.
    owner: u32,
    /// Bumped by every child created or deleted; a sequential child's
    /// number.
    cversion: u32,
}

#[derive(Clone, Debug)]
pub(crate) struct Session {
    timeout_ms: u64,
    /// On the leader's clock.
    expiry: u64,
}

impl Expiring for Session {
    fn expiry(&self) -> u64 {
        self.expiry
    }

    /// Every request of the session resets its timer on the leader.
    fn renew(&mut self, now: u64) {
        self.expiry = now + self.timeout_ms;
    }
}

#[derive(Clone, Debug)]
struct Watch {
    path: String,
    client: u32,
    session: i64,
}

/// The ensemble's committed tree and its group.
#[derive(Clone, Debug)]
pub struct Zk {
    q: Quorum,
    epoch: u64,
    counter: i64,
    nodes: BTreeMap<String, Znode>,
    sessions: BTreeMap<i64, Session>,
    /// Each client's current session (also once it expired).
    by_client: BTreeMap<u32, i64>,
    next_session: i64,
    watches: Vec<Watch>,
    out: Vec<Happened>,
}

fn keeper(code: &str, path: &str) -> Answer {
    err(format!("KeeperErrorCode = {code} for {path}"))
}

fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

impl Zk {
    pub fn new(members: u32) -> Zk {
        let q = Quorum::new(members);
        let mut nodes = BTreeMap::new();
        nodes.insert(
            "/".to_owned(),
            Znode {
                data: Vec::new(),
                czxid: 0,
                mzxid: 0,
                ephemeral: None,
                owner: u32::MAX,
                cversion: 0,
            },
        );
        Zk {
            epoch: q.term(),
            q,
            counter: 0,
            nodes,
            sessions: BTreeMap::new(),
            by_client: BTreeMap::new(),
            next_session: FIRST_SESSION,
            watches: Vec::new(),
            out: Vec::new(),
        }
    }

    /// The next zxid: epoch in the high half, a counter that restarts with
    /// each epoch in the low half.
    fn next_zxid(&mut self) -> i64 {
        if self.q.term() != self.epoch {
            self.epoch = self.q.term();
            self.counter = 0;
        }
        self.counter += 1;
        ((self.epoch as i64) << 32) | self.counter
    }

    pub fn execute(&mut self, clocks: &[u64], r: Request<'_>) -> Answer {
        let path = arg(r.argv, 1).unwrap_or_default();
        let Ok(leader) = self.q.route(r.member) else {
            return err(if path.is_empty() {
                "KeeperErrorCode = ConnectionLoss".to_owned()
            } else {
                format!("KeeperErrorCode = ConnectionLoss for {path}")
            });
        };
        self.advance(clocks);
        let now = clock_of(clocks, leader);
        let cmd = word(r.argv, 0);
        if cmd == "SESSION" {
            return self.open_session(r, now);
        }
        let session = match self.by_client.get(&r.client) {
            None => return keeper("ConnectionLoss", &path),
            Some(s) if !self.sessions.contains_key(s) => return keeper("Session expired", &path),
            Some(s) => *s,
        };
        if let Some(s) = self.sessions.get_mut(&session) {
            s.renew(now);
        }
        if cmd != "PING" && cmd != "CLOSE" && !path.starts_with('/') {
            return err(if path.is_empty() {
                format!("{} needs a path", cmd.to_ascii_lowercase())
            } else {
                "Path must start with / character".to_owned()
            });
        }
        self.run(r, &cmd, &path, session)
    }

    fn run(&mut self, r: Request<'_>, cmd: &str, path: &str, session: i64) -> Answer {
        let ok = || Answer::Now(Reply::Status("OK".into()));
        match cmd {
            "PING" => ok(),
            "CLOSE" => {
                self.expire(session, "closed");
                ok()
            }
            "CREATE" => self.create(r, path, session),
            "DELETE" => self.delete(path),
            "EXISTS" => {
                if word(r.argv, 2) == "WATCH" {
                    self.watches.push(Watch {
                        path: path.to_owned(),
                        client: r.client,
                        session,
                    });
                }
                Answer::Now(self.nodes.get(path).map_or(Reply::Nil, |z| Reply::Integer(z.czxid)))
            }
            "GET" => match self.nodes.get(path) {
                Some(z) => Answer::Now(Reply::Bulk(z.data.clone())),
                None => keeper("NoNode", path),
            },
            "SET" if r.argv.len() == 3 => {
                if !self.nodes.contains_key(path) {
                    return keeper("NoNode", path);
                }
                let z = self.next_zxid();
                if let Some(n) = self.nodes.get_mut(path) {
                    n.data = r.argv[2].clone();
                    n.mzxid = z;
                }
                self.fire(path, "NodeDataChanged");
                Answer::Now(Reply::Integer(z))
            }
            "CHILDREN" => self.children(path),
            other => err(format!("unknown command {:?}", other.to_ascii_lowercase())),
        }
    }

    /// `SESSION timeout_ms`: a new session for this client.
    fn open_session(&mut self, r: Request<'_>, now: u64) -> Answer {
        let Some(ms) = arg(r.argv, 1)
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|_| r.argv.len() == 2)
        else {
            return err("session needs a timeout in milliseconds");
        };
        let timeout_ms = negotiated_timeout(ms);
        let id = self.next_session;
        self.next_session += 1;
        self.sessions.insert(
            id,
            Session {
                timeout_ms,
                expiry: now + timeout_ms,
            },
        );
        self.by_client.insert(r.client, id);
        Answer::Now(Reply::Integer(id))
    }

    /// `CREATE path data [EPHEMERAL] [SEQUENTIAL]` → `[path, czxid]`.
    fn create(&mut self, r: Request<'_>, path: &str, session: i64) -> Answer {
        if r.argv.len() < 3 {
            return err("create needs a path and data");
        }
        let mut ephemeral = false;
        let mut sequential = false;
        for i in 3..r.argv.len() {
            match word(r.argv, i).as_str() {
                "EPHEMERAL" => ephemeral = true,
                "SEQUENTIAL" => sequential = true,
                _ => return err("KeeperErrorCode = BadArguments"),
            }
        }
        let parent = parent_of(path).to_owned();
        let Some(p) = self.nodes.get(&parent) else {
            return keeper("NoNode", path);
        };
        if p.ephemeral.is_some() {
            return keeper("NoChildrenForEphemerals", path);
        }
        let name = if sequential {
            format!("{path}{:010}", p.cversion)
        } else {
            path.to_owned()
        };
        if self.nodes.contains_key(&name) || name == "/" {
            return keeper("NodeExists", &name);
        }
        let zxid = self.next_zxid();
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.cversion += 1;
        }
        self.nodes.insert(
            name.clone(),
            Znode {
                data: r.argv[2].clone(),
                czxid: zxid,
                mzxid: zxid,
                ephemeral: ephemeral.then_some(session),
                owner: r.client,
                cversion: 0,
            },
        );
        self.fire(&name, "NodeCreated");
        Answer::Now(Reply::Array(vec![Reply::Bulk(name.into_bytes()), Reply::Integer(zxid)]))
    }

    fn delete(&mut self, path: &str) -> Answer {
        if !self.nodes.contains_key(path) || path == "/" {
            return keeper("NoNode", path);
        }
        if self.child_names(path).next().is_some() {
            return keeper("Directory not empty", path);
        }
        self.next_zxid();
        self.remove(path);
        Answer::Now(Reply::Status("OK".into()))
    }

    fn remove(&mut self, path: &str) {
        if self.nodes.remove(path).is_some() {
            if let Some(p) = self.nodes.get_mut(parent_of(path)) {
                p.cversion += 1;
            }
            self.fire(path, "NodeDeleted");
        }
    }

    fn child_names<'a>(&'a self, path: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = if path == "/" {
            "/".to_owned()
        } else {
            format!("{path}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(move |(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.as_str())
            .filter(move |k| parent_of(k) == path)
            .map(|k| &k[k.rfind('/').map_or(0, |i| i + 1)..])
    }

    fn children(&self, path: &str) -> Answer {
        if !self.nodes.contains_key(path) {
            return keeper("NoNode", path);
        }
        let names = self
            .child_names(path)
            .map(|n| Reply::Bulk(n.as_bytes().to_vec()))
            .collect();
        Answer::Now(Reply::Array(names))
    }

    /// One-shot watches on `path` fire, delivered to their clients.
    fn fire(&mut self, path: &str, event: &str) {
        let (hit, keep): (Vec<Watch>, Vec<Watch>) = std::mem::take(&mut self.watches)
            .into_iter()
            .partition(|w| w.path == path);
        self.watches = keep;
        for w in hit {
            self.out.push(Happened::Watch {
                client: w.client,
                text: format!("WatchedEvent state:SyncConnected type:{event} path:{path}"),
            });
        }
    }

    /// End a session: its ephemeral znodes go, its watches with it.
    fn expire(&mut self, session: i64, how: &str) {
        if self.sessions.remove(&session).is_none() {
            return;
        }
        self.watches.retain(|w| w.session != session);
        let mine: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, z)| z.ephemeral == Some(session))
            .map(|(k, _)| k.clone())
            .collect();
        self.next_zxid();
        for p in &mine {
            self.remove(p);
        }
        self.out.push(Happened::Expired {
            what: format!("session 0x{session:x} {how}"),
            deleted: mine,
        });
    }

    /// A crashed client's session lives until its timeout: nothing to do
    /// now.
    pub fn client_gone(&mut self, _client: u32) {}

    /// The child of `lock` with the lowest sequence number holds it.
    pub fn holder(&self, lock: &str) -> Option<Holder> {
        let seq = |name: &str| {
            name.get(name.len().saturating_sub(10)..)
                .and_then(|s| s.parse::<u64>().ok())
        };
        let name = self
            .child_names(lock)
            .min_by_key(|n| (seq(n).unwrap_or(u64::MAX), n.to_string()))?;
        let path = if lock == "/" {
            format!("/{name}")
        } else {
            format!("{lock}/{name}")
        };
        let z = self.nodes.get(&path)?;
        Some(Holder {
            owner: z.owner,
            deadline: z.ephemeral.and_then(|s| self.sessions.get(&s)).map(|s| s.expiry),
            token: z.czxid,
            value: path,
        })
    }
}

impl Replicated for Zk {
    type Timed = Session;

    /// The session expired: its ephemeral znodes go.
    fn run_out(&mut self, id: i64) {
        self.expire(id, "expired");
    }

    fn group(&self) -> (&Quorum, &BTreeMap<i64, Session>) {
        (&self.q, &self.sessions)
    }

    fn group_mut(&mut self) -> (&mut Quorum, &mut BTreeMap<i64, Session>, &mut Vec<Happened>) {
        (&mut self.q, &mut self.sessions, &mut self.out)
    }
}
