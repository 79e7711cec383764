//! One core [`Environment`] for the etcd and ZooKeeper runs. Both keep
//! their lesson time, client faults, trace and judges in a
//! [`LessonState`] and differ only in how a command reaches the service,
//! how time passes while requests block, which faults the service takes
//! and what a step starts with: [`ServiceParts`] is that difference, and
//! [`ServiceEnv`] is everything else, written once (issue 36: the two
//! runs' `Environment` impls were line-for-line twins). The env owns the
//! [`LessonState`] and hands it to the service's parts, so neither run
//! carries its own copy of the accessors to it.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use locklab_core::actor::{Actor, Names};
use locklab_core::client::Program;
use locklab_core::fault::Fault;
use locklab_core::lesson::metrics::Metrics;
use locklab_core::lesson::run::{refuse_crashed, Environment};
use locklab_core::lesson::{Lesson, MetricsSpec};
use locklab_core::trace::{Event, EventKind};
use locklab_core::Reply;

use super::lesson_state::{play, LessonState};
use crate::real::lesson::{RealLessonError, RealReport};

/// What one lock service's run adds to the [`LessonState`] both share
/// (handed to each part as `st`).
pub(crate) trait ServiceParts {
    /// How a refusal names the service's lessons ("an etcd lesson").
    const LESSON: &'static str;
    /// The check that keeps metrics steps away from this run.
    const CHECK: &'static str;
    /// Sleep until `until`, putting what happens meanwhile on the timeline.
    fn sleep_until(&mut self, st: &mut LessonState, until: Instant);
    /// Send `argv` as `client` to `member`: the simulator's reply, or none.
    fn send(
        &mut self,
        st: &mut LessonState,
        index: usize,
        client: &str,
        member: u32,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String>;
    /// Read the lock bars off the service (`by`: the client that acted).
    fn observe(&mut self, st: &mut LessonState, by: Option<u32>);
    /// Inject `fault` (already on the trace): the step's note, if any.
    fn inject(&mut self, st: &mut LessonState, fault: &Fault) -> Result<Option<String>, String>;
    /// Before a step: collect what happened since the last one.
    fn begin(&mut self, st: &mut LessonState);
    /// The service and its version, for the report.
    fn version(&self) -> String;
}

/// Sleep until `until` a slice of at most `slice` at a time, `pass`
/// spending each slice (up to the instant it is given) on looking at the
/// service: how a run lets lesson time pass while things happen on it.
pub(super) fn in_slices(until: Instant, slice: Duration, mut pass: impl FnMut(Instant)) {
    while Instant::now() < until {
        pass(until.min(Instant::now() + slice));
    }
}

/// A lesson being played on a managed lock service: core's
/// [`Environment`] over the service's [`ServiceParts`]. It derefs to them,
/// so a caller reaches the service's own methods (`driver`, `leader`).
pub struct ServiceEnv<S> {
    /// Lesson time, client faults, the trace and its judges.
    pub(crate) st: LessonState,
    pub(crate) run: S,
}

impl<S> Deref for ServiceEnv<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.run
    }
}

impl<S> DerefMut for ServiceEnv<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.run
    }
}

impl<S> ServiceEnv<S> {
    /// What the run keeps whatever the service: its trace and judges.
    pub(crate) fn state(&self) -> &LessonState {
        &self.st
    }

    pub(crate) fn state_mut(&mut self) -> &mut LessonState {
        &mut self.st
    }

    pub fn events(&self) -> &[Event] {
        &self.st.events
    }

    /// Per step, what was sent or done differently from the simulator.
    pub fn notes(&self) -> &BTreeMap<usize, String> {
        &self.st.notes
    }

    /// A paused client acts once its pause is over (it sends nothing
    /// meanwhile).
    fn wait_paused(&mut self, client: &str)
    where
        S: ServiceParts,
    {
        if let Some(until) = self.st.paused.remove(client) {
            self.run.sleep_until(&mut self.st, until);
            if let Ok(cid) = self.st.cid(client) {
                self.st.record(Actor::Client(cid), EventKind::Resumed);
            }
        }
    }
}

/// Play `lesson` on the service `env` runs and report it.
pub(super) fn play_on<S: ServiceParts>(mut env: ServiceEnv<S>, lesson: &Lesson) -> Result<RealReport, RealLessonError> {
    let results = play(lesson, &mut env)?;
    Ok(env.st.report(env.run.version(), results))
}

impl<S: ServiceParts> Environment for ServiceEnv<S> {
    fn command(
        &mut self,
        index: usize,
        client: &str,
        node: Option<u32>,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String> {
        refuse_crashed(&self.st.crashed, client)?;
        self.wait_paused(client);
        let member = node.unwrap_or(self.st.leader);
        self.run.send(&mut self.st, index, client, member, argv)
    }

    fn wait(&mut self, _index: usize, ms: u64) -> Result<(), String> {
        let until = Instant::now() + self.st.wall(ms);
        self.run.sleep_until(&mut self.st, until);
        self.run.observe(&mut self.st, None);
        Ok(())
    }

    fn fault(&mut self, index: usize, fault: &Fault) -> Result<(), String> {
        self.st.record(Actor::World, EventKind::Fault { fault: fault.clone() });
        if let Some(n) = self.run.inject(&mut self.st, fault)? {
            self.st.add_note(index, n);
        }
        self.run.observe(&mut self.st, None);
        Ok(())
    }

    fn launch(&mut self, _index: usize, _client: &str, _program: &Program, _background: bool) -> Result<(), String> {
        Err(format!("client programs speak Redis; {} types its commands", S::LESSON))
    }

    fn write(&mut self, _index: usize, client: &str, token: Option<i64>, value: &str) -> Result<String, String> {
        self.wait_paused(client);
        self.st.write(client, token, value)
    }

    fn hold(&mut self, _index: usize, client: &str, key: &str, holds: bool) -> Result<(), String> {
        self.st.hold(client, key, holds)
    }

    fn metrics(&mut self, _index: usize, _spec: &MetricsSpec, _clients: &[String]) -> Result<Metrics, String> {
        Err(format!("metrics are refused by {}", S::CHECK))
    }

    fn begin_step(&mut self, _index: usize) -> Result<(), String> {
        self.run.begin(&mut self.st);
        Ok(())
    }

    fn now(&self) -> u64 {
        self.st.now()
    }

    fn trace_len(&self) -> usize {
        self.st.events.len()
    }

    fn names(&self) -> &Names {
        &self.st.names
    }
}
