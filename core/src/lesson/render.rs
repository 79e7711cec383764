//! Text views of a lesson run: the redis-cli transcript and a swimlane of
//! who held the lock when. The browser draws the same things as SVG; these
//! are for `locklab lesson run` and for reading a run in a terminal or a
//! test failure.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::run::{LessonRun, StepResult};
use super::Lang;
use crate::trace::{Actor, EventKind, LockChange};

/// The transcript: who typed what, the reply, and the expected reply when
/// it differs — then the outcome.
pub fn transcript(run: &LessonRun, lang: Lang) -> String {
    let lesson = run.lesson();
    let mut out = String::new();
    let _ = writeln!(out, "lesson {} — {}", lesson.id, lesson.title.get(lang));
    let _ = writeln!(out, "source: {} ({}) §{}", lesson.source.seed, lesson.source.file, lesson.source.section);
    let _ = writeln!(out);
    for r in run.results() {
        step_lines(run, r, lang, &mut out);
    }
    let check = run.outcome();
    let _ = writeln!(out);
    let observed: Vec<&str> = check.observed.iter().map(|i| i.name()).collect();
    let _ = writeln!(
        out,
        "outcome: expected {} {}, observed [{}] {}",
        check.expected.invariant.name(),
        if check.expected.broken { "broken" } else { "held" },
        observed.join(", "),
        if check.ok { "✓" } else { "✗ MISMATCH" }
    );
    let _ = writeln!(out, "  {}", check.expected.explain.get(lang));
    out
}

fn step_lines(run: &LessonRun, r: &StepResult, lang: Lang, out: &mut String) {
    let who = r.actor.as_deref().unwrap_or("world");
    let step = run.lesson().steps.get(r.index);
    let shown = step.and_then(|s| s.say.as_ref()).map_or(r.shown.as_str(), |t| t.get(lang).trim());
    let _ = writeln!(out, "[{:>8} ms] {who}> {shown}", r.at_ms);
    if let Some(reply) = &r.reply {
        for line in reply.lines() {
            let _ = writeln!(out, "{:>14}{line}", "");
        }
    }
    if !r.ok {
        let _ = writeln!(out, "{:>14}✗ expected: {}", "", r.expected.as_deref().unwrap_or("?"));
    }
    if let Some(explain) = step.and_then(|s| s.explain.as_ref()) {
        let _ = writeln!(out, "{:>14}# {}", "", explain.get(lang));
    }
}

/// Who holds what, over time: one lane per client (█ while it believes it
/// holds a lock), one per node and lock key (the owner's initial while the
/// key exists), and a row of `!` where an invariant broke.
pub fn swimlane(run: &LessonRun, width: usize) -> String {
    let world = run.world();
    let names = world.names();
    let trace = world.trace();
    let end = trace.last().map_or(1, |e| e.at_ms).max(world.now()).max(1);
    let width = width.max(10);
    let col = |t: u64| ((t as u128 * (width as u128 - 1)) / end as u128) as usize;

    // Intervals [from, to) per lane, with a fill character.
    let mut lanes: BTreeMap<String, Vec<(u64, u64, char)>> = BTreeMap::new();
    let mut open_belief: BTreeMap<(u32, String), u64> = BTreeMap::new();
    let mut open_lock: BTreeMap<(u32, String), (u64, char)> = BTreeMap::new();
    let initial = |i: Option<u32>| {
        i.and_then(|c| names.client(c).chars().next()).unwrap_or('?')
    };
    for e in trace {
        match (&e.kind, e.actor) {
            (EventKind::Belief { key, holds }, Actor::Client(c)) => {
                let k = (c, key.clone());
                if *holds {
                    open_belief.entry(k).or_insert(e.at_ms);
                } else if let Some(from) = open_belief.remove(&k) {
                    lanes.entry(format!("{} ({key})", names.client(c))).or_default().push((from, e.at_ms, '█'));
                }
            }
            (EventKind::Lock { key, change, .. }, Actor::Node(n)) => {
                let k = (n, key.clone());
                let lane = format!("{} {key}", names.node(n));
                match change {
                    LockChange::Acquired { owner, .. } => {
                        if let Some((from, ch)) = open_lock.remove(&k) {
                            lanes.entry(lane.clone()).or_default().push((from, e.at_ms, ch));
                        }
                        open_lock.insert(k, (e.at_ms, initial(*owner)));
                    }
                    LockChange::Renewed { .. } => {}
                    LockChange::Removed { .. } => {
                        if let Some((from, ch)) = open_lock.remove(&k) {
                            lanes.entry(lane).or_default().push((from, e.at_ms, ch));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for ((c, key), from) in open_belief {
        lanes.entry(format!("{} ({key})", names.client(c))).or_default().push((from, end + 1, '█'));
    }
    for ((n, key), (from, ch)) in open_lock {
        lanes.entry(format!("{} {key}", names.node(n))).or_default().push((from, end + 1, ch));
    }
    let violations: Vec<(u64, u64, char)> =
        world.violations().iter().map(|v| (v.from_ms, v.to_ms.max(v.from_ms + 1), '!')).collect();
    if !violations.is_empty() {
        lanes.insert("violations".to_owned(), violations);
    }

    let label_width = lanes.keys().map(|k| k.chars().count()).max().unwrap_or(4).max(4);
    let mut out = String::new();
    let _ = writeln!(out, "{:label_width$}  0 ms{:>w$}", "time", format!("{end} ms"), w = width - 4);
    for (label, spans) in &lanes {
        let mut row = vec!['·'; width];
        for &(from, to, ch) in spans {
            let (a, b) = (col(from), col(to.saturating_sub(1)).max(col(from)));
            for cell in row.iter_mut().take(b.min(width - 1) + 1).skip(a) {
                *cell = ch;
            }
        }
        let _ = writeln!(out, "{label:label_width$}  {}", row.into_iter().collect::<String>());
    }
    out
}
