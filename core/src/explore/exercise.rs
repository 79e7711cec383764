//! Grading a "write the fix" exercise ([`crate::lesson::exercise`]): the
//! candidate's part is dropped into an explorer design, and the lab
//! attacks it three ways, each with the explorer's own machinery:
//!
//! 1. **Without faults** the lock must work at all: every client acquires,
//!    writes, and (for a release) its release removes its own lock. An
//!    acquire that never succeeds is safe and useless; it fails here.
//! 2. **The lesson's story**: the base scenario with the exercise's faults
//!    at their fixed moments. Does it now end safely (core's invariants)?
//! 3. **The explorer**: first the bounded-exhaustive search ([`Bfs`]) under
//!    the exercise's fault kinds and budget, within [`BFS_LIMITS`]; if that
//!    is not exhausted within its limits, the sampling search
//!    ([`Explorer`]) with [`SAMPLED_WALKS`] random walks, and the verdict
//!    says which it was. A broken answer comes with its counterexample
//!    (steps, invariant, the lesson the timeline plays); a passing one with
//!    the bounds that were checked.
//!
//! A Redlock validity check (part `validity`) is a condition over the
//! round's figures, which the Redlock client on five masters evaluates in
//! place of redis.io's rule ([`crate::client::condition`]); its pauses land
//! only while a client acquires.
//!
//! Otherwise the answer is a Lua script (it mentions `redis.call`, `redis.pcall` or
//! starts like Lua) or redis-cli lines. Lines may say `$key`, `$token`,
//! `$ttl` (ms) and `$ttl_s` (s); a line becomes the script `return
//! redis.call(...)` with those as `KEYS[1]`, `ARGV[1]`, `ARGV[2]` — one
//! command in a script is that command, run atomically, as redis-server
//! runs it — and the two-line forms the lessons compare (`SETNX` then
//! `EXPIRE`, `GET` then `DEL`, the `INCR` after the acquire) become the
//! explorer's built-in variants, which send them as separate requests.
//!
//! Hostile answers get a verdict, never a hang: empty or over
//! [`MAX_ANSWER`] bytes is refused before anything runs; a script that
//! does not compile is the error redis-server 7.0 gives for it; one that
//! loops is stopped by the simulator's instruction budget and reported as
//! redis-server's `BUSY` would have made it; every search is bounded in
//! states or schedules.

use serde::{Deserialize, Serialize};

use super::bfs::{Bfs, Limits, Reductions, SearchStatus};
use super::job::{bound, JobResult};
use super::{ExploreError, Explorer, FaultKind, Spec, TopologyKind};
use crate::client::{Acquire, LockScripts, Release, Watchdog};
use crate::invariants::Invariant;
use crate::lesson::exercise::{Exercise, Part, MAX_ANSWER};
use crate::lesson::Lang;
use crate::observe::{LockChange, Via};
use crate::trace::EventKind;
use crate::world::{Scenario, World};

/// The breadth-first search's limits for one grading: small enough to
/// finish in seconds in the page's worker, large enough to exhaust one
/// fault over two clients on one seed.
pub const BFS_LIMITS: Limits = Limits {
    max_states: 150_000,
    max_frontier: 6_000,
};

/// Retries of the Redlock clients in the validity exercise.
pub const VALIDITY_RETRIES: u32 = 40;

/// Random walks of the sampled search, when the breadth-first one did not
/// exhaust its bounds.
pub const SAMPLED_WALKS: u64 = 300;

/// What the candidate typed, read.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Lua(String),
    Lines(Vec<Vec<String>>),
}

/// How the search that judged the answer went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SearchKind {
    /// Breadth-first, every schedule within the bounds.
    Exhaustive,
    /// Sampled: a bounded number of schedules, not a proof.
    Sampled,
}

/// The lesson's story, replayed with the answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Story {
    /// What broke, if the story did not end safely.
    pub broken: Option<Invariant>,
    /// The story's run as the explorer prints a counterexample.
    pub transcript: String,
}

/// The lab's verdict on one answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grade {
    /// The answer works without faults, survives the story and the search.
    pub passed: bool,
    /// Why it does not work even without faults (it never acquires, its
    /// release removes nothing…).
    pub useless: Option<String>,
    pub story: Story,
    pub search: SearchKind,
    /// The search's result: its counterexample (with the lesson the
    /// timeline plays) or the bounds it checked.
    pub result: JobResult,
}

/// Read the answer: Lua or command lines.
fn read(answer: &str) -> Result<Piece, ExploreError> {
    let bad = |m: &str| Err(ExploreError::Invalid(m.to_owned()));
    if answer.len() > MAX_ANSWER {
        return Err(ExploreError::Invalid(format!(
            "the answer is {} bytes; the lab grades at most {MAX_ANSWER}",
            answer.len()
        )));
    }
    let text = answer.trim();
    if text.is_empty() {
        return bad("the answer is empty: type a command line or a Lua script");
    }
    let first = text.split_whitespace().next().unwrap_or_default();
    let lua = text.contains("redis.call")
        || text.contains("redis.pcall")
        || ["return", "if", "local", "--", "for", "while", "repeat"].contains(&first);
    if lua {
        return Ok(Piece::Lua(text.to_owned()));
    }
    let mut lines = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let argv = crate::cli::parse(line).map_err(|e| ExploreError::Invalid(format!("{line:?}: {e}")))?;
        if !argv.is_empty() {
            lines.push(argv.iter().map(|w| String::from_utf8_lossy(w).into_owned()).collect());
        }
    }
    if lines.len() > 8 {
        return bad("more than 8 command lines: a part of a lock is one to four commands, or a Lua script");
    }
    Ok(Piece::Lines(lines))
}

/// A word of a command line as a Lua expression.
fn lua_word(w: &str) -> String {
    match w {
        "$key" | "$KEY" => "KEYS[1]".to_owned(),
        "$token" | "$TOKEN" => "ARGV[1]".to_owned(),
        "$ttl" | "$TTL" => "ARGV[2]".to_owned(),
        "$ttl_s" | "$TTL_S" => "tostring(math.max(1, math.floor(tonumber(ARGV[2]) / 1000)))".to_owned(),
        other => {
            let mut s = String::from("\"");
            for c in other.chars() {
                match c {
                    '"' | '\\' => {
                        s.push('\\');
                        s.push(c);
                    }
                    '\n' => s.push_str("\\n"),
                    '\r' => s.push_str("\\r"),
                    c => s.push(c),
                }
            }
            s.push('"');
            s
        }
    }
}

/// One command line as the script that runs it.
fn wrap(argv: &[String]) -> String {
    let args: Vec<String> = argv.iter().map(|w| lua_word(w)).collect();
    format!("return redis.call({})\n", args.join(", "))
}

fn is(argv: &[String], name: &str) -> bool {
    argv.first().is_some_and(|c| c.eq_ignore_ascii_case(name))
}

fn scripts(spec: &mut Spec) -> &mut LockScripts {
    spec.scripts.get_or_insert_with(LockScripts::default)
}

/// The explorer design `ex` makes of `answer`.
pub fn design(ex: &Exercise, answer: &str) -> Result<Spec, ExploreError> {
    let mut kinds = Vec::new();
    for k in &ex.faults {
        kinds.push(FaultKind::parse(k).ok_or_else(|| ExploreError::Invalid(format!("unknown fault kind {k:?}")))?);
    }
    let mut spec = Spec {
        name: Some(format!("exercise: your {}", ex.part.name())),
        fencing: ex.fencing,
        ttl_ms: ex.ttl_ms,
        faults: ex.budget,
        fault_kinds: kinds,
        watchdog: ex.watchdog.map(|m| Watchdog {
            max_renewals: Some(m),
            ..Watchdog::default()
        }),
        work_hangs: ex.work_hangs,
        random_walks: SAMPLED_WALKS,
        exhaustive_seeds: 2,
        ..Spec::default()
    };
    if ex.part == Part::Validity {
        return validity_design(spec, answer);
    }
    let unsure = |what: &str| {
        Err(ExploreError::Invalid(format!(
            "the {} is {what}: write one command line or a Lua script",
            ex.part.name()
        )))
    };
    match (ex.part, read(answer)?) {
        (Part::Fence, Piece::Lua(_)) => {
            return Err(ExploreError::Invalid(
                "write the fenced acquire as command lines (MULTI, the acquire, INCR counter, EXEC — or the acquire and INCR counter): the lab reads the token from INCR's reply".into(),
            ))
        }
        (Part::Acquire, Piece::Lua(src)) => scripts(&mut spec).acquire = Some(src),
        (Part::Release, Piece::Lua(src)) => scripts(&mut spec).release = Some(src),
        (Part::Extend, Piece::Lua(src)) => scripts(&mut spec).extend = Some(src),
        (Part::Validity, _) => return unsure("a condition, not a script"),
        (part, Piece::Lines(lines)) => match (part, lines.as_slice()) {
            (Part::Acquire, [one]) => scripts(&mut spec).acquire = Some(wrap(one)),
            (Part::Acquire, [a, b]) if is(a, "SETNX") && (is(b, "EXPIRE") || is(b, "PEXPIRE")) => {
                spec.acquire = Acquire::SetnxExpire;
            }
            (Part::Release, [one]) => scripts(&mut spec).release = Some(wrap(one)),
            (Part::Release, [a, b]) if is(a, "GET") && is(b, "DEL") => spec.release = Release::GetThenDel,
            (Part::Extend, [one]) => scripts(&mut spec).extend = Some(wrap(one)),
            (Part::Fence, [m, acq, incr, e]) if is(m, "MULTI") && is(incr, "INCR") && is(e, "EXEC") => {
                spec.fencing = true;
                scripts(&mut spec).acquire = Some(wrap(acq));
            }
            (Part::Fence, [acq, incr]) if is(incr, "INCR") => {
                spec.fencing = true;
                spec.fence_after = true;
                scripts(&mut spec).acquire = Some(wrap(acq));
            }
            (Part::Fence, _) => {
                return Err(ExploreError::Invalid(
                    "a fenced acquire takes its token with INCR: MULTI / the acquire / INCR counter / EXEC, or the acquire then INCR counter".into(),
                ))
            }
            (_, []) => return unsure("empty"),
            (Part::Acquire, _) => return unsure("more than one command other than SETNX then EXPIRE"),
            (Part::Release, _) => return unsure("more than one command other than GET then DEL"),
            (Part::Extend | Part::Validity, _) => return unsure("more than one command"),
        },
    }
    spec.validate()?;
    Ok(spec)
}

/// A Redlock validity check: the condition the Redlock client on five
/// masters decides by; pauses land only while a client acquires.
fn validity_design(mut spec: Spec, answer: &str) -> Result<Spec, ExploreError> {
    if answer.len() > MAX_ANSWER {
        return Err(ExploreError::Invalid(format!(
            "the answer is {} bytes; the lab grades at most {MAX_ANSWER}",
            answer.len()
        )));
    }
    let rule = answer.trim();
    crate::client::condition::Condition::parse(rule)
        .map_err(|e| ExploreError::Invalid(format!("the validity check: {e}")))?;
    spec.topology = TopologyKind::Redlock5;
    spec.redlock_acquired_if = Some(rule.to_owned());
    spec.pause_only_acquiring = true;
    // B keeps trying for about four TTLs: still there when a paused
    // acquirer's keys expire.
    spec.redlock_retries = Some(VALIDITY_RETRIES);
    spec.validate()?;
    Ok(spec)
}

/// A grade as the page's explore worker sends it, with the design the
/// answer became (JSON of its [`Spec`]): the counterexample's link carries
/// that design, so the explore screen can search it again. The design
/// travels as text so that the page, which only decodes the grade, never
/// carries the explorer's own types.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graded {
    pub grade: Grade,
    pub design: String,
}

/// [`grade`], with the design for the link ([`Graded`]).
pub fn graded(ex: &Exercise, answer: &str) -> Result<Graded, ExploreError> {
    let spec = design(ex, answer)?;
    let design = serde_json::to_string(&spec).map_err(|e| ExploreError::Invalid(e.to_string()))?;
    Ok(Graded {
        grade: grade_design(ex, &spec)?,
        design,
    })
}

/// Grade `answer` for `ex`.
pub fn grade(ex: &Exercise, answer: &str) -> Result<Grade, ExploreError> {
    grade_design(ex, &design(ex, answer)?)
}

/// Grade the design an answer became.
fn grade_design(ex: &Exercise, spec: &Spec) -> Result<Grade, ExploreError> {
    let spec = spec.clone();
    let useless = fault_free(ex, &spec)?;
    let story = story(ex, &spec)?;
    let (search, result) = search(&spec, ex.seeds)?;
    let passed = useless.is_none() && story.broken.is_none() && result.broken.is_none();
    Ok(Grade {
        passed,
        useless,
        story,
        search,
        result,
    })
}

/// Run a scenario to its end; a script the simulator had to stop is an error.
fn play(spec: &Spec, sc: &Scenario) -> Result<World, ExploreError> {
    let mut w = World::from_scenario(sc)?;
    w.run();
    super::stopped_script(spec, w.trace())?;
    Ok(w)
}

/// Why the design does not work even without faults, if it does not.
fn fault_free(ex: &Exercise, spec: &Spec) -> Result<Option<String>, ExploreError> {
    let sc = spec.base_scenario();
    let w = play(spec, &sc)?;
    let clients = sc.clients.len();
    let (mut acquired, mut removed, mut accepted) = (0, 0, 0);
    for e in w.trace() {
        match &e.kind {
            EventKind::Lock {
                change: LockChange::Acquired { .. },
                via: Via::Command,
                ..
            } => acquired += 1,
            EventKind::Lock {
                change: LockChange::Removed { by: Some(_) },
                via: Via::Command,
                ..
            } => removed += 1,
            EventKind::Write { accepted: true, .. } => accepted += 1,
            _ => {}
        }
    }
    Ok(if acquired < clients {
        Some(format!(
            "without any fault, the lock was taken {acquired} time(s) for {clients} clients: the acquire does not acquire"
        ))
    } else if accepted < clients && !spec.work_hangs {
        Some(format!(
            "without any fault, {accepted} of {clients} clients' writes were accepted: the lock does not let the work through"
        ))
    } else if ex.part == Part::Release && removed < clients {
        Some(format!(
            "without any fault, the release removed the lock {removed} time(s) for {clients} clients: the others waited for the TTL"
        ))
    } else {
        None
    })
}

/// The lesson's story with the answer in it.
fn story(ex: &Exercise, spec: &Spec) -> Result<Story, ExploreError> {
    let mut sc = spec.base_scenario();
    sc.faults = ex.story.clone();
    let w = play(spec, &sc)?;
    let broken = w.violations().first().map(|v| v.invariant);
    let mut trace = w.to_trace();
    if let Some(step) = w.first_violation_step() {
        trace.events.truncate(step as usize + 1);
    }
    let faults: Vec<String> = sc.faults.iter().map(|f| f.fault.describe(&trace.names)).collect();
    let mut transcript = format!(
        "the lesson's story ({}), one run:\n",
        if faults.is_empty() {
            "no faults".to_owned()
        } else {
            faults.join("; ")
        }
    );
    transcript.push_str(&super::trace_table(&trace));
    transcript.push_str(&match broken {
        Some(i) => format!("the story breaks {}: {}\n", i.name(), super::explain(i)),
        None => "the story ends safely\n".to_owned(),
    });
    Ok(Story { broken, transcript })
}

/// Breadth-first within [`BFS_LIMITS`]; sampled when that is not exhausted.
fn search(spec: &Spec, seeds: u32) -> Result<(SearchKind, JobResult), ExploreError> {
    let mut bfs = Bfs::new(spec, seeds, Reductions::default(), BFS_LIMITS)?;
    match bfs.run() {
        SearchStatus::Exhausted | SearchStatus::Violated { .. } => {
            let report = bfs.report();
            let bounds = format!("{} (checked exhaustively)", bfs.verdict());
            Ok((SearchKind::Exhaustive, JobResult::from_report(spec, &report, bounds)))
        }
        SearchStatus::NotExhausted | SearchStatus::Running => {
            let ex = Explorer::new(spec)?;
            let f = ex.search(0, 1);
            let report = ex.report(&f);
            let bounds = bound(spec, report.explored);
            Ok((SearchKind::Sampled, JobResult::from_report(spec, &report, bounds)))
        }
    }
}

impl Grade {
    /// The verdict as the CLI prints it and the page shows it: a headline
    /// in `lang`, then why (the fault-free run, the story, the search), the
    /// counterexample's transcript when there is one, else the bounds that
    /// were checked.
    pub fn lines(&self, lang: Lang) -> Vec<String> {
        let zh = lang == Lang::Zh;
        let mut out = Vec::new();
        let searched = match (self.search, zh) {
            (SearchKind::Exhaustive, false) => "bounded-exhaustive search",
            (SearchKind::Exhaustive, true) => "有界穷举搜索",
            (SearchKind::Sampled, false) => "sampled search (not a proof)",
            (SearchKind::Sampled, true) => "抽样搜索（不是证明）",
        };
        out.push(match (self.passed, zh) {
            (true, false) => format!(
                "✓ passed: it works without faults, the story ends safely, and the {searched} found no violation"
            ),
            (true, true) => format!("✓ 通过：无故障时能用，故事安全收尾，{searched}没有找到违例"),
            (false, false) => "✗ not safe yet".to_owned(),
            (false, true) => "✗ 还不安全".to_owned(),
        });
        if let Some(u) = &self.useless {
            out.push(if zh {
                format!("无故障运行：{u}")
            } else {
                format!("without faults: {u}")
            });
        }
        if let Some(i) = self.story.broken {
            out.push(if zh {
                format!("课里的故事：破坏了 {}", i.name())
            } else {
                format!("the lesson's story: breaks {}", i.name())
            });
            out.extend(self.story.transcript.lines().map(str::to_owned));
        }
        match &self.result.broken {
            Some(b) => {
                out.push(if zh {
                    format!("{searched}：破坏了 {}，反例 {} 步", b.invariant.name(), b.steps)
                } else {
                    format!("the {searched}: breaks {} in {} steps", b.invariant.name(), b.steps)
                });
                out.extend(self.result.transcript.lines().map(str::to_owned));
            }
            None => out.push(if zh {
                format!("{searched}检查过的范围：{}", self.result.bound)
            } else {
                format!("what the {searched} checked: {}", self.result.bound)
            }),
        }
        out
    }
}
