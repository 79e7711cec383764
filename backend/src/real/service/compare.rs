//! Lesson 45 on real processes: the same pause against a single Redis,
//! Redlock, etcd and ZooKeeper, on one timeline.
//!
//! The simulator's `compare` world numbers ten nodes: the Redis (0), three
//! Redlock masters (1–3), three etcd members (4–6) and three ZooKeeper
//! servers (7–9), each group guarding its own key (`world.groups`).
//! [`CompareEnv`] is core's [`Environment`] over the real equivalents, each
//! driven by the driver that plays it alone, so nothing about a service is
//! said twice:
//!
//! * **Redis and Redlock**: four managed `redis-server` masters named as in
//!   the simulator, played by the Redis real runner ([`RealLessonRun`])
//!   through a lab session; the Redis key is judged by node 0 alone, the
//!   Redlock key by a majority of 1–3 (core's lock observer with the
//!   simulator's key groups).
//! * **etcd** ([`EtcdEnv`]) and **ZooKeeper** ([`ZkEnv`]) as in lessons 43
//!   and 44.
//!
//! A step goes to the service its node belongs to (a command without one
//! to the Redis, as in the simulator); a write to the service whose lock
//! it names. Each driver judges its own lock's grants and writes with
//! core's observer, monitor and resource; what the clients believe they
//! hold is one monitor of all four locks, on one clock, so each service's
//! two holders are stamped alike and drawn as one band, as in the
//! simulator (a run of `hold` steps takes no lesson time). The run's
//! outcome is core's rule over all of them. Their traces are merged into one, each member and
//! request renumbered into the ten-node world ([`Event::shift`]).
//!
//! What differs from one service alone:
//!
//! * **One clock.** All three start first (in parallel: a few seconds),
//!   then lesson time starts over on each at the same instant; one factor
//!   (10×: etcd's TTLs are whole seconds) compresses them all. The Redis
//!   run does not count the wall time a fault takes as lesson time, and
//!   after one the others are set to its time.
//! * **One pause.** A client fault goes to every driver (the ZooKeeper one
//!   drops the client's connection, so its heartbeats stop too) and is
//!   shown once; a paused client's next request or write waits here until
//!   the pause is over, and its `Resumed` is shown once.
//! * **Waits** sleep in slices, each driver looking at its locks after
//!   every slice, so a lock that runs out on one service is seen while the
//!   others wait.
//! * Only client faults: a node fault would stop one service's clock
//!   (an election is not lesson time) and not the others'.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use locklab_core::actor::{Actor, Names};
use locklab_core::client::Program;
use locklab_core::fault::Fault;
use locklab_core::lesson::metrics::Metrics;
use locklab_core::lesson::run::{world_config, Environment, StepResult};
use locklab_core::lesson::{Lesson, LockService, MetricsSpec};
use locklab_core::trace::{Event, EventKind};
use locklab_core::world::GroupKind;
use locklab_core::Reply;

use super::env::ServiceParts;
use super::lesson_state::{check_steps, play, unsupported, LessonState};
use super::{EtcdEnv, ZkEnv};
use crate::real::lesson::{add_note, RealEnv, RealLessonError, RealLessonRun, RealReport};
use crate::real::session::{Session, SessionLimits, SessionPool};
use crate::real::topology::Servers;

/// Requests of the etcd and ZooKeeper drivers are numbered from 1 each;
/// in the merged trace theirs start this far up (the Redis session's own
/// stay as they are).
const REQS_APART: u64 = 1 << 40;
/// A wait is slept in slices this long, every driver looking after each.
const SLICE: Duration = Duration::from_millis(100);
/// The factor all three run at when none is asked for: etcd grants whole
/// seconds, so a 10 s lease is its smallest TTL at 10×.
pub const FACTOR: u64 = 10;

/// Which driver plays a node or a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Redis,
    Etcd,
    Zk,
}

/// The Redis and Redlock masters, and the run that plays them. Fields drop
/// in order: the session (its keys and ACL user) before its servers.
struct RedisPart {
    run: RealLessonRun,
    session: Session,
    topology: Servers,
}

impl RedisPart {
    /// `f` on the run as core's environment, over its own session and
    /// topology.
    fn with<T>(&mut self, f: impl FnOnce(&mut dyn Environment) -> T) -> T {
        let RedisPart { run, session, topology } = self;
        f(&mut run.environment(&mut RealEnv { session, topology }))
    }

    /// The run's lesson time now.
    fn now(&self) -> u64 {
        self.run.lesson_ms(self.session.elapsed_ms())
    }
}

/// Lesson 45 being played on four real lock services at once.
pub struct CompareEnv {
    lesson: Lesson,
    factor: u64,
    redis: RedisPart,
    etcd: EtcdEnv,
    zk: ZkEnv,
    /// What the clients believe they hold, of all four locks: one monitor
    /// on one clock, so that two holders of each service's lock are one
    /// band, as in the simulator.
    beliefs: LessonState,
    /// The simulator's ten nodes, and the lesson's clients.
    names: Names,
    /// First node of each service in the ten.
    first: BTreeMap<u32, (Part, u32)>,
    /// Which driver judges each lock key.
    lock_of: BTreeMap<String, Part>,
    version: String,
    /// The merged trace.
    events: Vec<Event>,
    /// How far the etcd, ZooKeeper and belief traces are merged.
    merged: [usize; 3],
    /// Clients paused until then, and those whose pause still has to end.
    paused: BTreeMap<String, Instant>,
    resuming: BTreeSet<String>,
}

impl CompareEnv {
    /// Start the four services `lesson` (a `service = "all"` lesson)
    /// compares, and stand at lesson time 0 on all of them.
    pub fn start(lesson: &Lesson, factor: u64) -> Result<CompareEnv, RealLessonError> {
        let factor = factor.clamp(1, 1000);
        let Layout {
            first,
            lock_of,
            masters,
            nodes,
        } = Layout::of(lesson)?;
        let mut all_locks = lesson.clone();
        all_locks.world.locks = lock_of.keys().cloned().collect();
        let mut beliefs = LessonState::new(&all_locks, factor, nodes.clone());
        let part_lesson = |part: Part| part_lesson(lesson, &lock_of, part);
        let (etcd, zk, redis) = std::thread::scope(|s| {
            let etcd = s.spawn(|| EtcdEnv::start(&part_lesson(Part::Etcd), factor));
            let zk = s.spawn(|| ZkEnv::start(&part_lesson(Part::Zk), factor));
            let names: Vec<&str> = masters.iter().map(String::as_str).collect();
            let redis = start_redis(&part_lesson(Part::Redis), &names, factor);
            (joined(lesson, etcd.join()), joined(lesson, zk.join()), redis)
        });
        let (mut etcd, mut zk, mut redis) = (etcd?, zk?, redis?);
        let version = format!(
            "redis {} · {} · {}",
            redis.run.server_version(),
            etcd.version(),
            zk.version()
        );
        // Lesson time 0, the same instant on all three.
        redis.run.restart_clock(&RealEnv {
            session: &mut redis.session,
            topology: &mut redis.topology,
        });
        etcd.state_mut().set_now(0);
        zk.state_mut().set_now(0);
        beliefs.set_now(0);
        Ok(CompareEnv {
            names: Names {
                clients: lesson.actors.clone(),
                nodes,
            },
            lesson: lesson.clone(),
            factor,
            redis,
            etcd,
            zk,
            beliefs,
            first,
            lock_of,
            version,
            events: Vec::new(),
            merged: [0, 0, 0],
            paused: BTreeMap::new(),
            resuming: BTreeSet::new(),
        })
    }

    /// "redis 7.0.15 · etcd 3.4.23 · ZooKeeper 3.8.0".
    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn factor(&self) -> u64 {
        self.factor
    }

    /// The merged trace so far.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The ten nodes and the clients, as the trace names them.
    pub fn trace_names(&self) -> &Names {
        &self.names
    }

    /// What step `index` sent or did differently from the simulator, on
    /// any of the services.
    pub fn note(&self, index: usize) -> Option<String> {
        let mut notes = BTreeMap::new();
        let said = [
            self.redis.run.note(index),
            self.etcd.notes().get(&index),
            self.zk.notes().get(&index),
        ];
        for n in said.into_iter().flatten() {
            add_note(&mut notes, index, n.clone());
        }
        notes.remove(&index)
    }

    /// The lesson's outcome, by core's rule over every judge: two holders
    /// of any lock, or a violation any service's monitor found.
    pub fn outcome(&self) -> Option<bool> {
        let redis = self.redis.run.violations();
        let violations: Vec<_> = (self.beliefs.monitor.violations().iter())
            .chain(redis)
            .chain(self.etcd.state().monitor.violations())
            .chain(self.zk.state().monitor.violations())
            .cloned()
            .collect();
        self.lesson.outcome.judged_real(self.beliefs.overlapped, &violations)
    }

    /// The report of a run played to its end.
    pub fn report(&self, results: Vec<StepResult>) -> RealReport {
        let notes = (0..self.lesson.steps.len())
            .filter_map(|i| Some((i, self.note(i)?)))
            .collect();
        RealReport {
            server_version: self.version.clone(),
            factor: self.factor,
            results,
            notes,
            outcome: self.outcome(),
        }
    }

    /// The driver that plays `node` of the ten, and the node in its own
    /// numbering.
    fn part_of(&self, node: u32) -> Result<(Part, u32), String> {
        let (&first, &(part, _)) = self
            .first
            .range(..=node)
            .next_back()
            .filter(|(f, (_, count))| node < *f + *count)
            .ok_or_else(|| format!("node {node} is not one of the {} nodes", self.names.nodes.len()))?;
        Ok((part, node - first))
    }

    /// The driver that judges `lock` (the Redis run for any other).
    fn judge_of(&self, lock: Option<&str>) -> Part {
        lock.and_then(|l| self.lock_of.get(l)).copied().unwrap_or(Part::Redis)
    }

    /// Take the drivers' new events into the merged trace, renumbered; a
    /// fault fanned out to every driver is shown once (`faults` from the
    /// Redis run only), a paused client's `Resumed` only as this run says.
    fn merge(&mut self) {
        self.beliefs.stretch();
        let redis = self.redis.run.take_events();
        let etcd_first = self.first_of(Part::Etcd);
        let zk_first = self.first_of(Part::Zk);
        let etcd = self.etcd.events()[self.merged[0]..].to_vec();
        let zk = self.zk.events()[self.merged[1]..].to_vec();
        let beliefs = self.beliefs.events[self.merged[2]..].to_vec();
        self.merged = [
            self.etcd.events().len(),
            self.zk.events().len(),
            self.beliefs.events.len(),
        ];
        let shifted = |events: Vec<Event>, nodes: u32, reqs: u64| {
            events.into_iter().map(move |mut e| {
                e.shift(nodes, reqs);
                e
            })
        };
        let services = shifted(etcd, etcd_first, REQS_APART)
            .chain(shifted(zk, zk_first, 2 * REQS_APART))
            .filter(|e| !matches!(e.kind, EventKind::Fault { .. }));
        for e in redis.into_iter().chain(services).chain(beliefs) {
            if matches!(e.kind, EventKind::Resumed) {
                continue;
            }
            self.push(e);
        }
    }

    fn first_of(&self, part: Part) -> u32 {
        self.first.iter().find(|(_, (p, _))| *p == part).map_or(0, |(f, _)| *f)
    }

    /// Add one event to the merged trace, numbered and never before the
    /// last.
    fn push(&mut self, mut e: Event) {
        e.step = self.events.len() as u64;
        e.at_ms = e.at_ms.max(self.events.last().map_or(0, |l| l.at_ms));
        self.events.push(e);
    }

    /// Lesson ms now.
    fn lesson_now(&self) -> u64 {
        self.etcd.now()
    }

    /// A paused client acts once its pause is over, as on one service:
    /// every driver keeps looking meanwhile.
    fn wait_paused(&mut self, index: usize, client: &str) -> Result<(), String> {
        let Some(until) = self.paused.remove(client) else {
            return Ok(());
        };
        self.sleep_until(index, until)?;
        if self.resuming.remove(client) {
            if let Some(cid) = self.names.clients.iter().position(|c| c == client) {
                let at_ms = self.lesson_now();
                self.push(Event {
                    step: 0,
                    at_ms,
                    actor: Actor::Client(cid as u32),
                    kind: EventKind::Resumed,
                });
            }
        }
        Ok(())
    }

    /// Sleep until `until` in slices, each driver looking at its locks (and
    /// etcd collecting its blocked answers) after each.
    fn sleep_until(&mut self, index: usize, until: Instant) -> Result<(), String> {
        loop {
            let left = until.saturating_duration_since(Instant::now()).min(SLICE);
            let ms = (left.as_micros() as u64).saturating_mul(self.factor) / 1000;
            self.etcd.wait(index, ms)?;
            self.zk.wait(index, 0)?;
            self.redis.with(|e| e.wait(index, 0))?;
            self.merge();
            if Instant::now() >= until {
                return Ok(());
            }
        }
    }

    /// Run `f` on `part`'s driver, then merge what it recorded.
    fn on<T>(&mut self, part: Part, f: impl FnOnce(&mut dyn Environment) -> T) -> T {
        let out = match part {
            Part::Redis => self.redis.with(f),
            Part::Etcd => f(&mut self.etcd),
            Part::Zk => f(&mut self.zk),
        };
        self.merge();
        out
    }
}

impl Environment for CompareEnv {
    fn command(
        &mut self,
        index: usize,
        client: &str,
        node: Option<u32>,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String> {
        let (part, local) = self.part_of(node.unwrap_or(0))?;
        self.wait_paused(index, client)?;
        self.on(part, |d| d.command(index, client, Some(local), argv))
    }

    fn wait(&mut self, index: usize, ms: u64) -> Result<(), String> {
        let until = Instant::now() + Duration::from_micros(ms.saturating_mul(1000) / self.factor);
        self.sleep_until(index, until)
    }

    fn fault(&mut self, index: usize, fault: &Fault) -> Result<(), String> {
        match fault {
            Fault::PauseClient { client, ms } => {
                let wall = ms.map_or(Duration::from_secs(365 * 24 * 3600), |ms| {
                    Duration::from_micros(ms.saturating_mul(1000) / self.factor)
                });
                self.paused.insert(client.clone(), Instant::now() + wall);
                self.resuming.insert(client.clone());
            }
            Fault::ResumeClient { client } => {
                self.paused.remove(client);
                self.resuming.remove(client);
            }
            Fault::CrashClient { client } => {
                // A crashed client believes nothing any more.
                let cid = self.beliefs.cid(client)?;
                for key in self.lock_of.keys() {
                    if self.beliefs.monitor.believes(key, cid) {
                        self.beliefs.belief(cid, key, false);
                    }
                }
            }
            other => {
                return Err(format!(
                    "a run on four services takes client faults only, not {other:?}"
                ))
            }
        }
        for part in [Part::Redis, Part::Etcd, Part::Zk] {
            self.on(part, |d| d.fault(index, fault))?;
        }
        // The Redis run stood lesson time still while the lab did the
        // fault; the others stand still as long.
        let now = self.redis.now();
        self.etcd.state_mut().set_now(now);
        self.zk.state_mut().set_now(now);
        self.beliefs.set_now(now);
        self.merge();
        Ok(())
    }

    fn launch(&mut self, _index: usize, _client: &str, _program: &Program, _background: bool) -> Result<(), String> {
        Err("a run on four services types its commands; client programs are refused by check_compare".into())
    }

    fn write(&mut self, index: usize, client: &str, token: Option<i64>, value: &str) -> Result<String, String> {
        self.write_under(index, client, None, token, value)
    }

    fn write_under(
        &mut self,
        index: usize,
        client: &str,
        lock: Option<&str>,
        token: Option<i64>,
        value: &str,
    ) -> Result<String, String> {
        self.wait_paused(index, client)?;
        let part = self.judge_of(lock);
        self.on(part, |d| d.write_under(index, client, lock, token, value))
    }

    /// A `hold` is the lesson saying what a client believes: it takes no
    /// lesson time in the simulator, and none here, so a client that now
    /// holds four locks holds them from one instant.
    fn hold(&mut self, _index: usize, client: &str, key: &str, holds: bool) -> Result<(), String> {
        if self.beliefs.pinned.is_none() {
            self.beliefs.pinned = Some(self.beliefs.now());
        }
        self.beliefs.hold(client, key, holds)?;
        self.merge();
        Ok(())
    }

    fn metrics(&mut self, _index: usize, _spec: &MetricsSpec, _clients: &[String]) -> Result<Metrics, String> {
        Err("metrics are refused by check_compare".into())
    }

    fn begin_step(&mut self, index: usize) -> Result<(), String> {
        let holds = (self.lesson.steps.get(index)).is_some_and(|s| s.hold.is_some() || s.unhold.is_some());
        if !holds {
            self.beliefs.pinned = None;
        }
        for part in [Part::Redis, Part::Etcd, Part::Zk] {
            self.on(part, |d| d.begin_step(index))?;
        }
        Ok(())
    }

    fn end_step(&mut self, index: usize, last: bool) {
        for part in [Part::Redis, Part::Etcd, Part::Zk] {
            self.on(part, |d| d.end_step(index, last));
        }
        if last {
            // Two holders at the end end with the lesson.
            self.beliefs.monitor.stop_ongoing();
        }
    }

    fn now(&self) -> u64 {
        self.lesson_now().max(self.events.last().map_or(0, |e| e.at_ms))
    }

    fn trace_len(&self) -> usize {
        self.events.len()
    }

    fn names(&self) -> &Names {
        &self.names
    }
}

/// Where the simulator's `compare` world puts each service, for one lesson.
struct Layout {
    /// First node of each driver's group, with its node count.
    first: BTreeMap<u32, (Part, u32)>,
    /// Which driver judges each lock key.
    lock_of: BTreeMap<String, Part>,
    /// The Redis and Redlock masters' names, in node order.
    masters: Vec<String>,
    /// All the world's node names.
    nodes: Vec<String>,
}

impl Layout {
    fn of(lesson: &Lesson) -> Result<Layout, RealLessonError> {
        let Some(groups) = &lesson.world.groups else {
            return Err(unsupported(
                lesson,
                "it names no lock per service (world.groups)".into(),
            ));
        };
        let world = world_config(lesson).topology;
        let mut first = BTreeMap::new();
        let mut lock_of = BTreeMap::new();
        let mut masters = Vec::new();
        for g in world.groups() {
            let part = match g.kind {
                GroupKind::Redis | GroupKind::Redlock => Part::Redis,
                GroupKind::Service(locklab_core::service::ServiceKind::Etcd) => Part::Etcd,
                GroupKind::Service(_) => Part::Zk,
            };
            lock_of.insert(groups.key_of(g.kind).to_owned(), part);
            if part == Part::Redis {
                masters.extend((g.first..g.first + g.count).map(|n| world.node_name(n)));
            } else {
                first.insert(g.first, (part, g.count));
            }
        }
        // The Redis and its Redlock masters are the world's first nodes
        // (0–3): one topology, numbered as the world numbers them.
        first.insert(0, (Part::Redis, masters.len() as u32));
        let nodes = (0..world.node_count()).map(|n| world.node_name(n)).collect();
        Ok(Layout {
            first,
            lock_of,
            masters,
            nodes,
        })
    }
}

/// `lesson` as one driver plays it: only that driver's locks watched, and
/// an etcd or ZooKeeper driver told its service.
fn part_lesson(lesson: &Lesson, lock_of: &BTreeMap<String, Part>, part: Part) -> Lesson {
    let mut l = lesson.clone();
    l.world.locks = (lock_of.iter())
        .filter(|(_, p)| **p == part)
        .map(|(k, _)| k.clone())
        .collect();
    let service = match part {
        Part::Redis => return l,
        Part::Etcd => LockService::Etcd,
        Part::Zk => LockService::Zk,
    };
    l.world.service = Some(service);
    l.world.groups = None;
    l
}

/// A service started on a thread of its own; one whose start panicked
/// did not start.
fn joined<T>(lesson: &Lesson, r: std::thread::Result<Result<T, RealLessonError>>) -> Result<T, RealLessonError> {
    r.unwrap_or_else(|_| Err(unsupported(lesson, "a lock service failed to start".into())))
}

/// Four masters named as the simulator names them, a session on them, and
/// the Redis run of the lesson's Redis and Redlock keys.
fn start_redis(lesson: &Lesson, names: &[&str], factor: u64) -> Result<RedisPart, RealLessonError> {
    let mut topology = Servers::start_masters(names)?;
    let pool = SessionPool::new(SessionLimits {
        commands_per_sec: f64::INFINITY,
        ..SessionLimits::default()
    });
    let mut session = pool.open_on(&topology)?;
    let run = RealLessonRun::start_unchecked(
        lesson,
        &mut RealEnv {
            session: &mut session,
            topology: &mut topology,
        },
        factor,
    )?;
    Ok(RedisPart { run, session, topology })
}

/// Can the four real services play this lesson? Its steps type their
/// commands, and its faults are the clients' (a pause, a resume, a crash)
/// alone.
pub fn check_compare(lesson: &Lesson) -> Result<(), String> {
    check_steps(lesson, "four-service", |_| false)
}

/// Start the four services, play `lesson` on them with core's interpreter,
/// stop them.
pub fn run_compare(lesson: &Lesson, factor: u64) -> Result<RealReport, RealLessonError> {
    check_compare(lesson).map_err(|why| unsupported(lesson, why))?;
    let mut env = CompareEnv::start(lesson, factor)?;
    let results = play(lesson, &mut env)?;
    Ok(env.report(results))
}
