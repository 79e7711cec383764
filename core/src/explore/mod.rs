//! The explorer: search schedules and faults for the shortest broken run.
//!
//! A lock design is only as good as its worst schedule, and the bad
//! schedules are rare: the client has to pause *exactly* between its `GET`
//! and its `DEL`, the master has to die *exactly* before it replicated the
//! lock. Humans find these by reading post-mortems; the explorer finds them
//! by brute force, in the spirit of Jepsen and of model checkers like TLC:
//!
//! 1. **Exhaustive phase** (two clients, a fault budget of at least one):
//!    for a few seeds, run the scenario once without faults to learn how
//!    long it is, then once more for *every fault option at every step* of
//!    that run — pause A right after step 0, after step 1, …; crash B after
//!    each step; fail over after each step; and so on. Because the world is
//!    deterministic, "at step k" means the same point of the same story in
//!    every run, so this covers every place one fault can land.
//! 2. **Random walks**: seeded schedules with up to the budget's number of
//!    faults at random steps or times, with random network jitter, backoff
//!    and work durations.
//!
//! Every run stops at its first violation. The answer is the violating run
//! with the fewest steps (ties: the earliest schedule), replayed and printed
//! as a transcript. Runs that cannot beat the best so far are cut off early,
//! which is where most of the speed comes from. The search is split into
//! shards ([`Explorer::search`]) that can run on separate threads — the
//! backend does, core never spawns one — and merging shards gives the same
//! answer as one sequential search, because "fewest steps, then earliest
//! index" does not depend on who looked first.

pub mod bfs;
pub mod catalog;
pub mod checks;
pub mod designs;
pub mod drill;
pub mod exercise;
pub mod export;
pub mod job;
pub mod lesson;
pub mod link;
pub mod sleep;
pub mod spec;
pub mod zh;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::fault::{At, ClockOf, Fault, ScheduledFault};
use crate::invariants::Invariant;
use crate::lang::Lang;
use crate::rng::Rng;
use crate::trace::Trace;
use crate::world::{Scenario, Topology, World, WorldError};

pub use spec::{FaultKind, Spec, TopologyKind};

/// Why an exploration cannot start.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ExploreError {
    #[error("{0}")]
    Invalid(String),
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A user's script does not compile: `reply` is what redis-cli prints
    /// for `SCRIPT LOAD` of it on redis-server 7.0.
    #[error("the {role} script does not compile: {reply}")]
    Script { role: &'static str, reply: String },
    /// A user's script compiles but its first run had to be stopped by the
    /// simulator (an endless loop, unbounded allocation): redis-server would
    /// have answered everyone else `BUSY` until `SCRIPT KILL`. `reply` is
    /// what redis-cli prints for the stopped `EVAL`.
    #[error("the {role} script was stopped on its first run: {reply}")]
    ScriptStopped { role: &'static str, reply: String },
    #[error(transparent)]
    World(#[from] WorldError),
}

/// The exhaustive phase injects faults at most this far into a run.
const MAX_FAULT_STEP: u64 = 400;

/// The exhaustive phase stops adding seeds beyond this many schedules.
const MAX_EXHAUSTIVE: u64 = 12_000;

/// The best counterexample found so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Best {
    pub steps: u64,
    pub index: u64,
    pub invariant: Invariant,
    pub seed: u64,
}

impl Best {
    fn beats(&self, other: &Best) -> bool {
        (self.steps, self.index) < (other.steps, other.index)
    }
}

/// What one shard (or a merge of shards) found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub best: Option<Best>,
    /// Schedules looked at.
    pub explored: u64,
    /// World events processed (for the benchmark).
    pub events: u64,
}

impl Finding {
    /// Combine two shards' findings.
    pub fn merge(self, other: Finding) -> Finding {
        let best = match (self.best, other.best) {
            (Some(a), Some(b)) => Some(if b.beats(&a) { b } else { a }),
            (a, b) => a.or(b),
        };
        Finding {
            best,
            explored: self.explored + other.explored,
            events: self.events + other.events,
        }
    }

    fn offer(&mut self, b: Best) {
        if self.best.is_none_or(|cur| b.beats(&cur)) {
            self.best = Some(b);
        }
    }
}

/// The result of one schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOutcome {
    pub events: u64,
    /// (steps up to and including the violation, which invariant)
    pub violation: Option<(u64, Invariant)>,
}

/// One exhaustive block: a seed and the points of its fault-free run where
/// a fault can land.
#[derive(Clone, Debug)]
struct Block {
    seed: u64,
    /// Trace lengths between two deliveries. A step fault fires at the
    /// first such point at or after its step, so these are exactly the
    /// distinct injection points; steps inside one delivery's burst of
    /// events would repeat the same schedule.
    points: Vec<u64>,
    start: u64,
}

/// A prepared search: the base scenario, the fault options, the index
/// space of schedules.
#[derive(Clone, Debug)]
pub struct Explorer {
    spec: Spec,
    base: Scenario,
    options: Vec<Fault>,
    blocks: Vec<Block>,
    exhaustive_total: u64,
    step_hint: u64,
    exhaustive: bool,
}

/// The faults `spec` lets either search inject into `base`: the
/// [`fault_options`] of the kinds it allows, none when its budget is 0.
pub(crate) fn allowed_faults(spec: &Spec, base: &Scenario) -> Vec<Fault> {
    if spec.faults == 0 {
        return Vec::new();
    }
    fault_options(base, spec.ttl_ms)
        .into_iter()
        .filter(|f| FaultKind::of(f).is_none_or(|k| spec.allows(k)))
        .collect()
}

/// The faults the explorer may inject into this scenario: pauses of six
/// lengths from half the TTL to three TTLs (a pause only matters if the
/// client wakes up while someone else holds the lock, so the lengths must be
/// fine enough to land in that window), a crash for each client, and per
/// topology a restart, a failover, a clock jump of one TTL.
pub fn fault_options(base: &Scenario, ttl: u64) -> Vec<Fault> {
    let mut v = Vec::new();
    for c in &base.clients {
        for ms in [ttl / 2, ttl, ttl * 5 / 4, ttl * 3 / 2, ttl * 2, ttl * 3] {
            v.push(Fault::PauseClient {
                client: c.name.clone(),
                ms: Some(ms),
            });
        }
        v.push(Fault::CrashClient { client: c.name.clone() });
    }
    let restart = |node| Fault::RestartNode {
        node,
        down_ms: ttl / 10,
        keep_data: None,
    };
    let jump = |node| Fault::JumpClock {
        of: ClockOf::Node(node),
        delta_ms: ttl as i64,
    };
    match base.world.topology {
        Topology::Single => {
            v.push(restart(0));
            v.push(jump(0));
        }
        Topology::Replicated { .. } => {
            v.push(Fault::Failover { node: None });
            v.push(restart(0));
            v.push(jump(0));
        }
        Topology::Redlock { .. } | Topology::Etcd { .. } | Topology::Zk { .. } | Topology::Compare { .. } => {
            let n = base.world.topology.node_count();
            for i in 0..n {
                v.push(restart(i));
            }
            for i in 0..n {
                v.push(jump(i));
            }
        }
    }
    v
}

impl Explorer {
    /// Validate the spec, build the base scenario, and measure the
    /// fault-free runs that size the exhaustive phase.
    pub fn new(spec: &Spec) -> Result<Explorer, ExploreError> {
        spec.validate()?;
        let base = spec.base_scenario();
        World::from_scenario(&base)?;
        let options = allowed_faults(spec, &base);
        let exhaustive = base.clients.len() == 2 && spec.faults >= 1 && !options.is_empty();
        let mut blocks = Vec::new();
        let mut start = 0;
        let mut step_hint = 1;
        for s in 0..u64::from(spec.exhaustive_seeds) {
            let seed = spec.seed.wrapping_add(s);
            let mut sc = base.clone();
            sc.seed = seed;
            let mut w = World::from_scenario(&sc)?;
            let mut points = vec![0];
            let mut seen = 0;
            while w.step_item() {
                stopped_script(spec, &w.trace()[seen..])?;
                seen = w.trace().len();
                let n = seen as u64;
                if n >= MAX_FAULT_STEP {
                    break;
                }
                if points.last() != Some(&n) {
                    points.push(n);
                }
            }
            step_hint = step_hint.max(w.trace().len() as u64);
            let len = 1 + if exhaustive {
                options.len() as u64 * points.len() as u64
            } else {
                0
            };
            // Keep the exhaustive phase bounded: later seeds are dropped
            // once the budget is spent (the first seed always runs).
            if s > 0 && start + len > MAX_EXHAUSTIVE {
                break;
            }
            blocks.push(Block {
                seed,
                points: if exhaustive { points } else { Vec::new() },
                start,
            });
            start += len;
        }
        Ok(Explorer {
            spec: spec.clone(),
            base,
            options,
            blocks,
            exhaustive_total: start,
            step_hint,
            exhaustive,
        })
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The fault options (for the transcript header).
    pub fn options(&self) -> &[Fault] {
        &self.options
    }

    /// How many schedules the whole search covers.
    pub fn total(&self) -> u64 {
        self.exhaustive_total + self.spec.random_walks
    }

    /// Schedule number `index` as a complete scenario.
    pub fn schedule(&self, index: u64) -> Scenario {
        let mut sc = self.base.clone();
        if index < self.exhaustive_total {
            let Some(b) = self.blocks.iter().rev().find(|b| b.start <= index) else {
                return sc;
            };
            sc.seed = b.seed;
            let off = index - b.start;
            let k = b.points.len() as u64;
            if off > 0 && k > 0 {
                let j = off - 1;
                let opt = (j / k) as usize;
                let step = b.points[(j % k) as usize];
                if let Some(f) = self.options.get(opt) {
                    sc.faults.push(ScheduledFault {
                        at: At::Step(step),
                        fault: f.clone(),
                    });
                }
            }
            return sc;
        }
        let i = index - self.exhaustive_total;
        let mut rng = Rng::derive(self.spec.seed, 0x5eed_0000_0000 + i);
        sc.seed = rng.below(1_000_000_000);
        if self.spec.faults > 0 && !self.options.is_empty() {
            let n = 1 + rng.below(u64::from(self.spec.faults));
            let ttl = self.spec.ttl_ms;
            for _ in 0..n {
                let mut f = self.options[rng.below(self.options.len() as u64) as usize].clone();
                // Random walks also vary the size of the fault.
                match &mut f {
                    Fault::PauseClient { ms: Some(ms), .. } => *ms = rng.between(ttl / 4, ttl * 3),
                    Fault::RestartNode { down_ms, .. } => *down_ms = rng.between(ttl / 20, ttl / 2),
                    Fault::JumpClock { delta_ms, .. } => *delta_ms = rng.between(ttl / 4, ttl * 2) as i64,
                    _ => {}
                }
                let at = if rng.below(4) != 0 {
                    At::Step(rng.below(self.step_hint))
                } else {
                    At::Time(rng.below(self.spec.ttl_ms * 3))
                };
                sc.faults.push(ScheduledFault { at, fault: f });
            }
        }
        sc
    }

    /// Run one schedule, giving up once its trace has more than `limit`
    /// events (it could not beat a counterexample of that length).
    pub fn run(&self, index: u64, limit: Option<u64>) -> RunOutcome {
        let mut sc = self.schedule(index);
        if let Some(l) = limit {
            sc.world.max_events = sc.world.max_events.min(l);
        }
        let Ok(mut w) = World::from_scenario(&sc) else {
            return RunOutcome {
                events: 0,
                violation: None,
            };
        };
        let events = w.run() as u64;
        let violation = w.first_violation_step().and_then(|step| {
            let steps = step + 1;
            if limit.is_some_and(|l| steps > l) {
                return None;
            }
            w.violations().first().map(|v| (steps, v.invariant))
        });
        RunOutcome { events, violation }
    }

    /// Search every `shards`-th schedule starting at `shard`.
    pub fn search(&self, shard: u64, shards: u64) -> Finding {
        let shards = shards.max(1);
        let mut f = Finding::default();
        let mut index = shard;
        while index < self.total() {
            self.visit(index, &mut f);
            index += shards;
        }
        f
    }

    /// Search the schedules in `range` (for time-boxed runs).
    pub fn search_range(&self, range: std::ops::Range<u64>, mut f: Finding) -> Finding {
        for index in range {
            self.visit(index, &mut f);
        }
        f
    }

    fn visit(&self, index: u64, f: &mut Finding) {
        f.explored += 1;
        let limit = f.best.map(|b| b.steps.saturating_sub(1));
        if limit == Some(0) {
            return;
        }
        let out = self.run(index, limit);
        f.events += out.events;
        if let Some((steps, invariant)) = out.violation {
            let seed = self.schedule_seed(index);
            f.offer(Best {
                steps,
                index,
                invariant,
                seed,
            });
        }
    }

    fn schedule_seed(&self, index: u64) -> u64 {
        self.schedule(index).seed
    }

    /// Replay the best schedule and write the report.
    pub fn report(&self, f: &Finding) -> Report {
        let outcome = match f.best {
            None => Outcome::Held,
            Some(b) => {
                let scenario = self.schedule(b.index);
                let mut trace = Trace::default();
                if let Ok(mut w) = World::from_scenario(&scenario) {
                    w.run();
                    trace = w.to_trace();
                    trace.events.truncate(b.steps as usize);
                }
                Outcome::Violated {
                    invariant: b.invariant,
                    seed: b.seed,
                    steps: b.steps,
                    index: b.index,
                    scenario: Box::new(scenario),
                    trace,
                }
            }
        };
        Report {
            summary: self.spec.summary(),
            plan: self.plan(),
            explored: f.explored,
            outcome,
            bounded: None,
            plan_zh: Some(self.plan_zh()),
            bounded_zh: None,
        }
    }

    /// [`Explorer::plan`] in Chinese.
    pub fn plan_zh(&self) -> String {
        self.plan_in(true)
    }

    /// One sentence on how the search space is made up.
    pub fn plan(&self) -> String {
        self.plan_in(false)
    }

    fn plan_in(&self, zh: bool) -> String {
        let (seeds, total, walks) = (self.blocks.len(), self.total(), self.spec.random_walks);
        let (exhaustive, options) = (self.exhaustive_total, self.options.len());
        match (self.exhaustive, zh) {
            (true, false) => format!(
                "{total} schedules: {exhaustive} exhaustive ({seeds} seeds × {options} fault options × every point between deliveries of the fault-free run, plus the fault-free runs) and {walks} random walks"
            ),
            (true, true) => format!(
                "{total} 个调度：{exhaustive} 个穷举（{seeds} 个种子 × {options} 种故障 × 无故障运行中每两次投递之间的每个位置，加上无故障运行）和 {walks} 次随机游走（抽样）"
            ),
            (false, false) => format!(
                "{total} schedules: {seeds} fault-free runs and {walks} random walks (exhaustive search needs two clients and a fault budget)"
            ),
            (false, true) => {
                format!("{total} 个调度：{seeds} 次无故障运行和 {walks} 次随机游走（抽样；穷举需要两个客户端和故障预算）")
            }
        }
    }
}

/// A script the simulator had to stop, in these events, as an error: a
/// design whose script never finishes would otherwise cost a full
/// instruction budget on every one of thousands of schedules, and could not
/// be a lock on redis-server at all.
pub(crate) fn stopped_script(spec: &Spec, events: &[crate::trace::Event]) -> Result<(), ExploreError> {
    for e in events {
        let crate::trace::EventKind::Executed { commands, replies, .. } = &e.kind else {
            continue;
        };
        for (cmd, reply) in commands.iter().zip(replies) {
            let crate::reply::Reply::Error(text) = reply else {
                continue;
            };
            if !text.starts_with(crate::server::script::SIMULATOR_STOPPED) {
                continue;
            }
            let body = cmd.get(1).map(String::as_str);
            let role = spec
                .scripts
                .as_ref()
                .and_then(|s| s.given().into_iter().find(|(_, src)| Some(*src) == body))
                .map_or("lock", |(r, _)| r.name());
            return Err(ExploreError::ScriptStopped {
                role,
                reply: format!("(error) {text}"),
            });
        }
    }
    Ok(())
}

/// What the explorer concluded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    /// A counterexample: replay `scenario` to see `trace` again.
    Violated {
        invariant: Invariant,
        seed: u64,
        steps: u64,
        index: u64,
        scenario: Box<Scenario>,
        trace: Trace,
    },
    /// No schedule broke an invariant.
    Held,
}

/// A finished exploration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub summary: String,
    pub plan: String,
    pub explored: u64,
    pub outcome: Outcome,
    /// The verdict line of a bounded-exhaustive search ([`bfs::Bfs::verdict`]):
    /// "held: every schedule of …", "violated …: a shortest counterexample
    /// within …" or "not exhausted within the limit: …". Absent for a
    /// sampling search, whose result line says "sampled".
    #[serde(default)]
    pub bounded: Option<String>,
    /// [`Report::plan`] in Chinese, when the search wrote one.
    #[serde(default)]
    pub plan_zh: Option<String>,
    /// [`Report::bounded`] in Chinese.
    #[serde(default)]
    pub bounded_zh: Option<String>,
}

impl Report {
    /// `result: violated <invariant> (seed S, N steps)` or
    /// `result: sampled K schedules: no violation found` — never "held":
    /// a sample proves nothing about the schedules it did not try (only
    /// [`bfs`] says "held", with its bounds).
    pub fn result_line(&self) -> String {
        match &self.outcome {
            Outcome::Violated {
                invariant, seed, steps, ..
            } => {
                format!("result: violated {} (seed {seed}, {steps} steps)", invariant.name())
            }
            Outcome::Held => match &self.bounded {
                Some(verdict) => format!("result: {verdict}"),
                None => format!("result: sampled {} schedules: no violation found", self.explored),
            },
        }
    }

    /// The whole transcript, ending with the result line.
    pub fn transcript(&self) -> String {
        self.transcript_in(None)
    }

    /// The transcript in English, or in Chinese with the design's Chinese
    /// summary (`Report::transcript_zh`).
    pub(crate) fn transcript_in(&self, summary_zh: Option<&str>) -> String {
        let zh = summary_zh.is_some();
        let mut out = match summary_zh {
            Some(s) => format!(
                "locklab explore：{s}\n搜索方式：{}\n",
                self.plan_zh.as_deref().unwrap_or(&self.plan)
            ),
            None => format!("locklab explore: {}\nsearched {}\n", self.summary, self.plan),
        };
        if let Outcome::Violated {
            index,
            scenario,
            trace,
            invariant,
            ..
        } = &self.outcome
        {
            let names = &trace.names;
            let faults: Vec<String> = scenario
                .faults
                .iter()
                .map(|f| match (f.at, zh) {
                    (At::Step(s), false) => format!("{} after step {s}", f.fault.describe(names)),
                    (At::Time(t), false) => format!("{} at {t} ms", f.fault.describe(names)),
                    (At::Step(s), true) => format!("第 {s} 步之后{}", f.fault.describe_in(names, Lang::Zh)),
                    (At::Time(t), true) => format!("{t} ms 时{}", f.fault.describe_in(names, Lang::Zh)),
                })
                .collect();
            let which = match (self.bounded.is_some(), zh) {
                (true, false) => "shortest counterexample (breadth-first: no schedule within the bounds breaks an invariant in fewer transitions)",
                (false, false) => "sampled counterexample (the fewest steps among the schedules tried)",
                (true, true) => "最短反例（广度优先：界限内没有任何调度能以更少的转移破坏不变量）",
                (false, true) => "抽样反例（在试过的调度中步数最少，不一定最短）",
            };
            let seed = scenario.seed;
            let (inv, title) = (invariant.name(), invariant.title_zh());
            let line = match (faults.is_empty(), zh) {
                (true, false) => format!(
                    "{which}: schedule #{index}, world seed {seed}, no faults\nit breaks {inv}: {}\n\n",
                    explain(*invariant)
                ),
                (false, false) => format!(
                    "{which}: schedule #{index}, world seed {seed}, faults: {}\nit breaks {inv}: {}\n\n",
                    faults.join("; "),
                    explain(*invariant)
                ),
                (true, true) => format!(
                    "{which}：第 {index} 个调度，世界种子 {seed}，没有故障\n它违反 {title}（{inv}）：{}\n\n",
                    zh::explain_zh(*invariant)
                ),
                (false, true) => format!(
                    "{which}：第 {index} 个调度，世界种子 {seed}，故障：{}\n它违反 {title}（{inv}）：{}\n\n",
                    faults.join("；"),
                    zh::explain_zh(*invariant)
                ),
            };
            out.push_str(&line);
            out.push_str(&trace_table_in(trace, zh));
            out.push('\n');
        } else if self.bounded.is_none() {
            out.push_str(if zh {
                "没有任何调度破坏 stale-write、wrong-release 或 deadlock\n"
            } else {
                "no schedule broke stale-write, wrong-release or deadlock\n"
            });
        }
        out.push_str(&if zh { self.result_line_zh() } else { self.result_line() });
        out.push('\n');
        out
    }
}

/// A run's events as the transcript's table: step, time, actor, event.
pub(crate) fn trace_table(trace: &Trace) -> String {
    trace_table_in(trace, false)
}

/// The event table's header in Chinese: `步` ends in column 5, `时间` in
/// column 15, `角色` starts in column 17 and `事件` in column 27, as
/// `step`, `time`, `actor` and `event` do.
const TABLE_HEADER_ZH: &str = "   步      时间  角色      事件\n";

/// [`trace_table`], in Chinese when `zh`.
fn trace_table_in(trace: &Trace, zh: bool) -> String {
    // A Chinese character takes two columns of a terminal (and of the
    // page's monospaced transcript), so the Chinese header is spaced by
    // hand to the same columns as the English one.
    let mut out = if zh {
        TABLE_HEADER_ZH.to_owned()
    } else {
        format!("{:>5}  {:>8}  {:<9} event\n", "step", "time", "actor")
    };
    for e in &trace.events {
        let what = e.describe_in(&trace.names, if zh { Lang::Zh } else { Lang::En });
        out.push_str(&format!(
            "{:>5}  {:>5} ms  {:<9} {what}\n",
            e.step,
            e.at_ms,
            trace.names.actor(e.actor)
        ));
    }
    out
}

pub(crate) fn explain(i: Invariant) -> &'static str {
    match i {
        Invariant::StaleWrite => {
            "the resource accepted a write from a holder after a later holder's write (a lost update)"
        }
        Invariant::WrongRelease => "a client's release removed a lock another client had acquired",
        Invariant::Deadlock => "a lock that can never expire while its owner is gone (or is held past its bound)",
        Invariant::ForeignExtend => {
            "a client's command extended a lock another client had acquired (a renewal without a token check)"
        }
        Invariant::Overlap => "two clients believed they held the lock at once",
    }
}

/// Explore on the current thread and report.
pub fn explore(spec: &Spec) -> Result<Report, ExploreError> {
    let ex = Explorer::new(spec)?;
    let f = ex.search(0, 1);
    Ok(ex.report(&f))
}

#[cfg(test)]
mod table_tests {
    /// Terminal columns: a CJK character takes two.
    fn columns(s: &str) -> usize {
        s.chars().map(|c| if c >= '\u{1100}' { 2 } else { 1 }).sum()
    }

    /// Where each word of a header ends, in terminal columns.
    fn word_ends(header: &str) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut at = 0;
        let mut in_word = false;
        for c in header.trim_end().chars() {
            let was = in_word;
            in_word = c != ' ';
            if was && !in_word {
                ends.push(at);
            }
            at += columns(&c.to_string());
        }
        ends.push(at);
        ends
    }

    #[test]
    fn the_chinese_header_lines_up_with_the_english_one() {
        let en = format!("{:>5}  {:>8}  {:<9} event\n", "step", "time", "actor");
        let (en_ends, zh_ends) = (word_ends(&en), word_ends(super::TABLE_HEADER_ZH));
        // step, time: right-aligned, so they end where their columns end.
        assert_eq!(en_ends[..2], zh_ends[..2], "{en:?} vs {:?}", super::TABLE_HEADER_ZH);
        // actor, event: left-aligned, so they start at the same column.
        let starts = |h: &str| {
            let mut at = 0;
            let mut out = Vec::new();
            let mut prev = ' ';
            for c in h.chars() {
                if prev == ' ' && c != ' ' {
                    out.push(at);
                }
                at += columns(&c.to_string());
                prev = c;
            }
            out
        };
        assert_eq!(starts(&en)[2..], starts(super::TABLE_HEADER_ZH)[2..]);
    }
}
