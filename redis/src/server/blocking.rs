//! Clients blocked on list and sorted-set keys: `BLPOP`, `BRPOP`, `BLMOVE`,
//! `BRPOPLPUSH`, `BLMPOP`, `BZPOPMIN`, `BZPOPMAX`, `BZMPOP`.
//!
//! redis-server's `blocked.c`, reduced to lists. A blocking command that
//! finds nothing to pop leaves a [`BlockRequest`] on the engine instead of
//! a reply. What happens then depends on the host:
//!
//! * A host that can hold a reply back ([`Node::execute_or_block`], used by
//!   `sim-server`) gets `None`: the connection is parked in a FIFO per key
//!   (`db->blocking_keys`). When a command creates the key
//!   (`signalKeyAsReady` in `dbAdd`), the node serves the parked clients in
//!   the order they blocked, after that command and before the next one
//!   (`handleClientsBlockedOnKeys`), exactly as redis-server does; each
//!   served or timed-out client's reply is queued as an [`Outbound`] for
//!   the host to deliver. A timeout is checked whenever the clock moves.
//! * A host that answers every command at once ([`Node::execute`]: the
//!   lessons, the browser console, the CLI) has one client and nobody who
//!   could push meanwhile, so, like `WAIT`, the command times out on the
//!   node's virtual clock: time moves by the timeout and the nil reply
//!   comes back. Timeout 0 would block forever and is refused.
//!
//! Inside `MULTI`/`EXEC` a blocking command never blocks
//! (`CLIENT_DENY_BLOCKING`): it answers the nil of a timeout at once.
//! Scripts cannot call them at all (`NOSCRIPT` in 7.0's table).

use std::collections::{BTreeMap, VecDeque};

use super::{ConnId, Engine, Node};
use crate::reply::Reply;

/// How a blocked client is served once its key has elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// BLPOP / BRPOP: reply `[key, element]`.
    Pop { left: bool },
    /// BZPOPMIN / BZPOPMAX: reply `[key, member, score]`.
    ZPop { max: bool },
    /// BLMPOP: reply `[key, [element ...]]`, up to `count` elements.
    MPop { left: bool, count: usize },
    /// BZMPOP: reply `[key, [[member, score] ...]]`, up to `count` members.
    ZMPop { max: bool, count: usize },
    /// BLMOVE / BRPOPLPUSH: push onto `dst`, reply the element.
    Move {
        dst: Vec<u8>,
        from_left: bool,
        to_left: bool,
    },
}

/// What a blocking command leaves on the engine when it would block.
#[derive(Clone, Debug)]
pub(crate) struct BlockRequest {
    pub(crate) keys: Vec<Vec<u8>>,
    /// Absolute deadline on the node's clock; `None` waits forever.
    pub(crate) deadline: Option<u64>,
    /// The relative timeout, for a host that cannot block.
    pub(crate) timeout_ms: u64,
    pub(crate) kind: BlockKind,
}

/// A reply or push for a connection, produced outside the usual "one
/// command, one reply": a served or timed-out blocked client, a published
/// message ([`Reply::Push`]), the extra confirmations of `SUBSCRIBE a b`.
/// The host encodes each in its receiver's protocol. Entries for the
/// connection that ran the command were written during it, so they go out
/// *before* that command's own reply (as `PUBLISH` to one's own channel
/// does on redis-server).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outbound {
    pub conn: ConnId,
    pub reply: Reply,
}

#[derive(Clone, Debug)]
struct Blocked {
    db: usize,
    keys: Vec<Vec<u8>>,
    deadline: Option<u64>,
    kind: BlockKind,
}

/// The blocked clients of one node.
#[derive(Clone, Debug, Default)]
pub(crate) struct Blocking {
    clients: BTreeMap<ConnId, Blocked>,
    /// (db, key) → clients blocked on it, in the order they blocked.
    queues: BTreeMap<(usize, Vec<u8>), VecDeque<ConnId>>,
    /// Keys created while somebody waits on them, in signal order.
    ready: Vec<(usize, Vec<u8>)>,
    /// Set by a blocking command that found nothing.
    pub(crate) request: Option<BlockRequest>,
}

impl Blocking {
    pub(crate) fn is_blocked(&self, conn: ConnId) -> bool {
        self.clients.contains_key(&conn)
    }

    pub(crate) fn count(&self) -> usize {
        self.clients.len()
    }

    fn remove(&mut self, conn: ConnId) -> Option<Blocked> {
        let b = self.clients.remove(&conn)?;
        for key in &b.keys {
            let k = (b.db, key.clone());
            if let Some(q) = self.queues.get_mut(&k) {
                q.retain(|c| *c != conn);
                if q.is_empty() {
                    self.queues.remove(&k);
                }
            }
        }
        Some(b)
    }
}

/// The nil a blocking command answers on timeout: `*-1` for the pops,
/// `$-1` for the moves (both `_` in RESP3).
pub(crate) fn timeout_reply(kind: &BlockKind) -> Reply {
    match kind {
        BlockKind::Pop { .. } | BlockKind::ZPop { .. } | BlockKind::MPop { .. } | BlockKind::ZMPop { .. } => {
            Reply::NilArray
        }
        BlockKind::Move { .. } => Reply::Nil,
    }
}

impl Engine {
    /// How many clients are blocked (`INFO`'s `blocked_clients`).
    pub(crate) fn blocked_count(&self) -> usize {
        self.blocking.count()
    }

    /// May the running command block? Not inside EXEC or a script.
    pub(crate) fn may_block(&self) -> bool {
        !self.in_exec && self.script_depth == 0
    }

    /// `signalKeyAsReady`: a list or sorted set was created under `key`.
    pub(crate) fn signal_ready(&mut self, db: usize, key: &[u8]) {
        // Nobody blocked (the usual case): no key to copy for a push.
        if self.blocking.queues.is_empty() {
            return;
        }
        let k = (db, key.to_vec());
        if self.blocking.queues.contains_key(&k) && !self.blocking.ready.contains(&k) {
            self.blocking.ready.push(k);
        }
    }

    /// `handleClientsBlockedOnKeys`: serve every client whose key became
    /// ready, first blocked first served, until no key is ready (serving a
    /// BLMOVE can create another ready key).
    pub(crate) fn serve_ready(&mut self) {
        if !self.blocking.ready.is_empty() {
            // The command that made a key ready propagates before the
            // clients it serves (`handleClientsBlockedOnKeys` runs after
            // `call`), each served client's pop in a batch of its own.
            self.finish_batch();
        }
        while !self.blocking.ready.is_empty() {
            let ready = std::mem::take(&mut self.blocking.ready);
            for (db, key) in ready {
                self.serve_key(db, &key);
            }
        }
    }

    fn serve_key(&mut self, db: usize, key: &[u8]) {
        loop {
            let Some(conn) = self
                .blocking
                .queues
                .get(&(db, key.to_vec()))
                .and_then(|q| q.front().copied())
            else {
                return;
            };
            let Some(b) = self.blocking.clients.get(&conn) else {
                return;
            };
            let kind = b.kind.clone();
            self.prop_db = db;
            let Some(reply) = super::cmd::lists::serve_blocked(self, db, key, &kind) else {
                return;
            };
            self.blocking.remove(conn);
            self.outbound.push(Outbound { conn, reply });
            self.finish_batch();
        }
    }

    /// Release every blocked client with `reply`
    /// (`disconnectAllBlockedClients`, when the node becomes a replica).
    pub(crate) fn unblock_all(&mut self, reply: Reply) {
        for conn in self.blocking.clients.keys().copied().collect::<Vec<_>>() {
            self.blocking.remove(conn);
            self.outbound.push(Outbound {
                conn,
                reply: reply.clone(),
            });
        }
    }

    /// Answer every blocked client whose deadline has passed.
    pub(crate) fn expire_blocked(&mut self) {
        if self.blocking.clients.is_empty() {
            return;
        }
        let now = self.now;
        let due: Vec<ConnId> = self
            .blocking
            .clients
            .iter()
            .filter(|(_, b)| b.deadline.is_some_and(|d| d < now))
            .map(|(c, _)| *c)
            .collect();
        for conn in due {
            if let Some(b) = self.blocking.remove(conn) {
                self.outbound.push(Outbound {
                    conn,
                    reply: timeout_reply(&b.kind),
                });
            }
        }
    }
}

/// `getTimeoutFromObjectOrReply` in seconds: a float, not negative; 0 is
/// forever. Returns the timeout in milliseconds.
pub(crate) fn parse_timeout(arg: &[u8]) -> Result<u64, Reply> {
    use super::longdouble::LongDouble;
    let secs = match LongDouble::parse(arg) {
        Ok(v) => v.to_f64(),
        Err(_) => return Err(Reply::error("ERR timeout is not a float or out of range")),
    };
    // `(long long)(ftval * 1000.0)`: x86's conversion gives LLONG_MIN for
    // anything out of range (or NaN), where Rust's `as` saturates, so a
    // huge timeout is "negative" on redis-server (`BZMPOP 1e300 …`), issue 43.
    let ms = secs * 1000.0;
    let ms = if ms.is_nan() || !(i64::MIN as f64..-(i64::MIN as f64)).contains(&ms) {
        i64::MIN
    } else {
        ms as i64
    };
    if ms < 0 {
        return Err(Reply::error("ERR timeout is negative"));
    }
    Ok(ms as u64)
}

impl Node {
    /// Run a command for a host that can hold a reply back: `None` means
    /// the connection is now blocked, and its reply will come out of
    /// [`Node::take_outbound`] when it is served or times out.
    pub fn execute_or_block(&mut self, conn: ConnId, argv: &[Vec<u8>]) -> Option<Reply> {
        self.host_blocks = true;
        let reply = self.execute(conn, argv);
        self.host_blocks = false;
        if self.engine.blocking.is_blocked(conn) {
            None
        } else {
            Some(reply)
        }
    }

    /// Replies and pushes for connections other than (or after) the one
    /// that ran the last command, oldest first.
    pub fn take_outbound(&mut self) -> Vec<Outbound> {
        std::mem::take(&mut self.engine.outbound)
    }

    /// Is this connection waiting in a blocking command?
    pub fn is_blocked(&self, conn: ConnId) -> bool {
        self.engine.blocking.is_blocked(conn)
    }

    /// How many connections are blocked (`INFO clients`' `blocked_clients`).
    pub fn blocked_clients(&self) -> usize {
        self.engine.blocking.count()
    }

    /// The earliest deadline of a blocked client: when the host should
    /// move the clock so that it times out.
    pub fn next_block_deadline(&self) -> Option<u64> {
        self.engine.blocking.clients.values().filter_map(|b| b.deadline).min()
    }

    /// After a command: park the connection if its command asked to block
    /// (or, for a host that cannot block, time it out on the virtual
    /// clock); then serve whoever the command made ready.
    pub(super) fn settle_blocking(&mut self, conn: ConnId, reply: &mut Reply) {
        if let Some(req) = self.engine.blocking.request.take() {
            if self.host_blocks {
                let db = self.selected_db(conn);
                for key in &req.keys {
                    self.engine
                        .blocking
                        .queues
                        .entry((db, key.clone()))
                        .or_default()
                        .push_back(conn);
                }
                self.engine.blocking.clients.insert(
                    conn,
                    Blocked {
                        db,
                        keys: req.keys,
                        deadline: req.deadline,
                        kind: req.kind,
                    },
                );
            } else if req.timeout_ms == 0 {
                *reply = Reply::error(
                    "ERR a blocking command with timeout 0 would block forever: this simulated node has no other client to wake it",
                );
            } else {
                self.engine.block_for(req.timeout_ms);
                *reply = timeout_reply(&req.kind);
            }
        }
        self.engine.serve_ready();
    }

    /// Forget a blocked connection (it disconnected).
    pub(super) fn unblock(&mut self, conn: ConnId) {
        self.engine.blocking.remove(conn);
    }
}

#[cfg(test)]
mod tests {
    use crate::reply::Reply;
    use crate::server::{ConnId, Node, Outbound, Profile};

    fn argv(line: &str) -> Vec<Vec<u8>> {
        line.split(' ').map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_lone_node_times_out_on_its_virtual_clock() {
        let mut n = Node::new(Profile::V7_0);
        let c = ConnId(1);
        n.execute(c, &argv("SET k v PX 1500"));
        let t0 = n.now();
        assert_eq!(n.execute(c, &argv("BLPOP q 2")), Reply::NilArray);
        assert_eq!(n.now(), t0 + 2000);
        assert_eq!(n.execute(c, &argv("GET k")), Reply::Nil, "time moved for everyone");
        assert_eq!(n.execute(c, &argv("BLMOVE q d LEFT LEFT 0.5")), Reply::Nil);
        assert!(matches!(n.execute(c, &argv("BLPOP q 0")), Reply::Error(e) if e.contains("block forever")));
    }

    #[test]
    fn blocked_clients_are_served_first_come_first_served() {
        let mut n = Node::new(Profile::V7_0);
        let (a, b, c, p) = (ConnId(1), ConnId(2), ConnId(3), ConnId(4));
        assert_eq!(n.execute_or_block(a, &argv("BLPOP q 0")), None);
        assert_eq!(n.execute_or_block(b, &argv("BRPOP other q 0")), None);
        assert_eq!(n.execute_or_block(c, &argv("BLMOVE q dst LEFT RIGHT 0")), None);
        assert_eq!(n.blocked_clients(), 3);
        n.disconnect(c);
        assert_eq!(n.execute(p, &argv("RPUSH q x y z")), Reply::Integer(3));
        let bulk = |s: &str| Reply::bulk(s);
        assert_eq!(
            n.take_outbound(),
            vec![
                Outbound {
                    conn: a,
                    reply: Reply::Array(vec![bulk("q"), bulk("x")])
                },
                Outbound {
                    conn: b,
                    reply: Reply::Array(vec![bulk("q"), bulk("z")])
                },
            ]
        );
        assert_eq!(n.execute(p, &argv("LRANGE q 0 -1")), Reply::Array(vec![bulk("y")]));
        assert_eq!(n.blocked_clients(), 0);
    }

    /// BLMPOP and BZMPOP wait like BLPOP and are served with up to their
    /// count, as `[key, [...]]`, first blocked first served.
    #[test]
    fn multi_key_pops_are_served_with_their_count() {
        let mut n = Node::new(Profile::V7_0);
        let (a, b, p) = (ConnId(1), ConnId(2), ConnId(3));
        assert_eq!(n.execute_or_block(a, &argv("BLMPOP 0 2 none q LEFT COUNT 2")), None);
        assert_eq!(n.execute_or_block(b, &argv("BZMPOP 0 1 z MAX COUNT 5")), None);
        assert_eq!(n.execute(p, &argv("RPUSH q x y z")), Reply::Integer(3));
        assert_eq!(n.execute(p, &argv("ZADD z 1 m 2 n")), Reply::Integer(2));
        let bulk = |s: &str| Reply::bulk(s);
        let pair = |m: &str, s: &str| Reply::Array(vec![bulk(m), Reply::Double(s.into())]);
        assert_eq!(
            n.take_outbound(),
            vec![
                Outbound {
                    conn: a,
                    reply: Reply::Array(vec![bulk("q"), Reply::Array(vec![bulk("x"), bulk("y")])])
                },
                Outbound {
                    conn: b,
                    reply: Reply::Array(vec![bulk("z"), Reply::Array(vec![pair("n", "2"), pair("m", "1")])])
                },
            ]
        );
        assert_eq!(n.execute(p, &argv("LRANGE q 0 -1")), Reply::Array(vec![bulk("z")]));
        assert_eq!(n.execute(p, &argv("EXISTS z")), Reply::Integer(0));
        assert_eq!(n.blocked_clients(), 0);
    }

    #[test]
    fn timeouts_follow_the_clock_and_multi_never_blocks() {
        let mut n = Node::new(Profile::V7_0);
        let (a, b) = (ConnId(1), ConnId(2));
        assert_eq!(n.execute_or_block(a, &argv("BLPOP q 1")), None);
        n.advance(1000);
        assert!(n.take_outbound().is_empty(), "due only once past the deadline");
        n.advance(1);
        assert_eq!(
            n.take_outbound(),
            vec![Outbound {
                conn: a,
                reply: Reply::NilArray
            }]
        );
        n.execute_or_block(b, &argv("MULTI"));
        n.execute_or_block(b, &argv("BLPOP q 0"));
        assert_eq!(
            n.execute_or_block(b, &argv("EXEC")),
            Some(Reply::Array(vec![Reply::NilArray]))
        );
        assert!(!n.is_blocked(b));
    }
}
