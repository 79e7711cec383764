//! The counterexample as a lesson.
//!
//! The explorer's answer is a [`Scenario`] (clients with programs, the
//! faults, the seed) and the trace it produces. The browser already knows
//! how to play, step and share one thing: a [`Lesson`]. So the shortest run
//! found is rewritten as lesson steps — start each client's program (in
//! the background, at its start time), wait until the moment the explorer
//! injected its fault, inject it, wait until the violation — with the
//! broken invariant as the lesson's outcome, and played by the same
//! [`LessonRun`] and timeline as every article's experiment.
//!
//! A fault the explorer placed "after trace step k" becomes "at the world
//! time of step k": the lesson runner steps by time. The two can differ
//! when other events share that millisecond, so [`counterexample_lesson`]
//! plays the lesson it built and keeps it only if the same invariant
//! breaks; otherwise it says so rather than hand over a lesson that shows
//! something else.

use super::{Outcome as ExploreOutcome, Report, Spec};
use crate::client::Program;
use crate::fault::At;
use crate::invariants::Invariant;
use crate::lesson::run::LessonRun;
use crate::lesson::{
    Bilingual, Lang, Lesson, LessonTopology, Outcome, OutcomeInvariant, RealRun, Source, Step, Theme, WorldSettings,
};
use crate::trace::Trace;
use crate::world::{Scenario, Topology};

use crate::lesson::COUNTEREXAMPLE_ID;

/// Why a report cannot become a lesson.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToLessonError {
    #[error("the design held: there is no counterexample to play")]
    Held,
    #[error("the lesson cannot express this scenario: {0}")]
    Inexpressible(String),
    #[error("played as a lesson, the run did not break {0} again")]
    NotReproduced(&'static str),
}

fn outcome_invariant(i: Invariant) -> OutcomeInvariant {
    match i {
        Invariant::StaleWrite => OutcomeInvariant::StaleWrite,
        Invariant::WrongRelease => OutcomeInvariant::WrongRelease,
        Invariant::Deadlock => OutcomeInvariant::Deadlock,
        Invariant::ForeignExtend => OutcomeInvariant::ForeignExtend,
        Invariant::Overlap => OutcomeInvariant::Overlap,
    }
}

fn why(i: Invariant) -> Bilingual {
    let (en, zh) = match i {
        Invariant::StaleWrite => (
            "The resource accepted a write from a client whose lock had already passed to another: a lost update.",
            "资源接受了一个锁已转给别人的客户端的写入：更新丢失。",
        ),
        Invariant::WrongRelease => (
            "A client's release deleted a lock that another client had acquired.",
            "一个客户端的释放删掉了另一个客户端持有的锁。",
        ),
        Invariant::Deadlock => (
            "The lock can no longer expire while its owner is gone, or is held past its bound.",
            "锁的持有者已不在，锁却永不过期（或持有超过上限）。",
        ),
        Invariant::ForeignExtend => (
            "A client's renewal extended a lock that another client had acquired: it renewed a lock it does not own.",
            "一个客户端的续期延长了另一个客户端持有的锁：它续的是不属于自己的锁。",
        ),
        Invariant::Overlap => (
            "Two clients believed they held the lock at the same time.",
            "两个客户端同时认为自己持有锁。",
        ),
    };
    Bilingual {
        en: en.into(),
        zh: zh.into(),
    }
}

fn step() -> Step {
    Step::default()
}

/// The steps that replay a violating run: each client's program started
/// and each fault injected at the time it happened (client starts first at
/// equal times), with waits between, then a wait until the violation.
fn replay_steps(scenario: &Scenario, trace: &Trace, invariant: Invariant) -> Vec<Step> {
    // (time, order, step): client starts first at equal times, then faults.
    let mut timed: Vec<(u64, u8, Step)> = Vec::new();
    for c in &scenario.clients {
        let Some(p) = &c.program else { continue };
        timed.push((
            c.start_ms,
            0,
            Step {
                client: Some(c.name.clone()),
                program: Some(p.clone()),
                background: true,
                explain: Some(Bilingual {
                    en: format!("{} starts its lock program.", c.name),
                    zh: format!("{} 启动加锁程序。", c.name),
                }),
                ..step()
            },
        ));
    }
    for f in &scenario.faults {
        let at = match f.at {
            At::Time(t) => t,
            At::Step(0) => 0,
            At::Step(s) => match trace.events.get(s as usize - 1) {
                Some(e) => e.at_ms,
                // Past the end of the violating run: it never fired.
                None => continue,
            },
        };
        let shown = f.fault.describe(&trace.names);
        timed.push((
            at,
            1,
            Step {
                fault: Some(f.fault.clone()),
                explain: Some(Bilingual {
                    en: format!("The explorer's fault: {shown}."),
                    zh: format!("探索器注入的故障：{}。", f.fault.describe_in(&trace.names, Lang::Zh)),
                }),
                ..step()
            },
        ));
    }
    timed.sort_by_key(|(t, o, _)| (*t, *o));
    let end = trace.events.last().map_or(0, |e| e.at_ms);
    let mut steps = Vec::new();
    let mut now = 0;
    for (t, order, s) in timed {
        // A fault waits even zero milliseconds: the wait runs what is due
        // by then (a program started this instant has sent its first
        // command), as the explorer's run had before the fault.
        if t > now || order == 1 {
            steps.push(Step {
                wait_ms: Some(t - now),
                ..step()
            });
            now = t;
        }
        steps.push(s);
    }
    steps.push(Step {
        wait_ms: Some(end.saturating_sub(now) + 1),
        explain: Some(Bilingual {
            en: format!("Until the violation: {}.", invariant.name()),
            zh: format!("直到违反：{}。", invariant.name()),
        }),
        ..step()
    });
    steps
}

/// What the lesson says it is: a shortest counterexample within stated
/// bounds when a breadth-first search found it (the report has a bounded
/// verdict), the fewest steps among the schedules tried when sampling did —
/// never "shortest" of a sample (issue 44 item 5). In English, or in
/// Chinese with the design's summary in Chinese.
fn narration(spec: &Spec, report: &Report, invariant: Invariant, index: u64, seed: u64, zh: bool) -> String {
    let name = invariant.name();
    match (report.bounded.is_some(), zh) {
        (true, false) => format!(
            "A shortest counterexample, found by the explorer's breadth-first search: no schedule within its bounds breaks an invariant in fewer transitions. It breaks {name} ({}, schedule #{index}, world seed {seed}). Searched {}.",
            spec.summary(),
            report.plan
        ),
        (false, false) => format!(
            "A run the explorer's sampling found, the fewest steps among the schedules it tried, not necessarily the shortest there is. It breaks {name} ({}, schedule #{index}, world seed {seed}). Searched {}.",
            spec.summary(),
            report.plan
        ),
        (bfs, true) => format!(
            "{}它违反 {}（{name}；{}；第 {index} 个调度，世界种子 {seed}）。",
            if bfs {
                "探索器广度优先搜索找到的最短反例：在所述界限内，没有任何调度能以更少的转移破坏不变量。"
            } else {
                "探索器抽样找到的反例（在它试过的调度中步数最少，不一定是最短的）。"
            },
            invariant.title_zh(),
            spec.summary_zh()
        ),
    }
}

/// Turn a report's counterexample into a lesson that replays it, checked
/// by playing it once.
// long: most of it is one Lesson literal, field by field
pub fn counterexample_lesson(spec: &Spec, report: &Report) -> Result<Lesson, ToLessonError> {
    let ExploreOutcome::Violated {
        invariant,
        scenario,
        trace,
        index,
        ..
    } = &report.outcome
    else {
        return Err(ToLessonError::Held);
    };
    let no = |m: &str| Err(ToLessonError::Inexpressible(m.to_owned()));
    let cfg = &scenario.world;
    let topology = match cfg.topology {
        Topology::Single => LessonTopology::Single,
        Topology::Replicated { replicas: 1 } => LessonTopology::Replicated,
        Topology::Redlock { masters: 5 } => LessonTopology::Redlock5,
        _ => return no("a topology the lessons do not have"),
    };
    if !cfg.links.is_empty()
        || !cfg.node_clocks.is_empty()
        || cfg.resource_link != cfg.link
        || scenario.clients.iter().any(|c| c.clock != Default::default())
    {
        return no("per-client links, a separate resource link, or clock settings");
    }
    let steps = replay_steps(scenario, trace, *invariant);
    let name = spec.name.clone().unwrap_or_else(|| spec.summary());
    let lesson = Lesson {
        id: COUNTEREXAMPLE_ID.into(),
        theme: Theme::Interview,
        title: Bilingual {
            en: format!("Counterexample: {name}"),
            zh: format!("反例：{}", spec.name_zh.as_deref().unwrap_or(&name)),
        },
        narration: Bilingual {
            en: narration(spec, report, *invariant, *index, scenario.seed, false),
            zh: narration(spec, report, *invariant, *index, scenario.seed, true),
        },
        source: Source {
            seed: "explore".into(),
            file: name,
            section: format!("schedule #{index}"),
        },
        topology,
        profile: cfg.profile,
        actors: scenario.clients.iter().map(|c| c.name.clone()).collect(),
        world: WorldSettings {
            fencing: cfg.fencing,
            persistence: cfg.persistence,
            link: (cfg.link != Default::default()).then_some(cfg.link),
            replication: (cfg.replication != Default::default()).then_some(cfg.replication),
            locks: Vec::new(),
            max_hold_ms: cfg.invariants.max_hold_ms,
            overlap_is_violation: Some(cfg.invariants.overlap_is_violation),
            ..WorldSettings::default()
        },
        // Replayable on real redis-server (issue 19): the real driver's
        // own check says which steps a real topology cannot play.
        real: RealRun::Yes,
        seed: scenario.seed,
        steps,
        outcome: Outcome {
            invariant: outcome_invariant(*invariant),
            broken: true,
            explain: why(*invariant),
        },
        timed: None,
        notes: None,
    };
    let mut run = LessonRun::new(&lesson).map_err(|e| ToLessonError::Inexpressible(e.to_string()))?;
    run.run_all().map_err(|e| ToLessonError::Inexpressible(e.to_string()))?;
    if !run.observed().contains(invariant) {
        return Err(ToLessonError::NotReproduced(invariant.name()));
    }
    Ok(lesson)
}

/// The programs a lesson starts (for a test's or a view's summary).
pub fn programs(lesson: &Lesson) -> Vec<&Program> {
    lesson.steps.iter().filter_map(|s| s.program.as_ref()).collect()
}
