//! The app's one state and the user's intentions that change it.
//!
//! As in Yew's `function_todomvc` example: a [`State`], an [`Action`] enum
//! naming what the user meant ("run this line on client B", "advance the
//! clock 10 s", "show me lesson 05 in Chinese"), and a thin
//! [`Reducible::reduce`] that calls into [`SimLab`], the lesson's
//! [`Driver`] and the other plain modules, so the logic is tested natively
//! without a browser.
//!
//! The [`SimLab`] and the [`SimDriver`] hold a simulated Redis node with a
//! Lua VM inside, which is neither cheap nor possible to clone; the
//! [`RealDriver`] holds a WebSocket's worth of state. So the state keeps
//! them behind `Rc<RefCell<…>>`, mutates them in place in `reduce`, and
//! bumps [`State::rev`], which is what equality (and so re-rendering) looks
//! at. Nothing else ever borrows them mutably, and no borrow lives across a
//! render.

use std::cell::RefCell;
use std::rc::Rc;

use locklab_core::fault::Fault;
use locklab_core::protocol::{FaultKind, TopologyKind};
use yew::prelude::*;

use crate::catalog;
use crate::class::{Class, Follow, SocketEvent};
use crate::driver::real::Health;
use crate::driver::{Driver, LessonDriver, RealDriver, SimDriver};
use crate::explore::ExploreLink;
use crate::i18n::Lang;
use crate::lab::{Client, SimLab};
use crate::query::{self, DriverKind, Query};
use locklab_core::class::{Answer, ClassCode, ClassDriver, Position};

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
    /// The selected lesson, being played; `None`: the free lab. On the real
    /// driver this is the same object as [`State::real`].
    pub lesson: Option<Driver>,
    pub seed: u64,
    pub driver: DriverKind,
    /// The real driver's link and session, while `driver` is real.
    pub real: Option<Rc<RefCell<RealDriver>>>,
    /// Bumped to make the app open a new WebSocket (a reconnect).
    pub connection: u32,
    /// The console tab in front (a lab client, or a lesson actor, by index).
    pub active: usize,
    pub help_open: bool,
    pub playing: bool,
    /// Index into [`SPEEDS`].
    pub speed: usize,
    /// Interview mode: predict each command's reply before it runs.
    pub quiz: bool,
    /// Interview mode's shuffle: the seed of this attempt's choice orders
    /// (`quiz=N` in the URL, so a shared link asks in the same order).
    pub quiz_seed: u64,
    /// The mock interview is open (`mock=1`).
    pub mock: bool,
    pub lab: Rc<RefCell<SimLab>>,
    /// Bumped on every change to `lab`, `lesson` or `real`.
    pub rev: u64,
    /// The last thing that could not be done (a fault the world refused).
    pub notice: Option<String>,
    /// Presenter mode: the timeline full screen, a caption, no sidebar.
    pub present: bool,
    /// The dark projector theme.
    pub dark: bool,
    /// The timeline's legend is shown.
    pub legend: bool,
    /// Interview mode: the step waiting for an answer; stepping past it
    /// is blocked until it has one.
    pub quiz_gate: Option<usize>,
    /// The explore screen ("break my lock") is open.
    pub explore: bool,
    /// The explorer search this view shows (`?explore=…&seed=N`): the
    /// link the page was opened with, then the counterexample playing.
    pub explore_link: Option<ExploreLink>,
    /// The engine module (the simulator): `None` until it has loaded or
    /// failed to, then whether it loaded.
    pub engine: Option<bool>,
    /// Class mode: the class this page presents or follows.
    pub class: Option<Rc<RefCell<Class>>>,
    /// Bumped to make the app open a new class WebSocket.
    pub class_connection: u32,
    /// The presenter's class panel (code, URL, QR) is shown.
    pub class_panel: bool,
    /// A history or MONITOR capture the user opened (issue 40), checked in
    /// the explore worker: the timeline draws its trace and the verdict
    /// card sits above it, until a lesson is chosen or it is closed.
    pub opened: Option<Rc<locklab_core::history::open::Opened>>,
}

fn same<T>(a: &Option<T>, b: &Option<T>, ptr_eq: impl Fn(&T, &T) -> bool) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        self.rev == other.rev
            && Rc::ptr_eq(&self.lab, &other.lab)
            && same(&self.lesson, &other.lesson, Driver::ptr_eq)
            && same(&self.real, &other.real, Rc::ptr_eq)
            && self.lang == other.lang
            && self.seed == other.seed
            && self.driver == other.driver
            && self.connection == other.connection
            && self.active == other.active
            && self.help_open == other.help_open
            && self.playing == other.playing
            && self.speed == other.speed
            && self.quiz == other.quiz
            && self.quiz_seed == other.quiz_seed
            && self.mock == other.mock
            && self.notice == other.notice
            && self.present == other.present
            && self.dark == other.dark
            && self.legend == other.legend
            && self.quiz_gate == other.quiz_gate
            && self.explore == other.explore
            && self.explore_link == other.explore_link
            && self.engine == other.engine
            && same(&self.class, &other.class, Rc::ptr_eq)
            && self.class_connection == other.class_connection
            && self.class_panel == other.class_panel
            && same(&self.opened, &other.opened, Rc::ptr_eq)
    }
}

/// `lesson` at `pos` steps done, on `driver`.
fn play(
    lesson: &'static locklab_core::lesson::worded::PageLesson,
    seed: u64,
    pos: usize,
    real: Option<&Rc<RefCell<RealDriver>>>,
) -> Driver {
    match real {
        Some(r) => {
            {
                let mut d = r.borrow_mut();
                d.start_lesson(lesson);
                d.goto(pos);
            }
            Driver::Real(r.clone())
        }
        None => Driver::Sim(Rc::new(RefCell::new(SimDriver::new(lesson, seed, pos)))),
    }
}

impl State {
    /// The state a URL describes; `fallback_lang` (the browser's language)
    /// applies when the URL names none.
    pub fn from_query(q: &Query, fallback_lang: Lang) -> State {
        let seed = q.seed.unwrap_or(DEFAULT_SEED);
        let lang = q.lang.unwrap_or(fallback_lang);
        let driver = q.driver.unwrap_or_default();
        let real = (driver == DriverKind::Real).then(|| Rc::new(RefCell::new(RealDriver::new(lang))));
        // A shared counterexample: the explore screen searches it again
        // and plays it (the lesson it becomes is not in the catalogue).
        let explore_link = q.explore.as_ref().map(|design| ExploreLink {
            design: design.clone(),
            seed: q.seed,
            step: q.step.clone(),
        });
        let lesson = q
            .lesson
            .as_deref()
            .and_then(catalog::find)
            .filter(|_| explore_link.is_none())
            .map(|l| {
                let pos = query::parse_step(q.step.as_deref(), l.steps.len());
                play(l, seed, pos, real.as_ref())
            });
        State {
            lang,
            lesson,
            seed,
            driver,
            real,
            connection: 0,
            active: 0,
            help_open: false,
            playing: false,
            speed: 2,
            quiz: q.quiz.is_some(),
            quiz_seed: q.quiz.unwrap_or_default(),
            mock: q.mock,
            lab: Rc::new(RefCell::new(SimLab::new())),
            rev: 0,
            notice: None,
            present: q.present,
            dark: q.dark,
            legend: true,
            quiz_gate: None,
            explore: explore_link.is_some(),
            explore_link,
            engine: None,
            class: q
                .class
                .clone()
                .map(|code| Rc::new(RefCell::new(Class::join(code, None)))),
            class_connection: 0,
            class_panel: true,
            opened: None,
        }
    }

    /// A new interview attempt: a new shuffle seed, drawn from the last one
    /// and the page's clock (natively, the last one alone), kept short
    /// enough to read in a URL.
    fn reseed_quiz(&mut self) {
        #[cfg(target_arch = "wasm32")]
        let now = web_sys::window()
            .and_then(|w| w.performance())
            .map_or(0, |p| p.now().to_bits());
        #[cfg(not(target_arch = "wasm32"))]
        let now = 0u64;
        let mut rng = locklab_core::rng::Rng::derive(self.quiz_seed, now.wrapping_add(u64::from(self.quiz)));
        self.quiz_seed = rng.between(1, 999_999);
    }

    /// A follower's page: the class's code in the URL, so a reload rejoins.
    pub fn follower_code(&self) -> Option<ClassCode> {
        let c = self.class.as_ref()?.borrow();
        (!c.is_presenter()).then(|| c.code().cloned()).flatten()
    }

    /// Where this page is, as a class relays it.
    pub fn class_position(&self) -> Position {
        let s = self.lesson.as_ref().map(|l| l.borrow());
        Position {
            lesson: s.as_ref().map(|s| s.lesson().id.clone()),
            step: s.as_ref().map_or(0, |s| s.position()),
            seed: Some(self.seed),
            driver: match self.driver {
                DriverKind::Sim => ClassDriver::Sim,
                DriverKind::Real => ClassDriver::Real,
            },
            dark: self.dark,
        }
    }

    pub fn lesson_id(&self) -> Option<String> {
        self.lesson.as_ref().map(|s| s.borrow().lesson().id.clone())
    }

    /// The step as the URL names it (`3`, `end`).
    pub fn step(&self) -> Option<String> {
        let s = self.lesson.as_ref()?.borrow();
        query::step_param(s.url_position(), s.len())
    }

    /// The URL for this state: language, lesson, step, seed and driver;
    /// for an explorer counterexample, its design, seed and step.
    pub fn query(&self) -> Query {
        if let Some(l) = &self.explore_link {
            return Query {
                lang: Some(self.lang),
                explore: Some(l.design.clone()),
                step: if self.explore { l.step.clone() } else { self.step() },
                seed: l.seed,
                present: self.present,
                dark: self.dark,
                ..Query::default()
            };
        }
        if let Some(code) = self.follower_code() {
            return Query {
                lang: Some(self.lang),
                class: Some(code),
                ..Query::default()
            };
        }
        Query {
            lang: Some(self.lang),
            lesson: self.lesson_id(),
            step: self.step(),
            seed: Some(self.seed),
            driver: Some(self.driver),
            present: self.present,
            dark: self.dark,
            quiz: self.quiz.then_some(self.quiz_seed),
            mock: self.mock,
            explore: None,
            class: None,
            notes: false,
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
    Run {
        tab: usize,
        line: String,
    },
    /// Move the node's clock forward.
    Advance(u64),
    /// A fresh node and empty consoles.
    ResetLab,
    /// The engine module (the simulator) has loaded, or could not.
    EngineLoaded(Result<(), String>),
    ToggleHelp,
    CloseHelp,
    Transport(Transport),
    SetSpeed(usize),
    ToggleQuiz,
    /// A fault from the toolbox, now, on the lesson's world.
    Inject(Fault),
    /// Simulator or real redis-server.
    SetDriver(DriverKind),
    /// What happened to the real driver's WebSocket or health check.
    Real(RealInput),
    /// A fault on a managed real node.
    RealFault {
        fault: FaultKind,
        node: u32,
    },
    /// Replace the managed real topology.
    RealTopology(TopologyKind),
    /// The real driver's time compression.
    RealFactor(u64),
    /// Open a new WebSocket now (the reconnect timer fired, or the user asked).
    Reconnect,
    /// Presenter mode on or off (`p`).
    TogglePresent,
    /// The light or dark projector theme.
    ToggleTheme,
    ToggleLegend,
    /// The lesson after this one, from its start.
    NextLesson,
    /// Interview mode's question is waiting at this step (or none is).
    QuizGate(Option<usize>),
    /// Open or close the explore screen.
    Explore(bool),
    /// Open or close the mock interview.
    Mock(bool),
    /// Play an explorer counterexample on the timeline (simulator), at the
    /// link's step; the URL then carries the link.
    PlayLesson(Rc<locklab_core::lesson::worded::PageLesson>, ExploreLink),
    /// Class mode.
    Class(ClassAction),
    /// Show an opened history or capture on the timeline (`None`: close it).
    Opened(Option<Rc<locklab_core::history::open::Opened>>),
}

/// What a class's page can be told or asked to do.
#[derive(Clone, Debug, PartialEq)]
pub enum ClassAction {
    /// Presenter: start a class from this page.
    Start,
    /// Join the class with this code, with an optional nickname.
    Join {
        code: ClassCode,
        name: Option<String>,
    },
    /// The class a reload found in `sessionStorage`.
    Restore(String),
    /// What the class's WebSocket reported.
    Socket(SocketEvent),
    /// Open a new class WebSocket (the backoff passed).
    Reconnect,
    /// Presenter: ask the room the next step's quiz.
    Ask,
    Reveal,
    End,
    TogglePanel,
    /// Follower: answer the open question.
    Answer(Answer),
    FollowAgain,
    /// Presenter: open the explorer to pick a drill for the room.
    PickDrill,
    /// Presenter: push this design (as `?explore=` names it) to the room
    /// as a "break my lock" drill.
    PushDrill(String),
    /// Follower: search the pushed drill in this page's explorer.
    TakeDrill,
    /// The explorer finished searching `design` (a follower reports the
    /// drill's result).
    DrillDone {
        design: String,
        found: bool,
        schedules: u64,
    },
    /// Leave the class (or close its summary).
    Leave,
}

impl Action {
    /// A move of the user's own, which takes a follower off the
    /// presenter's position (play's timer ticks are not new moves).
    fn is_own_move(&self) -> bool {
        matches!(
            self,
            Action::SelectLesson(_)
                | Action::CloseLesson
                | Action::Run { .. }
                | Action::Advance(_)
                | Action::Inject(_)
                | Action::NextLesson
                | Action::PlayLesson(..)
                | Action::Explore(true)
        ) || matches!(self, Action::Transport(t) if *t != Transport::Tick)
    }
}

/// The real driver's inputs, from the app's socket and fetch glue.
#[derive(Clone, Debug, PartialEq)]
pub enum RealInput {
    Opened,
    Message(String),
    Closed(String),
    Health(Result<Health, String>),
}

impl Reducible for State {
    type Action = Action;

    /// Every action, then class mode's part: a follower's own move is
    /// looking around; a presenter's position (and a real run's new
    /// events) go to the room.
    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let own = action.is_own_move();
        let relay = matches!(action, Action::Real(RealInput::Message(_)));
        let next = self.act(action);
        if let Some(c) = &next.class {
            let mut c = c.borrow_mut();
            if own {
                c.look_around();
            }
            if c.is_presenter() {
                c.moved(next.class_position());
                if let (true, Some(l)) = (relay && next.driver == DriverKind::Real, &next.lesson) {
                    c.relay_live(&l.borrow().trace().events);
                }
            }
        }
        next
    }
}

/// The state as the components share it.
pub type AppContext = UseReducerHandle<State>;

mod act;
#[cfg(test)]
mod tests;
