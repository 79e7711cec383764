//! Real redis-server sessions as a lesson's environment.
//!
//! Trainees must see that the simulator is not inventing things, so the
//! lessons also run on real servers: one connection per actor (through a
//! lab [`Session`], so keys live under a fresh prefix and a fresh ACL
//! user), the same redis-cli lines, the replies printed the same way and
//! checked against the same expectations. The steps are interpreted by
//! core ([`Progress::step`], the simulator's own interpreter); this module
//! is only what a step *does* on real servers — the core
//! [`Environment`] implemented over a session and a topology — plus the
//! client programs' host on the wall clock. Lock keys are read back and
//! judged by core's lock observer and invariant monitor, so the grants,
//! Redlock majority, beliefs, overlaps and violation bands are the
//! simulator's. [`RealLessonRun`] is the stepwise run the `/api/session`
//! WebSocket drives one `lesson_step` at a time, and [`run`] / [`run_on`]
//! loop over it for `locklab lesson run --real` and the tests.
//!
//! Several things differ from the simulator, and the transcript says so
//! wherever they apply:
//!
//! * **Time is compressed.** Waiting 31 real seconds for a lock to expire
//!   makes a dull demo and a slow test, so TTLs and waits are divided by a
//!   factor (100× by default): `PX 15000` is sent as `PX 150`, `EX 30` as
//!   `PX 300`, `WAIT 1 5000` as `WAIT 1 50`, a wait of 31 000 ms sleeps
//!   310 ms, and `PTTL`/`TTL` replies are multiplied back. Script arguments
//!   are compressed when the script sets a TTL (it mentions `px`, `pexpire`
//!   or `expire`) and the argument is an integer of at least 100 (core's
//!   pure rewrite, `locklab_core::lesson::compress`). Lesson
//!   time is wall time since the run started × the factor — including any
//!   time a person spends between two steps, which is why a browser should
//!   step promptly (or pick a smaller factor) when a TTL matters.
//! * **Redis 8.4 commands on an older server.** `DELEX key IFEQ token` is
//!   unknown to 7.x; the runner says so and sends the Lua compare-and-delete
//!   instead, which answers the same 1 or 0.
//! * **Faults are real.** `failover` SIGKILLs the master and promotes the
//!   replica (`REPLICAOF NO ONE`), and commands without a `node` follow the
//!   new master, as a Sentinel-aware client would; `cut_link` between two
//!   nodes cuts the replica's replication; `crash_node` and `restart_node`
//!   kill and restart the process (empty: nothing persists); `cut_link`
//!   between a client and a node makes the lab drop that client's requests
//!   to that node, so the client sees its timeout — which is all a
//!   partition ever looks like from the client's side.
//! * **Replication lag is made deterministic.** On loopback a replica has a
//!   write within microseconds, so a lesson that declares a replication lag
//!   (`world.replication`, lesson 15: "the master crashes before the write
//!   reaches the replica") would lose the race it teaches. The runner
//!   therefore cuts replication before the first step and restores it at
//!   the first wait at least as long as the lag; a failover that comes
//!   first loses exactly the writes the lesson says are lost.
//! * **Client programs run on the real clock.** Core's programs are
//!   sans-IO state machines; the runner feeds them replies from the real
//!   servers and fires their timers on the compressed wall clock. A
//!   background program keeps running while later steps execute (its timers
//!   are served during every step and every wait). A request to a live node
//!   always gets its answer on loopback; only a cut link or a dead node
//!   makes a program see its per-node timeout.
//! * **Lock events are observed, not modelled.** After every command the
//!   runner reads the lesson's lock keys on each live node (through the
//!   administrative connection, bypassing the session's rate limit) and
//!   turns what changed into core's `Lock` events — `Acquired`, `Renewed`,
//!   `Removed` by a command, by expiry or by replication — plus `Granted`,
//!   `Belief`, `Overlap`, `Violation` (core's monitor: two holders, a
//!   stale write, a wrong release), `Fault`, `WriteSent`/`Write`, so the timeline of a
//!   real run reads like the simulator's. An expiry is stamped at the
//!   deadline the server's `PTTL` implied.
//!
//! * **A cluster is routed.** Lesson 31 runs on a real three-master
//!   cluster, through a session that keeps keys as typed (a prefix would
//!   move them to other hash slots; see the session module) and sends a
//!   command with keys to the node serving their slot, as a cluster client
//!   does; a command without keys goes to node 1, the node the simulator
//!   plays. So a 0-key script that builds its key inside Lua gets the
//!   cluster's own `non local key` error.
//!
//! What a real server cannot do — a clock jump, a slow link, random reply
//! loss, metrics off the simulator's trace — is refused up front with the
//! lesson's own explanation, not approximated.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use locklab_core::actor::{Actor, Names};
use locklab_core::client::{host, Argv, Ctx, Input, Machine, Program, ProgramHost, RELEASE_LUA};
use locklab_core::fault::{ClockOf, Endpoint, Fault};
use locklab_core::invariants::{InvariantConfig, Monitor, Violation};
use locklab_core::lesson::compress::{compress, rescale, words, Scale};
use locklab_core::lesson::metrics::Metrics;
use locklab_core::lesson::render;
use locklab_core::lesson::run::{overlap_is_violation, Environment, LessonRun, Progress, StepResult};
use locklab_core::lesson::{
    Lang, Lesson, LessonError, LessonTopology, MetricsSpec, OutcomeInvariant, RealRun, StepKind,
};
use locklab_core::observe::Observed;
use locklab_core::resource::Resource;
use locklab_core::rng::Rng;
use locklab_core::server::EPOCH_MS;
use locklab_core::trace::{Event, EventKind, LossReason};
use locklab_core::Reply;
use thiserror::Error;

use crate::real::conn::{RealConnection, RealError};
use crate::real::observe::{Cause, LockWatch};
use crate::real::session::{Limits, Session, SessionError, SessionPool};
use crate::real::topology::{self, Role, Topology, TopologyError, TopologyKind};

/// The longest a foreground program may run before the runner gives up on
/// it (wall time): a program that never finishes is a lesson bug, and a
/// step must not hang.
const PROGRAM_DEADLINE: Duration = Duration::from_secs(60);

/// Why a lesson cannot run, or stopped, on real servers.
#[derive(Debug, Error)]
pub enum RealLessonError {
    #[error("lesson {id} cannot run on a real server: {why}")]
    Unsupported { id: String, why: String },
    #[error("lesson {id}, step {step}: {msg}")]
    Step { id: String, step: usize, msg: String },
    #[error(transparent)]
    Real(#[from] RealError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

/// A finished real run.
#[derive(Debug)]
pub struct RealReport {
    pub server_version: String,
    pub factor: u64,
    pub results: Vec<StepResult>,
    /// Per step, what was actually sent or done when it differs from the
    /// lesson (compressed TTLs, the DELEX fallback, a held-back replication).
    pub notes: BTreeMap<usize, String>,
    /// Did the lesson's outcome happen, where a real run can tell, judged
    /// by core's monitor as in the simulator: two holders by the clients'
    /// beliefs, a stale write by grant order at the resource, a wrong
    /// release by what the lock observer saw on the servers. `None` for a
    /// deadlock (an unbounded hold), which a real run does not time.
    pub outcome: Option<bool>,
}

impl RealReport {
    /// Every expectation held, and the outcome too where it is judged.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|r| r.ok) && self.outcome != Some(false)
    }

    /// The transcript, in the simulator's layout, with the real run's notes.
    /// In Chinese the runner's own words come from core (the same wording
    /// as the simulator's transcript); commands and replies stay as they
    /// are, and the notes on what was sent (compressed TTLs, fallbacks)
    /// stay in English.
    pub fn transcript(&self, lesson: &Lesson, lang: Lang) -> String {
        let zh = lang == Lang::Zh;
        let mut out = if zh {
            format!(
                "第 {} 课 — {}\n真实 redis-server {}，时间压缩 {}×\n\n",
                lesson.id, lesson.title.zh, self.server_version, self.factor
            )
        } else {
            format!(
                "lesson {} — {}\nreal redis-server {}, time compressed {}×\n\n",
                lesson.id, lesson.title.en, self.server_version, self.factor
            )
        };
        // Core's wording of each step, with the world's names.
        let sim = LessonRun::new(lesson).ok();
        for r in &self.results {
            let who = r.actor.as_deref().unwrap_or(if zh { "环境" } else { "world" });
            let is_write = lesson.steps.get(r.index).is_some_and(|s| s.write.is_some());
            let shown = match (&sim, zh) {
                (Some(run), true) => run
                    .shown(r.index)
                    .map_or(r.shown.clone(), |s| s.text(run.world().names(), lang)),
                _ => r.shown.clone(),
            };
            out.push_str(&format!("[{:>8} ms] {who}> {shown}\n", r.at_ms));
            if let Some(note) = self.notes.get(&r.index) {
                out.push_str(&format!("{:>14}({note})\n", ""));
            }
            if let Some(reply) = &r.reply {
                for line in reply.lines() {
                    let line = match (zh && is_write, line) {
                        (true, "accepted") => "被接受",
                        (true, "rejected") => "被拒绝",
                        _ => line,
                    };
                    out.push_str(&format!("{:>14}{line}\n", ""));
                }
            }
            if !r.ok {
                let label = if zh { "✗ 期望：" } else { "✗ expected: " };
                out.push_str(&format!("{:>14}{label}{}\n", "", r.expected.as_deref().unwrap_or("?")));
            }
        }
        let name = render::invariant_name(lesson.outcome.invariant, lang);
        let want = match (zh, lesson.outcome.broken) {
            (false, true) => "broken",
            (false, false) => "held",
            (true, true) => "被破坏",
            (true, false) => "成立",
        };
        out.push_str(&match (self.outcome, zh) {
            (Some(true), false) => format!("\noutcome: {name}: {want}, as the lesson teaches ✓\n"),
            (Some(true), true) => format!("\n结论：{name}：{want}，与本课要讲的一致 ✓\n"),
            (Some(false), false) => format!("\noutcome: {name}: the lesson says {want}, the run shows otherwise ✗ MISMATCH\n"),
            (Some(false), true) => format!("\n结论：{name}：本课说它应当{want}，这次运行不是这样 ✗ 不一致\n"),
            (None, false) => format!(
                "\noutcome: {name}: the lesson says {want}; not judged on a real run (the simulator derives it from its model of every node)\n"
            ),
            (None, true) => format!("\n结论：{name}：本课说它应当{want}；真实运行不作判定（模拟器根据它对每个节点的模型得出）\n"),
        });
        out
    }
}

/// How long Sentinel may take to fail over: its down-after and election
/// take ~2–3 s here (`real/faults/sentinel.rs`); a loaded machine gets
/// ample margin, and a failover that never comes is an error, not a hang.
const SENTINEL_FAILOVER_WITHIN: Duration = Duration::from_secs(60);

/// The managed topology a lesson needs.
pub fn topology_kind(lesson: &Lesson) -> TopologyKind {
    match lesson.topology {
        LessonTopology::Single => TopologyKind::Single,
        LessonTopology::Replicated => TopologyKind::Replicated,
        LessonTopology::Redlock5 => TopologyKind::Redlock5,
        LessonTopology::Cluster3 => TopologyKind::Cluster3,
    }
}

/// The compression a CLI run uses when none is given: 100×, except for
/// the Redlock lessons. Their client programs schedule extensions and
/// releases with ~100 lesson ms to spare before the next step checks the
/// servers (lesson 19: the extension at 9.9 s, the check at 10 s), and
/// every Redlock round is ten real round trips; at 100× a single wall
/// millisecond is already 100 lesson ms, at 10× it is 10.
pub fn default_factor(lesson: &Lesson) -> u64 {
    if lesson.topology == LessonTopology::Redlock5 {
        10
    } else {
        100
    }
}

/// Can the runner play this lesson on a managed topology of the kind it
/// names? `Err` says why not: the lesson's own text when it is marked
/// `real = no`, else which step needs what.
pub fn check_supported(lesson: &Lesson) -> Result<(), String> {
    check_supported_lang(lesson, Lang::En)
}

/// [`check_supported`], with the lesson's own why-not text in `lang`.
// long: one refusal per kind of step a real topology cannot play, each with its reason
pub fn check_supported_lang(lesson: &Lesson, lang: Lang) -> Result<(), String> {
    if let RealRun::No { why } = &lesson.real {
        return Err(why.get(lang).trim().to_owned());
    }
    for (i, step) in lesson.steps.iter().enumerate() {
        match step.kind() {
            Ok(StepKind::Metrics(_)) => return Err(format!("step {} reads metrics off the simulator's trace", i + 1)),
            Ok(StepKind::Fault(Fault::SetLink { config, .. })) if !matches!(config.drop_reply_permille, 0 | 1000) => {
                return Err(format!(
                    "step {} drops replies at random, which a real run cannot reproduce",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::SetLink { a, b, .. }))
                if !matches!(
                    (a, b),
                    (Endpoint::Client(_), Endpoint::Node(_)) | (Endpoint::Node(_), Endpoint::Client(_))
                ) =>
            {
                return Err(format!("step {} changes a link the lab has no handle on", i + 1))
            }
            Ok(StepKind::Fault(Fault::RestartNode {
                keep_data: Some(true), ..
            })) => {
                return Err(format!(
                    "step {} restarts a node with its data, and managed nodes have no persistence",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::RestartNode { keep_data: None, .. }))
                if lesson.world.persistence != Default::default() =>
            {
                return Err(format!(
                    "step {} restarts a node with persistence, and managed nodes have none",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(f))
                if !matches!(
                    f,
                    Fault::PauseClient { .. }
                        | Fault::ResumeClient { .. }
                        | Fault::CrashClient { .. }
                        | Fault::SetLink { .. }
                        | Fault::CrashNode { .. }
                        | Fault::RestartNode { .. }
                        | Fault::PromoteReplica { .. }
                        | Fault::Failover { .. }
                        | Fault::CutLink { .. }
                        | Fault::HealLink { .. }
                        | Fault::JumpClock { .. }
                        | Fault::SetDrift { .. }
                ) =>
            {
                return Err(format!(
                    "step {} injects a fault a real server cannot take: {f:?}",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::JumpClock {
                of: ClockOf::Client(_), ..
            }))
            | Ok(StepKind::Fault(Fault::SetDrift {
                of: ClockOf::Client(_), ..
            })) => {
                return Err(format!(
                    "step {} moves a client's clock, and clients run in the lab, not on a server",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::CutLink { a, b } | Fault::HealLink { a, b }))
                if matches!(a, Endpoint::Resource) || matches!(b, Endpoint::Resource) =>
            {
                return Err(format!(
                    "step {} partitions the resource, which is simulated even on a real run",
                    i + 1
                ))
            }
            Ok(StepKind::Fault(Fault::Failover { .. } | Fault::PromoteReplica { .. }))
                if lesson.topology != LessonTopology::Replicated =>
            {
                return Err(format!(
                    "step {} fails over, which needs the replicated topology",
                    i + 1
                ))
            }
            Err(e) => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// [`check_supported`] on this particular topology: the user's own server
/// (`External`) takes single-node lessons only (the lab never faults it),
/// a managed one must be the lesson's kind.
pub fn check_target(lesson: &Lesson, topology: &Topology, lang: Lang) -> Result<(), String> {
    check_supported_lang(lesson, lang)?;
    match topology.kind() {
        None if lesson.topology != LessonTopology::Single => Err(format!(
            "it needs the {} topology, and this backend uses your own server (--redis), where the lab starts nothing and injects no faults",
            topology_kind(lesson).as_str()
        )),
        None => Ok(()),
        // A master and a replica, failed over by Sentinel itself.
        Some(TopologyKind::Sentinel) if lesson.topology == LessonTopology::Replicated => Ok(()),
        Some(k) if k != topology_kind(lesson) => {
            Err(format!("it needs the {} topology, not {}", topology_kind(lesson).as_str(), k.as_str()))
        }
        Some(_) => Ok(()),
    }
}

/// Every lock key a lesson's invariants watch: `world.locks` and the keys
/// of its programs, as core's world watches them.
fn watched_keys(lesson: &Lesson) -> Vec<String> {
    let mut keys = lesson.world.locks.clone();
    for step in &lesson.steps {
        if let Some(p) = &step.program {
            for k in p.lock_keys() {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
    }
    keys
}

/// What a real run reaches its servers through: the session (prefix, ACL
/// user, trace) and the topology (faults, node states). Borrowed for each
/// step, so the WebSocket's lab keeps owning both between steps and can
/// send off-script console commands to the same session.
pub struct RealEnv<'a> {
    pub session: &'a mut Session,
    pub topology: &'a mut Topology,
}

/// A client program being driven against the real servers.
struct Running {
    client: String,
    cid: u32,
    machine: Machine,
    rng: Rng,
    inbox: VecDeque<Input>,
    /// Timers by tag, due at a wall instant.
    timers: BTreeMap<u32, Instant>,
    /// Requests the lab dropped (a cut link): `Failed` at the client's
    /// timeout.
    fails: Vec<(u32, Instant)>,
    /// Paused (a GC pause, a frozen VM) until then: its timers fall due
    /// meanwhile and fire late, all at once, when it runs again — as in
    /// the simulator, where a paused client handles nothing.
    paused_until: Option<Instant>,
    done: bool,
}

impl Running {
    fn next_deadline(&self) -> Option<Instant> {
        if self.done {
            return None;
        }
        let due = self
            .timers
            .values()
            .chain(self.fails.iter().map(|(_, t)| t))
            .min()
            .copied();
        match self.paused_until {
            Some(resume) => due.map(|d| d.max(resume)),
            None => due,
        }
    }
}

/// A pause without an end lasts until the lesson resumes the client; far
/// enough that it never ends by itself.
const PAUSED_FOR_GOOD: Duration = Duration::from_secs(365 * 24 * 3600);

/// A lesson being played on real servers, one step at a time.
pub struct RealLessonRun {
    lesson: Lesson,
    factor: u64,
    version: String,
    has_8_4: bool,
    notice: Option<String>,
    /// Session-clock ms when the run started: lesson time 0.
    origin_ms: u64,
    /// Node the lesson's commands without a `node` go to.
    master: u32,
    deaf: BTreeSet<String>,
    crashed: BTreeSet<String>,
    /// Client ↔ node links the lab is dropping requests on.
    cut: BTreeSet<(String, u32)>,
    resource: Resource,
    /// Core's step interpreter: the lesson's steps and their results.
    progress: Progress,
    notes: BTreeMap<usize, String>,
    /// The lesson's lock keys on every node, as last seen (core's lock
    /// observer: grants, Redlock majority, wrong releases).
    locks: LockWatch,
    /// Core's invariant monitor: beliefs, overlap, grant numbers, stale
    /// writes — the simulator's own.
    monitor: Monitor,
    /// Overlap violations still going on: by key, their index in the
    /// monitor, which holds them. Recorded when the overlap begins and sent
    /// again whenever their span grew (an event once streamed cannot be
    /// stretched in place; the page keeps the latest copy,
    /// `trace::append_streamed`), so the band grows during play as in the
    /// simulator.
    ongoing: BTreeMap<String, usize>,
    /// Two clients believed they held the same key at some point.
    overlapped: bool,
    /// Replication held back to play a declared lag (see the module doc):
    /// the lag in lesson ms, while it is held.
    held_replication: Option<u64>,
    programs: Vec<Option<Running>>,
    events: Vec<Event>,
    last_at: u64,
    /// Events handed out so far (the run's and the console's): a step's
    /// `trace_len`, as in the simulator, so the timeline can show the
    /// events up to a step.
    emitted: usize,
}

impl RealLessonRun {
    /// Get ready to play `lesson` on `env`, compressing time by `factor`.
    /// The session should be fresh (the lesson's keys then start absent)
    /// and a managed topology freshly started or [`Topology::reset`].
    pub fn start(
        lesson: &Lesson,
        env: &mut RealEnv<'_>,
        factor: u64,
        lang: Lang,
    ) -> Result<RealLessonRun, RealLessonError> {
        check_target(lesson, env.topology, lang).map_err(|why| RealLessonError::Unsupported {
            id: lesson.id.clone(),
            why,
        })?;
        let factor = factor.clamp(1, 10_000);
        let nodes = env.topology.nodes();
        // The URL as given (with its credentials), not the one shown.
        let first = env
            .topology
            .targets()
            .first()
            .map(|t| t.url.clone())
            .unwrap_or_default();
        let version = server_version(&mut RealConnection::open(&first)?)?;
        let has_8_4 = at_least_8_4(&version);
        let notice = delex_notice(lesson, &version, has_8_4);
        connect_actors(lesson, env, nodes.len() as u32)?;
        let mut run = RealLessonRun {
            lesson: lesson.clone(),
            factor,
            version,
            has_8_4,
            notice,
            origin_ms: env.session.elapsed_ms(),
            master: 0,
            deaf: BTreeSet::new(),
            crashed: BTreeSet::new(),
            cut: BTreeSet::new(),
            resource: Resource::new(lesson.world.fencing),
            progress: Progress::new(lesson),
            notes: BTreeMap::new(),
            locks: LockWatch::new(
                watched_keys(lesson),
                nodes.len(),
                factor,
                lesson.topology == LessonTopology::Redlock5,
            ),
            monitor: Monitor::new(InvariantConfig {
                lock_keys: watched_keys(lesson),
                overlap_is_violation: overlap_is_violation(lesson),
                max_hold_ms: lesson.world.max_hold_ms,
            }),
            ongoing: BTreeMap::new(),
            overlapped: false,
            held_replication: None,
            programs: Vec::new(),
            events: Vec::new(),
            last_at: 0,
            emitted: 0,
        };
        if let (LessonTopology::Replicated, Some(r)) = (lesson.topology, &lesson.world.replication) {
            if r.lag_ms > 0 {
                run.hold_replication(env, r.lag_ms)?;
            }
        }
        Ok(run)
    }

    /// Play a declared replication lag (see the module doc): replication is
    /// cut now and restored at the first wait at least `lag_ms` long.
    fn hold_replication(&mut self, env: &mut RealEnv<'_>, lag_ms: u64) -> Result<(), RealLessonError> {
        let text = env.topology.fault(topology::Fault::CutReplication { node: 1 })?;
        env.session.note_world(format!(
            "{text}: the lesson's replica lags {lag_ms} ms, loopback replication takes microseconds"
        ));
        self.held_replication = Some(lag_ms);
        self.notes.insert(
            0,
            format!(
                "replication held back: the lesson's replica lags {lag_ms} ms and loopback replication would win the race the lesson shows, so it is cut until a wait of {lag_ms} ms"
            ),
        );
        self.drain(env);
        Ok(())
    }

    pub fn lesson(&self) -> &Lesson {
        &self.lesson
    }

    pub fn steps(&self) -> usize {
        self.lesson.steps.len()
    }

    pub fn server_version(&self) -> &str {
        &self.version
    }

    pub fn factor(&self) -> u64 {
        self.factor
    }

    /// A run-wide notice (the DELEX fallback), for the browser's banner.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    pub fn results(&self) -> &[StepResult] {
        self.progress.results()
    }

    pub fn is_finished(&self) -> bool {
        self.progress.is_finished()
    }

    /// Every step done so far met its expectation, and (once finished)
    /// the outcome held where a real run can judge it.
    pub fn passed(&self) -> bool {
        self.results().iter().all(|r| r.ok) && !(self.is_finished() && self.outcome() == Some(false))
    }

    /// The lesson's outcome, where a real run can judge it (see
    /// [`RealReport::outcome`]).
    pub fn outcome(&self) -> Option<bool> {
        let expected = &self.lesson.outcome;
        match expected.invariant {
            OutcomeInvariant::Overlap => Some(self.overlapped == expected.broken),
            // Judged by core's monitor, as in the simulator: writes by
            // grant order, releases by what the lock observer saw.
            OutcomeInvariant::StaleWrite | OutcomeInvariant::WrongRelease => {
                let inv = expected.invariant.invariant()?;
                Some(self.monitor.violations().iter().any(|v| v.invariant == inv) == expected.broken)
            }
            _ => None,
        }
    }

    /// The events since the last call, `at_ms` in lesson time.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// When a background program next has a timer or timeout due (wall
    /// clock), so a caller that is idle between steps can [`serve`] it on
    /// time.
    ///
    /// [`serve`]: RealLessonRun::serve
    pub fn next_deadline(&self) -> Option<Instant> {
        self.programs.iter().flatten().filter_map(Running::next_deadline).min()
    }

    /// Serve the background programs whose timers are due, between steps;
    /// their events are in [`take_events`](RealLessonRun::take_events).
    pub fn serve(&mut self, env: &mut RealEnv<'_>) -> Result<(), RealLessonError> {
        let step = self.results().len() + 1;
        self.pump(env, None).map_err(|msg| RealLessonError::Step {
            id: self.lesson.id.clone(),
            step,
            msg,
        })?;
        self.drain(env);
        Ok(())
    }

    /// Lesson time of a session-clock instant.
    pub fn lesson_ms(&self, session_ms: u64) -> u64 {
        session_ms.saturating_sub(self.origin_ms).saturating_mul(self.factor)
    }

    /// Session events (an off-script console command) restamped in lesson
    /// time, so they sit on the same axis as the lesson's own.
    pub fn restamp(&mut self, events: Vec<Event>) -> Vec<Event> {
        self.emitted += events.len();
        events
            .into_iter()
            .map(|mut e| {
                e.at_ms = self.lesson_ms(e.at_ms).max(self.last_at);
                self.last_at = e.at_ms;
                e
            })
            .collect()
    }

    /// Everything so far, as a report (notes included).
    pub fn report(&self) -> RealReport {
        RealReport {
            server_version: self.version.clone(),
            factor: self.factor,
            results: self.results().to_vec(),
            notes: self.notes.clone(),
            outcome: if self.is_finished() { self.outcome() } else { None },
        }
    }

    /// Add to step `index`'s note (a step can have two: replication held
    /// back, and a compressed TTL).
    fn add_note(&mut self, index: usize, note: String) {
        self.notes
            .entry(index)
            .and_modify(|n| {
                n.push_str("; ");
                n.push_str(&note);
            })
            .or_insert(note);
    }

    /// Stop lesson time for `d` of wall time that the lab spent, not the
    /// lesson: shift the origin and every program timer.
    fn freeze(&mut self, d: Duration) {
        self.origin_ms += d.as_millis() as u64;
        for p in self.programs.iter_mut().flatten() {
            for t in p.timers.values_mut() {
                *t += d;
            }
            for (_, t) in &mut p.fails {
                *t += d;
            }
            if let Some(t) = &mut p.paused_until {
                *t += d;
            }
        }
    }

    fn now_lesson(&self, env: &RealEnv<'_>) -> u64 {
        self.lesson_ms(env.session.elapsed_ms())
    }

    /// Wall time for `ms` of lesson time.
    fn wall(&self, ms: u64) -> Duration {
        Duration::from_micros(ms.saturating_mul(1000) / self.factor)
    }

    /// Move the session's new events into ours, restamped; violations
    /// still going on are stretched to now first.
    fn drain(&mut self, env: &mut RealEnv<'_>) {
        let now = self.now_lesson(env).max(self.last_at);
        for key in self.ongoing.keys().cloned().collect::<Vec<_>>() {
            self.extend_overlap(env, &key, now);
        }
        let events = env.session.take_events();
        let events = self.restamp(events);
        self.events.extend(events);
    }

    fn record(&mut self, env: &mut RealEnv<'_>, at: Option<u64>, actor: Actor, kind: EventKind) {
        env.session.record(at, actor, kind);
    }

    /// Carry out the next step (core's interpreter, on this environment):
    /// its result and the note on what was sent differently; `None` when
    /// the lesson is over. Background programs are served first, so their
    /// timers that fell due meanwhile fire now.
    pub fn step(&mut self, env: &mut RealEnv<'_>) -> Result<Option<(StepResult, Option<String>)>, RealLessonError> {
        let mut progress = std::mem::replace(&mut self.progress, Progress::new(&self.lesson));
        let result = progress.step(&mut Stepping { run: self, env }).map(|r| r.cloned());
        self.progress = progress;
        match result {
            Ok(Some(r)) => {
                let note = self.notes.get(&r.index).cloned();
                Ok(Some((r, note)))
            }
            Ok(None) => Ok(None),
            Err(LessonError::Step { id, step, msg }) => Err(RealLessonError::Step { id, step, msg }),
            Err(e) => Err(RealLessonError::Step {
                id: self.lesson.id.clone(),
                step: self.results().len() + 1,
                msg: e.to_string(),
            }),
        }
    }

    /// Send one command as `client` to `node`, compressed, and observe the
    /// lock keys it may have changed. `None` when it got no reply (a cut
    /// link, a dead node). `note_at`: the step whose note says what was
    /// sent instead.
    fn exec(
        &mut self,
        env: &mut RealEnv<'_>,
        client: &str,
        node: u32,
        argv: &[Vec<u8>],
        note_at: Option<usize>,
    ) -> Result<Option<Reply>, String> {
        let OnWire {
            argv: sent,
            scale,
            note,
        } = self.as_sent(argv)?;
        if let (Some(i), Some(n)) = (note_at, note) {
            self.add_note(i, n);
        }
        let cid = env.session.client(client).map_err(|e| e.to_string())?;
        // On a cluster the command goes where its keys' slot lives.
        let node = env.session.route(node, &sent);
        let shown: Vec<String> = argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        if self.cut.contains(&(client.to_owned(), node)) {
            // The lab is the network here: the request never arrives.
            self.record_cut(env, cid, node, vec![shown]);
            self.drain(env);
            return Ok(None);
        }
        let outcome = env.session.run_routed(client, node, &sent);
        // Where it ran: a redirect on a cluster can move it after all.
        let node = outcome.as_ref().map_or(node, |&(at, _)| at);
        let reply = match outcome {
            Ok((_, r)) => Some(rescale(r, scale, self.factor as i64)),
            Err(SessionError::Unreachable { .. }) => None,
            Err(e) => Some(e.to_reply()),
        };
        let events = env.session.take_events();
        let mut events = self.restamp(events);
        as_the_lesson_reads_it(&mut events, &shown, reply.as_ref());
        self.events.extend(events);
        if reply.is_some() {
            self.observe(env, Some(node), Cause::Cmd { client: cid, node });
        }
        Ok(reply)
    }

    /// What goes on the wire for the lesson's `argv`: compressed by the
    /// factor, and `DELEX … IFEQ` as the Lua compare-and-delete on a server
    /// older than 8.4; with the scale of its reply and the note that says
    /// what was sent instead, if anything was.
    fn as_sent(&self, argv: &[Vec<u8>]) -> Result<OnWire, String> {
        let is_delex = argv.first().is_some_and(|n| n.eq_ignore_ascii_case(b"DELEX"));
        let (sent, scale) = compress(argv, self.factor as i64);
        if !is_delex || self.has_8_4 {
            let note = (sent != argv).then(|| format!("sent as {} at {}×", words(&sent), self.factor));
            return Ok(OnWire {
                argv: sent,
                scale,
                note,
            });
        }
        let ifeq = sent.len() == 4 && sent[2].eq_ignore_ascii_case(b"IFEQ");
        if !ifeq {
            return Err(format!(
                "DELEX needs Redis 8.4; this server is {} and only IFEQ has a Lua equivalent",
                self.version
            ));
        }
        let lua = vec![
            b"EVAL".to_vec(),
            RELEASE_LUA.as_bytes().to_vec(),
            b"1".to_vec(),
            sent[1].clone(),
            sent[3].clone(),
        ];
        let note = format!(
            "DELEX needs Redis 8.4; this server is {}: sent the Lua compare-and-delete instead",
            self.version
        );
        Ok(OnWire {
            argv: lua,
            scale,
            note: Some(note),
        })
    }

    /// A request on a link the lab cut: sent, and lost on the way.
    fn record_cut(&mut self, env: &mut RealEnv<'_>, cid: u32, node: u32, commands: Vec<Vec<String>>) {
        let sent = EventKind::Sent { req: 0, node, commands };
        self.record(env, None, Actor::Client(cid), sent);
        let lost = EventKind::Lost {
            req: 0,
            client: cid,
            node,
            reason: LossReason::LinkCut,
        };
        self.record(env, None, Actor::Client(cid), lost);
    }

    /// After an off-script console command of client `cid` on `node`: the
    /// lesson's lock keys it may have changed, now rather than at the next
    /// step. Its events (the command's too) are in
    /// [`take_events`](RealLessonRun::take_events).
    pub fn observe_console(&mut self, env: &mut RealEnv<'_>, cid: u32, node: u32) {
        self.observe(env, Some(node), Cause::Cmd { client: cid, node });
    }

    /// Read the watched keys on `only` (or every live node) and turn what
    /// changed into lock events; core's observer says which change is a
    /// grant (on the master, or by Redlock majority) and which a wrong
    /// release.
    fn observe(&mut self, env: &mut RealEnv<'_>, only: Option<u32>, cause: Cause) {
        let infos = env.topology.nodes();
        let observed = self.locks.observe(env.session, &infos, only, cause);
        self.judge(env, observed);
        self.drain(env);
    }

    /// What the lock observer saw beyond lock bars: numbered grants and
    /// wrong releases, through core's monitor as the simulator does.
    fn judge(&mut self, env: &mut RealEnv<'_>, observed: Vec<Observed>) {
        for o in observed {
            match o {
                Observed::Lock { .. } => {}
                Observed::Granted { client, key } => {
                    let seq = self.monitor.grant(client, &key);
                    self.record(env, None, Actor::Client(client), EventKind::Granted { key, seq });
                }
                Observed::WrongRelease {
                    node,
                    key,
                    by,
                    mut held,
                } => {
                    // The observer's clock is the session's; the trace's is
                    // the lesson's.
                    held.since = self.lesson_ms(held.since);
                    let now = self.now_lesson(env);
                    let names = env.session.names().clone();
                    let v =
                        self.monitor
                            .wrong_release(node, &key, by, &held, now, &|i| names.client(i).to_owned(), &|i| {
                                names.node(i).to_owned()
                            });
                    if let Some(v) = v {
                        self.violate(env, v);
                    }
                }
            }
        }
    }

    fn violate(&mut self, env: &mut RealEnv<'_>, violation: Violation) {
        self.monitor.record(violation.clone());
        self.record(env, None, Actor::World, EventKind::Violation { violation });
    }

    /// A client starts or stops believing it holds `key`; two believers at
    /// once is the overlap the timeline paints red (core's monitor decides,
    /// as in the simulator).
    fn belief(&mut self, env: &mut RealEnv<'_>, cid: u32, key: &str, holds: bool) {
        let now = self.now_lesson(env);
        let names = env.session.names().clone();
        let Some(change) = self
            .monitor
            .change_belief(key, cid, holds, now, &|i| names.client(i).to_owned())
        else {
            return;
        };
        self.record(
            env,
            None,
            Actor::Client(cid),
            EventKind::Belief {
                key: key.to_owned(),
                holds,
            },
        );
        let Some(ch) = change.overlap else { return };
        self.overlapped |= ch.begin;
        let begin = ch.begin;
        self.record(
            env,
            None,
            Actor::World,
            EventKind::Overlap {
                key: key.to_owned(),
                clients: ch.clients,
                begin,
                since_ms: ch.since_ms,
            },
        );
        if let Some(v) = change.violation {
            self.ongoing.insert(key.to_owned(), self.monitor.violations().len());
            self.violate(env, v);
        } else if !begin {
            // Only an overlap that was a violation is ongoing.
            self.extend_overlap(env, key, now);
            self.ongoing.remove(key);
        }
    }

    /// An overlap violation still going on lasts until `now` so far: the
    /// monitor's copy is stretched, and the event is sent again when the
    /// span grew.
    fn extend_overlap(&mut self, env: &mut RealEnv<'_>, key: &str, now: u64) {
        let Some(&index) = self.ongoing.get(key) else {
            return;
        };
        if self.monitor.violations().get(index).is_none_or(|v| now <= v.to_ms) {
            return;
        }
        self.monitor.extend(index, now);
        let violation = self.monitor.violations()[index].clone();
        self.record(env, None, Actor::World, EventKind::Violation { violation });
    }

    /// A write to the protected resource (simulated even on a real run:
    /// it is the business system, not Redis).
    fn write(&mut self, env: &mut RealEnv<'_>, cid: u32, token: Option<i64>, value: String) -> bool {
        self.record(
            env,
            None,
            Actor::Client(cid),
            EventKind::WriteSent {
                token,
                value: value.clone(),
            },
        );
        let at = self.now_lesson(env);
        let accepted = self.resource.write(cid, at, token, value.clone());
        self.record(
            env,
            None,
            Actor::Resource,
            EventKind::Write {
                client: cid,
                token,
                value,
                accepted,
            },
        );
        if accepted {
            // Judged by grant order, as in the simulator: a write from an
            // earlier holder after a later one's is a lost update.
            let names = env.session.names().clone();
            if let Some(v) = self
                .monitor
                .accepted_write(cid, at, token, &|i| names.client(i).to_owned())
            {
                self.violate(env, v);
            }
        }
        accepted
    }

    /// A failover on the `sentinel` topology is Sentinel's own: the master
    /// is killed, the sentinels see it down, agree and promote the replica
    /// (`+sdown`, `+odown`, …, `+switch-master`, their events put on the
    /// timeline), and the clients find the new master by asking Sentinel,
    /// as client libraries do. It takes seconds of wall time where the
    /// lesson's failover is an instant (lesson time stands still, as for
    /// every fault).
    /// (The other topologies keep the lab's fast path: SIGKILL and
    /// `REPLICAOF NO ONE` at once.)
    fn sentinel_failover(&mut self, env: &mut RealEnv<'_>, asked: Option<u32>) -> Result<Option<String>, String> {
        let started = Instant::now();
        let since = env.topology.sentinel_events().len();
        let old = self.master;
        let infos = env.topology.nodes();
        let name = |i: u32| infos.get(i as usize).map_or("?", |n| n.name.as_str()).to_owned();
        let killed = env
            .topology
            .fault(topology::Fault::Crash { node: old })
            .map_err(|e| e.to_string())?;
        env.session.note_world(killed);
        env.session.forget_node(old);
        let switched = env
            .topology
            .await_failover(since, SENTINEL_FAILOVER_WITHIN)
            .map_err(|e| e.to_string())?;
        for e in env.topology.sentinel_events().iter().skip(since) {
            env.session.record(None, Actor::World, e.to_event_kind());
        }
        env.session.note_world(switched);
        let found = env.topology.discover_master().map_err(|e| e.to_string())?;
        let target = infos
            .iter()
            .position(|n| n.port == found.port())
            .ok_or_else(|| format!("Sentinel names {found} as master, which is not a node of this topology"))?
            as u32;
        // Sentinel's promotion ends with `CLIENT KILL TYPE normal` on the
        // new master (sentinelSendSlaveOf): every client connection to it
        // is closed, and clients reconnect, as libraries do.
        env.session.forget_node(target);
        self.master = target;
        self.locks.set_master(target);
        self.held_replication = None;
        // Lesson time stands still meanwhile: the caller freezes what any
        // fault spends.
        let waited = started.elapsed();
        let mut note = format!(
            "SIGKILL to {}; Sentinel saw it down and promoted {} (+switch-master after {} ms of wall time, not counted as lesson time); the clients found {} by asking Sentinel",
            name(old),
            name(target),
            waited.as_millis(),
            name(target)
        );
        if let Some(asked) = asked.filter(|&a| a != target) {
            note.push_str(&format!(" (the lesson named {}: Sentinel chooses)", name(asked)));
        }
        Ok(Some(note))
    }

    /// Carry out a fault on the real topology. `Some(note)` when the real
    /// fault differs from the simulator's in a way the transcript shows.
    // long: one arm per kind of fault, each the real processes' way of doing it
    fn fault(&mut self, env: &mut RealEnv<'_>, fault: &Fault) -> Result<Option<String>, String> {
        let topo = |env: &mut RealEnv<'_>, f: topology::Fault| -> Result<String, String> {
            let text = env.topology.fault(f).map_err(|e| e.to_string())?;
            env.session.note_world(text.clone());
            Ok(text)
        };
        match fault {
            // A client at the console simply sends nothing: the lesson's
            // own waits are the pause. A client's program stops handling
            // anything until the pause ends (its timers fire late).
            Fault::PauseClient { client, ms } => {
                let until = Instant::now() + ms.map_or(PAUSED_FOR_GOOD, |ms| self.wall(ms));
                for p in self.programs.iter_mut().flatten().filter(|p| &p.client == client) {
                    p.paused_until = Some(until);
                }
                Ok(None)
            }
            Fault::ResumeClient { client } => {
                let now = Instant::now();
                for p in self.programs.iter_mut().flatten().filter(|p| &p.client == client) {
                    p.paused_until = p.paused_until.map(|t| t.min(now));
                }
                Ok(None)
            }
            Fault::CrashClient { client } => {
                self.crashed.insert(client.clone());
                let cid = env.session.client(client).map_err(|e| e.to_string())?;
                for p in self.programs.iter_mut().flatten().filter(|p| p.cid == cid) {
                    p.done = true;
                }
                let held: Vec<String> = self
                    .locks
                    .keys()
                    .iter()
                    .filter(|k| self.monitor.believes(k, cid))
                    .cloned()
                    .collect();
                for k in held {
                    self.belief(env, cid, &k, false);
                }
                Ok(None)
            }
            Fault::SetLink { a, b, config } => {
                let ((Endpoint::Client(c), _) | (_, Endpoint::Client(c))) = (a, b) else {
                    return Ok(None);
                };
                if config.drop_reply_permille >= 1000 {
                    self.deaf.insert(c.clone());
                } else {
                    self.deaf.remove(c);
                }
                Ok(None)
            }
            Fault::CrashNode { node } => {
                topo(env, topology::Fault::Crash { node: *node })?;
                env.session.forget_node(*node);
                Ok(None)
            }
            Fault::RestartNode { node, down_ms, .. } => {
                topo(env, topology::Fault::Crash { node: *node })?;
                std::thread::sleep(self.wall(*down_ms));
                topo(env, topology::Fault::Restart { node: *node })?;
                env.session.forget_node(*node);
                // Its data is gone: say so in the trace.
                let observed = self.locks.forget_node(env.session, *node);
                self.judge(env, observed);
                Ok(Some(format!(
                    "restarted the process on the same port after {} ms, empty (no persistence)",
                    down_ms / self.factor
                )))
            }
            // A node's wall clock really moves: the lab's clock-shift
            // preload (real/faults/clock.rs) offsets CLOCK_REALTIME in that
            // redis-server alone. The jump is lesson time, so it is
            // compressed like the TTLs it is meant to outrun.
            Fault::JumpClock {
                of: ClockOf::Node(node),
                delta_ms,
            } => {
                let wall = delta_ms / self.factor.max(1) as i64;
                topo(
                    env,
                    topology::Fault::JumpClock {
                        node: *node,
                        delta_ms: wall,
                    },
                )?;
                Ok((self.factor > 1).then(|| {
                    format!(
                        "the node's CLOCK_REALTIME jumped {wall:+} ms ({delta_ms:+} ms of lesson time at {}×)",
                        self.factor
                    )
                }))
            }
            // Drift is a rate: the same at any time compression.
            Fault::SetDrift {
                of: ClockOf::Node(node),
                ppm,
            } => {
                topo(env, topology::Fault::DriftClock { node: *node, ppm: *ppm })?;
                Ok(None)
            }
            Fault::PromoteReplica { node } => {
                topo(env, topology::Fault::Promote { node: *node })?;
                self.master = *node;
                self.locks.set_master(*node);
                Ok(None)
            }
            Fault::Failover { node } if env.topology.kind() == Some(TopologyKind::Sentinel) => {
                self.sentinel_failover(env, *node)
            }
            Fault::Failover { node } => {
                let infos = env.topology.nodes();
                let target = node
                    .or_else(|| infos.iter().position(|n| n.role == Role::Replica).map(|i| i as u32))
                    .ok_or("no replica to fail over to")?;
                if target as usize >= infos.len() || target == self.master {
                    return Err(format!("cannot fail over to node {target}"));
                }
                let old = self.master;
                topo(env, topology::Fault::Crash { node: old })?;
                env.session.forget_node(old);
                topo(env, topology::Fault::Promote { node: target })?;
                self.master = target;
                self.locks.set_master(target);
                self.held_replication = None;
                let name = |i: u32| infos.get(i as usize).map_or("?", |n| n.name.as_str()).to_owned();
                Ok(Some(format!(
                    "SIGKILL to {} and REPLICAOF NO ONE on {}; commands without a node now go to {}",
                    name(old),
                    name(target),
                    name(target)
                )))
            }
            Fault::CutLink { a, b } | Fault::HealLink { a, b } => {
                let heal = matches!(fault, Fault::HealLink { .. });
                match (a, b) {
                    (Endpoint::Node(x), Endpoint::Node(y)) => {
                        let infos = env.topology.nodes();
                        let replica = [*x, *y]
                            .into_iter()
                            .find(|&n| infos.get(n as usize).is_some_and(|i| i.role == Role::Replica))
                            .ok_or("neither node is a replica: only replication links between nodes can be cut")?;
                        if heal {
                            topo(env, topology::Fault::HealReplication { node: replica })?;
                        } else {
                            topo(env, topology::Fault::CutReplication { node: replica })?;
                        }
                        Ok(None)
                    }
                    (Endpoint::Client(c), Endpoint::Node(n)) | (Endpoint::Node(n), Endpoint::Client(c)) => {
                        if heal {
                            self.cut.remove(&(c.clone(), *n));
                        } else {
                            self.cut.insert((c.clone(), *n));
                        }
                        Ok(None)
                    }
                    _ => Err("only node–node and client–node links can be cut on a real run".into()),
                }
            }
            other => Err(format!("a real run cannot inject {other:?}")),
        }
    }

    // ----- client programs -------------------------------------------------

    fn launch(&mut self, env: &mut RealEnv<'_>, client: &str, program: &Program) -> Result<usize, String> {
        if self.crashed.contains(client) {
            return Err(format!("{client} has crashed"));
        }
        let nodes = env.topology.nodes().len() as u32;
        let machine = Machine::new(program, nodes).map_err(|e| e.to_string())?;
        let cid = env.session.client(client).map_err(|e| e.to_string())?;
        for k in program.lock_keys() {
            self.locks.add(&k);
            self.monitor.watch_key(&k);
        }
        // The simulator's stream for this client, so tokens and jitter
        // are drawn the same way.
        let rng = Rng::derive(self.lesson.seed, 1_000 + u64::from(cid));
        let mut inbox = VecDeque::new();
        inbox.push_back(Input::Start);
        self.programs.push(Some(Running {
            client: client.to_owned(),
            cid,
            machine,
            rng,
            inbox,
            timers: BTreeMap::new(),
            fails: Vec::new(),
            paused_until: None,
            done: false,
        }));
        let slot = self.programs.len() - 1;
        self.feed(env, slot)?;
        Ok(slot)
    }

    /// Hand program `slot` its pending inputs, carrying out its actions
    /// (whose replies queue more inputs) until it has nothing left to do.
    fn feed(&mut self, env: &mut RealEnv<'_>, slot: usize) -> Result<(), String> {
        let Some(mut p) = self.programs.get_mut(slot).and_then(Option::take) else {
            return Ok(());
        };
        let nodes = env.topology.nodes().len() as u32;
        let mut result = Ok(());
        while let Some(input) = p.inbox.pop_front() {
            if p.done {
                break;
            }
            let mut out = Vec::new();
            {
                let now = EPOCH_MS + self.now_lesson(env);
                let mut cx = Ctx::new(now, &mut p.rng, &p.client, nodes, &mut out);
                p.machine.handle(&mut cx, input);
            }
            let mut host = Host { run: self, env };
            for action in out {
                if let Err(e) = host::apply(&mut host, &mut p, action) {
                    result = Err(e);
                }
            }
        }
        self.programs[slot] = Some(p);
        result
    }

    /// Fire every timer and timeout that is due, in every program.
    fn fire_due(&mut self, env: &mut RealEnv<'_>) -> Result<(), String> {
        for slot in 0..self.programs.len() {
            let now = Instant::now();
            let Some(p) = self.programs[slot].as_mut() else {
                continue;
            };
            if p.done || p.paused_until.is_some_and(|t| t > now) {
                continue;
            }
            if p.paused_until.take().is_some() {
                let cid = p.cid;
                self.record(env, None, Actor::Client(cid), EventKind::Resumed);
            }
            let Some(p) = self.programs[slot].as_mut() else {
                continue;
            };
            let mut due: Vec<(Instant, Input)> = Vec::new();
            p.timers.retain(|&tag, &mut t| {
                let fire = t <= now;
                if fire {
                    due.push((t, Input::Timer { tag }));
                }
                !fire
            });
            p.fails.retain(|&(tag, t)| {
                let fire = t <= now;
                if fire {
                    due.push((t, Input::Failed { tag }));
                }
                !fire
            });
            due.sort_by_key(|(t, _)| *t);
            p.inbox.extend(due.into_iter().map(|(_, i)| i));
            if !p.inbox.is_empty() {
                self.feed(env, slot)?;
            }
        }
        Ok(())
    }

    /// Serve the programs: what is due now (`until: None`), or everything
    /// that falls due until `until` (a wait step), sleeping in between.
    fn pump(&mut self, env: &mut RealEnv<'_>, until: Option<Instant>) -> Result<(), String> {
        loop {
            self.fire_due(env)?;
            let now = Instant::now();
            let next = self.next_deadline();
            let Some(u) = until else {
                if next.is_some_and(|d| d <= now) {
                    continue;
                }
                return Ok(());
            };
            if now >= u {
                return Ok(());
            }
            let wake = next.map_or(u, |d| d.min(u));
            if wake > now {
                std::thread::sleep(wake - now);
            }
        }
    }

    /// Serve every program until the one in `slot` has finished.
    fn run_until_done(&mut self, env: &mut RealEnv<'_>, slot: usize) -> Result<(), String> {
        let deadline = Instant::now() + PROGRAM_DEADLINE;
        loop {
            self.fire_due(env)?;
            let Some(p) = self.programs.get(slot).and_then(Option::as_ref) else {
                return Ok(());
            };
            if p.done {
                return Ok(());
            }
            let Some(next) = self.next_deadline() else {
                return Err(format!(
                    "{}'s program is waiting for something that will never come",
                    p.client
                ));
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "{}'s program did not finish within {} s",
                    p.client,
                    PROGRAM_DEADLINE.as_secs()
                ));
            }
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
        }
    }
}

/// The real servers as the host of client programs: a request runs on the
/// real node at once (loopback answers within microseconds), timers are
/// wall instants on the compressed clock, a cut link drops the request so
/// the client sees its timeout, and a dead node refuses it at once.
struct Host<'r, 'e, 'b> {
    run: &'r mut RealLessonRun,
    env: &'e mut RealEnv<'b>,
}

impl ProgramHost for Host<'_, '_, '_> {
    type Client = Running;
    type Error = String;

    fn master(&self) -> u32 {
        self.run.master
    }

    fn send(
        &mut self,
        p: &mut Running,
        tag: u32,
        node: u32,
        commands: Vec<Argv>,
        timeout_ms: Option<u64>,
    ) -> Result<(), String> {
        let (run, env) = (&mut *self.run, &mut *self.env);
        if run.cut.contains(&(p.client.clone(), node)) {
            let shown = commands
                .iter()
                .map(|c| c.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect())
                .collect();
            run.record_cut(env, p.cid, node, shown);
            if let Some(t) = timeout_ms {
                p.fails.push((tag, Instant::now() + run.wall(t)));
            }
            return Ok(());
        }
        let mut replies = Vec::new();
        for argv in &commands {
            match run.exec(env, &p.client, node, argv, None)? {
                Some(r) => replies.push(r),
                None => {
                    // A dead node: connection refused, at once.
                    p.inbox.push_back(Input::Failed { tag });
                    return Ok(());
                }
            }
        }
        p.inbox.push_back(Input::Reply { tag, replies });
        Ok(())
    }

    fn timer(&mut self, p: &mut Running, tag: u32, after_ms: u64) {
        p.timers.insert(tag, Instant::now() + self.run.wall(after_ms));
    }

    fn cancel(&mut self, p: &mut Running, tag: u32) {
        p.timers.remove(&tag);
    }

    fn write(&mut self, p: &mut Running, token: Option<i64>, value: String) {
        self.run.write(self.env, p.cid, token, value);
    }

    fn believe(&mut self, p: &mut Running, key: &str, holds: bool) {
        self.run.belief(self.env, p.cid, key, holds);
    }

    fn note(&mut self, p: &mut Running, text: String) {
        self.run
            .record(self.env, None, Actor::Client(p.cid), EventKind::Note { text });
    }

    fn done(&mut self, p: &mut Running) {
        p.done = true;
        self.run.record(self.env, None, Actor::Client(p.cid), EventKind::Done);
    }
}

/// The real servers as core's lesson [`Environment`], for one step: the
/// run's state and the session and topology it borrows.
struct Stepping<'r, 'e, 'b> {
    run: &'r mut RealLessonRun,
    env: &'e mut RealEnv<'b>,
}

impl Environment for Stepping<'_, '_, '_> {
    fn begin_step(&mut self, _index: usize) -> Result<(), String> {
        self.run.pump(self.env, None)
    }

    fn command(
        &mut self,
        index: usize,
        client: &str,
        node: Option<u32>,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String> {
        let run = &mut *self.run;
        if run.crashed.contains(client) {
            return Err(format!("{client} has crashed"));
        }
        let node = node.unwrap_or(run.master);
        let reply = run.exec(self.env, client, node, argv, Some(index))?;
        // A client whose replies are all dropped ran the command and never
        // heard back.
        Ok(reply.filter(|_| !run.deaf.contains(client)))
    }

    fn wait(&mut self, index: usize, ms: u64) -> Result<(), String> {
        let run = &mut *self.run;
        let until = Instant::now() + run.wall(ms);
        run.pump(self.env, Some(until))?;
        run.observe(self.env, None, Cause::None);
        if let Some(lag) = run.held_replication.filter(|lag| ms >= *lag) {
            let text = self
                .env
                .topology
                .fault(topology::Fault::HealReplication { node: 1 })
                .map_err(|e| e.to_string())?;
            self.env
                .session
                .note_world(format!("{text}: {lag} ms of lag have passed"));
            run.held_replication = None;
            run.add_note(index, format!("replication restored: the {lag} ms of lag have passed"));
        }
        Ok(())
    }

    fn fault(&mut self, index: usize, fault: &Fault) -> Result<(), String> {
        let run = &mut *self.run;
        run.record(self.env, None, Actor::World, EventKind::Fault { fault: fault.clone() });
        let before = Instant::now();
        let result = run.fault(self.env, fault);
        // A fault is an instant in the lesson; starting a process or
        // promoting a replica takes milliseconds of wall time, which ×100
        // would be seconds the lesson never had. Lesson time and the
        // programs' timers stand still meanwhile (the servers' TTLs cannot,
        // which costs them those few milliseconds).
        let spent = before.elapsed().saturating_sub(run.wall(fault_wait(fault)));
        run.freeze(spent);
        if let Some(note) = result? {
            run.add_note(index, note);
        }
        run.observe(self.env, None, Cause::None);
        Ok(())
    }

    fn launch(&mut self, _index: usize, client: &str, program: &Program, background: bool) -> Result<(), String> {
        let slot = self.run.launch(self.env, client, program)?;
        if !background {
            self.run.run_until_done(self.env, slot)?;
        }
        Ok(())
    }

    fn write(&mut self, _index: usize, client: &str, token: Option<i64>, value: &str) -> Result<String, String> {
        let cid = self.env.session.client(client).map_err(|e| e.to_string())?;
        let accepted = self.run.write(self.env, cid, token, value.to_owned());
        Ok(if accepted { "accepted" } else { "rejected" }.to_owned())
    }

    fn hold(&mut self, _index: usize, client: &str, key: &str, holds: bool) -> Result<(), String> {
        let cid = self.env.session.client(client).map_err(|e| e.to_string())?;
        self.run.belief(self.env, cid, key, holds);
        Ok(())
    }

    fn metrics(&mut self, _index: usize, _spec: &MetricsSpec, _clients: &[String]) -> Result<Metrics, String> {
        Err("metrics are refused by check_supported".into())
    }

    fn end_step(&mut self, _index: usize, last: bool) {
        let run = &mut *self.run;
        // Stretches every overlap still going on to now.
        run.drain(self.env);
        if last {
            // An overlap still going on ends with the lesson (lesson 15: A
            // and B both hold): its band stops here.
            run.ongoing.clear();
        }
    }

    fn now(&self) -> u64 {
        self.run.now_lesson(self.env).max(self.run.last_at)
    }

    fn trace_len(&self) -> usize {
        self.run.emitted
    }

    fn names(&self) -> &Names {
        self.env.session.names()
    }
}

/// A lesson's command as it goes on the wire ([`RealLessonRun::as_sent`]).
struct OnWire {
    argv: Vec<Vec<u8>>,
    /// How its reply is scaled back to lesson time.
    scale: Scale,
    /// What the step's note says was sent instead, if anything.
    note: Option<String>,
}

/// The trace shows the lesson's command (`shown`) and the reply as the
/// lesson reads it (PTTL scaled back), like the simulator's, not what went
/// on the wire.
fn as_the_lesson_reads_it(events: &mut [Event], shown: &[String], reply: Option<&Reply>) {
    for e in events {
        match &mut e.kind {
            EventKind::Sent { commands, .. } => *commands = vec![shown.to_vec()],
            EventKind::Executed { commands, replies, .. } => {
                *commands = vec![shown.to_vec()];
                if let Some(r) = reply {
                    *replies = vec![r.clone()];
                }
            }
            EventKind::Received { replies, .. } => {
                if let Some(r) = reply {
                    *replies = vec![r.clone()];
                }
            }
            _ => {}
        }
    }
}

/// Lesson time a fault itself lasts (a restart's `down_ms`): not frozen.
fn fault_wait(f: &Fault) -> u64 {
    match f {
        Fault::RestartNode { down_ms, .. } => *down_ms,
        _ => 0,
    }
}

/// Play `lesson` on the user's server at `url` (single-node lessons only),
/// compressing time by `factor`. With `flush`, the server is emptied first
/// (a test server only: it clears function libraries a previous run left).
pub fn run(lesson: &Lesson, url: &str, factor: u64, flush: bool) -> Result<RealReport, RealLessonError> {
    let mut topology = Topology::external(url);
    check_target(lesson, &topology, Lang::En).map_err(|why| RealLessonError::Unsupported {
        id: lesson.id.clone(),
        why,
    })?;
    if flush {
        let mut admin = RealConnection::open(url)?;
        for cmd in [&["FLUSHALL"][..], &["SCRIPT", "FLUSH"], &["FUNCTION", "FLUSH"]] {
            admin.execute(&cmd.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>())?;
        }
    }
    run_on(lesson, &mut topology, factor)
}

/// Start the managed topology `lesson` needs, play it there, and stop it.
pub fn run_managed(lesson: &Lesson, factor: u64) -> Result<RealReport, RealLessonError> {
    check_supported(lesson).map_err(|why| RealLessonError::Unsupported {
        id: lesson.id.clone(),
        why,
    })?;
    let mut topology = Topology::start(topology_kind(lesson))?;
    run_on(lesson, &mut topology, factor)
}

/// Play `lesson` to the end on `topology`, through a fresh session.
pub fn run_on(lesson: &Lesson, topology: &mut Topology, factor: u64) -> Result<RealReport, RealLessonError> {
    let pool = SessionPool::new(Limits {
        commands_per_sec: f64::INFINITY,
        ..Limits::default()
    });
    let mut session = pool.open_on(topology)?;
    let mut env = RealEnv {
        session: &mut session,
        topology,
    };
    let mut run = RealLessonRun::start(lesson, &mut env, factor, Lang::En)?;
    while run.step(&mut env)?.is_some() {}
    Ok(run.report())
}

/// The server's `redis_version`.
/// What the run tells the user before it starts, when the lesson uses
/// `DELEX` and the server is older than 8.4.
fn delex_notice(lesson: &Lesson, version: &str, has_8_4: bool) -> Option<String> {
    let uses_delex = lesson.steps.iter().any(|s| {
        s.cmd
            .as_deref()
            .is_some_and(|c| c.trim_start().to_ascii_uppercase().starts_with("DELEX"))
    });
    (uses_delex && !has_8_4).then(|| {
        format!("DELEX needs Redis 8.4; this server is {version}, so the lab sends the Lua compare-and-delete instead")
    })
}

/// Every actor of the lesson gets its connections to the `nodes` up front.
/// Function libraries need no tidying here: a session's live in its own
/// namespace (`lab_<id>_…`) and go with it, so a run never touches a
/// library it did not load (the owner's `locklib` least).
fn connect_actors(lesson: &Lesson, env: &mut RealEnv<'_>, nodes: u32) -> Result<(), RealLessonError> {
    for a in &lesson.actors {
        env.session.client(a)?;
        for n in 0..nodes {
            // Best effort: a node that is down is connected to later.
            let _ = env.session.connect(a, n);
        }
    }
    Ok(())
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_follows_the_lesson_files() {
        let all = locklab_core::lesson::builtin().unwrap();
        let get = |id: &str| all.iter().find(|l| l.id == id).unwrap();
        assert!(check_supported(get("15")).is_ok());
        assert!(check_supported(get("21")).is_ok());
        // A node's clock jump is the clock-shift preload's.
        assert!(check_supported(get("20")).is_ok());
        let RealRun::No { why } = &get("25").real else {
            panic!("25 is simulator-only")
        };
        assert_eq!(check_supported_lang(get("25"), Lang::Zh).unwrap_err(), why.zh.trim());
        let external = Topology::external("redis://127.0.0.1:1/");
        assert!(check_target(get("05"), &external, Lang::En).is_ok());
        assert!(check_target(get("15"), &external, Lang::En)
            .unwrap_err()
            .contains("replicated"));
    }

    #[test]
    fn version_check() {
        assert!(!at_least_8_4("7.0.15"));
        assert!(at_least_8_4("8.4.0"));
        assert!(at_least_8_4("9.0.1"));
    }
}
