//! The free-play lab: three redis-cli sessions on one simulated node.
//!
//! This is the console's whole model: a [`Node`] (Redis 8.4 profile), one
//! connection per client A/B/C, what each client typed and what came back,
//! and a [`Trace`] in core's own vocabulary for the timeline, the same one
//! the scenario world produces for lessons: every command the node ran
//! (`Executed`), every expiry, and the life of every lock — a key set with
//! `SET … NX` (or `SETNX`) is `Acquired` by its client, `Renewed` when its
//! deadline moves, and `Removed` when it no longer holds that token.
//!
//! A line goes down core's one console path ([`console::run`], which
//! `locklab cli` and the real driver's console use too: redis-cli's
//! splitter, its repeat prefix, its `Invalid argument(s)`, its rendering),
//! so what the browser shows is byte for byte what `redis-cli --no-raw`
//! shows.
//!
//! It lives in core, not in the page, because the page links no simulator:
//! the page drives it through [`crate::engine`]'s seam, from the engine's
//! own wasm module.

use serde::{Deserialize, Serialize};

use crate::actor::{Actor, Names};
use crate::console;
use crate::observe::{acquired_key, Cause, LockObserver, Observed, Scope, Seen};
use crate::server::{ConnId, Node, NodeEvent, Profile, EPOCH_MS};
use crate::trace::{Event, EventKind, Trace};
use crate::Reply;

/// The clients of the lab, one redis-cli each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Client {
    #[default]
    A,
    B,
    C,
}

impl Client {
    pub const ALL: [Client; 3] = [Client::A, Client::B, Client::C];

    pub fn index(self) -> usize {
        self as usize
    }

    /// The client of a console tab (out of range: the last one).
    pub fn from_index(i: usize) -> Client {
        Client::ALL[i.min(Client::ALL.len() - 1)]
    }

    pub fn letter(self) -> &'static str {
        match self {
            Client::A => "A",
            Client::B => "B",
            Client::C => "C",
        }
    }

    fn actor_index(self) -> u32 {
        self as u32
    }
}

/// One line typed into one client's console and what it printed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    /// The prompt shown before the line, as redis-cli printed it then.
    pub prompt: String,
    pub line: String,
    /// What redis-cli printed, without the final newline (empty for `quit`).
    pub output: String,
    /// Milliseconds since the lab started.
    pub at_ms: u64,
}

/// The lab: one node, three connections, and what happened.
pub struct FreeLab {
    node: Node,
    conns: [ConnId; 3],
    transcripts: [Vec<Exchange>; 3],
    /// Lines each client typed, oldest first, for ↑/↓ (survives `clear`).
    history: [Vec<String>; 3],
    trace: Trace,
    /// Core's lock observer, in free-play scope: a key is a lock from a
    /// client's `SET … NX`/`SETNX` until it no longer holds that value.
    locks: LockObserver,
    next_req: u64,
}

impl Default for FreeLab {
    fn default() -> Self {
        FreeLab::new()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const NODE: u32 = 0;

impl FreeLab {
    pub fn new() -> FreeLab {
        let mut node = Node::new(Profile::V8_4);
        node.record_events(true);
        let conns = Client::ALL.map(|c| {
            let conn = node.connect();
            node.set_client_name(conn, Some(format!("client-{}", c.letter()).into_bytes()));
            conn
        });
        let names = Names {
            clients: Client::ALL.iter().map(|c| c.letter().to_owned()).collect(),
            nodes: vec!["redis".to_owned()],
        };
        FreeLab {
            node,
            conns,
            transcripts: Default::default(),
            history: Default::default(),
            trace: Trace {
                names,
                events: Vec::new(),
            },
            locks: LockObserver::new(Scope::Acquired, 1, false),
            next_req: 0,
        }
    }

    /// Milliseconds since the lab started.
    pub fn now_ms(&self) -> u64 {
        self.node.now().saturating_sub(EPOCH_MS)
    }

    /// redis-cli's prompt for `client`: `127.0.0.1:6379[db](TX)> `.
    pub fn prompt(&self, client: Client) -> String {
        let conn = self.conns[client.index()];
        let db = self.node.selected_db(conn);
        let db = if db == 0 { String::new() } else { format!("[{db}]") };
        let tx = if self.node.in_multi(conn) { "(TX)" } else { "" };
        format!("127.0.0.1:6379{db}{tx}> ")
    }

    pub fn transcript(&self, client: Client) -> &[Exchange] {
        &self.transcripts[client.index()]
    }

    pub fn history(&self, client: Client) -> &[String] {
        &self.history[client.index()]
    }

    /// Everything that happened, in core's trace types.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Run one typed line on `client`'s connection, as redis-cli would.
    /// Blank lines are ignored (redis-cli prints a new prompt); `clear`
    /// empties the client's screen; `quit`/`exit` end its connection and
    /// open a new one, which is what redis-cli started again would do.
    pub fn run(&mut self, client: Client, line: &str) {
        let prompt = self.prompt(client);
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return;
        }
        // linenoise (redis-cli's line editor) skips a repeat of the last line.
        let history = &mut self.history[client.index()];
        if history.last().map(String::as_str) != Some(line) {
            history.push(line.to_owned());
        }
        if trimmed.eq_ignore_ascii_case("clear") {
            self.transcripts[client.index()].clear();
            return;
        }
        let output = if trimmed.eq_ignore_ascii_case("quit") || trimmed.eq_ignore_ascii_case("exit") {
            self.reconnect(client);
            String::new()
        } else {
            self.execute_line(client, line)
        };
        let output = output.strip_suffix('\n').unwrap_or(&output).to_owned();
        let at_ms = self.now_ms();
        self.transcripts[client.index()].push(Exchange {
            prompt,
            line: line.to_owned(),
            output,
            at_ms,
        });
    }

    /// Move the node's clock forward; keys whose deadline passes expire, in
    /// deadline order, each at its own instant.
    pub fn advance(&mut self, ms: u64) {
        self.node.advance(ms);
        self.collect_expirations();
        self.check_locks(None);
    }

    fn reconnect(&mut self, client: Client) {
        let old = self.conns[client.index()];
        self.node.disconnect(old);
        let conn = self.node.connect();
        self.node
            .set_client_name(conn, Some(format!("client-{}", client.letter()).into_bytes()));
        self.conns[client.index()] = conn;
    }

    /// One console line down core's one console path (parse, the repeat
    /// prefix, limits, render): each command executed and traced.
    fn execute_line(&mut self, client: Client, line: &str) -> String {
        let conn = self.conns[client.index()];
        console::run(line.as_bytes(), console::Limits::BROWSER, |argv| {
            let reply = self.node.execute(conn, argv);
            self.next_req += 1;
            let commands = vec![argv.iter().map(|a| text(a)).collect()];
            self.emit(
                Actor::Node(NODE),
                EventKind::Executed {
                    req: self.next_req,
                    client: client.actor_index(),
                    commands,
                    replies: vec![reply.clone()],
                },
            );
            self.collect_expirations();
            self.check_locks(Some(client));
            self.note_acquire(client, conn, argv, &reply);
            Some(reply)
        })
    }

    fn emit(&mut self, actor: Actor, kind: EventKind) {
        let step = self.trace.events.len() as u64;
        self.trace.events.push(Event {
            step,
            at_ms: self.now_ms(),
            actor,
            kind,
        });
    }

    /// What the node holds for `key` now, as core's lock observer takes it.
    /// A key that is no longer a string cannot hold a token.
    fn seen(&self, key: &str) -> Option<Seen> {
        Seen::on_node(&self.node, key)
    }

    /// The lock events among what the observer saw, stamped `at_ms` (the
    /// free lab has no grants to number and no invariants to judge).
    fn emit_observed(&mut self, observed: Vec<Observed>, at_ms: u64) {
        for o in observed {
            if let Observed::Lock {
                node, key, change, via, ..
            } = o
            {
                let step = self.trace.events.len() as u64;
                self.trace.events.push(Event {
                    step,
                    at_ms,
                    actor: Actor::Node(node),
                    kind: EventKind::Lock { key, change, via },
                });
            }
        }
    }

    /// A lock was acquired when `argv` was `SET key token … NX …` answered
    /// `OK`, or `SETNX key token` answered `1` (core's rule), on database 0.
    fn note_acquire(&mut self, client: Client, conn: ConnId, argv: &[Vec<u8>], reply: &Reply) {
        if self.node.selected_db(conn) != 0 || self.node.in_multi(conn) {
            return;
        }
        let Some((key, _)) = acquired_key(argv, reply) else {
            return;
        };
        self.locks.acquired(&key);
        let seen = self.seen(&key);
        let now = self.now_ms();
        let observed = self
            .locks
            .observe(NODE, &key, seen, Cause::Command(client.actor_index()), now);
        self.emit_observed(observed, now);
    }

    /// Turn the node's expiry records into trace events. A held lock that
    /// expired is removed at the instant of its deadline.
    fn collect_expirations(&mut self) {
        for event in self.node.take_events() {
            #[allow(unreachable_patterns)] // NodeEvent will grow; only expiry matters here
            let (db, key, at_ms) = match event {
                NodeEvent::Expired { db, key, at_ms } => (db, key, at_ms),
                _ => continue,
            };
            let at_ms = at_ms.saturating_sub(EPOCH_MS);
            let step = self.trace.events.len() as u64;
            self.trace.events.push(Event {
                step,
                at_ms,
                actor: Actor::Node(NODE),
                kind: EventKind::Expired { key: key.clone() },
            });
            if db == 0 {
                let observed = self.locks.observe(NODE, &key, None, Cause::Expiry, at_ms);
                self.emit_observed(observed, at_ms);
            }
        }
    }

    /// Show the observer every lock key after `by`'s command: a key that no
    /// longer holds its token was deleted or overwritten, a moved deadline
    /// is a renewal.
    fn check_locks(&mut self, by: Option<Client>) {
        let cause = by.map_or(Cause::Expiry, |c| Cause::Command(c.actor_index()));
        let now = self.now_ms();
        for key in self.locks.keys().to_vec() {
            let seen = self.seen(&key);
            let observed = self.locks.observe(NODE, &key, seen, cause, now);
            self.emit_observed(observed, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::LockChange;

    fn last(lab: &FreeLab, c: Client) -> String {
        lab.transcript(c).last().map(|e| e.output.clone()).unwrap_or_default()
    }

    /// The lock changes in the trace, as `(at_ms, key, change)`.
    fn locks(lab: &FreeLab) -> Vec<(u64, String, LockChange)> {
        lab.trace()
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Lock { key, change, .. } => Some((e.at_ms, key.clone(), change.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn replies_render_as_redis_cli() {
        let mut lab = FreeLab::new();
        lab.run(Client::A, "SET lock:order:1 token-A-111 NX PX 30000");
        assert_eq!(last(&lab, Client::A), "OK");
        lab.run(Client::B, "SET lock:order:1 token-B-222 NX PX 30000");
        assert_eq!(last(&lab, Client::B), "(nil)");
        lab.run(Client::B, "GET lock:order:1");
        assert_eq!(last(&lab, Client::B), "\"token-A-111\"");
        lab.run(Client::C, "EXISTS lock:order:1");
        assert_eq!(last(&lab, Client::C), "(integer) 1");
        lab.run(Client::C, "SET k \"open");
        assert_eq!(last(&lab, Client::C), "Invalid argument(s)");
        lab.run(Client::C, "3 INCR n");
        assert_eq!(last(&lab, Client::C), "(integer) 1\n(integer) 2\n(integer) 3");
        lab.run(Client::C, "   ");
        assert_eq!(lab.transcript(Client::C).len(), 3);
        assert_eq!(lab.transcript(Client::A).len(), 1);
        assert_eq!(
            lab.history(Client::C),
            ["EXISTS lock:order:1", "SET k \"open", "3 INCR n"]
        );
        let executed = lab
            .trace()
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Executed { .. }))
            .count();
        assert_eq!(
            executed, 7,
            "the unparsable line never reached the node; the repeat ran 3 times"
        );
    }

    #[test]
    fn prompt_follows_the_transaction() {
        let mut lab = FreeLab::new();
        assert_eq!(lab.prompt(Client::A), "127.0.0.1:6379> ");
        lab.run(Client::A, "MULTI");
        assert_eq!(lab.prompt(Client::A), "127.0.0.1:6379(TX)> ");
        assert_eq!(lab.prompt(Client::B), "127.0.0.1:6379> ");
        lab.run(Client::A, "SET lock t NX");
        assert_eq!(lab.transcript(Client::A)[1].prompt, "127.0.0.1:6379(TX)> ");
        assert_eq!(lab.transcript(Client::A)[1].output, "QUEUED");
        // Queued, not acquired: no lock until EXEC runs it.
        assert!(locks(&lab).is_empty());
        lab.run(Client::A, "quit");
        assert_eq!(lab.prompt(Client::A), "127.0.0.1:6379> ");
        lab.run(Client::A, "clear");
        assert!(lab.transcript(Client::A).is_empty());
    }

    #[test]
    fn a_lock_is_acquired_renewed_expires_and_is_deleted() {
        let mut lab = FreeLab::new();
        lab.run(Client::A, "SET lock token-A-111 NX PX 10000");
        lab.advance(1000);
        lab.run(Client::A, "PEXPIRE lock 20000");
        lab.advance(30_000);
        lab.run(Client::B, "GET lock");
        assert_eq!(last(&lab, Client::B), "(nil)");
        lab.run(Client::B, "SETNX lock token-B-222");
        lab.run(Client::C, "DEL lock");
        let a = Some(Client::A.actor_index());
        let b = Some(Client::B.actor_index());
        let c = Some(Client::C.actor_index());
        assert_eq!(
            locks(&lab),
            vec![
                (
                    0,
                    "lock".into(),
                    LockChange::Acquired {
                        owner: a,
                        value: "token-A-111".into(),
                        ttl_ms: Some(10_000)
                    }
                ),
                (1000, "lock".into(), LockChange::Renewed { ttl_ms: Some(20_000) }),
                (21_000, "lock".into(), LockChange::Removed { by: None }),
                (
                    31_000,
                    "lock".into(),
                    LockChange::Acquired {
                        owner: b,
                        value: "token-B-222".into(),
                        ttl_ms: None
                    }
                ),
                (31_000, "lock".into(), LockChange::Removed { by: c }),
            ]
        );
        assert!(lab
            .trace()
            .events
            .iter()
            .any(|e| e.at_ms == 21_000 && e.kind == EventKind::Expired { key: "lock".into() }));
        let steps: Vec<u64> = lab.trace().events.iter().map(|e| e.step).collect();
        assert_eq!(steps, (0..steps.len() as u64).collect::<Vec<_>>());
    }

    #[test]
    fn failed_or_plain_sets_are_no_locks() {
        let mut lab = FreeLab::new();
        lab.run(Client::A, "SET k v");
        lab.run(Client::A, "SET k v NX");
        lab.run(Client::A, "SET k2 v XX");
        lab.run(Client::A, "SETNX k v2");
        assert!(locks(&lab).is_empty());
    }
}
