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

use yew::prelude::*;

use crate::catalog;
use crate::i18n::Lang;
use crate::lab::{Client, Lab};
use crate::query::{Driver, Query};

/// The seed a view uses when the URL gives none.
pub const DEFAULT_SEED: u64 = 1;

/// How far one press of a clock button moves the node's clock.
pub const CLOCK_STEPS_MS: [u64; 3] = [1_000, 10_000, 30_000];

#[derive(Clone)]
pub struct State {
    pub lang: Lang,
    /// The selected lesson's id, if any (only ids the catalogue knows).
    pub lesson: Option<String>,
    /// The lesson step as the URL names it (`3`, `end`); kept verbatim until
    /// lessons have steps to resolve it against.
    pub step: Option<String>,
    pub seed: u64,
    pub driver: Driver,
    /// The console tab in front.
    pub active: Client,
    pub help_open: bool,
    /// Lesson transport state, driven by space / ← / → / Home.
    pub playing: bool,
    pub lab: Rc<RefCell<Lab>>,
    /// Bumped on every change to `lab`.
    pub rev: u64,
}

impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        self.rev == other.rev
            && Rc::ptr_eq(&self.lab, &other.lab)
            && self.lang == other.lang
            && self.lesson == other.lesson
            && self.step == other.step
            && self.seed == other.seed
            && self.driver == other.driver
            && self.active == other.active
            && self.help_open == other.help_open
            && self.playing == other.playing
    }
}

impl State {
    /// The state a URL describes; `fallback_lang` (the browser's language)
    /// applies when the URL names none.
    pub fn from_query(q: &Query, fallback_lang: Lang) -> State {
        State {
            lang: q.lang.unwrap_or(fallback_lang),
            lesson: q.lesson.clone().filter(|id| catalog::find(id).is_some()),
            step: q.step.clone(),
            seed: q.seed.unwrap_or(DEFAULT_SEED),
            driver: q.driver.unwrap_or_default(),
            active: Client::A,
            help_open: false,
            playing: false,
            lab: Rc::new(RefCell::new(Lab::new())),
            rev: 0,
        }
    }

    /// The URL for this state: language, lesson, step, seed and driver.
    pub fn query(&self) -> Query {
        Query {
            lang: Some(self.lang),
            lesson: self.lesson.clone(),
            step: self.step.clone(),
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
}

/// What the user can ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    SetLang(Lang),
    SelectLesson(String),
    SelectClient(Client),
    /// Run a typed line on a client's connection.
    Run { client: Client, line: String },
    /// Move the node's clock forward.
    Advance(u64),
    /// A fresh node and empty consoles.
    ResetLab,
    ToggleHelp,
    CloseHelp,
    Transport(Transport),
}

impl Reducible for State {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut next = (*self).clone();
        match action {
            Action::SetLang(lang) => next.lang = lang,
            Action::SelectLesson(id) => {
                if catalog::find(&id).is_some() && next.lesson.as_deref() != Some(id.as_str()) {
                    next.lesson = Some(id);
                    next.step = None;
                    next.playing = false;
                }
            }
            Action::SelectClient(client) => next.active = client,
            Action::Run { client, line } => {
                next.lab.borrow_mut().run(client, &line);
                next.active = client;
                next.rev += 1;
            }
            Action::Advance(ms) => {
                next.lab.borrow_mut().advance(ms);
                next.rev += 1;
            }
            Action::ResetLab => {
                next.lab = Rc::new(RefCell::new(Lab::new()));
                next.rev += 1;
            }
            Action::ToggleHelp => next.help_open = !next.help_open,
            Action::CloseHelp => next.help_open = false,
            Action::Transport(t) => {
                // Lessons have no steps yet: only play/pause has a state to
                // show, and it stops at once without a lesson to play.
                next.playing = match t {
                    Transport::TogglePlay => !next.playing && next.lesson.is_some(),
                    Transport::Back | Transport::Forward | Transport::Home => false,
                };
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
        let s = reduce(s, Action::Run { client: Client::B, line: "SET lock t NX PX 1000".into() });
        assert_eq!((s.active, s.rev), (Client::B, 1));
        assert_eq!(s.lab.borrow().transcript(Client::B)[0].output, "OK");
        let before = s.clone();
        let s = reduce(s, Action::Advance(1000));
        assert!(s != before);
        assert_eq!(s.lab.borrow().now_ms(), 1000);
        let s = reduce(s, Action::SelectLesson("07".into()));
        let s = reduce(s, Action::SelectLesson("nope".into()));
        assert_eq!(s.lesson.as_deref(), Some("07"));
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
