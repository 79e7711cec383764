//! The reducer: what each [`Action`] does to the [`State`], and what a
//! class message does to a follower's. Split from `state.rs`, which keeps
//! the state, its actions and its helpers (issue 36: one seam a file).

use super::*;
use crate::engine::EngineHandle;

impl State {
    // long: the reducer: one arm per Action
    pub(super) fn act(self: Rc<Self>, action: Action) -> Rc<Self> {
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
                    next.select_lesson(l);
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
                    next.select_lesson(l);
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

    /// Play catalogue lesson `l` from its start on the page's driver (a
    /// lesson chosen, or the next one): not a counterexample, so no explore
    /// link; stopped, on the first console; an interview reshuffles.
    fn select_lesson(&mut self, l: &'static locklab_core::lesson::worded::PageLesson) {
        self.explore_link = None;
        self.lesson = Some(play(l, self.seed, 0, self.real.as_ref()));
        self.playing = false;
        self.active = 0;
        self.rev += 1;
        if self.quiz {
            self.reseed_quiz();
        }
    }

    // long: one arm per class action
    pub(super) fn class_act(&mut self, a: ClassAction) {
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
    pub(super) fn follow(&mut self, p: &Position) {
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
