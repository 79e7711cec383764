//! The app's one state and the user's intentions that change it.
//!
//! As in Yew's `function_todomvc` example: a [`State`], an [`Action`] enum
//! naming what the user meant ("run this line on client B", "advance the
//! clock 10 s", "show me lesson 05 in Chinese"), and a thin
//! [`Reducible::reduce`] that calls into [`Lab`](crate::lab::Lab) and the
//! other plain modules, so the logic is tested natively without a browser.
//!
//! The [`Lab`] holds a simulated Redis node with a Lua VM inside, which is
//! neither cheap nor possible to clone. So the state keeps it behind
//! `Rc<RefCell<…>>`, mutates it in place in `reduce`, and bumps
//! [`State::rev`], which is what equality (and so re-rendering) looks at.
//! Nothing else ever borrows it mutably, and no borrow lives across a
//! render.

use std::cell::RefCell;
use std::rc::Rc;

use locklab_core::world::Fault;
use yew::prelude::*;

use crate::catalog;
use crate::i18n::Lang;
use crate::lab::{Client, Lab};
use crate::query::{Driver, Query};
use crate::session::{self, Session};

/// The seed a view uses when the URL gives none.
pub const DEFAULT_SEED: u64 = 1;

/// How far one press of a clock button moves the node's clock.
pub const CLOCK_STEPS_MS: [u64; 3] = [1_000, 10_000, 30_000];

/// Play speeds; at 1× a step takes [`STEP_MS`].
pub const SPEEDS: [f64; 6] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0];
pub const STEP_MS: f64 = 1_200.0;

#[derive(Clone)]
pub struct State {
    pub lang: Lang,
    /// The selected lesson, playing on the simulator; `None`: the free lab.
    pub session: Option<Rc<RefCell<Session>>>,
    pub seed: u64,
    pub driver: Driver,
    /// The console tab in front (a lab client, or a lesson actor, by index).
    pub active: usize,
    pub help_open: bool,
    pub playing: bool,
    /// Index into [`SPEEDS`].
    pub speed: usize,
    /// Interview mode: predict each command's reply before it runs.
    pub quiz: bool,
    pub lab: Rc<RefCell<Lab>>,
    /// Bumped on every change to `lab` or `session`.
    pub rev: u64,
    /// The last thing that could not be done (a fault the world refused).
    pub notice: Option<String>,
}

impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        let same_session = match (&self.session, &other.session) {
            (Some(a), Some(b)) => Rc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        self.rev == other.rev
            && Rc::ptr_eq(&self.lab, &other.lab)
            && same_session
            && self.lang == other.lang
            && self.seed == other.seed
            && self.driver == other.driver
            && self.active == other.active
            && self.help_open == other.help_open
            && self.playing == other.playing
            && self.speed == other.speed
            && self.quiz == other.quiz
            && self.notice == other.notice
    }
}

impl State {
    /// The state a URL describes; `fallback_lang` (the browser's language)
    /// applies when the URL names none.
    pub fn from_query(q: &Query, fallback_lang: Lang) -> State {
        let seed = q.seed.unwrap_or(DEFAULT_SEED);
        let session = q.lesson.as_deref().and_then(catalog::find).map(|l| {
            let pos = session::parse_step(q.step.as_deref(), l.steps.len());
            Rc::new(RefCell::new(Session::new(l, seed, pos)))
        });
        State {
            lang: q.lang.unwrap_or(fallback_lang),
            session,
            seed,
            driver: q.driver.unwrap_or_default(),
            active: 0,
            help_open: false,
            playing: false,
            speed: 2,
            quiz: false,
            lab: Rc::new(RefCell::new(Lab::new())),
            rev: 0,
            notice: None,
        }
    }

    pub fn lesson_id(&self) -> Option<String> {
        self.session.as_ref().map(|s| s.borrow().lesson.id.clone())
    }

    /// The step as the URL names it (`3`, `end`).
    pub fn step(&self) -> Option<String> {
        let s = self.session.as_ref()?.borrow();
        session::step_param(s.position(), s.len())
    }

    /// The URL for this state: language, lesson, step, seed and driver.
    pub fn query(&self) -> Query {
        Query {
            lang: Some(self.lang),
            lesson: self.lesson_id(),
            step: self.step(),
            seed: Some(self.seed),
            driver: Some(self.driver),
        }
    }
}

/// Transport moves over a lesson's steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    TogglePlay,
    Back,
    Forward,
    Home,
    End,
    /// Go to `n` steps done.
    Seek(usize),
    /// The play timer fired.
    Tick,
}

/// What the user can ask for.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    SetLang(Lang),
    SelectLesson(String),
    /// Back to the free lab.
    CloseLesson,
    SelectClient(usize),
    /// Run a typed line on a console tab's connection.
    Run { tab: usize, line: String },
    /// Move the node's clock forward.
    Advance(u64),
    /// A fresh node and empty consoles.
    ResetLab,
    ToggleHelp,
    CloseHelp,
    Transport(Transport),
    SetSpeed(usize),
    ToggleQuiz,
    /// A fault from the toolbox, now, on the lesson's world.
    Inject(Fault),
}

impl Reducible for State {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut next = (*self).clone();
        next.notice = None;
        match action {
            Action::SetLang(lang) => next.lang = lang,
            Action::SelectLesson(id) => {
                if let Some(l) = catalog::find(&id).filter(|_| next.lesson_id().as_deref() != Some(id.as_str())) {
                    next.session = Some(Rc::new(RefCell::new(Session::new(l, next.seed, 0))));
                    next.playing = false;
                    next.active = 0;
                    next.rev += 1;
                }
            }
            Action::CloseLesson => {
                next.session = None;
                next.playing = false;
                next.active = 0;
                next.rev += 1;
            }
            Action::SelectClient(tab) => next.active = tab,
            Action::Run { tab, line } => {
                match &next.session {
                    Some(s) => s.borrow_mut().run_line(tab, &line),
                    None => next.lab.borrow_mut().run(Client::from_index(tab), &line),
                }
                next.active = tab;
                next.rev += 1;
            }
            Action::Advance(ms) => {
                match &next.session {
                    Some(s) => s.borrow_mut().advance(ms),
                    None => next.lab.borrow_mut().advance(ms),
                }
                next.rev += 1;
            }
            Action::ResetLab => {
                next.lab = Rc::new(RefCell::new(Lab::new()));
                next.rev += 1;
            }
            Action::ToggleHelp => next.help_open = !next.help_open,
            Action::CloseHelp => next.help_open = false,
            Action::SetSpeed(i) => next.speed = i.min(SPEEDS.len() - 1),
            Action::ToggleQuiz => next.quiz = !next.quiz,
            Action::Transport(t) => {
                let Some(s) = next.session.clone() else {
                    next.playing = false;
                    return Rc::new(next);
                };
                let mut s = s.borrow_mut();
                match t {
                    Transport::TogglePlay => {
                        if !next.playing && s.is_finished() {
                            s.goto(0);
                        }
                        next.playing = !next.playing;
                    }
                    Transport::Tick => {
                        if next.playing && !s.forward() {
                            next.playing = false;
                        }
                        if s.is_finished() {
                            next.playing = false;
                        }
                    }
                    Transport::Forward => {
                        next.playing = false;
                        s.forward();
                    }
                    Transport::Back => {
                        next.playing = false;
                        s.back();
                    }
                    Transport::Home => {
                        next.playing = false;
                        s.goto(0);
                    }
                    Transport::End => {
                        next.playing = false;
                        let n = s.len();
                        s.goto(n);
                    }
                    Transport::Seek(n) => {
                        next.playing = false;
                        s.goto(n);
                    }
                }
                next.rev += 1;
            }
            Action::Inject(fault) => {
                if let Some(s) = &next.session {
                    if let Err(e) = s.borrow_mut().inject(fault) {
                        next.notice = Some(e);
                    }
                    next.rev += 1;
                }
            }
        }
        Rc::new(next)
    }
}

/// The state as the components share it.
pub type AppContext = UseReducerHandle<State>;

#[cfg(test)]
mod tests {
    use super::*;

    fn reduce(s: State, a: Action) -> State {
        Rc::new(s).reduce(a).as_ref().clone()
    }

    #[test]
    fn url_in_url_out() {
        let q = Query::parse("?lang=zh&lesson=05&step=end&seed=7&driver=sim");
        let s = State::from_query(&q, Lang::En);
        assert_eq!(s.query(), q);
        let s = State::from_query(&Query::parse("?lesson=99"), Lang::Zh);
        assert_eq!(s.query().to_search(), "?lang=zh&seed=1&driver=sim");
    }

    #[test]
    fn actions_change_what_they_say() {
        let s = State::from_query(&Query::default(), Lang::En);
        let s = reduce(s, Action::SetLang(Lang::Zh));
        assert_eq!(s.lang, Lang::Zh);
        let s = reduce(s, Action::Run { tab: 1, line: "SET lock t NX PX 1000".into() });
        assert_eq!((s.active, s.rev), (1, 1));
        assert_eq!(s.lab.borrow().transcript(Client::B)[0].output, "OK");
        let before = s.clone();
        let s = reduce(s, Action::Advance(1000));
        assert!(s != before);
        assert_eq!(s.lab.borrow().now_ms(), 1000);
        let s = reduce(s, Action::SelectLesson("07".into()));
        let s = reduce(s, Action::SelectLesson("nope".into()));
        assert_eq!(s.lesson_id().as_deref(), Some("07"));
        let s = reduce(s, Action::Transport(Transport::Forward));
        assert_eq!(s.step().as_deref(), Some("1"));
        let s = reduce(s, Action::Transport(Transport::End));
        assert_eq!(s.step().as_deref(), Some("end"));
        let s = reduce(s, Action::Transport(Transport::Seek(2)));
        assert_eq!(s.step().as_deref(), Some("2"));
        let s = reduce(s, Action::Transport(Transport::Back));
        assert_eq!(s.step().as_deref(), Some("1"));
        let s = reduce(s, Action::ToggleHelp);
        assert!(s.help_open);
        let s = reduce(s, Action::ResetLab);
        assert!(s.lab.borrow().transcript(Client::B).is_empty());
        let s = reduce(s, Action::Transport(Transport::TogglePlay));
        assert!(s.playing);
        let s = reduce(s, Action::Transport(Transport::Home));
        assert!(!s.playing);
    }
}
