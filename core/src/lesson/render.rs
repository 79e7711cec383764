//! Text views of a lesson run: the redis-cli transcript and a swimlane of
//! who held the lock when. The browser draws the same things as SVG; these
//! are for `locklab lesson run` and for reading a run in a terminal or a
//! test failure.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::metrics::Metrics;
use super::rounds::{self, Round};
use super::run::{LessonRun, Shown, StepResult, NO_REPLY};
use super::{Lang, Lesson, LessonTopology, OutcomeInvariant, Quiz, Step, StepKind};
use crate::actor::{Actor, Names};
use crate::invariants::{Invariant, Violation};
use crate::observe::LockChange;
use crate::trace::{Event, EventKind};

/// What a transcript line is: a command as typed and a reply as redis-cli
/// prints it are the same in every language; everything else is the
/// runner's own words, in the reader's language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    Command,
    Reply,
    Runner,
}

/// One line of a transcript.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub kind: LineKind,
    pub text: String,
}

struct Lines(Vec<Line>);

impl Lines {
    fn push(&mut self, kind: LineKind, text: String) {
        self.0.push(Line { kind, text });
    }
    fn runner(&mut self, text: String) {
        self.push(LineKind::Runner, text);
    }
}

/// The transcript: who typed what, the reply, and the expected reply when
/// it differs — then the outcome.
pub fn transcript(run: &LessonRun, lang: Lang) -> String {
    let mut out = String::new();
    for line in transcript_lines(run, lang) {
        let _ = writeln!(out, "{}", line.text);
    }
    out
}

/// The lesson's heading: `lesson 05 — title` / `第 05 课 — 标题`, and its source.
fn heading(lesson: &Lesson, lang: Lang, lines: &mut Lines) {
    let s = &lesson.source;
    match lang {
        Lang::En => {
            lines.runner(format!("lesson {} — {}", lesson.id, lesson.title.en));
            lines.runner(format!("source: {} ({}) §{}", s.seed, s.file, s.section));
        }
        Lang::Zh => {
            lines.runner(format!("第 {} 课 — {}", lesson.id, lesson.title.zh));
            lines.runner(format!("出处：{} 文（{}）§{}", s.seed, s.file, s.section));
        }
    }
}

/// [`transcript`], line by line, each line marked with what it is.
pub fn transcript_lines(run: &LessonRun, lang: Lang) -> Vec<Line> {
    let lesson = run.lesson();
    let mut lines = Lines(Vec::new());
    heading(lesson, lang, &mut lines);
    lines.runner(String::new());
    let rounds = rounds::rounds(lesson, run.world().trace(), run.world().names());
    let mut from = 0;
    for r in run.results() {
        step_lines(run, r, lang, &rounds, from, &mut lines);
        from = r.trace_len;
    }
    if run.is_finished() {
        lines.runner(String::new());
        for l in outcome_lines(run, lang) {
            lines.runner(l);
        }
    }
    lines.0
}

fn world_name(lang: Lang) -> &'static str {
    match lang {
        Lang::En => "world",
        Lang::Zh => "环境",
    }
}

const PAD: &str = "              ";

fn step_lines(run: &LessonRun, r: &StepResult, lang: Lang, rounds: &[Round], from: usize, lines: &mut Lines) {
    let lesson = run.lesson();
    let names = run.world().names();
    let step = lesson.steps.get(r.index);
    let kind = step.and_then(|s| s.kind().ok());
    let who = r.actor.as_deref().unwrap_or(world_name(lang));
    if let (Some(s), Some(q)) = (step, step.and_then(|s| s.quiz.as_ref())) {
        for l in quiz_lines(s, q, lang) {
            lines.runner(l);
        }
    }
    let shown = run
        .shown(r.index)
        .map(|s| s.text(names, lang))
        .unwrap_or_else(|| r.shown.clone());
    let is_cmd = matches!(kind, Some(StepKind::Cmd { .. }));
    // A command on a topology with several nodes says where it went.
    let at = if is_cmd && lesson.topology != LessonTopology::Single {
        node_of(run, from, r.trace_len)
            .map(|n| format!("@{}", names.node(n)))
            .unwrap_or_default()
    } else {
        String::new()
    };
    let line = format!("[{:>8} ms] {who}{at}> {shown}", r.at_ms);
    lines.push(if is_cmd { LineKind::Command } else { LineKind::Runner }, line);
    if let Some(reply) = &r.reply {
        match localized_reply(kind.as_ref(), r, lang) {
            Some(text) => lines.runner(format!("{PAD}{text}")),
            None => {
                for l in reply.lines() {
                    lines.push(LineKind::Reply, format!("{PAD}{l}"));
                }
            }
        }
    }
    // A belief folded into the step, worded as a `hold` step of its own.
    if let (Some(client), Some((key, holds))) = (step.and_then(|s| s.client.as_deref()), step.and_then(Step::belief)) {
        let belief = Shown::Hold { client, key, holds };
        lines.runner(format!("{PAD}{}", belief.text(names, lang)));
    }
    // What client programs did meanwhile: Redlock rounds, resource writes.
    for round in rounds.iter().filter(|x| (from..r.trace_len).contains(&x.at_event)) {
        for l in round.lines(names, lang) {
            lines.runner(format!("{PAD}{l}"));
        }
    }
    if !matches!(kind, Some(StepKind::Write { .. })) {
        for l in program_writes(run, from, r.trace_len, lang) {
            lines.runner(format!("{PAD}{l}"));
        }
    }
    if !r.ok {
        let expected = expected(step, r);
        let expected = lab_words(kind.as_ref(), &expected, None, lang).unwrap_or(expected);
        lines.runner(match lang {
            Lang::En => format!("{PAD}✗ expected: {expected}"),
            Lang::Zh => format!("{PAD}✗ 期望：{expected}"),
        });
    }
    if let Some(explain) = step.and_then(|s| s.explain.as_ref()) {
        lines.runner(format!("{PAD}# {}", explain.get(lang)));
    }
}

/// What a step that missed expected, for a transcript: its reply, or a
/// `metrics` step's bounds (the figures are its reply); `?` when it says
/// nothing. (The page words its own.)
pub fn expected(step: Option<&Step>, r: &StepResult) -> String {
    let bounds = step.and_then(|s| s.metrics.as_ref()).and_then(|m| m.describe());
    bounds.or_else(|| r.expected.clone()).unwrap_or_else(|| "?".into())
}

/// The node a command step's request went to.
fn node_of(run: &LessonRun, from: usize, to: usize) -> Option<u32> {
    run.world().trace().get(from..to)?.iter().find_map(|e| match &e.kind {
        EventKind::Sent { node, .. } => Some(*node),
        _ => None,
    })
}

/// Writes that client programs made to the resource during a step, with
/// the resource's verdict: the writes behind a stale-write verdict.
fn program_writes(run: &LessonRun, from: usize, to: usize, lang: Lang) -> Vec<String> {
    let names = run.world().names();
    let Some(events) = run.world().trace().get(from..to) else {
        return Vec::new();
    };
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Write {
                client,
                token,
                value,
                accepted,
            } => {
                let who = names.client(*client);
                let v = verdict(if *accepted { "accepted" } else { "rejected" }, lang);
                Some(match (lang, token) {
                    (Lang::En, Some(t)) => {
                        format!("[{:>8} ms] {who} wrote {value:?} with fencing token {t}: {v}", e.at_ms)
                    }
                    (Lang::En, None) => format!("[{:>8} ms] {who} wrote {value:?} (no token): {v}", e.at_ms),
                    (Lang::Zh, Some(t)) => {
                        format!("[{:>8} ms] {who} 写入资源 {value:?}，fencing 令牌 {t}：{v}", e.at_ms)
                    }
                    (Lang::Zh, None) => format!("[{:>8} ms] {who} 写入资源 {value:?}（不带令牌）：{v}", e.at_ms),
                })
            }
            _ => None,
        })
        .collect()
}

/// A step's reply in `lang` when it is the lab's words rather than Redis's:
/// "no reply", a write's verdict, a `metrics` step's figures. `None` for a
/// command's reply, which is printed as redis-cli printed it. Every view of
/// a step (this transcript, the page's steps list and caption) words it here.
pub fn localized_reply<P>(kind: Option<&StepKind<'_, P>>, r: &StepResult, lang: Lang) -> Option<String> {
    lab_words(kind, r.reply.as_deref()?, r.metrics.as_ref(), lang)
}

/// [`localized_reply`] for any text a step of `kind` shows as an answer:
/// its reply, or what the lesson expects (`rejected` → 被拒绝), so the two
/// read alike side by side.
pub fn lab_words<P>(
    kind: Option<&StepKind<'_, P>>,
    text: &str,
    metrics: Option<&Metrics>,
    lang: Lang,
) -> Option<String> {
    match kind? {
        StepKind::Cmd { .. } if text == NO_REPLY => Some(no_reply(lang).to_owned()),
        StepKind::Write { .. } => Some(verdict(text, lang)),
        StepKind::Metrics(_) => metrics.map(|m| m.text(lang)),
        _ => None,
    }
}

fn no_reply(lang: Lang) -> &'static str {
    match lang {
        Lang::En => NO_REPLY,
        Lang::Zh => "（没有回复：请求或它的回复丢失了）",
    }
}

/// A write step's verdict in `lang`.
fn verdict(v: &str, lang: Lang) -> String {
    match (lang, v) {
        (Lang::Zh, "accepted") => "被接受".to_owned(),
        (Lang::Zh, "rejected") => "被拒绝".to_owned(),
        (Lang::Zh, "(the write never arrived)") => "（写入没有到达资源）".to_owned(),
        _ => v.to_owned(),
    }
}

/// The quiz before a step: the question, the choices, the answer.
pub fn quiz_lines(step: &Step, q: &Quiz, lang: Lang) -> Vec<String> {
    let mut out = Vec::new();
    let question = match lang {
        Lang::En => &q.en,
        Lang::Zh => &q.zh,
    };
    let choices = q.choices_in(lang);
    let answer = quiz_answer(step, q, lang);
    match lang {
        Lang::En => {
            out.push(format!("? quiz: {}", question.trim()));
            if !choices.is_empty() {
                out.push(format!("  choices: {}", choices.join(" | ")));
            }
            out.push(format!("  answer: {answer}"));
        }
        Lang::Zh => {
            out.push(format!("？测验：{}", question.trim()));
            if !choices.is_empty() {
                out.push(format!("  选项：{}", choices.join(" | ")));
            }
            out.push(format!("  答案：{answer}"));
        }
    }
    out
}

/// A quiz's answer in `lang`: its own, or the step's expected reply (a
/// write's verdict worded in `lang`; a choice that spells the reply in
/// `lang`).
pub fn quiz_answer(step: &Step, q: &Quiz, lang: Lang) -> String {
    if let Some(a) = q.answer_in(lang) {
        return a.to_owned();
    }
    let expected = step.expect.as_ref().map(|e| e.describe()).unwrap_or_default();
    if let Some(i) = q.choices.iter().position(|c| *c == expected) {
        return q.choices_in(lang)[i].to_owned();
    }
    if step.write.is_some() {
        return verdict(&expected, lang);
    }
    expected
}

/// The outcome as sentences: the invariant, held or broken, what the run
/// showed, and the lesson's explanation.
pub fn outcome_lines(run: &LessonRun, lang: Lang) -> Vec<String> {
    let check = run.outcome();
    let names = run.world().names();
    let inv = check.expected.invariant;
    let broken = match inv.invariant() {
        Some(i) => check.observed.contains(&i),
        None => !run.world().violations().is_empty(),
    };
    let evidence = outcome_evidence(run, inv, broken, names, lang);
    let verdict = match (lang, broken) {
        (Lang::En, true) => "broken",
        (Lang::En, false) => "held",
        (Lang::Zh, true) => "被破坏",
        (Lang::Zh, false) => "成立",
    };
    let mut out = Vec::new();
    out.push(match lang {
        Lang::En => format!("outcome: {}: {verdict} — {evidence}", invariant_name(inv, lang)),
        Lang::Zh => format!("结论：{}：{verdict}——{evidence}", invariant_name(inv, lang)),
    });
    if check.ok {
        out.push(match lang {
            Lang::En => "  ✓ as the lesson teaches".to_owned(),
            Lang::Zh => "  ✓ 与本课要讲的结论一致".to_owned(),
        });
    } else {
        let want = match (lang, check.expected.broken) {
            (Lang::En, true) => "broken",
            (Lang::En, false) => "held",
            (Lang::Zh, true) => "被破坏",
            (Lang::Zh, false) => "成立",
        };
        out.push(match lang {
            Lang::En => format!("  ✗ MISMATCH: the lesson says it is {want}"),
            Lang::Zh => format!("  ✗ 不一致：本课说它应当{want}"),
        });
    }
    out.push(format!("  {}", check.expected.explain.get(lang).trim()));
    out
}

/// What the invariant is called, for the outcome sentence.
pub fn invariant_name(inv: OutcomeInvariant, lang: Lang) -> &'static str {
    match (inv, lang) {
        (OutcomeInvariant::Overlap, Lang::En) => "mutual exclusion",
        (OutcomeInvariant::Overlap, Lang::Zh) => "互斥",
        (OutcomeInvariant::Deadlock, Lang::En) => "liveness (no deadlock)",
        (OutcomeInvariant::Deadlock, Lang::Zh) => "活性（不死锁）",
        (OutcomeInvariant::StaleWrite, Lang::En) => "no stale write",
        (OutcomeInvariant::StaleWrite, Lang::Zh) => "没有陈旧写入",
        (OutcomeInvariant::WrongRelease, Lang::En) => "only the owner releases",
        (OutcomeInvariant::WrongRelease, Lang::Zh) => "只有持有者能释放",
        (OutcomeInvariant::ForeignExtend, Lang::En) => "only the owner renews",
        (OutcomeInvariant::ForeignExtend, Lang::Zh) => "只有持有者能续期",
        (OutcomeInvariant::None, Lang::En) => "every invariant",
        (OutcomeInvariant::None, Lang::Zh) => "所有不变量",
    }
}

fn who(actors: &[Actor], names: &Names, lang: Lang) -> String {
    let v: Vec<&str> = actors
        .iter()
        .filter_map(|a| match a {
            Actor::Client(c) => Some(names.client(*c)),
            _ => None,
        })
        .collect();
    v.join(match lang {
        Lang::En => " and ",
        Lang::Zh => " 和 ",
    })
}

/// One violation as a sentence in `lang`.
pub fn violation_sentence(v: &Violation, names: &Names, lang: Lang) -> String {
    let span = format!("{}–{} ms", v.from_ms, v.to_ms);
    let w = who(&v.actors, names, lang);
    match (v.invariant, lang) {
        (Invariant::Overlap, Lang::En) => format!("{w} both believed they held the lock, {span}"),
        (Invariant::Overlap, Lang::Zh) => format!("{w} 同时认为自己持有这把锁（{span}）"),
        (Invariant::StaleWrite, Lang::En) => format!(
            "{} (the resource accepted an earlier holder's write after a later holder's, {span})",
            v.detail
        ),
        (Invariant::StaleWrite, Lang::Zh) => {
            let first = v.actors.first().map(|a| names.actor(*a)).unwrap_or_default();
            format!("资源在后来的持有者写入之后，又接受了较早持有者 {first} 的写入（{w}，{span}）")
        }
        (Invariant::WrongRelease, Lang::En) => v.detail.clone(),
        (Invariant::WrongRelease, Lang::Zh) => {
            let first = v.actors.first().map(|a| names.actor(*a)).unwrap_or_default();
            format!("{first} 的命令删除了别人获得的锁（{w}，{span}）")
        }
        (Invariant::ForeignExtend, Lang::En) => v.detail.clone(),
        (Invariant::ForeignExtend, Lang::Zh) => {
            let first = v.actors.first().map(|a| names.actor(*a)).unwrap_or_default();
            format!("{first} 的命令给别人获得的锁续了期（{w}，{span}）")
        }
        (Invariant::Deadlock, Lang::En) => format!("{} ({span})", v.detail),
        (Invariant::Deadlock, Lang::Zh) => {
            let first = v.actors.first().map(|a| names.actor(*a)).unwrap_or_default();
            format!("{first} 持有的锁别人再也拿不到（{span}）")
        }
    }
}

fn outcome_evidence(run: &LessonRun, inv: OutcomeInvariant, broken: bool, names: &Names, lang: Lang) -> String {
    let world = run.world();
    if broken {
        let v = world
            .violations()
            .iter()
            .find(|v| inv.invariant().is_none_or(|i| v.invariant == i));
        if let Some(v) = v {
            return violation_sentence(v, names, lang);
        }
        // Overlap seen in the beliefs but not a violation in this lesson.
        let overlap = world.trace().iter().find_map(|e| match &e.kind {
            EventKind::Overlap {
                clients, begin: true, ..
            } => Some(clients.clone()),
            _ => None,
        });
        let actors: Vec<Actor> = overlap.unwrap_or_default().into_iter().map(Actor::Client).collect();
        return match lang {
            Lang::En => format!("{} both believed they held the lock", who(&actors, names, lang)),
            Lang::Zh => format!("{} 同时认为自己持有这把锁", who(&actors, names, lang)),
        };
    }
    let holders = {
        let mut seen: Vec<&str> = Vec::new();
        for e in world.trace() {
            if let (EventKind::Belief { holds: true, .. }, Actor::Client(c)) = (&e.kind, e.actor) {
                let n = names.client(c);
                if !seen.contains(&n) {
                    seen.push(n);
                }
            }
        }
        seen
    };
    let list = holders.join(match lang {
        Lang::En => ", ",
        Lang::Zh => "、",
    });
    match (inv, lang) {
        (OutcomeInvariant::Overlap, Lang::En) if holders.len() == 1 => format!("only {list} ever held the lock"),
        (OutcomeInvariant::Overlap, Lang::Zh) if holders.len() == 1 => format!("始终只有 {list} 持有过这把锁"),
        (OutcomeInvariant::Overlap, Lang::En) if holders.is_empty() => "no client ever held the lock".to_owned(),
        (OutcomeInvariant::Overlap, Lang::Zh) if holders.is_empty() => "没有客户端持有过这把锁".to_owned(),
        (OutcomeInvariant::Overlap, Lang::En) => format!("{list} held the lock one at a time, never two at once"),
        (OutcomeInvariant::Overlap, Lang::Zh) => format!("{list} 轮流持锁，从未有两个同时持有"),
        (OutcomeInvariant::Deadlock, Lang::En) => "every lock could be acquired again".to_owned(),
        (OutcomeInvariant::Deadlock, Lang::Zh) => "每把锁都能被再次获取".to_owned(),
        (OutcomeInvariant::StaleWrite, Lang::En) => {
            "the resource never accepted an earlier holder's write after a later holder's".to_owned()
        }
        (OutcomeInvariant::StaleWrite, Lang::Zh) => "资源从未在后来持有者写入之后接受较早持有者的写入".to_owned(),
        (OutcomeInvariant::WrongRelease, Lang::En) => "no client removed a lock another had acquired".to_owned(),
        (OutcomeInvariant::WrongRelease, Lang::Zh) => "没有客户端删除别人获得的锁".to_owned(),
        (OutcomeInvariant::ForeignExtend, Lang::En) => "no client extended a lock another had acquired".to_owned(),
        (OutcomeInvariant::ForeignExtend, Lang::Zh) => "没有客户端给别人获得的锁续期".to_owned(),
        (OutcomeInvariant::None, Lang::En) => "nothing broke; the lesson only shows commands".to_owned(),
        (OutcomeInvariant::None, Lang::Zh) => "没有任何不变量被破坏；本课只演示命令".to_owned(),
    }
}

/// Who holds what, over time: one lane per client (█ while it believes it
/// holds a lock), one per node and lock key (the owner's initial while the
/// key exists), and a row of `!` where an invariant broke.
pub fn swimlane(run: &LessonRun, width: usize) -> String {
    swimlane_in(run, width, Lang::En)
}

/// [`swimlane`], its own labels in `lang`.
pub fn swimlane_in(run: &LessonRun, width: usize, lang: Lang) -> String {
    let world = run.world();
    let trace = world.trace();
    let end = trace.last().map_or(1, |e| e.at_ms).max(world.now()).max(1);
    let mut lanes = lane_spans(trace, world.names(), end);
    let violations: Vec<(u64, u64, char)> = world
        .violations()
        .iter()
        .map(|v| (v.from_ms, v.to_ms.max(v.from_ms + 1), '!'))
        .collect();
    if !violations.is_empty() {
        let label = if lang == Lang::Zh { "违规" } else { "violations" };
        lanes.insert(label.to_owned(), violations);
    }
    draw_lanes(&lanes, end, width.max(10), lang)
}

/// The swimlane's lanes by label: intervals `[from, to)` of a client's
/// belief (`█`) and of a key on a node (its owner's initial); what is still
/// open at the end runs past `end`.
fn lane_spans(trace: &[Event], names: &Names, end: u64) -> BTreeMap<String, Vec<(u64, u64, char)>> {
    let mut lanes: BTreeMap<String, Vec<(u64, u64, char)>> = BTreeMap::new();
    let mut open_belief: BTreeMap<(u32, String), u64> = BTreeMap::new();
    let mut open_lock: BTreeMap<(u32, String), (u64, char)> = BTreeMap::new();
    let initial = |i: Option<u32>| i.and_then(|c| names.client(c).chars().next()).unwrap_or('?');
    for e in trace {
        match (&e.kind, e.actor) {
            (EventKind::Belief { key, holds }, Actor::Client(c)) => {
                let k = (c, key.clone());
                if *holds {
                    open_belief.entry(k).or_insert(e.at_ms);
                } else if let Some(from) = open_belief.remove(&k) {
                    lanes
                        .entry(format!("{} ({key})", names.client(c)))
                        .or_default()
                        .push((from, e.at_ms, '█'));
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
        lanes
            .entry(format!("{} ({key})", names.client(c)))
            .or_default()
            .push((from, end + 1, '█'));
    }
    for ((n, key), (from, ch)) in open_lock {
        lanes
            .entry(format!("{} {key}", names.node(n)))
            .or_default()
            .push((from, end + 1, ch));
    }
    lanes
}

/// One text row per lane, under a time axis from 0 to `end` ms, `width`
/// columns wide.
fn draw_lanes(lanes: &BTreeMap<String, Vec<(u64, u64, char)>>, end: u64, width: usize, lang: Lang) -> String {
    let col = |t: u64| ((t as u128 * (width as u128 - 1)) / end as u128) as usize;
    let label_width = lanes.keys().map(|k| k.chars().count()).max().unwrap_or(4).max(4);
    let mut out = String::new();
    let time = if lang == Lang::Zh { "时间" } else { "time" };
    let _ = writeln!(
        out,
        "{time:label_width$}  0 ms{:>w$}",
        format!("{end} ms"),
        w = width - 4
    );
    for (label, spans) in lanes {
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
