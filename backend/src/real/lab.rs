//! The real driver's lab: one WebSocket's state machine, without the socket.
//!
//! The browser's `RealDriver` is a WebSocket client; [`crate::web`] pumps
//! each socket's messages through one [`RealLab`] ([`RealLab::handle`]:
//! core's [`ClientMsg`] in, [`ServerMsg`]s out), so the lab is tested here
//! without a socket. Each lab is one [`Session`] (its own key prefix and ACL
//! user) on one [`Topology`]: the user's server when `locklab serve --redis
//! URL` was given, otherwise a managed `single` started on the first
//! command. A `topology` message replaces it with a fresh managed topology
//! (and a fresh session), and everything the lab started is killed when it
//! is closed ([`RealLab::close`], when its socket closes) — so a forgotten
//! browser tab cannot leave redis-server processes behind.
//!
//! # Messages
//!
//! In (JSON text frames):
//!
//! * `{"type":"command","client":"A","line":"SET k v NX PX 100","node":0}`
//!   (`node` defaults to 0)
//! * `{"type":"topology","kind":"single|replicated|redlock5|cluster3"}`
//! * `{"type":"fault","fault":"pause|resume|crash|restart|cut_replication|heal_replication|promote","node":1}`
//!
//! Out: `{"type":"hello",…}` (session id, prefix, topology, nodes, names)
//! when a session starts; `{"type":"event","event":{…}}` — core's
//! [`Event`], exactly as the simulator's traces serialise it; then
//! `{"type":"reply","client":"A","text":"OK"}` with redis-cli's rendering;
//! `{"type":"names",…}` when a new client appears; `{"type":"topology",…}`
//! after a start or a fault; `{"type":"error","message":…}` for anything
//! the lab refused that is not a command reply.
//!
//! # Lessons on the real driver
//!
//! A lesson plays step by step on real servers ([`RealLessonRun`]), so the
//! browser's step list, timeline and console work on a real run as on the
//! simulator's.
//!
//! In:
//!
//! * `{"type":"lesson","id":"05","factor":100,"lang":"en"}` — `factor`
//!   (time compression, 1–10000; by default 100, or 10 for the Redlock
//!   lessons, as `locklab lesson run --real` chooses) and `lang` (`en` or `zh`:
//!   the language of a refusal's reason, default `en`) are optional. Starts
//!   the lesson from scratch on a **fresh session** (fresh key prefix and
//!   ACL user: nothing typed before leaks in). Managed backend: the
//!   lesson's topology (`single|replicated|redlock5|cluster3`, as the
//!   lesson file says) is started, unless the current managed topology is
//!   already that kind — then it is [`Topology::reset`]: nodes an earlier
//!   run crashed are restarted, a promoted replica follows its master
//!   again, every dataset is flushed, so a re-run behaves like the first
//!   run. With `--redis URL` only single-topology lessons run. A lesson on
//!   a lock service (43 on etcd, 44 on ZooKeeper) stops the Redis side and
//!   starts three members of that service instead ([`ServiceRun`]); its
//!   `lesson` message says `"topology":"etcd3"` (or `zk3`) with the
//!   members as node names and no nodes for the toolbox, and console lines
//!   are refused until the next lesson on Redis (there is no Redis session).
//!   Lesson 45 starts all four services it compares (`"topology":"compare"`,
//!   the simulator's ten nodes as names). Not with `--redis URL`, where the
//!   lab starts no process.
//! * `{"type":"lesson_step"}` — run the next step.
//!
//! Out:
//!
//! * on `lesson`: `{"type":"hello",…}` for the new session, then
//!   `{"type":"lesson","id":"05","steps":14,"server_version":"7.0.15",
//!   "factor":100,"topology":"single","nodes":[NodeInfo…],"names":{Names},
//!   "notice":null}` — `notice` is a run-wide remark such as "DELEX needs
//!   Redis 8.4; this server is 7.0.15, so the lab sends the Lua
//!   compare-and-delete instead". Or `{"type":"error","message":"lesson 20
//!   cannot run on a real server: <the lesson's own reason>"}`.
//! * on `lesson_step`: zero or more `{"type":"event","event":{Event}}` — the
//!   events the simulator's trace has for such a step (`sent`, `executed`,
//!   `received`, `lock` acquired/renewed/removed, `granted`, `belief`,
//!   `overlap`, `fault`, `write`, `note`…) with `at_ms` in **lesson time**
//!   (wall ms since the run started × factor); then
//!   `{"type":"step","result":{StepResult},"note":null|"sent as SET … PX 150 at 100×"}`;
//!   after the last step also `{"type":"lesson_done","passed":true|false}`.
//!   A `lesson_step` with no lesson, or after the last step, gets
//!   `{"type":"error",…}`.
//!
//! A lesson's background program (a Redlock holder working, extending,
//! releasing) keeps running between two `lesson_step` messages, as a real
//! process would: its events arrive as `event` messages of their own,
//! whenever its timers fire. Lesson time is wall time × factor, so time a
//! person spends between two steps is lesson time too (a 30 s TTL is
//! 300 ms at 100×); the Redlock lessons (17, 19, 21) need `"factor":10`
//! to keep their programs' timing within what the lesson checks.
//!
//! `command` and `fault` messages during a run go to the run's session and
//! topology (the console can go off script), and their events are stamped
//! in lesson time too. A `topology` message ends the run.
//!
//! # Two lanes
//!
//! A console `command` in free play (no lesson running) runs on the async
//! workers, on the session's async lane ([`Session::run_async`]): its I/O
//! is tokio's, and the lock watch's peek rides in the command's own round
//! trip. That is the message a person (or a load test) sends most, and the
//! one whose latency the console shows. What is still blocking — opening a
//! session (the ACL user, maybe starting redis-server), topologies and
//! faults (processes), a lesson's run (its runner drives the blocking lane)
//! and a session on its own cluster (routing by slot) — is handed to
//! tokio's blocking pool (`spawn_blocking`), never run on the workers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use locklab_core::cli::{self, CliError};
use locklab_core::console;
use locklab_core::lesson::run::StepResult;
use locklab_core::lesson::worded::PageLesson;
use locklab_core::lesson::{Lang, Lesson, LessonError, LockService};
use locklab_core::protocol::{ClientMsg, FaultKind, ServerMsg};
use locklab_core::reply::Reply;
use locklab_core::server::table::{self, flags};
use locklab_core::server::Profile;
use locklab_core::trace::Event;
use thiserror::Error;

use crate::real::lesson::{self as real_lesson, RealEnv, RealLessonError, RealLessonRun};
use crate::real::observe::{acquired_key, Cause, LockWatch};
use crate::real::play::{self, Play};
use crate::real::service::{self, ServiceRun};
use crate::real::session::{Limits, Session, SessionError, SessionPool};
use crate::real::topology::{Fault, NodeInfo, NodeState, Topology, TopologyError, TopologyKind};

/// Most processes the backend runs at once for managed topologies and lock
/// services, across all WebSockets: four five-process topologies' worth. A
/// lesson on all four lock services counts ten (three of them Java), a
/// managed `single` one.
const MAX_MANAGED_PROCESSES: usize = 20;

/// Why the lab refused a message, as its `error` message (or, for the
/// command that would have opened the session, its reply) words it.
#[derive(Debug, Error)]
pub enum LabError {
    #[error(
        "too many managed servers running ({running} processes of at most {MAX_MANAGED_PROCESSES}; this needs \
         {needs}); close another lab tab"
    )]
    TooManyProcesses { running: usize, needs: usize },
    /// A lesson that is not in the catalogue, or one sent whole that is
    /// not a valid lesson.
    #[error(transparent)]
    Lesson(#[from] LessonError),
    #[error("the lesson sent is {sent:?}, not {id:?}")]
    NotTheLessonSent { sent: String, id: String },
    #[error("factor {0} is out of range: 1 to 10000 (100 compresses 30 s into 300 ms)")]
    Factor(u64),
    /// The lesson cannot play here, or its run could not start.
    #[error(transparent)]
    Run(#[from] RealLessonError),
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("no topology")]
    NoTopology,
    #[error("no session")]
    NoSession,
}

/// What every socket's lab shares: the user's server (if any), the session
/// pool, and the count of managed processes running for all of them.
#[derive(Clone, Debug)]
pub struct Labs {
    redis: Option<String>,
    pool: SessionPool,
    managed: Arc<AtomicUsize>,
}

impl Labs {
    /// `redis`: the user's server (`--redis URL`), or `None` for managed
    /// servers only; `limits`: each session's.
    pub fn new(redis: Option<String>, limits: Limits) -> Self {
        Labs {
            redis,
            pool: SessionPool::new(limits),
            managed: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The user's server (`--redis URL`), if the labs play on one.
    pub fn redis(&self) -> Option<&str> {
        self.redis.as_deref()
    }

    /// Each session's limits.
    pub fn limits(&self) -> &Limits {
        self.pool.limits()
    }

    /// Lab sessions open right now, over all labs.
    pub fn live_sessions(&self) -> usize {
        self.pool.live()
    }

    /// Processes of managed topologies and lock services running now, over
    /// all labs.
    pub fn live_processes(&self) -> usize {
        self.managed.load(Ordering::SeqCst)
    }

    /// Ended sessions whose cleanup waits for a busy or unreachable server.
    pub fn pending_cleanups(&self) -> usize {
        self.pool.pending_cleanups()
    }
}

/// One socket's lab: [`RealLab::handle`] answers each message on the lane
/// it belongs to (see the module doc). The lab's blocking work runs on
/// tokio's blocking pool, so `handle` must be awaited inside a tokio
/// runtime; a lab whose work panicked is over ([`RealLab::is_over`]) and
/// its socket ends.
pub struct RealLab {
    lab: Option<LabState>,
}

impl RealLab {
    pub fn new(labs: Labs) -> Self {
        RealLab {
            lab: Some(LabState::new(labs)),
        }
    }

    /// One message's answer, in order: the `hello` of a session it opened,
    /// its events, its reply, step or error. Empty once the lab is over.
    pub async fn handle(&mut self, msg: ClientMsg) -> Vec<ServerMsg> {
        dispatch(&mut self.lab, msg).await.unwrap_or_default()
    }

    /// When the lab must be woken without a message ([`RealLab::wake`]): a
    /// running lesson's background program's next timer, or (in free play)
    /// when a watched lock is due to expire.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.lab.as_ref().and_then(LabState::program_deadline)
    }

    /// The events due at [`RealLab::deadline`]: the lesson's background
    /// programs served, or free play's watched locks looked at.
    pub async fn wake(&mut self) -> Vec<ServerMsg> {
        if self.lab.as_ref().is_some_and(LabState::fast_lane) {
            return match self.lab.as_mut() {
                Some(l) => l.watch_free_async().await,
                None => Vec::new(),
            };
        }
        blocking(&mut self.lab, LabState::serve_programs)
            .await
            .unwrap_or_default()
    }

    /// Its work panicked (it was dropped with it): the socket ends.
    pub fn is_over(&self) -> bool {
        self.lab.is_none()
    }

    /// End the lab: its session's keys and ACL user are deleted and its
    /// managed processes killed — blocking work, so on the blocking pool.
    pub async fn close(self) {
        if let Some(l) = self.lab {
            let _ = tokio::task::spawn_blocking(move || drop(l)).await;
        }
    }
}

/// A share of a count shared by every WebSocket, given back on drop: a
/// managed topology's or lock service's processes (of
/// [`MAX_MANAGED_PROCESSES`]), or one open WebSocket (of the web
/// server's `--max-sockets`).
#[derive(Debug)]
pub(crate) struct Slot(Arc<AtomicUsize>, usize);

impl Slot {
    /// `processes` more of the shared count, or why not.
    fn take(count: &Arc<AtomicUsize>, processes: usize) -> Result<Slot, LabError> {
        Slot::claim(count, processes, MAX_MANAGED_PROCESSES).map_err(|running| LabError::TooManyProcesses {
            running,
            needs: processes,
        })
    }

    /// `n` more of `count` if that keeps it within `max`; else how many
    /// are taken.
    pub(crate) fn claim(count: &Arc<AtomicUsize>, n: usize, max: usize) -> Result<Slot, usize> {
        count.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |taken| {
            (taken + n <= max).then_some(taken + n)
        })?;
        Ok(Slot(count.clone(), n))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::SeqCst);
    }
}

/// What a [`RealLab`] holds. Field order matters for drop: the session (ACL
/// user cleanup needs the servers) goes before the topology.
struct LabState {
    /// The lesson being played on `session`, if any.
    run: Option<RealLessonRun>,
    /// A lesson on etcd or ZooKeeper, with the service it started and the
    /// managed slot that counts it (no Redis session meanwhile).
    service: Option<(ServiceRun, Slot)>,
    session: Option<Session>,
    /// Free play's locks: the keys a client took with `SET … NX` or
    /// `SETNX` on `session`, watched as the simulator's console watches
    /// them, so they get lock bars too. Made with each session.
    free: LockWatch,
    topology: Option<Topology>,
    _slot: Option<Slot>,
    labs: Labs,
}

impl LabState {
    fn new(labs: Labs) -> Self {
        LabState {
            run: None,
            service: None,
            session: None,
            free: LockWatch::free(0),
            topology: None,
            _slot: None,
            labs,
        }
    }

    // long: one arm per ClientMsg
    fn handle(&mut self, msg: ClientMsg) -> Vec<ServerMsg> {
        let mut out = Vec::new();
        match msg {
            ClientMsg::Command { client, line, node } => {
                if let Err(e) = self.ensure_session(&mut out) {
                    out.push(ServerMsg::Reply {
                        client,
                        text: Reply::Error(e.to_string()).to_cli(),
                    });
                    return out;
                }
                let (Some(s), Some(topology)) = (self.session.as_mut(), self.topology.as_mut()) else {
                    return out;
                };
                let clients_before = s.names().clients.len();
                let (run, free) = (&mut self.run, &mut self.free);
                // After each command, the lock keys it may have changed: the
                // lesson's during a run, free play's otherwise.
                let text = console_line(
                    s,
                    &client,
                    node,
                    &line,
                    self.labs.pool.limits().max_line,
                    |s, cid, node, argv, reply| match run.as_mut() {
                        Some(run) => run.observe_console(
                            &mut RealEnv {
                                session: s,
                                topology: &mut *topology,
                            },
                            cid,
                            node,
                        ),
                        None => {
                            let took = acquired_key(argv, reply);
                            if let Some((key, _)) = &took {
                                let max = s.limits().max_watched_locks;
                                for dropped in free.add_bounded(key, max) {
                                    s.console_note(cid, unwatched(max, &dropped));
                                }
                            }
                            if took.is_some() || (!free.keys().is_empty() && may_change_locks(argv)) {
                                free.observe(s, &topology.nodes(), Some(node), Cause::Cmd { client: cid, node });
                            }
                        }
                    },
                );
                if s.names().clients.len() != clients_before {
                    out.push(ServerMsg::Names {
                        names: s.names().clone(),
                    });
                }
                let mut events = s.take_events();
                if let Some(run) = self.run.as_mut() {
                    // The run's observer drained the command's events into
                    // its own, restamped; what is left came after.
                    let late = run.restamp(events);
                    events = run.take_events();
                    events.extend(late);
                }
                out.extend(events.into_iter().map(|event| ServerMsg::Event { event }));
                out.push(ServerMsg::Reply { client, text });
            }
            ClientMsg::Topology { kind } => {
                if self.labs.redis.is_some() {
                    out.push(ServerMsg::Error {
                        message:
                            "topology changes are refused: this lab plays on your own server (--redis) and starts \
                                  no redis-server of its own; start `locklab serve` without --redis for managed \
                                  topologies"
                                .into(),
                    });
                    return out;
                }
                if let Err(e) = self.start_managed(kind) {
                    out.push(ServerMsg::Error { message: e.to_string() });
                    return out;
                }
                if let Err(e) = self.ensure_session(&mut out) {
                    out.push(ServerMsg::Error { message: e.to_string() });
                }
            }
            ClientMsg::Fault { fault, node } => {
                let fault = real_fault(fault, node);
                let Some(topo) = self.topology.as_mut() else {
                    out.push(ServerMsg::Error {
                        message: "no topology yet: send a command or a topology message first".into(),
                    });
                    return out;
                };
                match topo.fault(fault) {
                    Ok(text) => {
                        if let Some(s) = self.session.as_mut() {
                            s.note_world(text);
                            let mut events = s.take_events();
                            if let Some(run) = self.run.as_mut() {
                                events = run.restamp(events);
                            }
                            out.extend(events.into_iter().map(|event| ServerMsg::Event { event }));
                        }
                        out.push(ServerMsg::Topology {
                            kind: topo.served(),
                            nodes: topo.nodes(),
                        });
                    }
                    Err(e) => out.push(ServerMsg::Error { message: e.to_string() }),
                }
            }
            ClientMsg::Lesson {
                id,
                factor,
                lang,
                lesson,
            } => {
                if let Err(e) = self.start_lesson(&id, lesson, factor, lang, &mut out) {
                    out.push(ServerMsg::Error { message: e.to_string() });
                }
            }
            ClientMsg::LessonStep => self.lesson_step(&mut out),
        }
        out
    }

    /// Does a `command` message take the async lane? In free play (a
    /// lesson's runner observes on the blocking lane), on an open session
    /// that is not on its own cluster.
    fn fast_lane(&self) -> bool {
        self.run.is_none() && self.topology.is_some() && self.session.as_ref().is_some_and(Session::async_ready)
    }

    /// Open the session a first `command` needs, on the default topology
    /// if there is none yet: the `hello`, or the reply saying why not.
    fn open_for_command(&mut self, client: &str) -> Vec<ServerMsg> {
        let mut out = Vec::new();
        if let Err(e) = self.ensure_session(&mut out) {
            out.push(ServerMsg::Reply {
                client: client.to_owned(),
                text: Reply::Error(e.to_string()).to_cli(),
            });
        }
        out
    }

    /// A free-play `command` on the async lane: its events, `names` if a
    /// client appeared, and its reply, as [`LabState::handle`] answers it.
    async fn command_async(&mut self, client: String, line: String, node: u32) -> Vec<ServerMsg> {
        let mut out = Vec::new();
        let (Some(s), Some(topology)) = (self.session.as_mut(), self.topology.as_ref()) else {
            return out;
        };
        let clients_before = s.names().clients.len();
        let watch = FreeWatch {
            free: &mut self.free,
            nodes: topology.nodes(),
        };
        let max_line = self.labs.pool.limits().max_line;
        let text = console_line_async(s, watch, &client, node, &line, max_line).await;
        if s.names().clients.len() != clients_before {
            out.push(ServerMsg::Names {
                names: s.names().clone(),
            });
        }
        out.extend(s.take_events().into_iter().map(|event| ServerMsg::Event { event }));
        out.push(ServerMsg::Reply { client, text });
        out
    }

    /// `lesson`: a fresh session on the lesson's topology, and a run at
    /// step 0. `sent`: the lesson itself, when it is not the catalogue's
    /// (a counterexample from the page's explorer).
    fn start_lesson(
        &mut self,
        id: &str,
        sent: Option<Box<PageLesson>>,
        factor: Option<u64>,
        lang: Option<Lang>,
        out: &mut Vec<ServerMsg>,
    ) -> Result<(), LabError> {
        self.run = None;
        self.service = None;
        let lang = lang.unwrap_or_default();
        let lesson = match sent {
            Some(l) if l.id == id.trim() => {
                let l = l.decoded()?;
                l.validate_sent()?;
                l
            }
            Some(l) => {
                return Err(LabError::NotTheLessonSent {
                    sent: l.id.clone(),
                    id: id.to_owned(),
                })
            }
            None => find_lesson(id)?,
        };
        let factor = factor.unwrap_or_else(|| real_lesson::default_factor(&lesson));
        if !(1..=10_000).contains(&factor) {
            return Err(LabError::Factor(factor));
        }
        let unsupported = |why: String| {
            LabError::Run(RealLessonError::Unsupported {
                id: lesson.id.clone(),
                why,
            })
        };
        play::check_supported_lang(&lesson, lang).map_err(unsupported)?;
        if let Play::Service(service) = Play::of(&lesson) {
            if let Some(url) = self.labs.redis.clone() {
                play::check_target(&lesson, &Topology::external(url), lang).map_err(unsupported)?;
            }
            return self.start_service(&lesson, service, factor, out);
        }
        // Nothing from before may leak in: a new session, and (managed) the
        // lesson's topology as new.
        self.session = None;
        self.lesson_topology(&lesson, lang, &unsupported)?;
        self.ensure_session(out)?;
        let (Some(session), Some(topology)) = (self.session.as_mut(), self.topology.as_mut()) else {
            return Err(LabError::NoSession);
        };
        let mut env = RealEnv { session, topology };
        let run = RealLessonRun::start(&lesson, &mut env, factor, lang)?;
        out.push(ServerMsg::Lesson {
            id: lesson.id.clone(),
            steps: run.steps(),
            server_version: run.server_version().to_owned(),
            factor: run.factor(),
            // The lesson's kind (the hello says whether it is the user's
            // server): what the browser lays its lanes out by.
            topology: real_lesson::topology_kind(&lesson).into(),
            nodes: topology.nodes(),
            names: session.names().clone(),
            notice: run.notice().map(str::to_owned),
        });
        self.run = Some(run);
        Ok(())
    }

    /// Where a lesson plays: the user's server (when the lesson can run
    /// there), or the lesson's managed topology, started, or reset when it
    /// is already the one running.
    fn lesson_topology(
        &mut self,
        lesson: &Lesson,
        lang: Lang,
        unsupported: &dyn Fn(String) -> LabError,
    ) -> Result<(), LabError> {
        match self.labs.redis.clone() {
            Some(url) => {
                let external = Topology::external(url);
                play::check_target(lesson, &external, lang).map_err(unsupported)?;
                if !matches!(self.topology, Some(Topology::External(_))) {
                    self.topology = None;
                    self._slot = None;
                    self.topology = Some(external);
                }
            }
            None => {
                let kind = real_lesson::topology_kind(lesson);
                let reused = match self.topology.as_mut() {
                    Some(t) if t.kind() == Some(kind) => t.reset().is_ok(),
                    // The user chose Sentinel for a master and a replica:
                    // the lesson's failover is then Sentinel's own.
                    Some(t) if kind == TopologyKind::Replicated && t.kind() == Some(TopologyKind::Sentinel) => {
                        t.reset().is_ok()
                    }
                    _ => false,
                };
                if !reused {
                    self.start_managed(kind)?;
                }
            }
        }
        Ok(())
    }

    /// `lesson_step`: the next step's events, its result, and at the end
    /// whether the lesson passed.
    fn lesson_step(&mut self, out: &mut Vec<ServerMsg>) {
        if let Some((run, _)) = self.service.as_mut() {
            let head = (run.lesson().id.clone(), run.steps(), run.is_finished());
            let go_on = answer_step(head, out, || {
                let stepped = run.step();
                (stepped, run.take_events(), run.is_finished().then(|| run.passed()))
            });
            if !go_on {
                self.service = None;
            }
            return;
        }
        let (Some(run), Some(session), Some(topology)) =
            (self.run.as_mut(), self.session.as_mut(), self.topology.as_mut())
        else {
            out.push(ServerMsg::Error {
                message: "no lesson is running: send {\"type\":\"lesson\",\"id\":\"05\"} first".into(),
            });
            return;
        };
        let head = (run.lesson().id.clone(), run.steps(), run.is_finished());
        let go_on = answer_step(head, out, || {
            let stepped = run.step(&mut RealEnv { session, topology });
            (stepped, run.take_events(), run.is_finished().then(|| run.passed()))
        });
        if !go_on {
            self.run = None;
        }
    }

    /// When a running lesson's background program next needs serving, or
    /// (in free play) a watched lock is due to expire.
    fn program_deadline(&self) -> Option<std::time::Instant> {
        match (&self.run, &self.session) {
            (Some(run), _) => run.next_deadline(),
            (None, Some(s)) => self.free.next_deadline().map(|d| {
                // A millisecond late, so the key is surely gone when we look.
                let wait = d.saturating_sub(s.elapsed_ms()) + 1;
                std::time::Instant::now() + std::time::Duration::from_millis(wait)
            }),
            (None, None) => None,
        }
    }

    /// Serve the lesson's background programs (their timers that are due),
    /// or look at free play's locks that are due to expire: the events
    /// that produced.
    fn serve_programs(&mut self) -> Vec<ServerMsg> {
        let (Some(run), Some(session), Some(topology)) =
            (self.run.as_mut(), self.session.as_mut(), self.topology.as_mut())
        else {
            if let (None, Some(s), Some(t)) = (&self.run, self.session.as_mut(), self.topology.as_ref()) {
                self.free.observe(s, &t.nodes(), None, Cause::None);
                return s
                    .take_events()
                    .into_iter()
                    .map(|event| ServerMsg::Event { event })
                    .collect();
            }
            return Vec::new();
        };
        let mut env = RealEnv { session, topology };
        let served = run.serve(&mut env);
        let mut out: Vec<ServerMsg> = run
            .take_events()
            .into_iter()
            .map(|event| ServerMsg::Event { event })
            .collect();
        if let Err(e) = served {
            self.run = None;
            out.push(ServerMsg::Error {
                message: format!("{e}; the run is over (send a lesson message to start again)"),
            });
        }
        out
    }

    /// [`LabState::serve_programs`] in free play on the async lane: look at the
    /// watched locks (one is due to expire) on every node that is up.
    async fn watch_free_async(&mut self) -> Vec<ServerMsg> {
        let (Some(s), Some(t)) = (self.session.as_mut(), self.topology.as_ref()) else {
            return Vec::new();
        };
        let nodes = t.nodes();
        let keys = self.free.keys().to_vec();
        let mut seen = Vec::with_capacity(nodes.len());
        for (n, info) in nodes.iter().enumerate() {
            seen.push(match info.state {
                NodeState::Up => s.peek_async_on(n as u32, &keys).await,
                _ => None,
            });
        }
        self.free.observe_with(s, &nodes, None, Cause::None, |_, n, _| {
            seen.get(n as usize).cloned().flatten()
        });
        s.take_events()
            .into_iter()
            .map(|event| ServerMsg::Event { event })
            .collect()
    }

    fn start_managed(&mut self, kind: TopologyKind) -> Result<(), LabError> {
        // Tear down the old one first: its processes and its slot.
        self.tear_down();
        let slot = Slot::take(&self.labs.managed, Topology::processes(kind))?;
        let topo = Topology::start(kind)?;
        self.topology = Some(topo);
        self._slot = Some(slot);
        Ok(())
    }

    /// Everything that runs goes: the lesson, the session (its keys and
    /// ACL user first), the managed processes and their slot.
    fn tear_down(&mut self) {
        self.run = None;
        self.service = None;
        self.session = None;
        self.topology = None;
        self._slot = None;
    }

    /// `lesson` on a lock service: the Redis side goes (its session, its
    /// processes, its slot), the service starts, and the run stands at
    /// step 0. The page is told the service's members as the lanes, and no
    /// nodes for its toolbox (the lesson's steps make the faults).
    fn start_service(
        &mut self,
        lesson: &Lesson,
        service: LockService,
        factor: u64,
        out: &mut Vec<ServerMsg>,
    ) -> Result<(), LabError> {
        self.tear_down();
        let slot = Slot::take(&self.labs.managed, service::processes(service))?;
        let run = ServiceRun::start(lesson, factor)?;
        out.push(ServerMsg::Lesson {
            id: lesson.id.clone(),
            steps: run.steps(),
            server_version: run.version().to_owned(),
            factor: run.factor(),
            topology: run.served(),
            nodes: Vec::new(),
            names: run.names(),
            notice: None,
        });
        self.service = Some((run, slot));
        Ok(())
    }

    /// The reply to a console line while a lesson plays on a lock service:
    /// the console types to Redis, and there is none in this run.
    fn service_refusal(&self, client: &str) -> Option<ServerMsg> {
        let (run, _) = self.service.as_ref()?;
        Some(ServerMsg::Reply {
            client: client.to_owned(),
            text: Reply::Error(format!(
                "ERR locklab: lesson {} plays on {}, which the console does not type to; its steps send its \
                 commands (start a lesson on Redis, or pick a topology, to type again)",
                run.lesson().id,
                run.version()
            ))
            .to_cli(),
        })
    }

    /// A session on the current topology, starting the default one first.
    fn ensure_session(&mut self, out: &mut Vec<ServerMsg>) -> Result<(), LabError> {
        if self.session.is_some() {
            return Ok(());
        }
        if self.topology.is_none() {
            match self.labs.redis.clone() {
                Some(url) => self.topology = Some(Topology::external(url)),
                None => self.start_managed(TopologyKind::Single)?,
            }
        }
        let Some(topo) = self.topology.as_ref() else {
            return Err(LabError::NoTopology);
        };
        let s = self.labs.pool.open_on(topo)?;
        self.free = LockWatch::free(topo.nodes().len());
        out.push(ServerMsg::Hello {
            session: s.id().into(),
            prefix: s.prefix().into(),
            topology: topo.served(),
            nodes: topo.nodes(),
            names: s.names().clone(),
        });
        self.session = Some(s);
        Ok(())
    }
}

/// One console line, down core's one console path ([`console::run`]: the
/// split, the repeat prefix at most [`console::Limits::BROWSER`] times,
/// redis-cli's rendering). A line the session refuses before splitting it
/// (too long for the session, unbalanced quotes, empty) gets the session's
/// own error, which also notes it on the client's lane. `after` runs after
/// each command that got a reply, with the client's index and the node the
/// command went to (a cluster routes it by slot).
fn console_line(
    s: &mut Session,
    client: &str,
    node: u32,
    line: &str,
    max_line: usize,
    mut after: impl FnMut(&mut Session, u32, u32, &[Vec<u8>], &Reply),
) -> String {
    let limits = console::Limits {
        max_line,
        ..console::Limits::BROWSER
    };
    let typed = match console::read(line.as_bytes(), limits) {
        typed @ console::Typed::Run { .. } => typed,
        // redis-cli's own refusal of a repeat count: nothing was sent.
        console::Typed::Refused(why @ console::Refusal::Cli(CliError::InvalidRepeat)) => return why.to_string(),
        // Too long, unbalanced, empty: the session's own error (and note).
        _ => {
            return match s.run_line(client, node, line) {
                Err(e) => e.to_reply().to_cli(),
                Ok(reply) => reply.to_cli(),
            }
        }
    };
    let text = typed.run(|argv| {
        Some(match s.run_routed(client, node, argv) {
            Ok((at, reply)) => {
                if let Ok(cid) = s.client(client) {
                    after(s, cid, at, argv, &reply);
                }
                reply
            }
            Err(e) => e.to_reply(),
        })
    });
    let mut text = text.trim_end_matches(['\r', '\n']).to_owned();
    for note in s.take_console_notes() {
        text.push_str(&format!("\n(locklab) {note}"));
    }
    text
}

/// Free play's lock watch and the nodes it looks at.
struct FreeWatch<'a> {
    free: &'a mut LockWatch,
    nodes: Vec<NodeInfo>,
}

/// [`console_line`] on the session's async lane, with free play's lock
/// watch: the same split, repeat and rendering (core's [`console::read`]
/// and [`cli::render`]).
async fn console_line_async(
    s: &mut Session,
    mut watch: FreeWatch<'_>,
    client: &str,
    node: u32,
    line: &str,
    max_line: usize,
) -> String {
    let limits = console::Limits {
        max_line,
        ..console::Limits::BROWSER
    };
    let (argv, repeat) = match console::read(line.as_bytes(), limits) {
        console::Typed::Run { argv, repeat } => (argv, repeat),
        // redis-cli's own refusal of a repeat count: nothing was sent.
        console::Typed::Refused(why @ console::Refusal::Cli(CliError::InvalidRepeat)) => return why.to_string(),
        // Too long, unbalanced, empty: the session's own error (and note),
        // refused before anything would be sent, so no I/O blocks here.
        _ => {
            return match s.run_line(client, node, line) {
                Err(e) => e.to_reply().to_cli(),
                Ok(reply) => reply.to_cli(),
            }
        }
    };
    let mut out = String::new();
    for _ in 0..repeat {
        let reply = free_command(s, &mut watch, client, node, &argv).await;
        out.push_str(&cli::render(&argv, &reply));
        for note in s.take_console_notes() {
            out.push_str(&format!("(locklab) {note}\n"));
        }
    }
    out.trim_end_matches(['\r', '\n']).to_owned()
}

/// One free-play command on the async lane, and free play's lock watch
/// after it, as [`LabState::handle`]'s does it: a key a client takes with
/// `SET … NX` or `SETNX` is watched from then on, and the watched keys are
/// looked at after a command that may change them. The look is asked for
/// before the reply is known (the keys watched, and the key this command
/// would take), so it rides in the command's round trip; what the reply
/// turns out not to need is not used.
async fn free_command(s: &mut Session, watch: &mut FreeWatch<'_>, client: &str, node: u32, argv: &[Vec<u8>]) -> Reply {
    let free = &mut *watch.free;
    let would_take = acquired_key(argv, &Reply::ok()).or_else(|| acquired_key(argv, &Reply::Integer(1)));
    let changes = may_change_locks(argv);
    let mut peek = Vec::new();
    if would_take.is_some() || (!free.keys().is_empty() && changes) {
        peek = free.keys().to_vec();
        if let Some((k, _)) = would_take.filter(|(k, _)| !peek.contains(k)) {
            peek.push(k);
        }
    }
    let (reply, peeked) = match s.run_async(client, node, argv, &peek).await {
        Ok(r) => r,
        Err(e) => return e.to_reply(),
    };
    let took = acquired_key(argv, &reply);
    if let Some((key, _)) = &took {
        let max = s.limits().max_watched_locks;
        for dropped in free.add_bounded(key, max) {
            s.note_console(client, unwatched(max, &dropped));
        }
    }
    if took.is_some() || (!free.keys().is_empty() && changes) {
        if let Ok(cid) = s.client(client) {
            let cause = Cause::Cmd { client: cid, node };
            free.observe_with(s, &watch.nodes, Some(node), cause, |_, _, want| {
                // What the peek read of each key watched (a few keys: a
                // look down the list, no hashing).
                let seen = peeked.as_ref()?;
                want.iter()
                    .map(|k| peek.iter().position(|p| p == k).and_then(|i| seen.get(i).cloned()))
                    .collect()
            });
        }
    }
    reply
}

/// The fault a `fault` message asks for, on node `node`.
fn real_fault(kind: FaultKind, node: u32) -> Fault {
    match kind {
        FaultKind::Pause => Fault::Pause { node },
        FaultKind::Resume => Fault::Resume { node },
        FaultKind::Crash => Fault::Crash { node },
        FaultKind::Restart => Fault::Restart { node },
        FaultKind::CutReplication => Fault::CutReplication { node },
        FaultKind::HealReplication => Fault::HealReplication { node },
        FaultKind::Promote => Fault::Promote { node },
    }
}

/// The console's note for a lock free play stopped watching.
fn unwatched(max: usize, key: &str) -> String {
    format!("the lab watches at most {max} locks: '{key}', the oldest, is no longer watched")
}

/// Can `argv` change a lock key? A write, a script or function (whatever
/// it touches), or `EXEC` (whatever it queued). Reads cannot, so free play
/// does not look after them.
fn may_change_locks(argv: &[Vec<u8>]) -> bool {
    let Some(cmd) = argv.first().and_then(|name| table::find(name, Profile::V8_4)) else {
        return false;
    };
    cmd.flags & flags::WRITE != 0 || matches!(cmd.name, "eval" | "evalsha" | "fcall" | "exec")
}

/// A built-in lesson by id (`5` is `05`).
fn find_lesson(id: &str) -> Result<Lesson, LabError> {
    let all = locklab_core::lesson::builtin()?;
    Ok(locklab_core::lesson::find(&all, id.trim())?.clone())
}

/// A step's outcome as [`answer_step`] takes it: the result and its note
/// (or why it could not be carried out), the events it made, and
/// `Some(passed)` when it was the last.
type Stepped = (
    Result<Option<(StepResult, Option<String>)>, RealLessonError>,
    Vec<Event>,
    Option<bool>,
);

/// One `lesson_step`'s answer, the same for a run on Redis and on a lock
/// service: after the last step, an error saying so; else `step`'s events,
/// its result and, after the last, `lesson_done`. `false` when the step
/// could not be carried out: the run cannot go on from it.
fn answer_step(
    (id, steps, finished): (String, usize, bool),
    out: &mut Vec<ServerMsg>,
    step: impl FnOnce() -> Stepped,
) -> bool {
    if finished {
        out.push(ServerMsg::Error {
            message: format!("lesson {id} is finished ({steps} steps): send a lesson message to play it again"),
        });
        return true;
    }
    let (stepped, events, done) = step();
    out.extend(events.into_iter().map(|event| ServerMsg::Event { event }));
    match stepped {
        Ok(Some((result, note))) => {
            out.push(ServerMsg::Step { result, note });
            if let Some(passed) = done {
                out.push(ServerMsg::LessonDone { passed });
            }
            true
        }
        Ok(None) => {
            out.push(ServerMsg::Error {
                message: "the lesson has no more steps".into(),
            });
            true
        }
        Err(e) => {
            out.push(ServerMsg::Error {
                message: format!("{e}; the run is over (send a lesson message to start again)"),
            });
            false
        }
    }
}

/// Handle one message on the lane it belongs to (see the module doc):
/// `None` when the lab is gone (the socket then ends).
async fn dispatch(lab: &mut Option<LabState>, msg: ClientMsg) -> Option<Vec<ServerMsg>> {
    let ClientMsg::Command { client, line, node } = msg else {
        return blocking(lab, move |l| l.handle(msg)).await;
    };
    let mut out = Vec::new();
    let l = lab.as_mut()?;
    if let Some(refused) = l.service_refusal(&client) {
        return Some(vec![refused]);
    }
    if l.run.is_none() && l.session.is_none() {
        // Opening the session blocks (and may start a redis-server): once.
        let c = client.clone();
        out = blocking(lab, move |l| l.open_for_command(&c)).await?;
    }
    let l = lab.as_mut()?;
    if l.fast_lane() {
        out.extend(l.command_async(client, line, node).await);
        return Some(out);
    }
    if l.run.is_none() && l.session.is_none() {
        // It could not be opened: `out` says why.
        return Some(out);
    }
    let msg = ClientMsg::Command { client, line, node };
    out.extend(blocking(lab, move |l| l.handle(msg)).await?);
    Some(out)
}

/// Run `work` on the lab on tokio's blocking pool (sessions call the
/// synchronous `redis` crate). `None` when there is no lab or the work
/// panicked (the lab is dropped with it): the socket then ends.
async fn blocking(
    lab: &mut Option<LabState>,
    work: impl FnOnce(&mut LabState) -> Vec<ServerMsg> + Send + 'static,
) -> Option<Vec<ServerMsg>> {
    let mut l = lab.take()?;
    let (l, out) = tokio::task::spawn_blocking(move || {
        let out = work(&mut l);
        (l, out)
    })
    .await
    .ok()?;
    *lab = Some(l);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real::process::RedisServer;
    use serde_json::{json, Value};

    /// The bound counts processes, not runs: two lessons on all four lock
    /// services (ten processes each, six of them Java) fill it, where four
    /// of them used to fit; what a run gives back on drop is its own count.
    #[test]
    fn managed_servers_are_bounded_by_the_processes_they_run() {
        let count = Arc::new(AtomicUsize::new(0));
        let all = service::processes(LockService::All);
        assert_eq!(all, 10);
        let first = Slot::take(&count, all).expect("the first");
        let second = Slot::take(&count, all).expect("the second");
        let refused = Slot::take(&count, Topology::processes(TopologyKind::Single)).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "too many managed servers running (20 processes of at most 20; this needs 1); close another lab tab"
        );
        drop(first);
        assert_eq!(count.load(Ordering::SeqCst), 10);
        let sentinel = Slot::take(&count, Topology::processes(TopologyKind::Sentinel)).expect("room for 5");
        assert_eq!(count.load(Ordering::SeqCst), 15);
        let zk = Slot::take(&count, service::processes(LockService::Zk)).expect("room for 3");
        assert!(Slot::take(&count, all).is_err(), "18 running: no room for 10");
        drop((second, sentinel, zk));
        assert_eq!(count.load(Ordering::SeqCst), 0);
    }

    /// The answer as the socket would send it: one JSON value a message.
    async fn answer(lab: &mut RealLab, msg: Value) -> Vec<Value> {
        let msg = ClientMsg::from_json(&msg.to_string()).expect("a valid message");
        let out = lab.handle(msg).await;
        assert!(!lab.is_over());
        out.iter().map(|m| serde_json::to_value(m).unwrap()).collect()
    }

    fn types(got: &[Value]) -> Vec<&str> {
        got.iter().map(|m| m["type"].as_str().unwrap()).collect()
    }

    fn lock_events(got: &[Value]) -> Vec<String> {
        got.iter()
            .filter(|m| m["type"] == "event" && m["event"]["kind"]["type"] == "lock")
            .map(|m| {
                let k = &m["event"]["kind"];
                format!("{} {} {}", k["key"], k["change"]["change"], k["via"]).replace('"', "")
            })
            .collect()
    }

    /// Free play on a user's server, without a socket: the first line opens
    /// the session (`hello`, then `names` for the new client), a key taken
    /// with `NX` is watched (its lock event before the reply), a repeated
    /// line is rendered as redis-cli renders it, and a lesson step with no
    /// lesson is refused.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn free_play_answers_console_lines_and_watches_locks() {
        let server = RedisServer::start();
        let labs = Labs::new(Some(server.url()), Limits::default());
        let mut lab = RealLab::new(labs.clone());
        let got = answer(
            &mut lab,
            json!({"type":"command","client":"A","line":"SET lock A NX PX 60000"}),
        )
        .await;
        assert_eq!(types(&got)[..2], ["hello", "names"], "{got:?}");
        assert_eq!(got.last().unwrap(), &json!({"type":"reply","client":"A","text":"OK"}));
        assert_eq!(lock_events(&got), ["lock acquired command"], "{got:?}");
        assert_eq!(labs.live_sessions(), 1);

        let got = answer(&mut lab, json!({"type":"command","client":"B","line":"2 INCR n"})).await;
        assert_eq!(types(&got)[0], "names", "B is new: {got:?}");
        assert_eq!(got.last().unwrap()["text"], "(integer) 1\n(integer) 2");
        let got = answer(&mut lab, json!({"type":"command","client":"B","line":"DEL lock"})).await;
        assert_eq!(lock_events(&got), ["lock removed command"], "{got:?}");
        let got = answer(&mut lab, json!({"type":"command","client":"A","line":"SET \"k v"})).await;
        assert_eq!(
            got.last().unwrap()["text"],
            "(error) ERR locklab: Invalid argument(s)",
            "{got:?}"
        );

        let got = answer(&mut lab, json!({"type":"lesson_step"})).await;
        assert_eq!(types(&got), ["error"]);
        assert!(
            got[0]["message"].as_str().unwrap().contains("no lesson is running"),
            "{got:?}"
        );
        let got = answer(&mut lab, json!({"type":"topology","kind":"replicated"})).await;
        assert_eq!(types(&got), ["error"]);
        assert!(
            got[0]["message"].as_str().unwrap().contains("your own server"),
            "{got:?}"
        );
        lab.close().await;
        assert_eq!(labs.live_sessions(), 0);
        assert_eq!(labs.live_processes(), 0, "the user's server is not the lab's");
    }

    /// A lesson on a managed `single`, without a socket: the lab starts the
    /// redis-server (one process of the shared count), opens a fresh
    /// session (`hello`), announces the run (`lesson`), and a step answers
    /// with its events and its `step`; closing the lab stops the server.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lesson_starts_on_a_managed_single_and_steps() {
        let labs = Labs::new(None, Limits::default());
        let mut lab = RealLab::new(labs.clone());
        let got = answer(&mut lab, json!({"type":"lesson","id":"5","factor":100})).await;
        assert_eq!(types(&got), ["hello", "lesson"], "{got:?}");
        let lesson = &got[1];
        assert_eq!(lesson["id"], "05");
        assert_eq!(lesson["topology"], "single");
        assert_eq!(lesson["server_version"], "7.0.15");
        assert_eq!(lesson["names"]["clients"], json!(["A", "B", "C"]));
        assert_eq!(labs.live_processes(), 1);
        assert_eq!(labs.live_sessions(), 1);

        let got = answer(&mut lab, json!({"type":"lesson_step"})).await;
        assert_eq!(types(&got).last(), Some(&"step"), "{got:?}");
        let step = &got.last().unwrap()["result"];
        assert_eq!(
            (step["index"].as_u64(), step["ok"].as_bool()),
            (Some(0), Some(true)),
            "{step}"
        );
        assert!(got
            .iter()
            .any(|m| m["type"] == "event" && m["event"]["kind"]["type"] == "executed"));
        assert_eq!(lock_events(&got), ["lock:order:1 acquired command"], "{got:?}");

        let got = answer(&mut lab, json!({"type":"lesson","id":"05","factor":0})).await;
        assert_eq!(types(&got), ["error"]);
        assert!(got[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("factor 0 is out of range"));
        lab.close().await;
        assert_eq!(labs.live_processes(), 0);
        assert_eq!(labs.live_sessions(), 0);
    }
}
