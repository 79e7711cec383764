//! A lesson being played in the page: core's [`LessonRun`] plus what the
//! user typed off script on the same world.
//!
//! Stepping forward is `run.step()`. Every other move — back, restart, a
//! scrub to step n, a reload with `?step=n` — is a fresh
//! `LessonRun::at_step(lesson, seed, n)`: the simulator is deterministic, so
//! replaying is how the lab goes back in time. Lines typed in the console go
//! to the same world (`world_mut().request`) and appear in the trace; a
//! replay starts from the lesson alone, so they are gone after a step back
//! (the user is told so in the console hint).

use locklab_core::cli;
use locklab_core::lesson::run::{LessonRun, StepResult};
use locklab_core::lesson::{Lesson, StepKind};
use locklab_core::trace::Trace;
use locklab_core::world::Fault;

use crate::lab::Exchange;

/// The prompt a lesson console shows (the lesson's node, as redis-cli names it).
pub const PROMPT: &str = "127.0.0.1:6379> ";

/// Where the URL's `step=` puts the run: a number of steps done, or `end`.
pub fn parse_step(step: Option<&str>, len: usize) -> usize {
    match step {
        None => 0,
        Some("end") => len,
        Some(n) => n.parse::<usize>().map_or(0, |n| n.min(len)),
    }
}

/// The URL's `step=` for a position: none at the start, `end` at the end.
pub fn step_param(pos: usize, len: usize) -> Option<String> {
    if pos == 0 {
        None
    } else if pos >= len {
        Some("end".to_owned())
    } else {
        Some(pos.to_string())
    }
}

/// A line typed off script, and when (trace length after it).
#[derive(Clone, Debug)]
struct Typed {
    actor: usize,
    trace_len: usize,
    exchange: Exchange,
}

pub struct Session {
    pub lesson: &'static Lesson,
    pub seed: u64,
    run: LessonRun,
    typed: Vec<Typed>,
    history: Vec<Vec<String>>,
    /// Why the run could not be built or stepped, if it could not.
    pub error: Option<String>,
}

impl Session {
    /// The lesson at `pos` steps done.
    pub fn new(lesson: &'static Lesson, seed: u64, pos: usize) -> Session {
        let (run, error) = match LessonRun::at_step(lesson, seed, pos) {
            Ok(run) => (run, None),
            Err(e) => (LessonRun::with_seed(lesson, seed).expect("a lesson that validates builds"), Some(e.to_string())),
        };
        Session { lesson, seed, run, typed: Vec::new(), history: vec![Vec::new(); lesson.actors.len()], error }
    }

    pub fn run(&self) -> &LessonRun {
        &self.run
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

    /// Replay to `n` steps done.
    pub fn goto(&mut self, n: usize) {
        let n = n.min(self.len());
        if n == self.position() && self.typed.is_empty() {
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
        let history = std::mem::take(&mut self.history);
        *self = Session::new(self.lesson, self.seed, n);
        self.history = history;
    }

    /// One step forward; false at the end or on an error.
    pub fn forward(&mut self) -> bool {
        match self.run.step() {
            Ok(Some(_)) => true,
            Ok(None) => false,
            Err(e) => {
                self.error = Some(e.to_string());
                false
            }
        }
    }

    pub fn back(&mut self) {
        self.goto(self.position().saturating_sub(1));
    }

    pub fn now_ms(&self) -> u64 {
        self.run.world().now()
    }

    pub fn trace(&self) -> Trace {
        self.run.world().to_trace()
    }

    pub fn actors(&self) -> &[String] {
        &self.lesson.actors
    }

    pub fn history(&self, actor: usize) -> &[String] {
        self.history.get(actor).map_or(&[], Vec::as_slice)
    }

    /// A line typed at `actor`'s console, on the lesson's world, to its master.
    pub fn run_line(&mut self, actor: usize, line: &str) {
        let Some(name) = self.lesson.actors.get(actor) else { return };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return;
        }
        if let Some(h) = self.history.get_mut(actor) {
            if h.last().map(String::as_str) != Some(line) {
                h.push(line.to_owned());
            }
        }
        let output = match cli::parse(line) {
            Err(e) => e.to_string(),
            Ok(argv) if argv.is_empty() => return,
            Ok(argv) => {
                let client = self.run.client(name);
                let node = self.run.world().master();
                match client.map(|c| self.run.world_mut().request(c, node, argv.clone())) {
                    Some(Ok(Some(reply))) => cli::render(&argv, &reply),
                    Some(Ok(None)) => locklab_core::lesson::run::NO_REPLY.to_owned(),
                    Some(Err(e)) => format!("(error) {e}"),
                    None => format!("(error) no client {name}"),
                }
            }
        };
        let output = output.trim_end_matches(['\r', '\n']).to_owned();
        let at_ms = self.now_ms();
        let trace_len = self.run.world().trace().len();
        self.typed.push(Typed {
            actor,
            trace_len,
            exchange: Exchange { prompt: PROMPT.to_owned(), line: line.to_owned(), output, at_ms },
        });
    }

    /// Apply a fault now, as the fault toolbox asks.
    pub fn inject(&mut self, fault: Fault) -> Result<(), String> {
        self.run.world_mut().inject(fault).map_err(|e| e.to_string())?;
        let now = self.run.world().now();
        self.run.world_mut().advance_to(now);
        Ok(())
    }

    /// What `actor`'s console shows: the lesson's commands for that client
    /// (with their replies) and the lines typed off script, in order.
    pub fn transcript(&self, actor: usize) -> Vec<Exchange> {
        let Some(name) = self.lesson.actors.get(actor) else { return Vec::new() };
        let mut rows: Vec<(usize, usize, Exchange)> = Vec::new();
        for r in self.results() {
            let is_cmd = matches!(self.lesson.steps[r.index].kind(), Ok(StepKind::Cmd { .. }));
            if is_cmd && r.actor.as_deref() == Some(name.as_str()) {
                let exchange = Exchange {
                    prompt: PROMPT.to_owned(),
                    line: r.shown.clone(),
                    output: r.reply.clone().unwrap_or_default(),
                    at_ms: r.at_ms,
                };
                rows.push((r.trace_len, 0, exchange));
            }
        }
        for t in self.typed.iter().filter(|t| t.actor == actor) {
            rows.push((t.trace_len, 1, t.exchange.clone()));
        }
        rows.sort_by_key(|(len, k, _)| (*len, *k));
        rows.into_iter().map(|(_, _, e)| e).collect()
    }
}

/// How a step reads before it has run.
pub fn preview(lesson: &Lesson, index: usize) -> String {
    let Some(step) = lesson.steps.get(index) else { return String::new() };
    match step.kind() {
        Ok(StepKind::Cmd { line, .. }) => line.to_owned(),
        Ok(StepKind::Wait(ms)) => format!("wait {ms} ms"),
        Ok(StepKind::Fault(f)) => {
            let json = fault_kind(f);
            format!("FAULT {json}")
        }
        Ok(StepKind::Program { .. }) => "program".to_owned(),
        Ok(StepKind::Write { write, .. }) => format!("write {:?} to the resource", write.value),
        Ok(StepKind::Hold { client, key, holds }) => {
            if holds {
                format!("({client} now believes it holds {key})")
            } else {
                format!("({client} no longer believes it holds {key})")
            }
        }
        Ok(StepKind::Say(t)) => t.en.trim().to_owned(),
        Ok(StepKind::Metrics(_)) => "metrics".to_owned(),
        Err(e) => e,
    }
}

/// A fault's kind in words, without a world to name its actors.
fn fault_kind(f: &Fault) -> String {
    let dbg = format!("{f:?}");
    dbg.split([' ', '{', '(']).next().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    #[test]
    fn lesson_07_replays_the_article() {
        let l = catalog::find("07").unwrap();
        let mut s = Session::new(l, 1, 0);
        while s.forward() {}
        let replies: Vec<_> = s.results().iter().filter_map(|r| r.reply.clone()).collect();
        assert_eq!(replies, ["OK", "(integer) 1", "OK", "(integer) 0", "\"token-B-222\""]);
        assert!(s.results().iter().all(|r| r.ok));
        assert_eq!(s.transcript(0).len(), 4);
        assert_eq!(s.transcript(1).len(), 1);
        s.run_line(1, "GET lock:order:1001");
        assert_eq!(s.transcript(1).last().unwrap().output, "\"token-B-222\"");
        s.back();
        assert_eq!(s.position(), 4);
        assert_eq!(s.transcript(1).len(), 1, "off-script lines are gone after a replay");
        s.goto(2);
        assert_eq!(s.position(), 2);
        s.goto(5);
        assert!(s.is_finished());
    }

    #[test]
    fn step_params_round_trip() {
        assert_eq!(parse_step(Some("end"), 9), 9);
        assert_eq!(parse_step(Some("3"), 9), 3);
        assert_eq!(parse_step(Some("30"), 9), 9);
        assert_eq!(parse_step(Some("x"), 9), 0);
        assert_eq!(step_param(0, 9), None);
        assert_eq!(step_param(3, 9).as_deref(), Some("3"));
        assert_eq!(step_param(9, 9).as_deref(), Some("end"));
    }

    #[test]
    fn lesson_05_ends_with_a_violation_and_lock_bars() {
        let l = catalog::find("05").unwrap();
        let s = Session::new(l, 7, l.steps.len());
        assert!(s.is_finished(), "{:?}", s.error);
        let trace = s.trace();
        let layout = crate::timeline::layout(&trace, s.now_ms(), crate::i18n::Lang::En);
        assert!(layout.bars.iter().filter(|b| !b.belief).count() >= 2);
        assert!(!layout.bands.is_empty(), "the overlap band");
    }
}

/// Does a prediction match the reply? Forgiving about what people leave
/// out: `1` for `(integer) 1`, `token-B-222` for `"token-B-222"`, `nil` for
/// `(nil)`, case and surrounding space.
pub fn prediction_matches(guess: &str, reply: &str) -> bool {
    fn norm(s: &str) -> String {
        let s = s.trim();
        let s = s.strip_prefix("(integer) ").unwrap_or(s);
        let s = s.trim_matches('"');
        let s = s.trim_start_matches('(').trim_end_matches(')');
        s.trim().to_ascii_lowercase()
    }
    !guess.trim().is_empty() && norm(guess) == norm(reply)
}

#[cfg(test)]
mod prediction_tests {
    use super::prediction_matches as m;

    #[test]
    fn predictions_are_read_generously() {
        assert!(m("1", "(integer) 1"));
        assert!(m("(integer) 0", "(integer) 0"));
        assert!(m("token-B-222", "\"token-B-222\""));
        assert!(m("nil", "(nil)"));
        assert!(m(" ok ", "OK"));
        assert!(!m("0", "(integer) 1"));
        assert!(!m("", "OK"));
    }
}

/// A node as the fault toolbox lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub index: u32,
    pub name: String,
    pub down: bool,
    pub replica: bool,
}

/// A client as the fault toolbox lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    pub name: String,
    pub paused: bool,
    pub crashed: bool,
}

impl Session {
    pub fn nodes(&self) -> Vec<NodeInfo> {
        let w = self.run.world();
        (0..w.node_count())
            .filter_map(|i| {
                let st = w.node_state(i)?;
                Some(NodeInfo {
                    index: i,
                    name: w.names().node(i).to_owned(),
                    down: st.down,
                    replica: st.role == locklab_core::server::Role::Replica,
                })
            })
            .collect()
    }

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

    /// Let `ms` of world time pass.
    pub fn advance(&mut self, ms: u64) {
        let t = self.run.world().now() + ms;
        self.run.world_mut().advance_to(t);
    }
}

#[cfg(test)]
mod fault_tests {
    use super::*;
    use crate::catalog;
    use locklab_core::trace::EventKind;

    #[test]
    fn toolbox_faults_land_in_the_trace() {
        let l = catalog::find("07").unwrap();
        let mut s = Session::new(l, 1, 1);
        s.inject(Fault::PauseClient { client: "A".into(), ms: None }).unwrap();
        assert!(s.clients()[0].paused);
        s.inject(Fault::ResumeClient { client: "A".into() }).unwrap();
        s.inject(Fault::CrashNode { node: 0 }).unwrap();
        assert!(s.nodes()[0].down);
        let faults = s.trace().events.iter().filter(|e| matches!(e.kind, EventKind::Fault { .. })).count();
        assert_eq!(faults, 3);
        let layout = crate::timeline::layout(&s.trace(), s.now_ms(), crate::i18n::Lang::En);
        assert!(layout.spans.iter().any(|sp| sp.kind == "paused" && !sp.open));
        assert!(layout.spans.iter().any(|sp| sp.kind == "down" && sp.open));
    }
}
