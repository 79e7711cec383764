//! The real driver's model: what the page knows about its WebSocket to
//! `locklab serve`, and the lesson it plays there on real redis-server.
//!
//! Like core's client programs, this is sans-IO: it never touches a socket
//! or a timer. The app hands it what happened — the socket opened, a text
//! frame arrived, the socket closed, `/api/health` answered — and takes the
//! frames it wants sent from [`RealDriver::take_outbox`]. So the protocol
//! (documented in the backend's `api.rs`) is tested natively, message by
//! message, without a browser or a server.
//!
//! # What "real" changes for the user
//!
//! * **No rewinding time.** A step back, a scrub, or Home restarts the
//!   lesson on fresh keys (a new lab session, so a new key prefix) and
//!   plays it again up to the step asked for. The simulator replays
//!   instantly; here each step is a round trip and the lesson's waits are
//!   real (compressed) sleeps.
//! * **Compressed time.** The backend divides TTLs and waits by a factor
//!   (100× by default) and multiplies PTTL replies back; the notice above
//!   the steps says so, and each step it changed carries its note.
//! * **Connection loss is expected.** A demo laptop sleeps, the backend is
//!   restarted, redis-server is killed on purpose. The driver records why
//!   the link went away, the app shows a banner and reconnects with
//!   backoff, and on reconnect the lesson is played again to where the user
//!   was — on a fresh session, because the old one died with its socket.

use std::collections::BTreeMap;

use locklab_core::actor::Names;
use locklab_core::lesson::run::StepResult;
use locklab_core::lesson::session::command_rows;
use locklab_core::lesson::worded::PageLesson;
use locklab_core::protocol::{ClientMsg, FaultKind, Served, ServerMsg, TopologyKind};
use locklab_core::trace::{Event, Trace};

use super::LessonDriver;
use crate::i18n::Lang;
use crate::lab::Exchange;

/// Time compressions the page offers. 1× is the default because a person
/// stepping through a lesson spends real seconds between steps, and on a
/// real server those seconds are lesson time too: at 100× a 15 s TTL is
/// 150 ms, gone before the next click. Faster factors suit waits and play.
pub const FACTORS: [u64; 3] = [1, 10, 100];

/// Reconnect delays: 0.5 s, 1 s, 2 s, then every 4 s.
pub fn reconnect_delay_ms(attempt: u32) -> u32 {
    500u32.saturating_mul(1 << attempt.min(3))
}

/// `GET /api/health`, and a node as `hello` and `topology` list it: the
/// protocol's types.
pub use locklab_core::protocol::{Health, NodeInfo};

/// Parse `/api/health`'s JSON. A backend without the real driver (a bare
/// file server) answers something else; that is "not available".
pub fn parse_health(json: &str) -> Result<Health, String> {
    serde_json::from_str::<Health>(json)
        .map_err(|e| format!("the backend's /api/health did not describe a real driver ({e})"))
}

/// The WebSocket's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SocketState {
    /// Opening; `attempt` counts reconnects (0: the first connection).
    Connecting {
        attempt: u32,
    },
    Open,
    /// Closed; the app reconnects after [`reconnect_delay_ms`]`(attempt)`.
    Lost {
        reason: String,
        attempt: u32,
    },
}

/// The session the backend opened for this tab.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionInfo {
    pub id: String,
    /// Every key this tab touches is stored under it (`lab:<id>:`).
    pub prefix: String,
    /// A managed kind, or the user's own server.
    pub topology: Served,
    pub nodes: Vec<NodeInfo>,
}

/// The lesson run on the backend.
struct Run {
    lesson: &'static PageLesson,
    /// The backend accepted the lesson (its `lesson` message arrived).
    started: bool,
    results: Vec<StepResult>,
    notes: BTreeMap<usize, String>,
    notice: Option<String>,
    server_version: String,
    factor: u64,
    /// Steps the user wants done.
    target: usize,
    /// Steps asked of the backend so far (those beyond `results` are on
    /// their way). Asked all at once, so the backend plays them back to
    /// back: a run on real servers cannot wait for the page between steps
    /// without the wait becoming part of the run.
    asked: usize,
    passed: Option<bool>,
    error: Option<String>,
    /// Trace length when the run started: the lesson's timeline starts there.
    trace_from: usize,
}

/// A line typed off script, waiting for or holding its reply.
#[derive(Clone, Debug)]
struct TypedLine {
    client: String,
    /// Lesson steps done when it was typed (its place in the transcript).
    after_steps: usize,
    exchange: Exchange,
    answered: bool,
}

/// The real driver: link, session, trace, consoles and the lesson run.
pub struct RealDriver {
    pub link: SocketState,
    pub health: Option<Health>,
    /// Why `/api/health` could not be read, when it could not.
    pub health_error: Option<String>,
    pub session: Option<SessionInfo>,
    lang: Lang,
    /// Time compression for lesson runs (one of [`FACTORS`]).
    factor: u64,
    outbox: Vec<String>,
    names: Names,
    events: Vec<Event>,
    typed: Vec<TypedLine>,
    history: BTreeMap<String, Vec<String>>,
    run: Option<Run>,
    /// The last `error` frame that belonged to no lesson step or command.
    pub last_error: Option<String>,
}

/// What the free lab's console shows on the real driver: clients A, B, C.
pub const FREE_CLIENTS: [&str; 3] = ["A", "B", "C"];

/// The prompt of the real driver's consoles (the backend's server, as
/// redis-cli would name a local one).
pub const PROMPT: &str = "real> ";

impl RealDriver {
    pub fn new(lang: Lang) -> RealDriver {
        RealDriver {
            link: SocketState::Connecting { attempt: 0 },
            health: None,
            health_error: None,
            session: None,
            lang,
            factor: FACTORS[0],
            outbox: Vec::new(),
            names: Names::default(),
            events: Vec::new(),
            typed: Vec::new(),
            history: BTreeMap::new(),
            run: None,
            last_error: None,
        }
    }

    /// The frames to send now (only while the link is open).
    pub fn take_outbox(&mut self) -> Vec<String> {
        if self.link == SocketState::Open {
            std::mem::take(&mut self.outbox)
        } else {
            Vec::new()
        }
    }

    fn send(&mut self, msg: ClientMsg) {
        if self.link == SocketState::Open {
            // Strings, numbers and enums: it always serialises.
            self.outbox.push(serde_json::to_string(&msg).unwrap_or_default());
        }
    }

    pub fn set_lang(&mut self, lang: Lang) {
        self.lang = lang;
    }

    pub fn factor(&self) -> u64 {
        self.factor
    }

    /// A new time compression: a lesson in progress starts again with it
    /// (a run cannot change speed halfway).
    pub fn set_factor(&mut self, factor: u64) {
        if factor == self.factor || factor == 0 {
            return;
        }
        self.factor = factor;
        if let Some(lesson) = self.run.as_ref().map(|r| r.lesson) {
            self.start_lesson(lesson);
        }
    }

    /// The reconnect attempt the link is on (for the banner and backoff).
    pub fn attempt(&self) -> u32 {
        match &self.link {
            SocketState::Connecting { attempt } | SocketState::Lost { attempt, .. } => *attempt,
            SocketState::Open => 0,
        }
    }

    /// The socket is being (re)opened.
    pub fn connecting(&mut self) {
        let attempt = match &self.link {
            SocketState::Lost { attempt, .. } => attempt + 1,
            SocketState::Connecting { attempt } => *attempt,
            SocketState::Open => 0,
        };
        self.link = SocketState::Connecting { attempt };
    }

    /// The socket opened: a lesson in progress is started again (the old
    /// session died with the old socket) and played to where it was.
    pub fn opened(&mut self) {
        self.link = SocketState::Open;
        self.last_error = None;
        if let Some(run) = &self.run {
            let (lesson, target) = (run.lesson, run.target.max(run.results.len()));
            self.start_lesson(lesson);
            if let Some(run) = self.run.as_mut() {
                run.target = target;
            }
        }
    }

    /// The socket closed or failed.
    pub fn lost(&mut self, reason: String) {
        let attempt = self.attempt();
        self.link = SocketState::Lost { reason, attempt };
        self.outbox.clear();
        // Replies that will never come.
        for t in self.typed.iter_mut().filter(|t| !t.answered) {
            t.answered = true;
            t.exchange.output = "(error) the connection to the lab backend was lost".to_owned();
        }
        if let Some(run) = self.run.as_mut() {
            run.asked = run.results.len();
        }
    }

    /// `/api/health` answered (or could not be read).
    pub fn health_result(&mut self, result: Result<Health, String>) {
        match result {
            Ok(h) => {
                self.health = Some(h);
                self.health_error = None;
            }
            Err(e) => self.health_error = Some(e),
        }
    }

    /// What is wrong, for the banner: the backend or Redis gone.
    pub fn problem(&self) -> Option<String> {
        if let SocketState::Lost { reason, .. } = &self.link {
            return Some(reason.clone());
        }
        if let Some(e) = &self.health_error {
            return Some(e.clone());
        }
        match &self.health {
            Some(h) if !h.reachable => Some(
                h.error
                    .clone()
                    .unwrap_or_else(|| "redis-server is not reachable".to_owned()),
            ),
            _ => None,
        }
    }

    /// Play `lesson` on the backend from the start.
    pub fn start_lesson(&mut self, lesson: &'static PageLesson) {
        self.typed.clear();
        let trace_from = self.events.len();
        self.run = Some(Run {
            lesson,
            started: false,
            results: Vec::new(),
            notes: BTreeMap::new(),
            notice: None,
            server_version: String::new(),
            factor: 0,
            target: 0,
            asked: 0,
            passed: None,
            error: None,
            trace_from,
        });
        // Not open yet: `opened` sends it.
        self.send(ClientMsg::Lesson {
            id: lesson.id.clone(),
            factor: Some(self.factor),
            lang: (self.lang == Lang::Zh).then_some(Lang::Zh),
            // Not in the backend's catalogue: an explorer counterexample
            // goes whole, to be replayed on real servers.
            lesson: (lesson.id == locklab_core::lesson::COUNTEREXAMPLE_ID).then(|| Box::new(lesson.clone())),
        });
    }

    /// Back to the free lab (the lesson's session stays until the next one).
    pub fn close_lesson(&mut self) {
        self.run = None;
        self.typed.clear();
    }

    /// Ask for the next step if the user wants more than have arrived.
    fn pump(&mut self) {
        let Some(run) = self.run.as_mut() else { return };
        let want = run.target.min(run.lesson.steps.len());
        if !run.started || run.error.is_some() || run.asked >= want {
            return;
        }
        let more = want - run.asked;
        run.asked = want;
        for _ in 0..more {
            self.send(ClientMsg::LessonStep);
        }
    }

    /// A frame from the backend.
    // long: one arm per server message the protocol declares
    pub fn receive(&mut self, text: &str) {
        let msg = match serde_json::from_str::<ServerMsg>(text) {
            Ok(m) => m,
            Err(e) => {
                self.last_error = Some(format!("the backend sent a message this page cannot read: {e}"));
                return;
            }
        };
        match msg {
            ServerMsg::Hello {
                session,
                prefix,
                topology,
                nodes,
                names,
            } => {
                self.session = Some(SessionInfo {
                    id: session,
                    prefix,
                    topology,
                    nodes,
                });
                self.names = names;
                self.events.clear();
                if let Some(run) = self.run.as_mut() {
                    run.trace_from = 0;
                }
            }
            ServerMsg::Event { event } => locklab_core::trace::append_streamed(&mut self.events, event),
            ServerMsg::Names { names } => self.names = names,
            ServerMsg::Topology { kind, nodes } => {
                if let Some(s) = self.session.as_mut() {
                    s.topology = kind;
                    s.nodes = nodes;
                }
            }
            ServerMsg::Reply { client, text } => {
                if let Some(t) = self.typed.iter_mut().find(|t| !t.answered && t.client == client) {
                    t.answered = true;
                    t.exchange.output = text.trim_end_matches(['\r', '\n']).to_owned();
                }
            }
            ServerMsg::Error { message } => {
                // An error answers whatever was waiting: the lesson's start
                // or step, else a typed line, else nobody in particular.
                if let Some(run) = self.run.as_mut().filter(|r| !r.started || r.asked > r.results.len()) {
                    run.error = Some(message);
                    run.asked = run.results.len();
                } else if let Some(t) = self.typed.iter_mut().find(|t| !t.answered) {
                    t.answered = true;
                    t.exchange.output = format!("(error) {message}");
                } else {
                    self.last_error = Some(message);
                }
            }
            ServerMsg::Lesson {
                id,
                server_version,
                factor,
                topology,
                nodes,
                names,
                notice,
                ..
            } => {
                if let Some(run) = self.run.as_mut().filter(|r| r.lesson.id == id) {
                    run.started = true;
                    run.server_version = server_version;
                    run.factor = factor;
                    run.notice = notice;
                    run.error = None;
                }
                self.names = names;
                if let Some(s) = self.session.as_mut() {
                    s.topology = topology;
                    s.nodes = nodes;
                }
                self.pump();
            }
            ServerMsg::Step { result, note } => {
                if let Some(run) = self.run.as_mut() {
                    if let Some(note) = note {
                        run.notes.insert(result.index, note);
                    }
                    run.results.push(result);
                }
                self.pump();
            }
            ServerMsg::LessonDone { passed } => {
                if let Some(run) = self.run.as_mut() {
                    run.passed = Some(passed);
                }
            }
            ServerMsg::Unknown => {}
        }
    }

    /// A typed line for `client`, on the backend's session.
    pub fn type_line(&mut self, client: &str, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        let h = self.history.entry(client.to_owned()).or_default();
        if h.last().map(String::as_str) != Some(line) {
            h.push(line.to_owned());
        }
        let after_steps = self.run.as_ref().map_or(0, |r| r.results.len());
        let mut exchange = Exchange {
            prompt: PROMPT.to_owned(),
            line: line.to_owned(),
            output: String::new(),
            at_ms: 0,
        };
        let answered = if self.link == SocketState::Open {
            self.send(ClientMsg::Command {
                client: client.to_owned(),
                line: line.to_owned(),
                node: 0,
            });
            false
        } else {
            exchange.output = "(error) not connected to the lab backend".to_owned();
            true
        };
        self.typed.push(TypedLine {
            client: client.to_owned(),
            after_steps,
            exchange,
            answered,
        });
    }

    /// A fault on a managed node.
    pub fn fault(&mut self, fault: FaultKind, node: u32) {
        self.send(ClientMsg::Fault { fault, node });
    }

    /// Replace the managed topology.
    pub fn topology(&mut self, kind: TopologyKind) {
        self.run = None;
        self.typed.clear();
        self.send(ClientMsg::Topology { kind });
    }

    /// The free lab's console for `client`.
    pub fn free_transcript(&self, client: &str) -> Vec<Exchange> {
        self.typed
            .iter()
            .filter(|t| t.client == client)
            .map(|t| t.exchange.clone())
            .collect()
    }

    pub fn client_history(&self, client: &str) -> &[String] {
        self.history.get(client).map_or(&[], Vec::as_slice)
    }

    /// Everything this tab's session did (the free lab's timeline).
    pub fn session_trace(&self) -> Trace {
        Trace {
            names: self.names.clone(),
            events: self.events.clone(),
        }
    }

    /// The newest event's time: the timeline's "now".
    pub fn last_ms(&self) -> u64 {
        self.events.last().map_or(0, |e| e.at_ms)
    }

    /// `7.0.15 · ×100`: what the lesson runs on.
    pub fn run_info(&self) -> Option<(String, u64)> {
        self.run
            .as_ref()
            .filter(|r| r.started)
            .map(|r| (r.server_version.clone(), r.factor))
    }

    fn run(&self) -> Option<&Run> {
        self.run.as_ref()
    }
}

/// The lesson the driver runs. Only meaningful between `start_lesson` and `close_lesson`.
impl LessonDriver for RealDriver {
    fn lesson(&self) -> &'static PageLesson {
        self.run()
            .map(|r| r.lesson)
            .expect("the real driver is a lesson driver only while it runs a lesson")
    }

    fn position(&self) -> usize {
        self.run().map_or(0, |r| r.results.len())
    }

    fn results(&self) -> &[StepResult] {
        self.run().map_or(&[], |r| r.results.as_slice())
    }

    fn outcome(&self) -> Option<bool> {
        let run = self.run()?;
        if run.results.len() < run.lesson.steps.len() {
            return None;
        }
        Some(run.passed.unwrap_or_else(|| run.results.iter().all(|r| r.ok)))
    }

    fn error(&self) -> Option<String> {
        self.run().and_then(|r| r.error.clone())
    }

    fn notice(&self) -> Option<String> {
        self.run().and_then(|r| r.notice.clone())
    }

    fn step_note(&self, index: usize) -> Option<String> {
        self.run().and_then(|r| r.notes.get(&index).cloned())
    }

    fn step_text(&self, index: usize, lang: Lang) -> String {
        let Some(run) = self.run() else { return String::new() };
        match run.results.get(index) {
            // English as the backend sent it (it knows the real tokens).
            Some(r) if lang == Lang::En => r.shown.clone(),
            _ => super::step_text(run.lesson, index, &BTreeMap::new(), &self.names, lang),
        }
    }

    fn trace(&self) -> Trace {
        let from = self.run().map_or(0, |r| r.trace_from).min(self.events.len());
        Trace {
            names: self.names.clone(),
            events: self.events[from..].to_vec(),
        }
    }

    fn now_ms(&self) -> u64 {
        let last_step = self.results().last().map_or(0, |r| r.at_ms);
        last_step.max(self.last_ms())
    }

    fn history(&self, actor: usize) -> &[String] {
        self.actors().get(actor).map_or(&[], |a| self.client_history(a))
    }

    fn transcript(&self, actor: usize) -> Vec<Exchange> {
        let Some(run) = self.run() else { return Vec::new() };
        let Some(name) = run.lesson.actors.get(actor) else {
            return Vec::new();
        };
        // The lesson's own commands for this actor, then the typed lines,
        // each in its place between steps.
        let mut out: Vec<(usize, u8, Exchange)> = command_rows(run.lesson, &run.results, name, PROMPT)
            .map(|(r, exchange)| (r.index + 1, 0, exchange))
            .collect();
        out.extend(
            self.typed
                .iter()
                .filter(|t| &t.client == name)
                .map(|t| (t.after_steps, 1, t.exchange.clone())),
        );
        out.sort_by_key(|(n, k, _)| (*n, *k));
        out.into_iter().map(|(_, _, e)| e).collect()
    }

    fn prompt(&self) -> String {
        PROMPT.to_owned()
    }

    /// The backend has not accepted the lesson yet, or a step the user
    /// asked for has not arrived.
    fn is_busy(&self) -> bool {
        self.run().is_some_and(|r| {
            r.error.is_none()
                && (!r.started || r.asked > r.results.len() || r.results.len() < r.target.min(r.lesson.steps.len()))
        })
    }

    fn forward(&mut self) -> bool {
        let Some(run) = self.run.as_mut() else { return false };
        if run.error.is_some() || run.results.len() >= run.lesson.steps.len() {
            return false;
        }
        // Presses while a step is on its way add up: three presses, three steps.
        run.target = (run.target.max(run.results.len()) + 1).min(run.lesson.steps.len());
        self.pump();
        true
    }

    fn goto(&mut self, n: usize) {
        let Some(run) = self.run.as_ref() else { return };
        let n = n.min(run.lesson.steps.len());
        if n < run.results.len() || run.error.is_some() {
            // Real time cannot be rewound: start again and play to n.
            let lesson = run.lesson;
            self.start_lesson(lesson);
        }
        if let Some(run) = self.run.as_mut() {
            run.target = n;
        }
        self.pump();
    }

    fn run_line(&mut self, actor: usize, line: &str) {
        let Some(name) = self.run().and_then(|r| r.lesson.actors.get(actor).cloned()) else {
            return;
        };
        self.type_line(&name, line);
    }

    fn advance(&mut self, _ms: u64) {}

    fn has_virtual_clock(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests;
