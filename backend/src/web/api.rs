//! The real-Redis API: `/api/real/health` and the `/api/session` WebSocket.
//!
//! The browser's `RealDriver` is a WebSocket client. Each WebSocket is one
//! lab [`Session`] (its own key prefix and ACL user) on one [`Topology`]:
//! the user's server when `locklab serve --redis URL` was given, otherwise a
//! managed `single` started on the first command. A `topology` message
//! replaces it with a fresh managed topology (and a fresh session), and
//! everything the WebSocket started is killed when it closes — so a
//! forgotten browser tab cannot leave redis-server processes behind.
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

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures_util::{SinkExt, StreamExt};
use locklab_core::cli::{self, CliError};
use locklab_core::console;
use locklab_core::protocol::{Backing, ClientMsg, FaultKind, Health, ServerMsg};
use locklab_core::reply::Reply;
use locklab_core::server::table::{self, flags};
use locklab_core::server::Profile;

use locklab_core::lesson::run::StepResult;
use locklab_core::lesson::worded::PageLesson;
use locklab_core::lesson::{Lang, Lesson};
use locklab_core::trace::Event;

use crate::real::conn::RealConnection;
use crate::real::lesson::{self as real_lesson, RealEnv, RealLessonError, RealLessonRun};
use crate::real::lockservice::{self, ServiceRun};
use crate::real::observe::{acquired_key, Cause, LockWatch};
use crate::real::session::{Limits, Session, SessionError, SessionPool};
use crate::real::topology::{Fault, NodeInfo, NodeState, Topology, TopologyKind};
use crate::web::origin::OriginPolicy;

/// Most processes the backend runs at once for managed topologies and lock
/// services, across all WebSockets: four five-process topologies' worth. A
/// lesson on all four lock services counts ten (three of them Java), a
/// managed `single` one.
const MAX_MANAGED_PROCESSES: usize = 20;

/// Most WebSockets open at once by default (issue 35, B14: 3,000 were
/// accepted). Each costs a task, buffers and, once it sends a command, a
/// session: 128 is a room of people with a tab or two each.
pub const DEFAULT_MAX_SOCKETS: usize = 128;

/// Shared by every request: the user's server (if any), the session pool.
#[derive(Clone, Debug)]
pub struct ApiState {
    redis: Option<String>,
    pool: SessionPool,
    managed: Arc<AtomicUsize>,
    /// WebSockets open now, of at most `max_sockets`.
    sockets: Arc<AtomicUsize>,
    max_sockets: usize,
    origins: Arc<OriginPolicy>,
    /// Set once when the backend stops: every socket ends its lab (its
    /// session cleaned up, its managed servers stopped) and closes.
    stop: Arc<tokio::sync::watch::Sender<bool>>,
}

impl ApiState {
    /// `redis`: the user's server (`--redis URL`), or `None` for managed
    /// servers only.
    pub fn new(redis: Option<String>) -> Self {
        ApiState::with_limits(redis, Limits::default())
    }

    pub fn with_limits(redis: Option<String>, limits: Limits) -> Self {
        ApiState {
            redis,
            pool: SessionPool::new(limits),
            managed: Arc::new(AtomicUsize::new(0)),
            sockets: Arc::new(AtomicUsize::new(0)),
            max_sockets: DEFAULT_MAX_SOCKETS,
            origins: Arc::new(OriginPolicy::default()),
            stop: Arc::new(tokio::sync::watch::channel(false).0),
        }
    }

    /// Also accept WebSockets from these origins (`--allow-origin`), besides
    /// the lab's own.
    pub fn allow_origins(mut self, origins: impl IntoIterator<Item = String>) -> Self {
        self.origins = Arc::new(OriginPolicy::new(origins));
        self
    }

    /// The origins and hosts accepted ([`crate::web::site`] checks every
    /// request's `Host` with it).
    pub fn origins(&self) -> Arc<OriginPolicy> {
        self.origins.clone()
    }

    /// Accept at most `n` WebSockets at once (`locklab serve
    /// --max-sockets`); more are refused with a 503 before the upgrade.
    pub fn max_sockets(mut self, n: usize) -> Self {
        self.max_sockets = n;
        self
    }

    /// Lab sessions open right now, over all WebSockets: a socket's
    /// session is dropped (and its ACL user deleted) a little after the
    /// socket closes, which a caller that stops the server can wait for.
    pub fn live_sessions(&self) -> usize {
        self.pool.live()
    }

    /// Processes of managed topologies and lock services running now,
    /// over all WebSockets.
    pub fn live_topologies(&self) -> usize {
        self.managed.load(Ordering::SeqCst)
    }

    /// Ended sessions whose cleanup waits for a busy or unreachable server.
    pub fn pending_cleanups(&self) -> usize {
        self.pool.pending_cleanups()
    }

    /// End every lab: each socket tells its client, cleans up its session
    /// and stops its managed servers, then closes. For a backend that is
    /// stopping (SIGTERM, Ctrl-C); wait for [`live_topologies`] and
    /// [`live_sessions`] to reach 0 afterwards.
    ///
    /// [`live_topologies`]: ApiState::live_topologies
    /// [`live_sessions`]: ApiState::live_sessions
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }
}

/// `/api/health` (and its older name `/api/real/health`) and
/// `/api/session`, without the `Host` check: [`crate::web::site`] serves
/// it behind one.
pub(crate) fn api_router(state: ApiState) -> Router {
    Router::new()
        .route("/api/health", get(health))
        .route("/api/real/health", get(health))
        .route("/api/session", get(session_ws))
        .with_state(state)
}

async fn health(State(state): State<ApiState>) -> Json<Health> {
    let redis = state.redis.clone();
    let h = tokio::task::spawn_blocking(move || real_health(redis.as_deref()))
        .await
        .unwrap_or_else(|e| Health {
            reachable: false,
            version: None,
            topology: Backing::Unknown,
            lessons: Vec::new(),
            unsupported: Default::default(),
            error: Some(e.to_string()),
        });
    Json(h)
}

/// The health report, synchronously (also for the CLI).
pub fn real_health(redis: Option<&str>) -> Health {
    let target = match redis {
        Some(url) => Topology::external(url),
        None => Topology::External(String::new()),
    };
    let mut lessons = Vec::new();
    let mut unsupported = std::collections::BTreeMap::new();
    for l in locklab_core::lesson::builtin().unwrap_or_default() {
        let verdict = match redis {
            Some(_) => real_lesson::check_target(&l, &target, Lang::En),
            None => real_lesson::check_browser(&l, Lang::En),
        };
        match verdict {
            Ok(()) => lessons.push(l.id.clone()),
            Err(why) => {
                unsupported.insert(l.id.clone(), why);
            }
        }
    }
    match redis {
        Some(url) => {
            let probe = RealConnection::open(url).and_then(|mut c| {
                c.set_read_timeout(Some(std::time::Duration::from_secs(2)))?;
                c.execute(&[b"INFO".to_vec(), b"server".to_vec()])
            });
            match probe {
                Ok(Reply::Bulk(text)) => Health {
                    reachable: true,
                    version: String::from_utf8_lossy(&text)
                        .lines()
                        .find_map(|l| l.strip_prefix("redis_version:").map(|v| v.trim().to_owned())),
                    topology: Backing::External,
                    lessons,
                    unsupported,
                    error: None,
                },
                Ok(other) => Health {
                    reachable: true,
                    version: None,
                    topology: Backing::External,
                    lessons,
                    unsupported,
                    error: Some(other.to_cli()),
                },
                Err(e) => Health {
                    reachable: false,
                    version: None,
                    topology: Backing::External,
                    lessons,
                    unsupported,
                    error: Some(e.to_string()),
                },
            }
        }
        None => {
            let version = crate::real::process::redis_server_binary().and_then(|b| {
                let out = std::process::Command::new(b).arg("--version").output().ok()?;
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                text.split_whitespace()
                    .find_map(|w| w.strip_prefix("v=").map(str::to_owned))
            });
            Health {
                reachable: version.is_some(),
                error: version.is_none().then(|| crate::real::process::NOT_FOUND.to_owned()),
                version,
                topology: Backing::Managed,
                lessons,
                unsupported,
            }
        }
    }
}

/// A share of a count shared by every WebSocket, given back on drop: a
/// managed topology's or lock service's processes (of
/// [`MAX_MANAGED_PROCESSES`]), or one open WebSocket (of
/// [`ApiState::max_sockets`]).
#[derive(Debug)]
struct Slot(Arc<AtomicUsize>, usize);

impl Slot {
    /// `processes` more of the shared count, or why not.
    fn take(count: &Arc<AtomicUsize>, processes: usize) -> Result<Slot, String> {
        Slot::claim(count, processes, MAX_MANAGED_PROCESSES).map_err(|running| {
            format!(
                "too many managed servers running ({running} processes of at most {MAX_MANAGED_PROCESSES}; this \
                 needs {processes}); close another lab tab"
            )
        })
    }

    /// `n` more of `count` if that keeps it within `max`; else how many
    /// are taken.
    fn claim(count: &Arc<AtomicUsize>, n: usize, max: usize) -> Result<Slot, usize> {
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

/// One WebSocket's lab. Field order matters for drop: the session (ACL
/// user cleanup needs the servers) goes before the topology.
struct Lab {
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
    state: ApiState,
}

impl Lab {
    fn new(state: ApiState) -> Self {
        Lab {
            run: None,
            service: None,
            session: None,
            free: LockWatch::free(0),
            topology: None,
            _slot: None,
            state,
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
                        text: Reply::Error(e).to_cli(),
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
                    self.state.pool.limits().max_line,
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
                if self.state.redis.is_some() {
                    out.push(ServerMsg::Error {
                        message:
                            "topology changes are refused: this lab plays on your own server (--redis) and starts \
                                  no redis-server of its own; start `locklab serve` without --redis for managed \
                                  topologies"
                                .into(),
                    });
                    return out;
                }
                if let Err(message) = self.start_managed(kind) {
                    out.push(ServerMsg::Error { message });
                    return out;
                }
                if let Err(message) = self.ensure_session(&mut out) {
                    out.push(ServerMsg::Error { message });
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
                if let Err(message) = self.start_lesson(&id, lesson, factor, lang, &mut out) {
                    out.push(ServerMsg::Error { message });
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
                text: Reply::Error(e).to_cli(),
            });
        }
        out
    }

    /// A free-play `command` on the async lane: its events, `names` if a
    /// client appeared, and its reply, as [`Lab::handle`] answers it.
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
        let max_line = self.state.pool.limits().max_line;
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
    ) -> Result<(), String> {
        self.run = None;
        self.service = None;
        let lang = lang.unwrap_or_default();
        let lesson = match sent {
            Some(l) if l.id == id.trim() => {
                let l = l.decoded().map_err(|e| e.to_string())?;
                l.validate_sent().map_err(|e| e.to_string())?;
                l
            }
            Some(l) => return Err(format!("the lesson sent is {:?}, not {id:?}", l.id)),
            None => find_lesson(id)?,
        };
        let factor = factor.unwrap_or_else(|| real_lesson::default_factor(&lesson));
        if !(1..=10_000).contains(&factor) {
            return Err(format!(
                "factor {factor} is out of range: 1 to 10000 (100 compresses 30 s into 300 ms)"
            ));
        }
        let unsupported = |why: String| {
            RealLessonError::Unsupported {
                id: lesson.id.clone(),
                why,
            }
            .to_string()
        };
        real_lesson::check_browser(&lesson, lang).map_err(unsupported)?;
        if lesson.world.service.is_some() {
            if let Some(url) = self.state.redis.clone() {
                real_lesson::check_target(&lesson, &Topology::external(url), lang).map_err(unsupported)?;
            }
            return self.start_service(&lesson, factor, out);
        }
        // Nothing from before may leak in: a new session, and (managed) the
        // lesson's topology as new.
        self.session = None;
        self.lesson_topology(&lesson, lang, &unsupported)?;
        self.ensure_session(out)?;
        let (Some(session), Some(topology)) = (self.session.as_mut(), self.topology.as_mut()) else {
            return Err("no session".into());
        };
        let mut env = RealEnv { session, topology };
        let run = RealLessonRun::start(&lesson, &mut env, factor, lang).map_err(|e| e.to_string())?;
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
        unsupported: &dyn Fn(String) -> String,
    ) -> Result<(), String> {
        match self.state.redis.clone() {
            Some(url) => {
                let external = Topology::external(url);
                real_lesson::check_target(lesson, &external, lang).map_err(unsupported)?;
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

    /// [`Lab::serve_programs`] in free play on the async lane: look at the
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

    fn start_managed(&mut self, kind: TopologyKind) -> Result<(), String> {
        // Tear down the old one first: its processes and its slot.
        self.tear_down();
        let slot = Slot::take(&self.state.managed, Topology::processes(kind))?;
        let topo = Topology::start(kind).map_err(|e| e.to_string())?;
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
    fn start_service(&mut self, lesson: &Lesson, factor: u64, out: &mut Vec<ServerMsg>) -> Result<(), String> {
        self.tear_down();
        let Some(service) = lesson.world.service else {
            return Err(format!("lesson {} does not play on a lock service", lesson.id));
        };
        let slot = Slot::take(&self.state.managed, lockservice::processes(service))?;
        let run = ServiceRun::start(lesson, factor).map_err(|e| e.to_string())?;
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
    fn ensure_session(&mut self, out: &mut Vec<ServerMsg>) -> Result<(), String> {
        if self.session.is_some() {
            return Ok(());
        }
        if self.topology.is_none() {
            match self.state.redis.clone() {
                Some(url) => self.topology = Some(Topology::external(url)),
                None => self.start_managed(TopologyKind::Single)?,
            }
        }
        let Some(topo) = self.topology.as_ref() else {
            return Err("no topology".into());
        };
        let s = self.state.pool.open_on(topo).map_err(|e: SessionError| e.to_string())?;
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
/// after it, as [`Lab::handle`]'s does it: a key a client takes with
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
fn find_lesson(id: &str) -> Result<Lesson, String> {
    let all = locklab_core::lesson::builtin().map_err(|e| e.to_string())?;
    locklab_core::lesson::find(&all, id.trim())
        .cloned()
        .map_err(|e| e.to_string())
}

async fn session_ws(State(state): State<ApiState>, headers: HeaderMap, ws: WebSocketUpgrade) -> Response {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if let Err(why) = state.origins.check(header(header::ORIGIN), header(header::HOST)) {
        return (StatusCode::FORBIDDEN, format!("{why}\n")).into_response();
    }
    let Ok(slot) = Slot::claim(&state.sockets, 1, state.max_sockets) else {
        let message = format!(
            "locklab: too many lab sessions open ({} WebSockets, the most this lab accepts: see locklab serve \
             --max-sockets); close another lab tab and reload\n",
            state.max_sockets
        );
        return (StatusCode::SERVICE_UNAVAILABLE, message).into_response();
    };
    let max = max_message(&state);
    // A frame is checked against its header's length before its payload is
    // read, so a frame claiming 15 MiB costs nothing (the default, 16 MiB,
    // buffered it whole: B14). The page sends each message as one frame.
    ws.max_message_size(max)
        .max_frame_size(max)
        .read_buffer_size(READ_BUFFER)
        .on_upgrade(move |socket| run_socket(socket, state, slot))
        .into_response()
}

/// The largest message a socket takes: the longest line a session accepts
/// (`max_line`, 64 KiB: a script typed or pasted at the console) and 4 KiB
/// for the JSON around it. A counterexample lesson sent whole
/// (`ClientMsg::Lesson`) is bounded by `Lesson::validate_sent`'s counts
/// and fits with room to spare.
fn max_message(state: &ApiState) -> usize {
    state.pool.limits().max_line + 4096
}

/// The close frame for a message or frame over [`max_message`]: code 1009
/// ("message too big") and the bound, instead of a silent drop.
fn too_big(error: axum::Error, max: usize) -> Option<Message> {
    use tokio_tungstenite::tungstenite::Error;
    let inner = error.into_inner();
    let capacity = matches!(inner.downcast_ref::<Error>(), Some(Error::Capacity(_)));
    capacity.then(|| {
        Message::Close(Some(axum::extract::ws::CloseFrame {
            code: axum::extract::ws::close_code::SIZE,
            reason: format!("message too big: a lab message holds at most {max} bytes").into(),
        }))
    })
}

/// The WebSocket's read buffer. tungstenite zero-fills up to this much
/// before *every* read of the socket, and its default (128 KiB) made that
/// memset a visible share of a command's cost; a command message is a few
/// hundred bytes. A larger message (a script up to `max_line`) still
/// arrives whole, only in more reads.
const READ_BUFFER: usize = 8 * 1024;

// long: the socket's one select loop, an arm per kind of wake (a message, a refused one, the timer, the stop)
async fn run_socket(socket: WebSocket, state: ApiState, _slot: Slot) {
    let max = max_message(&state);
    let (mut tx, mut rx) = socket.split();
    let idle = state.pool.limits().idle_timeout;
    let mut stop = state.stop.subscribe();
    let mut lab = Some(Lab::new(state));
    let mut last = std::time::Instant::now();
    // One timer for the socket's life, armed for `wake` below. A timer that
    // would fire later than `wake` is moved earlier; one that fires earlier
    // (the socket was busy since it was armed) is moved on then, without
    // anything being done. So a busy socket does not re-arm a timer for
    // every message, while nothing is served before its time.
    let timer = tokio::time::sleep_until(tokio::time::Instant::from_std(last + idle));
    tokio::pin!(timer);
    loop {
        let idle_at = last + idle;
        let wake = next_wake(lab.as_ref(), idle_at);
        let wake_at = tokio::time::Instant::from_std(wake);
        if timer.is_elapsed() || timer.deadline() > wake_at {
            timer.as_mut().reset(wake_at);
        }
        if *stop.borrow() {
            let _ = send_all(
                &mut tx,
                vec![ServerMsg::Error {
                    message: STOPPING.into(),
                }],
            )
            .await;
            break;
        }
        let incoming = tokio::select! {
            m = rx.next() => Some(m),
            () = &mut timer => None,
            _ = stop.changed() => continue,
        };
        let replies = match incoming {
            // Armed before the socket was last busy: not yet time.
            None if std::time::Instant::now() < wake => continue,
            None if std::time::Instant::now() >= idle_at => {
                let message = format!(
                    "this lab session was idle for {} s and has ended (its keys are deleted); send a message to \
                     start a new one",
                    idle.as_secs()
                );
                let _ = send_all(&mut tx, vec![ServerMsg::Error { message }]).await;
                break;
            }
            None if lab.as_ref().is_some_and(Lab::fast_lane) => match lab.as_mut() {
                Some(l) => l.watch_free_async().await,
                None => break,
            },
            None => match blocking(&mut lab, Lab::serve_programs).await {
                Some(out) => out,
                None => break,
            },
            Some(None) => break,
            Some(Some(Err(e))) => {
                if let Some(close) = too_big(e, max) {
                    let _ = tx.send(close).await;
                }
                break;
            }
            Some(Some(Ok(msg))) => {
                last = std::time::Instant::now();
                let text = match msg {
                    Message::Text(t) => t,
                    Message::Close(_) => break,
                    _ => continue,
                };
                match ClientMsg::from_json(text.as_str()) {
                    Err(message) => vec![ServerMsg::Error { message }],
                    Ok(msg) => match dispatch(&mut lab, msg).await {
                        Some(out) => out,
                        None => break,
                    },
                }
            }
        };
        if send_all(&mut tx, replies).await.is_err() {
            return drop_lab(lab).await;
        }
    }
    drop_lab(lab).await;
}

/// When a socket with no message must wake anyway. A lesson's background
/// program (a Redlock holder working, then extending or releasing) keeps
/// running between two `lesson_step` messages, as it would in a real
/// process: at its next timer, to serve it and send its events as they
/// happen. In free play, when a watched lock is due to expire, so its bar
/// ends then. And at `idle_at`, when the socket has been idle too long.
fn next_wake(lab: Option<&Lab>, idle_at: std::time::Instant) -> std::time::Instant {
    let due = lab.and_then(Lab::program_deadline);
    due.map_or(idle_at, |d| d.min(idle_at))
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
async fn dispatch(lab: &mut Option<Lab>, msg: ClientMsg) -> Option<Vec<ServerMsg>> {
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

/// What a socket says when the backend stops.
const STOPPING: &str = "the lab backend is stopping: this session has ended (its keys are deleted)";

/// Send one message's answer: every message its own text frame, as the
/// clients expect, but queued first and flushed once, so a command's
/// events and reply leave in one write (one syscall, one wake-up of the
/// peer) rather than one per frame.
async fn send_all(
    tx: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    replies: Vec<ServerMsg>,
) -> Result<(), axum::Error> {
    if replies.is_empty() {
        return Ok(());
    }
    for r in replies {
        let Ok(json) = serde_json::to_string(&r) else { continue };
        tx.feed(Message::Text(json.into())).await?;
    }
    tx.flush().await
}

/// Run `work` on the lab on tokio's blocking pool (sessions call the
/// synchronous `redis` crate). `None` when there is no lab or the work
/// panicked (the lab is dropped with it): the socket then ends.
async fn blocking(
    lab: &mut Option<Lab>,
    work: impl FnOnce(&mut Lab) -> Vec<ServerMsg> + Send + 'static,
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

/// Dropping a lab deletes ACL users and kills processes: blocking work.
async fn drop_lab(lab: Option<Lab>) {
    if let Some(l) = lab {
        let _ = tokio::task::spawn_blocking(move || drop(l)).await;
    }
}

/// Serve the API alone ([`crate::web::site`] without `dist`) on an already bound listener (tests bind
/// port 0; the lead's `serve` merges the router into the web app instead).
pub async fn serve_listener(listener: tokio::net::TcpListener, state: ApiState) -> std::io::Result<()> {
    axum::serve(no_delay(listener), crate::web::site(None, state)).await
}

/// `listener`, with Nagle's algorithm off on every connection it accepts.
///
/// A command's answer is several small WebSocket frames (its events, then
/// its reply). With Nagle on, a frame written while the one before is not
/// yet acknowledged waits for that ACK, and the peer delays its ACK (40 ms
/// on Linux) while it waits for more data it could piggyback on: every
/// command then took some 40 ms over loopback, ~11 lock cycles/s instead of
/// thousands. The lab is interactive and latency is what the timeline
/// shows, so every write goes out at once.
pub fn no_delay(listener: tokio::net::TcpListener) -> impl axum::serve::Listener<Addr = std::net::SocketAddr> {
    use axum::serve::ListenerExt;
    listener.tap_io(|tcp| {
        // Best effort: a socket that refuses is still correct, only slower.
        let _ = tcp.set_nodelay(true);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_core::lesson::LockService;

    /// The bound counts processes, not runs: two lessons on all four lock
    /// services (ten processes each, six of them Java) fill it, where four
    /// of them used to fit; what a run gives back on drop is its own count.
    #[test]
    fn managed_servers_are_bounded_by_the_processes_they_run() {
        let count = Arc::new(AtomicUsize::new(0));
        let all = lockservice::processes(LockService::All);
        assert_eq!(all, 10);
        let first = Slot::take(&count, all).expect("the first");
        let second = Slot::take(&count, all).expect("the second");
        let refused = Slot::take(&count, Topology::processes(TopologyKind::Single)).unwrap_err();
        assert_eq!(
            refused,
            "too many managed servers running (20 processes of at most 20; this needs 1); close another lab tab"
        );
        drop(first);
        assert_eq!(count.load(Ordering::SeqCst), 10);
        let sentinel = Slot::take(&count, Topology::processes(TopologyKind::Sentinel)).expect("room for 5");
        assert_eq!(count.load(Ordering::SeqCst), 15);
        let zk = Slot::take(&count, lockservice::processes(LockService::Zk)).expect("room for 3");
        assert!(Slot::take(&count, all).is_err(), "18 running: no room for 10");
        drop((second, sentinel, zk));
        assert_eq!(count.load(Ordering::SeqCst), 0);
    }
}
