//! The verdict card: what was checked and what was found, in both of the
//! lab's languages, for a file the page opened.
//!
//! The page's worker builds it next to the trace ([`super::open`]) and the
//! page only shows it, so the wording lives here, once, beside the checks
//! it words. Titles, headlines, counts and each finding's sentence come in
//! both languages (the checker's sentence as the CLI prints it, and in
//! Chinese: the checker's own pair, or the Monitor's sentence read back by
//! [`super::zh`]); a skipped line's reason stays English, as the parser
//! says it. Counts agree with their number ("1 fault", "2 faults"). Every finding carries its witness as
//! lines: a history's witnessing calls as history lines with their line
//! numbers (`line 12: {…}`), a capture's as the commands that show it.

use serde::{Deserialize, Serialize};

use super::monitor::Import;
use super::zh;
use super::{Check, Finding, Linearity, Report};
use crate::actor::Actor;
use crate::invariants::{Invariant, Violation};
use crate::lesson::Bilingual;
use crate::trace::{command_line, Event, EventKind, Trace};

/// Witness lines listed per finding, at most.
const WITNESS_LINES: usize = 12;
/// Findings listed on the card, at most (the timeline draws them all).
const FINDINGS_LISTED: usize = 20;

/// One thing found, with what shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardFinding {
    /// The check's stable name (`stale-write`, `not-linearizable`, …).
    pub name: String,
    pub title: Bilingual,
    pub key: String,
    pub from_ms: u64,
    pub to_ms: u64,
    pub clients: Vec<String>,
    /// The checker's sentence (English, as the CLI prints it).
    pub detail: String,
    /// The same in Chinese.
    #[serde(default)]
    pub detail_zh: String,
    /// The minimal witness, a line each.
    pub witness: Vec<String>,
}

/// What the page shows beside the timeline of an opened file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileVerdict {
    /// `history` or `capture`.
    pub kind: String,
    /// No violation found.
    pub clean: bool,
    pub headline: Bilingual,
    /// What was checked, a sentence each.
    pub checked: Vec<Bilingual>,
    pub found: Vec<CardFinding>,
    /// Findings beyond those listed.
    pub more: usize,
    /// Lines skipped and limits reached (a capture), a sentence each.
    pub notes: Vec<Bilingual>,
}

fn text(en: String, zh: String) -> Bilingual {
    Bilingual { en, zh }
}

/// A check's title in Chinese.
fn title_zh(check: Check) -> &'static str {
    match check {
        Check::Invariant(Invariant::Overlap) => "两个持有者都写入了资源",
        Check::Invariant(i) => i.title_zh(),
        Check::ExtensionAfterExpiry => "租约过期后续期仍报告成功",
        Check::RenewalGap => "两次续期之间租约可能已失效",
        Check::NotLinearizable => "锁键不可线性化",
    }
}

/// `1 fault`, `2 faults`: an English count that agrees with its number
/// (Chinese needs no plural).
fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    if n == N::from(1) {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn found_words(n: usize) -> Bilingual {
    match n {
        0 => text("no violation found".into(), "未发现违反".into()),
        1 => text("1 violation found".into(), "发现 1 处违反".into()),
        n => text(format!("{n} violations found"), format!("发现 {n} 处违反")),
    }
}

/// The card of a checked history with `faults` fault markers.
pub fn history_card(report: &Report, faults: usize) -> FileVerdict {
    let serious = report.findings.iter().filter(|f| f.check != Check::RenewalGap).count();
    let broken = report.keys.iter().any(|k| k.linearity == Linearity::NotLinearizable);
    let found = found_words(serious);
    let (ops, clients) = (report.ops, report.clients.len());
    let ops_en = count(ops, "operation", "operations");
    let clients_en = count(clients, "client", "clients");
    let headline = text(
        format!("History: {ops_en} of {clients_en} checked — {}", found.en),
        format!("历史：已检查 {clients} 个客户端的 {ops} 次操作——{}", found.zh),
    );
    let mut checked = vec![text(
        "Checked: stale writes the resource accepted, releases of another's lock, two holders' writes, extensions after expiry, renewal gaps, and each lock key as one register (Wing–Gong search with Lowe's cache).".into(),
        "检查项：资源接受的过期写入、释放他人的锁、两个持有者的写入、过期后的续期、续期间隙，以及每个锁键作为单一寄存器的可线性化性（Wing–Gong 搜索加 Lowe 缓存）。".into(),
    )];
    for k in &report.keys {
        let (en, zh) = match &k.linearity {
            Linearity::Linearizable => ("linearizable".to_owned(), "可线性化".to_owned()),
            Linearity::NotLinearizable => ("NOT linearizable".to_owned(), "不可线性化".to_owned()),
            Linearity::Unknown { steps } => (
                format!("unknown (the search's limit of {steps} steps was reached)"),
                format!("未知（搜索达到 {steps} 步上限）"),
            ),
        };
        checked.push(text(
            format!("key {}: {}, {en}", k.key, count(k.ops, "call", "calls")),
            format!("键 {}：{} 次调用，{zh}", k.key, k.ops),
        ));
    }
    if faults > 0 {
        checked.push(text(
            format!(
                "{} the nemesis injected, marked on the lanes",
                count(faults, "fault", "faults")
            ),
            format!("故障注入器注入了 {faults} 个故障，已标在泳道上"),
        ));
    }
    let listed: Vec<CardFinding> = report.findings.iter().take(FINDINGS_LISTED).map(finding).collect();
    FileVerdict {
        kind: "history".into(),
        clean: serious == 0 && !broken,
        headline,
        checked,
        more: report.findings.len() - listed.len(),
        found: listed,
        notes: Vec::new(),
    }
}

fn finding(f: &Finding) -> CardFinding {
    let witness = f
        .witness
        .iter()
        .take(WITNESS_LINES)
        .map(|op| match op.line {
            0 => op.to_line(),
            n => format!("line {n}: {}", op.to_line()),
        })
        .collect();
    CardFinding {
        name: f.check.name().into(),
        title: text(f.check.title().into(), title_zh(f.check).into()),
        key: f.key.clone(),
        from_ms: f.from_ms,
        to_ms: f.to_ms,
        clients: f.clients.clone(),
        detail: f.detail.clone(),
        detail_zh: f.detail_zh.clone(),
        witness,
    }
}

/// The card of a replayed MONITOR capture.
pub fn capture_card(i: &Import) -> FileVerdict {
    let s = &i.summary;
    let found = found_words(s.violations.len());
    let keys = if s.lock_keys.is_empty() {
        "none found".to_owned()
    } else {
        s.lock_keys.join(", ")
    };
    let (commands, clients) = (s.commands, s.lanes.len());
    let commands_en = count(commands, "command", "commands");
    let clients_en = count(clients, "client", "clients");
    let headline = text(
        format!("MONITOR capture: {commands_en} of {clients_en} replayed — {}", found.en),
        format!(
            "MONITOR 抓取：已重放 {clients} 个客户端的 {commands} 条命令——{}",
            found.zh
        ),
    );
    let checked = vec![
        text(
            format!("Replayed through the simulated redis-server at the capture's times ({}, {}): every reply recomputed; two holders and deletes by a non-owner checked.", count(s.lines, "line", "lines"), count(s.script_lines, "script line", "script lines")),
            format!("按抓取中的时间在模拟 redis-server 上重放（{} 行，{} 行脚本命令）：重新计算每个回复；检查两个持有者和非持有者删除。", s.lines, s.script_lines),
        ),
        text(
            format!("lock keys: {keys}; {}", count(s.holds, "hold", "holds")),
            format!("锁键：{}；共持有 {} 次", if s.lock_keys.is_empty() { "未找到".to_owned() } else { s.lock_keys.join(", ") }, s.holds),
        ),
    ];
    let mut notes = Vec::new();
    if s.skipped > 0 {
        let first: Vec<String> = (s.skipped_lines.iter().take(5))
            .map(|k| format!("line {}: {}", k.line, k.why))
            .collect();
        notes.push(text(
            format!("{} skipped — {}", count(s.skipped, "line", "lines"), first.join("; ")),
            format!("跳过 {} 行——{}", s.skipped, first.join("；")),
        ));
    }
    if s.events_left_out > 0 {
        notes.push(text(
            format!(
                "{} left out of the timeline (its limit); every lock event is in it",
                count(s.events_left_out, "command event", "command events")
            ),
            format!("时间线省略了 {} 个命令事件（上限）；所有锁事件都在", s.events_left_out),
        ));
    }
    let listed: Vec<CardFinding> = (s.violations.iter().take(FINDINGS_LISTED))
        .map(|v| violation(&i.trace, v))
        .collect();
    FileVerdict {
        kind: "capture".into(),
        clean: s.violations.is_empty(),
        headline,
        checked,
        more: s.violations.len() - listed.len(),
        found: listed,
        notes,
    }
}

/// A capture's violation, witnessed by its clients' commands: each one's
/// command that took the lock last before the violation ended, and what
/// they ran at its start and its end.
fn violation(trace: &Trace, v: &Violation) -> CardFinding {
    let clients: Vec<u32> = v
        .actors
        .iter()
        .filter_map(|a| match a {
            Actor::Client(c) => Some(*c),
            _ => None,
        })
        .collect();
    let ran = |e: &Event| match &e.kind {
        EventKind::Executed { client, .. } => Some(*client),
        _ => None,
    };
    let mut picked: Vec<usize> = Vec::new();
    for &c in &clients {
        let granted = trace.events.iter().rposition(|e| {
            e.at_ms <= v.to_ms && e.actor == Actor::Client(c) && matches!(e.kind, EventKind::Granted { .. })
        });
        if let Some(g) = granted {
            picked.extend(trace.events[..g].iter().rposition(|e| ran(e) == Some(c)));
        }
    }
    for (i, e) in trace.events.iter().enumerate() {
        let at_edge = e.at_ms == v.from_ms || e.at_ms == v.to_ms;
        if at_edge && ran(e).is_some_and(|c| clients.contains(&c)) {
            picked.push(i);
        }
    }
    picked.sort_unstable();
    picked.dedup();
    let witness = (picked.iter().take(WITNESS_LINES))
        .filter_map(|&i| {
            let e = &trace.events[i];
            let EventKind::Executed {
                client,
                commands,
                replies,
                ..
            } = &e.kind
            else {
                return None;
            };
            let cmd: Vec<String> = commands.iter().map(|c| command_line(c)).collect();
            let rep: Vec<String> = replies.iter().map(|r| r.to_cli().replace('\n', " ")).collect();
            Some(format!(
                "{} ms {}: {} ⇒ {}",
                e.at_ms,
                trace.names.client(*client),
                cmd.join(" | "),
                rep.join(" | ")
            ))
        })
        .collect();
    CardFinding {
        name: v.invariant.name().into(),
        title: text(v.invariant.title().into(), v.invariant.title_zh().into()),
        key: String::new(),
        from_ms: v.from_ms,
        to_ms: v.to_ms,
        clients: clients.iter().map(|&c| trace.names.client(c).to_owned()).collect(),
        detail: v.detail.clone(),
        detail_zh: zh::violation(v),
        witness,
    }
}
