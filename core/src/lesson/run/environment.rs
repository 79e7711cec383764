//! The seam every driver plays a lesson through: [`Environment`].

use super::super::metrics::Metrics;
use super::super::MetricsSpec;
use crate::actor::Names;
use crate::client::Program;
use crate::fault::Fault;
use crate::reply::Reply;

/// What a lesson's steps act on: the simulated world ([`SimEnv`]) or, in
/// the backend, real redis-server sessions. The step interpreter
/// ([`Progress::step`]) is written once against this trait, so a step means
/// the same on both drivers; only what the environment *does* differs.
///
/// The trait is synchronous: a call returns when its effect is done (a
/// reply came, a wait passed, a foreground program finished). A real
/// environment blocks on its servers meanwhile; an asynchronous one would
/// drive the same [`Progress`] from a task.
pub trait Environment {
    /// Run `argv` as `client` on `node` (`None`: the current master). `None`
    /// when no reply came (a cut link, a dead node, a lost answer).
    fn command(
        &mut self,
        index: usize,
        client: &str,
        node: Option<u32>,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String>;
    /// Let `ms` of lesson time pass.
    fn wait(&mut self, index: usize, ms: u64) -> Result<(), String>;
    fn fault(&mut self, index: usize, fault: &Fault) -> Result<(), String>;
    /// Start `program` on `client`; unless `background`, return once it is
    /// done.
    fn launch(&mut self, index: usize, client: &str, program: &Program, background: bool) -> Result<(), String>;
    /// `client` writes `value` to the protected resource with `token`: the
    /// resource's verdict as the transcript shows it (`accepted`,
    /// `rejected`).
    fn write(&mut self, index: usize, client: &str, token: Option<i64>, value: &str) -> Result<String, String>;
    /// [`Environment::write`] made under `lock` (a write step's `lock`):
    /// that lock's store and grants judge it. An environment with one
    /// store and one lock per lesson writes as usual.
    fn write_under(
        &mut self,
        index: usize,
        client: &str,
        _lock: Option<&str>,
        token: Option<i64>,
        value: &str,
    ) -> Result<String, String> {
        self.write(index, client, token, value)
    }
    /// `client` starts (or stops) believing it holds `key`.
    fn hold(&mut self, index: usize, client: &str, key: &str, holds: bool) -> Result<(), String>;
    /// Measure lock health for `clients` (a `metrics` step).
    fn metrics(&mut self, index: usize, spec: &MetricsSpec, clients: &[String]) -> Result<Metrics, String>;
    /// Before step `index` runs (a real environment serves its background
    /// programs first).
    fn begin_step(&mut self, _index: usize) -> Result<(), String> {
        Ok(())
    }
    /// After step `index` ran; `last` when it was the lesson's last.
    fn end_step(&mut self, _index: usize, _last: bool) {}
    /// Lesson time now, ms.
    fn now(&self) -> u64;
    /// Events so far: a step's `trace_len`.
    fn trace_len(&self) -> usize;
    /// Who is who, for the step's wording.
    fn names(&self) -> &Names;
}
