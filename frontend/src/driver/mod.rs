//! The one seam between what the page shows and what produces it.
//!
//! Everything the lesson panel, timeline and console draw comes from a
//! [`LessonDriver`]: the lesson's step results, a core [`Trace`], and what
//! each actor's console printed. Two drivers produce them (see
//! `DESIGN.md`, "The one seam"):
//!
//! * [`SimDriver`] ([`sim`]) — the simulator, in the engine module next to
//!   the page: deterministic, so a step back is a replay, and called
//!   synchronously, so every move finishes before the next render (once the
//!   module has loaded; until then the run is busy at its starting step);
//! * [`RealDriver`] ([`real`]) — a WebSocket to `locklab serve`, which plays
//!   the same lesson on real redis-server processes. Its moves are
//!   requests: `forward` asks for the next step and the result arrives later
//!   as a message; a step back restarts the run on fresh keys and plays it
//!   again to the step asked for, because real time cannot be rewound.
//!
//! The state holds the lesson being played as a [`Driver`], which says
//! which of the two it is: the views read it through the [`LessonDriver`]
//! seam ([`Driver::borrow`]) and never ask, and the reducer matches on it
//! for what only one driver does (a fault from the simulator's toolbox, the
//! engine module arriving).

pub mod real;
pub mod sim;

use std::cell::{Ref, RefCell, RefMut};
use std::collections::BTreeMap;
use std::rc::Rc;

use locklab_core::lesson::run::{self, StepResult};
use locklab_core::lesson::worded::PageLesson;
use locklab_core::trace::Trace;

use crate::i18n::{self, Lang};
use crate::lab::Exchange;

pub use locklab_core::lesson::session::PROMPT;
pub use real::RealDriver;
pub use sim::SimDriver;

/// The lesson being played, and by which driver. Shared (`Rc`): the real
/// driver is also the state's link to the backend, which outlives a lesson
/// (the free lab on real redis-server); a simulated run is this one
/// handle's alone. Either way it is mutated in place by the reducer only.
#[derive(Clone)]
pub enum Driver {
    Sim(Rc<RefCell<SimDriver>>),
    Real(Rc<RefCell<RealDriver>>),
}

impl Driver {
    /// The lesson as the views read it, whichever driver plays it.
    pub fn borrow(&self) -> Ref<'_, dyn LessonDriver> {
        match self {
            Driver::Sim(s) => Ref::map(s.borrow(), |s| s as &dyn LessonDriver),
            Driver::Real(r) => Ref::map(r.borrow(), |r| r as &dyn LessonDriver),
        }
    }

    /// The same, to move the lesson (the reducer).
    pub fn borrow_mut(&self) -> RefMut<'_, dyn LessonDriver> {
        match self {
            Driver::Sim(s) => RefMut::map(s.borrow_mut(), |s| s as &mut dyn LessonDriver),
            Driver::Real(r) => RefMut::map(r.borrow_mut(), |r| r as &mut dyn LessonDriver),
        }
    }

    /// The same run (not merely an equal one): what the state's equality
    /// looks at, with its revision.
    pub fn ptr_eq(&self, other: &Driver) -> bool {
        match (self, other) {
            (Driver::Sim(a), Driver::Sim(b)) => Rc::ptr_eq(a, b),
            (Driver::Real(a), Driver::Real(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// How step `index` of `lesson` reads in `lang`, before or after it ran:
/// the command line, or the world step worded by [`i18n::shown`]. Both
/// drivers word steps with it: `write_tokens` are the tokens the write steps
/// that ran carried, `names` the run's names.
pub fn step_text(
    lesson: &PageLesson,
    index: usize,
    write_tokens: &BTreeMap<usize, Option<i64>>,
    names: &locklab_core::actor::Names,
    lang: Lang,
) -> String {
    run::shown(lesson, index, write_tokens)
        .map(|s| i18n::shown(&s, names, lang))
        .unwrap_or_default()
}

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
        PROMPT.to_owned()
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
            let d = Driver::Sim(Rc::new(RefCell::new(SimDriver::new(
                lesson,
                crate::state::DEFAULT_SEED,
                0,
            ))));
            let mut d = d.borrow_mut();
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
