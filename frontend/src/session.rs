//! A lesson being played in the page: core's [`LessonRun`] plus what the
//! user did off script on the same world.
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
//! undo history. The history lives as long as the session (choosing a
//! lesson or reloading the page starts afresh: the URL carries the step,
//! not what was typed).

use locklab_core::console;
use locklab_core::fault::Fault;
use locklab_core::lesson::run::{LessonRun, StepResult};
use locklab_core::lesson::{Expect, Lesson, Step, StepKind};
use locklab_core::trace::Trace;
use locklab_core::Reply;

use crate::i18n::{self, Lang};
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

/// Something the user did off script.
#[derive(Clone, Debug, PartialEq)]
pub enum OffScript {
    /// A line typed at an actor's console (by index into the lesson's actors).
    Line { actor: usize, line: String },
    /// A fault from the toolbox.
    Fault(Fault),
    /// The clock moved forward by this many ms.
    Advance(u64),
}

/// An off-script action in the session's history.
#[derive(Clone, Debug)]
struct Recorded {
    /// Steps done when it was made: a replay applies it right after that step.
    pos: usize,
    /// World time when it was made. A replay reproduces it (tested), so it
    /// is what the console shows, not an input.
    at_ms: u64,
    action: OffScript,
    /// For a line: what the console printed, and the trace length after it
    /// (where it sits among the lesson's own commands). Filled in each time
    /// the action is applied.
    shown: Option<(usize, Exchange)>,
}

pub struct Session {
    pub lesson: &'static Lesson,
    pub seed: u64,
    run: LessonRun,
    /// Off-script actions, in the order made; sorted by `pos`, because a new
    /// action drops every one made at a later position. The ones with
    /// `pos <= position()` are applied to `run`, the rest wait for a redo.
    log: Vec<Recorded>,
    history: Vec<Vec<String>>,
    /// Why the run could not be built or stepped, if it could not.
    pub error: Option<String>,
}

impl Session {
    /// The lesson at `pos` steps done.
    pub fn new(lesson: &'static Lesson, seed: u64, pos: usize) -> Session {
        let (run, error) = match LessonRun::at_step(lesson, seed, pos) {
            Ok(run) => (run, None),
            Err(e) => (
                LessonRun::with_seed(lesson, seed).expect("a lesson that validates builds"),
                Some(e.to_string()),
            ),
        };
        Session {
            lesson,
            seed,
            run,
            log: Vec::new(),
            history: vec![Vec::new(); lesson.actors.len()],
            error,
        }
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
        self.run = match LessonRun::with_seed(self.lesson, self.seed) {
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
            if self.log[i].pos == pos {
                let action = self.log[i].action.clone();
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
        self.log.retain(|r| r.pos <= pos);
        self.log.push(Recorded {
            pos,
            at_ms,
            action,
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

    /// The off-script actions applied to the world now, with the step
    /// position and world time each was made at.
    pub fn off_script(&self) -> impl Iterator<Item = (usize, u64, &OffScript)> {
        let pos = self.position();
        self.log
            .iter()
            .filter(move |r| r.pos <= pos)
            .map(|r| (r.pos, r.at_ms, &r.action))
    }

    /// The off-script actions of this run, worded in `lang` for the
    /// outcome box ("A typed `DEL lock`", "r1 crashed", "clock +15 s").
    pub fn off_script_words(&self, lang: Lang) -> Vec<String> {
        let names = self.run().world().names();
        self.off_script()
            .map(|(_, _, action)| match action {
                OffScript::Line { actor, line } => {
                    let who = self.lesson.actors.get(*actor).map_or("?", String::as_str);
                    i18n::typed_off_script(who, line, lang)
                }
                OffScript::Fault(f) => match lang {
                    Lang::En => f.describe(names),
                    Lang::Zh => f.describe_zh(names),
                },
                OffScript::Advance(ms) => i18n::clock_moved(*ms, lang),
            })
            .collect()
    }

    /// What `actor`'s console shows: the lesson's commands for that client
    /// (with their replies) and the lines typed off script, in order.
    pub fn transcript(&self, actor: usize) -> Vec<Exchange> {
        let Some(name) = self.lesson.actors.get(actor) else {
            return Vec::new();
        };
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
        let pos = self.position();
        for r in self.log.iter().filter(|r| r.pos <= pos) {
            if let (OffScript::Line { actor: a, .. }, Some((trace_len, exchange))) = (&r.action, &r.shown) {
                if *a == actor {
                    rows.push((*trace_len, 1, exchange.clone()));
                }
            }
        }
        rows.sort_by_key(|(len, k, _)| (*len, *k));
        rows.into_iter().map(|(_, _, e)| e).collect()
    }
}

/// How step `index` reads in `lang`, before or after it ran: the command
/// line, or the world step worded by [`i18n::shown`].
pub fn step_text(run: &LessonRun, index: usize, lang: Lang) -> String {
    run.shown(index)
        .map(|s| i18n::shown(&s, run.world().names(), lang))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    /// Issue 15: the outcome box says when an off-script action changed
    /// the verdict, and names the action.
    #[test]
    fn an_off_script_del_that_breaks_lesson_06_is_named() {
        let l = catalog::find("06").unwrap();
        let mut s = Session::new(l, 1, 0);
        while s.forward() {}
        assert!(s.run().outcome().ok, "the scripted run is the article's");
        assert!(s.off_script_words(Lang::En).is_empty());
        s.goto(5);
        s.run_line(0, "DEL lock:order:1001");
        while s.forward() {}
        assert!(!s.run().outcome().ok, "A's DEL of B's lock is a wrong release");
        assert_eq!(s.off_script_words(Lang::En), ["A typed `DEL lock:order:1001`"]);
        assert_eq!(s.off_script_words(Lang::Zh), ["A 输入了 `DEL lock:order:1001`"]);
        let why = i18n::changed_by_off_script(
            &i18n::expected_outcome(&l.outcome, Lang::En),
            &s.off_script_words(Lang::En),
            Lang::En,
        );
        assert!(
            why.starts_with("Not what the article expects (no “lock deleted by a non-owner”), because of what you did off script: A typed `DEL lock:order:1001`."),
            "{why}"
        );
    }

    #[test]
    fn lesson_07_replays_the_article() {
        let l = catalog::find("07").unwrap();
        let mut s = Session::new(l, 1, 0);
        while s.forward() {}
        let replies: Vec<_> = s.results().iter().filter_map(|r| r.reply.clone()).collect();
        // The safe release of 6.2, then the dangerous bare DEL the title
        // promises (issue 17): it removes B's lock.
        assert_eq!(
            replies,
            [
                "OK",
                "(integer) 1",
                "OK",
                "(integer) 0",
                "\"token-B-222\"",
                "(integer) 1",
                "(nil)"
            ]
        );
        assert!(s.results().iter().all(|r| r.ok));
        // The bare DEL and its aftermath add one line to A and one to B.
        assert_eq!(s.transcript(0).len(), 5);
        assert_eq!(s.transcript(1).len(), 2);
        s.goto(2);
        assert_eq!(s.position(), 2);
        s.goto(l.steps.len());
        assert!(s.is_finished());
    }

    /// B's console after lesson 07's third step (B's SET), as a list of lines.
    fn lines(s: &Session, actor: usize) -> Vec<(String, String)> {
        s.transcript(actor).into_iter().map(|x| (x.line, x.output)).collect()
    }

    #[test]
    fn off_script_lines_come_back_after_a_step_back_and_forward() {
        let l = catalog::find("07").unwrap();
        let mut s = Session::new(l, 1, 3);
        s.run_line(1, "GET lock:order:1001");
        s.run_line(1, "PTTL lock:order:1001");
        let typed = lines(&s, 1);
        assert_eq!(typed.len(), 3);
        assert_eq!(typed[1].1, "\"token-B-222\"");
        let at: Vec<_> = s.off_script().map(|(pos, at_ms, _)| (pos, at_ms)).collect();
        s.forward();
        let at_4 = lines(&s, 1);

        s.back();
        assert_eq!(s.position(), 3);
        assert_eq!(lines(&s, 1), typed, "a step back keeps what was typed before it");
        s.goto(1);
        assert_eq!(lines(&s, 1), [], "back before the lines: not applied");
        assert_eq!(s.off_script().count(), 0);
        s.goto(4);
        assert_eq!(lines(&s, 1), at_4, "forward again: the same lines, the same replies");
        let again: Vec<_> = s.off_script().map(|(pos, at_ms, _)| (pos, at_ms)).collect();
        assert_eq!(again, at, "made at step 3, at the same world time");
        s.goto(0);
        s.goto(5);
        assert_eq!(
            s.transcript(0).last().unwrap().output,
            "\"token-B-222\"",
            "the lesson still ends as written"
        );
    }

    #[test]
    fn replays_reproduce_what_off_script_actions_did() {
        // A's compare-and-delete (step 4) fails if A's own lock expired
        // first: the clock and the console change the lesson's outcome, and
        // a replay must keep that.
        let l = catalog::find("07").unwrap();
        let mut s = Session::new(l, 1, 1);
        s.advance(20_000);
        s.run_line(1, "SET lock:order:1001 mine NX PX 60000");
        while s.forward() {}
        let end: Vec<_> = s.results().iter().map(|r| r.reply.clone()).collect();
        assert_ne!(
            end[4].as_deref(),
            Some("\"token-B-222\""),
            "B's SET at step 3 met B's own key"
        );
        let trace = s.trace().events.len();
        s.goto(2);
        s.goto(end.len());
        assert_eq!(s.results().iter().map(|r| r.reply.clone()).collect::<Vec<_>>(), end);
        assert_eq!(s.trace().events.len(), trace);
        assert_eq!(s.now_ms(), s.results().last().unwrap().at_ms);
    }

    #[test]
    fn the_lesson_console_repeats_a_line_as_the_free_console_does() {
        // Issue 14: `3 INCR n` was sent as a command named `3`.
        let l = catalog::find("07").unwrap();
        let mut s = Session::new(l, 1, 0);
        s.run_line(0, "3 INCR n");
        let typed = lines(&s, 0);
        assert_eq!(typed.last().unwrap().1, "(integer) 1\n(integer) 2\n(integer) 3");
        s.run_line(0, "0 INCR n");
        assert_eq!(
            lines(&s, 0).last().unwrap().1,
            "Invalid redis-cli repeat command option value."
        );
    }

    #[test]
    fn a_new_action_after_a_step_back_drops_the_later_ones() {
        let l = catalog::find("07").unwrap();
        let mut s = Session::new(l, 1, 4);
        s.run_line(0, "PTTL lock:order:1001");
        s.inject(Fault::PauseClient {
            client: "B".into(),
            ms: None,
        })
        .unwrap();
        assert!(s.clients()[1].paused);
        s.goto(2);
        assert!(!s.clients()[1].paused, "the pause was made at step 4");
        s.goto(4);
        assert!(s.clients()[1].paused, "and comes back with it");
        s.goto(2);
        s.run_line(1, "EXISTS lock:order:1001");
        s.goto(5);
        assert!(!s.clients()[1].paused, "a new action at step 2 dropped the future");
        assert!(lines(&s, 0).iter().all(|(line, _)| !line.starts_with("PTTL")));
        assert_eq!(s.off_script().map(|(pos, _, _)| pos).collect::<Vec<_>>(), [2]);
        assert!(s.inject(Fault::CrashNode { node: 9 }).is_err());
        assert_eq!(s.off_script().count(), 1, "a refused fault is not recorded");
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

/// Is a prediction for `step` right, given the reply it got? A quiz with
/// its own answer (a multiple choice such as `(integer) > 0`) is judged by
/// that answer; a reply the lesson expects within a range (a PTTL) by the
/// range; anything else by the reply itself.
pub fn prediction_right(step: &Step, guess: &str, reply: &str) -> bool {
    if let Some(answer) = step.quiz.as_ref().and_then(|q| q.answer.as_deref()) {
        return prediction_matches(guess, answer);
    }
    if let Some(range @ Expect::Range { .. }) = &step.expect {
        let as_integer = guess.trim().strip_prefix("(integer)").unwrap_or(guess).trim();
        if range.matches(&format!("(integer) {as_integer}")) {
            return true;
        }
    }
    prediction_matches(guess, reply)
}

#[cfg(test)]
mod prediction_tests {
    use super::prediction_matches as m;
    use super::prediction_right;
    use crate::catalog;

    #[test]
    fn quiz_answers_and_ranges_judge_predictions() {
        let l = catalog::find("01").unwrap();
        let (set, pttl) = (&l.steps[0], &l.steps[4]);
        assert!(prediction_right(set, "ok", "OK"));
        assert!(!prediction_right(set, "(nil)", "OK"));
        assert!(
            prediction_right(pttl, "(integer) > 0", "(integer) 29998"),
            "the quiz's own answer"
        );
        assert!(!prediction_right(pttl, "(integer) -2", "(integer) 29998"));
        let range = locklab_core::lesson::Step {
            client: Some("A".into()),
            cmd: Some("PTTL k".into()),
            expect: Some(locklab_core::lesson::Expect::Range { min: 1, max: 30000 }),
            ..Default::default()
        };
        assert!(
            prediction_right(&range, "30000", "(integer) 29998"),
            "a number within the expected range"
        );
        assert!(prediction_right(&range, "(integer) 29998", "(integer) 29998"));
        assert!(!prediction_right(&range, "-1", "(integer) 29998"));
    }

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
        s.inject(Fault::PauseClient {
            client: "A".into(),
            ms: None,
        })
        .unwrap();
        assert!(s.clients()[0].paused);
        s.inject(Fault::ResumeClient { client: "A".into() }).unwrap();
        s.inject(Fault::CrashNode { node: 0 }).unwrap();
        assert!(s.nodes()[0].down);
        let faults = s
            .trace()
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Fault { .. }))
            .count();
        assert_eq!(faults, 3);
        let layout = crate::timeline::layout(&s.trace(), s.now_ms(), crate::i18n::Lang::En);
        assert!(layout.spans.iter().any(|sp| sp.kind == "paused" && !sp.open));
        assert!(layout.spans.iter().any(|sp| sp.kind == "down" && sp.open));
    }
}
