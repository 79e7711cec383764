//! Every script a session sends is run on core's simulator first.
//!
//! # Why
//!
//! A script owns redis-server while it runs: `EVAL "while true do end" 0`
//! makes it answer `BUSY` to everybody, `string.rep('x', 2^30)` grows its
//! Lua heap by gigabytes, a loop of `redis.log` fills the owner's log, and
//! Redis has no limit on any of them. `SCRIPT KILL` (see
//! [`watchdog`](super::watchdog)) ends a runaway only if it has not written
//! yet — after one write it is `UNKILLABLE` and only `SHUTDOWN NOSAVE`
//! stops it, which the lab will never send to someone's own server.
//!
//! core's simulator runs the same Lua 5.1 with Redis's API, answers as
//! redis-server 7.0.15 does (the differential suites prove it), and stops a
//! script at a work budget ([`INSTRUCTION_LIMIT`] units: Lua instructions
//! plus the bytes and items its builtins and commands process, about a
//! tenth of a second) and a memory ceiling ([`MEMORY_LIMIT_BYTES`]). So before a
//! script reaches Redis it runs here, on a copy of the session's own keys:
//! one that the simulator had to stop, that called `redis.log` for more than
//! [`SessionLimits::max_log_bytes`](super::SessionLimits), or that called a command the
//! simulator does not have (so its run on Redis could go another way) is
//! refused and never sent. `MULTI … EXEC` is checked whole at `EXEC`, as
//! the state a queued script sees depends on what was queued before it.
//!
//! The copy is made of the keys the session has named in its commands
//! (and those its checked scripts created), read in one `EVAL` on the admin
//! connection: strings and hashes with their TTLs. Nothing here scans the
//! server's keyspace, which may be large and is not the lab's.

use std::collections::BTreeSet;

use locklab_core::reply::Reply;
use locklab_core::server::script::bounded::{is_straight_line, literal_commands};
use locklab_core::server::script::{logged_bytes, INSTRUCTION_LIMIT, MEMORY_LIMIT_BYTES};
use locklab_core::server::table;
use locklab_core::server::{ConnId, Node, Profile, ScriptCallCheck, ScriptFence};

use super::sandbox::{script_call_allowed, script_call_allowed_to_run};
use super::Scripts;

/// What the check says about a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send it.
    Send,
    /// Do not send it; this is Redis's answer (a `NOSCRIPT` for a script
    /// this session never loaded, a function it never loaded, metadata
    /// Redis refuses).
    Answer(Reply),
    /// Do not send it: why.
    Refuse(String),
}

/// One key of the session as the snapshot read it (its name without the
/// session's prefix): its type, its contents as the command that makes it
/// again takes them, and its `PTTL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotEntry {
    pub key: Vec<u8>,
    pub kind: Kind,
    /// A string's value; a hash's fields and values, a list's elements in
    /// order, a set's members, a sorted set's score and member pairs.
    pub items: Vec<Vec<u8>>,
    pub pttl: i64,
}

/// The types the snapshot copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Hash,
    List,
    Set,
    Zset,
}

impl Kind {
    fn parse(name: &[u8]) -> Option<Kind> {
        Some(match name {
            b"string" => Kind::String,
            b"hash" => Kind::Hash,
            b"list" => Kind::List,
            b"set" => Kind::Set,
            b"zset" => Kind::Zset,
            _ => return None,
        })
    }

    /// The command that makes the key again from its items.
    fn restore(self) -> &'static [u8] {
        match self {
            Kind::String => b"SET",
            Kind::Hash => b"HSET",
            Kind::List => b"RPUSH",
            Kind::Set => b"SADD",
            Kind::Zset => b"ZADD",
        }
    }
}

/// The simulator a session checks its scripts on, and the keys it copies.
pub struct Preflight {
    node: Node,
    conn: ConnId,
    keys: BTreeSet<Vec<u8>>,
    max_keys: usize,
    max_log_bytes: u64,
    /// How the session's scripts reach its servers.
    scripts: Scripts,
}

/// A script's run on the simulator for a server the lab does not own:
/// the reply the session sees, and the writes to apply there.
#[derive(Debug, PartialEq, Eq)]
pub struct Simulated {
    pub reply: Reply,
    /// The writes as the simulator propagated them (keys as typed),
    /// Redis's rewrites of non-deterministic commands included.
    pub writes: Vec<Vec<Vec<u8>>>,
}

/// One declared key of a script as read from the server: its name as
/// typed, its `DUMP` payload (`None`: no such key) and its `PTTL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dumped {
    pub key: Vec<u8>,
    pub payload: Option<Vec<u8>>,
    pub pttl: i64,
}

impl std::fmt::Debug for Preflight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preflight")
            .field("keys", &self.keys.len())
            .finish_non_exhaustive()
    }
}

/// Does running `argv` run Lua code (or could, inside `EXEC`)?
pub fn runs_lua(argv: &[Vec<u8>]) -> bool {
    let is = |i: usize, w: &str| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
    ["eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"]
        .iter()
        .any(|w| is(0, w))
        || (is(0, "function") && is(1, "load"))
}

impl Preflight {
    pub fn new(max_keys: usize, max_log_bytes: u64, scripts: Scripts) -> Self {
        let mut node = Node::new(Profile::V7_0);
        let conn = node.connect();
        Preflight {
            node,
            conn,
            keys: BTreeSet::new(),
            max_keys,
            max_log_bytes,
            scripts,
        }
    }

    /// Must `argv` be judged on the simulator before it goes to Redis?
    /// Every command that runs Lua, except an `EVAL` of a straight-line
    /// script ([`is_straight_line`]: no loop, no function, no string
    /// library, a few calls), which cannot run long, grow the heap or log
    /// whatever the keys hold; it goes out as a plain command does, with no
    /// copy of the keys first and no watchdog (it cannot outrun one). This
    /// is what lets the compare-and-delete release cost one round trip like
    /// the `SET` before it. Under `--scripts=run` a straight-line script
    /// must also name each command it calls with a literal the fence allows
    /// ([`literal_commands`]): `redis.call(ARGV[1], …)` (issue 35, B8)
    /// could call anything, so it takes the pre-flight, whose fence sees
    /// the command. A session on a server the lab does not own by default
    /// never sends a script ([`Scripts::Simulated`]): this is not asked.
    pub fn needs_check(&self, argv: &[Vec<u8>]) -> bool {
        let is = |w: &str| argv.first().is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
        let Some(body) = argv.get(1).filter(|_| is("eval") || is("eval_ro")) else {
            return runs_lua(argv);
        };
        let straight = match self.scripts {
            Scripts::Run => literal_commands(body).is_some_and(|names| {
                names
                    .iter()
                    .all(|n| script_call_allowed_to_run(std::slice::from_ref(n)).is_ok())
            }),
            Scripts::Managed => is_straight_line(body),
            // Nothing goes out without the simulator (inside MULTI, where a
            // script cannot be simulated, this refuses the transaction).
            Scripts::Simulated => false,
        };
        !straight
    }

    /// The fence a script runs in on the simulator: under `--scripts=run`,
    /// no command that reads the server's own state; on a server the lab
    /// does not own by default, the lab's table and the declared `keys`.
    fn fence(&self, keys: Option<BTreeSet<Vec<u8>>>) -> Option<ScriptFence> {
        let allow: ScriptCallCheck = match self.scripts {
            Scripts::Managed => return None,
            Scripts::Run => script_call_allowed_to_run,
            Scripts::Simulated => script_call_allowed,
        };
        Some(ScriptFence {
            keys,
            allow: Some(allow),
            breach: None,
        })
    }

    /// Remember the keys `argv` names (the table's key positions), so the
    /// next check copies them.
    pub fn track(&mut self, argv: &[Vec<u8>]) {
        let Some(cmd) = argv.first().and_then(|n| table::find(n, Profile::V8_4)) else {
            return;
        };
        for i in cmd.key_indexes(argv) {
            if self.keys.len() > self.max_keys {
                return;
            }
            self.keys.insert(argv[i].clone());
        }
    }

    /// The keys to copy before a check, or why there are too many.
    pub fn keys(&self) -> Result<Vec<Vec<u8>>, String> {
        if self.keys.len() > self.max_keys {
            return Err(format!(
                "the session has named more than {} keys, too many to copy for the check every script gets \
                 before it runs on Redis",
                self.max_keys
            ));
        }
        Ok(self.keys.iter().cloned().collect())
    }

    /// Run `batch` (one command, or a transaction's queued commands) on a
    /// copy of the session's keys, at `now_ms` (Unix ms: the real server's
    /// `TIME`, so a script that waits for a date behaves the same here),
    /// and judge it.
    pub fn check(&mut self, now_ms: u64, snapshot: &[SnapshotEntry], batch: &[Vec<Vec<u8>>]) -> Verdict {
        let c = self.conn;
        self.node.set_time(now_ms);
        self.node.execute(c, &[b"FLUSHALL".to_vec()]);
        for e in snapshot {
            let mut argv = vec![e.kind.restore().to_vec(), e.key.clone()];
            argv.extend(e.items.iter().cloned());
            self.node.execute(c, &argv);
            if e.pttl > 0 {
                self.node.execute(
                    c,
                    &[b"PEXPIRE".to_vec(), e.key.clone(), e.pttl.to_string().into_bytes()],
                );
            }
        }
        let (log0, unknown0) = (logged_bytes(), self.node.unknown_script_calls());
        self.node.set_script_fence(self.fence(None));
        let transaction = batch.len() > 1;
        if transaction {
            self.node.execute(c, &[b"MULTI".to_vec()]);
        }
        let mut replies: Vec<Reply> = batch.iter().map(|argv| self.node.execute(c, argv)).collect();
        if transaction {
            replies = match self.node.execute(c, &[b"EXEC".to_vec()]) {
                Reply::Array(r) => r,
                other => vec![other],
            };
        }
        let logged = logged_bytes().saturating_sub(log0);
        let breach = self.node.take_fence_breach();
        self.node.set_script_fence(None);
        let verdict = match breach {
            Some(why) => Verdict::Refuse(why),
            None => self.judge(
                &replies,
                logged,
                self.node.unknown_script_calls() > unknown0,
                !transaction,
            ),
        };
        // Keys a checked script made without naming them: copy them next time.
        if let Reply::Array(keys) = self.node.execute(c, &[b"KEYS".to_vec(), b"*".to_vec()]) {
            for k in keys {
                if let Reply::Bulk(k) = k {
                    if self.keys.len() <= self.max_keys {
                        self.keys.insert(k);
                    }
                }
            }
        }
        verdict
    }

    /// Run `argv` (a script, keys as typed) on the simulator for a server
    /// the lab does not own ([`Scripts::Simulated`]): on the declared keys
    /// as `dumped` read them (`DUMP` and `PTTL` under `WATCH`), at `now_ms`
    /// (the server's `TIME`), fenced to those keys and the lab's table.
    /// `Ok`: the reply, and the writes the simulator propagated — checked
    /// to make the same keys again when replayed on the keys as read, so a
    /// write the simulator does not express as commands is never half sent.
    /// `Err`: why the lab will not apply it.
    pub fn simulate(&mut self, now_ms: u64, dumped: &[Dumped], argv: &[Vec<u8>]) -> Result<Simulated, String> {
        let keys: BTreeSet<Vec<u8>> = dumped.iter().map(|d| d.key.clone()).collect();
        self.node.record_propagation(true);
        self.node.set_time(now_ms);
        self.restore(dumped)?;
        let (log0, unknown0) = (logged_bytes(), self.node.unknown_script_calls());
        self.node.set_script_fence(self.fence(Some(keys.clone())));
        let reply = self.node.execute(self.conn, argv);
        let breach = self.node.take_fence_breach();
        self.node.set_script_fence(None);
        let writes: Vec<Vec<Vec<u8>>> = self.node.take_propagated().into_iter().flatten().collect();
        let logged = logged_bytes().saturating_sub(log0);
        let verdict = match breach {
            Some(why) => Verdict::Refuse(why),
            None => self.judge(
                std::slice::from_ref(&reply),
                logged,
                self.node.unknown_script_calls() > unknown0,
                true,
            ),
        };
        let result = match verdict {
            Verdict::Refuse(why) => Err(why),
            Verdict::Send | Verdict::Answer(_) => self
                .replays(dumped, &keys, &writes)
                .map(|()| Simulated { reply, writes }),
        };
        self.node.record_propagation(false);
        result
    }

    /// The simulator's keyspace as `dumped` says (other keys gone), and
    /// nothing of that left in the replication stream.
    fn restore(&mut self, dumped: &[Dumped]) -> Result<(), String> {
        let c = self.conn;
        self.node.execute(c, &[b"FLUSHALL".to_vec()]);
        for d in dumped {
            let Some(payload) = &d.payload else { continue };
            let ttl = d.pttl.max(0).to_string().into_bytes();
            let argv = [
                b"RESTORE".to_vec(),
                d.key.clone(),
                ttl,
                payload.clone(),
                b"REPLACE".to_vec(),
            ];
            if let Reply::Error(e) = self.node.execute(c, &argv) {
                return Err(format!(
                    "the lab's simulator cannot load the key '{}' as your Redis dumped it: {e}",
                    String::from_utf8_lossy(&d.key)
                ));
            }
        }
        self.node.take_propagated();
        Ok(())
    }

    /// Do `writes` make `keys` what the script's run made them, when
    /// replayed on the keys as read? Compared by `DEBUG DIGEST-VALUE`
    /// (the value, whatever its encoding) and `PEXPIRETIME`. Leaves the
    /// simulator with the script's result either way.
    ///
    /// Writes that only delete, and delete every key the script declared
    /// (a lock's compare-and-delete release: `DEL lock`), replay to no key
    /// at all whatever the keys held: then the script's result is checked
    /// to be that (one `EXISTS`) instead of replayed (issue 41: the replay,
    /// a restore, the writes and two digests, was a third of the check).
    fn replays(&mut self, dumped: &[Dumped], keys: &BTreeSet<Vec<u8>>, writes: &[Vec<Vec<u8>>]) -> Result<(), String> {
        if deletes_all(keys, writes) {
            let mut exists = vec![b"EXISTS".to_vec()];
            exists.extend(keys.iter().cloned());
            if self.node.execute(self.conn, &exists) == Reply::Integer(0) {
                return Ok(());
            }
        }
        let after = self.digests(keys);
        self.restore(dumped)?;
        self.node.apply_replicated(writes);
        self.node.take_propagated();
        if self.digests(keys) == after {
            return Ok(());
        }
        Err("the lab cannot express what this script writes as commands for your Redis, so it is not applied".into())
    }

    // (digests of every key: value and expiry)
    fn digests(&mut self, keys: &BTreeSet<Vec<u8>>) -> Vec<Reply> {
        let c = self.conn;
        let mut out = Vec::with_capacity(keys.len() * 2);
        for k in keys {
            out.push(
                self.node
                    .execute(c, &[b"DEBUG".to_vec(), b"DIGEST-VALUE".to_vec(), k.clone()]),
            );
            out.push(self.node.execute(c, &[b"PEXPIRETIME".to_vec(), k.clone()]));
        }
        out
    }

    fn judge(&self, replies: &[Reply], logged: u64, unknown: bool, alone: bool) -> Verdict {
        for r in replies {
            let Reply::Error(text) = r else { continue };
            if text.contains("the simulator stopped it after") || text.contains("FUNCTION LOAD timeout") {
                return Verdict::Refuse(format!(
                    "it did not finish within {INSTRUCTION_LIMIT} units of work (Lua instructions plus the bytes \
                     its builtins and commands process) on the lab's simulator, so on \
                     Redis it would hold the server (BUSY) for everyone"
                ));
            }
            if text.contains("Lua memory passed") {
                return Verdict::Refuse(format!(
                    "its Lua memory passed {} MiB on the lab's simulator",
                    MEMORY_LIMIT_BYTES >> 20
                ));
            }
        }
        if unknown {
            return Verdict::Refuse(
                "it calls a command the lab's simulator does not have, so the lab cannot check what it would do \
                 to the server"
                    .into(),
            );
        }
        if logged > self.max_log_bytes {
            return Verdict::Refuse(format!(
                "it writes {logged} bytes with redis.log, more than the {} a lab session may write to the server's log",
                self.max_log_bytes
            ));
        }
        // Answers the simulator gives for the session's own state, which is
        // all a session may reach: a script or function it never loaded,
        // a library Redis would refuse.
        if alone {
            if let Some(Reply::Error(text)) = replies.first() {
                if text.starts_with("NOSCRIPT") || text == "ERR Function not found" {
                    return Verdict::Answer(Reply::Error(text.clone()));
                }
            }
        }
        Verdict::Send
    }

    /// Keep the simulator's script cache and libraries as the session's
    /// are on Redis: after Redis accepted `argv`, the same on the
    /// simulator (a checked `EVAL` or `FUNCTION LOAD` already did it). An
    /// `EVAL` that was not checked (`checked`: it was, as [`needs_check`]
    /// decided when it was prepared — not asked again, which would read
    /// the script once more) is cached as Redis caches it, also when it
    /// failed at run time (`evalGenericCommand` compiles first), so a later
    /// `EVALSHA` of it is not taken for a `NOSCRIPT`.
    pub fn mirror(&mut self, argv: &[Vec<u8>], real: &Reply, checked: bool) {
        let is = |i: usize, w: &str| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
        if (is(0, "eval") || is(0, "eval_ro")) && !checked {
            // A script that does not compile is refused by both alike.
            self.node
                .execute(self.conn, &[b"SCRIPT".to_vec(), b"LOAD".to_vec(), argv[1].clone()]);
            return;
        }
        if matches!(real, Reply::Error(_)) {
            return;
        }
        if is(0, "script") && (is(1, "load") || is(1, "flush"))
            || is(0, "function") && (is(1, "delete") || is(1, "load"))
        {
            self.node.execute(self.conn, argv);
        }
    }

    /// The answer the simulator gives to `argv` on its own (for a
    /// `FUNCTION LOAD` whose metadata the lab will not send).
    pub fn answer(&mut self, argv: &[Vec<u8>]) -> Reply {
        self.node.execute(self.conn, argv)
    }
}

/// The admin script that reads the session's keys for a check: for each
/// existing key of a type the simulator copies, `{i, type, pttl, items}`
/// (items as [`SnapshotEntry::items`]). A key too big to copy (a value over 1 MiB,
/// more than 10 000 items) makes it answer `toobig`.
pub const SNAPSHOT_LUA: &str = "local out = {} \
local size = {hash = 'HLEN', list = 'LLEN', set = 'SCARD', zset = 'ZCARD'} \
for i, k in ipairs(KEYS) do \
  local t = redis.call('TYPE', k)['ok'] \
  local p = redis.call('PTTL', k) \
  if t == 'string' then \
    if redis.call('STRLEN', k) > 1048576 then return 'toobig' end \
    out[#out + 1] = {i, t, p, {redis.call('GET', k)}} \
  elseif size[t] then \
    if redis.call(size[t], k) > 10000 then return 'toobig' end \
    local items \
    if t == 'hash' then items = redis.call('HGETALL', k) \
    elseif t == 'list' then items = redis.call('LRANGE', k, 0, -1) \
    elseif t == 'set' then items = redis.call('SMEMBERS', k) \
    else \
      local flat = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES') \
      items = {} \
      for j = 1, #flat, 2 do items[#items + 1] = flat[j + 1] items[#items + 1] = flat[j] end \
    end \
    out[#out + 1] = {i, t, p, items} \
  end \
end \
return out";

/// The entries of a [`SNAPSHOT_LUA`] reply; `keys` are the names it was
/// asked for, without the prefix.
pub fn parse_snapshot(keys: &[Vec<u8>], reply: &Reply) -> Result<Vec<SnapshotEntry>, String> {
    let items = match reply {
        Reply::Array(items) => items,
        Reply::Bulk(b) if b == b"toobig" => {
            return Err("a key of the session is too big to copy for the check every script gets".into())
        }
        other => {
            return Err(format!(
                "the lab could not read the session's keys: {}",
                other.to_cli().trim_end()
            ))
        }
    };
    let mut out = Vec::new();
    for item in items {
        let Reply::Array(parts) = item else { continue };
        let (Some(Reply::Integer(i)), Some(Reply::Bulk(t)), Some(Reply::Integer(pttl)), Some(Reply::Array(raw))) =
            (parts.first(), parts.get(1), parts.get(2), parts.get(3))
        else {
            continue;
        };
        let (Some(key), Some(kind)) = (
            usize::try_from(*i).ok().and_then(|i| keys.get(i.checked_sub(1)?)),
            Kind::parse(t),
        ) else {
            continue;
        };
        let items = raw
            .iter()
            .filter_map(|r| if let Reply::Bulk(b) = r { Some(b.clone()) } else { None })
            .collect();
        out.push(SnapshotEntry {
            key: key.clone(),
            kind,
            items,
            pttl: *pttl,
        });
    }
    Ok(out)
}

/// Are `writes` deletions only (`DEL`, `UNLINK`) that together name every
/// one of `keys` (at least one)? Replayed on any state, they leave none of
/// `keys`.
fn deletes_all(keys: &BTreeSet<Vec<u8>>, writes: &[Vec<Vec<u8>>]) -> bool {
    let mut deleted = BTreeSet::new();
    for w in writes {
        let Some(name) = w.first() else { return false };
        if !(name.eq_ignore_ascii_case(b"del") || name.eq_ignore_ascii_case(b"unlink")) {
            return false;
        }
        deleted.extend(w[1..].iter());
    }
    !keys.is_empty() && keys.iter().all(|k| deleted.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_core::cli::parse;

    /// 2026-12-03, later than the simulator's epoch.
    const NOW: u64 = 1_796_300_000_000;

    fn check(p: &mut Preflight, snapshot: &[SnapshotEntry], line: &str) -> Verdict {
        p.check(NOW, snapshot, &[parse(line).unwrap()])
    }

    #[test]
    fn runaway_and_memory_bombs_are_refused() {
        let mut p = Preflight::new(1000, 4096, Scripts::Managed);
        assert!(matches!(check(&mut p, &[], "EVAL \"while true do end\" 0"), Verdict::Refuse(w) if w.contains("BUSY")));
        assert!(matches!(
            check(&mut p, &[], "EVAL \"local s = string.rep('x', 2^16) for i = 1, 30 do s = s .. s end return #s\" 0"),
            Verdict::Refuse(w) if w.contains("memory")
        ));
        assert!(matches!(
            check(&mut p, &[], "EVAL \"for i = 1, 1000 do redis.log(redis.LOG_WARNING, 'flood flood flood') end\" 0"),
            Verdict::Refuse(w) if w.contains("redis.log")
        ));
        assert!(matches!(
            check(&mut p, &[], "EVAL \"pcall(redis.call, 'nosuchcommand') return 1\" 0"),
            Verdict::Refuse(w) if w.contains("does not have")
        ));
        assert_eq!(
            check(
                &mut p,
                &[],
                "EVAL \"redis.log(redis.LOG_WARNING, 'one line') return 1\" 0"
            ),
            Verdict::Send
        );
        // A loop that waits for a date: the simulator's clock is the wall clock.
        assert!(matches!(
            check(
                &mut p,
                &[],
                "EVAL \"redis.call('set', 'w', 1) while tonumber(redis.call('TIME')[1]) > 1780000000 do end\" 0"
            ),
            Verdict::Refuse(_)
        ));
    }

    #[test]
    fn the_check_sees_the_sessions_keys() {
        let mut p = Preflight::new(1000, 4096, Scripts::Managed);
        let armed = [SnapshotEntry {
            key: b"k".to_vec(),
            kind: Kind::String,
            items: vec![b"1".to_vec()],
            pttl: -1,
        }];
        let line =
            "EVAL \"redis.call('set', 'w', 1) if redis.call('get', 'k') == '1' then while true do end end return 1\" 0";
        assert_eq!(check(&mut p, &[], line), Verdict::Send);
        assert!(matches!(check(&mut p, &armed, line), Verdict::Refuse(_)));
        // A transaction is checked whole: the SET before the script arms it.
        let batch = [parse("SET k 1").unwrap(), parse(line).unwrap()];
        assert!(matches!(p.check(NOW, &[], &batch), Verdict::Refuse(_)));
    }

    #[test]
    fn unknown_scripts_and_functions_are_answered_here() {
        let mut p = Preflight::new(1000, 4096, Scripts::Managed);
        assert_eq!(
            check(&mut p, &[], "EVALSHA ffffffffffffffffffffffffffffffffffffffff 0"),
            Verdict::Answer(Reply::Error("NOSCRIPT No matching script. Please use EVAL.".into()))
        );
        assert_eq!(
            check(&mut p, &[], "FCALL nosuch 0"),
            Verdict::Answer(Reply::Error("ERR Function not found".into()))
        );
        let load = parse("SCRIPT LOAD \"return 1\"").unwrap();
        let sha = p.answer(&load);
        let Reply::Bulk(sha) = sha else { panic!() };
        let line = format!("EVALSHA {} 0", String::from_utf8(sha).unwrap());
        assert_eq!(check(&mut p, &[], &line), Verdict::Send);
    }

    #[test]
    fn lists_sets_and_sorted_sets_are_copied_too() {
        let mut p = Preflight::new(1000, 4096, Scripts::Managed);
        let line = "EVAL \"redis.call('set', 'w', 1) if redis.call('llen', 'l') + redis.call('scard', 's') + \
                    redis.call('zcard', 'z') == 6 then while true do end end return 1\" 0";
        let bulks = |xs: &[&str]| xs.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        let copy = [
            SnapshotEntry {
                key: b"l".to_vec(),
                kind: Kind::List,
                items: bulks(&["a", "b"]),
                pttl: -1,
            },
            SnapshotEntry {
                key: b"s".to_vec(),
                kind: Kind::Set,
                items: bulks(&["a", "b"]),
                pttl: 5000,
            },
            SnapshotEntry {
                key: b"z".to_vec(),
                kind: Kind::Zset,
                items: bulks(&["1", "a", "2.5", "b"]),
                pttl: -1,
            },
        ];
        assert_eq!(check(&mut p, &copy[..2], line), Verdict::Send);
        assert!(matches!(check(&mut p, &copy, line), Verdict::Refuse(_)));
    }

    /// A release's writes delete every key it declared: checked by what
    /// the run left (no key) rather than replayed; a script that deletes
    /// and writes again is replayed, and still sent.
    #[test]
    fn a_release_that_deletes_its_keys_needs_no_replay() {
        let keys: BTreeSet<Vec<u8>> = [b"k".to_vec()].into();
        let del = |k: &str| vec![b"DEL".to_vec(), k.as_bytes().to_vec()];
        assert!(deletes_all(&keys, &[del("k")]));
        assert!(deletes_all(
            &keys,
            &[vec![b"unlink".to_vec(), b"x".to_vec(), b"k".to_vec()]]
        ));
        assert!(!deletes_all(&keys, &[del("x")]), "k is left");
        assert!(!deletes_all(&keys, &[]), "nothing deleted");
        assert!(!deletes_all(&BTreeSet::new(), &[del("k")]), "no key declared");
        let set = vec![b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()];
        assert!(!deletes_all(&keys, &[del("k"), set]), "written again");

        let mut p = Preflight::new(1000, 4096, Scripts::Simulated);
        let mut n = Node::new(Profile::V7_0);
        let c = n.connect();
        n.execute(c, &parse("SET k tok").unwrap());
        let Reply::Bulk(payload) = n.execute(c, &parse("DUMP k").unwrap()) else {
            panic!()
        };
        let dumped = [Dumped {
            key: b"k".to_vec(),
            payload: Some(payload),
            pttl: 5000,
        }];
        let release = "EVAL \"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else \
                       return 0 end\" 1 k tok";
        let run = p.simulate(NOW, &dumped, &parse(release).unwrap()).unwrap();
        assert_eq!((run.reply, run.writes), (Reply::Integer(1), vec![del("k")]));
        let pc = p.conn;
        assert_eq!(p.node.execute(pc, &parse("EXISTS k").unwrap()), Reply::Integer(0));
        let again = "EVAL \"redis.call('DEL', KEYS[1]) return redis.call('SET', KEYS[1], 'x')\" 1 k";
        let run = p.simulate(NOW, &dumped, &parse(again).unwrap()).unwrap();
        assert_eq!(run.writes.len(), 2, "{:?}", run.writes);
    }

    #[test]
    fn a_simulated_script_answers_and_gives_its_writes_as_propagated() {
        let mut p = Preflight::new(1000, 4096, Scripts::Simulated);
        // A payload in redis-server's DUMP format (the simulator's is the same).
        let mut n = Node::new(Profile::V7_0);
        let c = n.connect();
        n.execute(c, &parse("SET k v").unwrap());
        let Reply::Bulk(payload) = n.execute(c, &parse("DUMP k").unwrap()) else {
            panic!()
        };
        let dumped = [Dumped {
            key: b"k".to_vec(),
            payload: Some(payload),
            pttl: -1,
        }];
        let line = "EVAL \"local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], v .. 'w', 'PX', 5000) \
                    return v\" 1 k";
        let run = p.simulate(NOW, &dumped, &parse(line).unwrap()).unwrap();
        assert_eq!(run.reply, Reply::bulk("v"));
        // The relative TTL goes out as Redis propagates it: absolute.
        let pxat = (NOW + 5000).to_string().into_bytes();
        assert_eq!(run.writes.len(), 1, "{:?}", run.writes);
        assert!(run.writes[0].starts_with(&[b"SET".to_vec(), b"k".to_vec(), b"vw".to_vec()]));
        assert!(run.writes[0].contains(&pxat), "{:?}", run.writes);
        // A key it did not declare, a command the lab refuses: refused whole.
        let undeclared = parse("EVAL \"redis.call('SET', KEYS[1], 1) return redis.call('GET', 'x')\" 1 k").unwrap();
        assert!(p
            .simulate(NOW, &dumped, &undeclared)
            .unwrap_err()
            .contains("did not declare"));
        let flush = parse("EVAL \"return redis.pcall('FLUSHALL')\" 0").unwrap();
        assert!(p.simulate(NOW, &[], &flush).unwrap_err().contains("not allowed"));
    }

    #[test]
    fn keys_are_tracked_and_bounded() {
        let mut p = Preflight::new(3, 4096, Scripts::Managed);
        p.track(&parse("SET a 1").unwrap());
        p.track(&parse("DEL b c").unwrap());
        assert_eq!(p.keys().unwrap().len(), 3);
        p.track(&parse("SET d 1").unwrap());
        p.track(&parse("SET e 1").unwrap());
        assert!(p.keys().is_err());
    }
}
