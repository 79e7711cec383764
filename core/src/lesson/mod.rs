//! Lessons: the experiments of the source articles as data.
//!
//! A lesson is a TOML file in `lessons/` (the format is documented in
//! `lessons/README.md`). It names its source, the topology it needs, its
//! actors, and an ordered list of steps — a redis-cli line typed by one
//! client, a wait, a fault, a client program, a write to the protected
//! resource — each with the reply the article expects where it states one,
//! an explanation in Chinese and English, and optionally a quiz question. It
//! ends with the outcome it teaches: which invariant breaks, or that it
//! holds.
//!
//! Lessons are data so that adding one needs no Rust: the CLI embeds
//! whatever files are there (feature `toml`), and `Lesson::parse` checks a
//! file completely (unknown fields, missing translations, actors that do not
//! exist, steps that do two things) before anything runs. The browser app
//! gets the same lessons, parsed and checked at build time, as one JSON
//! file ([`to_json`], [`from_json`]): lessons are data there too, fetched
//! rather than compiled into the wasm with a TOML parser, and their client
//! programs come worded, not decoded ([`worded`]).
//!
//! [`run::LessonRun`] plays a lesson on the simulated world, one step at a
//! time, and [`render`] turns the result into a redis-cli transcript and a
//! text swimlane.

pub mod compress;
pub mod exercise;
pub mod judge;
pub mod lint;
pub mod metrics;
pub mod mock;
pub mod notes;
mod parts;
pub mod render;
pub mod rounds;
pub mod run;
pub mod session;
pub mod stand_in;
mod text;
pub mod worded;

pub use parts::{Expect, Localized, MetricsSpec, Quiz, WriteSpec};
pub use text::{Bilingual, Lang, Theme};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::client::Program;
use crate::fault::Fault;
use crate::invariants::Invariant;
use crate::link::{LinkConfig, ReplicationConfig};
use crate::server::Profile;
use crate::world::{CompareLocks, Persistence};

/// Where in the articles a lesson comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// `A`, `B` or `C`: the three seed articles.
    pub seed: String,
    /// The seed file, e.g. `000_a8f0a0aeb4734a1d.txt`.
    pub file: String,
    /// The section, as the article numbers it (`6.2`, `§3`, `易错点`).
    pub section: String,
}

/// The deployment a lesson needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LessonTopology {
    #[default]
    Single,
    /// A master and one replica.
    Replicated,
    /// Five independent masters.
    Redlock5,
    /// A three-master Redis Cluster (simulated as one node that owns a
    /// third of the slots).
    Cluster3,
}

/// World settings a lesson may change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorldSettings {
    /// Does the protected resource check fencing tokens?
    pub fencing: bool,
    pub persistence: Persistence,
    pub link: Option<LinkConfig>,
    pub replication: Option<ReplicationConfig>,
    /// The lock keys the invariants watch (defaults to the keys that lock
    /// programs use, plus `lock` keys named in `locks`).
    pub locks: Vec<String>,
    /// A key held longer than this by one owner counts as a deadlock.
    pub max_hold_ms: Option<u64>,
    /// Is two clients believing they hold a lock at once itself a
    /// violation (strict mutual exclusion), with the span they overlapped?
    /// Default: yes when the lesson's outcome is about overlap.
    pub overlap_is_violation: Option<bool>,
    /// The lock service the nodes run instead of Redis: three etcd or
    /// ZooKeeper members ([`crate::service`]). The lesson's `topology`
    /// stays `single`; both have a real driver (a managed cluster or
    /// ensemble), while `all` says `real = { mode = "no", … }` until the
    /// four services share one real session.
    pub service: Option<LockService>,
    /// With `service = "all"`: the lock key each of the four groups guards
    /// (`{ redis, redlock, etcd, zk }`).
    pub groups: Option<CompareLocks>,
    /// Locks whose store on the resource checks no fencing token, though
    /// `fencing` is on (a write names its lock with `lock`).
    pub unfenced: Vec<String>,
}

/// A lock service that is not Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockService {
    /// Three etcd members: leases, `LOCK`/`UNLOCK`, revisions.
    Etcd,
    /// Three ZooKeeper servers: sessions, ephemeral sequential znodes.
    Zk,
    /// All four side by side (lesson 45): a single Redis (node 0), three
    /// Redlock masters (1–3), three etcd members (4–6) and three ZooKeeper
    /// servers (7–9), each guarding its own key (`world.groups`).
    All,
}

/// One step as written in a lesson file. Exactly one of `cmd`, `wait_ms`,
/// `fault`, `program`, `write`, `hold`, `unhold`, `say`, `metrics`, `exercise` is given.
///
/// `P` is what a program is: a [`Program`] to run, or, as the page reads a
/// lesson, a [`worded::Worded`] program it only words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Step<P = Program> {
    /// The actor doing it (for `cmd`, `program`, `write`, `hold`, `unhold`).
    pub client: Option<String>,
    /// A redis-cli line.
    pub cmd: Option<String>,
    /// Which node a `cmd` goes to (index; default: the current master).
    pub node: Option<u32>,
    /// Let this much virtual time pass.
    pub wait_ms: Option<u64>,
    pub fault: Option<Fault>,
    /// A client program (acquire with retry, watchdog, Redlock…), run until
    /// it finishes unless `background`.
    pub program: Option<P>,
    /// Start the program and go on at once.
    pub background: bool,
    pub write: Option<WriteSpec>,
    /// From here on, `client` believes it holds this lock key: a step of
    /// its own, or folded into the `cmd` or `write` step that causes the
    /// belief (the `SET … NX` that answered `OK`), where it takes effect
    /// once that step ran ([`Step::belief`]), so a press that changes what
    /// the room believes also shows what changed it (issue 39).
    pub hold: Option<String>,
    /// From here on, it does not (alone, or folded like `hold`).
    pub unhold: Option<String>,
    /// Nothing happens: a point to make, or a question to ask (lessons 35,
    /// 36). The text is shown like an explanation.
    pub say: Option<Bilingual>,
    /// Show the lock-health figures so far, checked against bounds.
    pub metrics: Option<MetricsSpec>,
    /// "Write the fix": the candidate types one part of the lock and the
    /// lab grades it ([`exercise`]). Nothing runs in the lesson itself.
    pub exercise: Option<exercise::Exercise>,
    pub expect: Option<Expect>,
    pub explain: Option<Bilingual>,
    pub quiz: Option<Quiz>,
    /// What the trainer should know at this step ([`notes`]): shown only
    /// in presenter mode's notes window and `lesson show --notes`.
    pub notes: Option<Bilingual>,
}

impl<P> Default for Step<P> {
    fn default() -> Step<P> {
        Step {
            client: None,
            cmd: None,
            node: None,
            wait_ms: None,
            fault: None,
            program: None,
            background: false,
            write: None,
            hold: None,
            unhold: None,
            say: None,
            metrics: None,
            exercise: None,
            expect: None,
            explain: None,
            quiz: None,
            notes: None,
        }
    }
}

/// The kind of a step, once validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepKind<'a, P = Program> {
    Cmd {
        client: &'a str,
        line: &'a str,
        node: Option<u32>,
    },
    Wait(u64),
    Fault(&'a Fault),
    Program {
        client: &'a str,
        program: &'a P,
        background: bool,
    },
    Write {
        client: &'a str,
        write: &'a WriteSpec,
    },
    Hold {
        client: &'a str,
        key: &'a str,
        holds: bool,
    },
    Say(&'a Bilingual),
    Metrics(&'a MetricsSpec),
    Exercise(&'a exercise::Exercise),
}

impl<P> Step<P> {
    /// Is this a `cmd` or `write` step carrying a `hold` or `unhold`?
    fn folds_belief(&self) -> bool {
        (self.cmd.is_some() || self.write.is_some()) && (self.hold.is_some() || self.unhold.is_some())
    }

    /// The belief a `cmd` or `write` step carries, taken once the step ran:
    /// `(key, holds)`. `None` for a step without one, and for a `hold` or
    /// `unhold` step of its own (that is its [`kind`](Self::kind)).
    pub fn belief(&self) -> Option<(&str, bool)> {
        if !self.folds_belief() {
            return None;
        }
        match (&self.hold, &self.unhold) {
            (Some(k), _) => Some((k, true)),
            (None, Some(k)) => Some((k, false)),
            (None, None) => None,
        }
    }

    /// What this step does, or why it is malformed.
    pub fn kind(&self) -> Result<StepKind<'_, P>, String> {
        let folded = self.folds_belief();
        if folded && self.hold.is_some() && self.unhold.is_some() {
            return Err("a step changes one belief: hold or unhold, not both".into());
        }
        let given = [
            self.cmd.is_some(),
            self.wait_ms.is_some(),
            self.fault.is_some(),
            self.program.is_some(),
            self.write.is_some(),
            self.hold.is_some() && !folded,
            self.unhold.is_some() && !folded,
            self.say.is_some(),
            self.metrics.is_some(),
            self.exercise.is_some(),
        ]
        .iter()
        .filter(|g| **g)
        .count();
        if given != 1 {
            return Err(format!(
                "a step does exactly one of cmd, wait_ms, fault, program, write, hold, unhold, say, metrics, exercise ({given} given; hold or unhold may go with a cmd or a write)"
            ));
        }
        let client = || {
            self.client
                .as_deref()
                .ok_or_else(|| "this step needs a client".to_owned())
        };
        Ok(if let Some(line) = &self.cmd {
            StepKind::Cmd {
                client: client()?,
                line,
                node: self.node,
            }
        } else if let Some(ms) = self.wait_ms {
            StepKind::Wait(ms)
        } else if let Some(f) = &self.fault {
            StepKind::Fault(f)
        } else if let Some(p) = &self.program {
            StepKind::Program {
                client: client()?,
                program: p,
                background: self.background,
            }
        } else if let Some(w) = &self.write {
            StepKind::Write {
                client: client()?,
                write: w,
            }
        } else if let Some(k) = &self.hold {
            StepKind::Hold {
                client: client()?,
                key: k,
                holds: true,
            }
        } else if let Some(t) = &self.say {
            StepKind::Say(t)
        } else if let Some(m) = &self.metrics {
            StepKind::Metrics(m)
        } else if let Some(e) = &self.exercise {
            StepKind::Exercise(e)
        } else {
            StepKind::Hold {
                client: client()?,
                key: self.unhold.as_deref().unwrap_or_default(),
                holds: false,
            }
        })
    }
}

/// The outcome a lesson teaches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// The invariant the lesson is about; `none` for lessons that only
    /// demonstrate commands.
    pub invariant: OutcomeInvariant,
    /// Does it break (true) or hold (false)?
    pub broken: bool,
    pub explain: Bilingual,
}

impl Outcome {
    /// Did a run on real servers hold this outcome, where such a run can
    /// judge it? An overlap by the clients' beliefs (`overlapped`), a stale
    /// write or a wrong release by core's monitor (`violations`), as in the
    /// simulator; a deadlock or no invariant is not judged (`None`). One
    /// rule for every real driver (Redis nodes, an etcd cluster).
    pub fn judged_real(&self, overlapped: bool, violations: &[crate::invariants::Violation]) -> Option<bool> {
        match self.invariant {
            OutcomeInvariant::Overlap => Some(overlapped == self.broken),
            OutcomeInvariant::StaleWrite | OutcomeInvariant::WrongRelease | OutcomeInvariant::ForeignExtend => {
                let inv = self.invariant.invariant()?;
                Some(violations.iter().any(|v| v.invariant == inv) == self.broken)
            }
            OutcomeInvariant::Deadlock | OutcomeInvariant::None => None,
        }
    }
}

/// An invariant by name, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeInvariant {
    StaleWrite,
    WrongRelease,
    Deadlock,
    ForeignExtend,
    Overlap,
    None,
}

impl OutcomeInvariant {
    pub fn invariant(self) -> Option<Invariant> {
        match self {
            OutcomeInvariant::StaleWrite => Some(Invariant::StaleWrite),
            OutcomeInvariant::WrongRelease => Some(Invariant::WrongRelease),
            OutcomeInvariant::Deadlock => Some(Invariant::Deadlock),
            OutcomeInvariant::ForeignExtend => Some(Invariant::ForeignExtend),
            OutcomeInvariant::Overlap => Some(Invariant::Overlap),
            OutcomeInvariant::None => None,
        }
    }

    pub fn name(self) -> &'static str {
        self.invariant().map_or("none", Invariant::name)
    }
}

/// Whether and how a lesson runs against real redis-server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode", deny_unknown_fields)]
pub enum RealRun {
    /// Every step runs on a real server too.
    #[default]
    Yes,
    /// It needs what a real server cannot do (a clock jump); say why.
    No { why: Bilingual },
}

/// The id a counterexample lesson carries (the catalogue's are `01`–`42`):
/// the explorer makes such lessons, and only they may be sent whole over
/// a socket ([`Lesson::validate_sent`]).
pub const COUNTEREXAMPLE_ID: &str = "00";

/// A lesson file; `P` as for [`Step`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lesson<P = Program> {
    /// The catalogue id, `01`–`36`.
    pub id: String,
    pub theme: Theme,
    pub title: Bilingual,
    pub narration: Bilingual,
    pub source: Source,
    #[serde(default)]
    pub topology: LessonTopology,
    /// The simulator's profile (8.4 by default; DELEX needs it).
    #[serde(default)]
    pub profile: Profile,
    pub actors: Vec<String>,
    #[serde(default)]
    pub world: WorldSettings,
    #[serde(default)]
    pub real: RealRun,
    /// Seed for everything random in the run (tokens, jitter).
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub steps: Vec<Step<P>>,
    pub outcome: Outcome,
    /// The lesson opens with a timed answer (lesson 35): asked before the
    /// first step in interview mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed: Option<Timed>,
    /// The trainer's note for the whole lesson ([`notes`]): what the
    /// narration, a hook, leaves out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<Bilingual>,
}

fn default_seed() -> u64 {
    1
}

/// A question the candidate answers in their own words against a clock,
/// then scores against a rubric (issue 38, item 4): an interview's opening
/// question is not a choice among options, and an answer written before
/// the model answer is shown is the only honest test of it. Interview mode
/// asks it before the first step (the steps, the model answer among them,
/// wait until it is scored); `lesson run --quiz` prints it and its rubric.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timed {
    pub question: Bilingual,
    /// How long the answer may take.
    pub seconds: u32,
    /// The points a complete answer makes, ticked by the candidate: each
    /// one ticked counts as one right in the lesson's score.
    pub rubric: Vec<Bilingual>,
}

impl Timed {
    /// The bounds a file must keep: a clock a person can use (10 s to
    /// 10 min), a rubric of 1 to 16 points, everything in both languages.
    pub fn validate(&self) -> Result<(), String> {
        if !(10..=600).contains(&self.seconds) {
            return Err(format!("timed.seconds = {}: from 10 to 600", self.seconds));
        }
        if self.rubric.is_empty() || self.rubric.len() > 16 {
            return Err(format!("timed.rubric has {} points: from 1 to 16", self.rubric.len()));
        }
        let texts = std::iter::once(&self.question).chain(&self.rubric);
        if texts
            .into_iter()
            .any(|t| t.zh.trim().is_empty() || t.en.trim().is_empty())
        {
            return Err("timed: the question and each rubric point need both zh and en".into());
        }
        Ok(())
    }
}

/// A lesson file that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum LessonError {
    #[error("lesson file: {0}")]
    Parse(String),
    #[error("lesson {id}: {msg}")]
    Invalid { id: String, msg: String },
    #[error("lesson {id}, step {step}: {msg}")]
    Step { id: String, step: usize, msg: String },
    #[error("no lesson {0:?}")]
    NotFound(String),
}

impl Lesson {
    /// Read and check a lesson file.
    #[cfg(feature = "toml")]
    pub fn parse(toml_text: &str) -> Result<Lesson, LessonError> {
        let lesson: Lesson = toml::from_str(toml_text).map_err(|e| LessonError::Parse(e.to_string()))?;
        lesson.validate()?;
        Ok(lesson)
    }

    /// A lesson that came over a socket rather than from the catalogue (a
    /// counterexample the page's explorer made): [`validate`](Self::validate)
    /// plus bounds a file in `lessons/` is trusted to keep, so a crafted
    /// one cannot hold a real session for hours or run a thousand programs.
    /// Its commands still go through the session's sandbox like any line.
    pub fn validate_sent(&self) -> Result<(), LessonError> {
        const MAX_STEPS: usize = 200;
        const MAX_ACTORS: usize = 16;
        const MAX_PROGRAMS: usize = 16;
        const MAX_WAIT_MS: u64 = 10 * 60 * 1000;
        let invalid = |msg: String| LessonError::Invalid {
            id: self.id.clone(),
            msg,
        };
        if self.id != COUNTEREXAMPLE_ID {
            return Err(invalid(format!(
                "only a counterexample ({COUNTEREXAMPLE_ID}) is sent whole; catalogue lessons go by id"
            )));
        }
        if self.steps.len() > MAX_STEPS || self.actors.len() > MAX_ACTORS {
            return Err(invalid(format!(
                "{} steps and {} actors: at most {MAX_STEPS} and {MAX_ACTORS}",
                self.steps.len(),
                self.actors.len()
            )));
        }
        self.validate()?;
        let (mut waits, mut programs) = (0u64, 0usize);
        for step in &self.steps {
            match step.kind() {
                Ok(StepKind::Wait(ms)) => waits = waits.saturating_add(ms),
                Ok(StepKind::Program { .. }) => programs += 1,
                _ => {}
            }
        }
        if waits > MAX_WAIT_MS {
            return Err(invalid(format!(
                "its waits add up to {waits} ms: at most {MAX_WAIT_MS} ms (10 minutes)"
            )));
        }
        if programs > MAX_PROGRAMS {
            return Err(invalid(format!("{programs} programs: at most {MAX_PROGRAMS}")));
        }
        Ok(())
    }
}

impl<P> Lesson<P> {
    /// Everything a file can get wrong that serde cannot see.
    // long: one check per rule of the lesson format, in the file's order
    pub fn validate(&self) -> Result<(), LessonError> {
        let invalid = |msg: String| LessonError::Invalid {
            id: self.id.clone(),
            msg,
        };
        if self.id.len() != 2 || !self.id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid(format!("id {:?} must be two digits (01–36)", self.id)));
        }
        for (what, t) in [
            ("title", &self.title),
            ("narration", &self.narration),
            ("outcome.explain", &self.outcome.explain),
        ] {
            if t.zh.trim().is_empty() || t.en.trim().is_empty() {
                return Err(invalid(format!("{what} needs both zh and en")));
            }
        }
        if let Some(t) = &self.notes {
            notes::check(t).map_err(invalid)?;
        }
        if self.actors.is_empty() {
            return Err(invalid("a lesson needs at least one actor".into()));
        }
        if self.steps.is_empty() {
            return Err(invalid("a lesson needs steps".into()));
        }
        self.validate_service().map_err(invalid)?;
        self.validate_groups().map_err(invalid)?;
        if let Some(t) = &self.timed {
            t.validate().map_err(invalid)?;
        }
        for (i, step) in self.steps.iter().enumerate() {
            let bad = |msg: String| LessonError::Step {
                id: self.id.clone(),
                step: i + 1,
                msg,
            };
            let kind = step.kind().map_err(bad)?;
            let client = match &kind {
                StepKind::Cmd { client, .. }
                | StepKind::Program { client, .. }
                | StepKind::Write { client, .. }
                | StepKind::Hold { client, .. } => Some(*client),
                _ => None,
            };
            if let Some(c) = client {
                if !self.actors.iter().any(|a| a == c) {
                    return Err(bad(format!("client {c:?} is not among the actors {:?}", self.actors)));
                }
            }
            if let StepKind::Cmd { line, .. } = &kind {
                crate::cli::parse(line).map_err(|e| bad(format!("{line:?}: {e}")))?;
            }
            if let StepKind::Say(t) = &kind {
                if t.zh.trim().is_empty() || t.en.trim().is_empty() {
                    return Err(bad("say needs both zh and en".into()));
                }
            }
            if let StepKind::Exercise(e) = &kind {
                e.check().map_err(bad)?;
            }
            if let StepKind::Metrics(m) = &kind {
                if let Some(c) = m.clients.iter().find(|c| !self.actors.contains(c)) {
                    return Err(bad(format!("metrics: client {c:?} is not among the actors")));
                }
            }
            if let Some(t) = &step.explain {
                if t.zh.trim().is_empty() || t.en.trim().is_empty() {
                    return Err(bad("explain needs both zh and en".into()));
                }
            }
            if let Some(t) = &step.notes {
                notes::check(t).map_err(bad)?;
            }
            if let Some(q) = &step.quiz {
                if q.answer.is_none() && step.expect.is_none() {
                    return Err(bad("a quiz needs an answer or an expected reply".into()));
                }
                if q.zh.trim().is_empty() || q.en.trim().is_empty() {
                    return Err(bad("a quiz needs its question in both zh and en".into()));
                }
                if !q.choices.is_empty() {
                    let right = q
                        .answer
                        .clone()
                        .or_else(|| step.expect.as_ref().map(Expect::describe))
                        .unwrap_or_default();
                    let at = q.choices.iter().position(|c| *c == right);
                    let Some(at) = at else {
                        return Err(bad(format!("the quiz's answer {right:?} is not one of its choices")));
                    };
                    if q.answer_zh.as_ref().is_some_and(|zh| q.choices_zh.get(at) != Some(zh)) {
                        return Err(bad(
                            "the quiz's zh answer is not the zh form of its answer's choice".into()
                        ));
                    }
                }
            }
            if let StepKind::Write { write, .. } = &kind {
                if write.value_zh.is_none() {
                    return Err(bad(
                        "a write's value needs both forms: value = { zh = \"…\", en = \"…\" }".into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A lesson on etcd or ZooKeeper members (or all four services) runs
    /// on no Redis topology: the real drivers start their own processes.
    fn validate_service(&self) -> Result<(), String> {
        let Some(s) = self.world.service else { return Ok(()) };
        if self.topology != LessonTopology::Single {
            return Err(format!(
                "world.service = {s:?} replaces the Redis nodes: leave topology single"
            ));
        }
        Ok(())
    }

    /// `service = "all"` names the key each group guards, and only it does;
    /// a write's `lock` is one of the lesson's locks.
    fn validate_groups(&self) -> Result<(), String> {
        let all = self.world.service == Some(LockService::All);
        let Some(g) = &self.world.groups else {
            return match all {
                true => Err("world.service = \"all\" needs world.groups = { redis, redlock, etcd, zk }".into()),
                false => Ok(()),
            };
        };
        if !all {
            return Err("world.groups is for world.service = \"all\"".into());
        }
        let keys = [&g.redis, &g.redlock, &g.etcd, &g.zk];
        if keys.iter().any(|k| k.is_empty()) || (1..4).any(|i| keys[..i].contains(&keys[i])) {
            return Err(format!("world.groups needs four different lock keys, not {keys:?}"));
        }
        let known = |k: &str| keys.iter().any(|g| *g == k) || self.world.locks.iter().any(|l| l == k);
        let named = (self.steps.iter())
            .filter_map(|s| s.write.as_ref()?.lock.as_deref())
            .chain(self.world.unfenced.iter().map(String::as_str));
        match named.filter(|k| !known(k)).collect::<Vec<_>>().first() {
            Some(k) => Err(format!("{k:?} is not one of the lesson's locks")),
            None => Ok(()),
        }
    }

    /// The step count, as the UI numbers steps (1-based, `end` = this).
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// The lesson files embedded at build time (see `core/build.rs`).
#[cfg(feature = "toml")]
pub mod embedded {
    include!(concat!(env!("OUT_DIR"), "/lessons.rs"));
}

/// The lesson with this id; a one-digit id is padded (`5` is `05`), as
/// `locklab lesson show 5` and the web API's `?lesson=5` accept it.
pub fn find<'a>(lessons: &'a [Lesson], id: &str) -> Result<&'a Lesson, LessonError> {
    let id = if id.len() == 1 { format!("0{id}") } else { id.to_owned() };
    lessons.iter().find(|l| l.id == id).ok_or(LessonError::NotFound(id))
}

/// The built-in catalogue: every file of `lessons/`, parsed and checked.
#[cfg(feature = "toml")]
pub fn builtin() -> Result<Vec<Lesson>, LessonError> {
    catalogue(embedded::FILES)
}

/// All lessons, sorted by id; duplicate ids are an error.
#[cfg(feature = "toml")]
pub fn catalogue(files: &[(&str, &str)]) -> Result<Vec<Lesson>, LessonError> {
    let mut lessons = Vec::with_capacity(files.len());
    for (name, text) in files {
        let lesson = Lesson::parse(text).map_err(|e| match e {
            LessonError::Parse(m) => LessonError::Parse(format!("{name}: {m}")),
            other => other,
        })?;
        lessons.push(lesson);
    }
    sorted_catalogue(lessons)
}

/// A catalogue as one JSON array, for the browser app (`cargo xtask dist`
/// writes it from [`builtin`]): each lesson [`worded`](Lesson::worded), as
/// the page reads it.
pub fn to_json(lessons: &[Lesson]) -> String {
    let worded: Vec<_> = lessons.iter().map(Lesson::worded).collect();
    serde_json::to_string(&worded).expect("lessons always serialise")
}

/// Read a catalogue written by [`to_json`] as the page holds it, checking
/// every lesson as `Lesson::parse` does (but its programs, which the page
/// does not decode), and sort it by id.
pub fn from_json(json: &str) -> Result<Vec<worded::PageLesson>, LessonError> {
    let lessons: Vec<worded::PageLesson> = serde_json::from_str(json).map_err(|e| LessonError::Parse(e.to_string()))?;
    for lesson in &lessons {
        lesson.validate()?;
    }
    sorted_catalogue(lessons)
}

fn sorted_catalogue<P>(mut lessons: Vec<Lesson<P>>) -> Result<Vec<Lesson<P>>, LessonError> {
    lessons.sort_by(|a, b| a.id.cmp(&b.id));
    for w in lessons.windows(2) {
        if w[0].id == w[1].id {
            return Err(LessonError::Invalid {
                id: w[0].id.clone(),
                msg: "two lesson files have this id".into(),
            });
        }
    }
    Ok(lessons)
}
