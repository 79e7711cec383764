//! An exploration in slices: what the browser's Web Worker runs.
//!
//! The page must never freeze, and the user must be able to stop a search,
//! so the worker does not call [`super::explore`] once; it asks a [`Job`]
//! for a few hundred schedules at a time and posts [`Progress`] between
//! slices. The schedules are visited in index order with the same pruning
//! as [`super::Explorer::search`]`(0, 1)`, so a finished job reports
//! exactly what `locklab explore` prints for the same design and seed (the
//! CLI's threads split the same index space and merge to the same answer).

use serde::{Deserialize, Serialize};

use super::lesson::counterexample_lesson;
use super::{ExploreError, Explorer, Finding, Outcome, Report, Spec};
use crate::invariants::Invariant;
use crate::lesson::worded::PageLesson;

/// A search under way.
#[derive(Clone, Debug)]
pub struct Job {
    explorer: Explorer,
    finding: Finding,
    next: u64,
}

/// Where a job is: schedules tried of the total, and the best so far.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    pub explored: u64,
    pub total: u64,
    /// Steps of the shortest violating run so far, and what it broke.
    pub best: Option<(u64, Invariant)>,
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
    /// Schedules explored.
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
    /// How far a design that held was searched, stated as a bound.
    pub bound: String,
    /// [`JobResult::bound`] in Chinese.
    #[serde(default)]
    pub bound_zh: String,
    pub lesson: Option<PageLesson>,
    /// Why there is no lesson for a violation (it could not be replayed).
    pub lesson_error: Option<String>,
}

impl Job {
    pub fn new(spec: &Spec) -> Result<Job, ExploreError> {
        Ok(Job {
            explorer: Explorer::new(spec)?,
            finding: Finding::default(),
            next: 0,
        })
    }

    /// Look at up to `n` more schedules; `true` once every one was.
    pub fn step(&mut self, n: u64) -> bool {
        let end = self.next.saturating_add(n).min(self.explorer.total());
        self.finding = self.explorer.search_range(self.next..end, self.finding);
        self.next = end;
        self.is_done()
    }

    pub fn is_done(&self) -> bool {
        self.next >= self.explorer.total()
    }

    pub fn progress(&self) -> Progress {
        Progress {
            explored: self.finding.explored,
            total: self.explorer.total(),
            best: self.finding.best.map(|b| (b.steps, b.invariant)),
        }
    }

    /// The report so far (final once [`Job::is_done`]).
    pub fn result(&self) -> JobResult {
        let report = self.explorer.report(&self.finding);
        JobResult::from_report(
            self.explorer.spec(),
            &report,
            bound(self.explorer.spec(), report.explored),
        )
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
            bound_zh: bound_zh(spec, report.explored),
            explored: report.explored,
            broken,
            lesson,
            lesson_error,
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
