//! The one seam between what the page shows and what produces it.
//!
//! Everything the lesson panel, timeline and console draw comes from a
//! [`LessonDriver`]: the lesson's step results, a core [`Trace`], and what
//! each actor's console printed. Two drivers produce them (see
//! `DESIGN.md`, "The one seam"):
//!
//! * [`Session`] — the simulator, in the engine module next to the page:
//!   deterministic, so a step back is a replay, and called synchronously,
//!   so every move finishes before the next render (once the module has
//!   loaded; until then the session is busy at its starting step);
//! * [`RealDriver`](crate::real::RealDriver) — a WebSocket to `locklab
//!   serve`, which plays the same lesson on real redis-server processes.
//!   Its moves are requests: `forward` asks for the next step and the
//!   result arrives later as a message; a step back restarts the run on
//!   fresh keys and plays it again to the step asked for, because real time
//!   cannot be rewound.
//!
//! The views take `&dyn LessonDriver` and never ask which one they have.

use std::any::Any;

use locklab_core::lesson::run::StepResult;
use locklab_core::lesson::worded::PageLesson;
use locklab_core::trace::Trace;

use crate::i18n::Lang;
use crate::lab::Exchange;
use crate::session::Session;

/// A lesson being played, by either driver.
pub trait LessonDriver {
    fn lesson(&self) -> &'static PageLesson;

    /// Steps the lesson has.
    fn len(&self) -> usize {
        self.lesson().steps.len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Steps done (results received, for the real driver).
    fn position(&self) -> usize;

    fn results(&self) -> &[StepResult];

    fn is_finished(&self) -> bool {
        self.position() >= self.len()
    }

    /// The lesson's verdict once it is finished: `Some(true)` when the run
    /// showed what the lesson says it shows.
    fn outcome(&self) -> Option<bool>;

    /// Off-script actions (typed lines, faults, clock moves) the run so far
    /// carries, which the outcome was judged with.
    fn off_script_count(&self) -> usize {
        0
    }

    /// The off-script actions the run carries, worded in `lang`, oldest
    /// first: what the outcome box blames when the run's outcome is not the
    /// article's.
    fn off_script_words(&self, _lang: Lang) -> Vec<String> {
        Vec::new()
    }

    /// Why the run cannot go on (a lesson the driver cannot play, a lost
    /// connection), if it cannot.
    fn error(&self) -> Option<String>;

    /// A note the driver wants shown above the steps (time compression,
    /// the DELEX fallback on an older server).
    fn notice(&self) -> Option<String> {
        None
    }

    /// What the driver did differently for step `index`, if anything.
    fn step_note(&self, _index: usize) -> Option<String> {
        None
    }

    /// How step `index` reads in `lang`: the command line, or the world
    /// step (a fault, a wait, a program) worded in that language.
    fn step_text(&self, index: usize, lang: Lang) -> String;

    /// Everything that happened so far, for the timeline.
    fn trace(&self) -> Trace;

    /// The time the timeline's "now" line sits at, in the trace's ms.
    fn now_ms(&self) -> u64;

    /// The console tabs: the lesson's actors.
    fn actors(&self) -> &[String] {
        &self.lesson().actors
    }

    /// Lines typed at `actor`'s console, oldest first (for ↑/↓).
    fn history(&self, actor: usize) -> &[String];

    /// What `actor`'s console shows: the lesson's commands for it and the
    /// lines typed off script, in order.
    fn transcript(&self, actor: usize) -> Vec<Exchange>;

    /// The prompt before each console line.
    fn prompt(&self) -> String {
        crate::session::PROMPT.to_owned()
    }

    /// A move is still being carried out (a real step on its way, the
    /// simulator still loading).
    fn is_busy(&self) -> bool {
        false
    }

    /// The step the URL names: [`position`](Self::position), or where a
    /// run still loading will start.
    fn url_position(&self) -> usize {
        self.position()
    }

    /// One step forward. False when there is none to take (the end, an
    /// error) — play stops then.
    fn forward(&mut self) -> bool;

    /// To `n` steps done.
    fn goto(&mut self, n: usize);

    fn back(&mut self) {
        self.goto(self.position().saturating_sub(1));
    }

    /// A line typed off script at `actor`'s console.
    fn run_line(&mut self, actor: usize, line: &str);

    /// Let `ms` of lesson time pass, if the driver can (the simulator's
    /// clock can; real time passes by itself).
    fn advance(&mut self, ms: u64);

    /// Can [`advance`](Self::advance) move the clock?
    fn has_virtual_clock(&self) -> bool;

    /// For the reducer, which hands driver-specific messages (a WebSocket
    /// frame, a fault from the simulator's toolbox) to the concrete driver.
    fn as_any(&self) -> &dyn Any;

    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl LessonDriver for Session {
    fn lesson(&self) -> &'static PageLesson {
        self.lesson
    }

    fn position(&self) -> usize {
        Session::position(self)
    }

    fn results(&self) -> &[StepResult] {
        Session::results(self)
    }

    fn is_finished(&self) -> bool {
        Session::is_finished(self)
    }

    fn outcome(&self) -> Option<bool> {
        Session::outcome(self)
    }

    fn off_script_count(&self) -> usize {
        self.off_script().len()
    }

    fn off_script_words(&self, lang: Lang) -> Vec<String> {
        Session::off_script_words(self, lang)
    }

    fn error(&self) -> Option<String> {
        self.error.clone()
    }

    fn is_busy(&self) -> bool {
        self.is_loading()
    }

    fn url_position(&self) -> usize {
        Session::url_position(self)
    }

    fn step_text(&self, index: usize, lang: Lang) -> String {
        Session::step_text(self, index, lang)
    }

    fn trace(&self) -> Trace {
        Session::trace(self)
    }

    fn now_ms(&self) -> u64 {
        Session::now_ms(self)
    }

    fn history(&self, actor: usize) -> &[String] {
        Session::history(self, actor)
    }

    fn transcript(&self, actor: usize) -> Vec<Exchange> {
        Session::transcript(self, actor)
    }

    fn forward(&mut self) -> bool {
        Session::forward(self)
    }

    fn goto(&mut self, n: usize) {
        Session::goto(self, n)
    }

    fn run_line(&mut self, actor: usize, line: &str) {
        Session::run_line(self, actor, line)
    }

    fn advance(&mut self, ms: u64) {
        Session::advance(self, ms)
    }

    fn has_virtual_clock(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    /// What the browser does with every lesson, through the seam the views
    /// use: play it to the end, check every expected reply and the
    /// outcome, lay out its timeline, and step back once.
    #[test]
    fn every_lesson_plays_to_the_end_through_the_seam() {
        for lesson in catalog::all() {
            let mut d: Box<dyn LessonDriver> = Box::new(Session::new(lesson, crate::state::DEFAULT_SEED, 0));
            while d.forward() {}
            assert_eq!(d.error(), None, "lesson {}", lesson.id);
            assert!(d.is_finished(), "lesson {} stopped at step {}", lesson.id, d.position());
            for r in d.results() {
                assert!(
                    r.ok,
                    "lesson {} step {}: {:?} expected, got {:?}",
                    lesson.id,
                    r.index + 1,
                    r.expected,
                    r.reply
                );
            }
            assert_eq!(d.outcome(), Some(true), "lesson {}'s outcome", lesson.id);
            let layout = crate::timeline::layout(&d.trace(), d.now_ms(), crate::i18n::Lang::En);
            assert!(!layout.lanes.is_empty(), "lesson {} has a timeline", lesson.id);
            let end = d.position();
            d.back();
            assert_eq!(d.position(), end - 1, "lesson {} steps back", lesson.id);
        }
    }
}
