//! One simulated Redis node.
//!
//! A [`Node`] is a redis-server in miniature: sixteen keyspaces, the command
//! table, connections with their own transaction state, and the scripting
//! engine. It has no socket and no clock of its own: whoever drives it (the
//! CLI, the scenario world, the browser, `sim-server`) tells it what time it
//! is with [`Node::set_time`], and hands it one argv at a time with
//! [`Node::execute`]. Because nothing else can happen between two calls,
//! every command — and every script — is atomic, exactly as on the single
//! thread of redis-server.
//!
//! The node is split in two halves: the [`Engine`] (data, clock, statistics,
//! watchers) and the [`Scripting`] state (Lua VM and caches). The split is
//! not cosmetic: while a script runs, the Lua VM is borrowed, and its
//! `redis.call` must still reach the data. Keeping them in separate fields
//! lets both be borrowed mutably at once.
//!
//! ## Time
//!
//! Times are Unix milliseconds. The node starts at [`EPOCH_MS`] (so that
//! `EXAT`/`PXAT` have a meaningful "now") and only ever moves forward. When
//! time moves, keys whose deadline has passed are deleted at once, in
//! deadline order, and each deletion is recorded as a [`NodeEvent`]: the
//! timeline draws the moment a lock expired, not the moment somebody noticed.
//!
//! ## Replication
//!
//! Every change is also recorded the way redis-server propagates it to its
//! replicas (relative TTLs rewritten to absolute `PXAT`/`PEXPIREAT`, an
//! expiry as a `DEL`, a script as the writes it made). The scenario world
//! drains these batches with [`Node::take_propagated`] and feeds them to
//! replicas with a delay, which is how asynchronous replication loses a lock.

mod blocking;
pub mod cluster;
mod cmd;
pub mod config;
pub mod db;
mod digest;
mod encoded;
pub mod glob;
pub mod hash;
pub mod lab;
pub mod list;
mod longdouble;
mod memory;
mod objsize;
mod pubsub;
mod rdb;
mod repl;
/// EVAL and FUNCTION's Lua engine. It lives inside the server, as eval.c and
/// function_lua.c live in redis-server's src/: a node owns one, and the
/// engine consults the node's command table (arity, `noscript`, `write`)
/// exactly as `scriptCall` does, so the two are one component.
pub mod script;
pub mod set;
pub mod table;
pub mod zset;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::reply::Reply;
use config::ClientClass;
use db::Db;
use script::meta::ScriptFlags;
use script::Scripting;
use table::{Command, Handler};

pub use blocking::Outbound;

/// redis-server's `string2ll`: the one integer syntax Redis accepts (an
/// optional `-`, digits without a leading zero, within `i64`). The wire
/// layer and the scripting engine parse with it too.
pub use cmd::parse_i64 as string2ll;

/// 2026-01-01T00:00:00Z, where every simulated clock starts.
pub const EPOCH_MS: u64 = 1_767_225_600_000;

/// How many logical databases `SELECT` can choose from, as redis-server's
/// default `databases 16`.
pub const DATABASES: usize = 16;

/// Which redis-server the node imitates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Profile {
    /// Exactly redis-server 7.0.15, the version Debian ships and the
    /// differential tests compare against.
    #[serde(rename = "7.0")]
    V7_0,
    /// 7.0 plus what Redis 8.4 documents for locks: `DELEX`, `DIGEST` and
    /// `SET … IFEQ|IFNE|IFDEQ|IFDNE`.
    #[default]
    #[serde(rename = "8.4")]
    V8_4,
}

impl Profile {
    /// The `redis_version` this profile reports in `INFO server`.
    pub fn version(self) -> &'static str {
        match self {
            Profile::V7_0 => "7.0.15",
            Profile::V8_4 => "8.4.0",
        }
    }

    /// Parse `7.0` / `8.4` (as given to `--redis-version`).
    pub fn parse(s: &str) -> Option<Profile> {
        match s {
            "7.0" | "7" | "7.0.15" => Some(Profile::V7_0),
            "8.4" | "8" | "8.4.0" => Some(Profile::V8_4),
            _ => None,
        }
    }

    /// Does this profile have the Redis 8.4 compare-and-delete family?
    pub fn has_8_4(self) -> bool {
        self >= Profile::V8_4
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Profile::V7_0 => "7.0",
            Profile::V8_4 => "8.4",
        })
    }
}

/// A connection to the node. Cheap to copy; meaningless on another node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ConnId(pub u64);

/// Whether the node accepts writes or follows a master.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    #[default]
    Master,
    /// Rejects client writes with `READONLY`, applies replicated batches,
    /// and — like a redis-server replica — never deletes expired keys itself:
    /// it hides them and waits for the master's `DEL`.
    Replica,
}

/// Something that happened inside the node that a client did not ask for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeEvent {
    /// A key reached its deadline and was deleted.
    Expired { db: u32, key: String, at_ms: u64 },
}

/// What a running script can do to the node: run one command, as
/// `redis.call` / `redis.pcall` do. The node checks the command table
/// (unknown command, arity, commands scripts may not call) and answers with
/// redis-server's error texts, or with the command's own reply.
pub trait ScriptHost {
    fn call(&mut self, argv: &[Vec<u8>]) -> Reply;

    /// `scriptPrepareForRun`, once before a script with `flags` runs
    /// (`ro`: under EVAL_RO/EVALSHA_RO/FCALL_RO): the error that stops it
    /// from starting. A host without a node's state only refuses a
    /// script that may write under a `*_RO` command.
    fn begin_script(&mut self, flags: &ScriptFlags, ro: bool) -> Result<(), Reply> {
        flags.check_ro(ro).map_err(Reply::error)
    }

    /// `rdbcompression`, which `FUNCTION DUMP` follows as rdb.c does.
    fn rdb_compression(&self) -> bool {
        true
    }
}

/// Counters behind `INFO stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InfoStats {
    pub commands_processed: u64,
    pub connections_received: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub expired_keys: u64,
    pub evicted_keys: u64,
    /// Error replies by code (`INFO errorstats`), and their total.
    pub error_replies: BTreeMap<String, u64>,
    pub total_error_replies: u64,
    /// `INFO commandstats`: per command (subcommands as `config|get`), as
    /// redis-server keeps `calls`, `rejected_calls` and `failed_calls` on
    /// each `redisCommand`.
    pub commands: BTreeMap<String, CommandStat>,
}

/// One command's line of `INFO commandstats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandStat {
    /// Times `call()` ran it (from a client, inside EXEC, from a script).
    pub calls: u64,
    /// Microseconds spent in it, as redis-server's `call()` reads
    /// `ustime()` around the command (a script's include its calls'), on
    /// the clock a host lends ([`Node::set_usec_clock`]). Without one (the
    /// pure core has no clock finer than the node's virtual one, on which a
    /// command takes no time) it stays 0.
    pub usec: u64,
    /// Refused before it ran (`rejectCommand`: arity, OOM, cluster
    /// redirection, a RESP2 subscriber's context).
    pub rejected_calls: u64,
    /// Ran and answered an error (`incrCommandStatsOnError` after `call`).
    pub failed_calls: u64,
}

impl InfoStats {
    /// `afterErrorReply`'s accounting: the error code is the text before
    /// the first space when there is one in the first 32 bytes, else `ERR`.
    fn count_error(&mut self, text: &str) {
        let code = match text.as_bytes().iter().take(32).position(|&b| b == b' ') {
            Some(i) => &text[..i],
            None => "ERR",
        };
        self.total_error_replies += 1;
        *self.error_replies.entry(code.to_owned()).or_default() += 1;
    }

    /// The end of `call()`: `calls++`, and `failed_calls++` when the
    /// command's own reply was an error (the commands of an EXEC or a
    /// script count their own errors, EXEC only its own, as 7.0.15 does).
    fn count_call(&mut self, fullname: String, failed: bool, usec: u64) {
        let stat = self.commands.entry(fullname).or_default();
        stat.calls += 1;
        stat.failed_calls += u64::from(failed);
        stat.usec += usec;
    }

    /// `rejectCommand`: `c->cmd->rejected_calls++` (no line for a command
    /// that does not exist).
    fn count_rejected(&mut self, fullname: String) {
        self.commands.entry(fullname).or_default().rejected_calls += 1;
    }
}

/// Whether a script may call an argv (`Err`: why not), as a host decides.
pub type ScriptCallCheck = fn(&[Vec<u8>]) -> Result<(), String>;

/// What a host lets a script reach, for a host that runs scripts on
/// someone else's behalf and applies only their writes (the lab on a server
/// it does not own). redis-server has no such thing; with no fence set the
/// node behaves as redis-server does. A call outside the fence answers an
/// error to the script and is kept as the fence's breach: the host refuses
/// the whole run, since the script's later path followed an error the real
/// server would not have given.
#[derive(Clone, Debug, Default)]
pub struct ScriptFence {
    /// The keys a script may name (`None`: any), as the command table finds
    /// key positions.
    pub keys: Option<BTreeSet<Vec<u8>>>,
    /// Whether a script may call this argv (`Err`: why not).
    pub allow: Option<ScriptCallCheck>,
    /// The first call stopped.
    pub breach: Option<String>,
}

/// A key some connection is watching.
#[derive(Clone, Debug)]
struct Watched {
    db: usize,
    key: Vec<u8>,
}

/// Per-connection state: the selected database and the transaction.
#[derive(Clone, Debug, Default)]
struct Conn {
    db: usize,
    /// `Some` between MULTI and EXEC/DISCARD: the queued argvs.
    multi: Option<Vec<Vec<Vec<u8>>>>,
    /// A command was rejected while queuing, so EXEC must abort.
    multi_error: bool,
    /// A queued command is deny-oom (`mstate.cmd_flags & CMD_DENYOOM`), so
    /// EXEC is refused while memory is over `maxmemory`.
    multi_denyoom: bool,
    watched: Vec<Watched>,
    name: Option<Vec<u8>>,
}

/// The data half of a node: keyspaces, clock, statistics, watchers and the
/// replication stream. Command handlers receive it through [`Ctx`].
#[derive(Clone, Debug)]
pub struct Engine {
    dbs: Vec<Db>,
    profile: Profile,
    role: Role,
    now: u64,
    /// Bumped on every change, as redis-server's `server.dirty`.
    dirty: u64,
    stats: InfoStats,
    /// (db, key) → the connections watching it, each with whether the key
    /// had already expired when it was watched (redis-server 7.0 treats the
    /// later deletion of such a key as "no change").
    watchers: BTreeMap<(usize, Vec<u8>), BTreeMap<ConnId, bool>>,
    /// Connections whose watched keys changed: their EXEC will fail.
    dirty_cas: BTreeSet<ConnId>,
    /// Wall time owed by the last command (DEBUG SLEEP, WAIT) to hosts that
    /// follow a real clock.
    stall_ms: u64,
    /// Time is the host's alone ([`Node::set_host_clock`]): a stall is
    /// reported in `stall_ms` but does not move `now`.
    host_clock: bool,
    /// A monotonic microsecond clock lent by the host, for commandstats'
    /// `usec` ([`Node::set_usec_clock`]).
    usec_clock: Option<fn() -> u64>,
    /// Milliseconds a running script blocked for (`DEBUG SLEEP` inside
    /// it): the clock moves by them when the script ends.
    script_time_debt: u64,
    /// The writes of the command being executed, as propagated, each with
    /// its database.
    propagating: Vec<(usize, Vec<Vec<u8>>)>,
    /// The database the running command writes in (`c->db->id` for
    /// `alsoPropagate`).
    prop_db: usize,
    /// Replicas attached with SYNC / PSYNC, fed the stream (see `repl`).
    repl: repl::Replicas,
    /// Finished batches waiting for [`Node::take_propagated`].
    propagated: Vec<Vec<Vec<Vec<u8>>>>,
    events: Vec<NodeEvent>,
    /// Nesting depth of scripts (commands called from Lua).
    script_depth: u32,
    /// The database a running script has selected.
    script_db: usize,
    /// Open connections, for `INFO clients`.
    clients: usize,
    /// Running the commands of an EXEC: nothing may block (WAIT answers at
    /// once, as redis-server does for a client in MULTI).
    in_exec: bool,
    /// Keep the replication stream (only a master with replicas needs it;
    /// off, it would grow without bound in a long `sim-server` run).
    record_propagation: bool,
    /// Keep expiry events for [`Node::take_events`].
    record_events: bool,
    /// Cluster mode: the slots this node owns.
    cluster: Option<cluster::ClusterConfig>,
    /// The slot the running script is bound to (its declared keys', or the
    /// first key it touched).
    script_slot: Option<u16>,
    /// xorshift64 state for RANDOMKEY and SPOP-like choices: seeded, so a
    /// run is reproducible.
    rng: u64,
    /// The database random eviction looked at last (evict.c's static
    /// `next_db`): each eviction starts from the next one.
    evict_next_db: usize,
    /// Clients parked in BLPOP and friends (see `blocking`).
    blocking: blocking::Blocking,
    /// Replies and pushes for other connections, for the host to deliver.
    outbound: Vec<Outbound>,
    /// Channels and patterns, and which connections speak RESP3.
    pubsub: pubsub::PubSub,
    /// The connection whose command is running.
    conn: Option<ConnId>,
    /// Commands scripts asked for that the simulator does not know (even
    /// under `redis.pcall`): a host that checks a script here before a real
    /// server runs it cannot vouch for a script that did (see
    /// [`Node::unknown_script_calls`]).
    unknown_script_calls: u64,
    /// What a host lets scripts reach (see [`ScriptFence`]); `None`: all.
    script_fence: Option<ScriptFence>,
    /// `CONFIG GET` / `CONFIG SET` parameters (the encoding thresholds are
    /// read by `OBJECT ENCODING`).
    config: config::Config,
    /// `DEBUG SET-ACTIVE-EXPIRE 0` turns off deleting keys when the clock
    /// passes their deadline: they then expire only when touched (lazily).
    pub(crate) active_expire: bool,
    /// `DEBUG SET-DISABLE-DENY-SCRIPTS 1`: scripts may call `noscript`
    /// commands (the Redis test suite uses it to reach `DEBUG PROTOCOL`).
    pub(crate) script_deny_disabled: bool,
    /// The host's buffer for a reply written as RESP bytes (see `encoded`).
    pub(crate) encoded: encoded::Encoded,
    /// `server.pre_command_oom_state`: memory was over `maxmemory` when the
    /// current command started (scripts check it before their first write).
    pre_command_oom: bool,
    /// The running script declared `allow-oom` (`SCRIPT_ALLOW_OOM`).
    script_allow_oom: bool,
    /// The running script has called a write command (`SCRIPT_WRITE_DIRTY`):
    /// from then on it is never stopped for memory halfway.
    script_write_dirty: bool,
    /// The last error a command called by the running script answered:
    /// a script that ends with it (`redis.call` raised it, or `redis.pcall`'s
    /// table was returned) replies with `ERR_REPLY_FLAG_NO_STATS_UPDATE`, so
    /// `INFO errorstats` counts that error once, as the command's.
    script_call_error: Option<String>,
    /// The script's last `redis.call` got past `scriptCall`'s checks.
    script_call_ran: bool,
    /// The current command's error reply was counted in `INFO errorstats`
    /// where it was made (see [`Node::call`]).
    reply_error_counted: bool,
}

/// Everything a command handler may touch: the engine and the calling
/// connection's database.
pub(crate) struct Ctx<'a> {
    pub(crate) e: &'a mut Engine,
    pub(crate) db: usize,
}

impl Ctx<'_> {
    /// The command changed its key, `argv[1]`, and goes to replicas as it
    /// came: [`Engine::changed`], then `call()`'s default propagation of
    /// the client's own argv.
    pub(crate) fn changed_as_sent(&mut self, argv: &[Vec<u8>]) {
        self.e.changed(self.db, &argv[1]);
        self.e.propagate(|| argv.to_vec());
    }
}

/// A simulated redis-server.
#[derive(Clone, Debug)]
pub struct Node {
    engine: Engine,
    scripting: Scripting,
    conns: BTreeMap<ConnId, Conn>,
    next_conn: u64,
    /// The current command runs for a host that can hold its reply back
    /// (see [`Node::execute_or_block`]).
    host_blocks: bool,
}

impl Node {
    /// A fresh, empty node at [`EPOCH_MS`].
    pub fn new(profile: Profile) -> Node {
        Node {
            engine: Engine {
                dbs: (0..DATABASES).map(|_| Db::default()).collect(),
                profile,
                role: Role::Master,
                now: EPOCH_MS,
                dirty: 0,
                stats: InfoStats::default(),
                watchers: BTreeMap::new(),
                dirty_cas: BTreeSet::new(),
                stall_ms: 0,
                host_clock: false,
                usec_clock: None,
                script_time_debt: 0,
                propagating: Vec::new(),
                prop_db: 0,
                repl: repl::Replicas::default(),
                propagated: Vec::new(),
                events: Vec::new(),
                script_depth: 0,
                script_db: 0,
                clients: 0,
                in_exec: false,
                record_propagation: false,
                record_events: false,
                cluster: None,
                script_slot: None,
                rng: 0x9E37_79B9_7F4A_7C15,
                evict_next_db: 0,
                blocking: blocking::Blocking::default(),
                outbound: Vec::new(),
                pubsub: pubsub::PubSub::default(),
                conn: None,
                unknown_script_calls: 0,
                script_fence: None,
                config: config::Config::default(),
                active_expire: true,
                script_deny_disabled: false,
                encoded: encoded::Encoded::default(),
                pre_command_oom: false,
                script_allow_oom: false,
                script_write_dirty: false,
                script_call_error: None,
                script_call_ran: false,
                reply_error_counted: false,
            },
            scripting: Scripting::new(),
            conns: BTreeMap::new(),
            next_conn: 1,
            host_blocks: false,
        }
    }

    pub fn profile(&self) -> Profile {
        self.engine.profile
    }

    pub fn role(&self) -> Role {
        self.engine.role
    }

    /// Make the node a replica (read-only, no expiry of its own) or a master.
    /// A promoted replica starts expiring the keys it hid.
    pub fn set_role(&mut self, role: Role) {
        match role {
            Role::Master => self.engine.promote(),
            Role::Replica => self.engine.role = role,
        }
    }

    /// The node's clock, in Unix milliseconds.
    pub fn now(&self) -> u64 {
        self.engine.now
    }

    /// Move the node's clock to `ms` (never backwards: a node's clock that
    /// jumps back only stalls its expiry, which [`Node::set_time`]'s caller
    /// models by holding time still). Expired keys are deleted.
    pub fn set_time(&mut self, ms: u64) {
        if ms > self.engine.now {
            self.engine.now = ms;
        }
        self.engine.expire_due();
        self.engine.expire_blocked();
    }

    /// Move the clock forward by `ms`.
    pub fn advance(&mut self, ms: u64) {
        self.set_time(self.engine.now.saturating_add(ms));
    }

    /// Force the clock to `ms`, even backwards: a clock jump. Deadlines are
    /// absolute, so a jump forward expires keys early and a jump back keeps
    /// them alive longer — the failure lessons 20 and 32 are about.
    pub fn jump_clock(&mut self, ms: u64) {
        self.engine.now = ms;
        self.engine.expire_due();
    }

    /// The earliest key deadline, if any key has a TTL: when the next
    /// expiry will happen. The world uses it to schedule its event.
    pub fn next_deadline(&self) -> Option<u64> {
        self.engine.dbs.iter().filter_map(Db::next_deadline).min()
    }

    /// Open a connection.
    pub fn connect(&mut self) -> ConnId {
        let id = ConnId(self.next_conn);
        self.connect_as(id);
        id
    }

    /// Open a connection whose id the host chose (sim-server numbers a
    /// connection when it accepts it, even while a script holds the node).
    pub fn connect_as(&mut self, id: ConnId) {
        self.next_conn = self.next_conn.max(id.0 + 1);
        self.conns.insert(id, Conn::default());
        self.engine.stats.connections_received += 1;
        self.engine.clients = self.conns.len();
    }

    /// `FUNCTION STATS` as it is between commands (nothing running): what a
    /// host answering while a function runs builds its reply from.
    pub fn function_stats(&self) -> Reply {
        self.scripting.function_stats()
    }

    /// Close a connection, dropping its transaction and watches.
    pub fn disconnect(&mut self, conn: ConnId) {
        self.unblock(conn);
        self.engine.repl.drop_conn(conn);
        self.engine.pubsub.drop_conn(conn);
        self.engine.pubsub.set_resp3(conn, false);
        self.unwatch_all(conn);
        self.engine.dirty_cas.remove(&conn);
        self.conns.remove(&conn);
        self.engine.clients = self.conns.len();
    }

    /// Number of open connections.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// `flagTransaction`: a command of this connection was refused before
    /// reaching the node (sim-server's BUSY answers while a script runs),
    /// so an open transaction's EXEC must abort.
    pub fn flag_transaction(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get_mut(&conn) {
            if c.multi.is_some() {
                c.multi_error = true;
            }
        }
    }

    /// `CLIENT_DIRTY_CAS`: a key this connection watches was changed where
    /// the node could not see the watch (a `WATCH` sim-server answered while
    /// a script held the node, see
    /// [`ScriptControl::watch_while_busy`](script::ScriptControl::watch_while_busy)), so
    /// its next `EXEC` fails. Nothing for a connection that watches nothing.
    pub fn flag_dirty_cas(&mut self, conn: ConnId) {
        if self.conns.get(&conn).is_some_and(|c| !c.watched.is_empty()) {
            self.engine.dirty_cas.insert(conn);
        }
    }

    /// The commands this connection has queued since MULTI (none outside a
    /// transaction): a host that runs scripts under a kill control looks
    /// for one before EXEC.
    pub fn queued(&self, conn: ConnId) -> &[Vec<Vec<u8>>] {
        self.conns
            .get(&conn)
            .and_then(|c| c.multi.as_deref())
            .unwrap_or_default()
    }

    /// Is this connection between MULTI and EXEC? (redis-cli shows `(TX)`.)
    pub fn in_multi(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_some_and(|c| c.multi.is_some())
    }

    /// The database a connection has selected.
    pub fn selected_db(&self, conn: ConnId) -> usize {
        self.conns.get(&conn).map_or(0, |c| c.db)
    }

    /// `SELECT` for a connection; the wire layer's command, but the state is
    /// here. Returns false for an index out of range.
    pub fn select(&mut self, conn: ConnId, db: usize) -> bool {
        match self.conns.get_mut(&conn) {
            Some(c) if db < DATABASES => {
                c.db = db;
                true
            }
            _ => false,
        }
    }

    /// The connection's protocol (`HELLO 2|3`): a RESP2 connection with
    /// subscriptions may only run the pub/sub commands, PING, QUIT and RESET.
    pub fn set_resp3(&mut self, conn: ConnId, on: bool) {
        self.engine.pubsub.set_resp3(conn, on);
    }

    /// How many channels and patterns the connection is subscribed to.
    pub fn subscriptions(&self, conn: ConnId) -> usize {
        self.engine.pubsub.count(conn)
    }

    /// The connection's `client-output-buffer-limit` class, as
    /// networking.c's `getClientType` tells it: a replica (attached by
    /// `SYNC`/`PSYNC`) first, then a client with subscriptions, then the rest.
    pub fn client_class(&self, conn: ConnId) -> ClientClass {
        if self.engine.repl.is_replica(conn) {
            ClientClass::Replica
        } else if self.subscriptions(conn) > 0 {
            ClientClass::Pubsub
        } else {
            ClientClass::Normal
        }
    }

    /// Did `conn` attach as a replica (`SYNC`/`PSYNC`)?
    pub fn is_replica(&self, conn: ConnId) -> bool {
        self.engine.repl.is_replica(conn)
    }

    /// A replica's `REPLCONF ACK offset`, at the node's time.
    pub fn replica_ack(&mut self, conn: ConnId, offset: u64) {
        let now = self.engine.now;
        self.engine.repl.ack(conn, offset, now);
    }

    /// `CLIENT SETNAME` / `GETNAME` storage.
    pub fn set_client_name(&mut self, conn: ConnId, name: Option<Vec<u8>>) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.name = name;
        }
    }

    pub fn client_name(&self, conn: ConnId) -> Option<&[u8]> {
        self.conns.get(&conn).and_then(|c| c.name.as_deref())
    }

    /// `RESET`: leave MULTI, drop watches, select db 0, forget the name.
    pub fn reset_conn(&mut self, conn: ConnId) {
        self.engine.pubsub.drop_conn(conn);
        self.engine.pubsub.set_resp3(conn, false);
        self.unwatch_all(conn);
        self.engine.dirty_cas.remove(&conn);
        if let Some(c) = self.conns.get_mut(&conn) {
            *c = Conn::default();
        }
    }

    /// `FLUSHDB` of one connection's database (the wire layer's command).
    pub fn flush_db(&mut self, conn: ConnId) {
        let db = self.selected_db(conn);
        self.engine.flush(Some(db));
    }

    /// Empty every keyspace and forget scripts and functions: a node that
    /// restarted without persistence.
    pub fn wipe(&mut self) {
        self.engine.flush(None);
        self.scripting = Scripting::new();
    }

    /// Run one command for a connection and return its reply. An unknown
    /// connection is opened implicitly, so a driver can use fixed ids.
    pub fn execute(&mut self, conn: ConnId, argv: &[Vec<u8>]) -> Reply {
        if let std::collections::btree_map::Entry::Vacant(slot) = self.conns.entry(conn) {
            slot.insert(Conn::default());
            self.next_conn = self.next_conn.max(conn.0 + 1);
            self.engine.clients = self.conns.len();
        }
        self.engine.stall_ms = 0;
        self.engine.encoded.ready = false;
        self.engine.encoded.open = false;
        self.engine.conn = Some(conn);
        self.engine.reply_error_counted = false;
        let mut reply = self.process(conn, argv);
        self.engine.conn = None;
        self.settle_blocking(conn, &mut reply);
        if !reply.is_plain() {
            reply.sanitize_errors();
        }
        // Error replies are counted as they are written: a command's (and
        // each of an EXEC's commands', and each of a script's calls') in
        // `call`; a refusal before the command ran, here.
        if let Reply::Error(e) = &reply {
            if !self.engine.reply_error_counted {
                self.engine.stats.count_error(e);
            }
        }
        // `CMD_TOUCHES_ARBITRARY_KEYS`: their lazy expiries are not wrapped.
        let arbitrary = argv
            .first()
            .is_some_and(|n| n.eq_ignore_ascii_case(b"scan") || n.eq_ignore_ascii_case(b"randomkey"));
        self.engine.finish_batch_as(!arbitrary);
        reply
    }

    /// Have the commands that can write their replies as RESP bytes do so
    /// (range reads of plain commands, outside `EXEC` and scripts): a host
    /// that sends replies on a socket takes them with
    /// [`Node::take_encoded`] instead of encoding a tree (see `encoded`).
    pub fn encode_replies(&mut self, on: bool) {
        self.engine.encoded.wanted = on;
    }

    /// The last command's reply as RESP bytes, if it was written so (its
    /// [`Node::execute`] reply is then a placeholder); taken once.
    pub fn take_encoded(&mut self) -> Option<&[u8]> {
        self.engine.encoded.take()
    }

    /// Wall-clock milliseconds the last command wanted to block for
    /// (`DEBUG SLEEP`, a `WAIT` that timed out). The virtual clock has
    /// already moved (unless [`Node::set_host_clock`]); a host on real time
    /// may want to stall too.
    pub fn last_stall_ms(&self) -> u64 {
        self.engine.stall_ms
    }

    /// Let only the host move time ([`Node::set_time`]): a command that
    /// blocks (`DEBUG SLEEP`, a `WAIT` that times out, alone or inside
    /// `EXEC`) then reports its stall in [`Node::last_stall_ms`] and leaves
    /// the clock alone. For a node shared by clients on real time
    /// (sim-server), where one client's `DEBUG SLEEP 1e6` must delay that
    /// client, not expire everybody's keys for good.
    pub fn set_host_clock(&mut self, on: bool) {
        self.engine.host_clock = on;
    }

    /// Time each command on `clock` (monotonic microseconds) for `INFO
    /// commandstats`' `usec`, as redis-server's `call()` does with
    /// `ustime()`. A host with real clients (sim-server) lends one; the
    /// lessons and the page, which replay deterministically, do not.
    pub fn set_usec_clock(&mut self, clock: fn() -> u64) {
        self.engine.usec_clock = Some(clock);
    }

    /// The lent microsecond clock's reading, 0 without one.
    pub fn usec_now(&self) -> u64 {
        self.engine.usec_now()
    }

    /// The node's `CONFIG` parameters.
    pub fn config(&self) -> &config::Config {
        &self.engine.config
    }

    /// `CONFIG SET name value …`, all or nothing (see [`config::Config::set`]);
    /// `Err` is redis-server's error text without the `ERR ` prefix.
    pub fn config_set(&mut self, args: &[Vec<u8>]) -> Result<(), String> {
        self.engine.config.set(args)
    }

    /// A command the host answered itself (sim-server's `HELLO`, `CLIENT`
    /// …), counted in `INFO commandstats` as `call()` would: `rejected`
    /// when refused before running (wrong arity), else a call that
    /// `failed` or not.
    pub fn count_host_command(&mut self, fullname: &str, rejected: bool, failed: bool, usec: u64) {
        self.engine.stats.commands_processed += u64::from(!rejected);
        if rejected {
            self.engine.stats.count_rejected(fullname.to_owned());
        } else {
            self.engine.stats.count_call(fullname.to_owned(), failed, usec);
        }
    }

    /// `CONFIG RESETSTAT`: the `INFO stats` counters back to zero.
    pub fn reset_stats(&mut self) {
        self.engine.stats = InfoStats::default();
    }

    /// A parameter only the host knows (`port`, `bind`, `dir`), as
    /// `CONFIG GET` will show it.
    pub fn set_host_config(&mut self, name: &str, value: &str) {
        self.engine.config.set_host_value(name, value);
    }

    /// Run as one node of a Redis Cluster owning some slots (lesson 31), or
    /// standalone (`None`, the default).
    pub fn set_cluster(&mut self, cfg: Option<cluster::ClusterConfig>) {
        self.engine.cluster = cfg;
    }

    /// Start or stop recording the replication stream for
    /// [`Node::take_propagated`]. Off by default: a node without replicas
    /// has nobody to send it to.
    pub fn record_propagation(&mut self, on: bool) {
        self.engine.record_propagation = on;
        if !on {
            self.engine.propagating.clear();
            self.engine.propagated.clear();
        }
    }

    /// Start or stop recording expiry events for [`Node::take_events`].
    /// Off by default, for the same reason.
    pub fn record_events(&mut self, on: bool) {
        self.engine.record_events = on;
        if !on {
            self.engine.events.clear();
        }
    }

    /// Batches of writes to send to replicas, oldest first. Always empty
    /// unless [`Node::record_propagation`] was switched on.
    pub fn take_propagated(&mut self) -> Vec<Vec<Vec<Vec<u8>>>> {
        std::mem::take(&mut self.engine.propagated)
    }

    /// Things that happened on their own (expiries), oldest first. Always
    /// empty unless [`Node::record_events`] was switched on.
    pub fn take_events(&mut self) -> Vec<NodeEvent> {
        std::mem::take(&mut self.engine.events)
    }

    /// Apply a batch the master propagated. Runs even on a replica (that is
    /// the point) and is not itself propagated further.
    pub fn apply_replicated(&mut self, batch: &[Vec<Vec<u8>>]) {
        let role = self.engine.role;
        self.engine.role = Role::Master;
        for argv in batch {
            let _ = self.engine.run_plain(0, argv);
        }
        self.engine.role = role;
        self.engine.propagating.clear();
        if role == Role::Master {
            self.engine.finish_batch();
        }
    }

    /// Read-only view of a key's value and deadline, for the world's
    /// invariant checks and the timeline (no statistics, no expiry).
    pub fn peek(&self, db: usize, key: &[u8]) -> Option<&db::Entry> {
        let e = self.engine.dbs.get(db)?.get(key)?;
        match e.expires_at {
            Some(at) if at < self.engine.now => None,
            _ => Some(e),
        }
    }

    /// Number of keys in a database (expired keys excluded).
    pub fn dbsize(&self, db: usize) -> usize {
        self.engine.dbs.get(db).map_or(0, Db::len)
    }

    /// The `INFO stats` counters.
    /// How many times a script called a command this simulator does not
    /// have, since the node was made. A real server may have it, so the
    /// script's run there may go another way than here.
    pub fn unknown_script_calls(&self) -> u64 {
        self.engine.unknown_script_calls
    }

    /// Fence in what scripts may call from now on (`None`: lift it). The
    /// first call the fence stops is kept for [`Node::take_fence_breach`].
    pub fn set_script_fence(&mut self, fence: Option<ScriptFence>) {
        self.engine.script_fence = fence;
    }

    /// The first `redis.call` the fence stopped since it was set (or since
    /// the last take), and why; `None` when none was stopped.
    pub fn take_fence_breach(&mut self) -> Option<String> {
        self.engine.script_fence.as_mut().and_then(|f| f.breach.take())
    }

    pub fn stats(&self) -> &InfoStats {
        &self.engine.stats
    }

    fn unwatch_all(&mut self, conn: ConnId) {
        let Some(c) = self.conns.get_mut(&conn) else { return };
        for w in c.watched.drain(..) {
            let k = (w.db, w.key);
            if let Some(set) = self.engine.watchers.get_mut(&k) {
                set.remove(&conn);
                if set.is_empty() {
                    self.engine.watchers.remove(&k);
                }
            }
        }
    }

    /// redis-server's `processCommand`, reduced to what a node without
    /// networking, ACLs or memory limits still has to decide.
    fn process(&mut self, conn: ConnId, argv: &[Vec<u8>]) -> Reply {
        if argv.is_empty() {
            // redis-server ignores an empty multibulk; so does redis-cli.
            return Reply::Nil;
        }
        let cmd = match table::lookup(argv, self.engine.profile) {
            Ok(cmd) => cmd,
            Err(err) => return self.reject(conn, None, err),
        };
        // processCommand: RESP2 subscribers are confined (RESP3 ones not).
        if self.engine.pubsub.restricted(conn)
            && !matches!(
                cmd.name,
                "ping" | "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" | "ssubscribe" | "sunsubscribe"
            )
        {
            return self.reject(
                conn,
                Some((cmd, argv)),
                Reply::error(format!(
                    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    cmd.full_name(argv)
                )),
            );
        }
        if !cmd.arity_ok(argv.len()) {
            let msg = table::arity_message(cmd, argv);
            // A malformed EXEC ends any transaction on the spot
            // (`execCommandAbort`), and says so even outside MULTI.
            if matches!(cmd.handler, Handler::Exec) {
                self.discard(conn);
                self.engine.stats.count_rejected(cmd.full_name(argv));
                return Reply::error(format!("EXECABORT Transaction discarded because of: {msg}"));
            }
            return self.reject(conn, Some((cmd, argv)), Reply::error(format!("ERR {msg}")));
        }
        if let Some(err) = self.engine.cluster_redirect(cmd, argv) {
            return self.reject(conn, Some((cmd, argv)), err);
        }
        if let Some(err) = self.check_maxmemory(conn, cmd, argv) {
            return err;
        }
        if let Some(err) = self.check_good_replicas(conn, cmd, argv) {
            return err;
        }
        if let Some(err) = self.check_replica(conn, cmd, argv) {
            return err;
        }
        let queues = !matches!(
            cmd.handler,
            Handler::Exec | Handler::Discard | Handler::Multi | Handler::Watch
        );
        let denyoom = queues && self.in_multi(conn) && self.denyoom(cmd, argv);
        let db = match self.conns.get_mut(&conn) {
            Some(Conn {
                multi: Some(queue),
                multi_denyoom,
                ..
            }) if queues => {
                queue.push(argv.to_vec());
                *multi_denyoom |= denyoom;
                return Reply::status("QUEUED");
            }
            Some(c) => c.db,
            None => 0,
        };
        self.call(conn, db, cmd, argv)
    }

    /// `getCommandFlags(c)`'s write, deny-oom and stale bits: a script's
    /// declared flags stand in for EVAL's, EVALSHA's and FCALL's own
    /// (`scriptFlagsToCmdFlags`: no `no-writes` makes it a write, neither
    /// `allow-oom` nor `no-writes` deny-oom, `allow-stale` stale).
    fn command_flags(&self, cmd: &Command, argv: &[Vec<u8>]) -> CommandFlags {
        let declared = match cmd.handler {
            Handler::Script(_) => self.scripting.declared_flags(argv),
            _ => None,
        };
        match declared {
            Some(f) => CommandFlags {
                write: !f.no_writes,
                denyoom: f.deny_oom(),
                stale: f.allow_stale,
            },
            None => CommandFlags {
                write: cmd.is_write(),
                denyoom: cmd.is_denyoom(argv),
                stale: cmd.is_stale(argv),
            },
        }
    }

    /// `CMD_DENYOOM` of `argv` ([`Node::command_flags`]).
    fn denyoom(&self, cmd: &Command, argv: &[Vec<u8>]) -> bool {
        self.command_flags(cmd, argv).denyoom
    }

    /// A flag of `cmd`, or for an EXEC, of any command its transaction
    /// queued (`c->mstate.cmd_flags`).
    fn any_flag(&self, conn: ConnId, cmd: &Command, argv: &[Vec<u8>], flag: fn(CommandFlags) -> bool) -> bool {
        let profile = self.engine.profile;
        flag(self.command_flags(cmd, argv))
            || (matches!(cmd.handler, Handler::Exec)
                && self.in_multi(conn)
                && self
                    .queued(conn)
                    .iter()
                    .any(|q| table::lookup(q, profile).is_ok_and(|c| flag(self.command_flags(c, q)))))
    }

    /// `processCommand`'s maxmemory rule: evict what the policy allows
    /// (see `memory`), then, still over the limit, refuse a deny-oom
    /// command, an EXEC of a transaction that queued one, and anything but
    /// EXEC and DISCARD inside MULTI. The refusal dooms the transaction; a
    /// refused EXEC discards it (`execCommandAbort`).
    fn check_maxmemory(&mut self, conn: ConnId, cmd: &Command, argv: &[Vec<u8>]) -> Option<Reply> {
        if self.engine.config.maxmemory() == 0 {
            self.engine.pre_command_oom = false;
            return None;
        }
        let out_of_memory = !self.engine.perform_evictions();
        self.engine.finish_batch_as(false);
        let exec = matches!(cmd.handler, Handler::Exec);
        let multi = self.conns.get(&conn).filter(|c| c.multi.is_some());
        let reject = self.denyoom(cmd, argv)
            || (exec && multi.is_some_and(|c| c.multi_denyoom))
            || (multi.is_some() && !matches!(cmd.handler, Handler::Exec | Handler::Discard));
        if out_of_memory && reject {
            if exec && multi.is_some() {
                self.discard(conn);
                self.engine.stats.count_rejected(cmd.full_name(argv));
                return Some(Reply::error(format!(
                    "EXECABORT Transaction discarded because of: {}",
                    memory::OOM
                )));
            }
            return Some(self.reject(conn, Some((cmd, argv)), Reply::error(memory::OOM)));
        }
        self.engine.pre_command_oom = out_of_memory;
        None
    }

    /// `processCommand`'s `checkGoodReplicasStatus`: with
    /// `min-replicas-to-write` (and `min-replicas-max-lag`) set, a master
    /// refuses writes, and an EXEC that queued one, unless that many
    /// replicas acknowledged within the lag (`REPLCONF ACK`).
    fn check_good_replicas(&mut self, conn: ConnId, cmd: &Command, argv: &[Vec<u8>]) -> Option<Reply> {
        if !self.engine.lacks_good_replicas() || !self.any_flag(conn, cmd, argv, |f| f.write) {
            return None;
        }
        Some(self.refuse(conn, cmd, argv, NOREPLICAS))
    }

    /// `processCommand`'s refusals on a replica: a client's write
    /// (`READONLY`, under `replica-read-only`), and — while the link to
    /// the master is down and `replica-serve-stale-data` is `no` —
    /// anything without `CMD_STALE` (`MASTERDOWN`). The master's own
    /// stream is applied past these (`apply_replicated`).
    fn check_replica(&mut self, conn: ConnId, cmd: &Command, argv: &[Vec<u8>]) -> Option<Reply> {
        if self.engine.role != Role::Replica {
            return None;
        }
        if self.engine.config.replica_read_only() && self.any_flag(conn, cmd, argv, |f| f.write) {
            return Some(self.refuse(conn, cmd, argv, READONLY));
        }
        let link_down = self.engine.repl.master.is_some();
        // is_denystale_command: not stale itself, or an EXEC that queued
        // one that is not (`c->mstate.cmd_inv_flags`).
        if link_down && !self.engine.config.replica_serve_stale_data() && self.any_flag(conn, cmd, argv, |f| !f.stale) {
            return Some(self.refuse(conn, cmd, argv, MASTERDOWN));
        }
        None
    }

    /// `rejectCommand`: the error, and the transaction doomed; a refused
    /// EXEC discards its transaction and says why (`execCommandAbort`).
    fn refuse(&mut self, conn: ConnId, cmd: &Command, argv: &[Vec<u8>], err: &str) -> Reply {
        if matches!(cmd.handler, Handler::Exec) && self.in_multi(conn) {
            self.discard(conn);
            self.engine.stats.count_rejected(cmd.full_name(argv));
            return Reply::error(format!("EXECABORT Transaction discarded because of: {err}"));
        }
        self.reject(conn, Some((cmd, argv)), Reply::error(err))
    }

    /// An error found before the command ran also dooms an open transaction
    /// (`flagTransaction`): its EXEC will answer EXECABORT.
    fn reject(&mut self, conn: ConnId, cmd: Option<(&Command, &[Vec<u8>])>, err: Reply) -> Reply {
        if let Some((cmd, argv)) = cmd {
            self.engine.stats.count_rejected(cmd.full_name(argv));
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            if c.multi.is_some() {
                c.multi_error = true;
            }
        }
        err
    }

    /// Run a looked-up, arity-checked command now, and count it in
    /// `INFO commandstats` as `call()` does.
    fn call(&mut self, conn: ConnId, db: usize, cmd: &'static Command, argv: &[Vec<u8>]) -> Reply {
        self.engine.stats.commands_processed += 1;
        self.engine.script_call_error = None;
        let start = self.engine.usec_now();
        let reply = self.run_command(conn, db, cmd, argv);
        let usec = self.engine.usec_now().saturating_sub(start);
        // A script that ends with the error one of its calls answered
        // replies with `ERR_REPLY_FLAG_NO_STATS_UPDATE`: counted once, as
        // the call's. It is still EVAL's failed call (7.0.15 counts it so).
        let counted = self.engine.script_call_error.take();
        let failed = matches!(reply, Reply::Error(_));
        if let Reply::Error(e) = &reply {
            if !counted.is_some_and(|c| e.starts_with(&c)) {
                self.engine.stats.count_error(e);
            }
        }
        self.engine.reply_error_counted = failed;
        self.engine.stats.count_call(cmd.full_name(argv), failed, usec);
        reply
    }

    /// The command's own work (`c->cmd->proc(c)`).
    fn run_command(&mut self, conn: ConnId, db: usize, cmd: &'static Command, argv: &[Vec<u8>]) -> Reply {
        match cmd.handler {
            // DEBUG RELOAD is the one DEBUG subcommand that needs both
            // halves of the node: the data and the function libraries.
            Handler::Plain(_)
                if cmd.name == "debug" && argv.get(1).is_some_and(|s| s.eq_ignore_ascii_case(b"reload")) =>
            {
                let functions_loaded = self.scripting.libraries().next().is_some();
                cmd::server::debug_reload(
                    &mut Ctx {
                        e: &mut self.engine,
                        db,
                    },
                    functions_loaded,
                    argv,
                )
            }
            Handler::Plain(f) => {
                self.engine.prop_db = db;
                let mut cx = Ctx {
                    e: &mut self.engine,
                    db,
                };
                // Written as bytes only for the host itself, not into an
                // EXEC's array of replies.
                cx.e.encoded.open = cx.e.encoded.wanted && !cx.e.in_exec;
                let reply = f(&mut cx, argv);
                cx.e.encoded.open = false;
                // SELECT inside EXEC moves the connection for the commands
                // queued after it (and after the transaction).
                if cx.db != db {
                    let new = cx.db;
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.db = new;
                    }
                }
                reply
            }
            Handler::Script(f) => {
                self.engine.script_db = db;
                self.engine.prop_db = db;
                self.engine.script_slot = self
                    .engine
                    .cluster
                    .as_ref()
                    .and_then(|_| cmd.key_indexes(argv).first().map(|&i| cluster::key_slot(&argv[i])));
                let reply = f(&mut self.scripting, &mut self.engine, argv);
                self.engine.settle_script_time();
                reply
            }
            Handler::Multi => self.multi(conn),
            Handler::Discard => {
                if !self.in_multi(conn) {
                    return Reply::error("ERR DISCARD without MULTI");
                }
                self.discard(conn);
                Reply::ok()
            }
            Handler::Watch => {
                if self.in_multi(conn) {
                    return Reply::error("ERR WATCH inside MULTI is not allowed");
                }
                for key in &argv[1..] {
                    self.watch(conn, db, key);
                }
                Reply::ok()
            }
            Handler::Unwatch => {
                self.unwatch_all(conn);
                self.engine.dirty_cas.remove(&conn);
                Reply::ok()
            }
            Handler::Exec => self.exec(conn),
        }
    }

    /// MULTI (`multiCommand`): start queueing, with a clean error flag.
    fn multi(&mut self, conn: ConnId) -> Reply {
        match self.conns.get_mut(&conn) {
            Some(c) if c.multi.is_some() => Reply::error("ERR MULTI calls can not be nested"),
            Some(c) => {
                c.multi = Some(Vec::new());
                c.multi_error = false;
                c.multi_denyoom = false;
                Reply::ok()
            }
            None => Reply::ok(),
        }
    }

    fn watch(&mut self, conn: ConnId, db: usize, key: &[u8]) {
        let expired = self.engine.dbs[db]
            .get(key)
            .and_then(|e| e.expires_at)
            .is_some_and(|at| at < self.engine.now);
        let Some(c) = self.conns.get_mut(&conn) else { return };
        if c.watched.iter().any(|w| w.db == db && w.key == key) {
            return;
        }
        c.watched.push(Watched { db, key: key.to_vec() });
        self.engine
            .watchers
            .entry((db, key.to_vec()))
            .or_default()
            .insert(conn, expired);
    }

    fn discard(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.multi = None;
            c.multi_error = false;
            c.multi_denyoom = false;
        }
        self.unwatch_all(conn);
        self.engine.dirty_cas.remove(&conn);
    }

    fn exec(&mut self, conn: ConnId) -> Reply {
        let Some(c) = self.conns.get(&conn) else {
            return Reply::error("ERR EXEC without MULTI");
        };
        if c.multi.is_none() {
            return Reply::error("ERR EXEC without MULTI");
        }
        // A watched key that expired since WATCH counts as changed (7.0's
        // isWatchedKeyExpired), unless it was already expired when watched.
        let now = self.engine.now;
        let expired_since_watch = c.watched.iter().any(|w| {
            let expired_at_watch = self
                .engine
                .watchers
                .get(&(w.db, w.key.clone()))
                .and_then(|m| m.get(&conn))
                .copied()
                .unwrap_or(false);
            !expired_at_watch
                && self.engine.dbs[w.db]
                    .get(&w.key)
                    .and_then(|e| e.expires_at)
                    .is_some_and(|at| at < now)
        });
        let aborted = c.multi_error;
        let cas_failed = expired_since_watch || self.engine.dirty_cas.contains(&conn);
        let queue = c.multi.clone().unwrap_or_default();
        self.discard(conn);
        if aborted {
            return Reply::error("EXECABORT Transaction discarded because of previous errors.");
        }
        if cas_failed {
            return Reply::NilArray;
        }
        let mut replies = Vec::with_capacity(queue.len());
        self.engine.in_exec = true;
        for argv in &queue {
            let reply = match table::lookup(argv, self.engine.profile) {
                Ok(cmd) => {
                    let db = self.selected_db(conn);
                    self.call(conn, db, cmd, argv)
                }
                Err(err) => err,
            };
            replies.push(reply);
        }
        self.engine.in_exec = false;
        Reply::Array(replies)
    }
}

/// The command flags `processCommand` reads ([`Node::command_flags`]).
#[derive(Clone, Copy, Debug)]
struct CommandFlags {
    write: bool,
    denyoom: bool,
    stale: bool,
}

/// `shared.noreplicaserr`.
const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
/// `shared.roslaveerr`.
const READONLY: &str = "READONLY You can't write against a read only replica.";
/// `shared.masterdownerr`.
const MASTERDOWN: &str = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

impl Engine {
    /// `!checkGoodReplicasStatus()`: a master with `min-replicas-to-write`
    /// (and a lag bound) has fewer replicas that acknowledged in time.
    fn lacks_good_replicas(&self) -> bool {
        let lag = self.config.number("min-replicas-max-lag");
        let to_write = self.config.number("min-replicas-to-write");
        self.role == Role::Master
            && lag != 0
            && to_write > 0
            && (self.repl.good_count(self.now, lag as u64) as i64) < to_write
    }

    pub(crate) fn profile(&self) -> Profile {
        self.profile
    }

    fn usec_now(&self) -> u64 {
        self.usec_clock.map_or(0, |clock| clock())
    }

    pub(crate) fn now(&self) -> u64 {
        self.now
    }

    /// The next number of the node's seeded generator (xorshift64).
    pub(crate) fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// In cluster mode, where a command's keys say it must go: `CROSSSLOT`
    /// when they span slots, `MOVED` when their slot is another node's.
    fn cluster_redirect(&self, cmd: &Command, argv: &[Vec<u8>]) -> Option<Reply> {
        let cfg = self.cluster.as_ref()?;
        let mut slots = cmd.key_indexes(argv).into_iter().map(|i| cluster::key_slot(&argv[i]));
        let first = slots.next()?;
        if slots.any(|s| s != first) {
            return Some(Reply::error("CROSSSLOT Keys in request don't hash to the same slot"));
        }
        (!cfg.owns(first)).then(|| Reply::error(format!("MOVED {first} {}", cfg.address_of(first))))
    }

    /// `scriptVerifyClusterState`: a key a script touches must be local,
    /// and in the slot the script is bound to.
    fn script_cluster_check(&mut self, cmd: &Command, argv: &[Vec<u8>]) -> Option<Reply> {
        let cfg = self.cluster.as_ref()?;
        let mut slots = cmd.key_indexes(argv).into_iter().map(|i| cluster::key_slot(&argv[i]));
        let first = slots.next()?;
        if slots.any(|s| s != first) || !cfg.owns(first) {
            return Some(Reply::error(
                "ERR Script attempted to access a non local key in a cluster node",
            ));
        }
        match self.script_slot {
            None => {
                self.script_slot = Some(first);
                None
            }
            Some(bound) if bound != first => Some(Reply::error(
                "ERR Script attempted to access keys that do not hash to the same slot",
            )),
            Some(_) => None,
        }
    }

    /// `scriptVerifyWriteCommandAllow`: a read-only replica refuses a
    /// script's writes (`processCommand` refuses a client's, and EXEC runs
    /// what it queued whatever the role has become since).
    fn write_denied(&self, cmd: &Command) -> bool {
        self.role == Role::Replica && self.config.replica_read_only() && cmd.is_write()
    }

    /// The keyspace of database `db`.
    pub(crate) fn db(&self, db: usize) -> &Db {
        &self.dbs[db]
    }

    /// A string APPEND or SETRANGE changed in place is raw from now on.
    pub(crate) fn set_raw(&mut self, db: usize, key: &[u8]) {
        self.dbs[db].set_raw(key);
    }

    /// The node becomes a master: it starts expiring the keys it hid.
    pub(crate) fn promote(&mut self) {
        self.role = Role::Master;
        self.expire_due();
    }

    /// Delete every key whose deadline has passed (master only: a replica
    /// waits for its master's DEL, as redis-server replicas do).
    fn expire_due(&mut self) {
        if self.role != Role::Master || !self.active_expire {
            return;
        }
        for db in 0..self.dbs.len() {
            while let Some((at, key)) = self.dbs[db].first_expired(self.now) {
                self.expire_key(db, &key, at);
            }
        }
        // The active expiry propagates each DEL on its own.
        self.finish_batch_as(false);
    }

    fn expire_key(&mut self, db: usize, key: &[u8], at: u64) {
        self.dbs[db].remove(key);
        self.stats.expired_keys += 1;
        if self.record_events {
            self.events.push(NodeEvent::Expired {
                db: db as u32,
                key: String::from_utf8_lossy(key).into_owned(),
                at_ms: at,
            });
        }
        self.touch(db, key);
        self.propagate_in(db, || vec![b"DEL".to_vec(), key.to_vec()]);
    }

    /// A key is about to be read or written: if its time is up, it is gone
    /// (lazy expiry). On a replica it is only hidden.
    fn expire_if_needed(&mut self, db: usize, key: &[u8]) -> bool {
        let at = match self.dbs[db].get(key).and_then(|e| e.expires_at) {
            Some(at) if at < self.now => at,
            _ => return false,
        };
        if self.role == Role::Master {
            self.expire_key(db, key, at);
        }
        true
    }

    /// `lookupKeyRead`: the entry, counted as a keyspace hit or miss.
    pub(crate) fn lookup_read(&mut self, db: usize, key: &[u8]) -> Option<&db::Entry> {
        let found = self.lookup_write(db, key).is_some();
        if found {
            self.stats.keyspace_hits += 1;
            self.dbs[db].get(key)
        } else {
            self.stats.keyspace_misses += 1;
            None
        }
    }

    /// `lookupKeyWrite`: the entry, after lazy expiry, with no statistics.
    pub(crate) fn lookup_write(&mut self, db: usize, key: &[u8]) -> Option<&db::Entry> {
        if self.expire_if_needed(db, key) {
            return None;
        }
        self.dbs[db].get(key)
    }

    /// Store a value (replacing any TTL with `expires_at`) and signal it.
    pub(crate) fn store(&mut self, db: usize, key: &[u8], mut value: db::Value, expires_at: Option<u64>) {
        // A string over a key without a deadline: one lookup, and nothing
        // to signal ready (only lists and sorted sets are).
        if let (db::Value::Str(s), None) = (&mut value, expires_at) {
            match self.dbs[db].overwrite_with_string(key, std::mem::take(s)) {
                Ok(()) => return self.modified(db, key),
                Err(back) => *s = back,
            }
        }
        self.dbs[db].insert(key, value, expires_at);
        self.changed(db, key);
    }

    /// `lookupKeyWrite` for a change in place: the value after lazy expiry.
    /// Whoever changes it then calls [`Engine::changed`]; a command that
    /// only looks (to type-check) calls nothing.
    pub(crate) fn value_mut(&mut self, db: usize, key: &[u8]) -> Option<&mut db::Value> {
        if self.expire_if_needed(db, key) {
            return None;
        }
        self.dbs[db].value_mut(key)
    }

    /// [`Engine::value_mut`], adding `empty` (no TTL) when the key is
    /// missing, as a push or an add creates its collection (`dbAdd`). The
    /// caller adds to it and calls [`Engine::changed`].
    pub(crate) fn value_mut_or_insert(&mut self, db: usize, key: &[u8], empty: db::Value) -> &mut db::Value {
        self.expire_if_needed(db, key);
        self.dbs[db].value_mut_or_insert(key, empty)
    }

    /// After a write that may have changed nothing: [`Engine::changed`] if
    /// it did; if not, only a collection the command created and left
    /// empty goes, unsignalled (nothing changed).
    pub(crate) fn changed_if(&mut self, db: usize, key: &[u8], did: bool) {
        if did {
            self.changed(db, key);
        } else {
            self.dbs[db].resync(key);
        }
    }

    /// A value was stored or changed in place: count the key's size again,
    /// delete it if it is an emptied collection (every redis-server command
    /// that removes elements does), and signal it (`signalModifiedKey`,
    /// and `signalKeyAsReady` for a list or sorted set, which may serve a blocked
    /// client). The one place every write goes through.
    pub(crate) fn changed(&mut self, db: usize, key: &[u8]) {
        let exists = self.dbs[db].resync(key);
        self.modified(db, key);
        if exists
            && matches!(
                self.dbs[db].get(key).map(|e| &e.value),
                Some(db::Value::List(_) | db::Value::ZSet(_))
            )
        {
            self.signal_ready(db, key);
        }
    }

    /// Remove a key and signal it, handing its entry over (RENAME and MOVE
    /// move the object itself: `dbAdd` of the same `robj`, no copy).
    pub(crate) fn take(&mut self, db: usize, key: &[u8]) -> Option<db::Entry> {
        self.lookup_write(db, key)?;
        let entry = self.dbs[db].remove(key)?;
        self.modified(db, key);
        Some(entry)
    }

    /// Is this node in cluster mode (`server.cluster_enabled`)?
    pub(crate) fn in_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    /// Remove a key if present and signal it; returns whether it existed.
    pub(crate) fn delete(&mut self, db: usize, key: &[u8]) -> bool {
        if self.lookup_write(db, key).is_none() {
            return false;
        }
        self.dbs[db].remove(key);
        self.modified(db, key);
        true
    }

    /// Change a key's deadline and signal it.
    pub(crate) fn set_deadline(&mut self, db: usize, key: &[u8], at: Option<u64>) -> bool {
        let changed = self.dbs[db].set_deadline(key, at);
        if changed {
            self.modified(db, key);
        }
        changed
    }

    /// `signalModifiedKey` + `server.dirty++`.
    pub(crate) fn modified(&mut self, db: usize, key: &[u8]) {
        self.dirty += 1;
        self.touch(db, key);
    }

    /// Fail the EXEC of everyone watching this key (`touchWatchedKey`) —
    /// except where the key had already expired when watched and has now
    /// merely been deleted: logically nothing changed.
    fn touch(&mut self, db: usize, key: &[u8]) {
        script::control::touch_busy_watches(db, key);
        if self.watchers.is_empty() {
            return;
        }
        let gone = self.dbs[db].get(key).is_none();
        if let Some(conns) = self.watchers.get_mut(&(db, key.to_vec())) {
            for (conn, expired_at_watch) in conns.iter_mut() {
                if *expired_at_watch && gone {
                    *expired_at_watch = false;
                    continue;
                }
                self.dirty_cas.insert(*conn);
            }
        }
    }

    /// Empty one database or all of them, failing the watchers of keys
    /// that existed.
    pub(crate) fn flush(&mut self, db: Option<usize>) {
        let targets: Vec<usize> = match db {
            Some(d) => vec![d],
            None => (0..self.dbs.len()).collect(),
        };
        for &d in &targets {
            script::control::flush_busy_watches(d, &|d, key| self.dbs[d].get(key).is_some());
        }
        let watched: Vec<(usize, Vec<u8>)> = self
            .watchers
            .keys()
            .filter(|(d, key)| targets.contains(d) && self.dbs[*d].get(key).is_some())
            .cloned()
            .collect();
        for d in targets {
            self.dirty += self.dbs[d].len() as u64;
            self.dbs[d].clear();
        }
        // touchAllWatchedKeysInDb, once the keys are gone: a key that had
        // already expired when it was watched is deleted with no logical
        // change, so its watchers' EXEC still runs.
        for (d, key) in watched {
            self.touch(d, &key);
        }
    }

    /// The host's [`ScriptFence`] on one `redis.call`: an error reply (and
    /// the breach kept) when the command (`cmd` unknown yet) or one of its
    /// keys (`cmd` known) is outside it.
    fn script_fence_check(&mut self, cmd: Option<&Command>, argv: &[Vec<u8>]) -> Option<Reply> {
        let fence = self.script_fence.as_mut()?;
        let mut why = None;
        if cmd.is_none() {
            why = fence.allow.and_then(|allow| allow(argv).err());
        }
        if let Some(cmd) = cmd {
            if let Some(keys) = &fence.keys {
                why = cmd
                    .key_indexes(argv)
                    .into_iter()
                    .find(|&i| !keys.contains(&argv[i]))
                    .map(|i| {
                        format!(
                            "the script touched the key '{}', which it did not declare in KEYS",
                            String::from_utf8_lossy(&argv[i])
                        )
                    });
            }
        }
        let why = why?;
        let reply = Reply::Error(format!("ERR {why}"));
        fence.breach.get_or_insert(why);
        Some(reply)
    }

    /// Record one write of the running command for the replicas, as
    /// redis-server would send it (`alsoPropagate`).
    pub(crate) fn propagate(&mut self, argv: impl FnOnce() -> Vec<Vec<u8>>) {
        self.propagate_in(self.prop_db, argv);
    }

    /// [`Engine::propagate`] for a write in database `db` (an expiry's or
    /// an eviction's `DEL`, wherever the command runs).
    pub(crate) fn propagate_in(&mut self, db: usize, argv: impl FnOnce() -> Vec<Vec<u8>>) {
        if self.record_propagation || self.repl.active() {
            self.propagating.push((db, argv()));
        }
    }

    /// The end of a command: its writes become one batch
    /// (`propagatePendingCommands`), wrapped in MULTI/EXEC on the stream.
    fn finish_batch(&mut self) {
        self.finish_batch_as(true);
    }

    /// [`Engine::finish_batch`]; `wrap` false sends each write on its own.
    fn finish_batch_as(&mut self, wrap: bool) {
        if self.propagating.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.propagating);
        // shouldPropagate: only a master feeds its replicas — a transaction
        // that ran `REPLICAOF host port` is not streamed at all.
        if self.repl.active() && self.role == Role::Master {
            self.repl.feed(&batch, wrap, &mut self.outbound);
        }
        if self.record_propagation {
            self.propagated.push(batch.into_iter().map(|(_, argv)| argv).collect());
        }
    }

    pub(crate) fn stats(&self) -> &InfoStats {
        &self.stats
    }

    pub(crate) fn role(&self) -> Role {
        self.role
    }

    /// Inside EXEC, where blocking commands answer at once.
    pub(crate) fn in_exec(&self) -> bool {
        self.in_exec
    }

    pub(crate) fn clients(&self) -> usize {
        self.clients
    }

    pub(crate) fn dbs(&self) -> &[Db] {
        &self.dbs
    }

    /// The virtual clock moves forward by a blocking command's duration.
    pub(crate) fn block_for(&mut self, ms: u64) {
        self.stall_ms = self.stall_ms.saturating_add(ms);
        if self.host_clock {
            return;
        }
        if self.script_depth > 0 {
            // A script sees the time it started at until it ends
            // (`scriptTimeSnapshot`): a key cannot expire under it.
            self.script_time_debt = self.script_time_debt.saturating_add(ms);
            return;
        }
        self.now = self.now.saturating_add(ms);
        self.expire_due();
    }

    /// After a script: the time it spent blocked passes now.
    fn settle_script_time(&mut self) {
        let debt = std::mem::take(&mut self.script_time_debt);
        if debt > 0 {
            self.now = self.now.saturating_add(debt);
            self.expire_due();
        }
    }

    /// Run a plain command (no connection state) in database `db`: what
    /// replication and scripts use.
    fn run_plain(&mut self, db: usize, argv: &[Vec<u8>]) -> Reply {
        let Ok(cmd) = table::lookup(argv, self.profile) else {
            return Reply::error("ERR unknown command");
        };
        match cmd.handler {
            Handler::Plain(f) if cmd.arity_ok(argv.len()) => {
                self.prop_db = db;
                f(&mut Ctx { e: self, db }, argv)
            }
            _ => Reply::error("ERR command not replicable"),
        }
    }
}

impl ScriptHost for Engine {
    /// `scriptCall`, and its statistics: an error the command answered, or
    /// the refusal before it ran (`afterErrorReply` and
    /// `incrCommandStatsOnError(cmd, ERROR_COMMAND_REJECTED)`), is counted
    /// here, where redis-server counts it, and remembered so that the
    /// script's ending with it is not counted again.
    fn call(&mut self, argv: &[Vec<u8>]) -> Reply {
        self.script_call_ran = false;
        let reply = self.script_call(argv);
        if let Reply::Error(e) = &reply {
            self.stats.count_error(e);
            self.script_call_error = Some(e.clone());
            if !self.script_call_ran {
                if let Ok(cmd) = table::lookup(argv, self.profile) {
                    self.stats.count_rejected(cmd.full_name(argv));
                }
            }
        }
        reply
    }

    fn rdb_compression(&self) -> bool {
        self.config.rdb_compression()
    }

    /// scriptPrepareForRun's checks in its order: a stale replica (a
    /// script without a shebang gets `MASTERDOWN`, one with flags needs
    /// `allow-stale`); then, for a script that may write, a read-only
    /// replica, a `*_RO` command and too few good replicas; then memory
    /// (a declared `allow-oom` or `no-writes` lets it start over
    /// `maxmemory`, and only `allow-oom` lets its calls through).
    fn begin_script(&mut self, flags: &ScriptFlags, ro: bool) -> Result<(), Reply> {
        let running_stale = self.repl.master.is_some() && !self.config.replica_serve_stale_data();
        if flags.compat {
            if running_stale {
                return Err(Reply::error(MASTERDOWN));
            }
        } else {
            if running_stale && !flags.allow_stale {
                return Err(Reply::error(
                    "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script.",
                ));
            }
            if !flags.no_writes {
                if self.role == Role::Replica && self.config.replica_read_only() {
                    return Err(Reply::error(
                        "READONLY Can not run script with write flag on readonly replica",
                    ));
                }
                flags.check_ro(ro).map_err(Reply::error)?;
                if self.lacks_good_replicas() {
                    return Err(Reply::error(NOREPLICAS));
                }
            }
            if flags.deny_oom() && self.pre_command_oom && self.config.maxmemory() != 0 {
                return Err(Reply::error(
                    "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'",
                ));
            }
        }
        self.script_allow_oom = flags.allow_oom_run();
        self.script_write_dirty = false;
        Ok(())
    }
}

impl Engine {
    /// `scriptCall`: what `redis.call` may run, with 7.0's error texts.
    fn script_call(&mut self, argv: &[Vec<u8>]) -> Reply {
        // The host's fence first: it may refuse what this simulator lacks.
        if let Some(err) = self.script_fence_check(None, argv) {
            return err;
        }
        let Ok(cmd) = table::lookup(argv, self.profile) else {
            self.unknown_script_calls += 1;
            return Reply::error("ERR Unknown Redis command called from script");
        };
        if !cmd.arity_ok(argv.len()) {
            return Reply::error("ERR Wrong number of args calling Redis command from script");
        }
        if !cmd.allowed_in_scripts() && !self.script_deny_disabled {
            return Reply::error("ERR This Redis command is not allowed from script");
        }
        // scriptVerifyAllowStale.
        if self.repl.master.is_some() && !self.config.replica_serve_stale_data() && !cmd.is_stale(argv) {
            return Reply::error("ERR Can not execute the command on a stale replica");
        }
        if self.write_denied(cmd) {
            return Reply::error(READONLY);
        }
        // scriptVerifyWriteCommandAllow.
        if cmd.is_write() && self.lacks_good_replicas() {
            return Reply::error(NOREPLICAS);
        }
        // scriptVerifyOOM: only before the script's first write.
        if self.config.maxmemory() != 0
            && !self.script_allow_oom
            && !self.script_write_dirty
            && self.pre_command_oom
            && cmd.is_denyoom(argv)
        {
            return Reply::error(memory::OOM);
        }
        if cmd.is_write() {
            self.script_write_dirty = true;
        }
        if let Some(err) = self.script_cluster_check(cmd, argv) {
            return err;
        }
        if let Some(err) = self.script_fence_check(Some(cmd), argv) {
            return err;
        }
        let Handler::Plain(f) = cmd.handler else {
            return Reply::error("ERR This Redis command is not allowed from script");
        };
        self.stats.commands_processed += 1;
        self.script_call_ran = true;
        self.script_depth += 1;
        let db = self.script_db;
        self.prop_db = db;
        let start = self.usec_now();
        let mut cx = Ctx { e: self, db };
        let reply = f(&mut cx, argv);
        // A script's SELECT holds for the rest of the script only.
        let db = cx.db;
        self.script_db = db;
        self.script_depth -= 1;
        let usec = self.usec_now().saturating_sub(start);
        self.stats
            .count_call(cmd.full_name(argv), matches!(reply, Reply::Error(_)), usec);
        reply
    }
}
