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

impl State {
    // long: the reducer: one arm per Action
    fn act(self: Rc<Self>, action: Action) -> Rc<Self> {
        let mut next = (*self).clone();
        next.notice = None;
        match action {
            Action::SetLang(lang) => {
                next.lang = lang;
                if let Some(r) = &next.real {
                    r.borrow_mut().set_lang(lang);
                }
            }
            Action::Opened(o) => {
                if o.is_some() {
                    if let Some(r) = &next.real {
                        r.borrow_mut().close_lesson();
                    }
                    next.lesson = None;
                    next.explore = false;
                    next.mock = false;
                }
                next.opened = o;
                next.playing = false;
                next.rev += 1;
            }
            Action::SelectLesson(id) => {
                if let Some(l) = catalog::find(&id).filter(|_| next.lesson_id().as_deref() != Some(id.as_str())) {
                    next.opened = None;
                    next.explore_link = None;
                    next.lesson = Some(play(l, next.seed, 0, next.real.as_ref()));
                    next.playing = false;
                    next.active = 0;
                    next.rev += 1;
                    if next.quiz {
                        next.reseed_quiz();
                    }
                }
            }
            Action::Mock(open) => {
                next.mock = open;
                next.explore = false;
                next.playing = false;
            }
            Action::Explore(open) => {
                next.explore = open;
                next.playing = false;
                // A fresh screen, or back to what was there: not a link.
                next.explore_link = None;
            }
            Action::PlayLesson(lesson, link) => {
                // A driver holds `&'static` lessons (the catalogue's);
                // a counterexample is made on demand, so each one played
                // is leaked — a few kilobytes per press of "play".
                let lesson: &'static locklab_core::lesson::worded::PageLesson = Box::leak(Box::new((*lesson).clone()));
                let pos = query::parse_step(link.step.as_deref(), lesson.steps.len());
                next.lesson = Some(play(lesson, lesson.seed, pos, None));
                next.explore_link = Some(ExploreLink { step: None, ..link });
                next.explore = false;
                next.playing = false;
                next.active = 0;
                next.rev += 1;
            }
            Action::CloseLesson => {
                if let Some(r) = &next.real {
                    r.borrow_mut().close_lesson();
                }
                next.lesson = None;
                next.explore_link = None;
                next.playing = false;
                next.active = 0;
                next.rev += 1;
            }
            Action::SelectClient(tab) => next.active = tab,
            Action::Run { tab, line } => {
                match (&next.lesson, &next.real) {
                    (Some(s), _) => s.borrow_mut().run_line(tab, &line),
                    (None, Some(r)) => r.borrow_mut().type_line(Client::from_index(tab).letter(), &line),
                    (None, None) => next.lab.borrow_mut().run(Client::from_index(tab), &line),
                }
                next.active = tab;
                next.rev += 1;
            }
            Action::Advance(ms) => {
                match &next.lesson {
                    Some(s) => s.borrow_mut().advance(ms),
                    None => next.lab.borrow_mut().advance(ms),
                }
                next.rev += 1;
            }
            Action::ResetLab => {
                next.lab = Rc::new(RefCell::new(SimLab::new()));
                next.rev += 1;
            }
            Action::EngineLoaded(loaded) => {
                let loaded_ok = loaded.is_ok();
                let mut lab = next.lab.borrow_mut();
                let mut sim = match &next.lesson {
                    Some(Driver::Sim(s)) => Some(s.borrow_mut()),
                    _ => None,
                };
                match loaded {
                    Ok(()) => {
                        lab.connect();
                        if let Some(s) = sim.as_mut() {
                            s.connect();
                        }
                    }
                    Err(e) => {
                        let e = format!("{}: {e}", crate::i18n::Text::SimFailed.get(next.lang));
                        lab.error = Some(e.clone());
                        if let Some(s) = sim.as_mut() {
                            s.error = Some(e);
                        }
                    }
                }
                drop((lab, sim));
                next.engine = Some(loaded_ok);
                next.rev += 1;
            }
            Action::ToggleHelp => next.help_open = !next.help_open,
            Action::CloseHelp => next.help_open = false,
            Action::SetSpeed(i) => next.speed = i.min(SPEEDS.len() - 1),
            Action::ToggleQuiz => {
                next.quiz = !next.quiz;
                if next.quiz {
                    next.reseed_quiz();
                }
            }
            Action::Transport(t) => {
                let Some(s) = next.lesson.clone() else {
                    next.playing = false;
                    return Rc::new(next);
                };
                let mut s = s.borrow_mut();
                // Interview mode: nothing moves past an unanswered question.
                let pos = s.position();
                let blocked = next.quiz
                    && next.quiz_gate == Some(pos)
                    && match t {
                        Transport::Forward | Transport::End | Transport::Tick | Transport::TogglePlay => true,
                        Transport::Seek(n) => n > pos,
                        Transport::Back | Transport::Home => false,
                    };
                if blocked {
                    next.playing = false;
                    return Rc::new(next);
                }
                match t {
                    Transport::TogglePlay => {
                        if !next.playing && s.is_finished() {
                            s.goto(0);
                        }
                        next.playing = !next.playing;
                    }
                    Transport::Tick => {
                        // A real step still on its way: let it land first.
                        if next.playing && !s.is_busy() && !s.forward() {
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
                        // Interview mode: starting over is a new attempt.
                        if next.quiz {
                            next.reseed_quiz();
                        }
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
                // The toolbox's faults are the simulator's; the real
                // driver's go to its processes (`RealFault`).
                if let Some(Driver::Sim(s)) = &next.lesson {
                    if let Err(e) = s.borrow_mut().inject(fault) {
                        next.notice = Some(e);
                    }
                    next.rev += 1;
                }
            }
            Action::SetDriver(driver) => {
                if driver != next.driver {
                    let lesson = next.lesson.as_ref().map(|s| s.borrow().lesson());
                    next.driver = driver;
                    next.real = (driver == DriverKind::Real).then(|| Rc::new(RefCell::new(RealDriver::new(next.lang))));
                    next.connection += 1;
                    // The same lesson, from its start on the new driver (a
                    // real run cannot jump into the middle of one).
                    next.lesson = lesson.map(|l| play(l, next.seed, 0, next.real.as_ref()));
                    next.playing = false;
                    next.rev += 1;
                }
            }
            Action::Real(input) => {
                if let Some(r) = &next.real {
                    let mut r = r.borrow_mut();
                    match input {
                        RealInput::Opened => r.opened(),
                        RealInput::Message(text) => r.receive(&text),
                        RealInput::Closed(reason) => {
                            r.lost(reason);
                            next.playing = false;
                        }
                        RealInput::Health(h) => r.health_result(h),
                    }
                    next.rev += 1;
                }
            }
            Action::RealFault { fault, node } => {
                if let Some(r) = &next.real {
                    r.borrow_mut().fault(fault, node);
                    next.rev += 1;
                }
            }
            Action::RealTopology(kind) => {
                if let Some(r) = &next.real {
                    r.borrow_mut().topology(kind);
                    next.lesson = None;
                    next.rev += 1;
                }
            }
            Action::RealFactor(f) => {
                if let Some(r) = &next.real {
                    r.borrow_mut().set_factor(f);
                    next.playing = false;
                    next.rev += 1;
                }
            }
            Action::QuizGate(g) => next.quiz_gate = g,
            Action::TogglePresent => next.present = !next.present,
            Action::ToggleTheme => next.dark = !next.dark,
            Action::ToggleLegend => next.legend = !next.legend,
            Action::NextLesson => {
                let id = next.lesson_id();
                let lessons = catalog::all();
                let after = id
                    .and_then(|id| lessons.iter().position(|l| l.id == id))
                    .and_then(|i| lessons.get(i + 1));
                if let Some(l) = after {
                    next.explore_link = None;
                    next.lesson = Some(play(l, next.seed, 0, next.real.as_ref()));
                    next.playing = false;
                    next.active = 0;
                    next.rev += 1;
                    if next.quiz {
                        next.reseed_quiz();
                    }
                }
            }
            Action::Reconnect => {
                if let Some(r) = &next.real {
                    r.borrow_mut().connecting();
                    next.connection += 1;
                    next.rev += 1;
                }
            }
            Action::Class(a) => next.class_act(a),
        }
        Rc::new(next)
    }

    // long: one arm per class action
    fn class_act(&mut self, a: ClassAction) {
        let class = self.class.clone();
        match (a, class) {
            (ClassAction::Start, None) => {
                self.class = Some(Rc::new(RefCell::new(Class::start())));
                self.class_panel = true;
                self.class_connection += 1;
            }
            (ClassAction::Join { code, name }, None) => {
                self.class = Some(Rc::new(RefCell::new(Class::join(code, name))));
                self.driver = DriverKind::Sim;
                self.real = None;
                self.class_connection += 1;
            }
            (ClassAction::Restore(saved), None) => {
                self.class = Class::restore(&saved).map(|c| Rc::new(RefCell::new(c)));
                self.class_connection += 1;
            }
            (ClassAction::Leave, Some(_)) => self.class = None,
            (ClassAction::TogglePanel, Some(_)) => self.class_panel = !self.class_panel,
            (ClassAction::PickDrill, Some(_)) => {
                self.explore = true;
                self.mock = false;
                self.playing = false;
                self.explore_link = None;
            }
            (a, Some(c)) => {
                let mut c = c.borrow_mut();
                let follow = match a {
                    ClassAction::Socket(SocketEvent::Opened) => {
                        c.opened();
                        None
                    }
                    ClassAction::Socket(SocketEvent::Message(m)) => c.receive(&m),
                    ClassAction::Socket(SocketEvent::Closed(why)) => {
                        c.lost(why, &crate::class::class_home());
                        None
                    }
                    ClassAction::Reconnect => {
                        c.connecting();
                        self.class_connection += 1;
                        None
                    }
                    ClassAction::Ask => {
                        if let Some((lesson, step, reply)) = self.next_quiz() {
                            c.ask(lesson, step, reply);
                        }
                        None
                    }
                    ClassAction::Reveal => {
                        c.reveal();
                        None
                    }
                    ClassAction::End => {
                        c.end();
                        None
                    }
                    ClassAction::Answer(answer) => {
                        c.answer(answer);
                        None
                    }
                    ClassAction::PushDrill(design) => {
                        c.push_drill(design);
                        None
                    }
                    ClassAction::TakeDrill => {
                        if let Some(design) = c.take_drill() {
                            self.explore = true;
                            self.mock = false;
                            self.playing = false;
                            self.explore_link = Some(ExploreLink {
                                design,
                                seed: None,
                                step: None,
                            });
                        }
                        None
                    }
                    ClassAction::DrillDone {
                        design,
                        found,
                        schedules,
                    } => {
                        c.drill_done(&design, found, schedules);
                        None
                    }
                    ClassAction::FollowAgain => {
                        let p = c.follow_again();
                        // A fresh replay: what the follower did off script goes.
                        self.lesson = None;
                        Some(Follow::Goto(p))
                    }
                    _ => None,
                };
                drop(c);
                if let Some(Follow::Goto(p)) = follow {
                    self.follow(&p);
                }
            }
            _ => {}
        }
        self.rev += 1;
    }

    /// A follower replays to the presenter's position with its own engine
    /// (a step on in the same lesson is a move of the same run).
    fn follow(&mut self, p: &Position) {
        self.dark = p.dark;
        self.seed = p.seed.unwrap_or(DEFAULT_SEED);
        self.explore = false;
        self.explore_link = None;
        self.playing = false;
        let Some(l) = p.lesson.as_deref().and_then(catalog::find) else {
            self.lesson = None;
            return;
        };
        let pos = p.step.min(l.steps.len());
        match &self.lesson {
            Some(Driver::Sim(s)) if s.borrow().lesson.id == l.id && s.borrow().seed == self.seed => {
                s.borrow_mut().goto(pos)
            }
            _ => {
                self.lesson = Some(play(l, self.seed, pos, None));
                self.active = 0;
            }
        }
    }

    /// The quiz of the step about to run, as the presenter asks it: the
    /// lesson, the step, and the reply that step gets. On the simulator
    /// the reply is known before the step runs (a replay one step on, with
    /// the same seed); on real servers it is the reply the lesson expects.
    pub fn next_quiz(&self) -> Option<(String, usize, String)> {
        let d = self.lesson.as_ref()?;
        let s = d.borrow();
        let (l, pos) = (s.lesson(), s.position());
        let step = l.steps.get(pos).filter(|st| st.quiz.is_some())?;
        let reply = match d {
            Driver::Sim(_) => {
                let ahead = SimDriver::new(l, self.seed, pos + 1);
                ahead.results().get(pos).and_then(|r| r.reply.clone())
            }
            Driver::Real(_) => None,
        };
        let expected = || match &step.expect {
            Some(locklab_core::lesson::Expect::Exact(e)) => e.clone(),
            _ => String::new(),
        };
        Some((l.id.clone(), pos, reply.unwrap_or_else(expected)))
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

    /// Interview mode is in the URL with its shuffle seed: a link opens the
    /// same attempt; turning it on, or starting the lesson over, is a new
    /// attempt with a new seed.
    #[test]
    fn an_interview_link_keeps_its_shuffle_and_a_new_attempt_reseeds() {
        let q = Query::parse("?lang=en&lesson=35&seed=1&driver=sim&quiz=4821");
        let s = State::from_query(&q, Lang::En);
        assert!(s.quiz);
        assert_eq!((s.quiz_seed, s.query()), (4821, q));
        let s = reduce(s, Action::Transport(Transport::Forward));
        assert_eq!(s.quiz_seed, 4821, "stepping is the same attempt");
        let s = reduce(s, Action::Transport(Transport::Home));
        let again = s.quiz_seed;
        assert_ne!(again, 4821, "starting over reseeds");
        assert!(s.query().to_search().ends_with(&format!("quiz={again}")));
        let s = reduce(s, Action::ToggleQuiz);
        assert!(!s.quiz && !s.query().to_search().contains("quiz="));
        let s = reduce(s, Action::ToggleQuiz);
        assert!(s.quiz && s.quiz_seed != again && (1..1_000_000).contains(&s.quiz_seed));
    }

    #[test]
    fn actions_change_what_they_say() {
        let s = State::from_query(&Query::default(), Lang::En);
        let s = reduce(s, Action::SetLang(Lang::Zh));
        assert_eq!(s.lang, Lang::Zh);
        let s = reduce(
            s,
            Action::Run {
                tab: 1,
                line: "SET lock t NX PX 1000".into(),
            },
        );
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
        // Interview mode: a waiting question blocks stepping on, not back.
        let s = reduce(s, Action::ToggleQuiz);
        let s = reduce(s, Action::QuizGate(Some(1)));
        let s = reduce(s, Action::Transport(Transport::Forward));
        assert_eq!(s.step().as_deref(), Some("1"), "blocked");
        let s = reduce(s, Action::Transport(Transport::End));
        assert_eq!(s.step().as_deref(), Some("1"), "blocked");
        let s = reduce(s, Action::QuizGate(None));
        let s = reduce(s, Action::Transport(Transport::Forward));
        assert_eq!(s.step().as_deref(), Some("2"));
        let s = reduce(s, Action::ToggleQuiz);
        let s = reduce(s, Action::TogglePresent);
        assert!(s.present && s.query().to_search().contains("present=1"));
        let s = reduce(s, Action::NextLesson);
        assert_eq!(s.lesson_id().as_deref(), Some("08"));
        let s = reduce(s, Action::ResetLab);
        assert!(s.lab.borrow().transcript(Client::B).is_empty());
        let s = reduce(s, Action::Transport(Transport::TogglePlay));
        assert!(s.playing);
        let s = reduce(s, Action::Transport(Transport::Home));
        assert!(!s.playing);
    }

    /// A shared counterexample: the URL opens the explore screen with the
    /// link (not a lesson), and once the counterexample plays the URL is
    /// the link again, with the step the viewer stands on.
    #[test]
    fn an_explore_link_in_and_out() {
        let q = Query::parse("?lang=en&lesson=05&explore=01-bare-del&seed=7&step=3");
        let s = State::from_query(&q, Lang::En);
        assert!(s.explore && s.lesson.is_none(), "the link wins over lesson=");
        assert_eq!(s.query().to_search(), "?lang=en&explore=01-bare-del&step=3&seed=7");
        let link = s.explore_link.clone().expect("link");
        assert_eq!((link.seed, link.step.as_deref()), (Some(7), Some("3")));
        // What the explore screen hands over once the search is done.
        let spec = locklab_core::explore::designs::parse(locklab_core::explore::designs::FILES[0].1).expect("design");
        let mut job = locklab_core::explore::job::Job::new(&spec).expect("job");
        while !job.step(5_000) {}
        let lesson = Rc::new(job.result().lesson.expect("a counterexample"));
        let s = reduce(s, Action::PlayLesson(lesson, link));
        assert!(!s.explore);
        assert_eq!(s.step().as_deref(), Some("3"), "the link's step");
        assert_eq!(s.query().to_search(), "?lang=en&explore=01-bare-del&step=3&seed=7");
        let s = reduce(s, Action::Transport(Transport::Forward));
        assert_eq!(s.query().to_search(), "?lang=en&explore=01-bare-del&step=4&seed=7");
        // Leaving the counterexample leaves the link.
        let s = reduce(s, Action::SelectLesson("05".into()));
        assert_eq!(s.query().to_search(), "?lang=en&lesson=05&seed=7&driver=sim");
        let s = reduce(s, Action::Explore(true));
        assert!(s.explore_link.is_none());
    }

    #[test]
    fn the_driver_switch_moves_the_lesson_to_the_real_driver() {
        let s = State::from_query(&Query::parse("?lesson=07&step=2"), Lang::En);
        assert_eq!(s.step().as_deref(), Some("2"));
        let s = reduce(s, Action::SetDriver(DriverKind::Real));
        assert_eq!(s.query().to_search(), "?lang=en&lesson=07&seed=1&driver=real");
        assert_eq!(s.connection, 1);
        let real = s.real.clone().unwrap();
        // The same object plays the lesson: what the socket brings moves it.
        let s = reduce(s, Action::Real(RealInput::Opened));
        assert!(real.borrow_mut().take_outbox()[0].contains(r#""id":"07""#));
        let s = reduce(s, Action::Transport(Transport::Forward));
        let s = reduce(
            s,
            Action::Real(RealInput::Message(
                r#"{"type":"lesson","id":"07","steps":5,"names":{"clients":["A","B"],"nodes":["redis"]},"notice":null}"#.into(),
            )),
        );
        assert_eq!(real.borrow_mut().take_outbox(), [r#"{"type":"lesson_step"}"#]);
        let step = r#"{"type":"step","result":{"index":0,"actor":"A","shown":"SET","reply":"OK","expected":"OK","ok":true,"at_ms":0,"trace_len":1},"note":null}"#;
        let s = reduce(s, Action::Real(RealInput::Message(step.into())));
        assert_eq!(s.step().as_deref(), Some("1"));
        // Lost: play stops, the banner has its reason; Reconnect opens anew.
        let s = reduce(s, Action::Transport(Transport::TogglePlay));
        let s = reduce(s, Action::Real(RealInput::Closed("gone".into())));
        assert!(!s.playing);
        assert_eq!(real.borrow().problem().as_deref(), Some("gone"));
        let s = reduce(s, Action::Reconnect);
        assert_eq!(s.connection, 2);
        // Back to the simulator: a fresh simulated run of the same lesson.
        let s = reduce(s, Action::SetDriver(DriverKind::Sim));
        assert!(s.real.is_none());
        assert_eq!(s.lesson_id().as_deref(), Some("07"));
        assert_eq!(s.step(), None);
    }

    fn class_msg(s: State, text: &str) -> State {
        reduce(s, Action::Class(ClassAction::Socket(SocketEvent::Message(text.into()))))
    }

    /// A follower replays the presenter's moves with its own engine; a
    /// move of its own is looking around, "follow again" snaps back.
    #[test]
    fn a_follower_replays_looks_around_and_follows_again() {
        let s = State::from_query(&Query::parse("?class=abc234&lang=zh"), Lang::En);
        assert_eq!(s.query().to_search(), "?lang=zh&class=ABC234");
        let s = reduce(s, Action::Class(ClassAction::Socket(SocketEvent::Opened)));
        let s = class_msg(
            s,
            r#"{"type":"joined","member":"m1","position":{"lesson":"07","step":2,"seed":7,"dark":true},"score":0,"since":"1-0"}"#,
        );
        assert_eq!(
            (s.lesson_id().as_deref(), s.step().as_deref(), s.seed, s.dark),
            (Some("07"), Some("2"), 7, true)
        );
        let s = class_msg(
            s,
            r#"{"type":"moved","id":"2-0","position":{"lesson":"07","step":3,"seed":7}}"#,
        );
        assert_eq!(s.step().as_deref(), Some("3"));
        let s = reduce(s, Action::Transport(Transport::Back));
        assert!(
            !s.class.as_ref().unwrap().borrow().following,
            "its own step is looking around"
        );
        let s = class_msg(
            s,
            r#"{"type":"moved","id":"3-0","position":{"lesson":"07","step":4,"seed":7}}"#,
        );
        assert_eq!(s.step().as_deref(), Some("2"), "the presenter's move waits");
        let s = reduce(s, Action::Class(ClassAction::FollowAgain));
        assert_eq!(s.step().as_deref(), Some("4"));
        assert!(s.class.as_ref().unwrap().borrow().following);
        assert_eq!(
            s.query().to_search(),
            "?lang=zh&class=ABC234",
            "the URL stays the join URL"
        );
    }

    /// The presenter's every move goes to the room once; asking sends the
    /// reply the step about to run gets (a replay one step on).
    #[test]
    fn a_presenter_relays_its_moves_and_asks_with_the_reply() {
        let s = State::from_query(&Query::parse("?lesson=01&present=1"), Lang::En);
        let s = reduce(s, Action::Class(ClassAction::Start));
        let class = s.class.clone().unwrap();
        let s = reduce(s, Action::Class(ClassAction::Socket(SocketEvent::Opened)));
        let s = class_msg(s, r#"{"type":"started","code":"ABC234","secret":"k","join_url":"u"}"#);
        let s = reduce(s, Action::Transport(Transport::Forward));
        let out = class.borrow_mut().take_outbox().join("\n");
        assert!(
            out.contains(r#""step":0"#) && out.contains(r#""lesson":"01","step":1"#),
            "{out}"
        );
        let mut s = s;
        while s.next_quiz().is_none() {
            s = reduce(s, Action::Transport(Transport::Forward));
        }
        let (lesson, step, reply) = s.next_quiz().expect("a step with a quiz");
        let here = s.step();
        assert_eq!(s.next_quiz().map(|q| q.1), Some(step));
        assert_eq!(s.step(), here, "asking does not move the presenter");
        let ahead = reduce(s.clone(), Action::Transport(Transport::Forward));
        let got = ahead.lesson.as_ref().unwrap().borrow().results()[step].reply.clone();
        assert_eq!((lesson.as_str(), Some(reply.clone())), ("01", got));
        assert!(!reply.is_empty());
    }
}
