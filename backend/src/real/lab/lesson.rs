//! A lesson played from the page on real servers: its start (on the
//! session's servers, a managed topology, or a lock service), its steps,
//! its timed programs, and the one shape of a step's answer whatever ran
//! it. Apart from the lab's message handling because a lesson run has
//! its own state and deadlines.

use locklab_core::lesson::run::StepResult;
use locklab_core::lesson::worded::PageLesson;
use locklab_core::lesson::{Lang, Lesson};
use locklab_core::protocol::ServerMsg;
use locklab_core::trace::Event;

use super::{LabError, LabState};
use crate::real::lesson::{self as real_lesson, RealEnv, RealLessonError, RealLessonRun};
use crate::real::observe::Look;
use crate::real::play::{self, Play};
use crate::real::topology::{Servers, TopologyKind};
impl LabState {
    /// `lesson`: a fresh session on the lesson's topology, and a run at
    /// step 0. `sent`: the lesson itself, when it is not the catalogue's
    /// (a counterexample from the page's explorer).
    pub(super) fn start_lesson(
        &mut self,
        id: &str,
        sent: Option<Box<PageLesson>>,
        factor: Option<u64>,
        lang: Option<Lang>,
        out: &mut Vec<ServerMsg>,
    ) -> Result<(), LabError> {
        self.run = None;
        self.service = None;
        let lang = lang.unwrap_or_default();
        let lesson = match sent {
            Some(l) if l.id == id.trim() => {
                let l = l.decoded()?;
                l.validate_sent()?;
                l
            }
            Some(l) => {
                return Err(LabError::NotTheLessonSent {
                    sent: l.id.clone(),
                    id: id.to_owned(),
                })
            }
            None => find_lesson(id)?,
        };
        let factor = factor.unwrap_or_else(|| real_lesson::default_factor(&lesson));
        if !(1..=10_000).contains(&factor) {
            return Err(LabError::Factor(factor));
        }
        let unsupported = |why: String| {
            LabError::Run(RealLessonError::Unsupported {
                id: lesson.id.clone(),
                why,
            })
        };
        play::check_supported_lang(&lesson, lang).map_err(unsupported)?;
        if let Play::Service(service) = Play::of(&lesson) {
            if let Some(url) = self.labs.redis.clone() {
                play::check_target(&lesson, &Servers::external(url), lang).map_err(unsupported)?;
            }
            return self.start_service(&lesson, service, factor, out);
        }
        // Nothing from before may leak in: a new session, and (managed) the
        // lesson's topology as new.
        self.session = None;
        self.lesson_topology(&lesson, lang, &unsupported)?;
        self.ensure_session(out)?;
        let (Some(session), Some(topology)) = (self.session.as_mut(), self.topology.as_mut()) else {
            return Err(LabError::NoSession);
        };
        let mut env = RealEnv { session, topology };
        let run = RealLessonRun::start(&lesson, &mut env, factor, lang)?;
        out.push(ServerMsg::Lesson {
            id: lesson.id.clone(),
            steps: run.steps(),
            server_version: run.server_version().to_owned(),
            factor: run.factor(),
            // The lesson's kind (the hello says whether it is the user's
            // server): what the browser lays its lanes out by.
            topology: real_lesson::topology_kind(&lesson).into(),
            nodes: topology.nodes(),
            names: session.names().clone(),
            notice: run.notice().map(str::to_owned),
        });
        self.run = Some(run);
        Ok(())
    }

    /// Where a lesson plays: the user's server (when the lesson can run
    /// there), or the lesson's managed topology, started, or reset when it
    /// is already the one running.
    pub(super) fn lesson_topology(
        &mut self,
        lesson: &Lesson,
        lang: Lang,
        unsupported: &dyn Fn(String) -> LabError,
    ) -> Result<(), LabError> {
        match self.labs.redis.clone() {
            Some(url) => {
                let external = Servers::external(url);
                play::check_target(lesson, &external, lang).map_err(unsupported)?;
                if !matches!(self.topology, Some(Servers::External(_))) {
                    self.topology = None;
                    self._slot = None;
                    self.topology = Some(external);
                }
            }
            None => {
                let kind = real_lesson::topology_kind(lesson);
                let reused = match self.topology.as_mut() {
                    Some(t) if t.kind() == Some(kind) => t.reset().is_ok(),
                    // The user chose Sentinel for a master and a replica:
                    // the lesson's failover is then Sentinel's own.
                    Some(t) if kind == TopologyKind::Replicated && t.kind() == Some(TopologyKind::Sentinel) => {
                        t.reset().is_ok()
                    }
                    _ => false,
                };
                if !reused {
                    self.start_managed(kind)?;
                }
            }
        }
        Ok(())
    }

    /// `lesson_step`: the next step's events, its result, and at the end
    /// whether the lesson passed.
    pub(super) fn lesson_step(&mut self, out: &mut Vec<ServerMsg>) {
        if let Some((run, _)) = self.service.as_mut() {
            let head = (run.lesson().id.clone(), run.steps(), run.is_finished());
            let go_on = answer_step(head, out, || {
                let stepped = run.step();
                (stepped, run.take_events(), run.is_finished().then(|| run.passed()))
            });
            if !go_on {
                self.service = None;
            }
            return;
        }
        let (Some(run), Some(session), Some(topology)) =
            (self.run.as_mut(), self.session.as_mut(), self.topology.as_mut())
        else {
            out.push(ServerMsg::Error {
                message: "no lesson is running: send {\"type\":\"lesson\",\"id\":\"05\"} first".into(),
            });
            return;
        };
        let head = (run.lesson().id.clone(), run.steps(), run.is_finished());
        let go_on = answer_step(head, out, || {
            let stepped = run.step(&mut RealEnv { session, topology });
            (stepped, run.take_events(), run.is_finished().then(|| run.passed()))
        });
        if !go_on {
            self.run = None;
        }
    }

    /// When a running lesson's background program next needs serving, or
    /// (in free play) a watched lock is due to expire.
    pub(super) fn program_deadline(&self) -> Option<std::time::Instant> {
        match (&self.run, &self.session) {
            (Some(run), _) => run.next_deadline(),
            (None, Some(s)) => self.free.next_deadline().map(|d| {
                // A millisecond late, so the key is surely gone when we look.
                let wait = d.saturating_sub(s.elapsed_ms()) + 1;
                std::time::Instant::now() + std::time::Duration::from_millis(wait)
            }),
            (None, None) => None,
        }
    }

    /// Serve the lesson's background programs (their timers that are due),
    /// or look at free play's locks that are due to expire: the events
    /// that produced.
    pub(super) fn serve_programs(&mut self) -> Vec<ServerMsg> {
        let (Some(run), Some(session), Some(topology)) =
            (self.run.as_mut(), self.session.as_mut(), self.topology.as_mut())
        else {
            if let (None, Some(s), Some(t)) = (&self.run, self.session.as_mut(), self.topology.as_ref()) {
                self.free.observe(s, &t.nodes(), None, Look::None);
                return s
                    .take_events()
                    .into_iter()
                    .map(|event| ServerMsg::Event { event })
                    .collect();
            }
            return Vec::new();
        };
        let mut env = RealEnv { session, topology };
        let served = run.serve(&mut env);
        let mut out: Vec<ServerMsg> = run
            .take_events()
            .into_iter()
            .map(|event| ServerMsg::Event { event })
            .collect();
        if let Err(e) = served {
            self.run = None;
            out.push(ServerMsg::Error {
                message: format!("{e}; the run is over (send a lesson message to start again)"),
            });
        }
        out
    }
}

/// A built-in lesson by id (`5` is `05`).
pub(super) fn find_lesson(id: &str) -> Result<Lesson, LabError> {
    let all = locklab_core::lesson::builtin()?;
    Ok(locklab_core::lesson::find(&all, id.trim())?.clone())
}

/// A step's outcome as [`answer_step`] takes it: the result and its note
/// (or why it could not be carried out), the events it made, and
/// `Some(passed)` when it was the last.
pub(super) type Stepped = (
    Result<Option<(StepResult, Option<String>)>, RealLessonError>,
    Vec<Event>,
    Option<bool>,
);

/// One `lesson_step`'s answer, the same for a run on Redis and on a lock
/// service: after the last step, an error saying so; else `step`'s events,
/// its result and, after the last, `lesson_done`. `false` when the step
/// could not be carried out: the run cannot go on from it.
pub(super) fn answer_step(
    (id, steps, finished): (String, usize, bool),
    out: &mut Vec<ServerMsg>,
    step: impl FnOnce() -> Stepped,
) -> bool {
    if finished {
        out.push(ServerMsg::Error {
            message: format!("lesson {id} is finished ({steps} steps): send a lesson message to play it again"),
        });
        return true;
    }
    let (stepped, events, done) = step();
    out.extend(events.into_iter().map(|event| ServerMsg::Event { event }));
    match stepped {
        Ok(Some((result, note))) => {
            out.push(ServerMsg::Step { result, note });
            if let Some(passed) = done {
                out.push(ServerMsg::LessonDone { passed });
            }
            true
        }
        Ok(None) => {
            out.push(ServerMsg::Error {
                message: "the lesson has no more steps".into(),
            });
            true
        }
        Err(e) => {
            out.push(ServerMsg::Error {
                message: format!("{e}; the run is over (send a lesson message to start again)"),
            });
            false
        }
    }
}
