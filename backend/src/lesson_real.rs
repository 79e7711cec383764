//! Playing a lesson against a real redis-server.
//!
//! Trainees must see that the simulator is not inventing things, so the
//! single-node lessons also run step by step on a real server: one
//! connection per actor, the same redis-cli lines, the replies printed the
//! same way and checked against the same expectations. Two things differ,
//! and the transcript says so wherever they apply:
//!
//! * **Time is compressed.** Waiting 31 real seconds for a lock to expire
//!   makes a dull demo and a slow test, so TTLs and waits are divided by a
//!   factor (100× by default): `PX 15000` is sent as `PX 150`, `EX 30` as
//!   `PX 300`, a wait of 31 000 ms sleeps 310 ms, and `PTTL`/`TTL` replies
//!   are multiplied back. Script arguments are compressed when the script
//!   sets a TTL (it mentions `px`, `pexpire` or `expire`) and the argument
//!   is an integer of at least 100.
//! * **Redis 8.4 commands on an older server.** `DELEX key IFEQ token` is
//!   unknown to 7.x; the runner says so and sends the Lua compare-and-delete
//!   instead, which answers the same 1 or 0.
//!
//! What a real server cannot do — a client program, a clock jump, a crashed
//! node — is refused up front with the lesson's own explanation, not
//! approximated.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use locklab_core::cli::{parse, render};
use locklab_core::lesson::run::NO_REPLY;
use locklab_core::client::RELEASE_LUA;
use locklab_core::lesson::run::StepResult;
use locklab_core::lesson::{Lang, Lesson, LessonTopology, RealRun, StepKind};
use locklab_core::resource::Resource;
use locklab_core::server::{table, Profile};
use locklab_core::trace::Names;
use locklab_core::world::{Endpoint, Fault};
use locklab_core::Reply;
use thiserror::Error;

use crate::real::{RealConnection, RealError};

/// Why a lesson cannot run on a real server.
#[derive(Debug, Error)]
pub enum RealLessonError {
    #[error("lesson {id} cannot run on a real server: {why}")]
    Unsupported { id: String, why: String },
    #[error("lesson {id}, step {step}: {msg}")]
    Step { id: String, step: usize, msg: String },
    #[error(transparent)]
    Real(#[from] RealError),
}

/// A finished real run.
#[derive(Debug)]
pub struct RealReport {
    pub server_version: String,
    pub factor: u64,
    pub results: Vec<StepResult>,
    /// Per step, what was actually sent when it differs from the lesson
    /// (compressed TTLs, the DELEX fallback).
    pub notes: BTreeMap<usize, String>,
}

impl RealReport {
    pub fn passed(&self) -> bool {
        self.results.iter().all(|r| r.ok)
    }

    /// The transcript, in the simulator's layout, with the real run's notes.
    pub fn transcript(&self, lesson: &Lesson, lang: Lang) -> String {
        let mut out = format!(
            "lesson {} — {}\nreal redis-server {}, time compressed {}×\n\n",
            lesson.id,
            lesson.title.get(lang),
            self.server_version,
            self.factor
        );
        for r in &self.results {
            let who = r.actor.as_deref().unwrap_or("world");
            out.push_str(&format!("[{:>8} ms] {who}> {}\n", r.at_ms, r.shown));
            if let Some(note) = self.notes.get(&r.index) {
                out.push_str(&format!("{:>14}({note})\n", ""));
            }
            if let Some(reply) = &r.reply {
                for line in reply.lines() {
                    out.push_str(&format!("{:>14}{line}\n", ""));
                }
            }
            if !r.ok {
                out.push_str(&format!("{:>14}✗ expected: {}\n", "", r.expected.as_deref().unwrap_or("?")));
            }
        }
        out
    }
}

/// Can this lesson run on one real server? `Err` says why not.
pub fn check_supported(lesson: &Lesson) -> Result<(), String> {
    if let RealRun::No { why } = &lesson.real {
        return Err(why.en.clone());
    }
    if lesson.topology != LessonTopology::Single {
        return Err(format!("it needs the {:?} topology (managed real topologies come with the backend)", lesson.topology));
    }
    for (i, step) in lesson.steps.iter().enumerate() {
        match step.kind() {
            Ok(StepKind::Program { .. }) => {
                return Err(format!("step {} runs a client program, which only the simulator's world can drive", i + 1))
            }
            Ok(StepKind::Metrics(_)) => return Err(format!("step {} reads metrics off the simulator's trace", i + 1)),
            Ok(StepKind::Fault(Fault::SetLink { config, .. }))
                if !matches!(config.drop_reply_permille, 0 | 1000) =>
            {
                return Err(format!("step {} drops replies at random, which a real run cannot reproduce", i + 1))
            }
            Ok(StepKind::Fault(f))
                if !matches!(
                    f,
                    Fault::PauseClient { .. } | Fault::ResumeClient { .. } | Fault::CrashClient { .. } | Fault::SetLink { .. }
                ) =>
            {
                return Err(format!("step {} injects a fault a real server cannot take here: {f:?}", i + 1))
            }
            Err(e) => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Every key the lesson's commands name, by the command table's key
/// positions (so `EVAL … 1 lock:order:1 token` yields only the lock key).
fn lesson_keys(lesson: &Lesson) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for step in &lesson.steps {
        let Some(argv) = step.cmd.as_deref().and_then(|l| parse(l).ok()) else { continue };
        let Some(cmd) = argv.first().and_then(|n| table::find(n, Profile::V8_4)) else { continue };
        for i in cmd.key_indexes(&argv) {
            if !keys.contains(&argv[i]) {
                keys.push(argv[i].clone());
            }
        }
    }
    keys
}

/// Does a script set a TTL? Then its large integer arguments are TTLs.
fn script_sets_ttl(body: &[u8]) -> bool {
    let lower = String::from_utf8_lossy(body).to_lowercase();
    lower.contains("pexpire") || lower.contains("expire") || lower.contains("'px'") || lower.contains("\"px\"")
}

fn int(a: &[u8]) -> Option<i64> {
    std::str::from_utf8(a).ok()?.parse().ok()
}

/// What a command's reply needs done to it after compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scale {
    None,
    /// A PTTL: multiply back.
    Ms,
    /// A TTL sent as PTTL: multiply back and round to seconds as TTL does.
    SecondsFromMs,
}

/// Rewrite one argv for time compression by `f`. Returns the argv to send,
/// how to scale the reply, and whether anything changed.
fn compress(argv: &[Vec<u8>], f: i64) -> (Vec<Vec<u8>>, Scale) {
    let mut out = argv.to_vec();
    let name = argv.first().map(|n| n.to_ascii_uppercase()).unwrap_or_default();
    let div = |n: i64| ((n / f).max(1)).to_string().into_bytes();
    match name.as_slice() {
        b"SET" => {
            let mut i = 3;
            while i + 1 < out.len() {
                let opt = out[i].to_ascii_uppercase();
                if let (b"PX" | b"EX", Some(n)) = (opt.as_slice(), int(&out[i + 1])) {
                    let ms = if opt == b"EX" { n.saturating_mul(1000) } else { n };
                    out[i] = b"PX".to_vec();
                    out[i + 1] = div(ms);
                    i += 1;
                }
                i += 1;
            }
            (out, Scale::None)
        }
        b"PEXPIRE" | b"EXPIRE" if out.len() >= 3 => {
            if let Some(n) = int(&out[2]) {
                let ms = if name == b"EXPIRE" { n.saturating_mul(1000) } else { n };
                out[0] = b"PEXPIRE".to_vec();
                out[2] = div(ms);
            }
            (out, Scale::None)
        }
        b"PTTL" => (out, Scale::Ms),
        b"TTL" => {
            out[0] = b"PTTL".to_vec();
            (out, Scale::SecondsFromMs)
        }
        b"EVAL" | b"EVALSHA" | b"FCALL" if out.len() >= 3 => {
            let sets_ttl = name != b"EVAL" || script_sets_ttl(&out[1]);
            if let (true, Some(numkeys)) = (sets_ttl, int(&out[2])) {
                let first_arg = 3 + numkeys.max(0) as usize;
                for a in out.iter_mut().skip(first_arg) {
                    if let Some(n) = int(a).filter(|n| *n >= 100) {
                        *a = div(n);
                    }
                }
            }
            (out, Scale::None)
        }
        _ => (out, Scale::None),
    }
}

fn rescale(reply: Reply, scale: Scale, f: i64) -> Reply {
    match (scale, reply) {
        (Scale::Ms, Reply::Integer(n)) if n >= 0 => Reply::Integer(n * f),
        (Scale::SecondsFromMs, Reply::Integer(n)) if n >= 0 => Reply::Integer((n * f + 500) / 1000),
        (_, r) => r,
    }
}

fn words(argv: &[Vec<u8>]) -> String {
    argv.iter()
        .map(|a| {
            let s = String::from_utf8_lossy(a);
            if s.contains([' ', '"', '\'', '\n']) || s.is_empty() {
                format!("{s:?}")
            } else {
                s.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The server's `redis_version`.
fn server_version(conn: &mut RealConnection) -> Result<String, RealError> {
    let info = conn.execute(&[b"INFO".to_vec(), b"server".to_vec()])?;
    let text = match info {
        Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("unknown")
        .trim()
        .to_owned())
}

fn at_least_8_4(version: &str) -> bool {
    let mut parts = version.split('.').filter_map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (8, 4)
}

/// Run `lesson` on the server at `url`, compressing time by `factor`. With
/// `flush`, the server is emptied first (a managed test server only).
pub fn run(lesson: &Lesson, url: &str, factor: u64, flush: bool) -> Result<RealReport, RealLessonError> {
    check_supported(lesson).map_err(|why| RealLessonError::Unsupported { id: lesson.id.clone(), why })?;
    let f = factor.max(1) as i64;
    let mut conns: BTreeMap<String, Option<RealConnection>> = BTreeMap::new();
    for a in &lesson.actors {
        conns.insert(a.clone(), Some(RealConnection::open(url)?));
    }
    let mut admin = RealConnection::open(url)?;
    let version = server_version(&mut admin)?;
    if flush {
        for cmd in [&["FLUSHALL"][..], &["SCRIPT", "FLUSH"], &["FUNCTION", "FLUSH"]] {
            admin.execute(&cmd.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>())?;
        }
    }
    // Start from a clean slate without touching anything else on a server
    // that may be somebody's: delete exactly the keys the lesson uses.
    let keys = lesson_keys(lesson);
    if !keys.is_empty() {
        let mut del = vec![b"DEL".to_vec()];
        del.extend(keys);
        admin.execute(&del)?;
    }
    let names = Names { clients: lesson.actors.clone(), nodes: vec!["redis".into()] };
    let has_8_4 = at_least_8_4(&version);
    // Clients whose replies the network drops (a `set_link` with
    // drop_reply_permille = 1000): their commands still run on the server,
    // they just never hear back — exactly the uncertainty of lesson 33.
    let mut deaf: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut resource = Resource::new(lesson.world.fencing);
    let mut last_integer: BTreeMap<String, i64> = BTreeMap::new();
    let mut results = Vec::new();
    let mut notes = BTreeMap::new();
    let start = Instant::now();
    // Lesson time: real elapsed time, scaled back up.
    let lesson_ms = |start: Instant| start.elapsed().as_millis() as u64 * factor.max(1);

    for (index, step) in lesson.steps.iter().enumerate() {
        let bad = |msg: String| RealLessonError::Step { id: lesson.id.clone(), step: index + 1, msg };
        let kind = step.kind().map_err(bad)?;
        let mut actor = None;
        let (shown, reply) = match kind {
            StepKind::Cmd { client, line, .. } => {
                actor = Some(client.to_owned());
                let argv = parse(line).map_err(|e| bad(e.to_string()))?;
                let is_delex = argv.first().is_some_and(|n| n.eq_ignore_ascii_case(b"DELEX"));
                let (mut sent, scale) = compress(&argv, f);
                if is_delex && !has_8_4 {
                    let ifeq = sent.len() == 4 && sent[2].eq_ignore_ascii_case(b"IFEQ");
                    if !ifeq {
                        return Err(bad(format!("DELEX needs Redis 8.4; this server is {version} and only IFEQ has a Lua equivalent")));
                    }
                    sent = vec![b"EVAL".to_vec(), RELEASE_LUA.as_bytes().to_vec(), b"1".to_vec(), sent[1].clone(), sent[3].clone()];
                    notes.insert(
                        index,
                        format!("DELEX needs Redis 8.4; this server is {version}: sent the Lua compare-and-delete instead"),
                    );
                } else if sent != argv {
                    notes.insert(index, format!("sent as {} at {factor}×", words(&sent)));
                }
                let conn = conns
                    .get_mut(client)
                    .and_then(Option::as_mut)
                    .ok_or_else(|| bad(format!("{client} has crashed")))?;
                let reply = rescale(conn.execute(&sent)?, scale, f);
                if deaf.contains(client) {
                    (line.to_owned(), Some(NO_REPLY.to_owned()))
                } else {
                    if let Reply::Integer(i) = reply {
                        last_integer.insert(client.to_owned(), i);
                    }
                    (line.to_owned(), Some(render(&argv, &reply).trim_end_matches(['\r', '\n']).to_owned()))
                }
            }
            StepKind::Wait(ms) => {
                std::thread::sleep(Duration::from_millis(ms / factor.max(1)));
                (format!("wait {ms} ms"), None)
            }
            StepKind::Fault(fault) => {
                match fault {
                    Fault::CrashClient { client } => {
                        conns.insert(client.clone(), None);
                    }
                    Fault::SetLink { a: Endpoint::Client(c), config, .. } | Fault::SetLink { b: Endpoint::Client(c), config, .. } => {
                        if config.drop_reply_permille >= 1000 {
                            deaf.insert(c.clone());
                        } else {
                            deaf.remove(c);
                        }
                    }
                    _ => {}
                }
                (format!("FAULT {}", fault.describe(&names)), None)
            }
            StepKind::Write { client, write } => {
                actor = Some(client.to_owned());
                let token = if write.token_from_last_reply { last_integer.get(client).copied() } else { write.token };
                let who = lesson.actors.iter().position(|a| a == client).unwrap_or(0) as u32;
                let accepted = resource.write(who, lesson_ms(start), token, write.value.clone());
                (
                    format!("write {:?} to the resource (token {token:?})", write.value),
                    Some(if accepted { "accepted" } else { "rejected" }.to_owned()),
                )
            }
            StepKind::Hold { client, key, holds } => {
                actor = Some(client.to_owned());
                (format!("({client} {} {key})", if holds { "now believes it holds" } else { "no longer holds" }), None)
            }
            StepKind::Say(t) => (t.en.trim().to_owned(), None),
            StepKind::Program { .. } | StepKind::Metrics(_) => unreachable!("refused by check_supported"),
        };
        let expected = step.expect.as_ref().map(|e| e.describe());
        let ok = match (&step.expect, &reply) {
            (Some(e), Some(r)) => e.matches(r),
            (Some(_), None) => false,
            (None, _) => true,
        };
        results.push(StepResult { index, actor, shown, reply, expected, ok, at_ms: lesson_ms(start), trace_len: 0 });
    }
    Ok(RealReport { server_version: version, factor, results, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<Vec<u8>> {
        parse(s).unwrap()
    }

    #[test]
    fn ttls_are_compressed_and_replies_scaled_back() {
        let (sent, _) = compress(&argv("SET lock:order:1001 token-A-111 NX PX 15000"), 100);
        assert_eq!(words(&sent), "SET lock:order:1001 token-A-111 NX PX 150");
        let (sent, _) = compress(&argv("SET k v EX 30 NX"), 100);
        assert_eq!(words(&sent), "SET k v PX 300 NX");
        let (sent, _) = compress(&argv("EXPIRE k 10"), 100);
        assert_eq!(words(&sent), "PEXPIRE k 100");
        let (sent, scale) = compress(&argv("TTL k"), 100);
        assert_eq!(words(&sent), "PTTL k");
        assert_eq!(rescale(Reply::Integer(150), scale, 100), Reply::Integer(15));
        assert_eq!(rescale(Reply::Integer(-2), scale, 100), Reply::Integer(-2));
        let renew = r#"EVAL 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end' 1 lock:job:9 token-C 20000"#;
        let (sent, _) = compress(&argv(renew), 100);
        assert_eq!(sent.last().unwrap(), b"200");
        let release = r#"EVAL 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end' 1 k 12345"#;
        let (sent, _) = compress(&argv(release), 100);
        assert_eq!(sent.last().unwrap(), b"12345", "a script that sets no TTL keeps its arguments");
    }

    #[test]
    fn version_check() {
        assert!(!at_least_8_4("7.0.15"));
        assert!(at_least_8_4("8.4.0"));
        assert!(at_least_8_4("9.0.1"));
    }
}
