//! A production `redis-cli MONITOR` capture, turned into a lock timeline.
//!
//! Redis runs commands one at a time, and MONITOR records each one as it
//! runs, in that order, with the server's time ([`monitor_line`] reads a
//! line back). So replaying a capture through the simulated redis-server —
//! each command on its client's own connection, the node's clock set to the
//! capture's time first — recomputes every reply the real server gave: the
//! capture has no replies, the replay does. From the replies come the lock
//! bars, the same way every other view gets them: core's
//! [`LockObserver`] compares the lock keys on the node after each command,
//! and core's [`Monitor`] numbers the grants and flags what breaks:
//!
//! * **wrong-release** — a client's command removed a lock another client
//!   acquired (a bare `DEL` after the lease ran out and someone else took
//!   it);
//! * **overlap** ("two holders") — a client acquired the lock while another
//!   still believed it held it: from its acquire answered `OK` until it let
//!   go (a release call, answered or not, a failed extension, or its own
//!   command removing the key). MONITOR cannot see a process pause, but it
//!   sees its consequence: the lease expired and another client took the
//!   key before the first one released.
//!
//! The lock keys are the ones given (`--lock KEY`, every value they take is
//! somebody's lock), or else guessed as free play guesses them: a key a
//! client took with `SET … NX` answered `OK` (or `SETNX` answered 1). Lock
//! keys are watched in database 0, as the lab watches them.
//!
//! Lines a script ran (`[0 lua]`) follow their `EVAL`/`EVALSHA`/`FCALL` in
//! redis-server 7.0 (`call()` feeds monitors before the script runs): they
//! are attributed to that client, drawn on its lane as notes and not
//! replayed a second time (the script's own replay runs them). A line that
//! is not what MONITOR prints is counted and skipped, with its number and
//! why; the file is streamed, and a line longer than
//! [`ImportLimits::max_line_bytes`] is skipped without being stored. The
//! trace keeps at most [`ImportLimits::max_events`] command events (the
//! lock events and violations are always kept), so a capture of millions
//! of lines is summarised in bounded memory.

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::Serialize;

use super::from_trace::{classify, succeeded};
use super::monitor_line::{parse_line, MonitorLine, Source};
use super::parse::{BoundedLines, LineRead};
use super::OpKind;
use crate::actor::{Actor, Names};
use crate::invariants::{InvariantConfig, Monitor, Violation};
use crate::observe::{acquired_key, Cause, LockChange, LockObserver, Observed, Scope, Seen};
use crate::reply::Reply;
use crate::server::script::sha1_hex;
use crate::server::{ConnId, Node, NodeEvent, Profile};
use crate::trace::{command_line, Event, EventKind, Trace};

/// How much a capture may make the importer hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportLimits {
    /// A longer line is skipped (and named), never stored.
    pub max_line_bytes: usize,
    /// Command events kept in the trace; later ones are counted only.
    pub max_events: usize,
    /// Skipped lines listed with their reasons; later ones are counted only.
    pub max_skipped_listed: usize,
}

impl Default for ImportLimits {
    fn default() -> Self {
        ImportLimits {
            max_line_bytes: 1024 * 1024,
            max_events: 200_000,
            max_skipped_listed: 100,
        }
    }
}

/// Reading the capture failed (the file, not a line of it).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("line {line}: could not read: {msg}")]
pub struct ImportError {
    pub line: u64,
    pub msg: String,
}

/// A line that was not replayed, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub line: u64,
    pub why: String,
}

/// One client address: its lane.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AddressLane {
    pub address: String,
    pub commands: u64,
    /// Commands its scripts ran (`[0 lua]` lines).
    pub script_lines: u64,
    /// Times it acquired a lock.
    pub holds: u64,
}

/// What an import found, for the CLI and the page.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Lines read, commands replayed, script lines attributed.
    pub lines: u64,
    pub commands: u64,
    pub script_lines: u64,
    pub lanes: Vec<AddressLane>,
    pub lock_keys: Vec<String>,
    /// Locks acquired (grants), over all keys.
    pub holds: u64,
    pub violations: Vec<Violation>,
    /// Lines skipped, and the first of them with their reasons.
    pub skipped: u64,
    pub skipped_lines: Vec<Skipped>,
    /// Command events left out of the trace beyond the limit.
    pub events_left_out: u64,
    /// The capture's first and last time (Unix ms); the trace counts from
    /// the first.
    pub from_unix_ms: u64,
    pub to_unix_ms: u64,
}

/// A replayed capture: the trace the timeline draws, and its summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Import {
    pub trace: Trace,
    pub summary: Summary,
}

impl Summary {
    /// Plain text, as `locklab trace import` prints it.
    pub fn text(&self, names: &Names) -> String {
        let mut out = format!(
            "{} lines: {} commands from {} clients, {} script lines; lock keys: {}\n",
            self.lines,
            self.commands,
            self.lanes.len(),
            self.script_lines,
            if self.lock_keys.is_empty() {
                "none found".to_owned()
            } else {
                self.lock_keys.join(", ")
            }
        );
        for l in &self.lanes {
            out.push_str(&format!(
                "  {:<24} {:>8} commands {:>6} holds{}\n",
                l.address,
                l.commands,
                l.holds,
                if l.script_lines > 0 {
                    format!(" ({} script lines)", l.script_lines)
                } else {
                    String::new()
                }
            ));
        }
        out.push_str(&format!("{} holds, {} violations\n", self.holds, self.violations.len()));
        for v in &self.violations {
            let who: Vec<String> = v.actors.iter().map(|&a| names.actor(a)).collect();
            out.push_str(&format!(
                "  {} ({}) [{}–{} ms] {}: {}\n",
                v.invariant.title(),
                v.invariant.name(),
                v.from_ms,
                v.to_ms,
                who.join(", "),
                v.detail
            ));
        }
        if self.skipped > 0 {
            out.push_str(&format!("{} lines skipped:\n", self.skipped));
            for s in &self.skipped_lines {
                out.push_str(&format!("  line {}: {}\n", s.line, s.why));
            }
            if self.skipped > self.skipped_lines.len() as u64 {
                out.push_str(&format!(
                    "  … and {} more\n",
                    self.skipped - self.skipped_lines.len() as u64
                ));
            }
        }
        if self.events_left_out > 0 {
            out.push_str(&format!(
                "{} command events left out of the trace (its limit); every lock event is in it\n",
                self.events_left_out
            ));
        }
        out
    }
}

/// The one node every capture is replayed on.
const NODE: u32 = 0;

/// Commands whose effect on keys their arguments do not name: after them
/// every lock key is looked at.
const TOUCH_ANY_KEY: &[&str] = &[
    "EXEC", "FLUSHALL", "FLUSHDB", "SWAPDB", "DEBUG", "FUNCTION", "RESET", "SCRIPT",
];

fn is_script_call(name: &str) -> bool {
    matches!(
        name,
        "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO" | "FCALL" | "FCALL_RO"
    )
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The replay in progress.
struct Replay {
    node: Node,
    limits: ImportLimits,
    trace: Trace,
    summary: Summary,
    /// Client address → its lane and connection.
    lanes: BTreeMap<String, (u32, ConnId)>,
    locks: LockObserver,
    declared: bool,
    monitor: Monitor,
    /// The capture's first time (Unix ms): the trace's zero.
    base_ms: Option<u64>,
    /// The client whose script the next `[0 lua]` lines belong to.
    script_caller: Option<u32>,
    /// Script bodies seen (`EVAL`, `SCRIPT LOAD`), by SHA1, so an `EVALSHA`
    /// can be recognised as a release or an extension.
    scripts: BTreeMap<String, String>,
    /// Per lock key: the overlap violation going on, by its event index.
    ongoing: BTreeMap<String, usize>,
    next_req: u64,
}

impl Replay {
    fn new(locks: &[String], limits: ImportLimits) -> Replay {
        let mut node = Node::new(Profile::V7_0);
        node.record_events(true);
        let declared = !locks.is_empty();
        let mut observer = LockObserver::new(if declared { Scope::Declared } else { Scope::Acquired }, 1, false);
        for k in locks {
            observer.watch(k);
        }
        Replay {
            node,
            limits,
            trace: Trace {
                names: Names {
                    clients: Vec::new(),
                    nodes: vec!["redis".to_owned()],
                },
                events: Vec::new(),
            },
            summary: Summary::default(),
            lanes: BTreeMap::new(),
            locks: observer,
            declared,
            monitor: Monitor::new(InvariantConfig {
                lock_keys: locks.to_vec(),
                overlap_is_violation: true,
                max_hold_ms: None,
            }),
            base_ms: None,
            script_caller: None,
            scripts: BTreeMap::new(),
            ongoing: BTreeMap::new(),
            next_req: 0,
        }
    }

    fn now(&self) -> u64 {
        self.node.now().saturating_sub(self.base_ms.unwrap_or(0))
    }

    fn skip(&mut self, line: u64, why: String) {
        self.summary.skipped += 1;
        if self.summary.skipped_lines.len() < self.limits.max_skipped_listed {
            self.summary.skipped_lines.push(Skipped { line, why });
        }
    }

    fn emit_at(&mut self, at_ms: u64, actor: Actor, kind: EventKind) {
        let step = self.trace.events.len() as u64;
        self.trace.events.push(Event {
            step,
            at_ms,
            actor,
            kind,
        });
    }

    fn emit(&mut self, actor: Actor, kind: EventKind) {
        self.emit_at(self.now(), actor, kind);
    }

    /// A command event, unless the trace is full of them.
    fn emit_command(&mut self, actor: Actor, kind: EventKind) {
        if self.trace.events.len() < self.limits.max_events {
            self.emit(actor, kind);
        } else {
            self.summary.events_left_out += 1;
        }
    }

    fn lane(&mut self, address: &str) -> (u32, ConnId) {
        if let Some(&l) = self.lanes.get(address) {
            return l;
        }
        let c = self.trace.names.clients.len() as u32;
        self.trace.names.clients.push(address.to_owned());
        self.summary.lanes.push(AddressLane {
            address: address.to_owned(),
            ..AddressLane::default()
        });
        let conn = self.node.connect();
        self.lanes.insert(address.to_owned(), (c, conn));
        (c, conn)
    }

    /// Set the node's clock to the capture's time (a time earlier than the
    /// last is the server's clock stepping back: [`Node::jump_clock`]), and
    /// draw the expiries it brought, each at its deadline.
    fn clock(&mut self, at_us: u64) {
        let ms = at_us / 1000;
        match self.base_ms {
            None => {
                self.base_ms = Some(ms);
                self.summary.from_unix_ms = ms;
                self.node.jump_clock(ms);
            }
            Some(_) if ms < self.node.now() => self.node.jump_clock(ms),
            Some(_) => self.node.set_time(ms),
        }
        self.summary.to_unix_ms = self.summary.to_unix_ms.max(ms);
        self.expirations();
    }

    fn expirations(&mut self) {
        for event in self.node.take_events() {
            let NodeEvent::Expired { db, key, at_ms } = event;
            if db != 0 || !self.locks.is_watched(&key) {
                continue;
            }
            let at = at_ms.saturating_sub(self.base_ms.unwrap_or(0));
            self.emit_at(at, Actor::Node(NODE), EventKind::Expired { key: key.clone() });
            let observed = self.locks.observe(NODE, &key, None, Cause::Expiry, at);
            self.handle(observed, at);
        }
    }

    /// One line of the capture.
    fn line(&mut self, n: u64, l: MonitorLine) {
        match l.source {
            Source::Script => self.script_line(n, &l.argv),
            Source::Client(address) => {
                self.clock(l.at_us);
                let (c, conn) = self.lane(&address);
                self.command(c, conn, l.db, &l.argv);
            }
        }
    }

    fn script_line(&mut self, n: u64, argv: &[Vec<u8>]) {
        let Some(c) = self.script_caller else {
            self.skip(
                n,
                "a script's command ([lua]) with no EVAL, EVALSHA or FCALL before it".into(),
            );
            return;
        };
        self.summary.script_lines += 1;
        self.summary.lanes[c as usize].script_lines += 1;
        let argv: Vec<String> = argv.iter().map(|a| text(a)).collect();
        self.emit_command(
            Actor::Client(c),
            EventKind::Note {
                text: format!("script: {}", command_line(&argv)),
            },
        );
    }

    /// Replay one client command and look at the lock keys after it.
    fn command(&mut self, c: u32, conn: ConnId, db: u32, argv: &[Vec<u8>]) {
        let name = argv.first().map(|n| text(n).to_ascii_uppercase()).unwrap_or_default();
        if name != "SELECT" && self.node.selected_db(conn) != db as usize {
            // The capture began after this client's SELECT: MONITOR's
            // database number says where it is.
            self.node.select(conn, db as usize);
        }
        self.script_caller = is_script_call(&name).then_some(c);
        let reply = self.node.execute(conn, argv);
        self.summary.commands += 1;
        self.summary.lanes[c as usize].commands += 1;
        let commands: Vec<Vec<String>> = vec![argv.iter().map(|a| text(a)).collect()];
        self.next_req += 1;
        self.emit_command(
            Actor::Node(NODE),
            EventKind::Executed {
                req: self.next_req,
                client: c,
                commands: commands.clone(),
                replies: vec![reply.clone()],
            },
        );
        self.expirations();
        if self.node.selected_db(conn) != 0 {
            return;
        }
        self.remember_script(&name, argv);
        if !self.declared {
            if let Some((key, _)) = acquired_key(argv, &reply) {
                if !self.node.in_multi(conn) {
                    self.locks.acquired(&key);
                }
            }
        }
        self.look(c, &name, argv);
        self.let_go(c, &commands, &reply);
    }

    /// The lock keys this command may have changed, shown to the observer.
    fn look(&mut self, c: u32, name: &str, argv: &[Vec<u8>]) {
        let all = TOUCH_ANY_KEY.contains(&name);
        let keys: Vec<String> = self
            .locks
            .keys()
            .iter()
            .filter(|k| all || argv.iter().skip(1).any(|a| a == k.as_bytes()))
            .cloned()
            .collect();
        let now = self.now();
        for key in keys {
            let seen = self.seen(&key);
            let observed = self.locks.observe(NODE, &key, seen, Cause::Command(c), now);
            self.handle(observed, now);
        }
    }

    fn seen(&self, key: &str) -> Option<Seen> {
        Seen::on_node(&self.node, key)
    }

    fn remember_script(&mut self, name: &str, argv: &[Vec<u8>]) {
        let body = match name {
            "EVAL" | "EVAL_RO" => argv.get(1),
            "SCRIPT" if argv.get(1).is_some_and(|s| s.eq_ignore_ascii_case(b"load")) => argv.get(2),
            _ => None,
        };
        if let Some(body) = body {
            self.scripts.insert(sha1_hex(body), text(body));
        }
    }

    /// A client stops believing it holds a lock when it calls a release
    /// (whatever the answer) or an extension that fails — the calls a
    /// history records ([`classify`]); an `EVALSHA` is read as the script
    /// the capture loaded under that SHA1.
    fn let_go(&mut self, c: u32, commands: &[Vec<String>], reply: &Reply) {
        let mut commands = commands.to_vec();
        if let Some(argv) = commands.first_mut() {
            if argv.first().is_some_and(|n| n.eq_ignore_ascii_case("evalsha")) {
                if let Some(body) = argv.get(1).and_then(|sha| self.scripts.get(&sha.to_ascii_lowercase())) {
                    argv[0] = "EVAL".to_owned();
                    argv[1] = body.clone();
                }
            }
        }
        let Some(call) = classify(&commands) else { return };
        let ends = match call.op {
            OpKind::Release => true,
            OpKind::Extend => !succeeded(call.op, reply),
            _ => false,
        };
        if ends {
            self.believe(c, &call.key, false);
        }
    }

    /// What the observer saw: lock bars, grants (the client now believes it
    /// holds the lock), wrong releases.
    fn handle(&mut self, observed: Vec<Observed>, at: u64) {
        for o in observed {
            match o {
                Observed::Lock {
                    node, key, change, via, ..
                } => {
                    let removed_by = match &change {
                        LockChange::Removed { by } => *by,
                        _ => None,
                    };
                    self.emit_at(
                        at,
                        Actor::Node(node),
                        EventKind::Lock {
                            key: key.clone(),
                            change,
                            via,
                        },
                    );
                    if let Some(by) = removed_by {
                        self.believe(by, &key, false);
                    }
                }
                Observed::Granted { client, key } => {
                    self.monitor.watch_key(&key);
                    if !self.summary.lock_keys.contains(&key) {
                        self.summary.lock_keys.push(key.clone());
                    }
                    let seq = self.monitor.grant(client, &key);
                    self.summary.holds += 1;
                    self.summary.lanes[client as usize].holds += 1;
                    self.emit_at(at, Actor::Client(client), EventKind::Granted { key: key.clone(), seq });
                    self.believe(client, &key, true);
                }
                o @ (Observed::WrongRelease { .. } | Observed::ForeignExtend { .. }) => {
                    let names = &self.trace.names;
                    let client = |i| names.client(i).to_owned();
                    if let Some(v) = self.monitor.not_owner(&o, at, &client, &|i| names.node(i).to_owned()) {
                        self.violation(v);
                    }
                }
            }
        }
    }

    fn violation(&mut self, v: Violation) {
        self.emit(Actor::World, EventKind::Violation { violation: v });
    }

    /// `c` starts or stops believing it holds `key`: two believers at once
    /// is the overlap band, a violation for as long as it lasts.
    fn believe(&mut self, c: u32, key: &str, holds: bool) {
        let now = self.now();
        let names = &self.trace.names;
        let Some(change) = self
            .monitor
            .change_belief(key, c, holds, now, &|i| names.client(i).to_owned())
        else {
            return;
        };
        if change.overlap.as_ref().is_some_and(|ch| !ch.begin) {
            self.stretch(key, now);
        }
        for (actor, kind) in change.events(key, c, holds) {
            self.emit(actor, kind);
        }
        if let Some(v) = change.violation {
            self.ongoing.insert(key.to_owned(), self.trace.events.len());
            self.violation(v);
        }
    }

    /// The overlap of `key` ended at `now`: its band ends there.
    fn stretch(&mut self, key: &str, now: u64) {
        let Some(i) = self.ongoing.remove(key) else { return };
        if let Some(Event {
            kind: EventKind::Violation { violation },
            ..
        }) = self.trace.events.get_mut(i)
        {
            violation.to_ms = now;
        }
    }

    fn finish(mut self) -> Import {
        let end = self.now();
        for key in self.ongoing.keys().cloned().collect::<Vec<_>>() {
            self.stretch(&key, end);
        }
        // A lock still held when the capture ended: its bar ends at its
        // deadline, where the server will expire it.
        let last = self
            .locks
            .keys()
            .iter()
            .filter_map(|k| self.seen(k).and_then(|s| s.deadline))
            .max();
        if let Some(deadline) = last {
            // Redis expires a key once its deadline has passed.
            self.node.set_time(deadline + 1);
            self.expirations();
        }
        self.summary.violations = self
            .trace
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Violation { violation } => Some(violation.clone()),
                _ => None,
            })
            .collect();
        if self.declared {
            for k in self.locks.keys() {
                if !self.summary.lock_keys.contains(k) {
                    self.summary.lock_keys.push(k.clone());
                }
            }
        }
        Import {
            trace: self.trace,
            summary: self.summary,
        }
    }
}

/// Replay a MONITOR capture, streamed from `r`. `locks`: the lock keys
/// (empty: guessed from `SET … NX`). Only a failure to read is an error;
/// bad lines are skipped and listed in the summary.
pub fn import<R: BufRead>(r: R, locks: &[String], limits: &ImportLimits) -> Result<Import, ImportError> {
    let mut replay = Replay::new(locks, *limits);
    let mut lines = BoundedLines::new(r, limits.max_line_bytes);
    while let Some(LineRead {
        number: n,
        complete,
        too_long,
    }) = lines.next_line().map_err(|(line, e)| ImportError {
        line,
        msg: e.to_string(),
    })? {
        replay.summary.lines = n;
        if too_long {
            replay.skip(
                n,
                format!("longer than {} bytes; skipped unread", limits.max_line_bytes),
            );
            continue;
        }
        match parse_line(lines.text()) {
            Ok(Some(l)) => replay.line(n, l),
            Ok(None) => {}
            Err(why) if !complete => replay.skip(n, format!("truncated (the file ends mid-line): {why}")),
            Err(why) => replay.skip(n, why),
        }
    }
    Ok(replay.finish())
}

/// [`import`] over text already in memory (the page's worker).
pub fn import_str(text: &str, locks: &[String], limits: &ImportLimits) -> Import {
    import(text.as_bytes(), locks, limits).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariants::Invariant;

    /// A capture line at `ms` after an arbitrary second.
    fn at(ms: u64, who: &str, args: &[&str]) -> String {
        let t = 1_700_000_000_000u64 + ms;
        let args: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
        format!("{}.{:06} [0 {who}] {}\n", t / 1000, (t % 1000) * 1000, args.join(" "))
    }

    fn invariants(i: &Import) -> Vec<(Invariant, u64, u64)> {
        i.summary
            .violations
            .iter()
            .map(|v| (v.invariant, v.from_ms, v.to_ms))
            .collect()
    }

    fn bars(i: &Import) -> Vec<(u64, String)> {
        i.trace
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Lock { change, .. } => Some((
                    e.at_ms,
                    match change {
                        LockChange::Acquired { owner, .. } => format!("acquired by {owner:?}"),
                        LockChange::Renewed { .. } => "renewed".to_owned(),
                        LockChange::Removed { by } => format!("removed by {by:?}"),
                    },
                )),
                _ => None,
            })
            .collect()
    }

    /// Lesson 1's story as a capture: A's lease runs out while it is paused,
    /// B takes the lock, A's bare DEL removes B's.
    fn paused_holder() -> String {
        let a = "10.0.0.1:5001";
        let b = "10.0.0.2:5002";
        [
            "OK\n".to_owned(),
            at(0, a, &["SET", "lock", "tok-a", "NX", "PX", "1000"]),
            at(100, b, &["SET", "lock", "tok-b", "NX", "PX", "1000"]),
            at(1500, b, &["SET", "lock", "tok-b", "NX", "PX", "1000"]),
            at(1800, a, &["DEL", "lock"]),
            at(1900, b, &["GET", "lock"]),
        ]
        .concat()
    }

    #[test]
    fn a_paused_holder_shows_two_holders_and_a_wrong_release() {
        let i = import_str(&paused_holder(), &[], &ImportLimits::default());
        let s = &i.summary;
        assert_eq!((s.lines, s.commands, s.skipped), (6, 5, 0));
        assert_eq!(i.trace.names.clients, ["10.0.0.1:5001", "10.0.0.2:5002"]);
        assert_eq!(s.lock_keys, ["lock"]);
        assert_eq!(s.holds, 2);
        assert_eq!(
            bars(&i),
            [
                (0, "acquired by Some(0)".to_owned()),
                (1000, "removed by None".to_owned()),
                (1500, "acquired by Some(1)".to_owned()),
                (1800, "removed by Some(0)".to_owned()),
            ],
            "the expiry is drawn at its deadline, not when the next command came"
        );
        assert_eq!(
            invariants(&i),
            [(Invariant::Overlap, 1500, 1800), (Invariant::WrongRelease, 1500, 1800)]
        );
        // The replies were recomputed: B's first try failed, the last GET is nil.
        let replies: Vec<Reply> = i
            .trace
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Executed { replies, .. } => replies.first().cloned(),
                _ => None,
            })
            .collect();
        assert_eq!(
            replies,
            [Reply::ok(), Reply::Nil, Reply::ok(), Reply::Integer(1), Reply::Nil]
        );
        let text = s.text(&i.trace.names);
        assert!(text.contains("lock deleted by a non-owner"), "{text}");
    }

    #[test]
    fn a_checked_release_in_a_script_is_attributed_and_breaks_nothing() {
        let a = "10.0.0.1:5001";
        let b = "10.0.0.2:5002";
        let del = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
        let sha = sha1_hex(del.as_bytes());
        let capture = [
            at(0, a, &["SCRIPT", "LOAD", del]),
            at(1, a, &["SET", "lock", "tok-a", "NX", "PX", "1000"]),
            at(1500, b, &["SET", "lock", "tok-b", "NX", "PX", "1000"]),
            // A's checked release comes late: the script finds B's token.
            at(1800, a, &["EVALSHA", &sha, "1", "lock", "tok-a"]),
            at(1800, "lua", &["get", "lock"]),
            at(1900, b, &["EVAL", del, "1", "lock", "tok-b"]),
            at(1900, "lua", &["get", "lock"]),
            at(1900, "lua", &["del", "lock"]),
        ]
        .concat();
        let i = import_str(&capture, &[], &ImportLimits::default());
        assert_eq!(i.summary.script_lines, 3);
        assert_eq!(i.summary.lanes[0].script_lines, 1);
        assert_eq!(i.summary.lanes[1].script_lines, 2);
        assert_eq!(i.summary.commands, 5, "script lines are not replayed again");
        assert_eq!(
            invariants(&i),
            [(Invariant::Overlap, 1500, 1800)],
            "A still believed it held the lock until its release was sent; nobody removed another's"
        );
        assert_eq!(bars(&i).last(), Some(&(1900, "removed by Some(1)".to_owned())));
    }

    #[test]
    fn declared_lock_keys_and_a_selected_database() {
        let a = "10.0.0.1:5001";
        let capture = [
            at(0, a, &["SET", "mylock", "x", "PX", "500"]),
            at(10, a, &["SELECT", "2"]),
            "1700000000.020000 [2 10.0.0.1:5001] \"SET\" \"mylock\" \"y\" \"NX\"\n".to_owned(),
        ]
        .concat();
        let i = import_str(&capture, &["mylock".to_owned()], &ImportLimits::default());
        assert_eq!(
            i.summary.holds, 1,
            "a plain SET of a declared key is a lock; db 2 is not watched"
        );
        assert_eq!(
            bars(&i),
            [
                (0, "acquired by Some(0)".to_owned()),
                (500, "removed by None".to_owned())
            ]
        );
        let guessed = import_str(&capture, &[], &ImportLimits::default());
        assert_eq!(guessed.summary.holds, 0, "no SET … NX answered OK in db 0");
        // MONITOR's db number puts a client whose SELECT came before the capture.
        let late =
            "1700000000.000000 [3 1.1.1.1:1] \"SET\" \"k\" \"v\"\n1700000000.000001 [3 1.1.1.1:2] \"GET\" \"k\"\n";
        let i = import_str(late, &[], &ImportLimits::default());
        let replies: Vec<String> = i
            .trace
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Executed { replies, .. } => Some(replies[0].to_cli()),
                _ => None,
            })
            .collect();
        assert_eq!(replies, ["OK", "\"v\""]);
    }

    #[test]
    fn hostile_lines_are_skipped_and_named() {
        let mut capture = paused_holder().into_bytes();
        capture.extend_from_slice(b"1700000002.000000 [0 1.1.1.1:1] \"SET\" \"k\n");
        capture.extend_from_slice(b"\x00\x01\xff\xfe garbage\n");
        capture.extend_from_slice(b"1700000002.000000 [0 lua] \"del\" \"lock\"\n");
        capture.extend_from_slice(&vec![b'"'; 5000]);
        capture.push(b'\n');
        capture.extend_from_slice(b"1700000002.000000 [0 1.1.1.1:1] \"GET\" \"k");
        let limits = ImportLimits {
            max_line_bytes: 4096,
            ..ImportLimits::default()
        };
        let i = import(capture.as_slice(), &[], &limits).expect("only reading can fail");
        let s = &i.summary;
        assert_eq!(s.commands, 5);
        let lines: Vec<u64> = s.skipped_lines.iter().map(|k| k.line).collect();
        assert_eq!(lines, [7, 8, 9, 10, 11]);
        assert!(s.skipped_lines[0].why.contains("unbalanced quotes"));
        assert!(s.skipped_lines[2].why.contains("no EVAL"));
        assert!(s.skipped_lines[3].why.contains("longer than 4096 bytes"));
        assert!(s.skipped_lines[4].why.contains("truncated"));
        assert_eq!(s.violations.len(), 2, "the good lines still replay");
    }

    #[test]
    fn a_long_capture_keeps_its_lock_events_beyond_the_event_limit() {
        let a = "10.0.0.1:5001";
        let mut capture = String::new();
        for n in 0..300u64 {
            capture.push_str(&at(n, a, &["INCR", "counter"]));
        }
        capture.push_str(&at(400, a, &["SET", "lock", "t", "NX", "PX", "50"]));
        let limits = ImportLimits {
            max_events: 100,
            ..ImportLimits::default()
        };
        let i = import_str(&capture, &[], &limits);
        assert_eq!(i.summary.commands, 301);
        assert_eq!(i.summary.events_left_out, 201);
        assert_eq!(
            bars(&i),
            [
                (400, "acquired by Some(0)".to_owned()),
                (450, "removed by None".to_owned())
            ]
        );
    }
}
