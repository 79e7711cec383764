//! What a lock-service lesson's real run keeps whatever the service is:
//! lesson time against the wall clock, the clients' pauses and crashes,
//! the trace, and core's observer, monitor and resource that judge it as
//! the simulator's world does. A [`super::ServiceEnv`] holds one and
//! hands it to its run ([`super::EtcdRun`], [`super::ZkRun`]), which adds
//! what its service needs.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use locklab_core::actor::{Actor, Names};
use locklab_core::fault::Fault;
use locklab_core::invariants::{InvariantConfig, Monitor, Violation};
use locklab_core::lesson::run::{overlap_is_violation, Environment, Progress, StepResult};
use locklab_core::lesson::{Lesson, LessonError, RealRun, StepKind};
use locklab_core::observe::{Cause, LockObserver, Observed, Scope, Seen, Via};
use locklab_core::resource::Resource;
use locklab_core::trace::{Event, EventKind};

use crate::real::lesson::{add_note, RealLessonError, RealReport};

/// How much earlier than the run's own deadline a lease or session may
/// run out on the service, in wall ms: the round trip that answered its
/// grant or keep-alive.
const SLACK_WALL_MS: u64 = 50;

/// A pause without an end lasts this long (the run ends first).
const FOR_GOOD: Duration = Duration::from_secs(365 * 24 * 3600);

pub(crate) struct LessonState {
    pub(super) lesson: Lesson,
    /// Time compression: lesson ms per wall ms.
    pub(super) factor: u64,
    /// Lesson time 0, wall clock.
    pub(super) origin: Instant,
    pub(super) names: Names,
    /// The member a command without a node goes to, and whose lock bars
    /// are shown: the leader, as the run last learned it.
    pub(super) leader: u32,
    /// Clients paused until then.
    pub(super) paused: BTreeMap<String, Instant>,
    pub(super) crashed: BTreeSet<String>,
    /// Real key or znode path → the client whose request made it.
    pub(super) owners: BTreeMap<String, u32>,
    pub(super) observer: LockObserver,
    pub(super) monitor: Monitor,
    pub(super) resource: Resource,
    pub(super) overlapped: bool,
    pub(super) events: Vec<Event>,
    /// Per step, what was sent or done differently from the simulator.
    pub(super) notes: BTreeMap<usize, String>,
    pub(super) next_req: u64,
    /// Lesson time stands still here (a run of `hold` steps, which take
    /// no lesson time in the simulator; see `compare`).
    pub(super) pinned: Option<u64>,
}

impl LessonState {
    /// Lesson time starts now; `nodes` are the service's members, by name.
    pub(super) fn new(lesson: &Lesson, factor: u64, nodes: Vec<String>) -> LessonState {
        let mut observer = LockObserver::new(Scope::Declared, nodes.len(), false);
        for k in &lesson.world.locks {
            observer.watch(k);
        }
        LessonState {
            lesson: lesson.clone(),
            factor: factor.max(1),
            origin: Instant::now(),
            names: Names {
                clients: lesson.actors.clone(),
                nodes,
            },
            leader: 0,
            paused: BTreeMap::new(),
            crashed: BTreeSet::new(),
            owners: BTreeMap::new(),
            observer,
            monitor: Monitor::new(InvariantConfig {
                lock_keys: lesson.world.locks.clone(),
                overlap_is_violation: overlap_is_violation(lesson),
                max_hold_ms: lesson.world.max_hold_ms,
            }),
            resource: Resource::new(lesson.world.fencing),
            overlapped: false,
            events: Vec::new(),
            notes: BTreeMap::new(),
            next_req: 1,
            pinned: None,
        }
    }

    /// Lesson ms since the start (or where time stands still).
    pub(super) fn now_ms(&self) -> u64 {
        self.pinned
            .unwrap_or_else(|| (self.origin.elapsed().as_micros() as u64).saturating_mul(self.factor) / 1000)
    }

    /// Lesson time is `ms` now (another service's driver, played on the
    /// same clock, stood still for wall time the lab spent: a fault).
    pub(super) fn set_now(&mut self, ms: u64) {
        if let Some(origin) = Instant::now().checked_sub(self.wall(ms)) {
            self.origin = origin;
        }
    }

    /// The trace's time: lesson ms, never before its last event.
    pub(super) fn now(&self) -> u64 {
        self.now_ms().max(self.events.last().map_or(0, |e| e.at_ms))
    }

    /// Wall time of `ms` lesson ms.
    pub(super) fn wall(&self, ms: u64) -> Duration {
        Duration::from_micros(ms.saturating_mul(1000) / self.factor)
    }

    pub(super) fn cid(&self, client: &str) -> Result<u32, String> {
        self.names
            .clients
            .iter()
            .position(|c| c == client)
            .map(|i| i as u32)
            .ok_or_else(|| format!("unknown client {client:?}"))
    }

    pub(super) fn record(&mut self, actor: Actor, kind: EventKind) {
        let at_ms = self.now();
        self.events.push(Event {
            step: self.events.len() as u64,
            at_ms,
            actor,
            kind,
        });
    }

    pub(super) fn add_note(&mut self, index: usize, note: String) {
        add_note(&mut self.notes, index, note);
    }

    /// A client fault, which is the same on every service: the client
    /// stops sending until its pause is over, or for good. `false` for
    /// any other fault.
    pub(super) fn client_fault(&mut self, fault: &Fault) -> bool {
        match fault {
            Fault::PauseClient { client, ms } => {
                let wall = ms.map_or(FOR_GOOD, |ms| self.wall(ms));
                self.paused.insert(client.clone(), Instant::now() + wall);
            }
            Fault::ResumeClient { client } => {
                self.paused.remove(client);
            }
            Fault::CrashClient { client } => {
                self.crashed.insert(client.clone());
            }
            _ => return false,
        }
        true
    }

    /// What `lock` holds on `node` now: `seen`, with the client whose
    /// request made it (`None`: free). A holder that changed goes first:
    /// by expiry when its lease or session had run out by `now` — the run
    /// only looks after a request, and B's `LOCK` answered after A's lease
    /// ran out did not remove A's key — else by `by`'s command. Then the
    /// new one is granted.
    pub(super) fn show_holder(
        &mut self,
        node: u32,
        lock: &str,
        seen: Option<(Seen, Option<u32>)>,
        by: Option<u32>,
        now: u64,
    ) {
        let old = self.observer.held(node, lock).map(|h| (h.value.clone(), h.deadline));
        let new = seen.as_ref().map(|(s, _)| &s.value);
        if let Some((_, deadline)) = old.filter(|(v, _)| Some(v) != new) {
            // The run's deadline is taken when the grant or keep-alive was
            // answered, a round trip after the service took it.
            let slack = SLACK_WALL_MS * self.factor;
            let why = match by {
                Some(c) if deadline.is_none_or(|d| d > now + slack) => Cause::Command(c),
                _ => Cause::Expiry,
            };
            let observed = self.observer.observe(node, lock, None, why, now);
            self.judge(observed);
        }
        if let Some((s, owner)) = seen {
            let why = owner.map_or(Cause::Expiry, Cause::Command);
            let observed = self.observer.observe(node, lock, Some(s), why, now);
            self.judge(observed);
        }
    }

    /// What the observer saw on the service, on the timeline; grants go to
    /// the monitor, which orders holders for the resource's fence.
    pub(super) fn judge(&mut self, observed: Vec<Observed>) {
        for o in observed {
            // The service took the lock away itself: its expiry goes first.
            if let Observed::Lock {
                node,
                key,
                via: Via::Expiry,
                ..
            } = &o
            {
                self.record(Actor::Node(*node), EventKind::Expired { key: key.clone() });
            }
            // A wrong release or foreign extension is not judged here.
            if let Ok((actor, kind)) = o.into_event(&mut self.monitor) {
                self.record(actor, kind);
            }
        }
    }

    pub(super) fn violate(&mut self, v: Violation) {
        self.monitor.record(v.clone());
        self.record(Actor::World, EventKind::Violation { violation: v });
    }

    /// A client starts or stops believing it holds `key` (core's monitor
    /// decides on overlaps, as in the simulator).
    pub(super) fn belief(&mut self, cid: u32, key: &str, holds: bool) {
        let now = self.now_ms();
        let changed = belief_events(
            &mut self.monitor,
            &self.names,
            &mut self.overlapped,
            cid,
            key,
            holds,
            now,
        );
        for (actor, kind) in changed {
            self.record(actor, kind);
        }
    }

    /// Overlaps still going on last until now so far: their grown copies go
    /// on the timeline (which keeps the latest), as the Redis runs do.
    pub(super) fn stretch(&mut self) {
        let now = self.now();
        for violation in self.monitor.stretch(now) {
            self.record(Actor::World, EventKind::Violation { violation });
        }
    }

    /// A `write` step: the resource's verdict, as the step's reply.
    pub(super) fn write(&mut self, client: &str, token: Option<i64>, value: &str) -> Result<String, String> {
        let cid = self.cid(client)?;
        let accepted = self.write_resource(cid, token, value);
        Ok(if accepted { "accepted" } else { "rejected" }.to_owned())
    }

    /// A `hold` step: the client's belief, as the lesson states it.
    pub(super) fn hold(&mut self, client: &str, key: &str, holds: bool) -> Result<(), String> {
        let cid = self.cid(client)?;
        self.belief(cid, key, holds);
        Ok(())
    }

    /// A write to the protected resource (simulated on a real run too: it
    /// is the business system, not the lock service).
    pub(super) fn write_resource(&mut self, cid: u32, token: Option<i64>, value: &str) -> bool {
        let sent = EventKind::WriteSent {
            token,
            value: value.to_owned(),
        };
        self.record(Actor::Client(cid), sent);
        let at = self.now_ms();
        let accepted = self.resource.write(cid, at, token, value.to_owned());
        let judged = EventKind::Write {
            client: cid,
            token,
            value: value.to_owned(),
            accepted,
        };
        self.record(Actor::Resource, judged);
        if accepted {
            let names = self.names.clone();
            if let Some(v) = self
                .monitor
                .accepted_write(cid, at, token, &|i| names.client(i).to_owned())
            {
                self.violate(v);
            }
        }
        accepted
    }

    /// The lesson's outcome, as the Redis runner judges it: an overlap by
    /// the beliefs, a stale write or wrong release by core's monitor.
    pub(super) fn outcome(&self) -> Option<bool> {
        self.lesson
            .outcome
            .judged_real(self.overlapped, self.monitor.violations())
    }

    /// The finished run's report.
    pub(super) fn report(&self, server_version: String, results: Vec<StepResult>) -> RealReport {
        RealReport {
            server_version,
            factor: self.factor,
            results,
            notes: self.notes.clone(),
            outcome: self.outcome(),
        }
    }
}

/// What a client's change of belief in `key` to `holds` at `now` puts on a
/// real run's timeline, in order: the belief, the overlap that began or
/// ended with it, and the overlap violation's band as it stands (begun, or
/// grown to where it ended) — core's monitor decides, as in the simulator.
/// Nothing when the client believed so already; `overlapped` is set once
/// an overlap began. The Redis run and the lock-service runs both stream
/// their beliefs this way.
pub(crate) fn belief_events(
    monitor: &mut Monitor,
    names: &Names,
    overlapped: &mut bool,
    cid: u32,
    key: &str,
    holds: bool,
    now: u64,
) -> Vec<(Actor, EventKind)> {
    let Some(change) = monitor.change_belief(key, cid, holds, now, &|i| names.client(i).to_owned()) else {
        return Vec::new();
    };
    // The overlap's band grows while it goes on (core's monitor).
    let streamed = monitor.stream_overlap(key, &change, now);
    *overlapped |= change.overlap.as_ref().is_some_and(|ch| ch.begin);
    let mut events = change.events(key, cid, holds);
    events.extend(streamed.map(|violation| (Actor::World, EventKind::Violation { violation })));
    events
}

/// The refusal of a lesson a lock-service driver cannot play.
pub(super) fn unsupported(lesson: &Lesson, why: String) -> RealLessonError {
    RealLessonError::Unsupported {
        id: lesson.id.clone(),
        why,
    }
}

/// Can a real `service` run play this lesson? Its own `real = no`, a
/// fault that is neither a client's (every run takes those, see
/// [`LessonState::client_fault`]) nor in `takes`, a Redis client program
/// or a metrics step say why not.
pub(super) fn check_steps(lesson: &Lesson, service: &str, takes: impl Fn(&Fault) -> bool) -> Result<(), String> {
    if let RealRun::No { why } = &lesson.real {
        return Err(why.en.trim().to_owned());
    }
    let client_fault = |f: &Fault| {
        matches!(
            f,
            Fault::PauseClient { .. } | Fault::ResumeClient { .. } | Fault::CrashClient { .. }
        )
    };
    for (i, step) in lesson.steps.iter().enumerate() {
        match step.kind()? {
            StepKind::Fault(f) if !client_fault(f) && !takes(f) => {
                return Err(format!(
                    "step {} injects a fault the real {service} driver does not make yet: {f:?}",
                    i + 1
                ))
            }
            StepKind::Program { .. } => return Err(format!("step {} runs a Redis client program", i + 1)),
            StepKind::Metrics(_) => return Err(format!("step {} reads metrics off the simulator's trace", i + 1)),
            _ => {}
        }
    }
    Ok(())
}

/// Play every step of `lesson` on `env` with core's interpreter; the
/// steps' results.
pub(super) fn play(lesson: &Lesson, env: &mut impl Environment) -> Result<Vec<StepResult>, RealLessonError> {
    let mut progress = Progress::new(lesson);
    loop {
        match progress.step(env) {
            Ok(Some(_)) => {}
            Ok(None) => return Ok(progress.results().to_vec()),
            Err(e) => return Err(real_error(lesson, e)),
        }
    }
}

/// Core's error for a step a real run could not carry out: the step's own
/// failure as it is, anything else (a lesson the interpreter refuses) as
/// a lesson the driver cannot play.
pub(super) fn real_error(lesson: &Lesson, e: LessonError) -> RealLessonError {
    match e {
        LessonError::Step { id, step, msg } => RealLessonError::Step { id, step, msg },
        e => unsupported(lesson, e.to_string()),
    }
}
