//! The single-instance lock client: acquire, (fence), work, write, release.
//!
//! This is the program from the articles' pseudo-code (lesson 23), with
//! every choice the lessons compare made explicit:
//!
//! * **acquire** — `SET key token NX PX ttl` (atomic), or the classic bug
//!   `SETNX key token` followed by a separate `EXPIRE`: a crash between the
//!   two leaves a lock with no TTL, held by nobody, forever.
//! * **token** — unique per acquisition, or one fixed value shared by
//!   everyone (lesson 04: then no release can tell owners apart).
//! * **retry** — fixed, exponential, or jittered exponential backoff, with a
//!   maximum number of attempts and/or a deadline.
//! * **fencing** — a monotonically increasing number from `INCR`, taken
//!   either *inside the same transaction* as the lock (`MULTI`, `SET … NX`,
//!   `INCR`, `EXEC`: the number is handed out atomically with the lock, so
//!   holder order and token order agree) or with a separate `INCR` after the
//!   acquire (a pause between the two hands an earlier holder a larger
//!   token — fencing that does not fence).
//! * **watchdog** — renew every `ttl/3` while working, with an optional cap
//!   (Redisson's lease, lessons 13–14).
//! * **release** — one of [`Release`]'s variants.
//!
//! The program believes it holds the lock from the moment it sees the
//! acquire succeed until it starts its release (or learns from a refused
//! renewal that the lock is gone). It never re-checks the clock before
//! writing: like most real code, it trusts that it still holds the lock —
//! which is what a pause exploits.

use serde::{Deserialize, Serialize};

use super::ops::{Release, Renew};
use super::scripts::LockScripts;
use super::{acquired, argv, Argv, Ctx, Input, ProgramError, Target};
use crate::reply::Reply;

/// How the lock is taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Acquire {
    /// `SET key token NX PX ttl`: value and TTL in one atomic command.
    #[default]
    #[serde(rename = "set-nx-px")]
    SetNxPx,
    /// `SETNX key token`, then `EXPIRE`/`PEXPIRE key ttl` as a second
    /// request.
    #[serde(rename = "setnx-expire")]
    SetnxExpire,
}

impl Acquire {
    pub fn name(self) -> &'static str {
        match self {
            Acquire::SetNxPx => "set-nx-px",
            Acquire::SetnxExpire => "setnx-expire",
        }
    }

    pub fn parse(s: &str) -> Option<Acquire> {
        [Acquire::SetNxPx, Acquire::SetnxExpire]
            .into_iter()
            .find(|a| a.name() == s)
    }
}

/// What value the lock key holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Token {
    /// `<client>-<cycle>-<random>`, unique per acquisition.
    #[default]
    Unique,
    /// The same value for every client and every acquisition.
    Fixed(String),
}

impl Token {
    /// The token for acquisition `cycle` (from 0). A unique one is drawn
    /// from the seeded RNG: what `/dev/urandom` would give a real client,
    /// but replayable.
    pub(crate) fn for_cycle(&self, cx: &mut Ctx<'_>, cycle: u32) -> String {
        match self {
            Token::Unique => format!("{}-{}-{:06x}", cx.name, cycle + 1, cx.rng.below(1 << 24)),
            Token::Fixed(v) => v.clone(),
        }
    }
}

/// Where a fencing token comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fencing {
    /// No token; writes carry none.
    #[default]
    Off,
    /// `MULTI`, the acquire, `INCR counter`, `EXEC`, sent as one pipeline.
    Transaction { counter: String },
    /// A separate `INCR counter` after the acquire succeeded.
    IncrAfter { counter: String },
}

impl Fencing {
    pub fn is_on(&self) -> bool {
        !matches!(self, Fencing::Off)
    }
}

/// The wait between failed attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Backoff {
    /// The same delay every time. Competing clients retry in lockstep.
    Fixed { ms: u64 },
    /// `base × 2^(attempt−1)`, capped at `max_ms`.
    Exponential { base_ms: u64, max_ms: u64 },
    /// "Full jitter": uniform in `0..=min(max, base × 2^(attempt−1))`.
    Jittered { base_ms: u64, max_ms: u64 },
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::Jittered {
            base_ms: 25,
            max_ms: 200,
        }
    }
}

impl Backoff {
    /// The delay after failed attempt number `attempt` (from 1).
    pub fn delay(self, attempt: u32, rng: &mut crate::rng::Rng) -> u64 {
        let exp = |base: u64, max: u64| base.saturating_mul(1u64 << attempt.saturating_sub(1).min(30)).min(max);
        match self {
            Backoff::Fixed { ms } => ms,
            Backoff::Exponential { base_ms, max_ms } => exp(base_ms, max_ms),
            Backoff::Jittered { base_ms, max_ms } => rng.below(exp(base_ms, max_ms) + 1),
        }
    }
}

/// When to stop trying.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Retry {
    /// Attempts in total, the first included (`None`: unlimited).
    pub max_attempts: Option<u32>,
    pub backoff: Backoff,
    /// Give up once this long has passed since the first attempt.
    pub deadline_ms: Option<u64>,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max_attempts: None,
            backoff: Backoff::default(),
            deadline_ms: Some(5_000),
        }
    }
}

/// The critical section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Work {
    /// Duration drawn uniformly from `min_ms..=max_ms` (client clock).
    pub min_ms: u64,
    pub max_ms: u64,
    /// The work never finishes (a hung business thread): only a watchdog
    /// without a cap keeps the lock then, forever.
    pub hang: bool,
}

impl Work {
    /// Enter the critical section: `tag` fires when the work is done, after
    /// a duration drawn from `min_ms..=max_ms` — never, if the work hangs.
    pub(crate) fn start(&self, cx: &mut Ctx<'_>, tag: u32) {
        if !self.hang {
            let d = cx.rng.between(self.min_ms, self.max_ms);
            cx.timer(tag, d);
        }
    }
}

/// How often a lease is renewed: as configured, or every third of the TTL
/// (Redisson's watchdog default), and never more often than every 1 ms.
pub(crate) fn renew_every(configured_ms: Option<u64>, ttl_ms: u64) -> u64 {
    configured_ms.unwrap_or(ttl_ms / 3).max(1)
}

impl Default for Work {
    fn default() -> Self {
        Work {
            min_ms: 50,
            max_ms: 400,
            hang: false,
        }
    }
}

/// Renew the lease while working.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Watchdog {
    /// Default: a third of the TTL, as Redisson does.
    pub interval_ms: Option<u64>,
    /// Stop renewing after this many renewals (`None`: never stop).
    pub max_renewals: Option<u32>,
    pub renew: Renew,
}

/// `WAIT replicas timeout` after acquiring (lesson 16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitReplicas {
    pub replicas: u32,
    pub timeout_ms: u64,
}

/// A lock client against one node (or a replicated master).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LockProgram {
    pub key: String,
    pub ttl_ms: u64,
    pub acquire: Acquire,
    pub token: Token,
    pub fencing: Fencing,
    pub retry: Retry,
    pub work: Work,
    /// Write to the resource at the end of the work.
    pub write: bool,
    pub release: Release,
    pub watchdog: Option<Watchdog>,
    pub wait: Option<WaitReplicas>,
    /// The user's own acquire/release/extend scripts, used instead of
    /// `acquire`, `release` and the watchdog's `renew` where given.
    pub scripts: Option<LockScripts>,
    /// Before writing, check on the client's own clock that the lease has
    /// not run out since the acquire was sent, and skip the write if it
    /// has. The check and the write are two moments (the write is sent on
    /// the next turn of the client's loop), so a pause can still fall
    /// between them — which is Kleppmann's point about checking.
    pub check_validity: bool,
    /// Acquire–work–release this many times.
    pub cycles: u32,
    /// Pause between cycles.
    pub think_ms: u64,
    /// Per-request timeout (client clock).
    pub timeout_ms: u64,
    pub target: Target,
}

impl Default for LockProgram {
    fn default() -> Self {
        LockProgram {
            key: "lock".to_owned(),
            ttl_ms: 1_000,
            acquire: Acquire::default(),
            token: Token::default(),
            fencing: Fencing::default(),
            retry: Retry::default(),
            work: Work::default(),
            write: true,
            release: Release::default(),
            watchdog: None,
            wait: None,
            scripts: None,
            check_validity: false,
            cycles: 1,
            think_ms: 0,
            timeout_ms: 200,
            target: Target::Master,
        }
    }
}

// Request tags.
const ACQ: u32 = 1;
const EXPIRE: u32 = 2;
const INCR: u32 = 3;
const WAIT: u32 = 4;
const RENEW: u32 = 5;
const REL: u32 = 6;
const REL_DEL: u32 = 7;
// Timer tags.
const T_BACKOFF: u32 = 1;
const T_WORK: u32 = 2;
const T_WATCHDOG: u32 = 3;
const T_THINK: u32 = 4;
const T_WRITE: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Acquiring,
    Expiring,
    Fencing,
    Waiting,
    Working,
    Releasing,
    Confirming,
    Backoff,
    Done,
}

/// The running form of a [`LockProgram`].
#[derive(Clone, Debug)]
pub struct LockMachine {
    p: LockProgram,
    phase: Phase,
    cycle: u32,
    attempt: u32,
    cycle_start: u64,
    /// Client time at which the successful acquire was sent.
    attempt_sent: u64,
    acquired_at: u64,
    token: String,
    fence: Option<i64>,
    renewals: u32,
}

impl LockMachine {
    pub fn new(p: &LockProgram, nodes: u32) -> Result<LockMachine, ProgramError> {
        if p.key.is_empty() {
            return Err(ProgramError::Invalid("lock program: empty key".into()));
        }
        if p.ttl_ms == 0 {
            return Err(ProgramError::Invalid("lock program: ttl_ms must be positive".into()));
        }
        if p.work.min_ms > p.work.max_ms {
            return Err(ProgramError::Invalid("lock program: work.min_ms > work.max_ms".into()));
        }
        if let Target::Node(n) = p.target {
            if n >= nodes {
                return Err(ProgramError::Invalid(format!("lock program: no node {n}")));
            }
        }
        Ok(LockMachine {
            p: p.clone(),
            phase: Phase::Idle,
            cycle: 0,
            attempt: 0,
            cycle_start: 0,
            attempt_sent: 0,
            acquired_at: 0,
            token: String::new(),
            fence: None,
            renewals: 0,
        })
    }

    pub fn handle(&mut self, cx: &mut Ctx<'_>, input: Input) {
        match input {
            Input::Start if self.phase == Phase::Idle && self.cycle == 0 => self.begin_cycle(cx),
            Input::Timer { tag } => match (tag, self.phase) {
                (T_BACKOFF, Phase::Backoff) => self.attempt_acquire(cx),
                (T_THINK, Phase::Idle) => self.begin_cycle(cx),
                (T_WORK, Phase::Working) => self.work_done(cx),
                (T_WRITE, Phase::Working) => self.write_and_release(cx),
                (T_WATCHDOG, Phase::Working) => self.renew(cx),
                _ => {}
            },
            Input::Reply { tag, replies } => self.on_reply(cx, tag, Some(&replies)),
            Input::Failed { tag } => self.on_reply(cx, tag, None),
            Input::Start => {}
        }
    }

    fn send(&self, cx: &mut Ctx<'_>, tag: u32, commands: Vec<Argv>) {
        cx.send(tag, self.p.target, commands, Some(self.p.timeout_ms));
    }

    fn begin_cycle(&mut self, cx: &mut Ctx<'_>) {
        if self.cycle >= self.p.cycles {
            self.phase = Phase::Done;
            cx.done();
            return;
        }
        self.attempt = 0;
        self.cycle_start = cx.now;
        self.fence = None;
        self.renewals = 0;
        self.token = self.p.token.for_cycle(cx, self.cycle);
        self.attempt_acquire(cx);
    }

    fn attempt_acquire(&mut self, cx: &mut Ctx<'_>) {
        self.attempt += 1;
        self.phase = Phase::Acquiring;
        self.attempt_sent = cx.now;
        let key = self.p.key.as_str();
        let script = self.p.scripts.as_ref().and_then(|s| s.acquire.as_deref());
        let first = match (script, self.p.acquire) {
            (Some(src), _) => LockScripts::eval(src, key, &self.token, self.p.ttl_ms),
            (None, Acquire::SetNxPx) => argv(&["SET", key, &self.token, "NX", "PX", &self.p.ttl_ms.to_string()]),
            (None, Acquire::SetnxExpire) => argv(&["SETNX", key, &self.token]),
        };
        let commands = match &self.p.fencing {
            Fencing::Transaction { counter } => {
                vec![argv(&["MULTI"]), first, argv(&["INCR", counter]), argv(&["EXEC"])]
            }
            _ => vec![first],
        };
        self.send(cx, ACQ, commands);
    }

    fn on_reply(&mut self, cx: &mut Ctx<'_>, tag: u32, replies: Option<&[Reply]>) {
        match (tag, self.phase) {
            (ACQ, Phase::Acquiring) => {
                let (ok, fence) = match replies {
                    None => (false, None),
                    Some(r) => self.interpret_acquire(r),
                };
                if ok {
                    self.fence = fence;
                    self.acquired_at = self.attempt_sent;
                    cx.hold(&self.p.key);
                    if self.p.acquire == Acquire::SetnxExpire && self.script(|s| &s.acquire).is_none() {
                        self.phase = Phase::Expiring;
                        let ttl = self.p.ttl_ms;
                        let cmd = if ttl.is_multiple_of(1000) {
                            argv(&["EXPIRE", &self.p.key, &(ttl / 1000).to_string()])
                        } else {
                            argv(&["PEXPIRE", &self.p.key, &ttl.to_string()])
                        };
                        self.send(cx, EXPIRE, vec![cmd]);
                    } else {
                        self.after_acquired(cx);
                    }
                } else {
                    self.failed_attempt(cx);
                }
            }
            (EXPIRE, Phase::Expiring) => self.after_acquired(cx),
            (INCR, Phase::Fencing) => {
                if let Some([Reply::Integer(t)]) = replies {
                    self.fence = Some(*t);
                }
                self.after_fence(cx);
            }
            (WAIT, Phase::Waiting) => self.start_work(cx),
            (RENEW, Phase::Working) => self.renewed(cx, replies),
            (REL, Phase::Releasing) => {
                if self.script(|s| &s.release).is_some() {
                    self.next_cycle(cx);
                    return;
                }
                match (self.p.release, replies) {
                    (Release::GetThenDel, Some([Reply::Bulk(v)])) if *v == self.token.as_bytes() => {
                        // The check passed — on the client, a round trip ago.
                        self.phase = Phase::Confirming;
                        let del = argv(&["DEL", &self.p.key]);
                        self.send(cx, REL_DEL, vec![del]);
                        return;
                    }
                    (Release::GetThenDel, Some(_)) => cx.note("GET shows the lock is not mine any more: no DEL"),
                    (Release::Getdel, Some([Reply::Bulk(v)])) if *v != self.token.as_bytes() => cx.note(format!(
                        "GETDEL returned {:?}: it just deleted someone else's lock",
                        String::from_utf8_lossy(v)
                    )),
                    _ => {}
                }
                self.next_cycle(cx);
            }
            (REL_DEL, Phase::Confirming) => self.next_cycle(cx),
            _ => {}
        }
    }

    fn interpret_acquire(&self, replies: &[Reply]) -> (bool, Option<i64>) {
        match &self.p.fencing {
            Fencing::Transaction { .. } => match replies.last() {
                Some(Reply::Array(items)) => {
                    let ok = items.first().is_some_and(acquired);
                    let fence = match items.get(1) {
                        Some(Reply::Integer(t)) => Some(*t),
                        _ => None,
                    };
                    (ok, fence)
                }
                _ => (false, None),
            },
            _ => (replies.first().is_some_and(acquired), None),
        }
    }

    fn failed_attempt(&mut self, cx: &mut Ctx<'_>) {
        let out_of_attempts = self.p.retry.max_attempts.is_some_and(|m| self.attempt >= m);
        let out_of_time = self
            .p
            .retry
            .deadline_ms
            .is_some_and(|d| cx.now.saturating_sub(self.cycle_start) >= d);
        if out_of_attempts || out_of_time {
            cx.note(format!("gave up after {} attempts", self.attempt));
            self.next_cycle(cx);
            return;
        }
        let delay = self.p.retry.backoff.delay(self.attempt, cx.rng);
        self.phase = Phase::Backoff;
        cx.timer(T_BACKOFF, delay);
    }

    fn after_acquired(&mut self, cx: &mut Ctx<'_>) {
        if let Fencing::IncrAfter { counter } = &self.p.fencing {
            self.phase = Phase::Fencing;
            let cmd = argv(&["INCR", counter]);
            self.send(cx, INCR, vec![cmd]);
        } else {
            self.after_fence(cx);
        }
    }

    fn after_fence(&mut self, cx: &mut Ctx<'_>) {
        if let Some(w) = self.p.wait {
            self.phase = Phase::Waiting;
            let cmd = argv(&["WAIT", &w.replicas.to_string(), &w.timeout_ms.to_string()]);
            // WAIT blocks up to its own timeout: do not give up before it.
            cx.send(WAIT, self.p.target, vec![cmd], Some(w.timeout_ms + self.p.timeout_ms));
        } else {
            self.start_work(cx);
        }
    }

    fn start_work(&mut self, cx: &mut Ctx<'_>) {
        self.phase = Phase::Working;
        self.p.work.start(cx, T_WORK);
        if self.p.watchdog.is_some() {
            cx.timer(T_WATCHDOG, self.watchdog_interval());
        }
    }

    fn watchdog_interval(&self) -> u64 {
        renew_every(self.p.watchdog.and_then(|w| w.interval_ms), self.p.ttl_ms)
    }

    fn renew(&mut self, cx: &mut Ctx<'_>) {
        let Some(w) = self.p.watchdog else { return };
        let cmd = match self.script(|s| &s.extend) {
            Some(src) => LockScripts::eval(src, &self.p.key, &self.token, self.p.ttl_ms),
            None => w.renew.command(&self.p.key, &self.token, self.p.ttl_ms),
        };
        self.send(cx, RENEW, vec![cmd]);
    }

    fn renewed(&mut self, cx: &mut Ctx<'_>, replies: Option<&[Reply]>) {
        let Some(w) = self.p.watchdog else { return };
        match replies {
            // No answer: we cannot tell; try again next period.
            None => cx.timer(T_WATCHDOG, self.watchdog_interval()),
            Some([r]) if Renew::succeeded(r) => {
                self.renewals += 1;
                if w.max_renewals.is_none_or(|m| self.renewals < m) {
                    cx.timer(T_WATCHDOG, self.watchdog_interval());
                } else {
                    cx.note(format!("watchdog stops after {} renewals", self.renewals));
                }
            }
            Some(_) => {
                cx.note("renewal refused: the lock is no longer mine");
                cx.unhold(&self.p.key);
                cx.cancel(T_WORK);
                self.next_cycle(cx);
            }
        }
    }

    /// One of the user's scripts, if given.
    fn script(&self, which: impl Fn(&LockScripts) -> &Option<String>) -> Option<&str> {
        self.p.scripts.as_ref().and_then(|s| which(s).as_deref())
    }

    fn work_done(&mut self, cx: &mut Ctx<'_>) {
        if self.p.write && self.p.check_validity {
            let elapsed = cx.now.saturating_sub(self.acquired_at);
            if elapsed >= self.p.ttl_ms {
                cx.note(format!(
                    "validity check: {elapsed} ms since the acquire, TTL {} ms: the lease is gone, no write",
                    self.p.ttl_ms
                ));
                self.release(cx);
            } else {
                cx.note(format!(
                    "validity check: {} ms of the lease left: write",
                    self.p.ttl_ms - elapsed
                ));
                cx.timer(T_WRITE, 0);
            }
            return;
        }
        self.write_and_release(cx);
    }

    fn write_and_release(&mut self, cx: &mut Ctx<'_>) {
        if self.p.write {
            cx.write(self.fence, format!("{}#{}", cx.name, self.cycle + 1));
        }
        self.release(cx);
    }

    fn release(&mut self, cx: &mut Ctx<'_>) {
        cx.cancel(T_WATCHDOG);
        cx.unhold(&self.p.key);
        let script = self
            .script(|s| &s.release)
            .map(|src| LockScripts::eval(src, &self.p.key, &self.token, self.p.ttl_ms));
        match script.or_else(|| self.p.release.first_command(&self.p.key, &self.token)) {
            Some(cmd) => {
                self.phase = Phase::Releasing;
                self.send(cx, REL, vec![cmd]);
            }
            None => self.next_cycle(cx),
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
