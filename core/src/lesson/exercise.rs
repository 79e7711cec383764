//! "Write the fix" exercises: a step that asks the candidate to type one
//! part of the lock, which the lab then attacks (issue 38, item 3).
//!
//! An exercise is data, like every other step: which part the candidate
//! writes ([`Part`]), the question in both languages, the model answer, the
//! answers known to be wrong with the invariant each breaks (the tests
//! grade every one of them, so a wrong answer can never pass and the model
//! can never fail), the world the part is dropped into (fencing, a
//! watchdog), the lesson's *story* — the faults at fixed moments the lesson
//! tells — and the fault kinds the explorer may use against it.
//!
//! Grading is in [`crate::explore::exercise`]: the lesson module only holds
//! the data, since the explorer already depends on lessons (their words and
//! their timeline), and a lesson that depended on the explorer would be a
//! module cycle.

use serde::{Deserialize, Serialize};

use super::Bilingual;
use crate::fault::ScheduledFault;
use crate::invariants::Invariant;

/// Which part of the lock the candidate writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// The acquire: one command line, `SETNX` then `EXPIRE` on two lines,
    /// or a Lua script.
    #[default]
    Acquire,
    /// The release: one command line, `GET` then `DEL` on two lines, or a
    /// Lua script.
    Release,
    /// The renewal a watchdog sends while the work runs: one command line
    /// or a Lua script.
    Extend,
    /// The acquire that also takes the fencing token the write carries:
    /// `MULTI` / the acquire / `INCR counter` / `EXEC`, or the acquire and
    /// a separate `INCR counter`.
    Fence,
    /// Redlock's acquisition decision on five masters: a condition over
    /// `oks`, `n`, `ttl`, `elapsed` and `drift`
    /// ([`crate::client::condition`]). Pauses land only while a client
    /// acquires (a slow acquisition), never in its work.
    Validity,
}

impl Part {
    pub fn name(self) -> &'static str {
        match self {
            Part::Acquire => "acquire",
            Part::Release => "release",
            Part::Extend => "extend",
            Part::Fence => "fence",
            Part::Validity => "validity",
        }
    }
}

/// An answer known to be wrong, and what the lab must find it breaks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrongAnswer {
    pub answer: String,
    pub breaks: Invariant,
}

/// One exercise.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exercise {
    pub part: Part,
    /// The question: what to write, and the placeholders it may use.
    pub ask: Bilingual,
    /// The model answer (it must pass).
    pub model: String,
    /// Answers that must fail, each with the invariant it breaks.
    #[serde(default)]
    pub wrong: Vec<WrongAnswer>,
    /// The fault kinds the explorer may use (`pause`, `crash`, `restart`,
    /// `failover`, `clock-jump`; empty: all of them).
    #[serde(default)]
    pub faults: Vec<String>,
    /// How many faults one explored schedule may hold.
    #[serde(default = "one")]
    pub budget: u32,
    /// The resource checks fencing tokens, and the built-in acquire takes one.
    #[serde(default)]
    pub fencing: bool,
    /// A watchdog renews the lock while the work runs, at most this many
    /// times (the part `extend` needs one).
    #[serde(default)]
    pub watchdog: Option<u32>,
    /// The work hangs (a stuck business thread).
    #[serde(default)]
    pub work_hangs: bool,
    /// The lesson's story: these faults at these moments, on the clients
    /// `A` and `B` (A starts first, B 3 ms later).
    #[serde(default)]
    pub story: Vec<ScheduledFault>,
    /// World seeds the breadth-first search starts from (each draws its
    /// own network delays, work times and backoff).
    #[serde(default = "one")]
    pub seeds: u32,
    /// The lock's TTL (the explorer's fault sizes scale with it).
    #[serde(default = "default_ttl")]
    pub ttl_ms: u64,
}

fn one() -> u32 {
    1
}

fn default_ttl() -> u64 {
    1_000
}

/// The longest answer the lab grades: a release script is a few hundred
/// bytes; 1 MB of text gets a clear refusal, never a parse.
pub const MAX_ANSWER: usize = 16 * 1024;

impl Exercise {
    /// What a lesson file must get right: both languages, a model answer.
    pub fn check(&self) -> Result<(), String> {
        if self.ask.zh.trim().is_empty() || self.ask.en.trim().is_empty() {
            return Err("an exercise needs its question (ask) in both zh and en".into());
        }
        if self.model.trim().is_empty() {
            return Err("an exercise needs a model answer".into());
        }
        if self.part == Part::Extend && self.watchdog.is_none() {
            return Err("an extend exercise needs a watchdog (watchdog = N renewals)".into());
        }
        if self.budget > 2 {
            return Err("an exercise's fault budget is 0 to 2".into());
        }
        if !(1..=8).contains(&self.seeds) {
            return Err("an exercise searches from 1 to 8 seeds".into());
        }
        Ok(())
    }
}
