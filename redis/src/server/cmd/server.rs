//! Server commands: PING, ECHO, INFO, CONFIG, DEBUG SLEEP, WAIT.
//!
//! `DEBUG SLEEP` and `WAIT` are the two ways a lone node lets time pass
//! while a client waits. On the simulator they move the virtual clock, so a
//! lesson can "sleep 30 seconds" instantly and deterministically.

use super::{int_arg, is, parse_i64};
use crate::reply::Reply;
use crate::server::{Ctx, Role};

/// `PING [message]`
pub(crate) fn ping(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    // A RESP2 subscriber gets ["pong", message] (pingCommand).
    if argv.len() <= 2 && cx.e.conn().is_some_and(|c| cx.e.pubsub.restricted(c)) {
        let msg = argv.get(1).cloned().unwrap_or_default();
        return Reply::Array(vec![Reply::bulk("pong"), Reply::Bulk(msg)]);
    }
    match argv.len() {
        1 => Reply::status("PONG"),
        2 => Reply::Bulk(argv[1].clone()),
        _ => Reply::error("ERR wrong number of arguments for 'ping' command"),
    }
}

/// `ECHO message`
pub(crate) fn echo(_cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    Reply::Bulk(argv[1].clone())
}

/// `TIME`: the node's clock as Unix seconds and microseconds (the
/// simulated clock has millisecond resolution).
pub(crate) fn time(cx: &mut Ctx<'_>, _argv: &[Vec<u8>]) -> Reply {
    let now = cx.e.now();
    Reply::Array(vec![
        Reply::Bulk((now / 1000).to_string().into_bytes()),
        Reply::Bulk(((now % 1000) * 1000).to_string().into_bytes()),
    ])
}

/// `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]` (debug.c): save the dataset
/// and functions, optionally flush them, and load the save back. Both are
/// kept in memory here, so a reload that flushes gives back what was
/// there; one that does not flush loads the save on top of itself, which
/// fails unless MERGE allows duplicates ("Error trying to load the RDB
/// dump", where redis-server 7.0 fails on the first library, and would
/// abort on a duplicate key). The simulator keeps no earlier save, so
/// NOSAVE reloads the present data.
pub(crate) fn debug_reload(cx: &mut Ctx<'_>, functions_loaded: bool, argv: &[Vec<u8>]) -> Reply {
    let (mut merge, mut flush) = (false, true);
    for opt in &argv[2..] {
        if is(opt, "MERGE") {
            merge = true;
        } else if is(opt, "NOFLUSH") {
            flush = false;
        } else if !is(opt, "NOSAVE") {
            return Reply::error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
        }
    }
    let has_keys = cx.e.dbs.iter().any(|db| !db.is_empty());
    if !flush && !merge && (functions_loaded || has_keys) {
        return Reply::error("ERR Error trying to load the RDB dump, check server logs.");
    }
    // The reload encodes every value afresh (`rdbLoadObject`).
    let lim = cx.e.config.encoding_limits();
    for db in &mut cx.e.dbs {
        db.settle_encodings(&lim);
    }
    Reply::ok()
}

/// C's `strtod` on a prefix: `DEBUG SLEEP` does no validation, so `abc`
/// sleeps for zero seconds and `0.5xyz` for half a second. Only the first
/// 64 bytes are looked at, so a huge argument costs nothing.
fn strtod_prefix(b: &[u8]) -> f64 {
    let s: String = String::from_utf8_lossy(&b[..b.len().min(64)]).trim_start().to_owned();
    (1..=s.len())
        .rev()
        .filter(|&i| s.is_char_boundary(i))
        .find_map(|i| s[..i].parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .unwrap_or(0.0)
}

/// `DEBUG SLEEP seconds`: the server stops for that long. Here the virtual
/// clock jumps ahead, which is how lessons make a lock expire on demand.
pub(crate) fn debug(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let sub = &argv[1];
    if is(sub, "SLEEP") && argv.len() == 3 {
        let seconds = strtod_prefix(&argv[2]);
        let ms = (seconds * 1_000_000.0) as i64 / 1000;
        cx.e.block_for(ms.max(0) as u64);
        return Reply::ok();
    }
    if is(sub, "SET-ACTIVE-EXPIRE") && argv.len() == 3 {
        cx.e.active_expire = atoi(&argv[2]) != 0;
        return Reply::ok();
    }
    if is(sub, "SET-DISABLE-DENY-SCRIPTS") && argv.len() == 3 {
        cx.e.script_deny_disabled = atoi(&argv[2]) != 0;
        return Reply::ok();
    }
    if is(sub, "PROTOCOL") && argv.len() == 3 {
        return debug_protocol(&argv[2]);
    }
    if is(sub, "QUICKLIST-PACKED-THRESHOLD") && argv.len() == 3 {
        // Where a quicklist stores a large element as a plain node: an
        // encoding detail the simulator's lists do not have, so only the
        // argument is checked (`quicklistisSetPackedThreshold`: at most
        // 4 GiB less 1 MiB; `memtoull`'s error too).
        let sz = std::str::from_utf8(&argv[2])
            .ok()
            .and_then(crate::server::config::memtoull);
        if sz.is_none_or(|sz| sz > (1u64 << 32) - (1 << 20)) {
            return Reply::error("ERR argument must be a memory value bigger than 1 and smaller than 4gb");
        }
        return Reply::ok();
    }
    if is(sub, "OBJECT") && argv.len() == 3 {
        return debug_object(cx, &argv[2]);
    }
    if is(sub, "DIGEST") && argv.len() == 2 {
        let dbs = cx.e.dbs.iter().enumerate().map(|(i, db)| {
            let keys: Box<dyn Iterator<Item = _>> = Box::new(db.keys());
            (i, keys)
        });
        return Reply::status(crate::server::digest::dataset_digest(dbs));
    }
    if is(sub, "DIGEST-VALUE") {
        // dictFind, not lookupKey: a logically expired key still counts.
        let db = &cx.e.dbs[cx.db];
        return Reply::Array(
            argv[2..]
                .iter()
                .map(|k| Reply::status(crate::server::digest::value_digest(db.get(k))))
                .collect(),
        );
    }
    Reply::error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
        String::from_utf8_lossy(sub)
    ))
}

/// `DEBUG OBJECT key` (debug.c): the value's header as redis-server
/// prints it. `dictFind`, not `lookupKey`: a logically expired key is still
/// shown. The encoding is `OBJECT ENCODING`'s; `serializedlength` is
/// `rdbSavedObjectLen`, the value as `rdbSaveObject` writes it, which is
/// DUMP's payload without its type byte and footer (strings over 20 bytes
/// LZF-compressed under `rdbcompression yes`, as there). The simulator keeps no object addresses or access
/// times: the address is made up from the key, `lru` is the LRU clock now
/// (`LRU_CLOCK`, seconds in 24 bits) and the idle time 0. A quicklist adds
/// its nodes as `_quicklistNodeAllowInsert` fills them.
fn debug_object(cx: &mut Ctx<'_>, key: &[u8]) -> Reply {
    let Some(entry) = cx.e.dbs[cx.db].get(key) else {
        return Reply::error("ERR no such key");
    };
    let encoding = if entry.is_raw_string() {
        "raw"
    } else {
        super::keys::encoding(&entry.value)
    };
    let refcount = match &entry.value {
        crate::server::db::Value::Str(v)
            if encoding == "int" && parse_i64(v).is_some_and(|n| (0..10000).contains(&n)) =>
        {
            i32::MAX
        }
        _ => 1,
    };
    let serialized = crate::server::rdb::dump_value(&entry.value, cx.e.config.rdb_compression()).len() - 1;
    let hash = key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let address = 0x7f00_0000_0000u64 | (hash & 0xff_ffff_fff8);
    let lru = (cx.e.now() / 1000) & ((1 << 24) - 1);
    let mut extra = String::new();
    if let crate::server::db::Value::List(l) = &entry.value {
        let nodes = crate::server::objsize::quicklist_nodes(l.into_iter());
        let fill = cx.e.config.number("list-max-listpack-size");
        let compressed = cx.e.config.number("list-compress-depth") != 0;
        extra = format!(
            " ql_nodes:{} ql_avg_node:{:.2} ql_listpack_max:{fill} ql_compressed:{} ql_uncompressed_size:{}",
            nodes.len(),
            l.len() as f64 / nodes.len().max(1) as f64,
            u8::from(compressed),
            nodes.iter().sum::<usize>()
        );
    }
    Reply::status(format!(
        "Value at:{address:#x} refcount:{refcount} encoding:{encoding} serializedlength:{serialized} lru:{lru} lru_seconds_idle:0{extra}"
    ))
}

/// C's `atoi`: optional blanks and sign, then digits, stopping at the
/// first other byte (`DEBUG SET-ACTIVE-EXPIRE` reads its flag with it).
fn atoi(b: &[u8]) -> i64 {
    let s = String::from_utf8_lossy(b);
    let s = s.trim_start();
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = rest
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| n.wrapping_mul(10).wrapping_add((d - b'0') as i64));
    if neg {
        -n
    } else {
        n
    }
}

/// `DEBUG PROTOCOL <type>` (debug.c): one reply of each RESP3 type, for
/// testing clients and the Lua conversions. Two differ: `attrib` sends only
/// the reply that follows redis-server's attribute (the node has no
/// attribute type; scripts never see attributes anyway), and `push` is
/// refused (it answers with two replies, which the node cannot).
fn debug_protocol(name: &[u8]) -> Reply {
    let ints = || (0..3).map(Reply::Integer).collect::<Vec<_>>();
    let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
    match lower.as_str() {
        "string" => Reply::bulk("Hello World"),
        "integer" => Reply::Integer(12345),
        "double" => Reply::Double("3.141".into()),
        "bignum" => Reply::BigNumber("1234567999999999999999999999999999999".into()),
        "null" => Reply::Nil,
        "array" => Reply::Array(ints()),
        "set" => Reply::Set(ints()),
        "map" => Reply::Map((0..3).map(|j| (Reply::Integer(j), Reply::Boolean(j == 1))).collect()),
        "attrib" => Reply::bulk("Some real reply following the attribute"),
        "push" => Reply::error("ERR DEBUG PROTOCOL push is not supported by the simulator"),
        "true" => Reply::Boolean(true),
        "false" => Reply::Boolean(false),
        "verbatim" => Reply::Verbatim { format: "txt".into(), text: b"This is a verbatim\nstring".to_vec() },
        _ => Reply::error(
            "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ),
    }
}

/// `WAIT numreplicas timeout`: block until that many replicas acknowledged
/// this connection's writes, or the timeout passes; reply how many did. A
/// lone node has none: `WAIT 0 t` answers 0 at once, `WAIT n t` answers 0
/// after `t` ms of virtual time — the node's one clock, so on a lone node
/// "A waited five seconds" is five seconds for everyone, as in a lesson.
/// (Hosts with real concurrent clients, `sim-server` and the world, answer
/// WAIT themselves.) Inside EXEC it answers at once, as redis-server does.
/// `WAIT n 0` would block forever on redis-server; the simulator refuses
/// rather than hang.
pub(crate) fn wait(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if cx.e.role() == Role::Replica {
        return Reply::error(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        );
    }
    let replicas = match int_arg(&argv[1]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let timeout = match parse_i64(&argv[2]) {
        Some(t) if t < 0 => return Reply::error("ERR timeout is negative"),
        Some(t) => t as u64,
        None => return Reply::error("ERR timeout is not an integer or out of range"),
    };
    let acked = 0;
    if acked >= replicas || cx.e.in_exec() {
        return Reply::Integer(acked);
    }
    if timeout == 0 {
        return Reply::error("ERR WAIT with timeout 0 would block forever: this simulated node has no replicas");
    }
    cx.e.block_for(timeout);
    Reply::Integer(acked)
}

/// `INFO [section ...]`: the sections a lock lab needs — server, clients,
/// stats, replication, keyspace — in redis-server's layout (`# Name`,
/// `field:value` lines, CRLF, a blank line between sections).
pub(crate) fn info(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    const ALL: [&str; 8] = [
        "server",
        "clients",
        "memory",
        "stats",
        "replication",
        "commandstats",
        "errorstats",
        "keyspace",
    ];
    let wanted: Vec<String> = argv[1..]
        .iter()
        .map(|a| String::from_utf8_lossy(a).to_lowercase())
        .collect();
    let all = wanted.iter().any(|w| matches!(w.as_str(), "all" | "everything"));
    // `commandstats` is not a default section (genRedisInfoString).
    let default = wanted.is_empty() || wanted.iter().any(|w| w == "default");
    let mut out = String::new();
    for section in ALL {
        let by_default = default && section != "commandstats";
        if !all && !by_default && !wanted.iter().any(|w| w == section) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        section_text(cx, section, &mut out);
    }
    Reply::Bulk(out.into_bytes())
}

fn kv(out: &mut String, k: &str, v: impl std::fmt::Display) {
    use std::fmt::Write;
    let _ = write!(out, "{k}:{v}\r\n");
}

/// `genRedisInfoStringCommandStats`: every command that was called, failed
/// or rejected since the start or CONFIG RESETSTAT (redis-server walks its
/// command dict, whose order its seeded hash makes differ per process; here
/// by name).
fn commandstats(stats: &crate::server::InfoStats, out: &mut String) {
    out.push_str("# Commandstats\r\n");
    for (name, c) in &stats.commands {
        let per_call = if c.calls == 0 {
            0.0
        } else {
            c.usec as f32 / c.calls as f32
        };
        kv(
            out,
            &format!("cmdstat_{name}"),
            format_args!(
                "calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}",
                c.calls, c.usec, c.rejected_calls, c.failed_calls
            ),
        );
    }
}

fn section_text(cx: &mut Ctx<'_>, section: &str, out: &mut String) {
    let e = &*cx.e;
    match section {
        "server" => {
            out.push_str("# Server\r\n");
            kv(out, "redis_version", e.profile().version());
            kv(out, "redis_mode", "standalone");
            kv(out, "os", "locklab simulator");
            kv(out, "arch_bits", 64);
            kv(out, "locklab_profile", e.profile());
            kv(out, "server_time_usec", e.now() * 1000);
            kv(out, "hz", 10);
        }
        "clients" => {
            out.push_str("# Clients\r\n");
            kv(out, "connected_clients", e.clients());
            kv(out, "blocked_clients", e.blocked_count());
        }
        "memory" => {
            // The estimate of `server::memory`, not an allocator's count.
            out.push_str("# Memory\r\n");
            kv(out, "used_memory", e.used_memory());
            kv(out, "used_memory_startup", crate::server::memory::STARTUP_BYTES);
            kv(out, "maxmemory", e.config.maxmemory());
            kv(out, "maxmemory_policy", e.config.maxmemory_policy());
        }
        "stats" => {
            out.push_str("# Stats\r\n");
            let s = e.stats();
            kv(out, "total_connections_received", s.connections_received);
            kv(out, "total_commands_processed", s.commands_processed);
            kv(out, "expired_keys", s.expired_keys);
            kv(out, "evicted_keys", s.evicted_keys);
            kv(out, "keyspace_hits", s.keyspace_hits);
            kv(out, "keyspace_misses", s.keyspace_misses);
            kv(out, "total_error_replies", s.total_error_replies);
        }
        "commandstats" => commandstats(e.stats(), out),
        "errorstats" => {
            // server.c `genRedisInfoString`: one line per error code seen
            // since the start or CONFIG RESETSTAT.
            out.push_str("# Errorstats\r\n");
            for (code, n) in &e.stats().error_replies {
                kv(out, &format!("errorstat_{code}"), format_args!("count={n}"));
            }
        }
        "replication" => {
            out.push_str("# Replication\r\n");
            kv(out, "role", if e.role() == Role::Master { "master" } else { "slave" });
            if let Some((host, port)) = &e.repl.master {
                // A replica of a master it never reaches (`repl::replicaof`).
                kv(out, "master_host", String::from_utf8_lossy(host));
                kv(out, "master_port", port);
                kv(out, "master_link_status", "down");
                kv(out, "master_last_io_seconds_ago", -1);
                kv(out, "master_sync_in_progress", 0);
            }
            kv(out, "connected_slaves", e.repl.count());
        }
        "keyspace" => {
            out.push_str("# Keyspace\r\n");
            let now = e.now();
            for (i, db) in e.dbs().iter().enumerate().filter(|(_, db)| !db.is_empty()) {
                let ttls: Vec<u64> = db
                    .keys()
                    .filter_map(|(_, en)| en.expires_at)
                    .map(|at| at.saturating_sub(now))
                    .collect();
                let avg = ttls.iter().sum::<u64>().checked_div(ttls.len() as u64).unwrap_or(0);
                kv(
                    out,
                    &format!("db{i}"),
                    format_args!("keys={},expires={},avg_ttl={}", db.len(), db.expires_count(), avg),
                );
            }
        }
        _ => {}
    }
}

/// `CONFIG GET|SET|RESETSTAT|REWRITE|HELP` (config.c) over the node's
/// parameter table. It is a node command, not a connection's, so that it
/// queues inside MULTI and runs at EXEC as on redis-server (the Redis test
/// suite toggles `maxmemory` from one client while another is in MULTI).
pub(crate) fn config(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let sub = String::from_utf8_lossy(&argv[1]).to_lowercase();
    let arity: i32 = match sub.as_str() {
        "get" => -3,
        "set" => -4,
        _ => 2,
    };
    let argc = argv.len() as i32;
    if (arity > 0 && argc != arity) || (arity < 0 && argc < -arity) {
        return Reply::error(format!("ERR wrong number of arguments for 'config|{sub}' command"));
    }
    match sub.as_str() {
        "get" => Reply::Map(
            cx.e.config
                .get(&argv[2..])
                .into_iter()
                .map(|(name, value)| (Reply::Bulk(name), Reply::Bulk(value.into_bytes())))
                .collect(),
        ),
        "set" => match cx.e.config.set(&argv[2..]) {
            Ok(()) => Reply::ok(),
            Err(e) => Reply::Error(format!("ERR {e}")),
        },
        "resetstat" => {
            cx.e.stats = crate::server::InfoStats::default();
            Reply::ok()
        }
        "rewrite" => Reply::error("ERR The server is running without a config file"),
        _ => Reply::Array(
            [
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "    Return parameters matching the glob-like <pattern> and their values.",
                "SET <directive> <value>",
                "    Set the configuration <directive> to <value>.",
                "RESETSTAT",
                "    Reset statistics reported by the INFO command.",
                "REWRITE",
                "    Rewrite the configuration file.",
                "HELP",
                "    Prints this help.",
            ]
            .iter()
            .map(|l| Reply::status(*l))
            .collect(),
        ),
    }
}

#[cfg(test)]
mod reload_tests {
    use crate::server::{ConnId, Node, Profile, EPOCH_MS};
    use crate::Reply;

    fn run(n: &mut Node, args: &[&str]) -> Reply {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        n.execute(ConnId(1), &argv)
    }

    #[test]
    fn debug_reload_keeps_data_and_functions_and_refuses_duplicates_without_merge() {
        let mut n = Node::new(Profile::V7_0);
        assert_eq!(
            run(&mut n, &["DEBUG", "RELOAD", "NOFLUSH"]),
            Reply::ok(),
            "nothing to duplicate"
        );
        run(&mut n, &["SET", "k", "v"]);
        let lib = "#!lua name=test\nredis.register_function('test', function() return 'hello' end)";
        run(&mut n, &["FUNCTION", "LOAD", lib]);
        assert_eq!(run(&mut n, &["DEBUG", "RELOAD"]), Reply::ok());
        assert_eq!(run(&mut n, &["FCALL", "test", "0"]), Reply::bulk(b"hello".to_vec()));
        assert_eq!(run(&mut n, &["GET", "k"]), Reply::bulk(b"v".to_vec()));
        assert_eq!(
            run(&mut n, &["DEBUG", "RELOAD", "NOFLUSH"]),
            Reply::error("ERR Error trying to load the RDB dump, check server logs.")
        );
        assert_eq!(
            run(&mut n, &["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"]),
            Reply::ok()
        );
        assert_eq!(
            run(&mut n, &["DEBUG", "RELOAD", "FAST"]),
            Reply::error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
        );
    }

    #[test]
    fn time_reads_the_node_clock() {
        let mut n = Node::new(Profile::V7_0);
        n.set_time(EPOCH_MS + 1_234);
        assert_eq!(
            run(&mut n, &["TIME"]),
            Reply::Array(vec![
                Reply::bulk((EPOCH_MS / 1000 + 1).to_string().into_bytes()),
                Reply::bulk(b"234000".to_vec()),
            ])
        );
    }
}

#[cfg(test)]
mod errorstats_tests {
    use crate::server::{ConnId, Node, Profile};
    use crate::Reply;

    fn run(n: &mut Node, args: &[&str]) -> Reply {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        n.execute(ConnId(1), &argv)
    }

    fn errorstats(n: &mut Node) -> String {
        match run(n, &["INFO", "errorstats"]) {
            Reply::Bulk(b) => String::from_utf8(b).expect("utf-8"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_replies_are_counted_by_code_until_resetstat() {
        let mut n = Node::new(Profile::V7_0);
        run(
            &mut n,
            &["EVAL", "return redis.error_reply('MY_ERR_CODE custom msg')", "0"],
        );
        run(&mut n, &["EVAL", "return redis.error_reply('')", "0"]);
        run(&mut n, &["SET", "k", "v"]);
        run(&mut n, &["INCR", "k"]);
        run(&mut n, &["MULTI"]);
        run(&mut n, &["INCR", "k"]);
        run(&mut n, &["LPUSH", "k", "x"]);
        run(&mut n, &["EXEC"]);
        assert_eq!(
            errorstats(&mut n),
            "# Errorstats\r\nerrorstat_ERR:count=3\r\nerrorstat_MY_ERR_CODE:count=1\r\nerrorstat_WRONGTYPE:count=1\r\n"
        );
        assert_eq!(run(&mut n, &["CONFIG", "RESETSTAT"]), Reply::ok());
        assert_eq!(errorstats(&mut n), "# Errorstats\r\n");
    }
}

#[cfg(test)]
mod script_time_tests {
    use crate::server::{ConnId, Node, Profile};
    use crate::Reply;

    fn run(n: &mut Node, args: &[&str]) -> Reply {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        n.execute(ConnId(1), &argv)
    }

    #[test]
    fn a_script_blocks_the_time_until_it_ends() {
        // unit/scripting "Script block the time during execution".
        let mut n = Node::new(Profile::V7_0);
        run(&mut n, &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"]);
        let body = "redis.call('SET', 'key', 'value', 'PX', '1') \
                    redis.call('DEBUG', 'SLEEP', '0.01') \
                    return redis.call('EXISTS', 'key')";
        assert_eq!(run(&mut n, &["EVAL", body, "0"]), Reply::Integer(1));
        assert_eq!(run(&mut n, &["EXISTS", "key"]), Reply::Integer(0));
    }
}
