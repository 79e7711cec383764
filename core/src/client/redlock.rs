//! Redlock: one lock over N independent masters.
//!
//! The algorithm as the Redis documentation gives it (lessons 17–21):
//!
//! 1. note the time `T1` on the client's clock;
//! 2. send `SET key token NX PX ttl` — same key, same token — to all N
//!    masters at once, each with a timeout much smaller than the TTL (5–50 ms
//!    for 10 s), so a dead node costs milliseconds, not the lease;
//! 3. when every node has answered or timed out: `elapsed = now − T1`,
//!    `drift = ttl × 0.01 + 2 ms`, `validity = ttl − elapsed − drift`;
//!    the lock is held if at least `N/2 + 1` nodes said OK and validity is
//!    still positive;
//! 4. otherwise release on *all* nodes (including those that seemed to
//!    refuse: their OK may just have been slow) and retry after a random
//!    delay, so competing clients do not collide again in lockstep.
//!
//! The decision of step 3 can be swapped for a condition a person writes
//! ([`RedlockProgram::acquired_if`], [`super::condition`]): the "write the
//! validity check" exercise runs the candidate's rule in this very client.
//!
//! Extension sends a compare-and-extend to every node and counts only with
//! a majority, and only if it finishes within the current validity.
//!
//! What Redlock cannot give is a fencing token: there is no single counter
//! the masters agree on. With `fencing: incr_after` this program takes one
//! from the first node anyway (one node's counter, non-atomic with the
//! lock), which is precisely the weakness Kleppmann's analysis points at.

use serde::{Deserialize, Serialize};

use super::condition::{Condition, Round as Figures};
use super::lock::{Fencing, Token, Work};
use super::ops::{Release, Renew};
use super::{acquired, argv, Ctx, Input, ProgramError, Target};
use crate::reply::Reply;

/// Extend the lock on a majority while working.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Extend {
    /// Default: a third of the TTL.
    pub every_ms: Option<u64>,
    /// Default: no cap. The documentation insists on one.
    pub max_extensions: Option<u32>,
    pub renew: Renew,
}

/// A Redlock client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RedlockProgram {
    pub key: String,
    pub ttl_ms: u64,
    /// The masters to use; empty: every node in the world.
    pub nodes: Vec<u32>,
    pub per_node_timeout_ms: u64,
    /// Retries after the first attempt.
    pub retry_count: u32,
    /// Maximum delay between attempts.
    pub retry_delay_ms: u64,
    /// Draw the delay uniformly from `0..=retry_delay_ms` (else: fixed).
    pub retry_jitter: bool,
    pub token: Token,
    pub fencing: Fencing,
    pub work: Work,
    pub write: bool,
    pub extend: Option<Extend>,
    pub release: Release,
    pub cycles: u32,
    pub think_ms: u64,
    /// Step 3's decision as a condition over `oks`, `n`, `ttl`, `elapsed`
    /// and `drift` ([`super::condition`]); absent: redis.io's rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acquired_if: Option<String>,
}

impl Default for RedlockProgram {
    fn default() -> Self {
        RedlockProgram {
            key: "lock".to_owned(),
            ttl_ms: 1_000,
            nodes: Vec::new(),
            per_node_timeout_ms: 50,
            retry_count: 3,
            retry_delay_ms: 200,
            retry_jitter: true,
            token: Token::Unique,
            fencing: Fencing::Off,
            work: Work::default(),
            write: true,
            extend: None,
            release: Release::Lua,
            cycles: 1,
            think_ms: 0,
            acquired_if: None,
        }
    }
}

// Request tags: a base per phase plus the node's position.
const ACQ: u32 = 1_000;
const EXT: u32 = 2_000;
const REL: u32 = 3_000;
const REL_DEL: u32 = 4_000;
const INCR: u32 = 5_000;
const SPAN: u32 = 1_000;
// Timers.
const T_RETRY: u32 = 1;
const T_WORK: u32 = 2;
const T_EXTEND: u32 = 3;
const T_THINK: u32 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Acquiring,
    Fencing,
    Working,
    Backoff,
    Done,
}

/// A round of requests to every node: how many are still out, how many
/// said yes, when it started.
#[derive(Clone, Copy, Debug, Default)]
struct Round {
    start: u64,
    outstanding: u32,
    oks: u32,
}

/// The running form of a [`RedlockProgram`].
#[derive(Clone, Debug)]
pub struct RedlockMachine {
    p: RedlockProgram,
    nodes: Vec<u32>,
    phase: Phase,
    cycle: u32,
    attempt: u32,
    token: String,
    fence: Option<i64>,
    round: Round,
    extending: Option<Round>,
    extensions: u32,
    /// Client-clock time at which the lock's validity ends.
    validity_end: u64,
    /// The written decision, if the program has one.
    condition: Option<Condition>,
}

impl RedlockMachine {
    pub fn new(p: &RedlockProgram, nodes: u32) -> Result<RedlockMachine, ProgramError> {
        let list: Vec<u32> = if p.nodes.is_empty() {
            (0..nodes).collect()
        } else {
            p.nodes.clone()
        };
        if list.is_empty() {
            return Err(ProgramError::Invalid("redlock: no nodes".into()));
        }
        if let Some(bad) = list.iter().find(|&&n| n >= nodes) {
            return Err(ProgramError::Invalid(format!("redlock: no node {bad}")));
        }
        if list.len() >= SPAN as usize {
            return Err(ProgramError::Invalid("redlock: too many nodes".into()));
        }
        if p.ttl_ms == 0 || p.key.is_empty() {
            return Err(ProgramError::Invalid(
                "redlock: needs a key and a positive ttl_ms".into(),
            ));
        }
        if p.work.min_ms > p.work.max_ms {
            return Err(ProgramError::Invalid("redlock: work.min_ms > work.max_ms".into()));
        }
        let condition = match &p.acquired_if {
            Some(text) => {
                Some(Condition::parse(text).map_err(|e| ProgramError::Invalid(format!("redlock: acquired_if: {e}")))?)
            }
            None => None,
        };
        Ok(RedlockMachine {
            condition,
            p: p.clone(),
            nodes: list,
            phase: Phase::Idle,
            cycle: 0,
            attempt: 0,
            token: String::new(),
            fence: None,
            round: Round::default(),
            extending: None,
            extensions: 0,
            validity_end: 0,
        })
    }

    fn n(&self) -> u32 {
        self.nodes.len() as u32
    }

    fn quorum(&self) -> u32 {
        self.n() / 2 + 1
    }

    /// `ttl × 0.01 + 2 ms`, in integer milliseconds.
    fn drift(&self) -> u64 {
        self.p.ttl_ms / 100 + 2
    }

    pub fn handle(&mut self, cx: &mut Ctx<'_>, input: Input) {
        match input {
            Input::Start if self.phase == Phase::Idle && self.cycle == 0 => self.begin_cycle(cx),
            Input::Start => {}
            Input::Timer { tag } => match (tag, self.phase) {
                (T_RETRY, Phase::Backoff) => self.attempt_acquire(cx),
                (T_THINK, Phase::Idle) => self.begin_cycle(cx),
                (T_WORK, Phase::Working) => self.work_done(cx),
                (T_EXTEND, Phase::Working) => self.extend(cx),
                _ => {}
            },
            Input::Reply { tag, replies } => self.on_reply(cx, tag, Some(&replies)),
            Input::Failed { tag } => self.on_reply(cx, tag, None),
        }
    }

    fn begin_cycle(&mut self, cx: &mut Ctx<'_>) {
        if self.cycle >= self.p.cycles {
            self.phase = Phase::Done;
            cx.done();
            return;
        }
        self.attempt = 0;
        self.fence = None;
        self.extensions = 0;
        self.token = self.p.token.for_cycle(cx, self.cycle);
        self.attempt_acquire(cx);
    }

    fn attempt_acquire(&mut self, cx: &mut Ctx<'_>) {
        self.attempt += 1;
        self.phase = Phase::Acquiring;
        self.round = Round {
            start: cx.now,
            outstanding: self.n(),
            oks: 0,
        };
        let ttl = self.p.ttl_ms.to_string();
        for (i, &node) in self.nodes.iter().enumerate() {
            let cmd = argv(&["SET", &self.p.key, &self.token, "NX", "PX", &ttl]);
            cx.send(
                ACQ + i as u32,
                Target::Node(node),
                vec![cmd],
                Some(self.p.per_node_timeout_ms),
            );
        }
    }

    fn on_reply(&mut self, cx: &mut Ctx<'_>, tag: u32, replies: Option<&[Reply]>) {
        let base = tag / SPAN * SPAN;
        let i = (tag % SPAN) as usize;
        let ok = matches!(replies, Some([r]) if acquired(r));
        match base {
            ACQ if self.phase == Phase::Acquiring => {
                self.round.outstanding = self.round.outstanding.saturating_sub(1);
                self.round.oks += u32::from(ok);
                if self.round.outstanding == 0 {
                    self.decide(cx);
                }
            }
            EXT if self.phase == Phase::Working => {
                if let Some(r) = &mut self.extending {
                    r.outstanding = r.outstanding.saturating_sub(1);
                    r.oks += u32::from(ok);
                    if r.outstanding == 0 {
                        self.extended(cx);
                    }
                }
            }
            REL if self.p.release == Release::GetThenDel => {
                if let (Some([Reply::Bulk(v)]), Some(&node)) = (replies, self.nodes.get(i)) {
                    if *v == self.token.as_bytes() {
                        cx.send(
                            REL_DEL + i as u32,
                            Target::Node(node),
                            vec![argv(&["DEL", &self.p.key])],
                            Some(self.p.per_node_timeout_ms),
                        );
                    }
                }
            }
            INCR if self.phase == Phase::Fencing && tag == INCR => {
                if let Some([Reply::Integer(t)]) = replies {
                    self.fence = Some(*t);
                }
                self.start_work(cx);
            }
            _ => {}
        }
    }

    fn decide(&mut self, cx: &mut Ctx<'_>) {
        let elapsed = cx.now.saturating_sub(self.round.start);
        let validity = self.p.ttl_ms as i64 - elapsed as i64 - self.drift() as i64;
        let (got, rule) = match &self.condition {
            None => (self.round.oks >= self.quorum() && validity > 0, String::new()),
            Some(c) => {
                let figures = Figures {
                    oks: i64::from(self.round.oks),
                    n: i64::from(self.n()),
                    ttl: self.p.ttl_ms as i64,
                    elapsed: elapsed as i64,
                    drift: self.drift() as i64,
                };
                match c.holds(&figures) {
                    Ok(b) => (b, format!(" (by the written rule: {b})")),
                    Err(e) => (false, format!(" (the written rule failed: {e})")),
                }
            }
        };
        cx.note(format!(
            "{}/{} nodes in {elapsed} ms, validity {validity} ms: {}{rule}",
            self.round.oks,
            self.n(),
            if got { "lock acquired" } else { "not acquired" }
        ));
        if got {
            // A written rule may take a lease that is already over: its
            // validity then ends before it began.
            self.validity_end = self.round.start.saturating_add_signed(validity);
            cx.hold(&self.p.key);
            if let Fencing::IncrAfter { counter } | Fencing::Transaction { counter } = &self.p.fencing {
                self.phase = Phase::Fencing;
                let cmd = argv(&["INCR", counter]);
                cx.send(
                    INCR,
                    Target::Node(self.nodes[0]),
                    vec![cmd],
                    Some(self.p.per_node_timeout_ms),
                );
            } else {
                self.start_work(cx);
            }
            return;
        }
        self.release_all(cx);
        if self.attempt > self.p.retry_count {
            cx.note(format!("gave up after {} attempts", self.attempt));
            self.next_cycle(cx);
            return;
        }
        let delay = if self.p.retry_jitter {
            cx.rng.below(self.p.retry_delay_ms + 1)
        } else {
            self.p.retry_delay_ms
        };
        self.phase = Phase::Backoff;
        cx.timer(T_RETRY, delay);
    }

    fn start_work(&mut self, cx: &mut Ctx<'_>) {
        self.phase = Phase::Working;
        self.p.work.start(cx, T_WORK);
        if self.p.extend.is_some() {
            cx.timer(T_EXTEND, self.extend_every());
        }
    }

    fn extend_every(&self) -> u64 {
        super::lock::renew_every(self.p.extend.and_then(|e| e.every_ms), self.p.ttl_ms)
    }

    fn extend(&mut self, cx: &mut Ctx<'_>) {
        let Some(e) = self.p.extend else { return };
        self.extending = Some(Round {
            start: cx.now,
            outstanding: self.n(),
            oks: 0,
        });
        for (i, &node) in self.nodes.iter().enumerate() {
            let cmd = e.renew.command(&self.p.key, &self.token, self.p.ttl_ms);
            cx.send(
                EXT + i as u32,
                Target::Node(node),
                vec![cmd],
                Some(self.p.per_node_timeout_ms),
            );
        }
    }

    fn extended(&mut self, cx: &mut Ctx<'_>) {
        let Some(r) = self.extending.take() else { return };
        let Some(e) = self.p.extend else { return };
        let elapsed = cx.now.saturating_sub(r.start);
        let validity = self.p.ttl_ms as i64 - elapsed as i64 - self.drift() as i64;
        let in_time = r.start < self.validity_end;
        if r.oks >= self.quorum() && validity > 0 && in_time {
            self.validity_end = r.start + validity as u64;
            self.extensions += 1;
            cx.note(format!(
                "extended on {}/{} nodes, validity {validity} ms",
                r.oks,
                self.n()
            ));
            if e.max_extensions.is_none_or(|m| self.extensions < m) {
                cx.timer(T_EXTEND, self.extend_every());
            }
        } else {
            cx.note(format!(
                "extension failed ({}/{} nodes{}): the lock is lost",
                r.oks,
                self.n(),
                if in_time { "" } else { ", validity already over" }
            ));
            cx.unhold(&self.p.key);
            cx.cancel(T_WORK);
            self.release_all(cx);
            self.next_cycle(cx);
        }
    }

    fn work_done(&mut self, cx: &mut Ctx<'_>) {
        if self.p.write {
            cx.write(self.fence, format!("{}#{}", cx.name, self.cycle + 1));
        }
        cx.cancel(T_EXTEND);
        self.extending = None;
        cx.unhold(&self.p.key);
        self.release_all(cx);
        self.next_cycle(cx);
    }

    /// Release on every node, without waiting: the lock is given up either
    /// way, and a node that does not answer will let the key expire.
    fn release_all(&mut self, cx: &mut Ctx<'_>) {
        let Some(cmd) = self.p.release.first_command(&self.p.key, &self.token) else {
            return;
        };
        for (i, &node) in self.nodes.iter().enumerate() {
            cx.send(
                REL + i as u32,
                Target::Node(node),
                vec![cmd.clone()],
                Some(self.p.per_node_timeout_ms),
            );
        }
    }

    fn next_cycle(&mut self, cx: &mut Ctx<'_>) {
        self.cycle += 1;
        self.phase = Phase::Idle;
        if self.cycle >= self.p.cycles {
            self.phase = Phase::Done;
            cx.done();
        } else if self.p.think_ms > 0 {
            cx.timer(T_THINK, self.p.think_ms);
        } else {
            self.begin_cycle(cx);
        }
    }
}
