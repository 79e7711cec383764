//! The texts on the plot: the labels beside marks and on lock bars, the
//! plain-language callouts above the lanes with their leader lines, and the
//! legend, each placed so that no two overlap; and the short wording of
//! commands and replies they use.

use super::*;

/// Callout rows above the lanes (those left empty are taken back).
pub(super) const CALLOUT_ROWS: usize = 4;

/// A text on the plot, laid out so no two overlap: `x` is where it starts,
/// `y` its baseline, `w` its estimated width.
#[derive(Clone, Debug, PartialEq)]
pub struct Label {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub text: String,
    /// `mark-label`, `bar-label`, `callout`, `band-title`.
    pub class: &'static str,
    pub title: String,
}

/// A plain-language sentence above the lanes, with a leader line down to
/// the moment it is about.
#[derive(Clone, Debug, PartialEq)]
pub struct Callout {
    pub label: Label,
    pub at_x: f64,
    pub y_to: f64,
    /// `violation`, `expired`, `removed`, `overlap`, `rejected`, `promoted`, `restart`.
    pub kind: &'static str,
}

/// A violation in one line. English is core's own sentence (it names
/// tokens and times); Chinese says what broke and who was involved, from
/// the violation's kind and actors, and keeps core's sentence for the
/// tooltip.
pub(super) fn violation_line(
    v: &locklab_core::invariants::Violation,
    names: &locklab_core::actor::Names,
    lang: Lang,
) -> String {
    use locklab_core::invariants::Invariant;
    if lang == Lang::En {
        return v.detail.clone();
    }
    let who: Vec<String> = v
        .actors
        .iter()
        .map(|&a| match a {
            locklab_core::actor::Actor::Resource => "受保护资源".to_owned(),
            a => names.actor(a),
        })
        .collect();
    let who = who.join("、");
    match v.invariant {
        Invariant::StaleWrite => format!("受保护资源接受了已失去锁的持有者的写入（{who}）"),
        Invariant::WrongRelease => format!("锁被并不持有它的客户端释放了（{who}）"),
        Invariant::Deadlock => format!("锁既不过期也没人释放，其他客户端永远拿不到（{who}）"),
        Invariant::ForeignExtend => format!("锁被并不持有它的客户端续期了（{who}）"),
        Invariant::Overlap => format!("{who} 同时认为自己持有这把锁"),
    }
}

/// One legend entry: which swatch, what it says, where.
#[derive(Clone, Debug, PartialEq)]
pub struct LegendItem {
    pub kind: &'static str,
    pub text: String,
    pub x: f64,
    pub y: f64,
}

/// The (first) command's name and first key: `SET lock:order:1`. A
/// script's first key comes after its body and key count (`EVAL script 1
/// lock`), as redis-server's `evalGetKeys` reads it, so a release is `EVAL
/// lock`, not the script's first word; with no key it is the name alone.
pub fn short(commands: &[Vec<String>]) -> String {
    let argv = commands.first().map_or(&[][..], Vec::as_slice);
    let Some(name) = argv.first() else { return String::new() };
    let name = name.to_uppercase();
    let scripted = matches!(
        name.as_str(),
        "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO" | "FCALL" | "FCALL_RO"
    );
    let key = if scripted {
        argv.get(2)
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .and_then(|_| argv.get(3))
    } else {
        argv.get(1)
    };
    let label = match key {
        Some(key) => format!("{name} {key}"),
        None => name,
    };
    if label.chars().count() > 22 {
        format!("{}…", label.chars().take(21).collect::<String>())
    } else {
        label
    }
}

pub(super) fn replies_text(replies: &[Reply]) -> String {
    replies
        .iter()
        .map(|r| r.to_cli().replace('\n', " "))
        .collect::<Vec<_>>()
        .join(" | ")
}

pub(super) fn commands_text(commands: &[Vec<String>]) -> String {
    commands.iter().map(|c| command_line(c)).collect::<Vec<_>>().join(" | ")
}

/// The leftmost row (of `rows`, each holding where its last text ends)
/// where a text from `x0`, `w` wide, fits; that row now ends after it.
pub(super) fn place(rows: &mut [f64], x0: f64, w: f64, gap: f64) -> Option<usize> {
    let i = rows.iter().position(|&end| end + gap <= x0)?;
    rows[i] = x0 + w;
    Some(i)
}

/// Who, in words: `B and C`, `A, B and C`; `B 和 C` in Chinese.
pub(super) fn who_list(who: &[String], lang: Lang) -> String {
    let and = match lang {
        Lang::En => " and ",
        Lang::Zh => " 和 ",
    };
    match who {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{}{and}{last}", init.join(if lang == Lang::Zh { "、" } else { ", " })),
    }
}

/// Callouts: violation titles first (always shown, moved left rather than
/// cut off at the edge), then the sentences, in time order, each in the
/// first callout row where it fits. Also how many rows were used.
pub(super) fn place_callouts(
    bands: &[Band],
    mut notes: Vec<Note>,
    style: Style,
    plot_end: f64,
    callouts_top: f64,
    lanes_top: f64,
) -> (Vec<Callout>, usize) {
    let font = style.font;
    let (label_w, gap) = (style.label_w(), font * 0.6);
    let mut callouts = Vec::new();
    let mut crow: Vec<Vec<(f64, f64)>> = vec![Vec::new(); CALLOUT_ROWS];
    let mut put = |x: f64, y_to: f64, text: String, kind: &'static str, title: String, callouts: &mut Vec<Callout>| {
        let w = text_w(&text, font);
        // Starting at the moment, or ending there, in the first row free.
        let starts = [
            (x - font * 0.3).min(plot_end - w).max(label_w),
            (x + font * 0.3 - w).max(label_w),
        ];
        let spot = (0..style.callout_rows_for(kind)).find_map(|r| {
            starts
                .iter()
                .find(|&&x0| {
                    crow[r]
                        .iter()
                        .all(|&(a, b)| x0 + w + gap * 2.0 <= a || b + gap * 2.0 <= x0)
                })
                .map(|&x0| (r, x0))
        });
        if let Some((r, x0)) = spot {
            crow[r].push((x0, x0 + w));
            let y = callouts_top + (r as f64 + 1.0) * style.callout_row() - font * 0.4;
            let class = if kind == "violation" { "band-title" } else { "callout" };
            callouts.push(Callout {
                label: Label {
                    x: x0,
                    y,
                    w,
                    text,
                    class,
                    title,
                },
                at_x: x,
                y_to,
                kind,
            });
        }
    };
    for b in bands {
        put(
            b.x0,
            lanes_top,
            format!("⚠ {}", b.heading),
            "violation",
            b.title.clone(),
            &mut callouts,
        );
    }
    // What went wrong first (who removed whose lock, who both hold it, a
    // promotion that lost a lock, a rejected token), then expiries: when
    // the strip is full, the least telling callouts are the ones left out.
    let rank = |kind: &str| match kind {
        "removed" => 0,
        "overlap" => 1,
        "promoted" => 2,
        "rejected" => 3,
        "restart" => 4,
        _ => 5,
    };
    notes.sort_by(|a, b| rank(a.3).cmp(&rank(b.3)).then(a.0.total_cmp(&b.0)));
    for (x, y, text, kind, title) in notes {
        put(x, y, text, kind, title, &mut callouts);
    }
    let used = crow.iter().rposition(|r| !r.is_empty()).map_or(0, |r| r + 1);
    (callouts, used)
}

/// Labels under the marks: two rows per lane; a label that fits in neither
/// is shortened to the command's name, then left to its tooltip. Also the
/// right end of each lane's label rows (what the lane must keep room for).
///
/// A run of marks on one lane with the same label, each before the
/// first's label ends, is labelled once with how many events it stands
/// for: a Redlock client's `SET` to five masters is `SET lock ×5`, not the
/// same words stacked in both rows (lesson 18, five clients racing).
pub(super) fn mark_labels(marks: &[Mark], lanes: &[Lane], style: Style, plot_end: f64) -> (Vec<Label>, Vec<[f64; 2]>) {
    let font = style.font;
    let (label_w, gap) = (style.label_w(), font * 0.6);
    // (first mark, its label, events in the run); a lane's open run and
    // where its first label would end.
    let mut runs: Vec<(&Mark, &str, usize)> = Vec::new();
    let mut open: HashMap<usize, (usize, f64)> = HashMap::new();
    for m in marks {
        let Some(text) = m.label.as_deref() else { continue };
        match open.get(&m.lane) {
            Some(&(i, end)) if runs[i].1 == text && m.x <= end => runs[i].2 += m.count,
            _ => {
                open.insert(m.lane, (runs.len(), m.x + text_w(text, font)));
                runs.push((m, text, m.count));
            }
        }
    }
    let mut labels = Vec::new();
    let mut rows: Vec<[f64; 2]> = vec![[f64::NEG_INFINITY; 2]; lanes.len()];
    for (m, text, count) in runs {
        let lane = &lanes[m.lane];
        let base = lane.y + 4.0 + bar_rows_of(lane, style) * style.bar_row();
        let times = if count > 1 {
            format!(" ×{count}")
        } else {
            String::new()
        };
        let name = text.split_whitespace().next().unwrap_or_default();
        for candidate in [format!("{text}{times}"), format!("{name}{times}")] {
            let w = text_w(&candidate, font);
            let x0 = (m.x - font * 0.4).min(plot_end - w).max(label_w);
            if let Some(r) = place(&mut rows[m.lane][..style.label_rows()], x0, w, gap) {
                labels.push(Label {
                    x: x0,
                    y: base + (r as f64 + 1.0) * style.label_row() - 4.0,
                    w,
                    text: candidate,
                    class: "mark-label",
                    title: m.title.clone(),
                });
                break;
            }
        }
    }
    (labels, rows)
}

/// Bar labels: inside the bar, `key · owner` or just the owner (keys
/// beyond MAX_ROWS share a row, so a row remembers where its last ended).
pub(super) fn bar_labels(bars: &[Bar], style: Style, plot_end: f64) -> Vec<Label> {
    let font = style.font;
    let gap = font * 0.6;
    let mut labels = Vec::new();
    let mut bar_rows: HashMap<(usize, i64), f64> = HashMap::new();
    for b in bars {
        let room = (b.x1.min(plot_end) - b.x0) - font * 0.6;
        let full = format!("{} · {}", b.key, b.owner_name);
        let text = [full, b.owner_name.clone()]
            .into_iter()
            .find(|t| !t.is_empty() && text_w(t, font) <= room);
        let end = bar_rows
            .entry((b.lane, b.y.round() as i64))
            .or_insert(f64::NEG_INFINITY);
        let text = text.filter(|_| *end + gap <= b.x0);
        if let Some(text) = text {
            *end = b.x0 + font * 0.3 + text_w(&text, font);
            labels.push(Label {
                x: b.x0 + font * 0.3,
                y: b.y + style.bar_h() / 2.0 + font * 0.36,
                w: text_w(&text, font),
                text,
                class: "bar-label",
                title: b.title.clone(),
            });
        }
    }
    labels
}

/// The kinds of mark this timeline draws, in the order the legend lists them.
pub(super) fn legend_kinds(
    bars: &[Bar],
    marks: &[Mark],
    arrows: &[Arrow],
    spans: &[Span],
    has_bands: bool,
    has_breaks: bool,
) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    let mut add = |k: &'static str| {
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    };
    for b in bars {
        if b.belief {
            add("belief");
        } else {
            add("held");
            if b.deadline_x.is_some() || b.end == Some(BarEnd::Expired) {
                add("ttl");
            }
        }
    }
    for m in marks {
        match &m.kind {
            MarkKind::Command(Tone::Nil) | MarkKind::Reply(Tone::Nil) | MarkKind::Executed(Tone::Nil) => add("nil"),
            MarkKind::Command(Tone::Error) | MarkKind::Reply(Tone::Error) | MarkKind::Executed(Tone::Error) => {
                add("error")
            }
            MarkKind::Command(_) | MarkKind::Reply(_) | MarkKind::Executed(_) => add("command"),
            MarkKind::Expired { .. } => add("expired"),
            MarkKind::Lost | MarkKind::TimedOut => add("lost"),
            MarkKind::Fault => add("fault"),
            MarkKind::Write { accepted: true } => add("accepted"),
            MarkKind::Write { accepted: false } => add("rejected"),
            MarkKind::Info => add("info"),
        }
    }
    for a in arrows {
        add(match a.kind {
            ArrowKind::Replication => "replication",
            ArrowKind::Lost => "lost-arrow",
            _ => "arrow",
        });
    }
    for sp in spans {
        add(match sp.kind {
            "down" | "crashed" => "down",
            "cut" => "cut",
            _ => "paused",
        });
    }
    if has_bands {
        add("violation");
    }
    if has_breaks {
        add("break");
    }
    kinds
}

/// The legend's entries, wrapped to rows from `top` within `legend_end`;
/// also the last row's baseline.
pub(super) fn place_legend(
    kinds: Vec<&'static str>,
    lang: Lang,
    font: f64,
    label_w: f64,
    legend_end: f64,
    top: f64,
) -> (Vec<LegendItem>, f64) {
    let mut legend = Vec::new();
    let (mut lx, mut ly) = (label_w, top);
    for k in kinds {
        let text = legend_text(k, lang).to_owned();
        let w = font * 2.2 + text_w(&text, font) + font * 1.4;
        if lx + w > legend_end && lx > label_w {
            lx = label_w;
            ly += font * 1.7;
        }
        legend.push(LegendItem {
            kind: k,
            text,
            x: lx,
            y: ly,
        });
        lx += w;
    }
    (legend, ly)
}

/// The legend's words for a kind of mark.
pub fn legend_text(kind: &str, lang: Lang) -> &'static str {
    let (zh, en) = match kind {
        "held" => ("锁在节点上（颜色 = 持有者）", "lock held on the node (colour = owner)"),
        "ttl" => ("剩余 TTL", "TTL left"),
        "belief" => ("客户端认为自己持有", "client believes it holds"),
        "command" => ("命令 / 回复", "command / reply"),
        "nil" => ("没有效果（nil、0）", "did nothing (nil, 0)"),
        "error" => ("错误回复", "error reply"),
        "expired" => ("键过期", "key expired"),
        "lost" => ("丢失 / 超时", "lost / timed out"),
        "fault" => ("注入的故障", "fault injected"),
        "accepted" => ("写入被接受", "write accepted"),
        "rejected" => ("写入被拒绝", "write rejected"),
        "info" => ("其他事件", "other event"),
        "arrow" => ("请求与回复", "request and reply"),
        "lost-arrow" => ("丢失的消息", "lost message"),
        "replication" => ("复制", "replication"),
        "paused" => ("暂停", "paused"),
        "down" => ("宕机", "down"),
        "cut" => ("网络断开", "link cut"),
        "violation" => ("违反不变量", "invariant broken"),
        "break" => (
            "时间轴断开（同一时刻展开 / 空闲压缩）",
            "axis break (one instant spread / idle squeezed)",
        ),
        _ => ("", ""),
    };
    if lang == Lang::Zh {
        zh
    } else {
        en
    }
}
