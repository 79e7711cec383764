//! A lesson being played on the simulator: core's [`LessonRun`] plus what
//! the user did off script on the same world.
//!
//! Stepping forward is `run.step()`. Every other move — back, restart, a
//! scrub to step n, a reload with `?step=n` — is a replay: a fresh
//! `LessonRun` stepped to n. The simulator is deterministic, so replaying is
//! how the lab goes back in time.
//!
//! What the user does off script — a line typed in a console, a fault from
//! the toolbox, a move of the clock — goes to the same world and is kept in
//! the session's history, each with the step position it was made at. A
//! replay to step n re-applies, in order, every recorded action made at a
//! position ≤ n, right after the step it followed, so the world (and the
//! console transcript) come back exactly as they were. Actions made after n
//! stay in the history while the user only moves — stepping forward again
//! brings them back, like redo — and are dropped when the user does
//! something new at n: a new action truncates the future, as in an editor's
//! undo history.
//!
//! The page plays a session through [`crate::engine`], from the engine's
//! wasm module; the page's own module links none of this.

use serde::{Deserialize, Serialize};

use super::run::{LessonRun, StepResult};
use super::{Lesson, StepKind};
use crate::console;
use crate::fault::Fault;
use crate::lab::Exchange;
use crate::server::Role;
use crate::trace::Trace;
use crate::Reply;

/// The prompt a lesson console shows (the lesson's node, as redis-cli names it).
pub const PROMPT: &str = "127.0.0.1:6379> ";

/// Something the user did off script.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffScript {
    /// A line typed at an actor's console (by index into the lesson's actors).
    Line { actor: usize, line: String },
    /// A fault from the toolbox.
    Fault(Fault),
    /// The clock moved forward by this many ms.
    Advance(u64),
}

/// `actor`'s own commands among a run's `results`, as its console shows
/// them (after `prompt`), each with the result it came from: the caller
/// places them among the lines typed off script. Both drivers' consoles.
pub fn command_rows<'a, P>(
    lesson: &'a Lesson<P>,
    results: &'a [StepResult],
    actor: &'a str,
    prompt: &'a str,
) -> impl Iterator<Item = (&'a StepResult, Exchange)> + 'a {
    results
        .iter()
        .filter(move |r| {
            let is_cmd = matches!(
                lesson.steps.get(r.index).map(|s| s.kind()),
                Some(Ok(StepKind::Cmd { .. }))
            );
            is_cmd && r.actor.as_deref() == Some(actor)
        })
        .map(move |r| {
            let exchange = Exchange {
                prompt: prompt.to_owned(),
                line: r.shown.clone(),
                output: r.reply.clone().unwrap_or_default(),
                at_ms: r.at_ms,
            };
            (r, exchange)
        })
}

/// A node as the fault toolbox lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub index: u32,
    pub name: String,
    pub down: bool,
    pub replica: bool,
}

/// A client as the fault toolbox lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    pub name: String,
    pub paused: bool,
    pub crashed: bool,
}

/// An off-script action and when it was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Made {
    /// Steps done when it was made: a replay applies it right after that step.
    pub pos: usize,
    /// World time when it was made. A replay reproduces it (tested), so it
    /// is what the console shows, not an input.
    pub at_ms: u64,
    pub action: OffScript,
}

/// An off-script action in the session's history.
#[derive(Clone, Debug)]
struct Recorded {
    made: Made,
    /// For a line: what the console printed, and the trace length after it
    /// (where it sits among the lesson's own commands). Filled in each time
    /// the action is applied.
    shown: Option<(usize, Exchange)>,
}

pub struct LessonSession {
    lesson: Lesson,
    seed: u64,
    run: LessonRun,
    /// Off-script actions, in the order made; sorted by `pos`, because a new
    /// action drops every one made at a later position. The ones with
    /// `pos <= position()` are applied to `run`, the rest wait for a redo.
    log: Vec<Recorded>,
    history: Vec<Vec<String>>,
    /// Why the run could not be built or stepped, if it could not.
    error: Option<String>,
}

impl LessonSession {
    /// `lesson` at `pos` steps done; an error for a lesson that does not
    /// build at all.
    pub fn new(lesson: Lesson, seed: u64, pos: usize) -> Result<LessonSession, String> {
        let (run, error) = match LessonRun::at_step(&lesson, seed, pos) {
            Ok(run) => (run, None),
            Err(e) => (
                LessonRun::with_seed(&lesson, seed).map_err(|e| e.to_string())?,
                Some(e.to_string()),
            ),
        };
        Ok(LessonSession {
            history: vec![Vec::new(); lesson.actors.len()],
            lesson,
            seed,
            run,
            log: Vec::new(),
            error,
        })
    }

    pub fn lesson(&self) -> &Lesson {
        &self.lesson
    }

    pub fn run(&self) -> &LessonRun {
        &self.run
    }

    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    pub fn len(&self) -> usize {
        self.lesson.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lesson.steps.is_empty()
    }

    /// Steps done.
    pub fn position(&self) -> usize {
        self.run.position()
    }

    pub fn is_finished(&self) -> bool {
        self.run.is_finished()
    }

    pub fn results(&self) -> &[StepResult] {
        self.run.results()
    }

    /// The verdict once the lesson is over: did the run show what the
    /// lesson says it shows?
    pub fn outcome(&self) -> Option<bool> {
        self.is_finished().then(|| self.run.outcome().ok)
    }

    /// Go to `n` steps done: forward by stepping, back by a replay. Either
    /// way the off-script actions recorded up to `n` are applied.
    pub fn goto(&mut self, n: usize) {
        let n = n.min(self.len());
        if n == self.position() {
            return;
        }
        if n > self.position() && self.error.is_none() {
            while self.position() < n {
                if !self.forward() {
                    break;
                }
            }
            return;
        }
        self.replay(n);
    }

    /// A fresh run to `n` steps, re-applying the recorded actions on the way.
    fn replay(&mut self, n: usize) {
        self.error = None;
        self.run = match LessonRun::with_seed(&self.lesson, self.seed) {
            Ok(run) => run,
            Err(e) => {
                self.error = Some(e.to_string());
                return;
            }
        };
        self.apply_recorded();
        while self.position() < n && self.forward() {}
    }

    /// One step forward, then the recorded actions made right after it;
    /// false at the end or on an error.
    pub fn forward(&mut self) -> bool {
        match self.run.step() {
            Ok(Some(_)) => {
                self.apply_recorded();
                true
            }
            Ok(None) => false,
            Err(e) => {
                self.error = Some(e.to_string());
                false
            }
        }
    }

    /// Apply the recorded actions made at the current position.
    fn apply_recorded(&mut self) {
        let pos = self.position();
        for i in 0..self.log.len() {
            if self.log[i].made.pos == pos {
                let action = self.log[i].made.action.clone();
                // It worked when it was made, and the world is as it was then.
                let shown = self.apply(&action).ok().flatten();
                self.log[i].shown = shown;
            }
        }
    }

    /// Do an off-script action now and record it, dropping the actions a
    /// step back had left for a redo. Nothing is recorded if the world
    /// refuses it.
    fn record(&mut self, action: OffScript) -> Result<(), String> {
        let pos = self.position();
        let at_ms = self.now_ms();
        let shown = self.apply(&action)?;
        self.log.retain(|r| r.made.pos <= pos);
        self.log.push(Recorded {
            made: Made { pos, at_ms, action },
            shown,
        });
        Ok(())
    }

    /// Carry out an action on the world; a line gives its console row.
    fn apply(&mut self, action: &OffScript) -> Result<Option<(usize, Exchange)>, String> {
        match action {
            OffScript::Line { actor, line } => Ok(Some(self.send_line(*actor, line))),
            OffScript::Fault(fault) => {
                self.run.world_mut().inject(fault.clone()).map_err(|e| e.to_string())?;
                let now = self.run.world().now();
                self.run.world_mut().advance_to(now);
                Ok(None)
            }
            OffScript::Advance(ms) => {
                let t = self.run.world().now() + ms;
                self.run.world_mut().advance_to(t);
                Ok(None)
            }
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.run.world().now()
    }

    pub fn trace(&self) -> Trace {
        self.run.world().to_trace()
    }

    pub fn history(&self, actor: usize) -> &[String] {
        self.history.get(actor).map_or(&[], Vec::as_slice)
    }

    /// A line typed at `actor`'s console, on the lesson's world, to its master.
    pub fn run_line(&mut self, actor: usize, line: &str) {
        if actor >= self.lesson.actors.len() || line.trim().is_empty() {
            return;
        }
        if let Some(h) = self.history.get_mut(actor) {
            if h.last().map(String::as_str) != Some(line) {
                h.push(line.to_owned());
            }
        }
        if console::read(line.as_bytes(), console::Limits::BROWSER) == console::Typed::Empty {
            return;
        }
        let _ = self.record(OffScript::Line {
            actor,
            line: line.to_owned(),
        });
    }

    /// Send a line to the world as `actor`: its console row, and the trace
    /// length after it.
    fn send_line(&mut self, actor: usize, line: &str) -> (usize, Exchange) {
        let name = self.lesson.actors[actor].clone();
        // Core's one console path, as the free lab's: a repeat prefix
        // (`3 INCR n`) repeats the command rather than sending `3`.
        let client = self.run.client(&name);
        let node = self.run.world().master();
        let output = console::run(line.as_bytes(), console::Limits::BROWSER, |argv| match client {
            Some(c) => match self.run.world_mut().request(c, node, argv.to_vec()) {
                Ok(reply) => reply,
                Err(e) => Some(Reply::Error(e.to_string())),
            },
            None => Some(Reply::Error(format!("no client {name}"))),
        });
        let output = output.trim_end_matches(['\r', '\n']).to_owned();
        let exchange = Exchange {
            prompt: PROMPT.to_owned(),
            line: line.to_owned(),
            output,
            at_ms: self.now_ms(),
        };
        (self.run.world().trace().len(), exchange)
    }

    /// Apply a fault now, as the fault toolbox asks.
    pub fn inject(&mut self, fault: Fault) -> Result<(), String> {
        self.record(OffScript::Fault(fault))
    }

    /// Let `ms` of world time pass (the clock buttons).
    pub fn advance(&mut self, ms: u64) {
        let _ = self.record(OffScript::Advance(ms));
    }

    /// The off-script actions applied to the world now, oldest first.
    pub fn off_script(&self) -> impl Iterator<Item = &Made> {
        let pos = self.position();
        self.log.iter().filter(move |r| r.made.pos <= pos).map(|r| &r.made)
    }

    /// What `actor`'s console shows: the lesson's commands for that client
    /// (with their replies) and the lines typed off script, in order.
    pub fn transcript(&self, actor: usize) -> Vec<Exchange> {
        let Some(name) = self.lesson.actors.get(actor) else {
            return Vec::new();
        };
        let mut rows: Vec<(usize, usize, Exchange)> = command_rows(&self.lesson, self.results(), name, PROMPT)
            .map(|(r, exchange)| (r.trace_len, 0, exchange))
            .collect();
        let pos = self.position();
        for r in self.log.iter().filter(|r| r.made.pos <= pos) {
            if let (OffScript::Line { actor: a, .. }, Some((trace_len, exchange))) = (&r.made.action, &r.shown) {
                if *a == actor {
                    rows.push((*trace_len, 1, exchange.clone()));
                }
            }
        }
        rows.sort_by_key(|(len, k, _)| (*len, *k));
        rows.into_iter().map(|(_, _, e)| e).collect()
    }

    /// The world's nodes, for the fault toolbox.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        let w = self.run.world();
        (0..w.node_count())
            .filter_map(|i| {
                let st = w.node_state(i)?;
                Some(NodeInfo {
                    index: i,
                    name: w.names().node(i).to_owned(),
                    down: st.down,
                    replica: st.role == Role::Replica,
                })
            })
            .collect()
    }

    /// The lesson's clients, for the fault toolbox.
    pub fn clients(&self) -> Vec<ClientInfo> {
        self.lesson
            .actors
            .iter()
            .map(|name| {
                let st = self.run.client(name).and_then(|c| self.run.world().client_state(c));
                ClientInfo {
                    name: name.clone(),
                    paused: st.is_some_and(|s| s.paused),
                    crashed: st.is_some_and(|s| s.crashed),
                }
            })
            .collect()
    }

    pub fn master(&self) -> u32 {
        self.run.world().master()
    }
}
