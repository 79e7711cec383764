//! The commands that belong to the connection, not to the data: `HELLO`,
//! `AUTH`, `CLIENT`, `SELECT`, `QUIT`, `RESET`, `COMMAND`, `FLUSHDB`,
//! `REPLCONF`.
//! (`CONFIG` is the node's, with the server's own `port`, `bind` and `dir`
//! given to it at start.)
//!
//! Core's [`Node`](locklab_redis::server::Node) knows keys, clocks and
//! transactions; it has never seen a socket. These commands are about the
//! socket: which protocol it speaks, what it is called, which database it
//! points at, what the server will tell a client library that probes it on
//! connect. So they live in the wire layer, use only the node's public
//! connection API ([`select`], [`set_client_name`], [`reset_conn`],
//! [`flush_db`]) and answer with redis-server 7.0.15's exact texts.
//! Everything else goes to the node, which also answers commands it does not
//! know with redis-server's unknown-command error.
//!
//! One simplification is visible: inside `MULTI`, redis-server queues these
//! commands like any other, but the queue lives in the node, which runs
//! only the ones it also has (`SELECT`, queued and run at `EXEC`). Rather
//! than reorder the others silently, the wire layer passes them to the
//! node, whose refusal dooms the transaction (`EXEC` answers `EXECABORT`),
//! and says why in the error. `QUIT` and `RESET` run at once even inside
//! `MULTI`, as on redis-server.
//!
//! [`select`]: locklab_redis::server::Node::select
//! [`set_client_name`]: locklab_redis::server::Node::set_client_name
//! [`reset_conn`]: locklab_redis::server::Node::reset_conn
//! [`flush_db`]: locklab_redis::server::Node::flush_db

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use locklab_redis::server::config::ClientClass;
use locklab_redis::server::glob::glob_match;
use locklab_redis::server::table::{self, flags, Command, Keys};
use locklab_redis::server::{ConnId, Node, Profile, DATABASES};
use locklab_redis::Reply;

use super::resp::string2ll;

/// What the connection must do after sending a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    /// Carry on with the next request.
    Continue,
    /// `QUIT`: send the reply, then close.
    Close,
    /// `WAIT` that timed out: only this client waits (redis-server blocks
    /// the client, not the server) before its reply is sent.
    DelayReply(u64),
    /// A blocking command (`BLPOP` …) found nothing: no reply now; the
    /// node hands it out later as an outbound reply (see `conn`).
    Block,
    /// `SHUTDOWN`: no reply; the server stops.
    Shutdown,
    /// `REPLCONF ACK` / `GETACK`: no reply at all; carry on.
    Silent,
}

/// What the node's thread sends a connection outside its own batches.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// Encoded replies: a served `BLPOP`, a timed-out one, pub/sub pushes.
    Bytes(Vec<u8>),
    /// The connection's blocking command has been answered (its reply went
    /// just before): it may run its next requests.
    Unblocked,
}

/// How the node's thread reaches a connection, and what it counts to apply
/// `client-output-buffer-limit` (networking.c's
/// `checkClientOutputBufferLimits`) to a client that does not read.
#[derive(Debug)]
pub(crate) struct Outbox {
    pub(crate) tx: tokio::sync::mpsc::UnboundedSender<Outgoing>,
    /// Bytes sent to `tx` that the connection has not written out yet.
    pub(crate) queued: Arc<std::sync::atomic::AtomicUsize>,
    /// The connection's own replies not written out yet (set by the
    /// connection before each batch and after each write): with `queued`,
    /// what redis-server's one output buffer per client holds.
    pub(crate) unsent: Arc<std::sync::atomic::AtomicUsize>,
    /// Told when the client is closed for its output (the task may be
    /// stuck writing to a client that does not read).
    pub(crate) kill: Arc<tokio::sync::Notify>,
    /// Since when `queued` has been over the soft limit.
    pub(crate) soft_since: Option<Instant>,
}

/// What the wire layer remembers about each connection for `CLIENT LIST`
/// and `CLIENT INFO`. (The name and database live in the node.)
#[derive(Debug, Clone)]
pub(crate) struct ClientInfo {
    pub(crate) addr: SocketAddr,
    pub(crate) laddr: SocketAddr,
    pub(crate) fd: i64,
    pub(crate) since: Instant,
    pub(crate) last: Instant,
    /// `cmd=`: the last command, as redis-server's fullname (`client|list`).
    pub(crate) last_cmd: String,
    pub(crate) resp: u8,
    pub(crate) lib_name: Option<Vec<u8>>,
    pub(crate) lib_ver: Option<Vec<u8>>,
}

/// Everything behind the server's one lock: the node, the connections'
/// wire-level records.
pub(crate) struct State {
    pub(crate) node: Node,
    pub(crate) clients: BTreeMap<ConnId, ClientInfo>,
    /// Where to send what the node produces for a connection outside its
    /// own request (a served `BLPOP`, a pub/sub message): encoded bytes.
    pub(crate) outboxes: BTreeMap<ConnId, Outbox>,
}

/// `busy-reply-threshold` (alias `lua-time-limit`) at start, in ms.
pub(crate) const BUSY_REPLY_THRESHOLD_MS: u64 = 5000;

/// What one connection knows about itself without the lock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Session {
    pub(crate) id: ConnId,
    /// Switched by `HELLO 3`, back by `HELLO 2` or `RESET`.
    pub(crate) resp3: bool,
    /// The selected database, as the node had it after the connection's
    /// last batch (what a `WATCH` answered while a script is busy watches).
    pub(crate) db: usize,
}

impl Session {
    pub(crate) fn new(id: ConnId) -> Session {
        Session {
            id,
            resp3: false,
            db: 0,
        }
    }
}

/// Facts about the server that never change while it runs.
#[derive(Debug, Clone)]
pub(crate) struct Env {
    pub(crate) profile: Profile,
    pub(crate) local_addr: SocketAddr,
    /// `busy-reply-threshold`, shared with the connections that read it
    /// while a script holds the node.
    pub(crate) busy_threshold_ms: Arc<AtomicU64>,
    /// `client-query-buffer-limit`, read by the connections on every read.
    pub(crate) query_limit: Arc<AtomicU64>,
    /// `client-output-buffer-limit` of each class (by
    /// [`ClientClass::index`]; the normal class has none by default): hard,
    /// soft, soft seconds (0 = none), read by the connections as their
    /// replies pile up unread.
    pub(crate) obuf: Arc<[[AtomicU64; 3]; 3]>,
}

impl Env {
    /// A server's facts at start: the defaults until `CONFIG SET`.
    pub(crate) fn new(profile: Profile, local_addr: SocketAddr, query_limit: u64) -> Env {
        Env {
            profile,
            local_addr,
            busy_threshold_ms: Arc::new(AtomicU64::new(BUSY_REPLY_THRESHOLD_MS)),
            query_limit: Arc::new(AtomicU64::new(query_limit)),
            obuf: Arc::new(Default::default()),
        }
    }
}

/// One handler's view: the locked state, the connection, the server facts.
struct Ctx<'a> {
    st: &'a mut State,
    sess: &'a mut Session,
    env: &'a Env,
}

type Handler = fn(&mut Ctx<'_>, &[Vec<u8>]) -> (Reply, After);

/// A row of the wire layer's own command table, shaped like core's so that
/// `COMMAND` can describe both.
struct WireCommand {
    name: &'static str,
    arity: i32,
    /// `COMMAND INFO`'s flags and ACL categories, as redis-server 7.0 lists
    /// them for this command.
    flags: &'static [&'static str],
    acl: &'static [&'static str],
    /// `(name, arity)` of each subcommand, for containers.
    subcommands: &'static [(&'static str, i32)],
    /// Runs at once inside `MULTI` instead of being queued.
    immediate_in_multi: bool,
    handler: Handler,
}

const CONN_FLAGS: &[&str] = &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"];

static WIRE: &[WireCommand] = &[
    WireCommand {
        name: "auth",
        arity: -2,
        flags: CONN_FLAGS,
        acl: &["@fast", "@connection"],
        subcommands: &[],
        immediate_in_multi: false,
        handler: auth,
    },
    WireCommand {
        name: "client",
        arity: -2,
        flags: &[],
        acl: &["@slow"],
        subcommands: &[
            ("getname", 2),
            ("help", 2),
            ("id", 2),
            ("info", 2),
            ("list", -2),
            ("no-evict", 3),
            ("no-touch", 3),
            ("setinfo", 4),
            ("setname", 3),
        ],
        immediate_in_multi: false,
        handler: client,
    },
    WireCommand {
        name: "command",
        arity: -1,
        flags: &["loading", "stale"],
        acl: &["@slow", "@connection"],
        subcommands: &[
            ("count", 2),
            ("docs", -2),
            ("getkeys", -3),
            ("getkeysandflags", -3),
            ("help", 2),
            ("info", -2),
            ("list", -2),
        ],
        immediate_in_multi: false,
        handler: command,
    },
    WireCommand {
        name: "flushdb",
        arity: -1,
        flags: &["write"],
        acl: &["@keyspace", "@write", "@slow", "@dangerous"],
        subcommands: &[],
        immediate_in_multi: false,
        handler: flushdb,
    },
    WireCommand {
        name: "hello",
        arity: -1,
        flags: CONN_FLAGS,
        acl: &["@fast", "@connection"],
        subcommands: &[],
        immediate_in_multi: false,
        handler: hello,
    },
    WireCommand {
        name: "quit",
        arity: -1,
        flags: CONN_FLAGS,
        acl: &["@fast", "@connection"],
        subcommands: &[],
        immediate_in_multi: true,
        handler: quit,
    },
    WireCommand {
        name: "replconf",
        arity: -1,
        flags: &["admin", "noscript", "loading", "stale", "allow_busy"],
        acl: &["@admin", "@slow", "@dangerous"],
        subcommands: &[],
        immediate_in_multi: false,
        handler: replconf,
    },
    WireCommand {
        name: "reset",
        arity: 1,
        flags: &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        acl: &["@fast", "@connection"],
        subcommands: &[],
        immediate_in_multi: true,
        handler: reset,
    },
    WireCommand {
        name: "shutdown",
        arity: -1,
        flags: &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"],
        acl: &["@admin", "@slow", "@dangerous"],
        subcommands: &[],
        immediate_in_multi: false,
        handler: shutdown,
    },
    WireCommand {
        name: "select",
        arity: 2,
        flags: &["loading", "stale", "fast"],
        acl: &["@fast", "@connection"],
        subcommands: &[],
        immediate_in_multi: false,
        handler: select,
    },
];

/// The wire command called `name`, if it is one. Called for every request,
/// so it compares lengths before bytes: `GET`/`SET`/`INCR` leave after a
/// handful of integer comparisons.
fn find(name: &[u8]) -> Option<&'static WireCommand> {
    WIRE.iter()
        .find(|w| w.name.len() == name.len() && w.name.as_bytes().eq_ignore_ascii_case(name))
}

fn arity_ok(arity: i32, argc: usize) -> bool {
    if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= arity.unsigned_abs() as usize
    }
}

fn wrong_args(fullname: &str) -> Reply {
    Reply::error(format!("ERR wrong number of arguments for '{fullname}' command"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `%.128s`: what redis-server quotes back of a user's argument.
fn quoted(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len()).min(128);
    text(&b[..end])
}

fn syntax_error() -> Reply {
    Reply::error("ERR syntax error")
}

/// Run one request. The wire layer's own commands are answered here; the
/// rest go to the node, on its clock, with the stall it reports turned into
/// what the connection must do.
pub(crate) fn dispatch(st: &mut State, sess: &mut Session, env: &Env, now_ms: u64, argv: &[Vec<u8>]) -> (Reply, After) {
    let Some(name) = argv.first() else {
        return (Reply::Nil, After::Continue);
    };
    if let Some(w) = find(name) {
        if !w.immediate_in_multi && st.node.in_multi(sess.id) {
            return in_multi(st, sess, now_ms, w, argv);
        }
        let name = fullname(argv, st.node.profile());
        if !arity_ok(w.arity, argv.len()) {
            st.node.count_host_command(&name, true, false, 0);
            return (wrong_args(w.name), After::Continue);
        }
        // A wire command reads the node's clock too (`REPLCONF ACK`'s time).
        st.node.set_time(now_ms);
        let start = st.node.usec_now();
        let mut cx = Ctx { st, sess, env };
        let (reply, after) = (w.handler)(&mut cx, argv);
        let usec = st.node.usec_now().saturating_sub(start);
        st.node
            .count_host_command(&name, false, matches!(reply, Reply::Error(_)), usec);
        return (reply, after);
    }
    st.node.set_time(now_ms);
    let Some(reply) = st.node.execute_or_block(sess.id, argv) else {
        return (Reply::Nil, After::Block);
    };
    follow_config(st, env, argv);
    // A stall is a DEBUG SLEEP's or a WAIT's that times out, alone or
    // inside EXEC: the node runs on the host's clock (`set_host_clock`), so
    // it delays this client's reply, never the server nor anyone's TTLs.
    // redis-server's one thread sleeps, so every client waits: on a server
    // shared by a classroom, `DEBUG SLEEP 1e300` would freeze everyone
    // until a restart. Here only the sleeping client waits — its reply, and
    // what it sent after, come after the sleep of wall time, when keys have
    // expired as they would have — while the others carry on; a client
    // that leaves is freed at once.
    let stall = st.node.last_stall_ms();
    let after = if stall == 0 {
        After::Continue
    } else {
        After::DelayReply(stall)
    };
    (reply, after)
}

/// A wire command inside `MULTI` (see the module documentation): the node
/// queues what it also runs (`SELECT`, run at EXEC) with its own checks,
/// refuses what it does not know and dooms the transaction; we explain.
fn in_multi(st: &mut State, sess: &mut Session, now_ms: u64, w: &WireCommand, argv: &[Vec<u8>]) -> (Reply, After) {
    st.node.set_time(now_ms);
    let known = table::find(&argv[0], st.node.profile()).is_some();
    match st.node.execute(sess.id, argv) {
        // `CMD_NO_MULTI` (SHUTDOWN): processCommand refuses it while
        // queueing and dooms the transaction, as the node's refusal did.
        Reply::Error(_) if !known && w.flags.contains(&"no_multi") => (
            Reply::error("ERR Command not allowed inside a transaction"),
            After::Continue,
        ),
        Reply::Error(_) if !known => (unsupported_in_multi(w.name), After::Continue),
        other => (other, After::Continue),
    }
}

/// The refusal of a wire command inside `MULTI` (see the module
/// documentation).
pub(crate) fn unsupported_in_multi(name: &str) -> Reply {
    Reply::error(format!(
        "ERR '{name}' inside MULTI is not supported by locklab sim-server (the transaction will abort at EXEC)"
    ))
}

// ---------------------------------------------------------------- HELLO ---

/// `validateClientName`: printable ASCII without spaces.
fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

const BAD_NAME: &str = "ERR Client names cannot contain spaces, newlines or special characters.";
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// A server without `requirepass` has one user, `default`, with `nopass`:
/// any password works for it, and no other user exists.
fn authenticate(user: &[u8]) -> Result<(), Reply> {
    if user == b"default" {
        Ok(())
    } else {
        Err(Reply::error(WRONGPASS))
    }
}

/// What a valid `HELLO [protover [AUTH username password] [SETNAME
/// clientname]]` asks for: the protocol, and the name to set (`Some(None)`
/// clears it).
pub(crate) struct HelloOptions {
    pub(crate) proto: Option<i64>,
    pub(crate) name: Option<Option<Vec<u8>>>,
}

/// `helloCommand`'s checks, in its order; `Err` is the reply. Needs nothing
/// but the arguments on a server without `requirepass`, so a connection
/// also answers it while a script is busy.
pub(crate) fn hello_options(argv: &[Vec<u8>]) -> Result<HelloOptions, Reply> {
    let mut proto = None;
    if let Some(v) = argv.get(1) {
        match string2ll(v) {
            Some(v @ 2..=3) => proto = Some(v),
            Some(_) => return Err(Reply::error("NOPROTO unsupported protocol version")),
            None => return Err(Reply::error("ERR Protocol version is not an integer or out of range")),
        }
    }
    let mut user = None;
    let mut name = None;
    let mut j = 2;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = &argv[j];
        if opt.eq_ignore_ascii_case(b"AUTH") && more >= 2 {
            user = Some(&argv[j + 1]);
            j += 3;
        } else if opt.eq_ignore_ascii_case(b"SETNAME") && more >= 1 {
            if !valid_name(&argv[j + 1]) {
                return Err(Reply::error(BAD_NAME));
            }
            let n = &argv[j + 1];
            name = Some((!n.is_empty()).then(|| n.clone()));
            j += 2;
        } else {
            return Err(Reply::error(format!(
                "ERR Syntax error in HELLO option '{}'",
                quoted(opt)
            )));
        }
    }
    if let Some(user) = user {
        authenticate(user)?;
    }
    Ok(HelloOptions { proto, name })
}

/// `HELLO`'s map, once the connection speaks its protocol.
pub(crate) fn hello_reply(id: ConnId, resp3: bool, profile: Profile) -> Reply {
    let pair = |k: &str, v: Reply| (Reply::bulk(k), v);
    Reply::Map(vec![
        pair("server", Reply::bulk("redis")),
        pair("version", Reply::bulk(profile.version())),
        pair("proto", Reply::Integer(if resp3 { 3 } else { 2 })),
        pair("id", Reply::Integer(id.0 as i64)),
        pair("mode", Reply::bulk("standalone")),
        pair("role", Reply::bulk("master")),
        pair("modules", Reply::Array(vec![])),
    ])
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`
fn hello(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> (Reply, After) {
    let opts = match hello_options(argv) {
        Ok(o) => o,
        Err(e) => return (e, After::Continue),
    };
    let id = cx.sess.id;
    if let Some(name) = opts.name {
        cx.st.node.set_client_name(id, name);
    }
    if let Some(v) = opts.proto {
        cx.sess.resp3 = v == 3;
        cx.st.node.set_resp3(id, v == 3);
        if let Some(info) = cx.st.clients.get_mut(&id) {
            info.resp = v as u8;
        }
    }
    (hello_reply(id, cx.sess.resp3, cx.env.profile), After::Continue)
}

/// `AUTH [username] password`
fn auth(_cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> (Reply, After) {
    (auth_reply(argv), After::Continue)
}

/// `AUTH`'s reply, which needs nothing but its arguments on a server
/// without `requirepass` (so it is also answered while a script is busy).
pub(crate) fn auth_reply(argv: &[Vec<u8>]) -> Reply {
    match argv.len() {
        2 => Reply::error(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ),
        3 => match authenticate(&argv[1]) {
            Ok(()) => Reply::ok(),
            Err(e) => e,
        },
        _ => syntax_error(),
    }
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]` as `shutdownCommand`
/// parses it: whether NOSAVE was given, or the error reply. There is no
/// persistence, so nothing is ever saved, and no shutdown is ever in
/// progress to abort.
pub(crate) fn shutdown_flags(argv: &[Vec<u8>]) -> Result<bool, Reply> {
    let (mut nosave, mut save, mut other, mut abort) = (false, false, false, false);
    for arg in &argv[1..] {
        if arg.eq_ignore_ascii_case(b"nosave") {
            nosave = true;
        } else if arg.eq_ignore_ascii_case(b"save") {
            save = true;
        } else if arg.eq_ignore_ascii_case(b"now") || arg.eq_ignore_ascii_case(b"force") {
            other = true;
        } else if arg.eq_ignore_ascii_case(b"abort") {
            abort = true;
        } else {
            return Err(syntax_error());
        }
    }
    if (abort && (nosave || save || other)) || (nosave && save) {
        return Err(syntax_error());
    }
    if abort {
        return Err(Reply::error("ERR No shutdown in progress."));
    }
    Ok(nosave)
}

/// `REPLCONF option value ...` (replication.c `replconfCommand`, 7.0.15):
/// what a replica tells its master during the handshake, checked pair by
/// pair. `ACK offset` (counted only from a connection that attached with
/// `SYNC`/`PSYNC`, for `min-replicas-to-write`) and `GETACK` are never
/// answered: a replica reads nothing back for them.
fn replconf(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> (Reply, After) {
    /// `NET_HOST_STR_LEN`.
    const HOST_STR_LEN: usize = 256;
    let error = |msg: String| (Reply::error(msg), After::Continue);
    if argv.len().is_multiple_of(2) {
        return (syntax_error(), After::Continue);
    }
    for pair in argv[1..].chunks(2) {
        let (option, value) = (&pair[0], &pair[1]);
        match text(option).to_ascii_lowercase().as_str() {
            "listening-port" if string2ll(value).is_none() => {
                return error("ERR value is not an integer or out of range".into())
            }
            "listening-port" | "capa" => {}
            "ip-address" if value.len() >= HOST_STR_LEN => {
                return error(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    value.len()
                ))
            }
            "ip-address" => {}
            "ack" => {
                if let Some(offset) = string2ll(value).filter(|_| cx.st.node.is_replica(cx.sess.id)) {
                    cx.st.node.replica_ack(cx.sess.id, offset.max(0) as u64);
                }
                return (Reply::Nil, After::Silent);
            }
            "getack" => return (Reply::Nil, After::Silent),
            "rdb-only" => match string2ll(value) {
                None => return error("ERR value is not an integer or out of range".into()),
                Some(0 | 1) => {}
                Some(_) => return error("ERR value is out of range, value must between 0 and 1".into()),
            },
            "rdb-filter-only" => {
                let Ok(filters) = locklab_redis::cli::parse_line(value) else {
                    return error("ERR Missing rdb-filter-only values".into());
                };
                if let Some(f) = filters.iter().find(|f| !f.eq_ignore_ascii_case(b"functions")) {
                    return error(format!("ERR Unsupported rdb-filter-only option: {}", text(f)));
                }
            }
            _ => return error(format!("ERR Unrecognized REPLCONF option: {}", text(option))),
        }
    }
    (Reply::ok(), After::Continue)
}

/// `SHUTDOWN`: the server stops, the client gets no reply (its connection
/// closes), as redis-server's process exits.
fn shutdown(_cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> (Reply, After) {
    match shutdown_flags(argv) {
        Ok(_) => (Reply::Nil, After::Shutdown),
        Err(e) => (e, After::Continue),
    }
}

// ------------------------------------------------------ SELECT, FLUSHDB ---

/// `SELECT index`: 16 databases, as redis-server's default.
fn select(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> (Reply, After) {
    let reply = match string2ll(&argv[1]) {
        None => Reply::error("ERR value is not an integer or out of range"),
        Some(n) if i32::try_from(n).is_err() => {
            Reply::error("ERR value is out of range, value must between -2147483648 and 2147483647")
        }
        Some(n) => match usize::try_from(n) {
            Ok(db) if db < DATABASES && cx.st.node.select(cx.sess.id, db) => Reply::ok(),
            _ => Reply::error("ERR DB index is out of range"),
        },
    };
    (reply, After::Continue)
}

/// `FLUSHDB [ASYNC|SYNC]`: the connection's selected database. (Both modes
/// are instant here.)
fn flushdb(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> (Reply, After) {
    let ok = match argv.len() {
        1 => true,
        2 => argv[1].eq_ignore_ascii_case(b"ASYNC") || argv[1].eq_ignore_ascii_case(b"SYNC"),
        _ => false,
    };
    if !ok {
        return (syntax_error(), After::Continue);
    }
    cx.st.node.flush_db(cx.sess.id);
    (Reply::ok(), After::Continue)
}

// ---------------------------------------------------------- QUIT, RESET ---

/// `QUIT`: `+OK`, then the connection closes; pipelined requests after it
/// are never run.
fn quit(_cx: &mut Ctx<'_>, _argv: &[Vec<u8>]) -> (Reply, After) {
    (Reply::ok(), After::Close)
}

/// `RESET`: leave `MULTI`, forget `WATCH`es, database 0, no name, RESP2.
fn reset(cx: &mut Ctx<'_>, _argv: &[Vec<u8>]) -> (Reply, After) {
    cx.st.node.reset_conn(cx.sess.id);
    cx.sess.resp3 = false;
    if let Some(info) = cx.st.clients.get_mut(&cx.sess.id) {
        info.resp = 2;
    }
    (Reply::status("RESET"), After::Continue)
}

// --------------------------------------------------------------- CLIENT ---

/// The subcommand of a container, checked as redis-server does: unknown
/// subcommand first, then the subcommand's own arity. `Err` is the reply.
fn subcommand(w: &WireCommand, argv: &[Vec<u8>], profile: Profile) -> Result<&'static str, Reply> {
    let sub = &argv[1];
    let found = w
        .subcommands
        .iter()
        .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(sub) && (profile.has_8_4() || !since_7_2(w.name, n)));
    match found {
        None => Err(Reply::error(format!(
            "ERR unknown subcommand '{}'. Try {} HELP.",
            quoted(sub),
            w.name.to_uppercase()
        ))),
        Some((n, arity)) if !arity_ok(*arity, argv.len()) => Err(wrong_args(&format!("{}|{n}", w.name))),
        Some((n, _)) => Ok(n),
    }
}

/// `processCommand`'s first refusals, for an answer given without the
/// node (a busy script's): an unknown command or subcommand, then a wrong
/// number of arguments — both come before BUSY in redis-server. The
/// connection's own commands are checked here (their subcommands too), the
/// node's by core's table.
pub(crate) fn refusal(argv: &[Vec<u8>], profile: Profile) -> Option<Reply> {
    let Some(w) = argv.first().and_then(|name| find(name)) else {
        return table::refusal(argv, profile);
    };
    if !arity_ok(w.arity, argv.len()) {
        return Some(wrong_args(w.name));
    }
    if w.subcommands.is_empty() {
        return None;
    }
    subcommand(w, argv, profile).err()
}

/// Subcommands redis-server 7.0 does not have (they came with 7.2): the
/// 7.0 profile answers them with 7.0's unknown-subcommand error.
fn since_7_2(container: &str, sub: &str) -> bool {
    matches!((container, sub), ("client", "setinfo") | ("client", "no-touch"))
}

fn wire(name: &str) -> &'static WireCommand {
    // The names passed here are this file's own table entries.
    WIRE.iter().find(|w| w.name == name).unwrap_or(&WIRE[0])
}

/// `validateClientAttr` for `CLIENT SETINFO`: printable ASCII, no spaces.
fn valid_attr(v: &[u8]) -> bool {
    valid_name(v)
}

/// `CLIENT ID|GETNAME|SETNAME|SETINFO|INFO|LIST|NO-EVICT|NO-TOUCH|HELP`
fn client(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> (Reply, After) {
    let sub = match subcommand(wire("client"), argv, cx.env.profile) {
        Ok(s) => s,
        Err(e) => return (e, After::Continue),
    };
    let id = cx.sess.id;
    let reply = match sub {
        "id" => Reply::Integer(id.0 as i64),
        "getname" => match cx.st.node.client_name(id) {
            Some(n) => Reply::Bulk(n.to_vec()),
            None => Reply::Nil,
        },
        "setname" => {
            let name = &argv[2];
            if valid_name(name) {
                cx.st.node.set_client_name(id, (!name.is_empty()).then(|| name.clone()));
                Reply::ok()
            } else {
                Reply::error(BAD_NAME)
            }
        }
        "setinfo" => client_setinfo(cx, &argv[2], &argv[3]),
        "info" => Reply::Bulk(client_line(cx.st, cx.env, id, Some("client|info")).into_bytes()),
        "list" => client_list(cx, &argv[2..]),
        "no-evict" | "no-touch" => {
            if argv[2].eq_ignore_ascii_case(b"on") || argv[2].eq_ignore_ascii_case(b"off") {
                Reply::ok()
            } else {
                syntax_error()
            }
        }
        _ => help(&[
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "    * ID <client-id> [<client-id> ...]",
            "      Return clients with the given IDs.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "SETINFO <option> <value> (Redis 7.2+ profiles)",
            "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
            "NO-EVICT (ON|OFF)",
            "    Accepted and ignored: the simulator never evicts clients.",
            "(KILL, PAUSE, REPLY, TRACKING and the rest are not simulated.)",
            "HELP",
            "    Prints this help.",
        ]),
    };
    (reply, After::Continue)
}

fn client_setinfo(cx: &mut Ctx<'_>, attr: &[u8], val: &[u8]) -> Reply {
    let lib_name = if attr.eq_ignore_ascii_case(b"lib-name") {
        true
    } else if attr.eq_ignore_ascii_case(b"lib-ver") {
        false
    } else {
        return Reply::error(format!("ERR Unrecognized option '{}'", quoted(attr)));
    };
    if !valid_attr(val) {
        return Reply::error(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            quoted(attr)
        ));
    }
    if let Some(info) = cx.st.clients.get_mut(&cx.sess.id) {
        let slot = if lib_name {
            &mut info.lib_name
        } else {
            &mut info.lib_ver
        };
        *slot = (!val.is_empty()).then(|| val.to_vec());
    }
    Reply::ok()
}

/// `CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...]`
fn client_list(cx: &mut Ctx<'_>, opts: &[Vec<u8>]) -> Reply {
    let mut ids: Option<Vec<u64>> = None;
    let mut only_normal = true;
    match opts {
        [] => {}
        [t, kind] if t.eq_ignore_ascii_case(b"TYPE") => {
            let k = kind.to_ascii_lowercase();
            match k.as_slice() {
                b"normal" => {}
                b"master" | b"replica" | b"slave" | b"pubsub" => only_normal = false,
                _ => return Reply::error(format!("ERR Unknown client type '{}'", quoted(kind))),
            }
        }
        [t, rest @ ..] if t.eq_ignore_ascii_case(b"ID") && !rest.is_empty() => {
            let mut list = Vec::new();
            for r in rest {
                match string2ll(r) {
                    Some(n) if n > 0 => list.push(n as u64),
                    _ => return Reply::error("ERR Invalid client ID"),
                }
            }
            ids = Some(list);
        }
        _ => return syntax_error(),
    }
    let mut out = String::new();
    if only_normal {
        let me = cx.sess.id;
        let conns: Vec<ConnId> = cx.st.clients.keys().copied().collect();
        for id in conns {
            if ids.as_ref().is_some_and(|l| !l.contains(&id.0)) {
                continue;
            }
            let current = (id == me).then_some("client|list");
            out.push_str(&client_line(cx.st, cx.env, id, current));
        }
    }
    Reply::Bulk(out.into_bytes())
}

/// One `CLIENT LIST` line, in redis-server 7.0's field order (7.2's
/// `lib-name`/`lib-ver` appended on the 8.4 profile). Fields the simulator
/// has no equivalent for (buffer sizes, memory) are reported as 0.
fn client_line(st: &State, env: &Env, id: ConnId, current_cmd: Option<&str>) -> String {
    let Some(info) = st.clients.get(&id) else {
        return String::new();
    };
    let now = Instant::now();
    let name = st.node.client_name(id).map(text).unwrap_or_default();
    let multi = if st.node.in_multi(id) { 0 } else { -1 };
    let flags = if st.node.in_multi(id) { "x" } else { "N" };
    let cmd = current_cmd.unwrap_or(&info.last_cmd);
    let mut line = format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub=0 psub=0 ssub=0 multi={} \
         qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r \
         cmd={} user=default redir=-1 resp={}",
        id.0,
        info.addr,
        info.laddr,
        info.fd,
        name,
        now.duration_since(info.since).as_secs(),
        if current_cmd.is_some() {
            0
        } else {
            now.duration_since(info.last).as_secs()
        },
        flags,
        st.node.selected_db(id),
        multi,
        cmd,
        info.resp,
    );
    if env.profile.has_8_4() {
        let lib = |v: &Option<Vec<u8>>| v.as_deref().map(text).unwrap_or_default();
        line.push_str(&format!(
            " lib-name={} lib-ver={}",
            lib(&info.lib_name),
            lib(&info.lib_ver)
        ));
    }
    line.push('\n');
    line
}

fn help(lines: &[&str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::status(*l)).collect())
}

// -------------------------------------------------------------- COMMAND ---

/// The core commands this profile has.
fn core_commands(profile: Profile) -> impl Iterator<Item = &'static Command> {
    table::COMMANDS
        .iter()
        .filter(move |c| table::find(c.name.as_bytes(), profile).is_some())
        .filter(|c| find(c.name.as_bytes()).is_none())
}

/// A command as `COMMAND INFO` describes it, in 7.0's ten-field layout:
/// name, arity, flags, first key, last key, key step, ACL categories, tips,
/// key specs, subcommands. Core's table knows the first six (and whether a
/// command reads, writes or is dangerous); tips and key specs are left
/// empty, which clients treat as "no extra information".
fn core_entry(c: &Command) -> Reply {
    let mut fl = Vec::new();
    let mut acl = Vec::new();
    if c.flags & flags::WRITE != 0 {
        fl.push("write");
        acl.push("@write");
    }
    if c.flags & flags::READONLY != 0 {
        fl.push("readonly");
        acl.push("@read");
    }
    if c.flags & flags::NOSCRIPT != 0 {
        fl.push("noscript");
    }
    if c.flags & flags::DANGEROUS != 0 {
        acl.push("@dangerous");
    }
    let (first, last, step) = match c.keys {
        Keys::None => (0, 0, 0),
        Keys::Range { first, last, step } => (first as i64, last as i64, step as i64),
        Keys::NumKeys { .. } | Keys::DestNumKeys { .. } => {
            fl.push("movablekeys");
            (0, 0, 0)
        }
    };
    entry(c.name, c.arity, &fl, (first, last, step), &acl, Vec::new())
}

fn entry(name: &str, arity: i32, fl: &[&str], keys: (i64, i64, i64), acl: &[&str], subs: Vec<Reply>) -> Reply {
    let statuses = |v: &[&str]| Reply::Array(v.iter().map(|s| Reply::status(*s)).collect());
    Reply::Array(vec![
        Reply::bulk(name),
        Reply::Integer(arity as i64),
        statuses(fl),
        Reply::Integer(keys.0),
        Reply::Integer(keys.1),
        Reply::Integer(keys.2),
        statuses(acl),
        Reply::Array(vec![]),
        Reply::Array(vec![]),
        Reply::Array(subs),
    ])
}

fn wire_subs(w: &WireCommand, profile: Profile) -> impl Iterator<Item = &'static (&'static str, i32)> + '_ {
    w.subcommands
        .iter()
        .filter(move |(n, _)| profile.has_8_4() || !since_7_2(w.name, n))
}

fn wire_entry(w: &WireCommand, profile: Profile) -> Reply {
    let subs = wire_subs(w, profile)
        .map(|(n, a)| {
            entry(
                &format!("{}|{n}", w.name),
                *a,
                &["loading", "stale"],
                (0, 0, 0),
                w.acl,
                Vec::new(),
            )
        })
        .collect();
    entry(w.name, w.arity, w.flags, (0, 0, 0), w.acl, subs)
}

/// The entry for a command name, core's or ours.
fn entry_for(name: &[u8], profile: Profile) -> Option<Reply> {
    if let Some(w) = find(name) {
        return Some(wire_entry(w, profile));
    }
    table::find(name, profile).map(core_entry)
}

/// `(name, acl categories)` of every command and subcommand, for
/// `COMMAND LIST`.
fn all_names(profile: Profile) -> Vec<(String, Vec<&'static str>)> {
    let mut out = Vec::new();
    for c in core_commands(profile) {
        let mut acl = Vec::new();
        if c.flags & flags::WRITE != 0 {
            acl.push("@write");
        }
        if c.flags & flags::READONLY != 0 {
            acl.push("@read");
        }
        if c.flags & flags::DANGEROUS != 0 {
            acl.push("@dangerous");
        }
        out.push((c.name.to_owned(), acl.clone()));
        for (s, _) in c.subcommands {
            out.push((format!("{}|{s}", c.name), acl.clone()));
        }
    }
    for w in WIRE {
        out.push((w.name.to_owned(), w.acl.to_vec()));
        for (s, _) in wire_subs(w, profile) {
            out.push((format!("{}|{s}", w.name), w.acl.to_vec()));
        }
    }
    out
}

/// `COMMAND [COUNT|DOCS|INFO|LIST|GETKEYS|GETKEYSANDFLAGS|HELP]`: enough
/// for client libraries that introspect the server on connect.
fn command(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> (Reply, After) {
    let profile = cx.env.profile;
    let all_entries = || {
        let mut v: Vec<Reply> = core_commands(profile).map(core_entry).collect();
        v.extend(WIRE.iter().map(|w| wire_entry(w, profile)));
        Reply::Array(v)
    };
    if argv.len() == 1 {
        return (all_entries(), After::Continue);
    }
    let sub = match subcommand(wire("command"), argv, profile) {
        Ok(s) => s,
        Err(e) => return (e, After::Continue),
    };
    let reply = match sub {
        "count" => Reply::Integer((core_commands(profile).count() + WIRE.len()) as i64),
        // Real servers send each command's documentation; an empty map is
        // what they send for names they do not know, and clients cope.
        "docs" => Reply::Map(vec![]),
        "info" if argv.len() == 2 => all_entries(),
        "info" => Reply::Array(
            argv[2..]
                .iter()
                .map(|n| entry_for(n, profile).unwrap_or(Reply::Nil))
                .collect(),
        ),
        "list" => command_list(profile, &argv[2..]),
        "getkeys" | "getkeysandflags" => getkeys(profile, &argv[2..], sub == "getkeysandflags"),
        _ => help(&[
            "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands (empty on the simulator).",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
            "HELP",
            "    Prints this help.",
        ]),
    };
    (reply, After::Continue)
}

/// `COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN pattern]`
fn command_list(profile: Profile, opts: &[Vec<u8>]) -> Reply {
    /// Which names `FILTERBY` keeps.
    enum Filter {
        All,
        Pattern(Vec<u8>),
        AclCategory(String),
        /// `MODULE`: the simulator has no modules.
        Nothing,
    }
    let filter = match opts {
        [] => Filter::All,
        [f, kind, arg] if f.eq_ignore_ascii_case(b"FILTERBY") => {
            if kind.eq_ignore_ascii_case(b"PATTERN") {
                Filter::Pattern(arg.clone())
            } else if kind.eq_ignore_ascii_case(b"ACLCAT") {
                Filter::AclCategory(format!("@{}", text(arg).to_lowercase()))
            } else if kind.eq_ignore_ascii_case(b"MODULE") {
                Filter::Nothing
            } else {
                return syntax_error();
            }
        }
        _ => return syntax_error(),
    };
    let keep = |name: &str, acl: &[&str]| match &filter {
        Filter::All => true,
        Filter::Pattern(p) => glob_match(p, name.as_bytes(), true),
        Filter::AclCategory(cat) => acl.contains(&cat.as_str()),
        Filter::Nothing => false,
    };
    Reply::Array(
        all_names(profile)
            .iter()
            .filter(|(n, acl)| keep(n, acl))
            .map(|(n, _)| Reply::bulk(n.as_str()))
            .collect(),
    )
}

/// `COMMAND GETKEYS command arg ...`, from core's key positions.
fn getkeys(profile: Profile, cmdline: &[Vec<u8>], with_flags: bool) -> Reply {
    let Some(name) = cmdline.first() else {
        return Reply::error("ERR Invalid command specified");
    };
    let (arity, keys) = if let Some(c) = table::find(name, profile) {
        (c.arity, Some(c))
    } else if let Some(w) = find(name) {
        (w.arity, None)
    } else {
        return Reply::error("ERR Invalid command specified");
    };
    if !arity_ok(arity, cmdline.len()) {
        return Reply::error("ERR Invalid number of arguments specified for command");
    }
    let Some(c) = keys.filter(|c| c.keys != Keys::None) else {
        return Reply::error("ERR The command has no key arguments");
    };
    let access = if c.flags & flags::WRITE != 0 { "RW" } else { "RO" };
    // A `numkeys` that promises more keys than the command has yields no
    // keys at all on redis-server (not the ones that are there).
    let mut indexes = c.key_indexes(cmdline);
    if let Keys::NumKeys { at } | Keys::DestNumKeys { at } = c.keys {
        let promised = cmdline.get(at).and_then(|n| string2ll(n)).unwrap_or(0);
        // ZUNIONSTORE's destination is not one of the counted keys.
        let counted = indexes.len() - usize::from(matches!(c.keys, Keys::DestNumKeys { .. }) && !indexes.is_empty());
        if promised < 0 || promised as u64 > counted as u64 {
            indexes.clear();
        }
    }
    Reply::Array(
        indexes
            .into_iter()
            .map(|i| {
                let key = Reply::Bulk(cmdline[i].clone());
                if with_flags {
                    Reply::Array(vec![key, Reply::Array(vec![Reply::status(access)])])
                } else {
                    key
                }
            })
            .collect(),
    )
}

// --------------------------------------------------------------- CONFIG ---

/// `CONFIG` is the node's command (so that it queues inside `MULTI`); what
/// only the server knows, where it listens and runs, is given to the node's
/// table once, here.
pub(crate) fn set_host_config(node: &mut Node, local_addr: SocketAddr, maxclients: usize) {
    let dir = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "/".into());
    node.set_host_clock(true);
    node.set_usec_clock(monotonic_usec);
    // Replies go on a socket: range reads write their bytes directly.
    node.encode_replies(true);
    node.set_host_config("maxclients", &maxclients.to_string());
    node.set_host_config("bind", &local_addr.ip().to_string());
    node.set_host_config("dir", &dir);
    node.set_host_config("port", &local_addr.port().to_string());
}

/// Microseconds since the first reading: commandstats' `usec`.
fn monotonic_usec() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_micros() as u64
}

/// After a command that may have run `CONFIG SET` (itself, or inside an
/// `EXEC`): copy `busy-reply-threshold` and `client-query-buffer-limit` to
/// where the connections read them without the node.
fn follow_config(st: &State, env: &Env, argv: &[Vec<u8>]) {
    let name = &argv[0];
    if name.eq_ignore_ascii_case(b"config") || name.eq_ignore_ascii_case(b"exec") {
        publish_limits(&st.node, env);
    }
}

/// Copy the limits the connections read without the node (see [`Env`])
/// from the node's configuration: at start and after a `CONFIG SET`.
pub(crate) fn publish_limits(node: &Node, env: &Env) {
    let config = node.config();
    env.busy_threshold_ms
        .store(config.busy_reply_threshold_ms(), Ordering::Relaxed);
    env.query_limit
        .store(config.client_query_buffer_limit(), Ordering::Relaxed);
    for (class, slots) in ClientClass::ALL.into_iter().zip(env.obuf.iter()) {
        let limit = config.client_output_buffer_limit(class);
        for (slot, v) in slots.iter().zip([limit.hard, limit.soft, limit.soft_seconds]) {
            slot.store(v, Ordering::Relaxed);
        }
    }
}

/// `cmd=` of `CLIENT LIST`: `get`, or `client|setname` for a container.
pub(crate) fn fullname(argv: &[Vec<u8>], profile: Profile) -> String {
    let Some(name) = argv.first() else {
        return String::new();
    };
    let lower = text(name).to_lowercase();
    let container = find(name).is_some_and(|w| !w.subcommands.is_empty())
        || table::find(name, profile).is_some_and(|c| !c.subcommands.is_empty());
    match argv.get(1) {
        Some(sub) if container => format!("{lower}|{}", text(sub).to_lowercase()),
        _ => lower,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(profile: Profile) -> (State, Session, Env) {
        let mut node = Node::new(profile);
        node.set_host_clock(true);
        let id = node.connect();
        let addr: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let now = Instant::now();
        let mut clients = BTreeMap::new();
        clients.insert(
            id,
            ClientInfo {
                addr,
                laddr: addr,
                fd: 7,
                since: now,
                last: now,
                last_cmd: String::new(),
                resp: 2,
                lib_name: None,
                lib_ver: None,
            },
        );
        let st = State {
            node,
            clients,
            outboxes: BTreeMap::new(),
        };
        (
            st,
            Session::new(id),
            Env::new(profile, addr, super::super::QUERY_BUFFER_LIMIT as u64),
        )
    }

    fn run(st: &mut State, sess: &mut Session, env: &Env, line: &str) -> Reply {
        let argv = locklab_redis::cli::parse(line).unwrap();
        dispatch(st, sess, env, locklab_redis::server::EPOCH_MS, &argv).0
    }

    #[test]
    fn wire_table_is_lower_case_and_unique() {
        for w in WIRE {
            assert_eq!(w.name, w.name.to_lowercase());
            assert_eq!(WIRE.iter().filter(|x| x.name == w.name).count(), 1);
        }
    }

    #[test]
    fn hello_switches_protocol_and_names() {
        let (mut st, mut sess, env) = state(Profile::V7_0);
        let r = run(&mut st, &mut sess, &env, "HELLO 3 AUTH default pw SETNAME me");
        assert!(matches!(r, Reply::Map(ref m) if m.len() == 7), "{r:?}");
        assert!(sess.resp3);
        assert_eq!(run(&mut st, &mut sess, &env, "CLIENT GETNAME"), Reply::bulk("me"));
        assert_eq!(
            run(&mut st, &mut sess, &env, "HELLO 4"),
            Reply::error("NOPROTO unsupported protocol version")
        );
        assert_eq!(
            run(&mut st, &mut sess, &env, "HELLO 3 AUTH default"),
            Reply::error("ERR Syntax error in HELLO option 'AUTH'")
        );
        assert_eq!(run(&mut st, &mut sess, &env, "RESET"), Reply::status("RESET"));
        assert!(!sess.resp3);
        assert_eq!(run(&mut st, &mut sess, &env, "CLIENT GETNAME"), Reply::Nil);
    }

    /// Redis's `unit/multi` "MULTI with SHUTDOWN": refused while queueing
    /// (`CMD_NO_MULTI`), and the transaction aborts.
    #[test]
    fn shutdown_inside_multi_is_refused_and_dooms_the_transaction() {
        let (mut st, mut sess, env) = state(Profile::V7_0);
        run(&mut st, &mut sess, &env, "MULTI");
        run(&mut st, &mut sess, &env, "SET foo bar");
        assert_eq!(
            run(&mut st, &mut sess, &env, "SHUTDOWN"),
            Reply::error("ERR Command not allowed inside a transaction")
        );
        assert_eq!(
            run(&mut st, &mut sess, &env, "EXEC"),
            Reply::error("EXECABORT Transaction discarded because of previous errors.")
        );
        assert_eq!(run(&mut st, &mut sess, &env, "GET foo"), Reply::Nil);
    }

    #[test]
    fn select_and_client_setinfo_by_profile() {
        let (mut st, mut sess, env) = state(Profile::V7_0);
        assert_eq!(
            run(&mut st, &mut sess, &env, "SELECT 16"),
            Reply::error("ERR DB index is out of range")
        );
        assert_eq!(
            run(&mut st, &mut sess, &env, "SELECT 01"),
            Reply::error("ERR value is not an integer or out of range")
        );
        assert_eq!(run(&mut st, &mut sess, &env, "SELECT 15"), Reply::ok());
        assert_eq!(st.node.selected_db(sess.id), 15);
        assert_eq!(
            run(&mut st, &mut sess, &env, "CLIENT SETINFO lib-name x"),
            Reply::error("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.")
        );
        let (mut st, mut sess, env) = state(Profile::V8_4);
        assert_eq!(
            run(&mut st, &mut sess, &env, "CLIENT SETINFO lib-name redis-rs"),
            Reply::ok()
        );
        let Reply::Bulk(line) = run(&mut st, &mut sess, &env, "CLIENT INFO") else {
            panic!()
        };
        assert!(String::from_utf8_lossy(&line).contains("lib-name=redis-rs"));
    }

    #[test]
    fn wire_commands_inside_multi_doom_the_transaction() {
        let (mut st, mut sess, env) = state(Profile::V7_0);
        assert_eq!(run(&mut st, &mut sess, &env, "MULTI"), Reply::ok());
        // SELECT is the node's too: queued, run at EXEC (7.0's way).
        assert_eq!(run(&mut st, &mut sess, &env, "SELECT 1"), Reply::status("QUEUED"));
        assert_eq!(
            run(&mut st, &mut sess, &env, "CLIENT SETNAME x"),
            unsupported_in_multi("client")
        );
        assert_eq!(run(&mut st, &mut sess, &env, "SET k v"), Reply::status("QUEUED"));
        assert!(matches!(run(&mut st, &mut sess, &env, "EXEC"), Reply::Error(e) if e.starts_with("EXECABORT")));
    }

    #[test]
    fn a_timed_out_wait_leaves_the_clock_alone() {
        let (mut st, mut sess, env) = state(Profile::V7_0);
        let argv = locklab_redis::cli::parse("WAIT 1 500").unwrap();
        let before = st.node.now();
        let got = dispatch(&mut st, &mut sess, &env, before, &argv);
        assert_eq!(got, (Reply::Integer(0), After::DelayReply(500)));
        assert_eq!(st.node.now(), before, "other clients' TTLs must not jump");
        assert_eq!(
            run(&mut st, &mut sess, &env, "WAIT 1 -1"),
            Reply::error("ERR timeout is negative")
        );
        assert_eq!(run(&mut st, &mut sess, &env, "MULTI"), Reply::ok());
        assert_eq!(run(&mut st, &mut sess, &env, "WAIT 1 500"), Reply::status("QUEUED"));
    }

    #[test]
    fn command_count_and_getkeys() {
        let (mut st, mut sess, env) = state(Profile::V7_0);
        let Reply::Integer(n) = run(&mut st, &mut sess, &env, "COMMAND COUNT") else {
            panic!()
        };
        let Reply::Array(all) = run(&mut st, &mut sess, &env, "COMMAND") else {
            panic!()
        };
        assert_eq!(n as usize, all.len());
        assert_eq!(
            run(&mut st, &mut sess, &env, "COMMAND GETKEYS set a b"),
            Reply::Array(vec![Reply::bulk("a")])
        );
        assert_eq!(
            run(&mut st, &mut sess, &env, "COMMAND GETKEYS ping x y"),
            Reply::error("ERR The command has no key arguments")
        );
        assert_eq!(
            run(&mut st, &mut sess, &env, "COMMAND GETKEYS nosuch a"),
            Reply::error("ERR Invalid command specified")
        );
        // In redis-server 7.0.15's order (its dict's, not the request's nor
        // the alphabet's): `redis-cli CONFIG GET save appendonly` prints
        // save first.
        let r = run(&mut st, &mut sess, &env, "CONFIG GET save appendonly");
        assert_eq!(
            r,
            Reply::Map(vec![
                (Reply::bulk("save"), Reply::bulk("")),
                (Reply::bulk("appendonly"), Reply::bulk("no")),
            ])
        );
    }
}
