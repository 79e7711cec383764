//! The real driver's lab: one WebSocket's state machine, without the socket.
//!
//! The browser's `RealDriver` is a WebSocket client; [`crate::web`] pumps
//! each socket's messages through one [`RealLab`] ([`RealLab::handle`]:
//! core's [`ClientMsg`] in, [`ServerMsg`]s out), so the lab is tested here
//! without a socket. Each lab is one [`Session`] (its own key prefix and ACL
//! user) on one [`Servers`]: the user's server when `locklab serve --redis
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
//!   already that kind — then it is [`Servers::reset`]: nodes an earlier
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

use locklab_core::lesson::{Lesson, LessonError, LockService};
use locklab_core::protocol::{ClientMsg, FaultKind, ServerMsg};
use locklab_core::reply::Reply;
use thiserror::Error;

use crate::real::lesson::{RealEnv, RealLessonError, RealLessonRun};
use crate::real::observe::{acquired_key, LockWatch, Look};
use crate::real::service::{self, ServiceRun};
use crate::real::session::{Session, SessionError, SessionLimits, SessionPool};
use crate::real::stages::{Book, Stage, Stages};
use crate::real::topology::{NodeFault, NodeState, Servers, TopologyError, TopologyKind};

/// Most processes the backend runs at once for managed topologies and lock
/// services, across all WebSockets: four five-process topologies' worth. A
/// lesson on all four lock services counts ten (three of them Java), a
/// managed `single` one.
mod free;
mod lesson;

use free::{console_line, console_line_async, may_change_locks, unwatched, FreeWatch};

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
    pub fn new(redis: Option<String>, limits: SessionLimits) -> Self {
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
    pub fn limits(&self) -> &SessionLimits {
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
    /// The socket's own stages (its messages' JSON, both ways); its
    /// session keeps the rest.
    stages: Book,
}

impl RealLab {
    pub fn new(labs: Labs) -> Self {
        RealLab {
            lab: Some(LabState::new(labs)),
            stages: Book::default(),
        }
    }

    /// A text frame read as a message (`Err`: why it is not one).
    pub fn read(&mut self, text: &str) -> Result<ClientMsg, String> {
        let t = std::time::Instant::now();
        let msg = ClientMsg::from_json(text);
        self.stages.0.add(Stage::Parse, t);
        msg
    }

    /// Messages as the socket sends them: a JSON text each.
    pub fn encode(&mut self, replies: &[ServerMsg]) -> Vec<String> {
        let t = std::time::Instant::now();
        let out = encode_all(replies);
        self.stages.0.add(Stage::Encode, t);
        out
    }

    /// Where this lab's commands spent their time so far: the socket's
    /// stages and its session's.
    pub fn stages(&self) -> Stages {
        let mut all = self.stages.0;
        if let Some(s) = self.lab.as_ref().and_then(|l| l.session.as_ref()) {
            all.merge(&s.stages());
        }
        all
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
        let RealLab { lab, stages } = self;
        // Into the total before the session goes (whoever waits for the
        // sessions to end then reads every stage of theirs).
        drop(stages);
        if let Some(l) = lab {
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
    topology: Option<Servers>,
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
                                free.observe(s, &topology.nodes(), Some(node), Look::Cmd { client: cid, node });
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
        let t = std::time::Instant::now();
        if s.names().clients.len() != clients_before {
            out.push(ServerMsg::Names {
                names: s.names().clone(),
            });
        }
        let events = s.take_events();
        out.reserve(events.len() + 1);
        out.extend(events.into_iter().map(|event| ServerMsg::Event { event }));
        out.push(ServerMsg::Reply { client, text });
        s.stage(Stage::Trace, t);
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
        self.free.observe_with(s, &nodes, None, Look::None, |_, n, _| {
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
        let slot = Slot::take(&self.labs.managed, Servers::processes(kind))?;
        let topo = Servers::start(kind)?;
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
                Some(url) => self.topology = Some(Servers::external(url)),
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

/// Each message's JSON, as a socket sends it (a text frame each). These
/// are plain data, which serialise; one that did not would be left out.
pub fn encode_all(replies: &[ServerMsg]) -> Vec<String> {
    replies.iter().filter_map(|r| serde_json::to_string(r).ok()).collect()
}

/// The fault a `fault` message asks for, on node `node`.
fn real_fault(kind: FaultKind, node: u32) -> NodeFault {
    match kind {
        FaultKind::Pause => NodeFault::Pause { node },
        FaultKind::Resume => NodeFault::Resume { node },
        FaultKind::Crash => NodeFault::Crash { node },
        FaultKind::Restart => NodeFault::Restart { node },
        FaultKind::CutReplication => NodeFault::CutReplication { node },
        FaultKind::HealReplication => NodeFault::HealReplication { node },
        FaultKind::Promote => NodeFault::Promote { node },
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
mod tests;
