//! Issue 35's property test, against a live server: a lab session on an
//! owner's redis-server 7.0.15 (a password, `maxmemory` with eviction,
//! keys of every type and a function library of the owner's) is sent
//! sequences of commands drawn *from the lab's command table* — every
//! (command, subcommand) pair the table allows, the ones it denies, and the
//! typed lines of the attacks — with hostile argument sizes: counts
//! and offsets near 2^29, 2^31, 2^62 and 2^63 of either sign, long values,
//! `numkeys` past argv, scripts that loop, hog memory or branch on `INFO`
//! and `TIME`.
//!
//! After every case the owner must be as the "done when" says:
//! it answered `PING` within 1 s throughout (a prober on a connection of
//! its own pings it all along), its keys (a `DUMP` of each) and its library
//! (`FUNCTION LIST … WITHCODE`) are as they were at the start and no key
//! outside the session's prefix appeared, its `used_memory` grew by no more
//! than the session's quota plus the session's script cache and a fixed
//! slack, and the backend (the router runs in this process) peaked at no
//! more than a fixed bound over its start.
//!
//! The draw is seeded: the same cases every run. The first commands of
//! each case walk the table's pairs in order, so every pair is sent at
//! least once (checked at the end), and each pair the table denies must
//! come back as the lab's refusal.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_backend::real::conn::RealConnection;
use locklab_backend::real::session::SessionLimits;
use locklab_backend::web::api::ApiState;
use locklab_core::reply::Reply;
use locklab_core::server::lab::Lab;
use locklab_core::server::table::{flags, Command, COMMANDS};
use locklab_tests::ws::{connect, send, serve, Ws};
use locklab_tests::{peak_rss, RedisServer};
use serde_json::{json, Value};

const PASSWORD: &str = "s3cret-owner-pw";
/// Cases, and commands in each.
const CASES: usize = 64;
const PER_CASE: usize = 8;
const SEED: u64 = 0x35_35_35;
/// The session's quota in this test: small, so a case can reach it.
const QUOTA: u64 = 8 << 20;
/// What else the owner may hold for the session: its ACL user, its
/// connections' buffers, the lock watch's reads. Fixed, and far below
/// what any broken bound adds (the attacks added hundreds of MB).
const MEMORY_SLACK: u64 = 8 << 20;
/// How far the backend's peak RSS may rise over the whole run.
const RSS_SLACK: u64 = 256 << 20;

/// splitmix64: a seeded, deterministic draw.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// One (command, subcommand) pair of the table, and whether the lab's
/// column allows it.
#[derive(Clone, Copy)]
struct Pair {
    cmd: &'static Command,
    sub: Option<&'static str>,
    allowed: bool,
}

/// Every pair of the table: each row, and each subcommand of a container
/// (allowed or not), as the table's `lab` column says.
fn pairs() -> Vec<Pair> {
    let mut out = Vec::new();
    for cmd in COMMANDS {
        match cmd.lab {
            Lab::Allow(_) | Lab::Admin(_) => out.push(Pair {
                cmd,
                sub: None,
                allowed: true,
            }),
            Lab::Deny(_) if cmd.subcommands.is_empty() => out.push(Pair {
                cmd,
                sub: None,
                allowed: false,
            }),
            Lab::Deny(_) => out.extend(cmd.subcommands.iter().map(|(s, _)| Pair {
                cmd,
                sub: Some(*s),
                allowed: false,
            })),
            Lab::Subs(listed) => out.extend(cmd.subcommands.iter().map(|(s, _)| Pair {
                cmd,
                sub: Some(*s),
                allowed: listed.iter().any(|(l, _)| l == s),
            })),
        }
    }
    out
}

/// The sizes the attacks used, and their neighbours.
const HOSTILE_NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "5",
    "-5",
    "1000",
    "1001",
    "-1001",
    "1048575",
    "1048576",
    "536870911",
    "536870912",
    "2147483647",
    "2147483648",
    "-20000000",
    "4611686018427387903",
    "-4611686018427387903",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
];

const WORDS: &[&str] = &[
    "COUNT",
    "count",
    "LIMIT",
    "WITHSCORES",
    "WITHVALUES",
    "NX",
    "XX",
    "PX",
    "EX",
    "KEEPTTL",
    "GET",
    "MATCH",
    "BYSCORE",
    "REV",
    "LEFT",
    "RIGHT",
    "TYPE",
    "-inf",
    "+inf",
];

/// Scripts a hostile user would try: loops, memory hogs, branches on what
/// only the real server has, calls the table refuses, hostile counts
/// inside Lua.
const SCRIPTS: &[&str] = &[
    "return 1",
    "while true do end",
    "redis.call('SET', KEYS[1], 1) while true do end",
    "redis.call('SET',KEYS[1],1) if string.find(redis.call('INFO','server'),'os:Linux',1,true) then while true do end end return 1",
    "redis.call('SET',KEYS[1],2) if tonumber(redis.call('TIME')[2]) % 1000 ~= 0 then while true do end end return 2",
    "pcall(function() if string.find(redis.call('INFO','server'),'os:Linux',1,true) then while true do end end end) return 3",
    "local s = string.rep('x', 2^16) for i = 1, 30 do s = s .. s end return #s",
    "return redis.call('HRANDFIELD', KEYS[1], '-4611686018427387903')",
    "return redis.call('SETRANGE', KEYS[1], '536870911', 'x')",
    "return redis.call(ARGV[1], KEYS[1], ARGV[2])",
    "return redis.call('SETBIT', KEYS[1], 4294967295, 1)",
    "return redis.call('SCAN', '0', 'COUNT', '2147483647')",
    "return redis.call('GET', 'owner:s0')",
    "return redis.call('FLUSHALL')",
    "for i = 1, 40 do redis.call('APPEND', KEYS[1], string.rep('x', 200000)) end return 1",
    "for i = 1, 100000 do redis.log(redis.LOG_WARNING, 'flood') end",
    "return redis.call('LRANGE', KEYS[1], 0, -1)",
];

/// Libraries for `FUNCTION LOAD`: one shadowing the owner's, one spinning
/// on `INFO`, one that is not a library.
const LIBRARIES: &[&str] = &[
    "#!lua name=ownerlib\nredis.register_function('ownerfn', function() return 'planted' end)",
    "#!lua name=spinlib\nredis.register_function('spin', function() if string.find(redis.call('INFO', 'server'), 'os:Linux', 1, true) then while true do end end return 1 end)",
    "#!lua name=x\nwhile true do end",
    "not a library",
];

/// The attack lines, typed as they were.
const ATTACKS: &[&str] = &[
    "SCRIPT DEBUG SYNC",
    "SCRIPT DEBUG YES",
    "HRANDFIELD h -4611686018427387903",
    "HRANDFIELD h -20000000 WITHVALUES",
    "SETRANGE big 536870911 x",
    "SETRANGE big 1048575 x",
    "SCAN 0 COUNT 2147483647",
    "SCAN 0 MATCH * COUNT 10 COUNT 100000",
    "SPOP s 100000000",
    "MEMORY DOCTOR",
    "MEMORY MALLOC-STATS",
    "OBJECT IDLETIME k",
    "OBJECT FREQ k",
    "KEYS *",
    "FLUSHALL",
    "FUNCTION FLUSH",
    "FUNCTION DELETE ownerlib",
    "SCRIPT KILL",
    "CONFIG SET maxmemory 1",
    "EVAL \"return redis.call(ARGV[1], KEYS[1], ARGV[2])\" 1 s SRANDMEMBER -5",
    "LRANGE l 0 -1",
    "LRANGE l -9223372036854775808 9223372036854775807",
    "ZRANGE z 0 -1 WITHSCORES",
    "ZRANGEBYSCORE z -inf +inf LIMIT 0 -1",
    "HGETALL h",
    "SMEMBERS s",
];

/// Session keys the draws name, so reads find data and types collide.
const KEYS: &[&str] = &["k", "h", "l", "s", "z", "big", "n", "lock"];

/// A console line's argument, quoted as redis-cli reads it.
fn quote(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('"');
    for c in arg.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A hostile argument, with at most `room` bytes of value.
fn hostile(rng: &mut Rng, room: usize) -> String {
    match rng.below(10) {
        0..=4 => (*rng.pick(HOSTILE_NUMBERS)).to_owned(),
        5 | 6 => (*rng.pick(WORDS)).to_owned(),
        7 => (*rng.pick(KEYS)).to_owned(),
        8 => "v".repeat(1 + rng.below(16)),
        _ => "x".repeat(*rng.pick(&[1000, 20_000, 60_000]).min(&room)),
    }
}

/// A line for `pair`, its arguments drawn for the row: keys from the
/// session's pool, scripts and libraries from the hostile lists, every
/// other argument hostile. Blocking commands and `WAIT` get a short
/// timeout: a session that blocks its own client forever is its own
/// business, and this test would wait on it.
fn draw_line(rng: &mut Rng, pair: Pair) -> String {
    let cmd = pair.cmd;
    let mut argv: Vec<String> = vec![cmd.name.to_uppercase()];
    if let Some(sub) = pair.sub {
        argv.push(sub.to_uppercase());
    }
    let scripted = matches!(cmd.keys, locklab_core::server::table::Keys::NumKeys { .. });
    if scripted {
        let body = if cmd.name.starts_with("fcall") {
            (*rng.pick(&["spin", "ownerfn", "nosuch"])).to_owned()
        } else if cmd.name.starts_with("evalsha") {
            locklab_core::server::script::sha1_hex(rng.pick(SCRIPTS).as_bytes())
        } else {
            (*rng.pick(SCRIPTS)).to_owned()
        };
        argv.push(body);
        let numkeys = *rng.pick(&["0", "1", "1", "2", "-1", "9223372036854775807", "2147483648"]);
        argv.push(numkeys.to_owned());
        for _ in 0..rng.below(3) + 1 {
            argv.push((*rng.pick(KEYS)).to_owned());
        }
        for _ in 0..rng.below(3) {
            argv.push(hostile(rng, 1000));
        }
    } else if matches!(
        (cmd.name, pair.sub),
        ("function", Some("load")) | ("script", Some("load"))
    ) {
        if cmd.name == "function" && rng.below(2) == 0 {
            argv.push("REPLACE".to_owned());
        }
        argv.push(match cmd.name {
            "function" => (*rng.pick(LIBRARIES)).to_owned(),
            _ => format!("{} --{}", rng.pick(SCRIPTS), "y".repeat(rng.below(30_000))),
        });
    } else {
        let min = cmd.arity.unsigned_abs() as usize;
        let argc = if cmd.arity < 0 { min + rng.below(4) } else { min };
        let mut room = 60_000usize;
        while argv.len() < argc.max(1) {
            let a = hostile(rng, room);
            room = room.saturating_sub(a.len());
            argv.push(a);
        }
        let probe: Vec<Vec<u8>> = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
        for i in cmd.key_indexes(&probe) {
            argv[i] = (*rng.pick(KEYS)).to_owned();
        }
        if cmd.flags & flags::BLOCKING != 0 || cmd.name == "wait" {
            if let Some(last) = argv.last_mut() {
                *last = "0.05".to_owned();
            }
        }
    }
    argv.iter()
        .enumerate()
        .map(|(i, a)| if i == 0 { a.clone() } else { quote(a) })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The owner's server: a password, `maxmemory` with `allkeys-lru` (what a
/// session's growth would evict is the owner's), keys of every type and a
/// library.
struct Owner {
    server: RedisServer,
    conn: RealConnection,
}

impl Owner {
    fn start() -> Owner {
        let server = RedisServer::start();
        let mut conn = RealConnection::open(&server.url()).unwrap();
        let mut lines: Vec<String> = vec![
            "CONFIG SET maxmemory 256mb".into(),
            "CONFIG SET maxmemory-policy allkeys-lru".into(),
            "DEBUG POPULATE 1000 owner:p 16".into(),
            "FUNCTION LOAD \"#!lua name=ownerlib\nredis.register_function('ownerfn', function() return 'owner' end)\""
                .into(),
        ];
        for i in 0..10 {
            lines.push(format!("SET owner:s{i} production-{i}"));
            lines.push(format!("HSET owner:h{i} f {i} g x"));
            lines.push(format!("RPUSH owner:l{i} a b {i}"));
            lines.push(format!("SADD owner:set{i} a b {i}"));
            lines.push(format!("ZADD owner:z{i} 1 a 2 b {i} c"));
        }
        lines.push(format!("CONFIG SET requirepass {PASSWORD}"));
        lines.push(format!("AUTH {PASSWORD}"));
        for line in &lines {
            let r = conn.execute(&locklab_core::cli::parse(line).unwrap()).unwrap();
            assert!(!r.is_error(), "{line}: {r:?}");
        }
        Owner { server, conn }
    }

    fn url(&self) -> String {
        format!("redis://default:{PASSWORD}@127.0.0.1:{}/", self.server.port())
    }

    fn run(&mut self, argv: &[&[u8]]) -> Reply {
        let argv: Vec<Vec<u8>> = argv.iter().map(|a| a.to_vec()).collect();
        self.conn.execute(&argv).unwrap()
    }

    fn used_memory(&mut self) -> u64 {
        let Reply::Bulk(text) = self.run(&[b"INFO", b"memory"]) else {
            panic!()
        };
        String::from_utf8_lossy(&text)
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:").and_then(|v| v.trim().parse().ok()))
            .unwrap()
    }

    /// Every key not under `prefix`, with its `DUMP`, sorted.
    fn keys_and_values(&mut self, prefix: &str) -> Vec<(Vec<u8>, Reply)> {
        // SCAN, not KEYS: the table denies KEYS, and the test checks that
        // no denied pair reached this server.
        let mut keys = Vec::new();
        let mut cursor = b"0".to_vec();
        loop {
            let Reply::Array(mut page) = self.run(&[b"SCAN", &cursor, b"COUNT", b"1000"]) else {
                panic!()
            };
            let (Some(Reply::Array(found)), Some(Reply::Bulk(next))) = (page.pop(), page.pop()) else {
                panic!()
            };
            keys.extend(found);
            if next == b"0" {
                break;
            }
            cursor = next;
        }
        let mut out: Vec<(Vec<u8>, Reply)> = keys
            .into_iter()
            .filter_map(|k| match k {
                Reply::Bulk(k) if !k.starts_with(prefix.as_bytes()) => Some(k),
                _ => None,
            })
            .map(|k| {
                let dump = self.run(&[b"DUMP", &k]);
                (k, dump)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The owner's library as `FUNCTION LIST` shows it, code included, and
    /// the names of every library on the server.
    fn libraries(&mut self) -> (Reply, Vec<String>) {
        let own = self.run(&[b"FUNCTION", b"LIST", b"LIBRARYNAME", b"ownerlib", b"WITHCODE"]);
        let Reply::Array(all) = self.run(&[b"FUNCTION", b"LIST"]) else {
            panic!()
        };
        let names = all
            .iter()
            .filter_map(|lib| match lib {
                Reply::Array(pairs) => pairs.chunks(2).find_map(|p| match p {
                    [Reply::Bulk(k), Reply::Bulk(v)] if k == b"library_name" => {
                        Some(String::from_utf8_lossy(v).into_owned())
                    }
                    _ => None,
                }),
                _ => None,
            })
            .collect();
        (own, names)
    }
}

/// Pings the owner on a connection of its own every 50 ms and keeps the
/// longest wait (a PING unanswered for 1 s counts as 1 s).
struct Prober {
    worst_ms: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Prober {
    fn start(url: String) -> Prober {
        let worst_ms = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (w, s) = (worst_ms.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut conn = RealConnection::open(&url).unwrap();
            conn.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            while !s.load(Ordering::Relaxed) {
                let t = Instant::now();
                let ok = matches!(conn.execute(&[b"PING".to_vec()]), Ok(Reply::Status(p)) if p == "PONG");
                let ms = if ok { t.elapsed().as_millis() as u64 } else { 1000 };
                w.fetch_max(ms, Ordering::Relaxed);
                if !ok {
                    // The connection is out of step after a timeout.
                    match RealConnection::open(&url) {
                        Ok(c) => conn = c,
                        Err(_) => std::thread::sleep(Duration::from_millis(200)),
                    }
                    let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Prober {
            worst_ms,
            stop,
            thread: Some(thread),
        }
    }

    /// The longest wait since the last call.
    fn take_worst(&self) -> u64 {
        self.worst_ms.swap(0, Ordering::Relaxed)
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Send one console line as client `A`: the text of the next reply to
/// `A` (every command gets one, in order: the case loop checks it with an
/// `ECHO` behind each line).
async fn line(ws: &mut Ws, text: &str) -> String {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    send(ws, json!({"type":"command","client":"A","line":text})).await;
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(60), ws.next())
            .await
            .unwrap_or_else(|_| panic!("no answer to {text:.200}"))
            .expect("socket open")
            .unwrap();
        let Message::Text(t) = msg else { continue };
        let v: Value = serde_json::from_str(&t).unwrap();
        if v["type"] == "reply" {
            return v["text"].as_str().unwrap_or_default().to_owned();
        }
    }
}

/// The session's keys each case starts from: one of each type.
async fn fixture(ws: &mut Ws) {
    for setup in [
        "DEL k h l s z big n lock",
        "SET k v",
        "HSET h f v f2 v2 f3 v3",
        "RPUSH l a b c d",
        "SADD s a b c d",
        "ZADD z 1 a 2 b 3 c",
    ] {
        line(ws, setup).await;
    }
}

/// The session's key prefix, from the socket's `hello`.
async fn prefix_of(ws: &mut Ws) -> String {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    send(ws, json!({"type":"command","client":"A","line":"PING"})).await;
    let mut prefix = None;
    loop {
        let Message::Text(t) = ws.next().await.unwrap().unwrap() else {
            continue;
        };
        let v: Value = serde_json::from_str(&t).unwrap();
        if v["type"] == "hello" {
            prefix = v["prefix"].as_str().map(str::to_owned);
        }
        if v["type"] == "reply" {
            return prefix.expect("hello before the first reply");
        }
    }
}

// long: one scenario — the owner's start state, then each drawn case and the five checks after it
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_sequences_from_the_table_leave_the_owner_whole() {
    let mut owner = Owner::start();
    let limits = SessionLimits {
        session_quota: QUOTA,
        ..SessionLimits::default()
    };
    let script_room = limits.max_script_bytes;
    let addr = serve(ApiState::with_limits(Some(owner.url()), limits)).await;
    let mut ws = connect(addr).await;
    let prefix = prefix_of(&mut ws).await;
    fixture(&mut ws).await;
    let keys = owner.keys_and_values(&prefix);
    assert!(keys.len() >= 1050, "{} owner keys", keys.len());
    let (library, _) = owner.libraries();
    let memory = owner.used_memory();
    owner.run(&[b"CONFIG", b"RESETSTAT"]);
    let prober = Prober::start(owner.url());
    // Linux: writing 5 to clear_refs resets the peak to the current RSS.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let rss = peak_rss();

    let table = pairs();
    assert!(table.len() * 2 > 100, "{} pairs", table.len());
    // The first commands of each case walk the table's pairs in order.
    let walked = table.len().div_ceil(CASES);
    assert!(walked < PER_CASE, "{} pairs", table.len());
    let mut sent = vec![false; table.len()];
    let mut rng = Rng(SEED);
    let mut walk = 0usize;
    let (mut refused, mut answered) = (0usize, 0usize);
    for case in 0..CASES {
        // Each case starts from the same keys, so an attack on a hash
        // meets a hash whatever the case before it deleted or retyped.
        fixture(&mut ws).await;
        let mut transcript = Vec::new();
        for i in 0..PER_CASE {
            let text = if i < walked {
                let which = walk % table.len();
                walk += 1;
                sent[which] = true;
                draw_line(&mut rng, table[which])
            } else if rng.below(4) == 0 {
                (*rng.pick(ATTACKS)).to_owned()
            } else {
                let pair = *rng.pick(&table);
                draw_line(&mut rng, pair)
            };
            let reply = line(&mut ws, &text).await;
            if reply.contains("ERR locklab") {
                refused += 1;
            } else {
                answered += 1;
            }
            transcript.push(format!("{:.160} → {:.160}", text, reply));
            // The next line's reply is its own: an ECHO right behind each
            // line comes back as itself (or queued, inside MULTI).
            let mark = format!("m{case}.{i}");
            let echo = line(&mut ws, &format!("ECHO {mark}")).await;
            assert!(
                echo == format!("\"{mark}\"") || echo == "QUEUED",
                "replies out of step after the last line: ECHO {mark} → {echo:.200}; case {case}:\n{}",
                transcript.join("\n")
            );
        }
        // Leave the client usable for the next case: out of a transaction
        // and of subscribed mode.
        for reset in ["DISCARD", "UNSUBSCRIBE", "PUNSUBSCRIBE", "UNWATCH"] {
            line(&mut ws, reset).await;
        }
        let at = || format!("case {case}:\n{}", transcript.join("\n"));
        let worst = prober.take_worst();
        assert!(worst < 1000, "the owner waited {worst} ms for a PING; {}", at());
        assert!(
            owner.keys_and_values(&prefix) == keys,
            "the owner's keys changed; {}",
            at()
        );
        let (now, names) = owner.libraries();
        assert_eq!(now, library, "the owner's library changed; {}", at());
        assert!(
            names.iter().all(|n| n == "ownerlib" || n.starts_with("lab_")),
            "{names:?}; {}",
            at()
        );
        let grown = owner.used_memory().saturating_sub(memory);
        assert!(
            grown <= QUOTA + script_room + MEMORY_SLACK,
            "the owner grew by {grown} bytes; {}",
            at()
        );
        let peak = peak_rss().saturating_sub(rss);
        assert!(
            peak <= RSS_SLACK,
            "the backend's RSS peaked {peak} bytes over its start; {}",
            at()
        );
    }
    assert!(sent.iter().all(|s| *s));
    // No pair the table denies ever reached the owner's server (its
    // statistics were reset before the session's first command, by the
    // one denied pair the test sends itself).
    let Reply::Bulk(stats) = owner.run(&[b"INFO", b"commandstats"]) else {
        panic!()
    };
    let stats = String::from_utf8_lossy(&stats).into_owned();
    for pair in table.iter().filter(|p| !p.allowed) {
        let name = match pair.sub {
            Some(sub) => format!("cmdstat_{}|{sub}:", pair.cmd.name),
            None => format!("cmdstat_{}:", pair.cmd.name),
        };
        // The test's own `CONFIG RESETSTAT` is the one denied pair it sends.
        let own = name == "cmdstat_config|resetstat:";
        assert_eq!(
            stats.contains(&name),
            own,
            "{name} reached the owner's server:\n{stats}"
        );
    }
    // The draw reached both sides of the wall.
    assert!(
        refused > CASES && answered > CASES,
        "{refused} refused, {answered} answered"
    );
    eprintln!(
        "{CASES} cases: {refused} refused, {answered} answered; owner grew {} bytes, backend peak +{} bytes",
        owner.used_memory().saturating_sub(memory),
        peak_rss().saturating_sub(rss)
    );
    drop(ws);
}
