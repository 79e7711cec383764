//! Playing a lesson, one step at a time, on either driver.
//!
//! [`Progress`] is the one step interpreter: it reads a step, asks an
//! [`Environment`] to do it, and records what happened next to what the
//! article says should happen. [`SimEnv`] is the simulated world, and the
//! backend's real environment is real redis-server sessions, so a step
//! means the same thing on both drivers.
//!
//! A [`LessonRun`] is a lesson on the simulated world: a [`World`] built for
//! the lesson (its topology, profile, fencing and persistence) with one
//! client per actor. A command typed at a client's console goes over the
//! client's link to the node and the run waits for its reply, exactly as a
//! person at redis-cli waits. Everything is deterministic from the lesson's
//! seed, so "go to step n" is "run a fresh copy to step n": that is how the
//! browser steps back.
//!
//! The environment is a synchronous trait rather than sans-IO effects: a
//! real step blocks on its servers (and a foreground program runs to its
//! end inside `launch`). Handing out effects would let an asynchronous
//! session drive background programs truly concurrently (issue 18), but it
//! turns every step and every client program into a resumable state
//! machine; the trait keeps the interpreter in one place today and is the
//! seam such a driver would replace.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::metrics::Metrics;
use super::worded::Wording;
use super::{Bilingual, Lang, Lesson, LessonError, LessonTopology, MetricsSpec, Outcome, StepKind};
use crate::actor::{Actor, Names};
use crate::client::{CommandsProgram, Program, Step as ProgramStep};
use crate::fault::Fault;
use crate::invariants::Invariant;
use crate::reply::Reply;
use crate::trace::EventKind;
use crate::world::{ClientId, Topology, World, WorldConfig};

/// What a command step shows when its request or reply was lost.
pub use crate::console::NO_REPLY;
pub use environment::Environment;

mod environment;

/// What one step did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepResult {
    /// 0-based position in the lesson.
    pub index: usize,
    /// The client that acted, if one did.
    pub actor: Option<String>,
    /// What the step was, as the transcript shows it: the redis-cli line,
    /// `wait 31000 ms`, the fault, the program.
    pub shown: String,
    /// The reply as redis-cli prints it (`accepted`/`rejected` for a write;
    /// none for waits and faults).
    pub reply: Option<String>,
    /// What the article expects, if it says.
    pub expected: Option<String>,
    /// The expectation held (or there was none).
    pub ok: bool,
    /// World time after the step, ms.
    pub at_ms: u64,
    /// Trace length after the step: the timeline shows events up to here.
    pub trace_len: usize,
    /// A `metrics` step's figures, for a view that words them in its own
    /// language ([`Metrics::text`]); `reply` has them in English.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
}

/// What a step does, as parameters rather than words: the same thing
/// [`StepResult::shown`] says in English, for a view that words it in its
/// own language (the browser's 中文 mode). [`Shown::english`] is the one
/// place core's wording lives, so the transcript and a view built on this
/// cannot drift apart.
#[derive(Clone, Debug, PartialEq)]
pub enum Shown<'a> {
    /// A redis-cli line: the same in every language.
    Cmd {
        line: &'a str,
    },
    Wait {
        ms: u64,
    },
    Fault(&'a Fault),
    /// A client program, as [`Wording`] words it.
    Program {
        en: Cow<'a, str>,
        zh: Cow<'a, str>,
    },
    /// A write to the protected resource. `token` is the fencing token it
    /// carries; `from_last_reply` marks a step that has not run yet and will
    /// take its token from the client's last integer reply.
    Write {
        value: &'a str,
        token: Option<i64>,
        from_last_reply: bool,
        value_zh: &'a str,
    },
    Hold {
        client: &'a str,
        key: &'a str,
        holds: bool,
    },
    Say(&'a Bilingual),
    Metrics {
        clients: Vec<String>,
    },
}

impl Shown<'_> {
    /// The step in `lang`, core's wording with both languages side by side
    /// in each arm; commands, keys, node names and option names stay as
    /// typed.
    pub fn text(&self, names: &Names, lang: Lang) -> String {
        let zh = lang == Lang::Zh;
        match self {
            Shown::Cmd { line } => (*line).to_owned(),
            Shown::Wait { ms } if zh => format!("等待 {ms} ms"),
            Shown::Wait { ms } => format!("wait {ms} ms"),
            Shown::Fault(f) if zh => format!("故障：{}", f.describe_in(names, lang)),
            Shown::Fault(f) => format!("FAULT {}", f.describe_in(names, lang)),
            Shown::Program { zh: text, .. } if zh => text.clone().into_owned(),
            Shown::Program { en, .. } => en.clone().into_owned(),
            Shown::Write {
                value,
                value_zh,
                token,
                from_last_reply,
            } => match (token, from_last_reply, zh) {
                (Some(t), _, true) => format!("向受保护资源写入 {value_zh:?}，携带 fencing 令牌 {t}"),
                (Some(t), _, false) => format!("write {value:?} to the resource with fencing token {t}"),
                (None, true, true) => format!("向受保护资源写入 {value_zh:?}，携带上一条回复中的 fencing 令牌"),
                (None, true, false) => {
                    format!("write {value:?} to the resource with the fencing token from its last reply")
                }
                (None, false, true) => format!("向受保护资源写入 {value_zh:?}（不带令牌）"),
                (None, false, false) => format!("write {value:?} to the resource (no token)"),
            },
            Shown::Hold { client, key, holds } => match (holds, zh) {
                (true, true) => format!("（{client} 此时认为自己持有 {key}）"),
                (true, false) => format!("({client} now believes it holds {key})"),
                (false, true) => format!("（{client} 不再认为自己持有 {key}）"),
                (false, false) => format!("({client} no longer believes it holds {key})"),
            },
            Shown::Say(t) => t.get(lang).trim().to_owned(),
            Shown::Metrics { clients } if zh => format!("{} 的锁健康指标", clients.join("、")),
            Shown::Metrics { clients } => format!("metrics for {}", clients.join(", ")),
        }
    }

    /// Core's English wording, as the transcript prints it.
    pub fn english(&self, names: &Names) -> String {
        self.text(names, Lang::En)
    }

    /// Core's Chinese wording: the same parameters as [`Shown::english`].
    pub fn chinese(&self, names: &Names) -> String {
        self.text(names, Lang::Zh)
    }
}

/// The lesson's outcome, checked against what the world observed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeCheck {
    pub expected: Outcome,
    /// The invariants the run saw broken (overlap included when it
    /// happened, even where it is not a violation).
    pub observed: Vec<Invariant>,
    pub ok: bool,
}

/// The number a write step's `token_from_last_reply` takes from a reply:
/// an integer reply, or the integer that ends an array — etcd's `LOCK`
/// answers `[key, revision]` and ZooKeeper's `CREATE` `[path, czxid]`, the
/// number last, as their clients' lock calls return the key with its
/// fencing number.
fn fencing_number(reply: &Reply) -> Option<i64> {
    match reply {
        Reply::Integer(i) => Some(*i),
        Reply::Array(items) => match items.last() {
            Some(Reply::Integer(i)) => Some(*i),
            _ => None,
        },
        _ => None,
    }
}

/// The world a lesson needs.
pub fn world_config(lesson: &Lesson) -> WorldConfig {
    let mut cfg = WorldConfig {
        topology: match lesson.topology {
            LessonTopology::Single | LessonTopology::Cluster3 => Topology::Single,
            LessonTopology::Replicated => Topology::Replicated { replicas: 1 },
            LessonTopology::Redlock5 => Topology::Redlock { masters: 5 },
        },
        profile: lesson.profile,
        persistence: lesson.world.persistence,
        fencing: lesson.world.fencing,
        ..WorldConfig::default()
    };
    match lesson.world.service {
        Some(super::LockService::Etcd) => cfg.topology = Topology::Etcd { members: 3 },
        Some(super::LockService::Zk) => cfg.topology = Topology::Zk { members: 3 },
        Some(super::LockService::All) => {
            cfg.topology = Topology::Compare { masters: 3 };
            cfg.compare = lesson.world.groups.clone();
        }
        None => {}
    }
    cfg.unfenced = lesson.world.unfenced.clone();
    if let Some(link) = &lesson.world.link {
        cfg.link = *link;
        cfg.resource_link = *link;
    }
    if let Some(r) = &lesson.world.replication {
        cfg.replication = *r;
    }
    cfg.invariants.lock_keys = lesson.world.locks.clone();
    cfg.invariants.max_hold_ms = lesson.world.max_hold_ms;
    cfg.invariants.overlap_is_violation = overlap_is_violation(lesson);
    cfg
}

/// A crashed client sends nothing more: the error every real environment
/// gives for a step of a client in `crashed` (the simulated world's queue
/// refuses with the same words).
pub fn refuse_crashed(crashed: &std::collections::BTreeSet<String>, client: &str) -> Result<(), String> {
    match crashed.contains(client) {
        true => Err(format!("{client} has crashed")),
        false => Ok(()),
    }
}

/// Does this lesson count an overlap as a violation (see
/// [`super::WorldSettings::overlap_is_violation`])?
pub fn overlap_is_violation(lesson: &Lesson) -> bool {
    lesson
        .world
        .overlap_is_violation
        .unwrap_or(lesson.outcome.invariant == super::OutcomeInvariant::Overlap)
}

/// A lesson's steps and what they did so far: the interpreter both drivers
/// share.
#[derive(Clone, Debug)]
pub struct Progress {
    lesson: Lesson,
    last_integer: BTreeMap<String, i64>,
    results: Vec<StepResult>,
    /// The fencing token each write step carried, by step index: one taken
    /// from a reply is known only once the step ran.
    write_tokens: BTreeMap<usize, Option<i64>>,
}

/// What step `index` of `lesson` does, or did once it ran, in parameters:
/// `write_tokens` are the tokens the write steps that ran carried (none
/// before a run). It needs no world, so a view that has only the lesson and
/// what a driver sent (the page, on either driver) words a step as the
/// runner does. `None` for a step that does not exist or is malformed.
pub fn shown<'a, P: Wording>(
    lesson: &'a Lesson<P>,
    index: usize,
    write_tokens: &BTreeMap<usize, Option<i64>>,
) -> Option<Shown<'a>> {
    let step = lesson.steps.get(index)?;
    Some(match step.kind().ok()? {
        StepKind::Cmd { line, .. } => Shown::Cmd { line },
        StepKind::Wait(ms) => Shown::Wait { ms },
        StepKind::Fault(f) => Shown::Fault(f),
        StepKind::Program { program, .. } => Shown::Program {
            en: program.english(),
            zh: program.chinese(),
        },
        StepKind::Write { write, .. } => match write_tokens.get(&index) {
            Some(token) => Shown::Write {
                value: &write.value,
                token: *token,
                from_last_reply: false,
                value_zh: write.value_in(Lang::Zh),
            },
            None => Shown::Write {
                value: &write.value,
                value_zh: write.value_in(Lang::Zh),
                token: write.token.filter(|_| !write.token_from_last_reply),
                from_last_reply: write.token_from_last_reply,
            },
        },
        StepKind::Hold { client, key, holds } => Shown::Hold { client, key, holds },
        StepKind::Say(t) | StepKind::Exercise(crate::lesson::exercise::Exercise { ask: t, .. }) => Shown::Say(t),
        StepKind::Metrics(spec) => Shown::Metrics {
            clients: metric_clients(lesson, spec),
        },
    })
}

/// The clients a `metrics` step measures: the ones it names, else every actor.
fn metric_clients<P>(lesson: &Lesson<P>, spec: &MetricsSpec) -> Vec<String> {
    if spec.clients.is_empty() {
        lesson.actors.clone()
    } else {
        spec.clients.clone()
    }
}

impl Progress {
    pub fn new(lesson: &Lesson) -> Progress {
        Progress {
            lesson: lesson.clone(),
            last_integer: BTreeMap::new(),
            results: Vec::new(),
            write_tokens: BTreeMap::new(),
        }
    }

    pub fn lesson(&self) -> &Lesson {
        &self.lesson
    }

    pub fn results(&self) -> &[StepResult] {
        &self.results
    }

    pub fn is_finished(&self) -> bool {
        self.results.len() >= self.lesson.steps.len()
    }

    /// What step `index` does (or did, once it ran), in parameters; `None`
    /// for a step that does not exist or is malformed.
    pub fn shown(&self, index: usize) -> Option<Shown<'_>> {
        shown(&self.lesson, index, &self.write_tokens)
    }

    /// The fencing token each write step that ran carried, by step index.
    pub fn write_tokens(&self) -> &BTreeMap<usize, Option<i64>> {
        &self.write_tokens
    }

    /// Carry out the next step on `env`; `None` when the lesson is over.
    // long: one arm per kind of step, each carried out on the environment
    pub fn step<E: Environment + ?Sized>(&mut self, env: &mut E) -> Result<Option<&StepResult>, LessonError> {
        let index = self.results.len();
        let Some(step) = self.lesson.steps.get(index).cloned() else {
            return Ok(None);
        };
        let err = |msg: String| LessonError::Step {
            id: self.lesson.id.clone(),
            step: index + 1,
            msg,
        };
        env.begin_step(index).map_err(err)?;
        let kind = step.kind().map_err(err)?;
        let mut actor = None;
        let mut metrics = None;
        let mut bounds_ok = true;
        let reply = match kind {
            StepKind::Cmd { client, line, node } => {
                actor = Some(client.to_owned());
                let argv = crate::cli::parse(line).map_err(|e| err(e.to_string()))?;
                let reply = env.command(index, client, node, &argv).map_err(err)?;
                if let Some(i) = reply.as_ref().and_then(fencing_number) {
                    self.last_integer.insert(client.to_owned(), i);
                }
                Some(match &reply {
                    Some(r) => crate::cli::render(&argv, r).trim_end_matches(['\r', '\n']).to_owned(),
                    None => NO_REPLY.to_owned(),
                })
            }
            StepKind::Wait(ms) => {
                env.wait(index, ms).map_err(err)?;
                None
            }
            StepKind::Fault(f) => {
                env.fault(index, f).map_err(err)?;
                None
            }
            StepKind::Program {
                client,
                program,
                background,
            } => {
                actor = Some(client.to_owned());
                env.launch(index, client, program, background).map_err(err)?;
                None
            }
            StepKind::Write { client, write } => {
                actor = Some(client.to_owned());
                let token = if write.token_from_last_reply {
                    self.last_integer.get(client).copied()
                } else {
                    write.token
                };
                let lock = write.lock.as_deref();
                let verdict = env.write_under(index, client, lock, token, &write.value).map_err(err)?;
                self.write_tokens.insert(index, token);
                Some(verdict)
            }
            StepKind::Say(_) | StepKind::Exercise(_) => None,
            StepKind::Metrics(spec) => {
                let clients = metric_clients(&self.lesson, spec);
                let m = env.metrics(index, spec, &clients).map_err(err)?;
                bounds_ok = m.within(spec);
                let text = m.to_string();
                metrics = Some(m);
                Some(text)
            }
            StepKind::Hold { client, key, holds } => {
                actor = Some(client.to_owned());
                env.hold(index, client, key, holds).map_err(err)?;
                None
            }
        };
        if let (Some(client), Some((key, holds))) = (step.client.as_deref(), step.belief()) {
            env.hold(index, client, key, holds).map_err(err)?;
        }
        env.end_step(index, index + 1 >= self.lesson.steps.len());
        // Worded after the step, with the environment's names and the token
        // used.
        let shown = self.shown(index).map(|s| s.english(env.names())).unwrap_or_default();
        let expected = step.expect.as_ref().map(|e| e.describe());
        let ok = bounds_ok
            && match (&step.expect, &reply) {
                (Some(e), Some(r)) => e.matches(r),
                (Some(_), None) => false,
                (None, _) => true,
            };
        self.results.push(StepResult {
            index,
            actor,
            shown,
            reply,
            expected,
            ok,
            at_ms: env.now(),
            trace_len: env.trace_len(),
            metrics,
        });
        Ok(self.results.last())
    }
}

/// The simulated world as a lesson's environment: one client per actor.
pub struct SimEnv {
    world: World,
    clients: BTreeMap<String, ClientId>,
    /// Trace length at the last `metrics` step.
    metrics_from: usize,
}

impl SimEnv {
    fn client_id(&self, name: &str) -> Result<ClientId, String> {
        self.clients
            .get(name)
            .copied()
            .ok_or_else(|| format!("unknown client {name:?}"))
    }

    /// Process the world until the program `c` started at trace position
    /// `from` has finished (its `Done` event), or `c` crashed, or nothing
    /// is left to happen. Watching for this program's own `Done` matters
    /// when the client ran a program before: until the new one starts, the
    /// client's state still says the old one is done.
    fn run_until_done(&mut self, c: ClientId, from: usize) {
        let mut seen = from;
        loop {
            if self.world.client_state(c).is_none_or(|s| s.crashed) {
                return;
            }
            let trace = self.world.trace();
            if trace[seen..]
                .iter()
                .any(|e| e.actor == Actor::Client(c.0) && e.kind == EventKind::Done)
            {
                return;
            }
            seen = trace.len();
            if !self.world.step_item() {
                return;
            }
        }
    }

    /// Process the world until the resource has judged `c`'s write.
    fn run_until_write(&mut self, c: ClientId, from: usize) -> &'static str {
        loop {
            let verdict = self.world.trace()[from..].iter().find_map(|e| match &e.kind {
                EventKind::Write { client, accepted, .. } if *client == c.0 => Some(*accepted),
                _ => None,
            });
            match verdict {
                Some(true) => return "accepted",
                Some(false) => return "rejected",
                None if !self.world.step_item() => return "(the write never arrived)",
                None => {}
            }
        }
    }
}

impl Environment for SimEnv {
    fn command(
        &mut self,
        _index: usize,
        client: &str,
        node: Option<u32>,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String> {
        let c = self.client_id(client)?;
        let node = node.unwrap_or_else(|| self.world.master());
        self.world.request(c, node, argv.to_vec()).map_err(|e| e.to_string())
    }

    fn wait(&mut self, _index: usize, ms: u64) -> Result<(), String> {
        let t = self.world.now() + ms;
        self.world.advance_to(t);
        Ok(())
    }

    fn fault(&mut self, _index: usize, fault: &Fault) -> Result<(), String> {
        self.world.inject(fault.clone()).map_err(|e| e.to_string())
    }

    fn launch(&mut self, _index: usize, client: &str, program: &Program, background: bool) -> Result<(), String> {
        let c = self.client_id(client)?;
        let from = self.world.trace().len();
        self.world.run_program(c, program.clone()).map_err(|e| e.to_string())?;
        if !background {
            self.run_until_done(c, from);
        }
        Ok(())
    }

    fn write_under(
        &mut self,
        index: usize,
        client: &str,
        lock: Option<&str>,
        token: Option<i64>,
        value: &str,
    ) -> Result<String, String> {
        let c = self.client_id(client)?;
        self.world.write_under(c, lock).map_err(|e| e.to_string())?;
        let verdict = self.write(index, client, token, value);
        self.world.write_under(c, None).map_err(|e| e.to_string())?;
        verdict
    }

    fn write(&mut self, _index: usize, client: &str, token: Option<i64>, value: &str) -> Result<String, String> {
        let c = self.client_id(client)?;
        let from = self.world.trace().len();
        let program = Program::Commands(CommandsProgram {
            steps: vec![ProgramStep::Write {
                token,
                token_from_last_reply: false,
                value: value.to_owned(),
            }],
        });
        self.world.run_program(c, program).map_err(|e| e.to_string())?;
        Ok(self.run_until_write(c, from).to_owned())
    }

    fn hold(&mut self, _index: usize, client: &str, key: &str, holds: bool) -> Result<(), String> {
        let c = self.client_id(client)?;
        let s = if holds {
            ProgramStep::Hold { key: key.to_owned() }
        } else {
            ProgramStep::Unhold { key: key.to_owned() }
        };
        self.world
            .run_program(c, Program::Commands(CommandsProgram { steps: vec![s] }))
            .map_err(|e| e.to_string())?;
        let now = self.world.now();
        self.world.advance_to(now);
        Ok(())
    }

    fn metrics(&mut self, _index: usize, spec: &MetricsSpec, clients: &[String]) -> Result<Metrics, String> {
        let from = if spec.since_last { self.metrics_from } else { 0 };
        self.metrics_from = self.world.trace().len();
        let ids: Vec<u32> = clients
            .iter()
            .filter_map(|n| self.clients.get(n))
            .map(|c| c.0)
            .collect();
        Ok(super::metrics::measure(&self.world, &ids, from))
    }

    fn now(&self) -> u64 {
        self.world.now()
    }

    fn trace_len(&self) -> usize {
        self.world.trace().len()
    }

    fn names(&self) -> &Names {
        self.world.names()
    }
}

/// A lesson being played on the simulated world.
pub struct LessonRun {
    progress: Progress,
    env: SimEnv,
}

impl LessonRun {
    /// A fresh run at step 0 (nothing done yet), seeded by the lesson.
    pub fn new(lesson: &Lesson) -> Result<LessonRun, LessonError> {
        Self::with_seed(lesson, lesson.seed)
    }

    /// A fresh run with another seed (the URL's `seed=`).
    pub fn with_seed(lesson: &Lesson, seed: u64) -> Result<LessonRun, LessonError> {
        let invalid = |msg: String| LessonError::Invalid {
            id: lesson.id.clone(),
            msg,
        };
        lesson.validate()?;
        let mut world = World::new(world_config(lesson), seed).map_err(|e| invalid(e.to_string()))?;
        for key in &lesson.world.locks {
            world.watch_key(key);
        }
        if lesson.topology == LessonTopology::Cluster3 {
            // The simulator plays the first of three masters: it owns slots
            // 0–5460 and answers MOVED for the rest, as that node would.
            let cfg = crate::server::cluster::ClusterConfig::first_of_three();
            world
                .set_node_cluster(0, Some(cfg))
                .map_err(|e| invalid(e.to_string()))?;
        }
        let mut clients = BTreeMap::new();
        for name in &lesson.actors {
            let id = world.add_client(name).map_err(|e| invalid(e.to_string()))?;
            clients.insert(name.clone(), id);
        }
        Ok(LessonRun {
            progress: Progress::new(lesson),
            env: SimEnv {
                world,
                clients,
                metrics_from: 0,
            },
        })
    }

    /// Run a fresh copy to step `n` (0 = before the first step).
    pub fn at_step(lesson: &Lesson, seed: u64, n: usize) -> Result<LessonRun, LessonError> {
        let mut run = Self::with_seed(lesson, seed)?;
        while run.position() < n && run.step()?.is_some() {}
        Ok(run)
    }

    pub fn lesson(&self) -> &Lesson {
        self.progress.lesson()
    }

    pub fn world(&self) -> &World {
        &self.env.world
    }

    /// The world, for a console typing off script on the same run.
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.env.world
    }

    pub fn client(&self, name: &str) -> Option<ClientId> {
        self.env.clients.get(name).copied()
    }

    pub fn results(&self) -> &[StepResult] {
        self.progress.results()
    }

    /// Steps done so far.
    pub fn position(&self) -> usize {
        self.progress.results().len()
    }

    pub fn is_finished(&self) -> bool {
        self.progress.is_finished()
    }

    /// Run every remaining step.
    pub fn run_all(&mut self) -> Result<(), LessonError> {
        while self.step()?.is_some() {}
        Ok(())
    }

    /// What step `index` does (or did, once it ran), in parameters; `None`
    /// for a step that does not exist or is malformed.
    pub fn shown(&self, index: usize) -> Option<Shown<'_>> {
        self.progress.shown(index)
    }

    /// The fencing token each write step that ran carried, by step index.
    pub fn write_tokens(&self) -> &BTreeMap<usize, Option<i64>> {
        self.progress.write_tokens()
    }

    /// Carry out the next step; `None` when the lesson is over.
    pub fn step(&mut self) -> Result<Option<&StepResult>, LessonError> {
        self.progress.step(&mut self.env)
    }

    /// The invariants broken so far, overlap included when it happened.
    pub fn observed(&self) -> Vec<Invariant> {
        let world = &self.env.world;
        let mut seen: Vec<Invariant> = world.violations().iter().map(|v| v.invariant).collect();
        let overlapped = world
            .trace()
            .iter()
            .any(|e| matches!(e.kind, EventKind::Overlap { begin: true, .. }));
        if overlapped {
            seen.push(Invariant::Overlap);
        }
        seen.sort();
        seen.dedup();
        seen
    }

    /// Does what happened match the outcome the lesson teaches?
    pub fn outcome(&self) -> OutcomeCheck {
        let expected = self.lesson().outcome.clone();
        let observed = self.observed();
        let ok = match expected.invariant.invariant() {
            Some(inv) => observed.contains(&inv) == expected.broken,
            None => self.env.world.violations().is_empty(),
        };
        OutcomeCheck { expected, observed, ok }
    }

    /// Every expectation and the outcome held.
    pub fn passed(&self) -> bool {
        self.is_finished() && self.results().iter().all(|r| r.ok) && self.outcome().ok
    }
}
