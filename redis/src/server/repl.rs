//! Replicas attached with `SYNC` / `PSYNC`: the full resynchronisation
//! (an RDB of the dataset) and then the replication stream, as
//! redis-server 7.0.15 writes both to a replica's socket.
//!
//! The node records every write once, as it is propagated
//! ([`Engine::propagate`](super::Engine)): the batches the scenario world
//! hands its replicas, and the stream here are the same records. What the
//! stream adds is redis-server's framing of them (server.c
//! `propagatePendingCommands`, replication.c `replicationFeedSlaves`): a
//! `SELECT` whenever the database differs from the last one sent (and
//! first of all after a full sync, as `server.slaveseldb = -1` makes it),
//! and `MULTI` … `EXEC` around a command's writes when there is more than
//! one (an `EXEC`'s, a script's, a lazy expiry's `DEL` before a write) —
//! except after `SCAN` and `RANDOMKEY` (`CMD_TOUCHES_ARBITRARY_KEYS`),
//! whose only writes are expiries, and for the active expiry and eviction,
//! which propagate each `DEL` on its own.

use std::collections::{BTreeMap, BTreeSet};

use super::blocking::Outbound;
use super::cmd::parse_i64;
use super::db::Db;
use super::{rdb, ConnId, Ctx, Role};
use crate::reply::Reply;

/// The replicas and the stream's state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Replicas {
    conns: BTreeSet<ConnId>,
    /// The database the last command sent was for (`server.slaveseldb`).
    seldb: Option<usize>,
    /// `master_repl_offset`: bytes of stream sent so far.
    offset: u64,
    /// Each replica's last `REPLCONF ACK`: (offset, node time in ms)
    /// (`c->repl_ack_off`, `c->repl_ack_time`).
    acks: BTreeMap<ConnId, (u64, u64)>,
    /// The master `REPLICAOF host port` named (`server.masterhost`,
    /// `server.masterport`). The simulator never connects to it, so its
    /// link stays down, as redis-server's does for a master it cannot
    /// reach: the node is a read-only replica serving its own data.
    pub(crate) master: Option<(Vec<u8>, u16)>,
}

impl Replicas {
    /// Is anyone attached (so writes must be recorded for the stream)?
    pub(crate) fn active(&self) -> bool {
        !self.conns.is_empty()
    }

    /// How many replicas are attached (`connected_slaves`).
    pub(crate) fn count(&self) -> usize {
        self.conns.len()
    }

    /// Did `conn` attach as a replica?
    pub(crate) fn is_replica(&self, conn: ConnId) -> bool {
        self.conns.contains(&conn)
    }

    /// A connection that closed is no replica any more.
    pub(crate) fn drop_conn(&mut self, conn: ConnId) {
        self.conns.remove(&conn);
        self.acks.remove(&conn);
    }

    /// `REPLCONF ACK offset` from a replica at `now_ms` (replication.c
    /// `replconfCommand`): the offset only grows.
    pub(crate) fn ack(&mut self, conn: ConnId, offset: u64, now_ms: u64) {
        let entry = self.acks.entry(conn).or_insert((0, now_ms));
        entry.0 = entry.0.max(offset);
        entry.1 = now_ms;
    }

    /// `server.repl_good_slaves_count` (`refreshGoodSlavesCount`): the
    /// replicas whose last ACK is at most `max_lag_s` seconds old.
    pub(crate) fn good_count(&self, now_ms: u64, max_lag_s: u64) -> usize {
        self.acks
            .values()
            .filter(|&&(_, at)| now_ms.saturating_sub(at) / 1000 <= max_lag_s)
            .count()
    }

    /// One command's writes (`ops`, each with its database) to every
    /// replica, wrapped in `MULTI`/`EXEC` when `wrap` and there are several
    /// (`propagatePendingCommands`).
    pub(crate) fn feed(&mut self, ops: &[(usize, Vec<Vec<u8>>)], wrap: bool, outbound: &mut Vec<Outbound>) {
        let (Some(first), Some(last)) = (ops.first(), ops.last()) else {
            return;
        };
        let wrap = wrap && ops.len() > 1;
        let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
        if wrap {
            self.push(first.0, vec![b"MULTI".to_vec()], &mut cmds);
        }
        for (db, argv) in ops {
            self.push(*db, argv.clone(), &mut cmds);
        }
        if wrap {
            self.push(last.0, vec![b"EXEC".to_vec()], &mut cmds);
        }
        for argv in cmds {
            let reply = Reply::Array(argv.into_iter().map(Reply::Bulk).collect());
            for &conn in &self.conns {
                outbound.push(Outbound {
                    conn,
                    reply: reply.clone(),
                });
            }
        }
    }

    /// `replicationFeedSlaves` for one command: a `SELECT` first when the
    /// database changed.
    fn push(&mut self, db: usize, argv: Vec<Vec<u8>>, out: &mut Vec<Vec<Vec<u8>>>) {
        if self.seldb != Some(db) {
            let select = vec![b"SELECT".to_vec(), db.to_string().into_bytes()];
            self.offset += multibulk_len(&select);
            out.push(select);
            self.seldb = Some(db);
        }
        self.offset += multibulk_len(&argv);
        out.push(argv);
    }
}

/// The bytes of `argv` as a RESP multibulk.
fn multibulk_len(argv: &[Vec<u8>]) -> u64 {
    let digits = |n: usize| n.to_string().len() as u64;
    let items: u64 = argv.iter().map(|a| 1 + digits(a.len()) + 2 + a.len() as u64 + 2).sum();
    1 + digits(argv.len()) + 2 + items
}

/// The replication ID this node reports (`server.replid`): 40 hex digits,
/// fixed, since the simulated node has no restarts to tell apart.
pub(crate) const REPLID: &str = "6c6f636b6c61622073696d756c61746f72000000";

/// `SYNC` and `PSYNC replid offset` (replication.c `syncCommand`): the
/// connection becomes a replica. A full resynchronisation every time, as
/// redis-server answers a replica whose replid it does not know:
/// `+FULLRESYNC <replid> <offset>` for PSYNC, then the RDB as a bulk
/// without a trailing CRLF (`$<len>\r\n<rdb>`), then the stream. A host
/// that sends replies on a socket gets those bytes as the command's
/// encoded reply; any other host gets the RDB as a bulk string.
pub(crate) fn sync(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let Some(conn) = cx.e.conn() else {
        return Reply::error("ERR SYNC needs a connection");
    };
    if cx.e.in_exec() {
        // `CMD_NO_MULTI`: refused while queueing already; this is EXEC's.
        return Reply::error("ERR Command not allowed inside a transaction");
    }
    let psync = argv[0].eq_ignore_ascii_case(b"psync");
    let file = rdb_file(cx.e.dbs(), cx.e.now(), cx.e.config.rdb_compression());
    cx.e.repl.conns.insert(conn);
    cx.e.repl.seldb = None;
    // `replicaPutOnline`: "Prevent false timeout" — an attached replica
    // counts as acknowledged now.
    let now = cx.e.now();
    cx.e.repl.ack(conn, 0, now);
    let Some(mut out) = cx.e.encoded.lend() else {
        return Reply::Bulk(file);
    };
    if psync {
        out.extend_from_slice(format!("+FULLRESYNC {REPLID} {}\r\n", cx.e.repl.offset).as_bytes());
    }
    super::encoded::header(&mut out, b'$', file.len());
    out.extend_from_slice(&file);
    cx.e.encoded.give_back(out);
    Reply::Nil
}

/// `REPLICAOF host port` / `REPLICAOF NO ONE` (replication.c
/// `replicaofCommand`, 7.0.15). Naming a master makes the node a read-only
/// replica (`replicationSetMaster`): clients blocked on keys are released
/// with `-UNBLOCKED` (`disconnectAllBlockedClients`), and the link stays
/// down (see [`Replicas::master`]), so with `replica-serve-stale-data no`
/// only `CMD_STALE` commands are served. `NO ONE` makes it a master again
/// (`replicationUnsetMaster`); the stream to its own replicas starts with a
/// `SELECT` (`server.slaveseldb = -1`).
pub(crate) fn replicaof(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if cx.e.in_cluster() {
        return Reply::error("ERR REPLICAOF not allowed in cluster mode.");
    }
    if argv[1].eq_ignore_ascii_case(b"no") && argv[2].eq_ignore_ascii_case(b"one") {
        if cx.e.repl.master.take().is_some() {
            cx.e.repl.seldb = None;
            cx.e.promote();
        }
        return Reply::ok();
    }
    if cx.e.conn().is_some_and(|c| cx.e.repl.is_replica(c)) {
        return Reply::error("ERR Command is not valid when client is a replica.");
    }
    // getRangeLongFromObjectOrReply(.., 0, 65535, .., "Invalid master port")
    let Some(port) = parse_i64(&argv[2]).and_then(|p| u16::try_from(p).ok()) else {
        return Reply::error("ERR Invalid master port");
    };
    if let Some((host, p)) = &cx.e.repl.master {
        if host.eq_ignore_ascii_case(&argv[1]) && *p == port {
            return Reply::status("OK Already connected to specified master");
        }
    }
    cx.e.repl.master = Some((argv[1].clone(), port));
    cx.e.role = Role::Replica;
    cx.e.unblock_all(Reply::error(
        "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
    ));
    Reply::ok()
}

/// An RDB file of the dataset (rdb.c `rdbSaveRio`, version 10): the
/// `REDIS0010` header, the aux fields redis-server writes, each non-empty
/// database as `SELECTDB` + `RESIZEDB` and its keys (an `EXPIRETIME_MS`
/// before a key with a deadline, then the type, the key and the value as
/// DUMP writes them), `EOF` and the CRC-64 of it all.
pub(crate) fn rdb_file(dbs: &[Db], now_ms: u64, compress: bool) -> Vec<u8> {
    const AUX: u8 = 0xFA;
    const RESIZEDB: u8 = 0xFB;
    const EXPIRETIME_MS: u8 = 0xFC;
    const SELECTDB: u8 = 0xFE;
    const EOF: u8 = 0xFF;
    let mut out = format!("REDIS{:04}", rdb::RDB_VERSION).into_bytes();
    let ctime = (now_ms / 1000).to_string();
    for (k, v) in [
        ("redis-ver", "7.0.15"),
        ("redis-bits", "64"),
        ("ctime", ctime.as_str()),
        ("used-mem", "0"),
        ("aof-base", "0"),
    ] {
        out.push(AUX);
        rdb::push_string(&mut out, k.as_bytes(), compress);
        rdb::push_string(&mut out, v.as_bytes(), compress);
    }
    for (i, db) in dbs.iter().enumerate().filter(|(_, db)| !db.is_empty()) {
        out.push(SELECTDB);
        rdb::push_len(&mut out, i as u64);
        out.push(RESIZEDB);
        rdb::push_len(&mut out, db.len() as u64);
        rdb::push_len(&mut out, db.expires_count() as u64);
        for (key, entry) in db.keys() {
            if let Some(at) = entry.expires_at {
                out.push(EXPIRETIME_MS);
                out.extend_from_slice(&at.to_le_bytes());
            }
            let value = rdb::dump_value(&entry.value, compress);
            out.push(value[0]);
            rdb::push_string(&mut out, key, compress);
            out.extend_from_slice(&value[1..]);
        }
    }
    out.push(EOF);
    let crc = rdb::crc64::crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use crate::reply::Reply;
    use crate::server::{ConnId, Node, Outbound, Profile};

    fn run(n: &mut Node, c: ConnId, line: &str) -> Reply {
        let argv: Vec<Vec<u8>> = line.split(' ').map(|s| s.as_bytes().to_vec()).collect();
        n.execute(c, &argv)
    }

    /// The stream a replica got, one command per line, lower-cased name.
    fn stream(n: &mut Node, replica: ConnId) -> Vec<String> {
        n.take_outbound()
            .into_iter()
            .filter(|o: &Outbound| o.conn == replica)
            .map(|o| match o.reply {
                Reply::Array(items) => items
                    .iter()
                    .map(|i| match i {
                        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                        other => format!("{other:?}"),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
                    .to_lowercase(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn the_stream_selects_wraps_transactions_and_rewrites_relative_expiries() {
        let mut n = Node::new(Profile::V7_0);
        let (c, r) = (ConnId(1), ConnId(2));
        run(&mut n, c, "SET before 1");
        let Reply::Bulk(file) = run(&mut n, r, "SYNC") else {
            panic!("no rdb")
        };
        assert!(file.starts_with(b"REDIS0010"));
        assert!(file.windows(6).any(|w| w == b"before"), "the dataset is in the RDB");
        run(&mut n, c, "SET a 1");
        run(&mut n, c, "MULTI");
        run(&mut n, c, "SET b 2");
        run(&mut n, c, "GET b");
        run(&mut n, c, "INCR b");
        run(&mut n, c, "EXEC");
        run(&mut n, c, "MULTI");
        run(&mut n, c, "SET one 1");
        run(&mut n, c, "EXEC");
        run(&mut n, c, "SET t v EX 100");
        run(&mut n, c, "SELECT 3");
        run(&mut n, c, "DEL nothing");
        run(&mut n, c, "SET in3 x");
        let at = n.now() + 100_000;
        assert_eq!(
            stream(&mut n, r),
            [
                "select 0".to_owned(),
                "set a 1".into(),
                "multi".into(),
                "set b 2".into(),
                "incr b".into(),
                "exec".into(),
                "set one 1".into(),
                format!("set t v pxat {at}"),
                "select 3".into(),
                "set in3 x".into(),
            ]
        );
        n.disconnect(r);
        run(&mut n, c, "SET after 1");
        assert!(stream(&mut n, r).is_empty(), "a closed replica gets nothing");
    }

    #[test]
    fn a_script_s_writes_are_one_transaction_and_an_expired_key_a_del() {
        let mut n = Node::new(Profile::V7_0);
        let (c, r) = (ConnId(1), ConnId(2));
        run(&mut n, c, "DEBUG SET-ACTIVE-EXPIRE 0");
        run(&mut n, c, "SET gone v PX 1");
        n.advance(5);
        run(&mut n, r, "SYNC");
        run(&mut n, c, "EVAL redis.call('SET','x','1');redis.call('INCR','x') 0");
        run(&mut n, c, "GET gone");
        assert_eq!(
            stream(&mut n, r),
            ["select 0", "multi", "set x 1", "incr x", "exec", "del gone"]
        );
    }

    #[test]
    fn min_replicas_to_write_refuses_an_exec_that_queued_a_write() {
        let mut n = Node::new(Profile::V7_0);
        let (c, other) = (ConnId(1), ConnId(2));
        run(&mut n, c, "SET xx 1");
        run(&mut n, c, "MULTI");
        run(&mut n, c, "INCR xx");
        run(&mut n, other, "CONFIG SET min-replicas-to-write 2");
        assert_eq!(
            run(&mut n, c, "EXEC"),
            Reply::error("EXECABORT Transaction discarded because of: NOREPLICAS Not enough good replicas to write.")
        );
        assert_eq!(run(&mut n, c, "GET xx"), Reply::Bulk(b"1".to_vec()));
        run(&mut n, c, "MULTI");
        run(&mut n, c, "GET xx");
        assert_eq!(run(&mut n, c, "EXEC"), Reply::Array(vec![Reply::Bulk(b"1".to_vec())]));
    }

    /// Redis's `unit/multi` "exec with read commands and stale replica
    /// state change", and `REPLICAOF`'s own answers.
    #[test]
    fn a_replica_whose_link_is_down_refuses_writes_and_stale_reads() {
        let mut n = Node::new(Profile::V7_0);
        let (c, other) = (ConnId(1), ConnId(2));
        let masterdown = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
        run(&mut n, c, "SET xx 1");
        assert_eq!(
            run(&mut n, other, "REPLICAOF localhsot 70000"),
            Reply::error("ERR Invalid master port")
        );
        assert_eq!(run(&mut n, other, "REPLICAOF localhsot 0"), Reply::ok());
        assert_eq!(
            run(&mut n, other, "REPLICAOF LOCALHSOT 0"),
            Reply::status("OK Already connected to specified master")
        );
        assert_eq!(
            run(&mut n, c, "SET xx 2"),
            Reply::error("READONLY You can't write against a read only replica.")
        );
        assert_eq!(run(&mut n, c, "GET xx"), Reply::Bulk(b"1".to_vec()));
        run(&mut n, c, "CONFIG SET replica-serve-stale-data no");
        assert_eq!(run(&mut n, c, "GET xx"), Reply::error(masterdown));
        assert_eq!(run(&mut n, c, "PING"), Reply::error(masterdown));
        assert_eq!(run(&mut n, c, "ECHO hi"), Reply::Bulk(b"hi".to_vec()));
        // Queued while the link was up, run after it went down.
        assert_eq!(run(&mut n, other, "REPLICAOF NO ONE"), Reply::ok());
        run(&mut n, c, "MULTI");
        run(&mut n, c, "GET xx");
        run(&mut n, other, "REPLICAOF localhsot 0");
        assert_eq!(
            run(&mut n, c, "EXEC"),
            Reply::error(format!("EXECABORT Transaction discarded because of: {masterdown}"))
        );
        // MULTI itself is stale-safe; what EXEC runs decides.
        run(&mut n, c, "MULTI");
        run(&mut n, other, "REPLICAOF no one");
        run(&mut n, c, "GET xx");
        assert_eq!(run(&mut n, c, "EXEC"), Reply::Array(vec![Reply::Bulk(b"1".to_vec())]));
        assert_eq!(run(&mut n, c, "SET xx 3"), Reply::ok());
    }

    /// `disconnectAllBlockedClients`: becoming a replica releases the
    /// clients blocked on keys, with `-UNBLOCKED`.
    #[test]
    fn becoming_a_replica_unblocks_blocked_clients() {
        let mut n = Node::new(Profile::V7_0);
        let (c, other) = (ConnId(1), ConnId(2));
        n.connect_as(c);
        n.connect_as(other);
        let argv: Vec<Vec<u8>> = ["BLPOP", "list", "0"].iter().map(|a| a.as_bytes().to_vec()).collect();
        assert_eq!(n.execute_or_block(c, &argv), None);
        run(&mut n, other, "REPLICAOF localhsot 0");
        assert_eq!(
            n.take_outbound(),
            vec![Outbound {
                conn: c,
                reply: Reply::error(
                    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
                ),
            }]
        );
        assert!(!n.is_blocked(c));
    }

    /// An attached replica counts as acknowledged (`replicaPutOnline`), so
    /// `min-replicas-to-write 1` lets writes through; a replica's
    /// `REPLICAOF host port` is refused.
    #[test]
    fn an_attached_replica_is_a_good_replica() {
        let mut n = Node::new(Profile::V7_0);
        let (c, r) = (ConnId(1), ConnId(2));
        n.connect_as(c);
        n.connect_as(r);
        run(&mut n, c, "CONFIG SET min-replicas-to-write 1");
        assert_eq!(
            run(&mut n, c, "SET k v"),
            Reply::error("NOREPLICAS Not enough good replicas to write.")
        );
        run(&mut n, r, "SYNC");
        assert_eq!(run(&mut n, c, "SET k v"), Reply::ok());
        n.set_time(n.now() + 11_000);
        assert_eq!(
            run(&mut n, c, "SET k v"),
            Reply::error("NOREPLICAS Not enough good replicas to write.")
        );
        n.replica_ack(r, 100);
        assert_eq!(run(&mut n, c, "SET k v"), Reply::ok());
        assert_eq!(
            run(&mut n, r, "REPLICAOF h 1"),
            Reply::error("ERR Command is not valid when client is a replica.")
        );
    }

    /// Redis's `unit/multi` "MULTI / EXEC with REPLICAOF": a transaction
    /// that demotes its master runs to its end (EXEC runs what it queued
    /// whatever the role has become) and is not streamed at all.
    #[test]
    fn a_transaction_that_runs_replicaof_runs_whole_and_is_not_streamed() {
        let mut n = Node::new(Profile::V7_0);
        let (c, r) = (ConnId(1), ConnId(2));
        run(&mut n, r, "SYNC");
        run(&mut n, c, "SET foo bar");
        run(&mut n, c, "MULTI");
        run(&mut n, c, "SET foo2 bar");
        run(&mut n, c, "REPLICAOF localhost 9999");
        run(&mut n, c, "SET foo3 bar");
        assert_eq!(
            run(&mut n, c, "EXEC"),
            Reply::Array(vec![Reply::ok(), Reply::ok(), Reply::ok()])
        );
        assert_eq!(run(&mut n, c, "GET foo3"), Reply::Bulk(b"bar".to_vec()));
        assert_eq!(
            run(&mut n, c, "SET foo4 bar"),
            Reply::error("READONLY You can't write against a read only replica.")
        );
        assert_eq!(stream(&mut n, r), ["select 0".to_owned(), "set foo bar".into()]);
        assert_eq!(run(&mut n, c, "REPLICAOF no one"), Reply::ok());
    }
}
