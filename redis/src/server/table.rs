//! The command table: every command the node knows, with redis-server 7.0's
//! arity, flags and key positions.
//!
//! Arity follows Redis's convention: a positive number is the exact argv
//! length (command name included), a negative one a minimum (`-3` = "at
//! least 3"). Key positions (first, last, step; last < 0 counts from the end)
//! are what lets a proxy rewrite keys into a per-session prefix without
//! understanding each command — the same information `COMMAND INFO` gives.

use super::cmd;
use super::lab::{why, Cost, Lab};
use super::Profile;
use super::{Ctx, ScriptHost};
use crate::reply::Reply;
use crate::server::script::Scripting;

/// How a command is carried out.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    /// Only needs the data: runs the same way from a client, a transaction,
    /// a script or the replication stream.
    Plain(fn(&mut Ctx<'_>, &[Vec<u8>]) -> Reply),
    /// Needs the Lua VM as well as the data.
    Script(fn(&mut Scripting, &mut dyn ScriptHost, &[Vec<u8>]) -> Reply),
    /// Connection-state commands, handled by the node itself.
    Multi,
    Exec,
    Discard,
    Watch,
    Unwatch,
}

/// Where a command's keys are in its argv.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// No keys.
    None,
    /// `first..=last` by `step`; `last` negative counts from the end (-1 is
    /// the last argument).
    Range { first: usize, last: isize, step: usize },
    /// EVAL-style: `argv[at]` says how many keys follow it.
    NumKeys { at: usize },
    /// A destination at `argv[1]`, then `argv[at]` says how many keys
    /// follow it (ZUNIONSTORE's key specs: the destination, then a keynum).
    DestNumKeys { at: usize },
}

/// Command flags that matter to the simulator.
pub mod flags {
    /// Modifies data: refused on a replica, propagated.
    pub const WRITE: u32 = 1;
    /// Not callable from a Lua script.
    pub const NOSCRIPT: u32 = 2;
    /// Only available from profile 8.4 on.
    pub const V8_4: u32 = 4;
    /// Reads data.
    pub const READONLY: u32 = 8;
    /// Dangerous or administrative: what a lab proxy refuses by default.
    pub const DANGEROUS: u32 = 16;
    /// May block the client (BLPOP …): never blocks inside MULTI.
    pub const BLOCKING: u32 = 32;
    /// Publish/subscribe.
    pub const PUBSUB: u32 = 64;
    /// May grow memory (`CMD_DENYOOM`): refused while over `maxmemory`.
    pub const DENYOOM: u32 = 128;
}

/// One row of the table.
pub struct Command {
    /// Lower-case name, as redis-server's `fullname`.
    pub name: &'static str,
    pub arity: i32,
    pub flags: u32,
    pub keys: Keys,
    /// Subcommands of a container command (SCRIPT, FUNCTION, …): the names
    /// lookup accepts, each with its arity in 7.0.15's table (checked before
    /// running, as `commandCheckArity` does with the subcommand's entry).
    pub subcommands: &'static [(&'static str, i32)],
    pub(crate) handler: Handler,
    /// What the lab's real driver may send of it to a server it does not
    /// own, and what its arguments may cost ([`lab`](super::lab)).
    pub lab: Lab,
}

impl Command {
    pub fn arity_ok(&self, argc: usize) -> bool {
        arity_fits(self.arity, argc)
    }

    /// The arity of `argv`'s subcommand, if this is a container and it
    /// has that subcommand.
    pub fn subcommand_arity(&self, argv: &[Vec<u8>]) -> Option<i32> {
        let sub = argv.get(1)?;
        self.subcommands
            .iter()
            .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(sub))
            .map(|&(_, arity)| arity)
    }

    pub fn is_write(&self) -> bool {
        self.flags & flags::WRITE != 0
    }

    /// `CMD_DENYOOM`; FUNCTION's LOAD and RESTORE are deny-oom subcommands.
    pub fn is_denyoom(&self, argv: &[Vec<u8>]) -> bool {
        self.flags & flags::DENYOOM != 0
            || (self.name == "function"
                && argv
                    .get(1)
                    .is_some_and(|s| s.eq_ignore_ascii_case(b"load") || s.eq_ignore_ascii_case(b"restore")))
    }

    pub fn allowed_in_scripts(&self) -> bool {
        self.flags & flags::NOSCRIPT == 0
    }

    /// The name an error message uses: `get`, or `script|load` for a
    /// subcommand of a container.
    pub fn full_name(&self, argv: &[Vec<u8>]) -> String {
        match argv.get(1) {
            Some(sub) if !self.subcommands.is_empty() => {
                format!("{}|{}", self.name, String::from_utf8_lossy(sub).to_lowercase())
            }
            _ => self.name.to_owned(),
        }
    }

    /// The indexes of the keys in `argv`.
    pub fn key_indexes(&self, argv: &[Vec<u8>]) -> Vec<usize> {
        self.keys.indexes(argv)
    }
}

impl Keys {
    /// The indexes of the keys in `argv`.
    pub fn indexes(self, argv: &[Vec<u8>]) -> Vec<usize> {
        match self {
            Keys::None => Vec::new(),
            Keys::Range { first, last, step } => {
                let last = if last < 0 { argv.len() as isize + last } else { last };
                if last < first as isize {
                    return Vec::new();
                }
                (first..=last as usize)
                    .step_by(step.max(1))
                    .filter(|&i| i < argv.len())
                    .collect()
            }
            Keys::DestNumKeys { at } => {
                let mut keys = Keys::NumKeys { at }.indexes(argv);
                if argv.len() > 1 {
                    keys.insert(0, 1);
                }
                keys
            }
            Keys::NumKeys { at } => {
                let n = argv
                    .get(at)
                    .and_then(|a| std::str::from_utf8(a).ok())
                    .and_then(|s| s.parse::<usize>().ok())
                    .unwrap_or(0);
                // Clamped to argv before iterating: a typed count such as
                // 9223372036854775807 must cost what argv holds, not n steps
                // (a lab session's `EVAL "…" <huge>` spun the backend).
                let end = (at + 1).saturating_add(n).min(argv.len());
                (at + 1..end).collect()
            }
        }
    }
}

const fn range(first: usize, last: isize, step: usize) -> Keys {
    Keys::Range { first, last, step }
}

use flags::*;

macro_rules! commands {
    ($( $name:literal, $arity:expr, $flags:expr, $keys:expr, $subs:expr, $handler:expr, $lab:expr; )*) => {
        /// Every command, sorted by name for binary search.
        pub static COMMANDS: &[Command] = &[
            $( Command { name: $name, arity: $arity, flags: $flags, keys: $keys, subcommands: $subs, handler: $handler, lab: $lab }, )*
        ];
    };
}

const NONE: &[(&str, i32)] = &[];
/// The lab's rule of most rows: allowed, nothing in it sized by an argument.
const OK: Lab = Lab::Allow(&[]);
/// The lab's rule of a write that adds its arguments to its key.
const ADDS: Lab = Lab::Allow(&[Cost::Adds]);
/// The lab's rule of a write that makes its key a number.
const NUMBER: Lab = Lab::Allow(&[Cost::Number]);
/// The largest count a lab session may ask for (`HRANDFIELD`, `SPOP`,
/// `ZPOPMIN`, `SCAN … COUNT`, an `LRANGE`/`ZRANGE` span): a console shows no more, and a negative
/// `HRANDFIELD` count is not bounded by the hash.
pub const MAX_COUNT: u64 = 1000;
/// The largest `SETRANGE` offset a lab session may write at (1 MiB).
pub const MAX_OFFSET: u64 = 1 << 20;
const ONE: Keys = range(1, 1, 1);
const ALL: Keys = range(1, -1, 1);
/// Source and destination (RENAME, COPY, LMOVE …).
const TWO: Keys = range(1, 2, 1);

commands! {
    "append", 3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::append), Lab::Allow(&[Cost::Appends]);
    "blmove", 6, WRITE | NOSCRIPT | BLOCKING | DENYOOM, TWO, NONE, Handler::Plain(cmd::lists::blmove), Lab::Allow(&[Cost::Moves]);
    "blmpop", -5, WRITE | BLOCKING, Keys::NumKeys { at: 2 }, NONE, Handler::Plain(cmd::listops::blmpop), OK;
    "blpop", -3, WRITE | NOSCRIPT | BLOCKING, range(1, -2, 1), NONE, Handler::Plain(cmd::lists::blpop), OK;
    "brpop", -3, WRITE | NOSCRIPT | BLOCKING, range(1, -2, 1), NONE, Handler::Plain(cmd::lists::brpop), OK;
    "brpoplpush", 4, WRITE | NOSCRIPT | BLOCKING | DENYOOM, TWO, NONE, Handler::Plain(cmd::lists::brpoplpush), Lab::Allow(&[Cost::Moves]);
    "bzmpop", -5, WRITE | BLOCKING, Keys::NumKeys { at: 2 }, NONE, Handler::Plain(cmd::bzpop::bzmpop), OK;
    "bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING, range(1, -2, 1), NONE, Handler::Plain(cmd::bzpop::bzpopmax), OK;
    "bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING, range(1, -2, 1), NONE, Handler::Plain(cmd::bzpop::bzpopmin), OK;
    "config", -2, NOSCRIPT | DANGEROUS, Keys::None, &[("get", -3), ("help", 2), ("resetstat", 2), ("rewrite", 2), ("set", -4)], Handler::Plain(cmd::server::config), Lab::Deny(why::DANGEROUS);
    "copy", -3, WRITE | DENYOOM, TWO, NONE, Handler::Plain(cmd::keys::copy), Lab::Deny(why::COPY);
    "dbsize", 1, READONLY, Keys::None, NONE, Handler::Plain(cmd::keys::dbsize), Lab::Deny(why::COUNTS);
    "debug", -2, NOSCRIPT | DANGEROUS, Keys::None, NONE, Handler::Plain(cmd::server::debug), Lab::Deny(why::DANGEROUS);
    "decr", 2, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::decr), NUMBER;
    "decrby", 3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::decrby), NUMBER;
    "del", -2, WRITE, ALL, NONE, Handler::Plain(cmd::keys::del), OK;
    "delex", -2, WRITE | V8_4, ONE, NONE, Handler::Plain(cmd::delex::delex), OK;
    "digest", 2, READONLY | V8_4, ONE, NONE, Handler::Plain(cmd::delex::digest), OK;
    "discard", 1, NOSCRIPT, Keys::None, NONE, Handler::Discard, OK;
    "dump", 2, READONLY, ONE, NONE, Handler::Plain(cmd::dump::dump), OK;
    "echo", 2, 0, Keys::None, NONE, Handler::Plain(cmd::server::echo), OK;
    "eval", -3, NOSCRIPT, Keys::NumKeys { at: 2 }, NONE, Handler::Script(cmd::scripting::eval), Lab::Allow(&[Cost::Script { at: 1 }]);
    "eval_ro", -3, NOSCRIPT | READONLY, Keys::NumKeys { at: 2 }, NONE, Handler::Script(cmd::scripting::eval), Lab::Allow(&[Cost::Script { at: 1 }]);
    "evalsha", -3, NOSCRIPT, Keys::NumKeys { at: 2 }, NONE, Handler::Script(cmd::scripting::evalsha), OK;
    "evalsha_ro", -3, NOSCRIPT | READONLY, Keys::NumKeys { at: 2 }, NONE, Handler::Script(cmd::scripting::evalsha), OK;
    "exec", 1, NOSCRIPT, Keys::None, NONE, Handler::Exec, OK;
    "exists", -2, READONLY, ALL, NONE, Handler::Plain(cmd::keys::exists), OK;
    "expire", -3, WRITE, ONE, NONE, Handler::Plain(cmd::keys::expire), OK;
    "expireat", -3, WRITE, ONE, NONE, Handler::Plain(cmd::keys::expireat), OK;
    "expiretime", 2, READONLY, ONE, NONE, Handler::Plain(cmd::keys::expiretime), OK;
    "fcall", -3, NOSCRIPT, Keys::NumKeys { at: 2 }, NONE, Handler::Script(cmd::scripting::fcall), OK;
    "fcall_ro", -3, NOSCRIPT | READONLY, Keys::NumKeys { at: 2 }, NONE, Handler::Script(cmd::scripting::fcall), OK;
    "flushall", -1, WRITE | DANGEROUS, Keys::None, NONE, Handler::Plain(cmd::keys::flushall), Lab::Deny(why::DANGEROUS);
    "function", -2, NOSCRIPT, Keys::None, &[("delete", 3), ("dump", 2), ("flush", -2), ("help", 2), ("kill", 2), ("list", -2), ("load", -3), ("restore", -3), ("stats", 2)], Handler::Script(cmd::scripting::function), Lab::Subs(&[("delete", &[]), ("help", &[]), ("list", &[]), ("load", &[Cost::Library])]);
    "get", 2, READONLY, ONE, NONE, Handler::Plain(cmd::strings::get), OK;
    "getdel", 2, WRITE, ONE, NONE, Handler::Plain(cmd::strings::getdel), OK;
    "getex", -2, WRITE, ONE, NONE, Handler::Plain(cmd::strings::getex), OK;
    "getrange", 4, READONLY, ONE, NONE, Handler::Plain(cmd::strings::getrange), OK;
    "getset", 3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::getset), Lab::Allow(&[Cost::Replaces { value: 2 }]);
    "hdel", -3, WRITE, ONE, NONE, Handler::Plain(cmd::hashes::hdel), OK;
    "hexists", 3, READONLY, ONE, NONE, Handler::Plain(cmd::hashes::hexists), OK;
    "hget", 3, READONLY, ONE, NONE, Handler::Plain(cmd::hashes::hget), OK;
    "hgetall", 2, READONLY, ONE, NONE, Handler::Plain(cmd::hashes::hgetall), OK;
    "hincrby", 4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::hashes::hincrby), ADDS;
    "hincrbyfloat", 4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::hashes::hincrbyfloat), ADDS;
    "hkeys", 2, READONLY, ONE, NONE, Handler::Plain(cmd::hashes::hkeys), OK;
    "hlen", 2, READONLY, ONE, NONE, Handler::Plain(cmd::hashes::hlen), OK;
    "hmget", -3, READONLY, ONE, NONE, Handler::Plain(cmd::hashes::hmget), OK;
    "hmset", -4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::hashes::hmset), ADDS;
    "hrandfield", -2, READONLY, ONE, NONE, Handler::Plain(cmd::hashes::hrandfield), Lab::Allow(&[Cost::Count { at: 2, max: MAX_COUNT }]);
    "hset", -4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::hashes::hset), ADDS;
    "hsetnx", 4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::hashes::hsetnx), ADDS;
    "hstrlen", 3, READONLY, ONE, NONE, Handler::Plain(cmd::hashes::hstrlen), OK;
    "hvals", 2, READONLY, ONE, NONE, Handler::Plain(cmd::hashes::hvals), OK;
    "incr", 2, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::incr), NUMBER;
    "incrby", 3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::incrby), NUMBER;
    "incrbyfloat", 3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::incrbyfloat), NUMBER;
    "info", -1, 0, Keys::None, NONE, Handler::Plain(cmd::server::info), OK;
    "keys", 2, READONLY | DANGEROUS, Keys::None, NONE, Handler::Plain(cmd::keys::keys), Lab::Deny(why::DANGEROUS);
    "lindex", 3, READONLY, ONE, NONE, Handler::Plain(cmd::lists::lindex), OK;
    "linsert", 5, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::listops::linsert), ADDS;
    "llen", 2, READONLY, ONE, NONE, Handler::Plain(cmd::lists::llen), OK;
    "lmove", 5, WRITE | DENYOOM, TWO, NONE, Handler::Plain(cmd::lists::lmove), Lab::Allow(&[Cost::Moves]);
    "lmpop", -4, WRITE, Keys::NumKeys { at: 1 }, NONE, Handler::Plain(cmd::listops::lmpop), OK;
    "lpop", -2, WRITE, ONE, NONE, Handler::Plain(cmd::lists::lpop), OK;
    "lpos", -3, READONLY, ONE, NONE, Handler::Plain(cmd::listops::lpos), OK;
    "lpush", -3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::lists::lpush), ADDS;
    "lpushx", -3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::lists::lpushx), ADDS;
    "lrange", 4, READONLY, ONE, NONE, Handler::Plain(cmd::lists::lrange), Lab::Allow(&[Cost::Span { at: 2, max: MAX_COUNT }]);
    "lrem", 4, WRITE, ONE, NONE, Handler::Plain(cmd::lists::lrem), OK;
    "lset", 4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::listops::lset), ADDS;
    "ltrim", 4, WRITE, ONE, NONE, Handler::Plain(cmd::listops::ltrim), OK;
    "memory", -2, READONLY, range(2, 2, 1), &[("usage", -3)], Handler::Plain(cmd::keys::memory), Lab::Deny(why::MEMORY);
    "mget", -2, READONLY, ALL, NONE, Handler::Plain(cmd::strings::mget), OK;
    "move", 3, WRITE, ONE, NONE, Handler::Plain(cmd::keys::move_), Lab::Deny(why::MOVE);
    "mset", -3, WRITE | DENYOOM, range(1, -1, 2), NONE, Handler::Plain(cmd::strings::mset), Lab::Allow(&[Cost::Pairs]);
    "msetnx", -3, WRITE | DENYOOM, range(1, -1, 2), NONE, Handler::Plain(cmd::strings::msetnx), Lab::Allow(&[Cost::Pairs]);
    "multi", 1, NOSCRIPT, Keys::None, NONE, Handler::Multi, OK;
    "object", -2, READONLY, range(2, 2, 1), &[("encoding", 3), ("freq", 3), ("help", 2), ("refcount", 3)], Handler::Plain(cmd::keys::object), Lab::Subs(&[("encoding", &[])]);
    "persist", 2, WRITE, ONE, NONE, Handler::Plain(cmd::keys::persist), OK;
    "pexpire", -3, WRITE, ONE, NONE, Handler::Plain(cmd::keys::pexpire), OK;
    "pexpireat", -3, WRITE, ONE, NONE, Handler::Plain(cmd::keys::pexpireat), OK;
    "pexpiretime", 2, READONLY, ONE, NONE, Handler::Plain(cmd::keys::pexpiretime), OK;
    "ping", -1, 0, Keys::None, NONE, Handler::Plain(cmd::server::ping), OK;
    "psetex", 4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::psetex), Lab::Allow(&[Cost::Replaces { value: 3 }]);
    "psubscribe", -2, NOSCRIPT | PUBSUB, Keys::None, NONE, Handler::Plain(cmd::pubsub::psubscribe), OK;
    // A replica's full resynchronisation, then the stream (`repl`).
    "psync", -3, NOSCRIPT | DANGEROUS, Keys::None, NONE, Handler::Plain(super::repl::sync), Lab::Deny(why::DANGEROUS);
    "pttl", 2, READONLY, ONE, NONE, Handler::Plain(cmd::keys::pttl), OK;
    "publish", 3, PUBSUB, Keys::None, NONE, Handler::Plain(cmd::pubsub::publish), OK;
    "pubsub", -2, PUBSUB, Keys::None, &[("channels", -2), ("help", 2), ("numpat", 2), ("numsub", -2), ("shardchannels", -2), ("shardnumsub", -2)], Handler::Plain(cmd::pubsub::pubsub), Lab::Deny(why::PUBSUB);
    "punsubscribe", -1, NOSCRIPT | PUBSUB, Keys::None, NONE, Handler::Plain(cmd::pubsub::punsubscribe), OK;
    "randomkey", 1, READONLY, Keys::None, NONE, Handler::Plain(cmd::keys::randomkey), Lab::Deny(why::OUTSIDE);
    "rename", 3, WRITE, TWO, NONE, Handler::Plain(cmd::keys::rename), Lab::Allow(&[Cost::Renames]);
    "renamenx", 3, WRITE, TWO, NONE, Handler::Plain(cmd::keys::renamenx), Lab::Allow(&[Cost::Renames]);
    // A replica of a master it never reaches (`repl::replicaof`).
    "replicaof", 3, NOSCRIPT | DANGEROUS, Keys::None, NONE, Handler::Plain(super::repl::replicaof), Lab::Deny(why::DANGEROUS);
    "restore", -4, WRITE | DENYOOM | DANGEROUS, ONE, NONE, Handler::Plain(cmd::dump::restore), Lab::Deny(why::DANGEROUS);
    "rpop", -2, WRITE, ONE, NONE, Handler::Plain(cmd::lists::rpop), OK;
    "rpoplpush", 3, WRITE | DENYOOM, TWO, NONE, Handler::Plain(cmd::lists::rpoplpush), Lab::Allow(&[Cost::Moves]);
    "rpush", -3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::lists::rpush), ADDS;
    "rpushx", -3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::lists::rpushx), ADDS;
    "sadd", -3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::sets::sadd), ADDS;
    "scan", -2, READONLY, Keys::None, NONE, Handler::Plain(cmd::keys::scan), Lab::Admin(&[Cost::OptionCount { word: "count", max: MAX_COUNT }]);
    "scard", 2, READONLY, ONE, NONE, Handler::Plain(cmd::sets::scard), OK;
    "script", -2, NOSCRIPT, Keys::None, &[("debug", 3), ("exists", -3), ("flush", -2), ("help", 2), ("kill", 2), ("load", 3)], Handler::Script(cmd::scripting::script), Lab::Subs(&[("exists", &[]), ("flush", &[]), ("help", &[]), ("load", &[Cost::Script { at: 2 }])]);
    "sdiff", -2, READONLY, ALL, NONE, Handler::Plain(cmd::setops::sdiff), OK;
    "sdiffstore", -3, WRITE | DENYOOM, ALL, NONE, Handler::Plain(cmd::setops::sdiffstore), Lab::Deny(why::SET_STORE);
    // A client's SELECT is the host's; the node's runs inside EXEC and from scripts.
    "select", 2, 0, Keys::None, NONE, Handler::Plain(cmd::select::select), Lab::Deny(why::SELECT);
    "set", -3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::set), Lab::Allow(&[Cost::Replaces { value: 2 }]);
    "setex", 4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::setex), Lab::Allow(&[Cost::Replaces { value: 3 }]);
    "setnx", 3, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::setnx), Lab::Allow(&[Cost::Replaces { value: 2 }]);
    "setrange", 4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::strings::setrange), Lab::Allow(&[Cost::Offset { at: 2, max: MAX_OFFSET }]);
    "sinter", -2, READONLY, ALL, NONE, Handler::Plain(cmd::setops::sinter), OK;
    "sintercard", -3, READONLY, Keys::NumKeys { at: 1 }, NONE, Handler::Plain(cmd::setops::sintercard), OK;
    "sinterstore", -3, WRITE | DENYOOM, ALL, NONE, Handler::Plain(cmd::setops::sinterstore), Lab::Deny(why::SET_STORE);
    "sismember", 3, READONLY, ONE, NONE, Handler::Plain(cmd::sets::sismember), OK;
    "slaveof", 3, NOSCRIPT | DANGEROUS, Keys::None, NONE, Handler::Plain(super::repl::replicaof), Lab::Deny(why::DANGEROUS);
    "smembers", 2, READONLY, ONE, NONE, Handler::Plain(cmd::sets::smembers), OK;
    "smismember", -3, READONLY, ONE, NONE, Handler::Plain(cmd::setops::smismember), OK;
    "smove", 4, WRITE, TWO, NONE, Handler::Plain(cmd::setops::smove), OK;
    "sort", -2, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::sort::sort), Lab::Deny(why::SORT);
    "sort_ro", -2, READONLY, ONE, NONE, Handler::Plain(cmd::sort::sort_ro), Lab::Deny(why::SORT);
    "spop", -2, WRITE, ONE, NONE, Handler::Plain(cmd::sets::spop), Lab::Allow(&[Cost::Count { at: 2, max: MAX_COUNT }]);
    "srandmember", -2, READONLY, ONE, NONE, Handler::Plain(cmd::setops::srandmember), Lab::Allow(&[Cost::Count { at: 2, max: MAX_COUNT }]);
    "srem", -3, WRITE, ONE, NONE, Handler::Plain(cmd::sets::srem), OK;
    "strlen", 2, READONLY, ONE, NONE, Handler::Plain(cmd::strings::strlen), OK;
    "subscribe", -2, NOSCRIPT | PUBSUB, Keys::None, NONE, Handler::Plain(cmd::pubsub::subscribe), OK;
    // 7.0 keeps SUBSTR as GETRANGE under its old name (getrangeCommand).
    "substr", 4, READONLY, ONE, NONE, Handler::Plain(cmd::strings::getrange), OK;
    "sunion", -2, READONLY, ALL, NONE, Handler::Plain(cmd::setops::sunion), OK;
    "sunionstore", -3, WRITE | DENYOOM, ALL, NONE, Handler::Plain(cmd::setops::sunionstore), Lab::Deny(why::SET_STORE);
    "sync", 1, NOSCRIPT | DANGEROUS, Keys::None, NONE, Handler::Plain(super::repl::sync), Lab::Deny(why::DANGEROUS);
    "time", 1, 0, Keys::None, NONE, Handler::Plain(cmd::server::time), OK;
    "touch", -2, READONLY, ALL, NONE, Handler::Plain(cmd::keys::touch), OK;
    "ttl", 2, READONLY, ONE, NONE, Handler::Plain(cmd::keys::ttl), OK;
    "type", 2, READONLY, ONE, NONE, Handler::Plain(cmd::keys::type_), OK;
    "unlink", -2, WRITE, ALL, NONE, Handler::Plain(cmd::keys::unlink), OK;
    "unsubscribe", -1, NOSCRIPT | PUBSUB, Keys::None, NONE, Handler::Plain(cmd::pubsub::unsubscribe), OK;
    "unwatch", 1, NOSCRIPT, Keys::None, NONE, Handler::Unwatch, OK;
    "wait", 3, NOSCRIPT, Keys::None, NONE, Handler::Plain(cmd::server::wait), OK;
    "watch", -2, NOSCRIPT, ALL, NONE, Handler::Watch, OK;
    "zadd", -4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::zsets::zadd), ADDS;
    "zcard", 2, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zcard), OK;
    "zcount", 4, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zcount), OK;
    "zdiff", -3, READONLY, Keys::NumKeys { at: 1 }, NONE, Handler::Plain(cmd::zsetops::zdiff), OK;
    "zdiffstore", -4, WRITE | DENYOOM, Keys::DestNumKeys { at: 2 }, NONE, Handler::Plain(cmd::zsetops::zdiffstore), Lab::Deny(why::ZSET_STORE);
    "zincrby", 4, WRITE | DENYOOM, ONE, NONE, Handler::Plain(cmd::zsets::zincrby), ADDS;
    "zinter", -3, READONLY, Keys::NumKeys { at: 1 }, NONE, Handler::Plain(cmd::zsetops::zinter), OK;
    "zintercard", -3, READONLY, Keys::NumKeys { at: 1 }, NONE, Handler::Plain(cmd::zsetops::zintercard), OK;
    "zinterstore", -4, WRITE | DENYOOM, Keys::DestNumKeys { at: 2 }, NONE, Handler::Plain(cmd::zsetops::zinterstore), Lab::Deny(why::ZSET_STORE);
    "zlexcount", 4, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zlexcount), OK;
    "zmpop", -4, WRITE, Keys::NumKeys { at: 1 }, NONE, Handler::Plain(cmd::bzpop::zmpop), OK;
    "zmscore", -3, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zmscore), OK;
    "zpopmax", -2, WRITE, ONE, NONE, Handler::Plain(cmd::zsets::zpopmax), Lab::Allow(&[Cost::Count { at: 2, max: MAX_COUNT }]);
    "zpopmin", -2, WRITE, ONE, NONE, Handler::Plain(cmd::zsets::zpopmin), Lab::Allow(&[Cost::Count { at: 2, max: MAX_COUNT }]);
    "zrandmember", -2, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zrandmember), Lab::Allow(&[Cost::Count { at: 2, max: MAX_COUNT }]);
    "zrange", -4, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zrange), Lab::Allow(&[Cost::Span { at: 2, max: MAX_COUNT }]);
    "zrangebylex", -4, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zrangebylex), OK;
    "zrangebyscore", -4, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zrangebyscore), OK;
    "zrangestore", -5, WRITE | DENYOOM, TWO, NONE, Handler::Plain(cmd::zsets::zrangestore), Lab::Deny(why::ZSET_STORE);
    "zrank", 3, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zrank), OK;
    "zrem", -3, WRITE, ONE, NONE, Handler::Plain(cmd::zsets::zrem), OK;
    "zremrangebylex", 4, WRITE, ONE, NONE, Handler::Plain(cmd::zsets::zremrangebylex), OK;
    "zremrangebyrank", 4, WRITE, ONE, NONE, Handler::Plain(cmd::zsets::zremrangebyrank), OK;
    "zremrangebyscore", 4, WRITE, ONE, NONE, Handler::Plain(cmd::zsets::zremrangebyscore), OK;
    "zrevrange", -4, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zrevrange), Lab::Allow(&[Cost::Span { at: 2, max: MAX_COUNT }]);
    "zrevrangebylex", -4, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zrevrangebylex), OK;
    "zrevrangebyscore", -4, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zrevrangebyscore), OK;
    "zrevrank", 3, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zrevrank), OK;
    "zscore", 3, READONLY, ONE, NONE, Handler::Plain(cmd::zsets::zscore), OK;
    "zunion", -3, READONLY, Keys::NumKeys { at: 1 }, NONE, Handler::Plain(cmd::zsetops::zunion), OK;
    "zunionstore", -4, WRITE | DENYOOM, Keys::DestNumKeys { at: 2 }, NONE, Handler::Plain(cmd::zsetops::zunionstore), Lab::Deny(why::ZSET_STORE);
}

/// Slots of [`find`]'s hash index: a power of two, at least four times the
/// table's rows, so a lookup nearly always probes one slot.
const INDEX_SLOTS: usize = 2048;
/// An empty slot of the index.
const NO_COMMAND: u16 = u16::MAX;

/// FNV-1a of the name in lower case: every request's command is looked up
/// by it, so it is hashed without a lower-case copy (redis-server's
/// command dict hashes case-insensitively too, `dictSdsCaseHash`).
fn name_hash(name: &[u8]) -> usize {
    let mut h: u32 = 0x811c_9dc5;
    for &b in name {
        h = (h ^ u32::from(b.to_ascii_lowercase())).wrapping_mul(0x0100_0193);
    }
    h as usize
}

/// The index of [`COMMANDS`] by [`name_hash`], with linear probing; built
/// on first use.
fn index() -> &'static [u16; INDEX_SLOTS] {
    static INDEX: std::sync::OnceLock<Box<[u16; INDEX_SLOTS]>> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        assert!(COMMANDS.len() * 4 <= INDEX_SLOTS, "grow INDEX_SLOTS");
        let mut slots = Box::new([NO_COMMAND; INDEX_SLOTS]);
        for (i, cmd) in COMMANDS.iter().enumerate() {
            let mut at = name_hash(cmd.name.as_bytes()) % INDEX_SLOTS;
            while slots[at] != NO_COMMAND {
                at = (at + 1) % INDEX_SLOTS;
            }
            slots[at] = i as u16;
        }
        slots
    })
}

/// The commands and subcommands with `CMD_STALE` in 7.0.15's table (the
/// `"STALE"` flag of `src/commands/*.json`), sorted: what a replica whose
/// link is down still serves with `replica-serve-stale-data no`.
#[rustfmt::skip]
const STALE: &[&str] = &[
    "acl|cat", "acl|deluser", "acl|dryrun", "acl|genpass", "acl|getuser", "acl|help", "acl|list", "acl|load",
    "acl|log", "acl|save", "acl|setuser", "acl|users", "acl|whoami", "auth", "client|caching", "client|getname",
    "client|getredir", "client|help", "client|id", "client|info", "client|kill", "client|list", "client|no-evict",
    "client|pause", "client|reply", "client|setname", "client|tracking", "client|trackinginfo", "client|unblock",
    "client|unpause", "cluster|addslots", "cluster|addslotsrange", "cluster|bumpepoch",
    "cluster|count-failure-reports", "cluster|countkeysinslot", "cluster|delslots", "cluster|delslotsrange",
    "cluster|failover", "cluster|flushslots", "cluster|forget", "cluster|getkeysinslot", "cluster|help",
    "cluster|info", "cluster|keyslot", "cluster|links", "cluster|meet", "cluster|myid", "cluster|nodes",
    "cluster|replicas", "cluster|replicate", "cluster|reset", "cluster|saveconfig", "cluster|set-config-epoch",
    "cluster|setslot", "cluster|shards", "cluster|slaves", "cluster|slots", "command", "command|count",
    "command|docs", "command|getkeys", "command|getkeysandflags", "command|help", "command|info", "command|list",
    "config|get", "config|help", "config|resetstat", "config|rewrite", "config|set", "debug", "discard", "echo",
    "eval", "eval_ro", "evalsha", "evalsha_ro", "exec", "failover", "fcall", "fcall_ro", "function|help", "hello",
    "info", "lastsave", "latency|doctor", "latency|graph", "latency|help", "latency|histogram", "latency|history",
    "latency|latest", "latency|reset", "memory|help", "module|help", "monitor", "multi", "object|help",
    "psubscribe", "publish", "pubsub|channels", "pubsub|help", "pubsub|numpat", "pubsub|numsub",
    "pubsub|shardchannels", "pubsub|shardnumsub", "punsubscribe", "quit", "readonly", "readwrite", "replconf",
    "replicaof", "reset", "role", "script|help", "script|load", "select", "sentinel|help", "shutdown", "slaveof",
    "slowlog|get", "slowlog|help", "slowlog|len", "slowlog|reset", "spublish", "ssubscribe", "subscribe",
    "sunsubscribe", "time", "unsubscribe", "unwatch", "watch", "xgroup|help", "xinfo|help",
];

impl Command {
    /// `CMD_STALE` for `argv` (a container's flag is its subcommand's).
    pub fn is_stale(&self, argv: &[Vec<u8>]) -> bool {
        STALE.binary_search(&self.full_name(argv).as_str()).is_ok()
    }
}

/// Find a command by name, case-insensitively, without allocating, through
/// a precomputed hash (a binary search with a lower-case copy of the name
/// was 8 % of sim-server's profile). Commands of a later profile are
/// unknown to an earlier one, so on profile 7.0 `DELEX` gets exactly 7.0's
/// unknown-command error.
pub fn find(name: &[u8], profile: Profile) -> Option<&'static Command> {
    let index = index();
    let mut at = name_hash(name) % INDEX_SLOTS;
    loop {
        let cmd = COMMANDS.get(usize::from(index[at]))?;
        if cmd.name.len() == name.len() && cmd.name.as_bytes().eq_ignore_ascii_case(name) {
            if cmd.flags & V8_4 != 0 && !profile.has_8_4() {
                return None;
            }
            return Some(cmd);
        }
        at = (at + 1) % INDEX_SLOTS;
    }
}

/// Look up argv's command, or give redis-server's error for an unknown
/// command or subcommand.
pub(crate) fn lookup(argv: &[Vec<u8>], profile: Profile) -> Result<&'static Command, Reply> {
    let name = argv.first().map(Vec::as_slice).unwrap_or_default();
    let Some(cmd) = find(name, profile) else {
        return Err(unknown_command(argv));
    };
    if let (false, Some(sub)) = (cmd.subcommands.is_empty(), argv.get(1)) {
        if cmd.subcommand_arity(argv).is_none() {
            return Err(Reply::error(sanitize(format!(
                "ERR unknown subcommand '{}'. Try {} HELP.",
                truncate(sub, 128),
                cmd.name.to_uppercase()
            ))));
        }
    }
    Ok(cmd)
}

/// `processCommand`'s first two refusals (`commandCheckExistence`, then
/// `commandCheckArity`), for a host that must answer without running the
/// node — sim-server while a script is busy, where both come before BUSY:
/// the unknown command or subcommand error, else the wrong number of
/// arguments (the subcommand's, for a container). `None` when the command
/// exists and takes that many arguments.
pub fn refusal(argv: &[Vec<u8>], profile: Profile) -> Option<Reply> {
    match lookup(argv, profile) {
        Err(e) => Some(e),
        Ok(cmd)
            if !cmd.arity_ok(argv.len()) || cmd.subcommand_arity(argv).is_some_and(|a| !arity_fits(a, argv.len())) =>
        {
            Some(Reply::error(format!("ERR {}", arity_message(cmd, argv))))
        }
        Ok(_) => None,
    }
}

/// `commandCheckArity`: a positive arity is the exact count, a negative one
/// the least.
fn arity_fits(arity: i32, argc: usize) -> bool {
    let argc = argc as i64;
    let arity = i64::from(arity);
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

/// `commandCheckArity`'s text, without its `ERR `.
pub(crate) fn arity_message(cmd: &Command, argv: &[Vec<u8>]) -> String {
    format!("wrong number of arguments for '{}' command", cmd.full_name(argv))
}

/// `unknown command 'x', with args beginning with: 'a' 'b' ` — each argument
/// quoted and followed by a space, until 128 characters have been written.
pub(crate) fn unknown_command(argv: &[Vec<u8>]) -> Reply {
    let name = argv.first().map(Vec::as_slice).unwrap_or_default();
    let mut args = String::new();
    for a in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push('\'');
        args.push_str(&truncate(a, room));
        args.push_str("' ");
    }
    Reply::error(sanitize(format!(
        "ERR unknown command '{}', with args beginning with: {}",
        truncate(name, 128),
        args
    )))
}

/// `%.Ns` of a C string: at most `n` bytes, stopping at a NUL.
fn truncate(b: &[u8], n: usize) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len()).min(n);
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// redis-server replaces CR and LF in error messages with spaces, so an
/// error always fits on one protocol line.
pub(crate) fn sanitize(s: String) -> String {
    if s.contains(['\r', '\n']) {
        s.replace(['\r', '\n'], " ")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `is_stale` searches `STALE`, so it must be sorted; a container's
    /// flag is its subcommand's.
    #[test]
    fn stale_is_sorted_and_read_per_subcommand() {
        assert!(STALE.windows(2).all(|w| w[0] < w[1]));
        let argv = |line: &str| -> Vec<Vec<u8>> { line.split(' ').map(|a| a.as_bytes().to_vec()).collect() };
        let stale = |line: &str| lookup(&argv(line), Profile::V7_0).expect(line).is_stale(&argv(line));
        assert!(stale("INFO") && stale("SCRIPT LOAD x") && stale("config get x") && stale("REPLICAOF no one"));
        assert!(!stale("GET k") && !stale("PING") && !stale("SCRIPT FLUSH") && !stale("SET k v"));
    }

    /// A numkeys of 2⁶³−1 answers at once with the keys argv has: it used
    /// to walk every index up to the count (the backend's sandbox spun on
    /// a typed `EVAL "return 1" 9223372036854775807`).
    #[test]
    fn a_huge_numkeys_costs_what_argv_holds() {
        let eval = find(b"EVAL", Profile::V7_0).expect("EVAL");
        let argv: Vec<Vec<u8>> = ["EVAL", "return 1", "9223372036854775807", "k1", "k2"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        assert_eq!(eval.key_indexes(&argv), [3, 4]);
        let argv = [b"EVAL".to_vec(), b"x".to_vec(), usize::MAX.to_string().into_bytes()];
        assert!(eval.key_indexes(&argv).is_empty());
    }

    #[test]
    fn table_is_sorted_and_its_names_unique() {
        for w in COMMANDS.windows(2) {
            assert!(w[0].name < w[1].name, "{} before {}", w[0].name, w[1].name);
        }
    }

    #[test]
    fn every_command_is_found_by_its_name_in_any_case() {
        for cmd in COMMANDS {
            let upper = cmd.name.to_ascii_uppercase();
            let found = find(upper.as_bytes(), Profile::V8_4).map(|c| c.name);
            assert_eq!(found, Some(cmd.name));
            assert_eq!(find(cmd.name.as_bytes(), Profile::V8_4).map(|c| c.name), Some(cmd.name));
            // A longer name is another command only if the table has it
            // (LPUSH and LPUSHX).
            let longer = format!("{}x", cmd.name);
            assert!(find(longer.as_bytes(), Profile::V8_4).is_none_or(|c| c.name == longer));
            assert!(find(&cmd.name.as_bytes()[1..], Profile::V8_4).is_none_or(|c| c.name != cmd.name));
        }
        assert!(find(b"", Profile::V7_0).is_none());
        assert!(find(b"nosuchcommandwithalongname", Profile::V7_0).is_none());
    }

    /// ZPOPMIN/ZPOPMAX pop as many members as their count asks: a lab
    /// session gets SPOP's bound.
    #[test]
    fn zpop_counts_are_bounded_as_spops() {
        let argv = |line: &str| -> Vec<Vec<u8>> { line.split(' ').map(|s| s.as_bytes().to_vec()).collect() };
        for name in ["ZPOPMIN", "zpopmax"] {
            let cmd = find(name.as_bytes(), Profile::V7_0).expect(name);
            assert!(cmd.is_write() && cmd.arity == -2);
            assert!(cmd.lab_check(&argv(&format!("{name} z 1000"))).is_ok());
            assert!(cmd.lab_check(&argv(&format!("{name} z"))).is_ok());
            assert!(cmd.lab_check(&argv(&format!("{name} z 1001"))).is_err());
        }
    }

    #[test]
    fn delex_exists_only_from_8_4() {
        assert!(find(b"DELEX", Profile::V7_0).is_none());
        assert!(find(b"delex", Profile::V8_4).is_some());
    }

    #[test]
    fn key_positions() {
        let argv: Vec<Vec<u8>> = ["EVAL", "s", "2", "a", "b", "x"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        assert_eq!(find(b"eval", Profile::V7_0).unwrap().key_indexes(&argv), vec![3, 4]);
        let del: Vec<Vec<u8>> = ["DEL", "a", "b"].iter().map(|s| s.as_bytes().to_vec()).collect();
        assert_eq!(find(b"del", Profile::V7_0).unwrap().key_indexes(&del), vec![1, 2]);
    }
}
