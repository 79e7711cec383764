//! `CONFIG GET` / `CONFIG SET`: redis-server 7.0.15's parameter table and
//! the part of it the simulator honours.
//!
//! [`PARAMS`] is redis-server's `static_configs[]` (config.c): every name,
//! its alias (`hash-max-ziplist-entries` for `hash-max-listpack-entries`),
//! whether it is immutable, protected or hidden, and the value `CONFIG GET`
//! shows on a server started without a config file — except where that
//! value describes redis-server's process rather than the data model, where
//! the simulator tells its own truth (`save ""`: it never persists;
//! `daemonize no`, `pidfile ""`, `enable-debug-command yes`: it answers
//! `DEBUG`). The host overrides what only it knows (`port`, `bind`, `dir`).
//!
//! `CONFIG SET` follows `configSetCommand`: every name is looked up first
//! (the first unknown one wins: `Unknown option or number of arguments for
//! CONFIG SET - 'x'`; then immutable / protected / duplicate), then every
//! value is parsed with the parameter's own rules, and only if all parse is
//! anything changed. The settings the simulator honours are the ones the
//! Redis test suite and lock libraries toggle and that change what a client
//! can observe here: the encoding thresholds behind `OBJECT ENCODING`
//! ([`Config::hash_max_listpack_entries`] …), `busy-reply-threshold` (read by
//! sim-server while a script runs), `maxmemory` and `maxmemory-policy`
//! (against the node's estimate of its memory, see `server::memory`) and the
//! `lazyfree-lazy-*` switches (the simulator frees at once either way, which
//! no reply can tell apart), and the replication and persistence settings
//! the suite's replication tests set (`repl-ping-replica-period`,
//! `min-replicas-to-write`, `replica-serve-stale-data`, `appendonly` …;
//! see [`honoured`]). Any
//! other parameter keeps its value: setting it to the value it has is `OK`
//! (nothing changes), and setting it to anything else is refused with
//! redis-server's own text for a parameter that cannot change at run time,
//! `can't set immutable config`, rather than pretending to honour it.

use super::glob::glob_match;

/// `IMMUTABLE_CONFIG`: set only at start.
const IMMUTABLE: u8 = 1;
/// `PROTECTED_CONFIG`: refused while `enable-protected-configs` is `no`.
const PROTECTED: u8 = 2;
/// `HIDDEN_CONFIG`: matched by `CONFIG GET` only by exact name.
const HIDDEN: u8 = 4;

/// One row of `static_configs[]`.
#[derive(Debug)]
struct Param {
    name: &'static str,
    alias: Option<&'static str>,
    flags: u8,
    default: &'static str,
}

/// How an honoured parameter's value is parsed (config.c's `boolConfigSet`
/// and `numericParseString` + `numericBoundaryCheck`).
#[derive(Debug, Clone, Copy)]
enum Kind {
    Bool,
    /// A signed integer within bounds (`createIntConfig`, `createLongLongConfig`).
    Signed {
        lo: i64,
        hi: i64,
    },
    /// A `size_t` within `0..=LONG_MAX`, written as an integer.
    SizeT,
    /// A `size_t` written as a memory value (`1kb`, `64`).
    SizeTMemory,
    /// An `unsigned long long` written as a memory value (`maxmemory`:
    /// `createULongLongConfig(…, 0, ULLONG_MAX, …, MEMORY_CONFIG …)`).
    ULongLongMemory,
    /// One of a fixed list of names (`createEnumConfig`), any case.
    Enum(&'static [&'static str]),
    /// A `long long` written as a memory value, at least `lo`
    /// (`client-query-buffer-limit`: `createLongLongConfig(…, 1024*1024,
    /// LONG_MAX, …, MEMORY_CONFIG …)`).
    LongLongMemory {
        lo: u64,
    },
    /// `client-output-buffer-limit`: `<class> <hard> <soft> <seconds>`
    /// groups (config.c's `updateClientOutputBufferLimit`); the classes not
    /// named keep their values.
    ObufLimits,
}

/// A client class of `client-output-buffer-limit`, in config.c's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientClass {
    Normal,
    Replica,
    Pubsub,
}

impl ClientClass {
    /// Every class, in config.c's order (`index` is the position here).
    pub const ALL: [ClientClass; 3] = [ClientClass::Normal, ClientClass::Replica, ClientClass::Pubsub];

    /// The class's place in [`ClientClass::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The class's name in `client-output-buffer-limit` (`getClientTypeName`).
    pub fn name(self) -> &'static str {
        match self {
            ClientClass::Normal => "normal",
            ClientClass::Replica => "replica",
            ClientClass::Pubsub => "pubsub",
        }
    }
}

/// One class's `client-output-buffer-limit`: a client whose pending
/// output passes `hard` bytes, or stays above `soft` bytes for
/// `soft_seconds`, is closed (0 disables a limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObufLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_seconds: u64,
}

/// `maxmemory_policy_enum[]`, in config.c's order (the error lists them so).
pub const MAXMEMORY_POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// The parameters the simulator honours, by canonical name.
fn honoured(name: &str) -> Option<Kind> {
    Some(match name {
        "hash-max-listpack-entries" | "set-max-intset-entries" | "zset-max-listpack-entries" => Kind::SizeT,
        "hash-max-listpack-value" | "zset-max-listpack-value" => Kind::SizeTMemory,
        "list-max-listpack-size" => Kind::Signed {
            lo: i32::MIN as i64,
            hi: i32::MAX as i64,
        },
        "list-compress-depth" => Kind::Signed {
            lo: 0,
            hi: i32::MAX as i64,
        },
        "busy-reply-threshold" => Kind::Signed { lo: 0, hi: i64::MAX },
        "client-query-buffer-limit" => Kind::LongLongMemory { lo: 1024 * 1024 },
        "client-output-buffer-limit" => Kind::ObufLimits,
        "maxmemory" => Kind::ULongLongMemory,
        "maxmemory-policy" => Kind::Enum(MAXMEMORY_POLICIES),
        "lazyfree-lazy-eviction"
        | "lazyfree-lazy-expire"
        | "lazyfree-lazy-server-del"
        | "lazyfree-lazy-user-del"
        | "lazyfree-lazy-user-flush" => Kind::Bool,
        // Whether DUMP, the RDB a replica gets and DEBUG OBJECT's
        // `serializedlength` LZF-compress strings (`rdbSaveRawString`).
        "rdbcompression" => Kind::Bool,
        // Replication and persistence (config.c's bounds). A node with no
        // replicas of its own and no disk takes them as redis-server does and
        // reports them; `min-replicas-to-write` / `-max-lag` refuse writes
        // (`checkGoodReplicasStatus`: no replica here acknowledges), the
        // others change nothing a client of this node can observe.
        "repl-ping-replica-period" | "repl-timeout" => Kind::Signed {
            lo: 1,
            hi: i32::MAX as i64,
        },
        "repl-diskless-sync-delay"
        | "repl-diskless-sync-max-replicas"
        | "replica-priority"
        | "min-replicas-to-write"
        | "min-replicas-max-lag" => Kind::Signed {
            lo: 0,
            hi: i32::MAX as i64,
        },
        "repl-backlog-ttl" => Kind::Signed { lo: 0, hi: i64::MAX },
        "repl-backlog-size" => Kind::LongLongMemory { lo: 1 },
        "repl-diskless-load" => Kind::Enum(&["disabled", "on-empty-db", "swapdb"]),
        "appendfsync" => Kind::Enum(&["always", "everysec", "no"]),
        "repl-diskless-sync"
        | "repl-disable-tcp-nodelay"
        | "replica-serve-stale-data"
        | "replica-read-only"
        | "replica-lazy-flush"
        | "replica-ignore-maxmemory"
        | "appendonly" => Kind::Bool,
        _ => return None,
    })
}

/// The node's settings: one value per parameter, as `CONFIG GET` shows it.
#[derive(Debug, Clone)]
pub struct Config {
    values: Vec<String>,
    /// `maxmemory`, parsed once per change: every command reads it.
    maxmemory: u64,
    /// The encoding thresholds, parsed once per change: every `HSET`,
    /// `SADD` and `ZADD` reads them, and finding five names in [`PARAMS`]
    /// by string comparison was most of what a one-field `HSET` cost.
    limits: EncodingLimits,
}

impl Default for Config {
    fn default() -> Self {
        let mut config = Config {
            values: PARAMS.iter().map(|p| p.default.to_string()).collect(),
            maxmemory: 0,
            limits: EncodingLimits {
                hash_entries: 0,
                hash_value: 0,
                set_entries: 0,
                zset_entries: 0,
                zset_value: 0,
            },
        };
        config.parse_cached();
        config
    }
}

/// Find a parameter by name or alias, case-insensitively (config.c's
/// `configs` dict hashes names without case).
fn lookup(name: &[u8]) -> Option<(usize, &'static str)> {
    PARAMS.iter().enumerate().find_map(|(i, p)| {
        if p.name.as_bytes().eq_ignore_ascii_case(name) {
            Some((i, p.name))
        } else {
            p.alias
                .filter(|a| a.as_bytes().eq_ignore_ascii_case(name))
                .map(|a| (i, a))
        }
    })
}

/// When a hash, set or sorted set leaves its compact encoding
/// (`hashTypeTryConversion`, `setTypeAdd`, `zsetAdd`): the `*-max-*`
/// parameters as they stood when the value was written. redis-server never
/// converts back (a load re-encodes from the contents: `rdbLoadObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodingLimits {
    pub hash_entries: usize,
    pub hash_value: usize,
    pub set_entries: usize,
    pub zset_entries: usize,
    pub zset_value: usize,
}

impl Config {
    /// `CONFIG GET pattern …` (`configGetCommand`): a name without glob
    /// characters is looked up exactly (and answered under the spelling it
    /// was asked with); a pattern matches names and aliases (each its own
    /// entry, as in redis-server's dict), except hidden parameters. The order is redis-server's dict order, which is not
    /// worth imitating: clients read the reply as a map.
    pub fn get(&self, patterns: &[Vec<u8>]) -> Vec<(Vec<u8>, String)> {
        let mut out: Vec<(Vec<u8>, String)> = Vec::new();
        let has = |out: &[(Vec<u8>, String)], name: &[u8]| out.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        for pat in patterns {
            if !pat.iter().any(|c| b"[*?".contains(c)) {
                if let Some((i, _)) = lookup(pat) {
                    if !has(&out, pat) {
                        out.push((pat.clone(), self.values[i].clone()));
                    }
                }
                continue;
            }
            for (i, p) in PARAMS.iter().enumerate() {
                if p.flags & HIDDEN != 0 {
                    continue;
                }
                for name in std::iter::once(p.name).chain(p.alias) {
                    if glob_match(pat, name.as_bytes(), true) && !has(&out, name.as_bytes()) {
                        out.push((name.as_bytes().to_vec(), self.values[i].clone()));
                    }
                }
            }
        }
        out
    }

    /// `CONFIG SET name value [name value …]` (`configSetCommand`), all or
    /// nothing. `Err` holds the error text without the `ERR ` prefix.
    pub fn set(&mut self, args: &[Vec<u8>]) -> Result<(), String> {
        if args.len() % 2 == 1 {
            return Err("syntax error".into());
        }
        let mut found: Vec<(usize, &'static str)> = Vec::new();
        let mut unknown: Option<&[u8]> = None;
        let mut failed: Option<(&'static str, &'static str)> = None;
        for pair in args.chunks(2) {
            let Some((i, name)) = lookup(&pair[0]) else {
                unknown.get_or_insert(&pair[0]);
                continue;
            };
            if unknown.is_some() || failed.is_some() {
                continue;
            }
            let p = &PARAMS[i];
            if p.flags & IMMUTABLE != 0 {
                failed = Some((name, "can't set immutable config"));
            } else if p.flags & PROTECTED != 0 {
                failed = Some((name, "can't set protected config"));
            } else if found.iter().any(|&(j, n)| j == i && n == name) {
                failed = Some((name, "duplicate parameter"));
            }
            found.push((i, name));
        }
        if let Some(name) = unknown {
            return Err(format!(
                "Unknown option or number of arguments for CONFIG SET - '{}'",
                String::from_utf8_lossy(name)
            ));
        }
        if let Some((name, why)) = failed {
            return Err(format!(
                "CONFIG SET failed (possibly related to argument '{name}') - {why}"
            ));
        }
        let mut next = self.values.clone();
        for (&(i, name), pair) in found.iter().zip(args.chunks(2)) {
            let value = String::from_utf8_lossy(&pair[1]);
            let parsed = match honoured(PARAMS[i].name) {
                Some(Kind::ObufLimits) => obuf_limits(&next[i], &value),
                Some(kind) => parse(kind, &value),
                // Not honoured: the value it has is the only one it takes.
                None if value == self.values[i] => Ok(value.into_owned()),
                None => Err("can't set immutable config".to_string()),
            };
            match parsed {
                Ok(v) => next[i] = v,
                Err(why) => {
                    return Err(format!(
                        "CONFIG SET failed (possibly related to argument '{name}') - {why}"
                    ))
                }
            }
        }
        self.values = next;
        self.parse_cached();
        Ok(())
    }

    /// Parse again the values commands read on every call, after a change.
    fn parse_cached(&mut self) {
        self.maxmemory = self.text("maxmemory").parse().unwrap_or(0);
        self.limits = EncodingLimits {
            hash_entries: self.hash_max_listpack_entries(),
            hash_value: self.hash_max_listpack_value(),
            set_entries: self.set_max_intset_entries(),
            zset_entries: self.zset_max_listpack_entries(),
            zset_value: self.zset_max_listpack_value(),
        };
    }

    pub(crate) fn number(&self, name: &str) -> i64 {
        PARAMS
            .iter()
            .position(|p| p.name == name)
            .and_then(|i| self.values[i].parse().ok())
            .unwrap_or(0)
    }

    /// `hash-max-listpack-entries`: a hash with more fields is a hashtable.
    pub fn hash_max_listpack_entries(&self) -> usize {
        self.number("hash-max-listpack-entries") as usize
    }

    /// `hash-max-listpack-value`: a field or value longer than this makes a
    /// hash a hashtable.
    pub fn hash_max_listpack_value(&self) -> usize {
        self.number("hash-max-listpack-value") as usize
    }

    /// `set-max-intset-entries`: an all-integer set with more members is a
    /// hashtable.
    pub fn set_max_intset_entries(&self) -> usize {
        self.number("set-max-intset-entries") as usize
    }

    /// `zset-max-listpack-entries`: a sorted set with more members is a
    /// skiplist.
    pub fn zset_max_listpack_entries(&self) -> usize {
        self.number("zset-max-listpack-entries") as usize
    }

    /// `zset-max-listpack-value`: a longer member makes a sorted set a
    /// skiplist.
    pub fn zset_max_listpack_value(&self) -> usize {
        self.number("zset-max-listpack-value") as usize
    }

    /// The five thresholds above, read once by a command that may convert
    /// a value to its big encoding.
    pub fn encoding_limits(&self) -> EncodingLimits {
        self.limits
    }

    /// `maxmemory-samples`: how many keys eviction looks at to choose one.
    pub fn maxmemory_samples(&self) -> usize {
        (self.number("maxmemory-samples") as usize).max(1)
    }

    /// `maxmemory` in bytes; 0 is no limit.
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory
    }

    /// `rdbcompression`: LZF-compress the strings of an RDB or a DUMP.
    pub fn rdb_compression(&self) -> bool {
        self.text("rdbcompression") == "yes"
    }

    /// `replica-read-only`: a replica refuses its clients' writes.
    pub fn replica_read_only(&self) -> bool {
        self.text("replica-read-only") == "yes"
    }

    /// `replica-serve-stale-data`: a replica whose link to its master is
    /// down still answers reads (`no`: only `CMD_STALE` commands).
    pub fn replica_serve_stale_data(&self) -> bool {
        self.text("replica-serve-stale-data") == "yes"
    }

    /// `maxmemory-policy`: one of [`MAXMEMORY_POLICIES`].
    pub fn maxmemory_policy(&self) -> &str {
        self.text("maxmemory-policy")
    }

    fn text(&self, name: &str) -> &str {
        PARAMS
            .iter()
            .position(|p| p.name == name)
            .map_or("", |i| self.values[i].as_str())
    }

    /// Set a value only the host knows (`port`, `bind`, `dir`), even an
    /// immutable one: what redis-server read from its command line.
    pub fn set_host_value(&mut self, name: &str, value: &str) {
        if let Some((i, _)) = lookup(name.as_bytes()) {
            self.values[i] = value.to_string();
            self.parse_cached();
        }
    }

    /// `client-query-buffer-limit`: the most a client may have sent that
    /// does not yet form a complete command.
    pub fn client_query_buffer_limit(&self) -> u64 {
        self.number("client-query-buffer-limit").max(0) as u64
    }

    /// `client-output-buffer-limit` of one client class.
    pub fn client_output_buffer_limit(&self, class: ClientClass) -> ObufLimit {
        // "normal h s t slave h s t pubsub h s t": each class's three after its name.
        let at = 1 + 4 * class.index();
        let fields: Vec<u64> = self
            .text("client-output-buffer-limit")
            .split(' ')
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        let field = |i: usize| fields.get(i).copied().unwrap_or(0);
        ObufLimit {
            hard: field(at),
            soft: field(at + 1),
            soft_seconds: field(at + 2),
        }
    }

    /// `busy-reply-threshold` (`lua-time-limit`), in milliseconds.
    pub fn busy_reply_threshold_ms(&self) -> u64 {
        self.number("busy-reply-threshold").max(0) as u64
    }
}

/// Parse one value by its kind, returning what `CONFIG GET` will show, or
/// config.c's error text.
fn parse(kind: Kind, value: &str) -> Result<String, String> {
    const LONG_MAX: u64 = i64::MAX as u64;
    let between = |lo: &dyn std::fmt::Display, hi: &dyn std::fmt::Display| {
        format!("argument must be between {lo} and {hi} inclusive")
    };
    match kind {
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Signed { lo, hi } => {
            let n = super::cmd::parse_i64(value.as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if n < lo || n > hi {
                return Err(between(&lo, &hi));
            }
            Ok(n.to_string())
        }
        Kind::SizeT => {
            let n = super::cmd::parse_i64(value.as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            // size_t: the bound check compares as unsigned, so -1 is huge.
            if n as u64 > LONG_MAX {
                return Err(between(&0, &LONG_MAX));
            }
            Ok(n.to_string())
        }
        Kind::SizeTMemory => {
            let n = memtoull(value).ok_or_else(|| "argument must be a memory value".to_string())?;
            if n > LONG_MAX {
                return Err(between(&0, &LONG_MAX));
            }
            Ok(n.to_string())
        }
        Kind::ULongLongMemory => Ok(memtoull(value)
            .ok_or_else(|| "argument must be a memory value".to_string())?
            .to_string()),
        Kind::LongLongMemory { lo } => {
            let n = memtoull(value).ok_or_else(|| "argument must be a memory value".to_string())?;
            if n < lo || n > LONG_MAX {
                return Err(between(&lo, &LONG_MAX));
            }
            Ok(n.to_string())
        }
        Kind::ObufLimits => obuf_limits("", value),
        Kind::Enum(names) => names
            .iter()
            .find(|n| n.eq_ignore_ascii_case(value))
            .map(|n| n.to_string())
            .ok_or_else(|| format!("argument(s) must be one of the following: {}", names.join(", "))),
    }
}

/// `updateClientOutputBufferLimit`: `old` (as `CONFIG GET` shows it) with
/// the classes `value` names replaced; all or nothing.
fn obuf_limits(old: &str, value: &str) -> Result<String, String> {
    let args: Vec<&str> = value.split_ascii_whitespace().collect();
    if !args.len().is_multiple_of(4) {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut fields: Vec<String> = old.split(' ').map(str::to_owned).collect();
    if fields.len() != 12 {
        fields = "normal 0 0 0 slave 0 0 0 pubsub 0 0 0"
            .split(' ')
            .map(str::to_owned)
            .collect();
    }
    for group in args.chunks(4) {
        // getClientTypeByName; the master class has no limits.
        let at = match group[0].to_ascii_lowercase().as_str() {
            "normal" => 1,
            "slave" | "replica" => 5,
            "pubsub" => 9,
            _ => return Err("Invalid client class specified in buffer limit configuration.".into()),
        };
        let bad = || "Error in hard, soft or soft_seconds setting in buffer limit configuration.".to_string();
        let hard = memtoull(group[1]).ok_or_else(bad)?;
        let soft = memtoull(group[2]).ok_or_else(bad)?;
        // strtoll to an int: the whole text, not negative once narrowed.
        let seconds = super::cmd::parse_i64(group[3].as_bytes()).ok_or_else(bad)?;
        if (seconds as i32) < 0 {
            return Err(bad());
        }
        fields[at] = hard.to_string();
        fields[at + 1] = soft.to_string();
        fields[at + 2] = (seconds as i32).to_string();
    }
    Ok(fields.join(" "))
}

/// util.c's `memtoull`: digits, then an optional unit (`b`, `k`, `kb`, `m`,
/// `mb`, `g`, `gb`, any case); `k` is 1000 and `kb` 1024. Like the C, an
/// overflowing number saturates before the unit multiplies (wrapping).
pub(crate) fn memtoull(s: &str) -> Option<u64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = s.split_at(digits);
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    // strtoull of no digits is 0; of too many, ULLONG_MAX.
    let n = if num.is_empty() {
        0
    } else {
        num.parse::<u64>().unwrap_or(u64::MAX)
    };
    Some(n.wrapping_mul(mul))
}

/// redis-server 7.0.15's `static_configs[]`, in its order, with the values
/// a fresh server reports (adjusted as the module doc says). Generated from
/// config.c and `CONFIG GET` of a fresh redis-server 7.0.15.
#[rustfmt::skip]
static PARAMS: &[Param] = &[
    Param { name: "rdbchecksum", alias: None, flags: IMMUTABLE, default: "yes" },
    Param { name: "daemonize", alias: None, flags: IMMUTABLE, default: "no" },
    Param { name: "io-threads-do-reads", alias: None, flags: IMMUTABLE, default: "no" },
    Param { name: "always-show-logo", alias: None, flags: IMMUTABLE, default: "no" },
    Param { name: "protected-mode", alias: None, flags: 0, default: "yes" },
    Param { name: "rdbcompression", alias: None, flags: 0, default: "yes" },
    Param { name: "rdb-del-sync-files", alias: None, flags: 0, default: "no" },
    Param { name: "activerehashing", alias: None, flags: 0, default: "yes" },
    Param { name: "stop-writes-on-bgsave-error", alias: None, flags: 0, default: "yes" },
    Param { name: "set-proc-title", alias: None, flags: IMMUTABLE, default: "yes" },
    Param { name: "dynamic-hz", alias: None, flags: 0, default: "yes" },
    Param { name: "lazyfree-lazy-eviction", alias: None, flags: 0, default: "no" },
    Param { name: "lazyfree-lazy-expire", alias: None, flags: 0, default: "no" },
    Param { name: "lazyfree-lazy-server-del", alias: None, flags: 0, default: "no" },
    Param { name: "lazyfree-lazy-user-del", alias: None, flags: 0, default: "no" },
    Param { name: "lazyfree-lazy-user-flush", alias: None, flags: 0, default: "no" },
    Param { name: "repl-disable-tcp-nodelay", alias: None, flags: 0, default: "no" },
    Param { name: "repl-diskless-sync", alias: None, flags: 0, default: "yes" },
    Param { name: "aof-rewrite-incremental-fsync", alias: None, flags: 0, default: "yes" },
    Param { name: "no-appendfsync-on-rewrite", alias: None, flags: 0, default: "no" },
    Param { name: "cluster-require-full-coverage", alias: None, flags: 0, default: "yes" },
    Param { name: "rdb-save-incremental-fsync", alias: None, flags: 0, default: "yes" },
    Param { name: "aof-load-truncated", alias: None, flags: 0, default: "yes" },
    Param { name: "aof-use-rdb-preamble", alias: None, flags: 0, default: "yes" },
    Param { name: "aof-timestamp-enabled", alias: None, flags: 0, default: "no" },
    Param { name: "cluster-replica-no-failover", alias: Some("cluster-slave-no-failover"), flags: 0, default: "no" },
    Param { name: "replica-lazy-flush", alias: Some("slave-lazy-flush"), flags: 0, default: "no" },
    Param { name: "replica-serve-stale-data", alias: Some("slave-serve-stale-data"), flags: 0, default: "yes" },
    Param { name: "replica-read-only", alias: Some("slave-read-only"), flags: 0, default: "yes" },
    Param { name: "replica-ignore-maxmemory", alias: Some("slave-ignore-maxmemory"), flags: 0, default: "yes" },
    Param { name: "jemalloc-bg-thread", alias: None, flags: 0, default: "yes" },
    Param { name: "activedefrag", alias: None, flags: 0, default: "no" },
    Param { name: "syslog-enabled", alias: None, flags: IMMUTABLE, default: "no" },
    Param { name: "cluster-enabled", alias: None, flags: IMMUTABLE, default: "no" },
    Param { name: "appendonly", alias: None, flags: 0, default: "no" },
    Param { name: "cluster-allow-reads-when-down", alias: None, flags: 0, default: "no" },
    Param { name: "cluster-allow-pubsubshard-when-down", alias: None, flags: 0, default: "yes" },
    Param { name: "crash-log-enabled", alias: None, flags: 0, default: "yes" },
    Param { name: "crash-memcheck-enabled", alias: None, flags: 0, default: "yes" },
    Param { name: "use-exit-on-panic", alias: None, flags: HIDDEN, default: "no" },
    Param { name: "disable-thp", alias: None, flags: IMMUTABLE, default: "yes" },
    Param { name: "cluster-allow-replica-migration", alias: None, flags: 0, default: "yes" },
    Param { name: "replica-announced", alias: None, flags: 0, default: "yes" },
    Param { name: "latency-tracking", alias: None, flags: 0, default: "yes" },
    Param { name: "aof-disable-auto-gc", alias: None, flags: 0, default: "no" },
    Param { name: "replica-ignore-disk-write-errors", alias: None, flags: 0, default: "no" },
    Param { name: "aclfile", alias: None, flags: IMMUTABLE, default: "" },
    Param { name: "unixsocket", alias: None, flags: IMMUTABLE, default: "" },
    Param { name: "pidfile", alias: None, flags: IMMUTABLE, default: "" },
    Param { name: "replica-announce-ip", alias: Some("slave-announce-ip"), flags: 0, default: "" },
    Param { name: "masteruser", alias: None, flags: 0, default: "" },
    Param { name: "cluster-announce-ip", alias: None, flags: 0, default: "" },
    Param { name: "cluster-config-file", alias: None, flags: IMMUTABLE, default: "nodes.conf" },
    Param { name: "cluster-announce-hostname", alias: None, flags: 0, default: "" },
    Param { name: "syslog-ident", alias: None, flags: IMMUTABLE, default: "redis" },
    Param { name: "dbfilename", alias: None, flags: PROTECTED, default: "dump.rdb" },
    Param { name: "appendfilename", alias: None, flags: IMMUTABLE, default: "appendonly.aof" },
    Param { name: "appenddirname", alias: None, flags: IMMUTABLE, default: "appendonlydir" },
    Param { name: "server_cpulist", alias: None, flags: IMMUTABLE, default: "" },
    Param { name: "bio_cpulist", alias: None, flags: IMMUTABLE, default: "" },
    Param { name: "aof_rewrite_cpulist", alias: None, flags: IMMUTABLE, default: "" },
    Param { name: "bgsave_cpulist", alias: None, flags: IMMUTABLE, default: "" },
    Param { name: "ignore-warnings", alias: None, flags: 0, default: "" },
    Param { name: "proc-title-template", alias: None, flags: 0, default: "{title} {listen-addr} {server-mode}" },
    Param { name: "bind-source-addr", alias: None, flags: 0, default: "" },
    Param { name: "logfile", alias: None, flags: IMMUTABLE, default: "" },
    Param { name: "masterauth", alias: None, flags: 0, default: "" },
    Param { name: "requirepass", alias: None, flags: 0, default: "" },
    Param { name: "supervised", alias: None, flags: IMMUTABLE, default: "no" },
    Param { name: "syslog-facility", alias: None, flags: IMMUTABLE, default: "local0" },
    Param { name: "repl-diskless-load", alias: None, flags: 0, default: "disabled" },
    Param { name: "loglevel", alias: None, flags: 0, default: "notice" },
    Param { name: "maxmemory-policy", alias: None, flags: 0, default: "noeviction" },
    Param { name: "appendfsync", alias: None, flags: 0, default: "everysec" },
    Param { name: "oom-score-adj", alias: None, flags: 0, default: "no" },
    Param { name: "acl-pubsub-default", alias: None, flags: 0, default: "resetchannels" },
    Param { name: "sanitize-dump-payload", alias: None, flags: 0, default: "no" },
    Param { name: "enable-protected-configs", alias: None, flags: IMMUTABLE, default: "no" },
    Param { name: "enable-debug-command", alias: None, flags: IMMUTABLE, default: "yes" },
    Param { name: "enable-module-command", alias: None, flags: IMMUTABLE, default: "no" },
    Param { name: "cluster-preferred-endpoint-type", alias: None, flags: 0, default: "ip" },
    Param { name: "propagation-error-behavior", alias: None, flags: 0, default: "ignore" },
    Param { name: "shutdown-on-sigint", alias: None, flags: 0, default: "default" },
    Param { name: "shutdown-on-sigterm", alias: None, flags: 0, default: "default" },
    Param { name: "databases", alias: None, flags: IMMUTABLE, default: "16" },
    Param { name: "port", alias: None, flags: 0, default: "6379" },
    Param { name: "io-threads", alias: None, flags: IMMUTABLE, default: "1" },
    Param { name: "auto-aof-rewrite-percentage", alias: None, flags: 0, default: "100" },
    Param { name: "cluster-replica-validity-factor", alias: Some("cluster-slave-validity-factor"), flags: 0, default: "10" },
    Param { name: "list-max-listpack-size", alias: Some("list-max-ziplist-size"), flags: 0, default: "-2" },
    Param { name: "tcp-keepalive", alias: None, flags: 0, default: "300" },
    Param { name: "cluster-migration-barrier", alias: None, flags: 0, default: "1" },
    Param { name: "active-defrag-cycle-min", alias: None, flags: 0, default: "1" },
    Param { name: "active-defrag-cycle-max", alias: None, flags: 0, default: "25" },
    Param { name: "active-defrag-threshold-lower", alias: None, flags: 0, default: "10" },
    Param { name: "active-defrag-threshold-upper", alias: None, flags: 0, default: "100" },
    Param { name: "lfu-log-factor", alias: None, flags: 0, default: "10" },
    Param { name: "lfu-decay-time", alias: None, flags: 0, default: "1" },
    Param { name: "replica-priority", alias: Some("slave-priority"), flags: 0, default: "100" },
    Param { name: "repl-diskless-sync-delay", alias: None, flags: 0, default: "5" },
    Param { name: "maxmemory-samples", alias: None, flags: 0, default: "5" },
    Param { name: "maxmemory-eviction-tenacity", alias: None, flags: 0, default: "10" },
    Param { name: "timeout", alias: None, flags: 0, default: "0" },
    Param { name: "replica-announce-port", alias: Some("slave-announce-port"), flags: 0, default: "0" },
    Param { name: "tcp-backlog", alias: None, flags: IMMUTABLE, default: "511" },
    Param { name: "cluster-port", alias: None, flags: IMMUTABLE, default: "0" },
    Param { name: "cluster-announce-bus-port", alias: None, flags: 0, default: "0" },
    Param { name: "cluster-announce-port", alias: None, flags: 0, default: "0" },
    Param { name: "cluster-announce-tls-port", alias: None, flags: 0, default: "0" },
    Param { name: "repl-timeout", alias: None, flags: 0, default: "60" },
    Param { name: "repl-ping-replica-period", alias: Some("repl-ping-slave-period"), flags: 0, default: "10" },
    Param { name: "list-compress-depth", alias: None, flags: 0, default: "0" },
    Param { name: "rdb-key-save-delay", alias: None, flags: HIDDEN, default: "0" },
    Param { name: "key-load-delay", alias: None, flags: HIDDEN, default: "0" },
    Param { name: "active-expire-effort", alias: None, flags: 0, default: "1" },
    Param { name: "hz", alias: None, flags: 0, default: "10" },
    Param { name: "min-replicas-to-write", alias: Some("min-slaves-to-write"), flags: 0, default: "0" },
    Param { name: "min-replicas-max-lag", alias: Some("min-slaves-max-lag"), flags: 0, default: "10" },
    Param { name: "watchdog-period", alias: None, flags: HIDDEN, default: "0" },
    Param { name: "shutdown-timeout", alias: None, flags: 0, default: "10" },
    Param { name: "repl-diskless-sync-max-replicas", alias: None, flags: 0, default: "0" },
    Param { name: "maxclients", alias: None, flags: 0, default: "10000" },
    Param { name: "unixsocketperm", alias: None, flags: IMMUTABLE, default: "0" },
    Param { name: "socket-mark-id", alias: None, flags: IMMUTABLE, default: "0" },
    Param { name: "active-defrag-max-scan-fields", alias: None, flags: 0, default: "1000" },
    Param { name: "slowlog-max-len", alias: None, flags: 0, default: "128" },
    Param { name: "acllog-max-len", alias: None, flags: 0, default: "128" },
    Param { name: "busy-reply-threshold", alias: Some("lua-time-limit"), flags: 0, default: "5000" },
    Param { name: "cluster-node-timeout", alias: None, flags: 0, default: "15000" },
    Param { name: "slowlog-log-slower-than", alias: None, flags: 0, default: "10000" },
    Param { name: "latency-monitor-threshold", alias: None, flags: 0, default: "0" },
    Param { name: "proto-max-bulk-len", alias: None, flags: 0, default: "536870912" },
    Param { name: "stream-node-max-entries", alias: None, flags: 0, default: "100" },
    Param { name: "repl-backlog-size", alias: None, flags: 0, default: "1048576" },
    Param { name: "maxmemory", alias: None, flags: 0, default: "0" },
    Param { name: "cluster-link-sendbuf-limit", alias: None, flags: 0, default: "0" },
    Param { name: "hash-max-listpack-entries", alias: Some("hash-max-ziplist-entries"), flags: 0, default: "512" },
    Param { name: "set-max-intset-entries", alias: None, flags: 0, default: "512" },
    Param { name: "zset-max-listpack-entries", alias: Some("zset-max-ziplist-entries"), flags: 0, default: "128" },
    Param { name: "active-defrag-ignore-bytes", alias: None, flags: 0, default: "104857600" },
    Param { name: "hash-max-listpack-value", alias: Some("hash-max-ziplist-value"), flags: 0, default: "64" },
    Param { name: "stream-node-max-bytes", alias: None, flags: 0, default: "4096" },
    Param { name: "zset-max-listpack-value", alias: Some("zset-max-ziplist-value"), flags: 0, default: "64" },
    Param { name: "hll-sparse-max-bytes", alias: None, flags: 0, default: "3000" },
    Param { name: "tracking-table-max-keys", alias: None, flags: 0, default: "1000000" },
    Param { name: "client-query-buffer-limit", alias: None, flags: 0, default: "1073741824" },
    Param { name: "maxmemory-clients", alias: None, flags: 0, default: "0" },
    Param { name: "repl-backlog-ttl", alias: None, flags: 0, default: "3600" },
    Param { name: "auto-aof-rewrite-min-size", alias: None, flags: 0, default: "67108864" },
    Param { name: "loading-process-events-interval-bytes", alias: None, flags: HIDDEN, default: "2097152" },
    Param { name: "tls-port", alias: None, flags: 0, default: "0" },
    Param { name: "tls-session-cache-size", alias: None, flags: 0, default: "20480" },
    Param { name: "tls-session-cache-timeout", alias: None, flags: 0, default: "300" },
    Param { name: "tls-cluster", alias: None, flags: 0, default: "no" },
    Param { name: "tls-replication", alias: None, flags: 0, default: "no" },
    Param { name: "tls-auth-clients", alias: None, flags: 0, default: "yes" },
    Param { name: "tls-prefer-server-ciphers", alias: None, flags: 0, default: "no" },
    Param { name: "tls-session-caching", alias: None, flags: 0, default: "yes" },
    Param { name: "tls-cert-file", alias: None, flags: 0, default: "" },
    Param { name: "tls-key-file", alias: None, flags: 0, default: "" },
    Param { name: "tls-key-file-pass", alias: None, flags: 0, default: "" },
    Param { name: "tls-client-cert-file", alias: None, flags: 0, default: "" },
    Param { name: "tls-client-key-file", alias: None, flags: 0, default: "" },
    Param { name: "tls-client-key-file-pass", alias: None, flags: 0, default: "" },
    Param { name: "tls-dh-params-file", alias: None, flags: 0, default: "" },
    Param { name: "tls-ca-cert-file", alias: None, flags: 0, default: "" },
    Param { name: "tls-ca-cert-dir", alias: None, flags: 0, default: "" },
    Param { name: "tls-protocols", alias: None, flags: 0, default: "" },
    Param { name: "tls-ciphers", alias: None, flags: 0, default: "" },
    Param { name: "tls-ciphersuites", alias: None, flags: 0, default: "" },
    Param { name: "dir", alias: None, flags: PROTECTED, default: "/" },
    Param { name: "save", alias: None, flags: 0, default: "" },
    Param { name: "client-output-buffer-limit", alias: None, flags: 0, default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60" },
    Param { name: "oom-score-adj-values", alias: None, flags: 0, default: "0 200 800" },
    Param { name: "notify-keyspace-events", alias: None, flags: 0, default: "" },
    Param { name: "bind", alias: None, flags: 0, default: "* -::*" },
    Param { name: "replicaof", alias: Some("slaveof"), flags: IMMUTABLE, default: "" },
    Param { name: "latency-tracking-info-percentiles", alias: None, flags: 0, default: "50 99 99.9" },
];
