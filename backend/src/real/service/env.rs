//! One core [`Environment`] for the etcd and ZooKeeper runs. Both keep
//! their lesson time, client faults, trace and judges in a
//! [`LessonState`] and differ only in how a command reaches the service,
//! how time passes while requests block, which faults the service takes
//! and what a step starts with: [`ServiceParts`] is that difference, and
//! [`ServiceEnv`] is everything else, written once (issue 36: the two
//! runs' `Environment` impls were line-for-line twins).

use std::ops::{Deref, DerefMut};
use std::time::Instant;

use locklab_core::actor::{Actor, Names};
use locklab_core::client::Program;
use locklab_core::fault::Fault;
use locklab_core::lesson::metrics::Metrics;
use locklab_core::lesson::run::{refuse_crashed, Environment};
use locklab_core::lesson::{Lesson, MetricsSpec};
use locklab_core::trace::EventKind;
use locklab_core::Reply;

use super::lesson_state::{play, LessonState};
use crate::real::lesson::{RealLessonError, RealReport};

/// What one lock service's run adds to the [`LessonState`] both share.
pub(crate) trait ServiceParts {
    /// How a refusal names the service's lessons ("an etcd lesson").
    const LESSON: &'static str;
    /// The check that keeps metrics steps away from this run.
    const CHECK: &'static str;
    fn state(&self) -> &LessonState;
    fn state_mut(&mut self) -> &mut LessonState;
    /// The member a command without a node goes to.
    fn leading(&self) -> u32;
    /// Sleep until `until`, putting what happens meanwhile on the timeline.
    fn sleep_until(&mut self, until: Instant);
    /// Send `argv` as `client` to `member`: the simulator's reply, or none.
    fn send(&mut self, index: usize, client: &str, member: u32, argv: &[Vec<u8>]) -> Result<Option<Reply>, String>;
    /// Read the lock bars off the service (`by`: the client that acted).
    fn observe(&mut self, by: Option<u32>);
    /// Inject `fault` (already on the trace): the step's note, if any.
    fn inject(&mut self, fault: &Fault) -> Result<Option<String>, String>;
    /// Before a step: collect what happened since the last one.
    fn begin(&mut self);
    /// The service and its version, for the report.
    fn version(&self) -> String;

    /// A paused client acts once its pause is over (it sends nothing
    /// meanwhile).
    fn wait_paused(&mut self, client: &str) {
        if let Some(until) = self.state_mut().paused.remove(client) {
            self.sleep_until(until);
            if let Ok(cid) = self.state().cid(client) {
                self.state_mut().record(Actor::Client(cid), EventKind::Resumed);
            }
        }
    }
}

/// A lesson being played on a managed lock service: core's
/// [`Environment`] over the service's [`ServiceParts`]. It derefs to them,
/// so a caller reaches the service's own methods (`driver`, `leader`).
pub struct ServiceEnv<S>(pub(crate) S);

impl<S> Deref for ServiceEnv<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.0
    }
}

impl<S> DerefMut for ServiceEnv<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.0
    }
}

/// Play `lesson` on the service `env` runs and report it.
pub(super) fn play_on<S: ServiceParts>(mut env: ServiceEnv<S>, lesson: &Lesson) -> Result<RealReport, RealLessonError> {
    let results = play(lesson, &mut env)?;
    Ok(env.0.state().report(env.0.version(), results))
}

impl<S: ServiceParts> Environment for ServiceEnv<S> {
    fn command(
        &mut self,
        index: usize,
        client: &str,
        node: Option<u32>,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String> {
        refuse_crashed(&self.0.state().crashed, client)?;
        self.0.wait_paused(client);
        let member = node.unwrap_or(self.0.leading());
        self.0.send(index, client, member, argv)
    }

    fn wait(&mut self, _index: usize, ms: u64) -> Result<(), String> {
        let until = Instant::now() + self.0.state().wall(ms);
        self.0.sleep_until(until);
        self.0.observe(None);
        Ok(())
    }

    fn fault(&mut self, index: usize, fault: &Fault) -> Result<(), String> {
        let st = self.0.state_mut();
        st.record(Actor::World, EventKind::Fault { fault: fault.clone() });
        if let Some(n) = self.0.inject(fault)? {
            self.0.state_mut().add_note(index, n);
        }
        self.0.observe(None);
        Ok(())
    }

    fn launch(&mut self, _index: usize, _client: &str, _program: &Program, _background: bool) -> Result<(), String> {
        Err(format!("client programs speak Redis; {} types its commands", S::LESSON))
    }

    fn write(&mut self, _index: usize, client: &str, token: Option<i64>, value: &str) -> Result<String, String> {
        self.0.wait_paused(client);
        self.0.state_mut().write(client, token, value)
    }

    fn hold(&mut self, _index: usize, client: &str, key: &str, holds: bool) -> Result<(), String> {
        self.0.state_mut().hold(client, key, holds)
    }

    fn metrics(&mut self, _index: usize, _spec: &MetricsSpec, _clients: &[String]) -> Result<Metrics, String> {
        Err(format!("metrics are refused by {}", S::CHECK))
    }

    fn begin_step(&mut self, _index: usize) -> Result<(), String> {
        self.0.begin();
        Ok(())
    }

    fn now(&self) -> u64 {
        self.0.state().now()
    }

    fn trace_len(&self) -> usize {
        self.0.state().events.len()
    }

    fn names(&self) -> &Names {
        &self.0.state().names
    }
}
