//! An exploration in slices: what the browser's Web Worker runs.
//!
//! The page must never freeze, and the user must be able to stop a search,
//! so the worker does not call [`super::explore`] once; it asks a [`Job`]
//! for a slice of work at a time and posts [`Progress`] between slices.
//!
//! A job runs one of the two searches `locklab explore` has ([`Mode`]):
//! * **sample** — the schedules are visited in index order with the same
//!   pruning as [`super::Explorer::search`]`(0, 1)`, so a finished job
//!   reports exactly what `locklab explore` prints for the same design and
//!   seed (the CLI's threads split the same index space and merge to the
//!   same answer);
//! * **exhaustive** — core's breadth-first search ([`Bfs`]) with the CLI's
//!   reductions and limits, so a finished job is what `locklab explore
//!   --exhaustive` prints: "held" with its bounds, a shortest
//!   counterexample, or "not exhausted" when a limit, the time limit
//!   ([`TIME_LIMIT_S`], the worker's clock) or the Stop button came first.

use serde::{Deserialize, Serialize};

use super::bfs::{Bfs, Limits, Reductions, SearchStatus};
use super::checks::{step_checks, StepCheck};
use super::lesson::counterexample_lesson;
use super::{ExploreError, Explorer, Finding, Outcome, Report, Spec};
use crate::invariants::Invariant;
use crate::lesson::worded::PageLesson;

/// How long an exhaustive search may run before it ends "not exhausted":
/// `locklab explore --exhaustive`'s default `--time-limit`, and the page's.
pub const TIME_LIMIT_S: f64 = 60.0;

/// `n` with its digits in groups of three, `sep` between them: the
/// figures of the page's progress bar (`,`) and of `locklab explore
/// --bench` (` `).
pub fn thousands(n: u64, sep: char) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

/// Which search a job runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Seeds × single faults, then random walks: a sample.
    #[default]
    Sample,
    /// Breadth-first, every schedule within stated bounds.
    Exhaustive,
}

impl Mode {
    /// `sample` or `exhaustive` (the worker's message); anything else is
    /// sampling, the mode the page started with.
    pub fn parse(s: &str) -> Mode {
        if s == "exhaustive" {
            Mode::Exhaustive
        } else {
            Mode::Sample
        }
    }
}

/// What kind of answer a finished job is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Search {
    /// A sample: a violation, or "no violation found" — never "held".
    #[default]
    Sampled,
    /// Bounded-exhaustive: held within the bounds, or a shortest
    /// counterexample within them.
    Exhaustive,
    /// A breadth-first search that a limit (states, frontier, time, Stop)
    /// ended first: no verdict.
    NotExhausted,
}

enum Inner {
    Sample {
        explorer: Box<Explorer>,
        finding: Finding,
        next: u64,
    },
    Exhaustive {
        spec: Box<Spec>,
        bfs: Box<Bfs>,
        limits: Limits,
    },
}

/// A search under way.
pub struct Job {
    inner: Inner,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("progress", &self.progress()).finish()
    }
}

/// Where a job is. Sampling: schedules tried of the total, and the best so
/// far. Exhaustive: distinct states explored of the state limit, the
/// frontier and the depth (the progress bar's figures).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub explored: u64,
    pub total: u64,
    /// Steps of the shortest violating run so far, and what it broke.
    pub best: Option<(u64, Invariant)>,
    #[serde(default)]
    pub mode: Mode,
    /// States waiting to be expanded (exhaustive).
    #[serde(default)]
    pub frontier: u64,
    /// The frontier's limit (exhaustive).
    #[serde(default)]
    pub max_frontier: u64,
    /// Breadth-first layers completed (exhaustive).
    #[serde(default)]
    pub depth: u64,
}

/// What a counterexample broke, and how short it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Broken {
    pub invariant: Invariant,
    pub seed: u64,
    pub steps: u64,
}

/// A finished job as the explore screen shows it: what the search found,
/// its transcript (the CLI's text), and the counterexample as a lesson the
/// timeline can play. Not the whole [`super::Report`]: its counterexample scenario
/// and trace are in the lesson and the transcript already, and the page
/// decodes every field it is sent; the lesson comes worded, as the page
/// reads lessons.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResult {
    /// Schedules explored (sampling), distinct states (exhaustive).
    pub explored: u64,
    /// What broke, if the design did not hold.
    pub broken: Option<Broken>,
    pub transcript: String,
    pub result_line: String,
    /// The transcript and result line in Chinese, for the page in 中文.
    #[serde(default)]
    pub transcript_zh: String,
    #[serde(default)]
    pub result_line_zh: String,
    /// How far the search went, stated as a bound: a sample's, or the
    /// breadth-first verdict with its bounds ([`Bfs::verdict`]).
    pub bound: String,
    /// [`JobResult::bound`] in Chinese.
    #[serde(default)]
    pub bound_zh: String,
    pub lesson: Option<PageLesson>,
    /// Why there is no lesson for a violation (it could not be replayed).
    pub lesson_error: Option<String>,
    /// A sample, a bounded-exhaustive answer, or not exhausted.
    #[serde(default)]
    pub search: Search,
    /// The counterexample step by step with the invariants that hold after
    /// each step (empty when nothing broke).
    #[serde(default)]
    pub checks: Vec<StepCheck>,
    /// The counterexample explained and exported ([`super::export::exports`]:
    /// the because chain, Mermaid, a redis-cli script, a lesson file), made
    /// where the search ran; `None` when nothing broke.
    #[serde(default)]
    pub exports: Option<super::export::Exports>,
}

impl Job {
    /// A sampling job (`locklab explore FILE`).
    pub fn new(spec: &Spec) -> Result<Job, ExploreError> {
        Ok(Job {
            inner: Inner::Sample {
                explorer: Box::new(Explorer::new(spec)?),
                finding: Finding::default(),
                next: 0,
            },
        })
    }

    /// A job in `mode`: sampling, or the breadth-first search `locklab
    /// explore FILE --exhaustive` runs (one world seed, the default
    /// reductions and limits).
    pub fn with_mode(spec: &Spec, mode: Mode) -> Result<Job, ExploreError> {
        match mode {
            Mode::Sample => Job::new(spec),
            Mode::Exhaustive => Job::exhaustive(spec, Limits::default()),
        }
    }

    /// The breadth-first search within `limits`.
    pub fn exhaustive(spec: &Spec, limits: Limits) -> Result<Job, ExploreError> {
        let bfs = Bfs::new(spec, 1, Reductions::default(), limits)?;
        Ok(Job {
            inner: Inner::Exhaustive {
                spec: Box::new(spec.clone()),
                bfs: Box::new(bfs),
                limits,
            },
        })
    }

    /// Look at up to `n` more schedules (sampling) or expand up to `n`
    /// more states (exhaustive); `true` once the search has ended.
    pub fn step(&mut self, n: u64) -> bool {
        match &mut self.inner {
            Inner::Sample {
                explorer,
                finding,
                next,
            } => {
                let end = next.saturating_add(n).min(explorer.total());
                *finding = explorer.search_range(*next..end, *finding);
                *next = end;
            }
            Inner::Exhaustive { bfs, .. } => {
                bfs.step(n);
            }
        }
        self.is_done()
    }

    pub fn is_done(&self) -> bool {
        match &self.inner {
            Inner::Sample { explorer, next, .. } => *next >= explorer.total(),
            Inner::Exhaustive { bfs, .. } => bfs.status() != SearchStatus::Running,
        }
    }

    /// End the search now, with what it has: a breadth-first search ends
    /// "not exhausted" with its figures ([`Bfs::stop`]); a sample ends with
    /// the schedules it tried (its bound says how many).
    pub fn stop(&mut self) {
        match &mut self.inner {
            Inner::Sample { explorer, next, .. } => *next = explorer.total(),
            Inner::Exhaustive { bfs, .. } => bfs.stop(),
        }
    }

    pub fn progress(&self) -> Progress {
        match &self.inner {
            Inner::Sample { explorer, finding, .. } => Progress {
                explored: finding.explored,
                total: explorer.total(),
                best: finding.best.map(|b| (b.steps, b.invariant)),
                mode: Mode::Sample,
                frontier: 0,
                max_frontier: 0,
                depth: 0,
            },
            Inner::Exhaustive { bfs, limits, .. } => {
                let s = bfs.stats();
                Progress {
                    explored: s.states,
                    total: limits.max_states,
                    best: None,
                    mode: Mode::Exhaustive,
                    frontier: s.frontier,
                    max_frontier: limits.max_frontier as u64,
                    depth: s.depth,
                }
            }
        }
    }

    /// The report so far (final once [`Job::is_done`]).
    pub fn result(&self) -> JobResult {
        match &self.inner {
            Inner::Sample { explorer, finding, .. } => {
                let report = explorer.report(finding);
                JobResult::from_report(explorer.spec(), &report, bound(explorer.spec(), report.explored))
            }
            Inner::Exhaustive { spec, bfs, .. } => {
                let report = bfs.report();
                let mut r = JobResult::from_report(spec, &report, bfs.verdict());
                if matches!(bfs.status(), SearchStatus::NotExhausted | SearchStatus::Running) {
                    r.search = Search::NotExhausted;
                }
                r
            }
        }
    }
}

impl JobResult {
    /// A finished search of `spec` as the page shows it; `bound` says how
    /// far a design that held was searched.
    pub fn from_report(spec: &Spec, report: &Report, bound: String) -> JobResult {
        let (lesson, lesson_error) = match &report.outcome {
            Outcome::Held => (None, None),
            Outcome::Violated { .. } => match counterexample_lesson(spec, report) {
                Ok(l) => (Some(l.worded()), None),
                Err(e) => (None, Some(e.to_string())),
            },
        };
        let broken = match &report.outcome {
            Outcome::Held => None,
            Outcome::Violated {
                invariant, seed, steps, ..
            } => Some(Broken {
                invariant: *invariant,
                seed: *seed,
                steps: *steps,
            }),
        };
        JobResult {
            transcript: report.transcript(),
            result_line: report.result_line(),
            transcript_zh: report.transcript_zh(&spec.summary_zh()),
            result_line_zh: report.result_line_zh(),
            bound,
            // A breadth-first report carries its verdict in Chinese.
            bound_zh: report
                .bounded_zh
                .clone()
                .unwrap_or_else(|| bound_zh(spec, report.explored)),
            explored: report.explored,
            broken,
            lesson,
            lesson_error,
            search: if report.bounded.is_some() {
                Search::Exhaustive
            } else {
                Search::Sampled
            },
            checks: match &report.outcome {
                Outcome::Violated { trace, .. } => step_checks(trace),
                Outcome::Held => Vec::new(),
            },
            // The lesson file is TOML: the page's own core leaves that out,
            // and the worker, which builds results, has it.
            #[cfg(feature = "toml")]
            exports: super::export::exports(spec, report),
            #[cfg(not(feature = "toml"))]
            exports: None,
        }
    }
}

/// "Sampled N schedules, no violation found, within this bound: …" — what
/// was searched, never a claim that the design is correct.
pub fn bound(spec: &Spec, explored: u64) -> String {
    bound_in(spec, explored, false)
}

/// [`bound`] in Chinese.
pub fn bound_zh(spec: &Spec, explored: u64) -> String {
    bound_in(spec, explored, true)
}

fn bound_in(spec: &Spec, explored: u64, zh: bool) -> String {
    let kinds = match (spec.fault_kinds.is_empty(), zh) {
        (true, false) => "any fault kind".to_owned(),
        (true, true) => "任意故障类型".to_owned(),
        (false, _) => {
            let k: Vec<&str> = spec.fault_kinds.iter().map(|k| k.name()).collect();
            k.join(if zh { "、" } else { ", " })
        }
    };
    let clients = spec
        .scenario
        .as_ref()
        .map_or(spec.clients as usize, |s| s.clients.len());
    let (faults, seeds, walks, steps) = (spec.faults, spec.exhaustive_seeds, spec.random_walks, spec.max_steps);
    if zh {
        format!(
            "抽样了 {explored} 个调度，未发现违反，界限为：{clients} 个客户端，每个调度至多 {faults} 个故障（{kinds}），{seeds} 个种子的无故障运行中每个位置的每一种单个故障，加上 {walks} 次随机游走，每次运行至多 {steps} 步。这是抽样，不是证明。"
        )
    } else {
        format!(
            "sampled {explored} schedules, no violation found, within this bound: {clients} clients, at most {faults} fault(s) per schedule ({kinds}), every single fault at every point of {seeds} seeds' fault-free runs plus {walks} random walks, runs of at most {steps} steps. A sample, not a proof."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn design(file: &str) -> Spec {
        let (_, text) = super::super::designs::FILES
            .iter()
            .find(|(f, _)| *f == file)
            .expect("a built-in design");
        super::super::designs::parse(text).expect("parses")
    }

    /// The exhaustive job is `Bfs` in slices: the same verdict, bounds and
    /// counterexample as one uninterrupted search (what the CLI runs), and
    /// its result says it is bounded-exhaustive, with the monitor's verdict
    /// at each step of the counterexample.
    #[test]
    fn an_exhaustive_job_is_the_breadth_first_search() {
        let spec = design("01-bare-del.toml");
        let mut whole = Bfs::new(&spec, 1, Reductions::default(), Limits::default()).expect("bfs");
        whole.run();
        let mut job = Job::with_mode(&spec, Mode::Exhaustive).expect("job");
        while !job.step(7) {}
        let r = job.result();
        assert_eq!(r.search, Search::Exhaustive);
        assert_eq!(r.bound, whole.verdict());
        assert_eq!(r.bound_zh, whole.verdict_zh());
        assert_eq!(r.transcript, whole.report().transcript());
        assert!(r
            .bound
            .starts_with("violated wrong-release: a shortest counterexample within every schedule"));
        let broken = r.broken.expect("bare DEL breaks");
        assert_eq!(r.checks.len() as u64, broken.steps);
        assert!(r.checks.last().is_some_and(|c| !c.holds(broken.invariant)));
        assert!(r.checks.first().is_some_and(|c| c.broken.is_empty()));
        let p = job.progress();
        assert_eq!((p.mode, p.total), (Mode::Exhaustive, Limits::default().max_states));
        assert_eq!(p.explored, whole.stats().states);
    }

    /// Stop ends a breadth-first search "not exhausted" with its figures,
    /// never "held"; a sampled result never says "shortest".
    #[test]
    fn stop_is_not_exhausted_and_a_sample_is_not_shortest() {
        let spec = Spec {
            clients: 3,
            faults: 2,
            ..design("06-fenced-single.toml")
        };
        let mut job = Job::with_mode(&spec, Mode::Exhaustive).expect("job");
        assert!(!job.step(50));
        let explored = job.progress().explored;
        assert!(explored > 0 && job.progress().frontier > 0);
        job.stop();
        assert!(job.step(50), "ended");
        let r = job.result();
        assert_eq!(r.search, Search::NotExhausted);
        assert!(
            r.bound
                .starts_with(&format!("not exhausted within the limit: explored {explored} states")),
            "{}",
            r.bound
        );
        assert!(r.bound_zh.starts_with("在上限内未穷尽"), "{}", r.bound_zh);

        let mut sample = Job::new(&design("01-bare-del.toml")).expect("job");
        while !sample.step(1000) {}
        let r = sample.result();
        assert_eq!(r.search, Search::Sampled);
        let l = r.lesson.expect("a lesson");
        let said = format!("{} {} {}", r.transcript, l.narration.en, l.narration.zh);
        let lower = said.to_lowercase();
        assert!(
            !lower.contains("a shortest counterexample") && !said.contains("最短反例"),
            "{said}"
        );
        assert!(lower.contains("not necessarily the shortest"), "{said}");
    }
}
