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
use locklab_core::client::{host, Argv, Ctx, Input, Machine, Program, ProgramHost};
use locklab_core::fault::{ClockOf, Endpoint, Fault};
use locklab_core::invariants::{InvariantConfig, Monitor, Violation};
use locklab_core::lesson::compress::{compress, rescale, words, Scale};
use locklab_core::lesson::metrics::{measure_events, Metrics};
use locklab_core::lesson::run::{overlap_is_violation, refuse_crashed, Environment, Progress, StepResult};
use locklab_core::lesson::stand_in;
use locklab_core::lesson::{Lang, Lesson, LessonError, LessonTopology, LockService, MetricsSpec, RealRun, StepKind};
use locklab_core::observe::{KeyGroup, Observed};
use locklab_core::resource::Resource;
use locklab_core::rng::Rng;
use locklab_core::server::EPOCH_MS;
use locklab_core::trace::{Event, EventKind, LossReason};
use locklab_core::world::GroupKind;
use locklab_core::Reply;
use thiserror::Error;

use crate::real::conn::{RealConnection, RealError};
use crate::real::observe::{LockWatch, Look};
use crate::real::session::{Session, SessionError};
use crate::real::topology::{self, NodeRole, Servers, TopologyError, TopologyKind};

mod concurrent;
mod env;
mod faults;
mod monitor;
mod programs;
mod report;
mod support;
mod whole;

use concurrent::Crew;
pub use concurrent::MOST_WORKERS_PER_LINK;
use env::Stepping;
use faults::fault_wait;
use programs::Running;
pub use report::RealReport;
pub(crate) use support::add_note;
use support::watched_keys;
pub use support::{
    check_marked_real, check_supported, check_supported_lang, check_target, check_topology, default_factor,
    topology_kind,
};
use whole::{at_least_8_4, connect_actors, newer_commands_notice, server_version};
pub use whole::{run, run_managed, run_on};

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

/// What a real run reaches its servers through: the session (prefix, ACL
/// user, trace) and the topology (faults, node states). Borrowed for each
/// step, so the WebSocket's lab keeps owning both between steps and can
/// send off-script console commands to the same session.
pub struct RealEnv<'a> {
    pub session: &'a mut Session,
    pub topology: &'a mut Servers,
}

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
    /// Two clients believed they held the same key at some point.
    overlapped: bool,
    /// Replication held back to play a declared lag (see the module doc):
    /// the lag in lesson ms, while it is held.
    held_replication: Option<u64>,
    programs: Vec<Option<Running>>,
    /// The programs' connections on threads of their own, and what is on
    /// the wire ([`concurrent`]).
    crew: Crew,
    events: Vec<Event>,
    /// The clients' `Sent`, `Belief` and `Done` events so far, in lesson
    /// time: what core's metrics read ([`measure_events`]), as they read
    /// the simulator's trace.
    history: Vec<Event>,
    /// `history`'s length at the last `metrics` step.
    metrics_from: usize,
    last_at: u64,
    /// Events handed out so far (the run's and the console's): a step's
    /// `trace_len`, as in the simulator, so the timeline can show the
    /// events up to a step.
    emitted: usize,
}

impl RealLessonRun {
    /// Get ready to play `lesson` on `env`, compressing time by `factor`.
    /// The session should be fresh (the lesson's keys then start absent)
    /// and a managed topology freshly started or [`Servers::reset`].
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
        RealLessonRun::start_unchecked(lesson, env, factor)
    }

    /// [`RealLessonRun::start`] without asking whether the lesson plays on
    /// this topology: for a driver that has checked it otherwise (lesson
    /// 45's Redis part, `service::compare`). Keys of `world.groups` are
    /// judged by their own nodes, as in the simulator's `compare` world.
    pub(crate) fn start_unchecked(
        lesson: &Lesson,
        env: &mut RealEnv<'_>,
        factor: u64,
    ) -> Result<RealLessonRun, RealLessonError> {
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
        let notice = newer_commands_notice(lesson, &version, has_8_4);
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
            overlapped: false,
            held_replication: None,
            programs: Vec::new(),
            crew: Crew::new(),
            events: Vec::new(),
            history: Vec::new(),
            metrics_from: 0,
            last_at: 0,
            emitted: 0,
        };
        for (key, group) in compare_groups(lesson) {
            run.locks.set_group(&key, group);
        }
        for lock in &lesson.world.unfenced {
            run.resource.unfence(lock);
        }
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
        let text = env.topology.fault(topology::NodeFault::CutReplication { node: 1 })?;
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
        // Writes judged by grant order, releases by what the lock observer saw.
        self.lesson
            .outcome
            .judged_real(self.overlapped, self.monitor.violations())
    }

    /// What core's monitor found broken so far (a driver that judges
    /// beliefs itself adds its own: `service::compare`).
    pub(crate) fn violations(&self) -> &[Violation] {
        self.monitor.violations()
    }

    /// What step `index` sent or did differently from the simulator.
    pub(crate) fn note(&self, index: usize) -> Option<&String> {
        self.notes.get(&index)
    }

    /// Lesson time starts over now (a driver that started other services
    /// after this run lines their clocks up).
    pub(crate) fn restart_clock(&mut self, env: &RealEnv<'_>) {
        self.origin_ms = env.session.elapsed_ms();
    }

    /// This run as core's [`Environment`] over `env`, for a driver that
    /// interprets the steps itself.
    pub(crate) fn environment<'r, 'e, 'b>(&'r mut self, env: &'e mut RealEnv<'b>) -> Stepping<'r, 'e, 'b> {
        Stepping { run: self, env }
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
        if self.crew.busy() || !self.crew.enlisted.is_empty() {
            // A reply may land any moment, or programs launched by the
            // last step wait to start: look again shortly.
            return Some(Instant::now() + Duration::from_millis(1));
        }
        self.next_timer()
    }

    /// When a program's timer or timeout is next due (wall clock).
    fn next_timer(&self) -> Option<Instant> {
        self.programs.iter().flatten().filter_map(Running::next_deadline).min()
    }

    /// Serve the background programs whose timers are due, between steps;
    /// their events are in [`take_events`](RealLessonRun::take_events).
    pub fn serve(&mut self, env: &mut RealEnv<'_>) -> Result<(), RealLessonError> {
        let step = self.results().len() + 1;
        // Between steps (the browser sent no next step), programs the last
        // steps launched start now, together.
        self.start_enlisted(env)
            .and_then(|()| self.pump(env, None))
            .map_err(|msg| RealLessonError::Step {
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
        add_note(&mut self.notes, index, note);
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
        // Overlaps still going on grow to now, sent again (core's monitor).
        for violation in self.monitor.stretch(now) {
            self.record(env, None, Actor::World, EventKind::Violation { violation });
        }
        let events = env.session.take_events();
        let events = self.restamp(events);
        self.keep(events);
    }

    /// Hand `events` (restamped) out, and keep what the metrics read.
    fn keep(&mut self, events: Vec<Event>) {
        self.history
            .extend(events.iter().filter(|e| counts_for_metrics(e)).cloned());
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
        self.keep(events);
        if reply.is_some() {
            self.observe(env, Some(node), Look::Cmd { client: cid, node });
        }
        Ok(reply)
    }

    /// What goes on the wire for the lesson's `argv`: compressed by the
    /// factor, and an 8.4 command (`DELEX … IFEQ`, `SET … IFEQ`) as the Lua
    /// it stands for on an older server (core's [`stand_in`]); with the
    /// scale of its reply and the note that says what was sent instead, if
    /// anything was.
    fn as_sent(&self, argv: &[Vec<u8>]) -> Result<OnWire, String> {
        let (sent, scale) = compress(argv, self.factor as i64);
        let stand_in = if self.has_8_4 {
            None
        } else {
            stand_in::for_7_0(&sent).map_err(|e| format!("{e}; this server is {}", self.version))?
        };
        let Some(s) = stand_in else {
            let note = (sent != argv).then(|| format!("sent as {} at {}×", words(&sent), self.factor));
            return Ok(OnWire {
                argv: sent,
                scale,
                note,
            });
        };
        let note = format!(
            "{} needs Redis 8.4; this server is {}: sent {} instead",
            s.stands_for, self.version, s.script
        );
        Ok(OnWire {
            argv: s.argv,
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
}

/// Lesson 45's Redis and Redlock keys and the nodes that judge each (the
/// simulator's `compare` world: a Redis on node 0, Redlock's masters after
/// it); none for any other lesson.
fn compare_groups(lesson: &Lesson) -> Vec<(String, KeyGroup)> {
    let Some(locks) = &lesson.world.groups else {
        return Vec::new();
    };
    let world = locklab_core::lesson::run::world_config(lesson).topology;
    (world.groups().into_iter())
        .filter(|g| matches!(g.kind, GroupKind::Redis | GroupKind::Redlock))
        .map(|g| {
            let group = KeyGroup {
                first: g.first,
                count: g.count,
                majority: g.kind == GroupKind::Redlock,
                master: g.first,
            };
            (locks.key_of(g.kind).to_owned(), group)
        })
        .collect()
}

/// A lesson's command as it goes on the wire ([`RealLessonRun::as_sent`]).
struct OnWire {
    argv: Vec<Vec<u8>>,
    /// How its reply is scaled back to lesson time.
    scale: Scale,
    /// What the step's note says was sent instead, if anything.
    note: Option<String>,
}

/// Is `e` one core's metrics read: a client's request, belief or end?
fn counts_for_metrics(e: &Event) -> bool {
    matches!(e.actor, Actor::Client(_))
        && matches!(
            e.kind,
            EventKind::Sent { .. } | EventKind::Belief { .. } | EventKind::Done
        )
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
        // 18's slow node is the delaying proxy, its five-way race the
        // concurrent programs, its figures ranges that hold on both drivers.
        assert!(check_supported(get("18")).is_ok());
        assert_eq!(default_factor(get("18")), 1, "18 measures waits of a few ms");
        // A lesson that says it cannot run on a real server is refused with
        // its own reason, in its language (none of the catalogue's does now).
        let mut sim_only = get("05").clone();
        sim_only.real = RealRun::No {
            why: locklab_core::lesson::Bilingual {
                zh: "只能在模拟器上".into(),
                en: " simulator only ".into(),
            },
        };
        assert_eq!(check_supported_lang(&sim_only, Lang::Zh).unwrap_err(), "只能在模拟器上");
        assert_eq!(check_supported(&sim_only).unwrap_err(), "simulator only");
        // Its 7 ms link would vanish under compression.
        assert!(check_supported(get("42")).is_ok());
        assert_eq!(default_factor(get("42")), 1);
        assert_eq!(
            default_factor(get("33")),
            100,
            "33's link is the default one, and loses replies"
        );
        // Metrics are measured on the real run's own events (issue 18).
        for id in ["25", "26", "27"] {
            assert!(check_supported(get(id)).is_ok(), "lesson {id}");
            assert_eq!(default_factor(get(id)), 1, "lesson {id} measures waits of a few ms");
        }
        let external = Servers::external("redis://127.0.0.1:1/");
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
