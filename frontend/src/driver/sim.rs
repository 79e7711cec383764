//! A lesson being played on the simulator, as the page holds it: core's
//! lesson session (`locklab_core::lesson::session`: the run, the off-script
//! history, replays for every move back) lives in the engine module, and
//! this is the page's handle on it plus the last [`SessionView`] it sent.
//!
//! Every move (forward, a seek, a typed line, a fault, a clock move) is one
//! call across the seam ([`crate::engine`]) that answers with the new view,
//! so the views read a plain struct and never wait. Until the engine module
//! has loaded (the first lesson played on the simulator fetches it) the
//! session waits at its starting step, busy, with the moves asked for
//! queued; [`EngineHandle::connect`] opens it in the engine and plays them.

use locklab_core::engine::{Move, Open, SessionView};
use locklab_core::fault::Fault;
use locklab_core::lesson::run::StepResult;
use locklab_core::lesson::session::{ClientInfo, Made, NodeInfo, OffScript};
use locklab_core::lesson::worded::PageLesson;
use locklab_core::trace::Trace;

use super::LessonDriver;
use crate::engine::{EngineHandle, LessonLink};
use crate::i18n::{self, Lang};
use crate::lab::Exchange;

/// A lesson on the simulator: the page's handle on core's lesson session
/// in the engine module, and the last view of it.
pub struct SimDriver {
    pub lesson: &'static PageLesson,
    pub seed: u64,
    /// The session in the engine, once it is loaded.
    link: Option<LessonLink>,
    /// Where to open it, and the moves asked for before it was loaded.
    start: usize,
    queued: Vec<Move>,
    view: SessionView,
    trace: Trace,
    /// Why the run could not be built, stepped or reached, if it could not.
    pub error: Option<String>,
}

impl SimDriver {
    /// The lesson at `pos` steps done; opened at once if the engine is
    /// loaded, else when it is ([`EngineHandle::connect`]).
    pub fn new(lesson: &'static PageLesson, seed: u64, pos: usize) -> SimDriver {
        SimDriver {
            lesson,
            seed,
            link: None,
            start: pos,
            queued: Vec::new(),
            view: SessionView::default(),
            trace: Trace::default(),
            error: None,
        }
        .connected_if_loaded()
    }

    /// Still waiting for the engine module.
    pub fn is_loading(&self) -> bool {
        self.link.is_none() && self.error.is_none()
    }

    fn take(&mut self, view: SessionView) {
        self.view = view;
        std::mem::take(&mut self.view.trace).apply(&mut self.trace);
        self.error.clone_from(&self.view.error);
    }

    /// Carry out `m` in the engine (or queue it until the engine is
    /// loaded); why it was refused, if it was.
    fn act(&mut self, m: Move) -> Option<String> {
        let Some(link) = self.link.as_mut() else {
            if self.error.is_none() {
                self.queued.push(m);
            }
            return None;
        };
        match link.act(&m) {
            Ok(view) => {
                let refused = view.refused.clone();
                self.take(view);
                refused
            }
            Err(e) => {
                self.error = Some(e.clone());
                Some(e)
            }
        }
    }

    pub fn len(&self) -> usize {
        self.lesson.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lesson.steps.is_empty()
    }

    /// Steps done.
    pub fn position(&self) -> usize {
        self.view.position
    }

    /// The step the URL names: where the session is, or, while the engine
    /// loads, where it will open.
    pub fn url_position(&self) -> usize {
        if self.link.is_none() {
            self.start
        } else {
            self.position()
        }
    }

    pub fn is_finished(&self) -> bool {
        self.position() >= self.len()
    }

    pub fn results(&self) -> &[StepResult] {
        &self.view.results
    }

    pub fn outcome(&self) -> Option<bool> {
        self.view.outcome
    }

    /// Go to `n` steps done: forward by stepping, back by a replay. Either
    /// way the off-script actions recorded up to `n` are applied.
    pub fn goto(&mut self, n: usize) {
        let n = n.min(self.len());
        if self.link.is_none() {
            self.start = n;
        } else if n != self.position() {
            self.act(Move::Goto { n });
        }
    }

    /// One step forward; false at the end, on an error, or while the engine
    /// loads.
    pub fn forward(&mut self) -> bool {
        let before = self.position();
        if self.link.is_none() || self.is_finished() || self.error.is_some() {
            return false;
        }
        self.act(Move::Forward);
        self.position() > before
    }

    pub fn back(&mut self) {
        self.goto(self.position().saturating_sub(1));
    }

    pub fn now_ms(&self) -> u64 {
        self.view.now_ms
    }

    pub fn trace(&self) -> Trace {
        self.trace.clone()
    }

    pub fn actors(&self) -> &[String] {
        &self.lesson.actors
    }

    pub fn history(&self, actor: usize) -> &[String] {
        self.view.history.get(actor).map_or(&[], Vec::as_slice)
    }

    /// A line typed at `actor`'s console, on the lesson's world, to its master.
    pub fn run_line(&mut self, actor: usize, line: &str) {
        self.act(Move::Line {
            actor,
            line: line.to_owned(),
        });
    }

    /// Apply a fault now, as the fault toolbox asks.
    pub fn inject(&mut self, fault: Fault) -> Result<(), String> {
        self.act(Move::Fault { fault }).map_or(Ok(()), Err)
    }

    /// Let `ms` of world time pass (the clock buttons).
    pub fn advance(&mut self, ms: u64) {
        self.act(Move::Advance { ms });
    }

    /// The off-script actions applied to the world now, with the step
    /// position and world time each was made at.
    pub fn off_script(&self) -> &[Made] {
        &self.view.off_script
    }

    /// The off-script actions of this run, worded in `lang` for the
    /// outcome box ("A typed `DEL lock`", "r1 crashed", "clock +15 s").
    pub fn off_script_words(&self, lang: Lang) -> Vec<String> {
        let names = &self.trace.names;
        self.off_script()
            .iter()
            .map(|made| match &made.action {
                OffScript::Line { actor, line } => {
                    let who = self.lesson.actors.get(*actor).map_or("?", String::as_str);
                    i18n::typed_off_script(who, line, lang)
                }
                OffScript::Fault(f) => f.describe_in(names, lang),
                OffScript::Advance(ms) => i18n::clock_moved(*ms, lang),
            })
            .collect()
    }

    /// What `actor`'s console shows: the lesson's commands for that client
    /// (with their replies) and the lines typed off script, in order.
    pub fn transcript(&self, actor: usize) -> Vec<Exchange> {
        self.view.transcripts.get(actor).cloned().unwrap_or_default()
    }

    /// How step `index` reads in `lang`, before or after it ran.
    pub fn step_text(&self, index: usize, lang: Lang) -> String {
        super::step_text(self.lesson, index, &self.view.write_tokens, &self.trace.names, lang)
    }

    pub fn nodes(&self) -> &[NodeInfo] {
        &self.view.nodes
    }

    pub fn clients(&self) -> &[ClientInfo] {
        &self.view.clients
    }

    pub fn master(&self) -> u32 {
        self.view.master
    }
}

impl EngineHandle for SimDriver {
    /// Open the session in the (now loaded) engine and carry out the moves
    /// queued while it loaded.
    fn connect(&mut self) {
        if self.link.is_some() {
            return;
        }
        let open = Open {
            lesson: self.lesson.clone(),
            seed: self.seed,
            pos: self.start,
        };
        match LessonLink::open(&open) {
            Ok((link, view)) => {
                self.link = Some(link);
                self.take(view);
                for m in std::mem::take(&mut self.queued) {
                    self.act(m);
                }
            }
            Err(e) => self.error = Some(e),
        }
    }
}

impl LessonDriver for SimDriver {
    fn lesson(&self) -> &'static PageLesson {
        self.lesson
    }

    fn position(&self) -> usize {
        SimDriver::position(self)
    }

    fn results(&self) -> &[StepResult] {
        SimDriver::results(self)
    }

    fn is_finished(&self) -> bool {
        SimDriver::is_finished(self)
    }

    fn outcome(&self) -> Option<bool> {
        SimDriver::outcome(self)
    }

    fn off_script_count(&self) -> usize {
        self.off_script().len()
    }

    fn off_script_words(&self, lang: Lang) -> Vec<String> {
        SimDriver::off_script_words(self, lang)
    }

    fn error(&self) -> Option<String> {
        self.error.clone()
    }

    fn is_busy(&self) -> bool {
        self.is_loading()
    }

    fn url_position(&self) -> usize {
        SimDriver::url_position(self)
    }

    fn step_text(&self, index: usize, lang: Lang) -> String {
        SimDriver::step_text(self, index, lang)
    }

    fn trace(&self) -> Trace {
        SimDriver::trace(self)
    }

    fn now_ms(&self) -> u64 {
        SimDriver::now_ms(self)
    }

    fn history(&self, actor: usize) -> &[String] {
        SimDriver::history(self, actor)
    }

    fn transcript(&self, actor: usize) -> Vec<Exchange> {
        SimDriver::transcript(self, actor)
    }

    fn forward(&mut self) -> bool {
        SimDriver::forward(self)
    }

    fn goto(&mut self, n: usize) {
        SimDriver::goto(self, n)
    }

    fn run_line(&mut self, actor: usize, line: &str) {
        SimDriver::run_line(self, actor, line)
    }

    fn advance(&mut self, ms: u64) {
        SimDriver::advance(self, ms)
    }

    fn has_virtual_clock(&self) -> bool {
        true
    }
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
        let mut s = SimDriver::new(l, 1, 0);
        while s.forward() {}
        assert_eq!(s.outcome(), Some(true), "the scripted run is the article's");
        assert!(s.off_script_words(Lang::En).is_empty());
        s.goto(5);
        s.run_line(0, "DEL lock:order:1001");
        while s.forward() {}
        assert_eq!(s.outcome(), Some(false), "A's DEL of B's lock is a wrong release");
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
        let mut s = SimDriver::new(l, 1, 0);
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
    fn lines(s: &SimDriver, actor: usize) -> Vec<(String, String)> {
        s.transcript(actor).into_iter().map(|x| (x.line, x.output)).collect()
    }

    #[test]
    fn off_script_lines_come_back_after_a_step_back_and_forward() {
        let l = catalog::find("07").unwrap();
        let mut s = SimDriver::new(l, 1, 3);
        s.run_line(1, "GET lock:order:1001");
        s.run_line(1, "PTTL lock:order:1001");
        let typed = lines(&s, 1);
        assert_eq!(typed.len(), 3);
        assert_eq!(typed[1].1, "\"token-B-222\"");
        let at: Vec<_> = s.off_script().iter().map(|m| (m.pos, m.at_ms)).collect();
        s.forward();
        let at_4 = lines(&s, 1);

        s.back();
        assert_eq!(s.position(), 3);
        assert_eq!(lines(&s, 1), typed, "a step back keeps what was typed before it");
        s.goto(1);
        assert_eq!(lines(&s, 1), [], "back before the lines: not applied");
        assert_eq!(s.off_script().len(), 0);
        s.goto(4);
        assert_eq!(lines(&s, 1), at_4, "forward again: the same lines, the same replies");
        let again: Vec<_> = s.off_script().iter().map(|m| (m.pos, m.at_ms)).collect();
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
        let mut s = SimDriver::new(l, 1, 1);
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
        let mut s = SimDriver::new(l, 1, 0);
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
        let mut s = SimDriver::new(l, 1, 4);
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
        assert_eq!(s.off_script().iter().map(|m| m.pos).collect::<Vec<_>>(), [2]);
        assert!(s.inject(Fault::CrashNode { node: 9 }).is_err());
        assert_eq!(s.off_script().len(), 1, "a refused fault is not recorded");
    }

    #[test]
    fn lesson_05_ends_with_a_violation_and_lock_bars() {
        let l = catalog::find("05").unwrap();
        let s = SimDriver::new(l, 7, l.steps.len());
        assert!(s.is_finished(), "{:?}", s.error);
        let trace = s.trace();
        let layout = crate::timeline::layout(&trace, s.now_ms(), crate::i18n::Lang::En);
        assert!(layout.bars.iter().filter(|b| !b.belief).count() >= 2);
        assert!(!layout.bands.is_empty(), "the overlap band");
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
        let mut s = SimDriver::new(l, 1, 1);
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
