//! A lesson on a real etcd cluster: core's step interpreter
//! ([`Progress`]) over [`EtcdEnv`], core's [`Environment`] for a managed
//! etcd cluster.
//!
//! What each step does, and how it differs from the simulator:
//!
//! * **A command** goes, as the client's etcd-client request, to the member
//!   the step names or else to the leader (the simulator's "current
//!   master" is the leader too). The runner waits for its answer; a `LOCK`
//!   that blocks is waited for as long as a lease the run knows could
//!   still run out and free the lock (plus etcd's expiry check and a
//!   commit), and answers nothing after that (the step shows no reply, as
//!   in the simulator when nothing is left to happen) — its task keeps
//!   running on the driver's runtime, and its late answer goes on the
//!   timeline.
//! * **Time is compressed** by the run's factor (10× by default: etcd's
//!   TTLs are whole seconds, so a 10 s lease is 1 s, the smallest etcd
//!   grants). Waits sleep the compressed time; TTLs and the numbers of
//!   leases and revisions go through [`Translate`].
//! * **pause_client** stops the client: the next step it takes (a
//!   command, a write) waits until the pause is over, and it sends nothing
//!   meanwhile — no keep-alive either, which is the lesson.
//! * **crash_node** SIGKILLs the member's `etcd`. When it led, the others
//!   elect a new leader (a few hundred ms of wall time, not counted as
//!   lesson time: the simulator's election is instantaneous) and the
//!   runner waits until the new leader has given every lease its full TTL.
//! * **Lock bars** come from the cluster's state as in the simulator's
//!   `world/service.rs`: after each step the oldest key under each watched
//!   lock is read on the leader and shown to core's lock observer, owned
//!   by the client whose `LOCK` put it, with its lease's deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use locklab_core::actor::{Actor, Names};
use locklab_core::fault::Fault;
use locklab_core::invariants::{InvariantConfig, Monitor, Violation};
use locklab_core::lesson::metrics::Metrics;
use locklab_core::lesson::run::{overlap_is_violation, refuse_crashed, Environment, Progress};
use locklab_core::lesson::{Lesson, LessonError, MetricsSpec, RealRun, StepKind};
use locklab_core::observe::{Cause as Why, LockObserver, Observed, Scope, Seen, Via};
use locklab_core::resource::Resource;
use locklab_core::trace::{Event, EventKind};
use locklab_core::Reply;

use super::etcd::{reply, EtcdDriver, Op, Raw};
use super::translate::Translate;
use crate::real::lesson::{add_note, RealLessonError, RealReport};

/// Wall time a blocked `LOCK` is given beyond the last lease deadline the
/// run knows: etcd checks for expired leases every 500 ms, then commits
/// the revoke.
const LOCK_GRACE: Duration = Duration::from_secs(3);
/// How long an election after a crash may take.
const ELECTION_WITHIN: Duration = Duration::from_secs(30);

/// A lesson being played on a managed etcd cluster.
pub struct EtcdEnv {
    driver: EtcdDriver,
    tr: Translate,
    lesson: Lesson,
    /// Lesson time 0, wall clock.
    origin: Instant,
    names: Names,
    leader: u32,
    /// Clients paused until then.
    paused: BTreeMap<String, Instant>,
    crashed: BTreeSet<String>,
    /// Real lease → its deadline, lesson ms (grant or keep-alive + TTL).
    deadlines: BTreeMap<i64, u64>,
    /// Real key → the client whose request put it.
    owners: BTreeMap<String, u32>,
    /// Requests still running (blocked `LOCK`s): their answers arrive later.
    pending: Vec<Pending>,
    observer: LockObserver,
    monitor: Monitor,
    resource: Resource,
    overlapped: bool,
    events: Vec<Event>,
    notes: BTreeMap<usize, String>,
    next_req: u64,
}

struct Pending {
    cid: u32,
    req: u64,
    member: u32,
    op: Op,
    shown: Vec<String>,
    handle: tokio::task::JoinHandle<Raw>,
}

impl EtcdEnv {
    /// A fresh cluster (etcd1 leading) for `lesson`, time compressed by
    /// `factor`.
    pub fn start(lesson: &Lesson, factor: u64) -> Result<EtcdEnv, RealLessonError> {
        let mut driver = EtcdDriver::start().map_err(|e| unsupported(lesson, e.to_string()))?;
        let start_rev = driver.revision().map_err(|e| unsupported(lesson, e))?;
        let names = Names {
            clients: lesson.actors.clone(),
            nodes: (0..driver.members() as u32).map(|i| driver.member_name(i)).collect(),
        };
        let mut observer = LockObserver::new(Scope::Declared, driver.members(), false);
        for k in &lesson.world.locks {
            observer.watch(k);
        }
        Ok(EtcdEnv {
            tr: Translate::new(factor, start_rev),
            lesson: lesson.clone(),
            origin: Instant::now(),
            names,
            leader: 0,
            paused: BTreeMap::new(),
            crashed: BTreeSet::new(),
            deadlines: BTreeMap::new(),
            owners: BTreeMap::new(),
            pending: Vec::new(),
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
            driver,
        })
    }

    pub fn version(&self) -> String {
        format!("etcd {}", self.driver.version())
    }

    pub fn factor(&self) -> u64 {
        self.tr.factor() as u64
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn driver(&self) -> &EtcdDriver {
        &self.driver
    }

    /// The member that leads now, as the live members say.
    pub fn leader(&mut self) -> Option<u32> {
        self.driver.leader()
    }

    /// Per step, what was sent or done differently from the simulator.
    pub fn notes(&self) -> &BTreeMap<usize, String> {
        &self.notes
    }

    fn now_ms(&self) -> u64 {
        (self.origin.elapsed().as_micros() as u64).saturating_mul(self.tr.factor() as u64) / 1000
    }

    fn wall(&self, ms: u64) -> Duration {
        Duration::from_micros(ms.saturating_mul(1000) / self.tr.factor() as u64)
    }

    fn cid(&self, client: &str) -> Result<u32, String> {
        self.names
            .clients
            .iter()
            .position(|c| c == client)
            .map(|i| i as u32)
            .ok_or_else(|| format!("unknown client {client:?}"))
    }

    fn record(&mut self, actor: Actor, kind: EventKind) {
        let at_ms = self.now_ms().max(self.events.last().map_or(0, |e| e.at_ms));
        self.events.push(Event {
            step: self.events.len() as u64,
            at_ms,
            actor,
            kind,
        });
    }

    fn add_note(&mut self, index: usize, note: String) {
        add_note(&mut self.notes, index, note);
    }

    /// A paused client acts once its pause is over (it sends nothing
    /// meanwhile); blocked requests answered in between are collected.
    fn wait_paused(&mut self, client: &str) {
        if let Some(until) = self.paused.remove(client) {
            self.sleep_until(until);
            if let Ok(cid) = self.cid(client) {
                self.record(Actor::Client(cid), EventKind::Resumed);
            }
        }
    }

    /// Sleep until `until`, collecting the answers of blocked requests.
    fn sleep_until(&mut self, until: Instant) {
        while Instant::now() < until {
            let step = until.min(Instant::now() + Duration::from_millis(50));
            self.collect(step);
        }
        self.collect(Instant::now());
    }

    /// Record the answers blocked requests got by `until` (sleeping until
    /// then if none comes).
    fn collect(&mut self, until: Instant) {
        if self.pending.is_empty() {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        for mut p in pending {
            match self.driver.wait(&mut p.handle, until) {
                Some(raw) => {
                    let r = reply(&p.op, raw, &mut self.tr);
                    self.answered(&p, r);
                }
                None => self.pending.push(p),
            }
        }
        self.observe(None);
    }

    /// Put a request's answer on the timeline.
    fn answered(&mut self, p: &Pending, r: Option<Reply>) {
        let Some(r) = r else { return };
        let executed = EventKind::Executed {
            req: p.req,
            client: p.cid,
            commands: vec![p.shown.clone()],
            replies: vec![r.clone()],
        };
        self.record(Actor::Node(p.member), executed);
        let received = EventKind::Received {
            req: p.req,
            node: p.member,
            replies: vec![r],
        };
        self.record(Actor::Client(p.cid), received);
    }
}

fn unsupported(lesson: &Lesson, why: String) -> RealLessonError {
    RealLessonError::Unsupported {
        id: lesson.id.clone(),
        why,
    }
}

impl EtcdEnv {
    /// Send `argv` as `client` to `member` and wait for the answer (a
    /// blocked `LOCK` as long as a lease could free it).
    fn send(&mut self, index: usize, client: &str, member: u32, argv: &[Vec<u8>]) -> Result<Option<Reply>, String> {
        let cid = self.cid(client)?;
        let shown: Vec<String> = argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        let req = self.next_req;
        self.next_req += 1;
        let op = match Op::parse(argv, &self.tr) {
            Ok(op) => op,
            // Refused before it was sent, as etcdctl refuses it.
            Err(r) => return Ok(Some(r)),
        };
        if let Some(sent) = op.compressed(argv) {
            self.add_note(index, format!("sent as {sent} at {}×", self.tr.factor()));
        }
        self.record(
            Actor::Client(cid),
            EventKind::Sent {
                req,
                node: member,
                commands: vec![shown.clone()],
            },
        );
        if let Op::Lock { name, lease } = &op {
            let key = locklab_core::service::etcd::lock_key(name, *lease);
            self.owners.entry(key).or_insert(cid);
        }
        let until = Instant::now() + self.patience(&op);
        let mut handle = self.driver.spawn(client, member, op.clone())?;
        let raw = self.driver.wait(&mut handle, until);
        let mut p = Pending {
            cid,
            req,
            member,
            op,
            shown,
            handle,
        };
        let Some(raw) = raw else {
            self.add_note(
                index,
                "still blocked when no lease the run knows could free the lock any more: no reply (its answer, if one comes, goes on the timeline)".into(),
            );
            self.pending.push(p);
            return Ok(None);
        };
        self.after(&mut p, &raw);
        let r = reply(&p.op, raw, &mut self.tr);
        self.answered(&p, r.clone());
        self.observe(Some(cid));
        Ok(r)
    }

    /// How long to wait for `op`: a `LOCK` until the last lease deadline the
    /// run knows has passed (plus [`LOCK_GRACE`]), anything else at once
    /// (the driver times it out).
    fn patience(&self, op: &Op) -> Duration {
        if !matches!(op, Op::Lock { .. }) {
            return Duration::from_secs(3600);
        }
        let now = self.now_ms();
        let last = self.deadlines.values().max().copied().unwrap_or(now);
        self.wall(last.saturating_sub(now)) + LOCK_GRACE
    }

    /// What an answer tells the run about leases: a grant or keep-alive
    /// sets the lease's deadline; a revoke ends it.
    fn after(&mut self, p: &mut Pending, raw: &Raw) {
        let now = self.now_ms();
        match (&p.op, raw) {
            (Op::Grant { lesson_ttl, .. }, Raw::Lease(id)) => {
                self.deadlines.insert(*id, now + *lesson_ttl as u64 * 1000);
            }
            (Op::KeepAlive { shown, real }, Raw::Ttl(t)) if *t > 0 => {
                let ttl = self.tr.keepalive_shown(*shown, *t);
                self.deadlines.insert(*real, now + ttl as u64 * 1000);
            }
            (Op::KeepAlive { real, .. }, Raw::Ttl(_)) | (Op::Revoke { real }, _) => {
                self.deadlines.remove(real);
            }
            (Op::Put { key, .. }, Raw::Ok) => {
                self.owners.entry(key.clone()).or_insert(p.cid);
            }
            _ => {}
        }
    }

    /// Show every watched lock's holder (the oldest key under it, read on
    /// the leader) to core's lock observer, as the simulator's world does:
    /// a change of holder is the old one's removal, then the new one's
    /// grant, owned by the client whose request put its key.
    fn observe(&mut self, by: Option<u32>) {
        let now = self.now_ms();
        for lock in self.observer.keys().to_vec() {
            let Ok(holder) = self.driver.holder(&lock) else {
                continue;
            };
            let seen = holder.map(|h| {
                let deadline = self.deadlines.get(&h.lease).copied();
                let owner = self.owners.get(&h.key).copied();
                let value = self.tr.key_shown(&h.key).into_bytes();
                (
                    Seen {
                        value,
                        deadline,
                        ttl_ms: deadline.map(|d| d.saturating_sub(now)),
                    },
                    owner,
                )
            });
            let m = self.leader;
            let old = self.observer.held(m, &lock).map(|h| h.value.clone());
            let new = seen.as_ref().map(|(s, _)| s.value.clone());
            if old.is_some() && old != new {
                let why = by.map_or(Why::Expiry, Why::Command);
                let observed = self.observer.observe(m, &lock, None, why, now);
                self.judge(observed);
            }
            if let Some((s, owner)) = seen {
                let why = owner.map_or(Why::Expiry, Why::Command);
                let observed = self.observer.observe(m, &lock, Some(s), why, now);
                self.judge(observed);
            }
        }
    }

    /// The observer's findings on the timeline; grants numbered by core's
    /// monitor.
    fn judge(&mut self, observed: Vec<Observed>) {
        for o in observed {
            match o {
                Observed::Lock {
                    node, key, change, via, ..
                } => {
                    if via == Via::Expiry {
                        self.record(Actor::Node(node), EventKind::Expired { key: key.clone() });
                    }
                    self.record(Actor::Node(node), EventKind::Lock { key, change, via });
                }
                Observed::Granted { client, key } => {
                    let seq = self.monitor.grant(client, &key);
                    self.record(Actor::Client(client), EventKind::Granted { key, seq });
                }
                Observed::WrongRelease { .. } => {}
            }
        }
    }

    fn violate(&mut self, v: Violation) {
        self.monitor.record(v.clone());
        self.record(Actor::World, EventKind::Violation { violation: v });
    }

    /// SIGKILL a member; when it led, wait for the new leader (not lesson
    /// time) and give the leases their full TTL again, as it does.
    fn crash(&mut self, node: u32) -> Result<Option<String>, String> {
        let was_leader = node == self.leader;
        let text = self.driver.crash(node)?;
        self.observer.set_down(node, true);
        let mut note = text;
        if was_leader {
            let started = Instant::now();
            let l = self.driver.await_new_leader(ELECTION_WITHIN)?;
            let spent = started.elapsed();
            self.origin += spent;
            self.leader = l;
            self.observer.set_master(l);
            let now = self.now_ms();
            for (real, d) in self.deadlines.iter_mut() {
                if let Some(ttl) = self.tr.shown_lease(*real).and_then(|s| self.tr.lesson_ttl(s)) {
                    *d = now + ttl as u64 * 1000;
                }
            }
            let name = self.driver.member_name(l);
            self.record(
                Actor::Node(l),
                EventKind::Note {
                    text: "elected leader".into(),
                },
            );
            note = format!(
                "{note}; {name} was elected after {} ms of wall time (not counted as lesson time: the simulator's election is instantaneous)",
                spent.as_millis()
            );
        }
        Ok(Some(note))
    }
}

impl EtcdEnv {
    /// A client starts or stops believing it holds `key` (core's monitor
    /// decides on overlaps, as in the simulator).
    fn belief(&mut self, cid: u32, key: &str, holds: bool) {
        let now = self.now_ms();
        let names = self.names.clone();
        let Some(change) = self
            .monitor
            .change_belief(key, cid, holds, now, &|i| names.client(i).to_owned())
        else {
            return;
        };
        let belief = EventKind::Belief {
            key: key.to_owned(),
            holds,
        };
        self.record(Actor::Client(cid), belief);
        let Some(ch) = change.overlap else { return };
        self.overlapped |= ch.begin;
        let overlap = EventKind::Overlap {
            key: key.to_owned(),
            clients: ch.clients,
            begin: ch.begin,
            since_ms: ch.since_ms,
        };
        self.record(Actor::World, overlap);
        if let Some(v) = change.violation {
            self.violate(v);
        }
    }

    /// A write to the protected resource (simulated on a real run too: it
    /// is the business system, not etcd).
    fn write_resource(&mut self, cid: u32, token: Option<i64>, value: &str) -> bool {
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
    pub fn outcome(&self) -> Option<bool> {
        self.lesson
            .outcome
            .judged_real(self.overlapped, self.monitor.violations())
    }
}

impl Environment for EtcdEnv {
    fn command(
        &mut self,
        index: usize,
        client: &str,
        node: Option<u32>,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String> {
        refuse_crashed(&self.crashed, client)?;
        self.wait_paused(client);
        let member = node.unwrap_or(self.leader);
        self.send(index, client, member, argv)
    }

    fn wait(&mut self, _index: usize, ms: u64) -> Result<(), String> {
        let until = Instant::now() + self.wall(ms);
        self.sleep_until(until);
        self.observe(None);
        Ok(())
    }

    fn fault(&mut self, _index: usize, fault: &Fault) -> Result<(), String> {
        self.record(Actor::World, EventKind::Fault { fault: fault.clone() });
        let note = match fault {
            Fault::PauseClient { client, ms } => {
                let wall = ms.map_or(Duration::from_secs(365 * 24 * 3600), |ms| self.wall(ms));
                self.paused.insert(client.clone(), Instant::now() + wall);
                None
            }
            Fault::ResumeClient { client } => {
                self.paused.remove(client);
                None
            }
            Fault::CrashClient { client } => {
                self.crashed.insert(client.clone());
                None
            }
            Fault::CrashNode { node } => self.crash(*node)?,
            other => return Err(format!("a real etcd run cannot inject {other:?}")),
        };
        if let Some(n) = note {
            self.add_note(_index, n);
        }
        self.observe(None);
        Ok(())
    }

    fn launch(
        &mut self,
        _index: usize,
        _client: &str,
        _program: &locklab_core::client::Program,
        _background: bool,
    ) -> Result<(), String> {
        Err("client programs speak Redis; an etcd lesson types its commands".into())
    }

    fn write(&mut self, _index: usize, client: &str, token: Option<i64>, value: &str) -> Result<String, String> {
        self.wait_paused(client);
        let cid = self.cid(client)?;
        let accepted = self.write_resource(cid, token, value);
        Ok(if accepted { "accepted" } else { "rejected" }.to_owned())
    }

    fn hold(&mut self, _index: usize, client: &str, key: &str, holds: bool) -> Result<(), String> {
        let cid = self.cid(client)?;
        self.belief(cid, key, holds);
        Ok(())
    }

    fn metrics(&mut self, _index: usize, _spec: &MetricsSpec, _clients: &[String]) -> Result<Metrics, String> {
        Err("metrics are refused by check_supported".into())
    }

    fn begin_step(&mut self, _index: usize) -> Result<(), String> {
        self.collect(Instant::now());
        Ok(())
    }

    fn now(&self) -> u64 {
        self.now_ms().max(self.events.last().map_or(0, |e| e.at_ms))
    }

    fn trace_len(&self) -> usize {
        self.events.len()
    }

    fn names(&self) -> &Names {
        &self.names
    }
}

/// Can a real etcd run play this lesson? The faults a real cluster takes
/// here: a client paused or resumed or crashed, a member crashed.
pub fn check_etcd(lesson: &Lesson) -> Result<(), String> {
    if let RealRun::No { why } = &lesson.real {
        return Err(why.en.trim().to_owned());
    }
    for (i, step) in lesson.steps.iter().enumerate() {
        match step.kind()? {
            StepKind::Fault(
                Fault::PauseClient { .. }
                | Fault::ResumeClient { .. }
                | Fault::CrashClient { .. }
                | Fault::CrashNode { .. },
            ) => {}
            StepKind::Fault(f) => {
                return Err(format!(
                    "step {} injects a fault the real etcd driver does not make yet: {f:?}",
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

/// Start a fresh three-member etcd cluster, play `lesson` on it, stop it.
pub fn run_etcd(lesson: &Lesson, factor: u64) -> Result<RealReport, RealLessonError> {
    check_etcd(lesson).map_err(|why| unsupported(lesson, why))?;
    let mut env = EtcdEnv::start(lesson, factor)?;
    let mut progress = Progress::new(lesson);
    loop {
        match progress.step(&mut env) {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(LessonError::Step { id, step, msg }) => return Err(RealLessonError::Step { id, step, msg }),
            Err(e) => return Err(unsupported(lesson, e.to_string())),
        }
    }
    Ok(RealReport {
        server_version: env.version(),
        factor: env.factor(),
        results: progress.results().to_vec(),
        notes: env.notes.clone(),
        outcome: env.outcome(),
    })
}
