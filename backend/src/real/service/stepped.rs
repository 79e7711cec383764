//! A lock-service lesson played one step at a time: what the browser's
//! real driver runs for a lesson on etcd or ZooKeeper, or on all four
//! services (lesson 45).
//!
//! `locklab lesson run 43 --real` plays a lesson whole ([`super::run_etcd`],
//! [`super::run_zk`]); the page asks for one step per `lesson_step`
//! message and draws the events as they come. Both go through core's
//! interpreter ([`Progress`]) over the same environments, so a step means
//! the same on the page, in the CLI and on the simulator, and the run is
//! judged by the same rule (`LessonState::outcome`).

use locklab_core::actor::Names;
use locklab_core::lesson::run::{Environment, Progress, StepResult};
use locklab_core::lesson::{Lang, Lesson, LockService};
use locklab_core::protocol::Served;
use locklab_core::trace::Event;

use super::env::ServiceParts;
use super::lesson_state::{real_error, unsupported, LessonState};
use super::{CompareEnv, EtcdEnv, ZkEnv};
use crate::real::lesson::RealLessonError;

/// The managed service a lesson runs on.
enum Service {
    Etcd(Box<EtcdEnv>),
    Zk(Box<ZkEnv>),
    /// Lesson 45's four services side by side.
    Compare(Box<CompareEnv>),
}

impl Service {
    fn env(&mut self) -> &mut dyn Environment {
        match self {
            Service::Etcd(e) => e.as_mut(),
            Service::Zk(z) => z.as_mut(),
            Service::Compare(c) => c.as_mut(),
        }
    }

    /// One service's own run state; `None` for the four together.
    fn state(&self) -> Option<&LessonState> {
        match self {
            Service::Etcd(e) => Some(e.state()),
            Service::Zk(z) => Some(z.state()),
            Service::Compare(_) => None,
        }
    }

    fn events(&self) -> &[Event] {
        match self {
            Service::Compare(c) => c.events(),
            s => s.state().map_or(&[], |st| &st.events),
        }
    }

    fn note(&self, index: usize) -> Option<String> {
        match self {
            Service::Compare(c) => c.note(index),
            s => s.state()?.notes.get(&index).cloned(),
        }
    }

    fn outcome(&self) -> Option<bool> {
        match self {
            Service::Compare(c) => c.outcome(),
            s => s.state()?.outcome(),
        }
    }
}

/// A lesson on a freshly started etcd cluster or ZooKeeper ensemble, at
/// some step; the service stops when the run is dropped.
pub struct ServiceRun {
    progress: Progress,
    service: Service,
    version: String,
    /// Events already handed out by [`ServiceRun::take_events`].
    sent: usize,
}

impl std::fmt::Debug for ServiceRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceRun")
            .field("lesson", &self.progress.lesson().id)
            .field("version", &self.version)
            .field("steps", &self.progress.results().len())
            .finish_non_exhaustive()
    }
}

impl ServiceRun {
    /// Start the service `lesson` needs (seconds: three processes, an
    /// election) and stand at step 0.
    pub fn start(lesson: &Lesson, factor: u64) -> Result<ServiceRun, RealLessonError> {
        let Some(service) = lesson.world.service else {
            return Err(unsupported(lesson, "it does not play on a lock service".into()));
        };
        super::check(lesson, service, Lang::En).map_err(|why| unsupported(lesson, why))?;
        let service = match service {
            LockService::Etcd => Service::Etcd(Box::new(EtcdEnv::start(lesson, factor)?)),
            LockService::Zk => Service::Zk(Box::new(ZkEnv::start(lesson, factor)?)),
            LockService::All => Service::Compare(Box::new(CompareEnv::start(lesson, factor)?)),
        };
        let version = match &service {
            Service::Etcd(e) => e.version(),
            Service::Zk(z) => z.version(),
            Service::Compare(c) => c.version().to_owned(),
        };
        Ok(ServiceRun {
            progress: Progress::new(lesson),
            service,
            version,
            sent: 0,
        })
    }

    /// The next step: its result and the note on how it was sent, or
    /// `None` when the lesson is over.
    pub fn step(&mut self) -> Result<Option<(StepResult, Option<String>)>, RealLessonError> {
        let stepped = match self.progress.step(self.service.env()) {
            Ok(r) => r.cloned(),
            Err(e) => return Err(real_error(self.progress.lesson(), e)),
        };
        Ok(stepped.map(|r| {
            let note = self.service.note(r.index);
            (r, note)
        }))
    }

    /// The trace's events since the last call.
    pub fn take_events(&mut self) -> Vec<Event> {
        let events = self.service.events();
        let new = events[self.sent.min(events.len())..].to_vec();
        self.sent = events.len();
        new
    }

    pub fn is_finished(&self) -> bool {
        self.progress.is_finished()
    }

    /// Every step as expected, and (once over) the lesson's outcome as the
    /// Redis runs judge theirs.
    pub fn passed(&self) -> bool {
        self.progress.results().iter().all(|r| r.ok) && !(self.is_finished() && self.service.outcome() == Some(false))
    }

    pub fn steps(&self) -> usize {
        self.progress.lesson().steps.len()
    }

    pub fn lesson(&self) -> &Lesson {
        self.progress.lesson()
    }

    /// "etcd 3.4.23", "ZooKeeper 3.8.0".
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Lesson ms per wall ms.
    pub fn factor(&self) -> u64 {
        match &self.service {
            Service::Compare(c) => c.factor(),
            s => s.state().map_or(1, |st| st.factor),
        }
    }

    /// The clients and the service's members, as the trace names them.
    pub fn names(&self) -> Names {
        match &self.service {
            Service::Compare(c) => c.trace_names().clone(),
            s => s.state().map(|st| st.names.clone()).unwrap_or_default(),
        }
    }

    /// What the page is told it plays on.
    pub fn served(&self) -> Served {
        match self.service {
            Service::Etcd(_) => Served::Etcd3,
            Service::Zk(_) => Served::Zk3,
            Service::Compare(_) => Served::Compare,
        }
    }
}
