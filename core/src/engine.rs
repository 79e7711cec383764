//! The seam between the page and the simulator: what the page asks of a
//! lesson [`LessonSession`] or the free-play [`FreeLab`], and what it gets back.
//!
//! The simulator (the world, the nodes, the Lua VM) is most of locklab's
//! wasm, and the page does not link it: it lives in the engine's own module
//! (the `engine` crate), which the page loads when a lesson is first played
//! on the simulator, and which the explore screen's Web Worker runs too. The
//! page sends a [`Move`] (or a [`LabMove`]) and reads back a [`SessionView`]
//! (or a [`LabView`]): everything its views draw, as core's own serde
//! types. The two modules share no memory, so everything crosses as JSON;
//! the [`TraceDelta`] keeps that to what changed, since a trace is mostly
//! the same from one step to the next.
//!
//! [`LessonEngine`] and [`LabEngine`] are the engine's side. They are plain
//! Rust, so the page's native tests drive the very same code the browser
//! reaches through the engine module.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::actor::Names;
use crate::fault::Fault;
use crate::lab::{Client, Exchange, FreeLab};
use crate::lesson::run::StepResult;
use crate::lesson::session::{ClientInfo, LessonSession, Made, NodeInfo};
use crate::lesson::worded::PageLesson;
use crate::trace::{Event, Trace};

/// Open a lesson at `pos` steps done. The lesson comes as the page holds
/// it, its programs worded, not decoded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Open {
    pub lesson: PageLesson,
    pub seed: u64,
    pub pos: usize,
}

/// A move on a lesson session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "move", rename_all = "snake_case")]
pub enum Move {
    /// One step forward.
    Forward,
    /// To `n` steps done (back is a replay).
    Goto { n: usize },
    /// A line typed off script at an actor's console.
    Line { actor: usize, line: String },
    /// A fault from the toolbox, now.
    Fault { fault: Fault },
    /// Let `ms` of world time pass.
    Advance { ms: u64 },
}

/// A move in the free-play lab.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "move", rename_all = "snake_case")]
pub enum LabMove {
    Line { client: Client, line: String },
    Advance { ms: u64 },
}

/// How the trace changed since the last view: keep the first `keep` events
/// the page has, then append `events`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceDelta {
    pub names: Names,
    pub keep: usize,
    pub events: Vec<Event>,
}

impl TraceDelta {
    /// Bring `trace` (what the page had) up to date.
    pub fn apply(self, trace: &mut Trace) {
        trace.names = self.names;
        trace.events.truncate(self.keep);
        trace.events.extend(self.events);
    }
}

/// The trace as the page has it, on the engine's side, to send only what changed.
#[derive(Default)]
struct Sent {
    events: Vec<Event>,
}

impl Sent {
    fn delta(&mut self, now: Trace) -> TraceDelta {
        let keep = self.events.iter().zip(&now.events).take_while(|(a, b)| a == b).count();
        let events = now.events[keep..].to_vec();
        self.events = now.events;
        TraceDelta {
            names: now.names,
            keep,
            events,
        }
    }
}

/// Everything the page shows of a lesson session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    /// Steps done.
    pub position: usize,
    pub results: Vec<StepResult>,
    /// The verdict once the lesson is over.
    pub outcome: Option<bool>,
    /// Why the run cannot go on, if it cannot.
    pub error: Option<String>,
    /// Why the move asked for was refused (a fault the world cannot take).
    pub refused: Option<String>,
    /// The off-script actions the run carries, oldest first.
    pub off_script: Vec<Made>,
    /// The fencing token each write step that ran carried (for its wording).
    pub write_tokens: BTreeMap<usize, Option<i64>>,
    pub trace: TraceDelta,
    pub now_ms: u64,
    /// Each actor's console, and the lines typed there (for ↑/↓).
    pub transcripts: Vec<Vec<Exchange>>,
    pub history: Vec<Vec<String>>,
    /// The fault toolbox's lists.
    pub nodes: Vec<NodeInfo>,
    pub clients: Vec<ClientInfo>,
    pub master: u32,
}

/// A lesson session on the engine's side of the seam.
pub struct LessonEngine {
    session: LessonSession,
    sent: Sent,
}

impl LessonEngine {
    pub fn open(open: Open) -> Result<LessonEngine, String> {
        Ok(LessonEngine {
            session: LessonSession::new(open.lesson.decoded().map_err(|e| e.to_string())?, open.seed, open.pos)?,
            sent: Sent::default(),
        })
    }

    /// Carry out `m` and say what the page shows now.
    pub fn act(&mut self, m: Move) -> SessionView {
        let s = &mut self.session;
        let refused = match m {
            Move::Forward => {
                s.forward();
                None
            }
            Move::Goto { n } => {
                s.goto(n);
                None
            }
            Move::Line { actor, line } => {
                s.run_line(actor, &line);
                None
            }
            Move::Fault { fault } => s.inject(fault).err(),
            Move::Advance { ms } => {
                s.advance(ms);
                None
            }
        };
        SessionView { refused, ..self.view() }
    }

    /// What the page shows now; the trace as a delta from the last view.
    pub fn view(&mut self) -> SessionView {
        let s = &self.session;
        let actors = s.lesson().actors.len();
        SessionView {
            position: s.position(),
            results: s.results().to_vec(),
            outcome: s.outcome(),
            error: s.error().map(str::to_owned),
            refused: None,
            off_script: s.off_script().cloned().collect(),
            write_tokens: s.run().write_tokens().clone(),
            trace: self.sent.delta(s.trace()),
            now_ms: s.now_ms(),
            transcripts: (0..actors).map(|a| s.transcript(a)).collect(),
            history: (0..actors).map(|a| s.history(a).to_vec()).collect(),
            nodes: s.nodes(),
            clients: s.clients(),
            master: s.master(),
        }
    }
}

/// Everything the page shows of the free-play lab.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LabView {
    pub now_ms: u64,
    /// By client (A, B, C): the prompt, the console, the lines typed.
    pub prompts: Vec<String>,
    pub transcripts: Vec<Vec<Exchange>>,
    pub history: Vec<Vec<String>>,
    pub trace: TraceDelta,
}

/// The free-play lab on the engine's side of the seam.
#[derive(Default)]
pub struct LabEngine {
    lab: FreeLab,
    sent: Sent,
}

impl LabEngine {
    pub fn new() -> LabEngine {
        LabEngine::default()
    }

    pub fn act(&mut self, m: LabMove) -> LabView {
        match m {
            LabMove::Line { client, line } => self.lab.run(client, &line),
            LabMove::Advance { ms } => self.lab.advance(ms),
        }
        self.view()
    }

    pub fn view(&mut self) -> LabView {
        let lab = &self.lab;
        LabView {
            now_ms: lab.now_ms(),
            prompts: Client::ALL.iter().map(|&c| lab.prompt(c)).collect(),
            transcripts: Client::ALL.iter().map(|&c| lab.transcript(c).to_vec()).collect(),
            history: Client::ALL.iter().map(|&c| lab.history(c).to_vec()).collect(),
            trace: self.sent.delta(lab.trace().clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_keeps_the_common_prefix_and_sends_the_rest() {
        let mut lab = LabEngine::new();
        let mut page = Trace::default();
        lab.act(LabMove::Line {
            client: Client::A,
            line: "SET k v".into(),
        })
        .trace
        .apply(&mut page);
        let first = page.events.len();
        assert!(first > 0);
        let v = lab.act(LabMove::Line {
            client: Client::B,
            line: "GET k".into(),
        });
        assert_eq!(v.trace.keep, first, "only the new events cross");
        v.trace.apply(&mut page);
        assert_eq!(&page, lab.lab.trace());
        assert_eq!(v.transcripts[1][0].output, "\"v\"");
    }

    /// What crosses the seam is data from the page: a lesson that does not
    /// build is an error, and a position or move past the end stops at the
    /// end; nothing panics.
    #[test]
    fn bad_openings_and_moves_are_answered_not_panicked_on() {
        let lessons = crate::lesson::builtin().expect("the catalogue");
        let lesson = crate::lesson::find(&lessons, "07").expect("lesson 07").clone();
        let mut broken = lesson.clone();
        broken.steps[0].cmd = None;
        let open = |lesson: crate::lesson::Lesson, pos| Open {
            lesson: lesson.worded(),
            seed: 1,
            pos,
        };
        assert!(LessonEngine::open(open(broken, 0)).is_err(), "a step that does nothing");
        let len = lesson.steps.len();
        let mut e = LessonEngine::open(open(lesson, usize::MAX)).expect("opens");
        assert_eq!(e.view().position, len, "a position past the end is the end");
        assert_eq!(e.act(Move::Goto { n: usize::MAX }).position, len);
        assert_eq!(e.act(Move::Forward).position, len, "nothing after the end");
        let v = e.act(Move::Line {
            actor: 99,
            line: "DEL x".into(),
        });
        assert!(
            v.transcripts.iter().all(|t| t.iter().all(|x| x.line != "DEL x")),
            "no such actor"
        );
        let v = e.act(Move::Fault {
            fault: Fault::CrashNode { node: 9 },
        });
        assert!(v.refused.is_some(), "a node the world does not have");
        let v = e.act(Move::Line {
            actor: 0,
            line: "EVAL 'while true do end' 0".into(),
        });
        let out = &v.transcripts[0].last().expect("a row").output;
        assert!(
            out.contains("runaway script; Redis would reply BUSY"),
            "a runaway script is stopped: {out}"
        );
    }
}
