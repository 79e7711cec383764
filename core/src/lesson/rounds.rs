//! Redlock rounds read back off a trace, for the transcript and the step
//! list of lessons 17–21.
//!
//! A Redlock program decides from figures a trainee should see: which node
//! answered what and when, how long the round took, the validity that is
//! left, and whether that is a majority. The program itself only leaves a
//! one-line note; the rest is in the trace (every `Sent`, `Received`,
//! `TimedOut` of its requests), so a round is rebuilt here from those
//! events rather than recorded twice.
//!
//! The arithmetic is the one the Redis documentation gives ("Distributed
//! Locks with Redis", the Redlock algorithm, step 3 and the paragraph on
//! clock drift): `elapsed = now − T1`, `drift = TTL × 1 % + 2 ms` (1 % of
//! the TTL for clock drift between processes, plus 2 ms for the
//! millisecond granularity of expires), `validity = TTL − elapsed − drift`;
//! the lock is held when at least `N/2 + 1` nodes said yes and the
//! validity is still positive. `core/src/client/redlock.rs` decides with
//! the same formula; the lesson tests check both agree.

use std::collections::BTreeMap;

use super::Lang;
use crate::actor::{Actor, Names};
use crate::client::{Program, RedlockProgram};
use crate::reply::Reply;
use crate::trace::{Event, EventKind};

use super::Lesson;

/// How a node answered one request of a round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The reply, as redis-cli prints it.
    Reply(String),
    /// The client stopped waiting (the per-node timeout).
    TimedOut,
    /// No answer by the time the round was decided.
    Pending,
}

/// One node's part in a round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAnswer {
    pub node: u32,
    pub answer: Answer,
    /// When the answer came, after the round started (ms).
    pub after_ms: u64,
    /// Did the node say yes (`OK` to `SET NX`, `1` to an extension)?
    pub yes: bool,
}

/// One acquisition or extension round of a Redlock client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    pub client: u32,
    pub key: String,
    /// An extension round rather than an acquisition.
    pub extend: bool,
    /// World time the requests went out (T1).
    pub start_ms: u64,
    pub answers: Vec<NodeAnswer>,
    pub yes: u32,
    pub nodes: u32,
    pub majority: u32,
    pub ttl_ms: u64,
    pub elapsed_ms: u64,
    pub drift_ms: u64,
    pub validity_ms: i64,
    /// The program's decision: the lock is held (extended).
    pub held: bool,
    /// The program's own note for this round.
    pub note: String,
    /// Index in the trace of the decision.
    pub at_event: usize,
}

/// `TTL × 1 % + 2 ms`, as the Redis documentation sizes the drift margin.
pub fn drift_ms(ttl_ms: u64) -> u64 {
    ttl_ms / 100 + 2
}

/// The Redlock programs of a lesson, by client name and key.
fn programs(lesson: &Lesson) -> Vec<(&str, &RedlockProgram)> {
    lesson
        .steps
        .iter()
        .filter_map(|s| match (&s.client, &s.program) {
            (Some(c), Some(Program::Redlock(r))) => Some((c.as_str(), r)),
            _ => None,
        })
        .collect()
}

fn is_acquire(cmd: &[String]) -> bool {
    cmd.first().is_some_and(|c| c.eq_ignore_ascii_case("set"))
        && cmd.iter().skip(3).any(|a| a.eq_ignore_ascii_case("nx"))
}

fn is_extend(cmd: &[String]) -> bool {
    let name = cmd.first().map(|c| c.to_ascii_lowercase()).unwrap_or_default();
    (name == "eval" && cmd.get(1).is_some_and(|s| s.contains("pexpire")))
        || name == "pexpire"
        || (name == "set" && cmd.iter().any(|a| a.eq_ignore_ascii_case("ifeq")))
}

/// Every Redlock round in `trace` (up to `upto` events).
pub fn rounds(lesson: &Lesson, trace: &[Event], names: &Names) -> Vec<Round> {
    let progs = programs(lesson);
    if progs.is_empty() {
        return Vec::new();
    }
    let params = |client: &str, key: &str| {
        progs
            .iter()
            .find(|(c, p)| *c == client && p.key == key)
            .map(|(_, p)| *p)
    };
    let mut book = Rounds::default();
    for (i, e) in trace.iter().enumerate() {
        let Actor::Client(c) = e.actor else { continue };
        match &e.kind {
            EventKind::Sent { req, node, commands } => {
                let Some(cmd) = commands.first() else { continue };
                let (acq, ext) = (is_acquire(cmd), is_extend(cmd));
                if !(acq || ext) {
                    continue;
                }
                let key_at = if cmd[0].eq_ignore_ascii_case("eval") { 3 } else { 1 };
                let Some(key) = cmd.get(key_at) else { continue };
                let Some(p) = params(names.client(c), key) else {
                    continue;
                };
                let round = book
                    .open
                    .entry(c)
                    .or_insert_with(|| Round::begin(c, key, ext, p.ttl_ms, e.at_ms, i));
                round.answers.push(NodeAnswer {
                    node: *node,
                    answer: Answer::Pending,
                    after_ms: 0,
                    yes: false,
                });
                let argv = cmd.iter().map(|a| a.as_bytes().to_vec()).collect();
                book.reqs.insert(*req, (c, argv));
            }
            EventKind::Received { req, node, replies } => book.received(c, e.at_ms, *req, *node, replies),
            EventKind::TimedOut { req, node } => book.timed_out(c, e.at_ms, *req, *node),
            EventKind::Note { text } => book.decided(c, i, e.at_ms, text),
            _ => {}
        }
    }
    book.done
}

/// The rounds as the trace is read: those still open (one per client),
/// their requests, and those decided.
#[derive(Default)]
struct Rounds {
    open: BTreeMap<u32, Round>,
    /// req → (client, command) for requests in an open round.
    reqs: BTreeMap<u64, (u32, Vec<Vec<u8>>)>,
    done: Vec<Round>,
}

impl Rounds {
    /// A node answered one of the round's requests.
    fn received(&mut self, c: u32, at_ms: u64, req: u64, node: u32, replies: &[Reply]) {
        let Some((_, argv)) = self.reqs.remove(&req) else {
            return;
        };
        let Some(round) = self.open.get_mut(&c) else { return };
        let Some(reply) = replies.first() else { return };
        let start_ms = round.start_ms;
        if let Some(a) = round.pending(node) {
            let text = crate::cli::render(&argv, reply).trim_end().to_owned();
            a.yes = matches!(reply, Reply::Status(s) if s == "OK") || *reply == Reply::Integer(1);
            a.answer = Answer::Reply(text);
            a.after_ms = at_ms - start_ms;
        }
    }

    /// The client stopped waiting for a node.
    fn timed_out(&mut self, c: u32, at_ms: u64, req: u64, node: u32) {
        if self.reqs.remove(&req).is_none() {
            return;
        }
        let Some(round) = self.open.get_mut(&c) else { return };
        let start_ms = round.start_ms;
        if let Some(a) = round.pending(node) {
            a.answer = Answer::TimedOut;
            a.after_ms = at_ms - start_ms;
        }
    }

    /// The program's note that decides the round (`… nodes in …`,
    /// `extended on …`, `extension failed …`) closes it with its figures.
    fn decided(&mut self, c: u32, i: usize, at_ms: u64, text: &str) {
        let decided =
            text.contains(" nodes in ") || text.starts_with("extended on") || text.starts_with("extension failed");
        if !decided {
            return;
        }
        let Some(mut r) = self.open.remove(&c) else { return };
        self.reqs.retain(|_, (owner, _)| *owner != c);
        r.nodes = r.answers.len() as u32;
        r.majority = r.nodes / 2 + 1;
        r.yes = r.answers.iter().filter(|a| a.yes).count() as u32;
        r.elapsed_ms = at_ms - r.start_ms;
        r.validity_ms = r.ttl_ms as i64 - r.elapsed_ms as i64 - r.drift_ms as i64;
        r.held = text.ends_with("lock acquired") || text.starts_with("extended on");
        r.note = text.to_owned();
        r.at_event = i;
        self.done.push(r);
    }
}

impl Round {
    /// A round whose first request went out at `start_ms` (event `i`).
    fn begin(client: u32, key: &str, extend: bool, ttl_ms: u64, start_ms: u64, i: usize) -> Round {
        Round {
            client,
            key: key.to_owned(),
            extend,
            start_ms,
            answers: Vec::new(),
            yes: 0,
            nodes: 0,
            majority: 0,
            ttl_ms,
            elapsed_ms: 0,
            drift_ms: drift_ms(ttl_ms),
            validity_ms: 0,
            held: false,
            note: String::new(),
            at_event: i,
        }
    }

    /// The node's answer still awaited in this round.
    fn pending(&mut self, node: u32) -> Option<&mut NodeAnswer> {
        self.answers
            .iter_mut()
            .find(|a| a.node == node && a.answer == Answer::Pending)
    }

    /// The round in a few lines: each node's answer, then the arithmetic
    /// and the verdict.
    pub fn lines(&self, names: &Names, lang: Lang) -> Vec<String> {
        let who = names.client(self.client);
        let answers: Vec<String> = self
            .answers
            .iter()
            .map(|a| {
                let node = names.node(a.node);
                match (&a.answer, lang) {
                    (Answer::Reply(r), _) => format!("{node} {r} ({} ms)", a.after_ms),
                    (Answer::TimedOut, Lang::En) => format!("{node} timed out ({} ms)", a.after_ms),
                    (Answer::TimedOut, Lang::Zh) => format!("{node} 超时（{} ms）", a.after_ms),
                    (Answer::Pending, Lang::En) => format!("{node} no answer yet"),
                    (Answer::Pending, Lang::Zh) => format!("{node} 尚未回复"),
                }
            })
            .collect();
        let formula = format!(
            "{} − {} − {} = {} ms",
            self.ttl_ms, self.elapsed_ms, self.drift_ms, self.validity_ms
        );
        let zh = lang == Lang::Zh;
        let pick = |en: &'static str, zh_text: &'static str| if zh { zh_text } else { en };
        let (yes, nodes, majority) = (self.yes, self.nodes, self.majority);
        let (elapsed, drift, key) = (self.elapsed_ms, self.drift_ms, &self.key);
        let kind = if self.extend {
            pick("extension", "续期")
        } else {
            pick("round", "加锁轮次")
        };
        let reached = if yes >= majority {
            pick("reached", "，已达到")
        } else {
            pick("not reached", "，未达到")
        };
        let verdict = match (self.held, self.extend) {
            (true, false) => pick("lock acquired", "加锁成功"),
            (true, true) => pick("extended", "续期成功"),
            (false, false) => pick("not acquired", "加锁失败"),
            (false, true) => pick("extension failed", "续期失败"),
        };
        if zh {
            vec![
                format!("{who} 的 Redlock {kind}（{key}）：{}", answers.join("，")),
                format!(
                    "  同意 {yes}/{nodes}，多数派需 {majority} 个{reached}；耗时 {elapsed} ms；漂移余量 {drift} ms = TTL × 1 % + 2 ms；有效时间 = TTL − 耗时 − 漂移 = {formula} → {verdict}"
                ),
            ]
        } else {
            vec![
                format!("Redlock {kind} by {who} on {key}: {}", answers.join(", ")),
                format!(
                    "  {yes}/{nodes} yes, majority {majority} {reached}; elapsed {elapsed} ms; drift {drift} ms = TTL × 1 % + 2 ms; validity = TTL − elapsed − drift = {formula} → {verdict}"
                ),
            ]
        }
    }
}
