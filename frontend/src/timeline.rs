//! Laying out a trace as swimlanes: where everything goes, no drawing.
//!
//! The timeline renders core's [`Trace`] — the same type the scenario world,
//! the explorer and this console's free-play lab produce — so it knows
//! nothing about where a trace came from. This module turns one into
//! positioned shapes; [`view::timeline`](crate::view::timeline) only turns
//! those into SVG, and everything here is tested natively.
//!
//! Lanes: one per client, one per node, one for the protected resource when
//! the trace writes to it. Lock bars sit on the node that holds the key
//! (coloured by owner; one row per key), "believes it holds" bars on the
//! client. Requests are arrows when they took time (client → node → client),
//! dots when they did not. Violations are red bands across every lane.
//!
//! ## Sizes
//!
//! Everything is laid out in CSS pixels for the width the page gives the
//! timeline (the SVG's `viewBox` is its size in pixels, never scaled), so a
//! 13 px label is 13 px on a projector and browser zoom makes it bigger.
//! [`Style`] carries the type size; presenter mode passes a bigger one.
//!
//! ## The time axis
//!
//! Linear: one millisecond is the same width everywhere a tick is drawn.
//! It is fitted to the events (from the first one when the trace does not
//! start at 0, as on the real driver, to the last one or "now"). Two honest
//! exceptions, both drawn on the axis with a break mark `⫽`:
//!
//! * a **burst** — events closer together than a mark's width (a whole
//!   request, sent, run and answered within a few milliseconds) — is spread
//!   out so each gets its own slot; the break names the instant;
//! * a long **idle gap** (≥ 60 s and more than half of the run, typically a
//!   real-driver session left open) is squeezed to a fixed width with its
//!   length written on it.
//!
//! Ticks are only placed on linear stretches, so two ticks 10 s apart with
//! no break between them are always the same distance apart.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use locklab_core::actor::{Actor, Names};
use locklab_core::observe::{LockChange, Via};
use locklab_core::trace::{command_line, Event, EventKind, Trace};
use locklab_core::Reply;

use crate::i18n::{seconds, Lang, Text};

mod events;
use events::{Builder, Note};

/// The type size and everything measured from it, in CSS pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Style {
    /// The labels' font size.
    pub font: f64,
    /// Presenter mode's last resort when even the smallest type does not
    /// fit the screen (lesson 45: two clients holding four locks each,
    /// four services): bar rows hug their bars, a lane labels its marks in
    /// one row, and sentences above the lanes take two rows.
    pub compact: bool,
}

impl Style {
    /// The page's timeline: 14 px labels (≥ 13 px, readable from a room).
    pub const NORMAL: Style = Style {
        font: 14.0,
        compact: false,
    };
    /// Presenter mode.
    pub const PRESENT: Style = Style {
        font: 19.0,
        compact: false,
    };
    /// Type of `font` px, rows as roomy as the page's.
    pub fn sized(font: f64) -> Style {
        Style { font, compact: false }
    }

    fn s(self) -> f64 {
        self.font / 14.0
    }
    pub fn label_w(self) -> f64 {
        150.0 * self.s()
    }
    pub fn axis_h(self) -> f64 {
        30.0 * self.s()
    }
    fn right_pad(self) -> f64 {
        20.0 * self.s()
    }
    /// A lock bar's row (the bar is [`Style::bar_h`] tall).
    fn bar_row(self) -> f64 {
        (self.font + if self.compact { 4.0 } else { 8.0 }).round()
    }
    pub fn bar_h(self) -> f64 {
        self.font + if self.compact { 3.0 } else { 6.0 }
    }
    /// Label rows under a lane's bars (the lane keeps room for two and
    /// gives back what its labels did not use).
    fn label_rows(self) -> usize {
        if self.compact {
            1
        } else {
            2
        }
    }
    /// Callout rows a callout of `kind` may take: a violation's title any
    /// of the [`CALLOUT_ROWS`] (it is always shown), a sentence two when
    /// compact.
    fn callout_rows_for(self, kind: &str) -> usize {
        match (kind, self.compact) {
            ("violation", _) | (_, false) => CALLOUT_ROWS,
            _ => 2,
        }
    }
    fn label_row(self) -> f64 {
        (self.font * 1.3).round()
    }
    fn callout_row(self) -> f64 {
        (self.font * 1.5).round()
    }
    /// The width one event gets inside a burst.
    fn slot(self) -> f64 {
        24.0 * self.s()
    }
    fn gap_w(self) -> f64 {
        84.0 * self.s()
    }
}

/// Labels are drawn in the monospace face; Chinese is full width. A
/// generous estimate, so labels laid out apart never touch in the browser.
pub fn text_w(text: &str, font: f64) -> f64 {
    text.chars()
        .map(|c| if c >= '\u{2e80}' { font * 1.02 } else { font * 0.62 })
        .sum::<f64>()
}

/// Lock bar rows per lane before keys share the last one.
const MAX_ROWS: usize = 4;
/// Callout rows above the lanes (those left empty are taken back).
const CALLOUT_ROWS: usize = 4;
/// Arrows per 100 px of plot past which a timeline is [`Layout::dense`].
/// The lessons split cleanly: a story has at most 9, a race or a load
/// test (18, 25–27: five clients, five masters) 44 and more.
const DENSE_ARROWS: f64 = 20.0;
/// Tick spacings to choose from, in ms.
const TICK_STEPS: [u64; 20] = [
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
    1_800_000,
];

/// What a lane stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneKind {
    Client(u32),
    Node(u32),
    Resource,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    pub kind: LaneKind,
    pub label: String,
    /// What the node became (`master`, `down`, `leader · term 2`), under
    /// its name.
    pub role: Option<String>,
    /// A lane that stands for a group of nodes (`etcd1–3`): its members.
    /// Empty for a lane of its own.
    pub members: Vec<u32>,
    pub y: f64,
    pub height: f64,
    /// Where its marks sit: the middle of its first bar row.
    pub mark_y: f64,
}

impl Lane {
    pub fn mid(&self) -> f64 {
        self.mark_y
    }

    /// CSS class: `client-0`, `node-1`, `resource`.
    pub fn class(&self) -> String {
        match self.kind {
            LaneKind::Client(i) => format!("client-{i}"),
            LaneKind::Node(i) => format!("node node-{i}"),
            LaneKind::Resource => "resource".to_owned(),
        }
    }
}

/// How a reply reads at a glance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Ok,
    /// `(nil)`, `(integer) 0`: the command did nothing (a failed NX, a
    /// release that found another token).
    Nil,
    Error,
    Neutral,
}

impl Tone {
    fn of(replies: &[Reply]) -> Tone {
        if replies.iter().any(Reply::is_error) {
            Tone::Error
        } else if replies
            .iter()
            .all(|r| matches!(r, Reply::Nil | Reply::NilArray | Reply::Integer(0)))
        {
            Tone::Nil
        } else {
            Tone::Ok
        }
    }

    pub fn class(self) -> &'static str {
        match self {
            Tone::Ok => "ok",
            Tone::Nil => "nil",
            Tone::Error => "error",
            Tone::Neutral => "neutral",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum MarkKind {
    /// A command, on the client's lane (when it was sent, or when it ran if
    /// it took no time).
    Command(Tone),
    /// A node ran a request that took time to arrive.
    Executed(Tone),
    /// The client got the reply.
    Reply(Tone),
    Expired {
        key: String,
    },
    Lost,
    TimedOut,
    Fault,
    Write {
        accepted: bool,
    },
    /// Notes, resumes, restarts, replication batches: a small dot.
    Info,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    pub lane: usize,
    pub x: f64,
    pub y: f64,
    pub kind: MarkKind,
    /// Short text under the mark, when there is room.
    pub label: Option<String>,
    /// The whole story, for the tooltip.
    pub title: String,
    /// The client the mark belongs to, for colour.
    pub client: Option<u32>,
    /// How many events it stands for: 1, more when [`merge_marks`] folded
    /// its neighbours into it (their labels count them: `SET lock ×5`).
    pub count: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrowKind {
    Request,
    Reply,
    Lost,
    Replication,
    Write,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Arrow {
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
    pub kind: ArrowKind,
}

/// How a lock bar ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarEnd {
    Expired,
    /// Deleted, overwritten, lost in a restart or a resync.
    Gone,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    /// Where the TTL would end, while the bar is open.
    pub deadline_x: Option<f64>,
    pub key: String,
    pub owner: Option<u32>,
    /// The owner's name (`A`), empty when unknown.
    pub owner_name: String,
    pub end: Option<BarEnd>,
    /// A client's belief rather than a key on a node.
    pub belief: bool,
    pub title: String,
}

/// A stretch of time a lane spent paused, crashed or cut off: shaded.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
    /// `paused`, `crashed`, `down`, `cut`.
    pub kind: &'static str,
    pub open: bool,
    pub title: String,
}

/// A broken invariant, across all lanes.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    pub x0: f64,
    pub x1: f64,
    pub name: &'static str,
    pub title: String,
    /// The one line drawn in the band, in the page's language.
    pub explain: String,
    /// Its human title with who was involved: `two holders (B, C)`.
    pub heading: String,
}

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
fn violation_line(v: &locklab_core::invariants::Violation, names: &locklab_core::actor::Names, lang: Lang) -> String {
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
        Invariant::Overlap => format!("{who} 同时认为自己持有这把锁"),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    pub x: f64,
    pub label: String,
    pub ms: u64,
}

/// Everything the SVG needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub height: f64,
    pub span_ms: u64,
    pub lanes: Vec<Lane>,
    pub ticks: Vec<Tick>,
    pub breaks: Vec<AxisBreak>,
    pub bars: Vec<Bar>,
    pub arrows: Vec<Arrow>,
    pub marks: Vec<Mark>,
    pub bands: Vec<Band>,
    pub spans: Vec<Span>,
    /// Mark and bar labels, laid out apart.
    pub labels: Vec<Label>,
    pub callouts: Vec<Callout>,
    /// The legend's entries for what this timeline draws.
    pub legend: Vec<LegendItem>,
    pub now_x: f64,
    /// The SVG's width in CSS pixels (wider than the view when zoomed in).
    pub width: f64,
    pub plot_end: f64,
    pub lanes_top: f64,
    pub lanes_bottom: f64,
    pub style: Style,
    /// Marks folded into a neighbour closer than a pixel (see [`merge_marks`]).
    pub merged: usize,
    /// So many arrows to the plot's width ([`DENSE_ARROWS`]) that they are
    /// a texture, not lines one follows: they are drawn faint, so the
    /// marks, bars and words over them can be read. Zooming in thins them.
    pub dense: bool,
}

/// One legend entry: which swatch, what it says, where.
#[derive(Clone, Debug, PartialEq)]
pub struct LegendItem {
    pub kind: &'static str,
    pub text: String,
    pub x: f64,
    pub y: f64,
}

/// Whether an event draws a mark, and so needs room of its own on the axis.
fn has_slot(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::Lock { .. }
            | EventKind::Granted { .. }
            | EventKind::Belief { .. }
            | EventKind::Overlap { .. }
            | EventKind::Done
            | EventKind::Violation { .. }
            | EventKind::Elected { .. }
    )
}

#[derive(Clone, Debug, PartialEq)]
enum SegKind {
    Linear,
    /// Events spread one slot each; `times` are their instants, in order.
    Burst {
        times: Vec<u64>,
        slot: f64,
    },
    /// Idle time squeezed to a fixed width.
    Gap,
}

#[derive(Clone, Debug, PartialEq)]
struct Seg {
    t0: u64,
    t1: u64,
    x0: f64,
    x1: f64,
    kind: SegKind,
}

/// Where the axis is not linear, drawn with a break mark `⫽`.
#[derive(Clone, Debug, PartialEq)]
pub struct AxisBreak {
    pub x0: f64,
    pub x1: f64,
    /// `burst` or `gap`.
    pub kind: &'static str,
    /// Written on the axis (a gap's length), when there is room.
    pub label: Option<String>,
    pub title: String,
    pub from_ms: u64,
    pub to_ms: u64,
}

/// The time axis: linear, with bursts spread and long idle gaps squeezed
/// (see the module docs).
#[derive(Clone, Debug)]
pub struct Axis {
    segs: Vec<Seg>,
    /// Pixels per millisecond on the linear stretches.
    pub k: f64,
    pub start_ms: u64,
    pub end_ms: u64,
    x_left: f64,
    plot_w: f64,
    font: f64,
    /// The room right of the plot, the SVG's last pixels: a tick's label
    /// may reach into it, not past it (where the panel cuts it).
    right_pad: f64,
    /// The x of each event given to [`Axis::fit_lanes`], in its order.
    pub event_x: Vec<f64>,
}

/// The axis's time span for `events`, running to at least `now_ms`.
fn time_span(events: &[(u64, u32)], now_ms: u64) -> (u64, u64) {
    let first = events.first().map_or(0, |e| e.0).min(now_ms);
    // A trace that starts late (the real driver's clock ran before the
    // first step) starts where it starts.
    let start_ms = if first >= 5_000 { first - first % 1_000 } else { 0 };
    let last = events.last().map_or(0, |e| e.0).max(now_ms);
    let raw = last.saturating_sub(start_ms).max(10);
    // A little room after the last event, so its mark is not on the edge.
    (start_ms, start_ms + raw + (raw / 25).clamp(1, 2_000))
}

/// Events closer together than a slot at scale `k` (px per ms), as
/// clusters `(t0, t1, indices)`.
fn clusters(events: &[(u64, u32)], k: f64, slot: f64) -> Vec<(u64, u64, Vec<usize>)> {
    let mut clusters: Vec<(u64, u64, Vec<usize>)> = Vec::new();
    for (i, &(t, _)) in events.iter().enumerate() {
        match clusters.last_mut() {
            Some((_, t1, ix)) if ((t - *t1) as f64) * k < slot => {
                *t1 = t;
                ix.push(i);
            }
            _ => clusters.push((t, t, vec![i])),
        }
    }
    clusters
}

/// Columns inside each burst, a new one when a lane repeats: each event's
/// column, and each cluster's column times.
fn burst_columns(events: &[(u64, u32)], clusters: &[(u64, u64, Vec<usize>)]) -> (Vec<usize>, Vec<Vec<u64>>) {
    let mut col_of = vec![0usize; events.len()];
    let mut cols_of: Vec<Vec<u64>> = Vec::new();
    for (_, _, ix) in clusters {
        let mut cols: Vec<u64> = Vec::new();
        let mut used: Vec<u32> = Vec::new();
        for &i in ix {
            let (t, lane) = events[i];
            if cols.is_empty() || used.contains(&lane) {
                cols.push(t);
                used.clear();
            }
            used.push(lane);
            col_of[i] = cols.len() - 1;
        }
        cols_of.push(cols);
    }
    (col_of, cols_of)
}

/// Long idle stretches between clusters (a minute or more, and more than
/// half the span), drawn as fixed-width gaps.
fn idle_gaps(clusters: &[(u64, u64, Vec<usize>)], start_ms: u64, end_ms: u64) -> Vec<(u64, u64)> {
    let span = (end_ms - start_ms) as f64;
    let mut gaps = Vec::new();
    let mut prev = start_ms;
    for (t0, t1, _) in clusters {
        if t0 - prev >= 60_000 && (t0 - prev) as f64 > span * 0.5 {
            gaps.push((prev, *t0));
        }
        prev = *t1;
    }
    if end_ms - prev >= 60_000 && (end_ms - prev) as f64 > span * 0.5 {
        gaps.push((prev, end_ms));
    }
    gaps
}

/// A break in the linear scale from `.0` to `.1`: an idle gap (`None`) or
/// a burst (`Some((cluster, columns))`).
type Break = (u64, u64, Option<(usize, usize)>);

/// The axis's segments as they are laid left to right.
struct Segments {
    segs: Vec<Seg>,
    /// Where the next segment starts.
    x: f64,
    /// Linear scale, px per ms.
    k: f64,
    slot: f64,
    gap_w: f64,
}

impl Segments {
    fn push(&mut self, t0: u64, t1: u64, w: f64, kind: SegKind) {
        self.segs.push(Seg {
            t0,
            t1,
            x0: self.x,
            x1: self.x + w,
            kind,
        });
        self.x += w;
    }

    /// Linear segments between the `breaks` (a gap, or a burst `(cluster,
    /// columns)`) from `start_ms` to `end_ms`; returns each burst's x.
    fn lay(
        &mut self,
        start_ms: u64,
        end_ms: u64,
        breaks: &[Break],
        cols_of: &[Vec<u64>],
        clusters: usize,
    ) -> Vec<Option<f64>> {
        let mut burst_x0 = vec![None; clusters];
        let mut t = start_ms;
        for &(b0, b1, c) in breaks {
            if b0 > t {
                self.push(t, b0, (b0 - t) as f64 * self.k, SegKind::Linear);
            }
            match c {
                Some((c, cols)) => {
                    burst_x0[c] = Some(self.x);
                    let kind = SegKind::Burst {
                        times: cols_of[c].clone(),
                        slot: self.slot,
                    };
                    self.push(b0, b1, cols as f64 * self.slot, kind);
                }
                None => self.push(b0, b1, self.gap_w, SegKind::Gap),
            }
            t = b1;
        }
        if end_ms > t {
            self.push(t, end_ms, (end_ms - t) as f64 * self.k, SegKind::Linear);
        }
        burst_x0
    }
}

impl Axis {
    /// [`Axis::fit_lanes`] for events all on one lane.
    pub fn fit(times: &[u64], now_ms: u64, x_left: f64, plot_w: f64, style: Style) -> Axis {
        let events: Vec<(u64, u32)> = times.iter().map(|&t| (t, 0)).collect();
        Axis::fit_lanes(&events, now_ms, x_left, plot_w, style)
    }

    /// An axis from `x_left`, `plot_w` pixels wide, for `events` (instant
    /// and lane of each event that draws a mark, in time order), running to
    /// at least `now_ms`. Inside a burst, events on different lanes share a
    /// column until one lane needs a second one: order still reads left to
    /// right, and a request (client → node → client) takes two columns, not
    /// three. [`Axis::event_x`] has each event's x.
    pub fn fit_lanes(events: &[(u64, u32)], now_ms: u64, x_left: f64, plot_w: f64, style: Style) -> Axis {
        let (start_ms, end_ms) = time_span(events, now_ms);
        let span = (end_ms - start_ms) as f64;
        let mut slot = style.slot();
        let mut k = plot_w / span;
        let mut segs = Vec::new();
        let mut event_x = vec![0.0; events.len()];
        let gap_w = style.gap_w().min(plot_w * 0.15);
        let make = |segs, k, event_x| Axis {
            segs,
            k,
            start_ms,
            end_ms,
            x_left,
            plot_w,
            font: style.font,
            right_pad: style.right_pad(),
            event_x,
        };
        for _ in 0..4 {
            let clusters = clusters(events, k, slot);
            let (col_of, cols_of) = burst_columns(events, &clusters);
            let gaps = idle_gaps(&clusters, start_ms, end_ms);
            let is_burst = |c: usize| cols_of[c].len() > 1 || clusters[c].2.len() > 1;
            let burst_cols: usize = (0..clusters.len())
                .filter(|&c| is_burst(c))
                .map(|c| cols_of[c].len())
                .sum();
            let fixed_gaps = gaps.len() as f64 * gap_w;
            // Bursts may take up to half the plot; slots shrink beyond that.
            if burst_cols > 0 {
                slot = slot.min((plot_w - fixed_gaps) * 0.5 / burst_cols as f64);
            }
            let fixed = fixed_gaps + burst_cols as f64 * slot;
            let linear_ms: u64 = span as u64
                - gaps.iter().map(|(a, b)| b - a).sum::<u64>()
                - (0..clusters.len())
                    .filter(|&c| is_burst(c))
                    .map(|c| clusters[c].1 - clusters[c].0)
                    .sum::<u64>();
            let new_k = (plot_w - fixed).max(plot_w * 0.2) / linear_ms.max(1) as f64;
            // Breaks in the linear scale, left to right: idle gaps and bursts.
            let mut breaks: Vec<Break> = gaps.iter().map(|&(a, b)| (a, b, None)).collect();
            breaks.extend(
                (0..clusters.len())
                    .filter(|&c| is_burst(c))
                    .map(|c| (clusters[c].0, clusters[c].1, Some((c, cols_of[c].len())))),
            );
            breaks.sort_by_key(|b| b.0);
            let mut layout = Segments {
                segs: Vec::new(),
                x: x_left,
                k: new_k,
                slot,
                gap_w,
            };
            let burst_x0 = layout.lay(start_ms, end_ms, &breaks, &cols_of, clusters.len());
            segs = layout.segs;
            let converged = (new_k - k).abs() <= k * 1e-9;
            k = new_k;
            let axis = make(segs.clone(), k, Vec::new());
            for (c, (_, _, ix)) in clusters.iter().enumerate() {
                for &i in ix {
                    event_x[i] = match burst_x0[c] {
                        Some(x0) => x0 + (col_of[i] as f64 + 0.5) * slot,
                        None => axis.x(events[i].0),
                    };
                }
            }
            if converged {
                break;
            }
        }
        make(segs, k, event_x)
    }

    /// x at the start of instant `t` (before its events).
    pub fn x(&self, t: u64) -> f64 {
        let t = t.clamp(self.start_ms, self.end_ms);
        match self.segs.iter().find(|s| t <= s.t1) {
            Some(s) => Axis::within(s, t, false),
            None => self.x_left + self.plot_w,
        }
    }

    /// x just after the events of instant `t`.
    pub fn x_after(&self, t: u64) -> f64 {
        let t = t.clamp(self.start_ms, self.end_ms);
        match self.segs.iter().rev().find(|s| s.t0 <= t) {
            Some(s) => Axis::within(s, t, true),
            None => self.x_left,
        }
    }

    fn within(s: &Seg, t: u64, after: bool) -> f64 {
        match &s.kind {
            SegKind::Linear | SegKind::Gap if s.t1 == s.t0 => s.x0,
            SegKind::Linear | SegKind::Gap => s.x0 + (s.x1 - s.x0) * (t - s.t0) as f64 / (s.t1 - s.t0) as f64,
            SegKind::Burst { times, slot } => {
                let n = times.iter().filter(|&&u| if after { u <= t } else { u < t }).count();
                s.x0 + n as f64 * slot
            }
        }
    }

    /// The right end of the plot.
    pub fn x_end(&self) -> f64 {
        self.x_left + self.plot_w
    }

    /// Round instants, at least ~60 px apart (closer when bursts leave
    /// little linear room), on linear stretches only.
    pub fn ticks(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for share in [1.0, 0.6, 0.35] {
            let min_px = self.font * 4.5 * share;
            let step = TICK_STEPS
                .into_iter()
                .find(|&s| s as f64 * self.k >= min_px)
                .unwrap_or(3_600_000);
            out.clear();
            let mut last_end = f64::NEG_INFINITY;
            let mut t = self.start_ms.div_ceil(step) * step;
            while t <= self.end_ms {
                // On a linear stretch, and not at an instant a break covers.
                let linear = self
                    .segs
                    .iter()
                    .any(|s| s.kind == SegKind::Linear && s.t0 <= t && t <= s.t1)
                    && !self
                        .segs
                        .iter()
                        .any(|s| s.kind != SegKind::Linear && s.t0 <= t && t <= s.t1);
                let x = self.x(t);
                // Far enough from the last that their labels do not touch,
                // and whole within the SVG.
                let half = text_w(&seconds(t), self.font) / 2.0;
                let whole = x + half <= self.x_end() + self.right_pad;
                if linear && whole && x - half >= last_end + self.font * 0.8 {
                    out.push(t);
                    last_end = x + half;
                }
                t += step;
            }
            if out.len() >= 3 {
                break;
            }
        }
        out
    }

    /// The axis's breaks, for drawing.
    pub fn breaks(&self, lang: Lang) -> Vec<AxisBreak> {
        self.segs
            .iter()
            .filter_map(|s| {
                let (kind, label, title) = match &s.kind {
                    SegKind::Linear => return None,
                    SegKind::Gap => {
                        let len = seconds(s.t1 - s.t0);
                        let title = match lang {
                            Lang::En => format!("{len} with nothing happening, squeezed"),
                            Lang::Zh => format!("{len} 无事发生，已压缩"),
                        };
                        ("gap", Some(len), title)
                    }
                    SegKind::Burst { times, .. } => {
                        let when = if s.t0 == s.t1 {
                            seconds(s.t0)
                        } else {
                            format!("{}–{}", seconds(s.t0), seconds(s.t1))
                        };
                        let title = match lang {
                            Lang::En => format!("{} events at {when}, spread out so each can be seen", times.len()),
                            Lang::Zh => format!("{when} 的 {} 个事件，展开以便逐个查看", times.len()),
                        };
                        ("burst", None, title)
                    }
                };
                Some(AxisBreak {
                    x0: s.x0,
                    x1: s.x1,
                    kind,
                    label,
                    title,
                    from_ms: s.t0,
                    to_ms: s.t1,
                })
            })
            .collect()
    }
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

fn replies_text(replies: &[Reply]) -> String {
    replies
        .iter()
        .map(|r| r.to_cli().replace('\n', " "))
        .collect::<Vec<_>>()
        .join(" | ")
}

fn commands_text(commands: &[Vec<String>]) -> String {
    commands.iter().map(|c| command_line(c)).collect::<Vec<_>>().join(" | ")
}

/// Lay `trace` out, with `now_ms` as the present (open bars end there).
pub fn layout(trace: &Trace, now_ms: u64, lang: Lang) -> Layout {
    layout_zoomed(trace, now_ms, lang, 1.0)
}

/// Fold marks that land within a pixel of the previous kept mark on the
/// same lane (same kind of mark) into it: the tooltip counts them, and the
/// DOM stays bounded by the plot's width, not by the trace's length.
/// Arrows get the same treatment. Returns how many marks were folded.
pub fn merge_marks(marks: &mut Vec<Mark>, arrows: &mut Vec<Arrow>) -> usize {
    let before = marks.len();
    let mut kept: Vec<Mark> = Vec::with_capacity(marks.len());
    let mut last: HashMap<(usize, std::mem::Discriminant<MarkKind>), usize> = HashMap::new();
    for m in marks.drain(..) {
        let slot = (m.lane, std::mem::discriminant(&m.kind));
        match last.get(&slot) {
            Some(&i) if (m.x - kept[i].x).abs() < 1.0 => kept[i].count += m.count,
            _ => {
                last.insert(slot, kept.len());
                kept.push(m);
            }
        }
    }
    for m in kept.iter_mut().filter(|m| m.count > 1) {
        m.title.push_str(&format!(" (+{})", m.count - 1));
    }
    *marks = kept;
    let mut prev: HashMap<(u8, i64, i64), f64> = HashMap::new();
    arrows.retain(|a| {
        let key = (a.kind as u8, a.y1 as i64, a.y2 as i64);
        match prev.get(&key) {
            Some(&x) if (a.x1 - x).abs() < 1.0 => false,
            _ => {
                prev.insert(key, a.x1);
                true
            }
        }
    });
    before - marks.len()
}

/// [`layout`] with the time axis `zoom` (≥ 1) times as wide as the view.
pub fn layout_zoomed(trace: &Trace, now_ms: u64, lang: Lang, zoom: f64) -> Layout {
    layout_in(trace, now_ms, lang, 960.0, zoom, Style::NORMAL)
}

/// The leftmost row (of `rows`, each holding where its last text ends)
/// where a text from `x0`, `w` wide, fits; that row now ends after it.
fn place(rows: &mut [f64], x0: f64, w: f64, gap: f64) -> Option<usize> {
    let i = rows.iter().position(|&end| end + gap <= x0)?;
    rows[i] = x0 + w;
    Some(i)
}

/// Who, in words: `B and C`, `A, B and C`; `B 和 C` in Chinese.
fn who_list(who: &[String], lang: Lang) -> String {
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

/// A lane's rows of bars, each the keys drawn on it.
type Rows<'a> = Vec<Vec<&'a str>>;

/// The row of `key` in `rows` (0 when it has none).
fn row_of(rows: &Rows, key: &str) -> usize {
    rows.iter().position(|row| row.contains(&key)).unwrap_or(0)
}

/// The rows the lanes need: lock keys per node, believed keys per client,
/// in order of appearance (keys never held there at the same time share a
/// row, see [`share_rows`]); and whether the resource has a lane.
struct LaneKeys<'a> {
    node: BTreeMap<u32, Rows<'a>>,
    client: BTreeMap<u32, Rows<'a>>,
    resource: bool,
}

/// A key's life on one lane: its name, its first and last lock (or belief)
/// event, and whether it was still held after the last.
type KeySpan<'a> = (&'a str, u64, u64, bool);

fn lane_keys(events: &[Event]) -> LaneKeys<'_> {
    // A key's life on a node (a lock) or a client (a belief).
    fn lived<'a>(spans: &mut Vec<KeySpan<'a>>, key: &'a str, at: u64, held: bool) {
        match spans.iter_mut().find(|k| k.0 == key) {
            Some(k) => (k.2, k.3) = (at, held),
            None => spans.push((key, at, at, held)),
        }
    }
    let mut node: BTreeMap<u32, Vec<KeySpan<'_>>> = BTreeMap::new();
    let mut client: BTreeMap<u32, Vec<KeySpan<'_>>> = BTreeMap::new();
    let mut resource = false;
    for e in events {
        match (&e.kind, e.actor) {
            (EventKind::Lock { key, change, .. }, Actor::Node(n)) => {
                let held = !matches!(change, LockChange::Removed { .. });
                lived(node.entry(n).or_default(), key, e.at_ms, held);
            }
            (EventKind::Belief { key, holds }, Actor::Client(c)) => {
                lived(client.entry(c).or_default(), key, e.at_ms, *holds);
            }
            (EventKind::Write { .. } | EventKind::WriteSent { .. }, _) => resource = true,
            _ => {}
        }
    }
    fn rows<'a>(spans: BTreeMap<u32, Vec<KeySpan<'a>>>) -> BTreeMap<u32, Rows<'a>> {
        spans.into_iter().map(|(a, keys)| (a, share_rows(&keys))).collect()
    }
    LaneKeys {
        node: rows(node),
        client: rows(client),
        resource,
    }
}

/// The bar rows of a node lane standing for `members`: one node's own
/// rows, or for a group of nodes a row per key any of them held. Worked
/// out once per lane, with the lanes ([`build_lanes`]).
fn group_rows<'a>(members: &[u32], node_keys: &BTreeMap<u32, Rows<'a>>) -> Rows<'a> {
    if let [n] = members {
        return node_keys.get(n).cloned().unwrap_or_default();
    }
    let mut keys: Vec<&str> = Vec::new();
    for &k in members.iter().filter_map(|n| node_keys.get(n)).flatten().flatten() {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter().map(|k| vec![k]).collect()
}

/// Bar rows for a node's keys: each key, in order of appearance, on the
/// first row whose keys were all gone before it came, else on a new row.
/// A Redlock race takes `lock:order:1001`, then `1002`, then `1003`, one
/// after the other: one row, not three, so its ten lanes fit a projected
/// screen; keys held side by side (lesson 45's four locks) keep a row
/// each. A key still held at the end keeps its row to the end.
fn share_rows<'a>(keys: &[KeySpan<'a>]) -> Rows<'a> {
    // Each row's keys, and when its latest key was gone (None: held).
    let mut rows: Vec<(Vec<&str>, Option<u64>)> = Vec::new();
    for &(key, first, last, held) in keys {
        let gone = (!held).then_some(last);
        match rows.iter_mut().find(|(_, free)| free.is_some_and(|at| at < first)) {
            Some(row) => {
                row.0.push(key);
                row.1 = gone;
            }
            None => rows.push((vec![key], gone)),
        }
    }
    rows.into_iter().map(|(keys, _)| keys).collect()
}

/// A lane per client, per node, and for the resource when it was written
/// to, stacked from `top`, each tall enough for its rows; also each lane's
/// bar rows, and the y below the last.
fn build_lanes<'a>(
    names: &Names,
    keys: LaneKeys<'a>,
    lang: Lang,
    style: Style,
    top: f64,
) -> (Vec<Lane>, Vec<Rows<'a>>, f64) {
    let LaneKeys {
        node,
        mut client,
        resource,
    } = keys;
    let mut lanes = Vec::new();
    let mut lane_rows = Vec::new();
    let mut y = top;
    let mut push_lane = |kind, label: String, rows: Rows<'a>, members: Vec<u32>| {
        let bar_rows = rows.len().clamp(1, MAX_ROWS) as f64;
        lane_rows.push(rows);
        let height = 4.0 + bar_rows * style.bar_row() + 2.0 * style.label_row() + 4.0;
        let mark_y = y + 4.0 + style.bar_row() / 2.0;
        lanes.push(Lane {
            kind,
            label,
            role: None,
            members,
            y,
            height,
            mark_y,
        });
        y += height;
    };
    for (i, name) in names.clients.iter().enumerate() {
        let i = i as u32;
        let label = if name.chars().count() <= 2 {
            format!("{} {name}", Text::Client.get(lang))
        } else {
            name.clone()
        };
        let rows = client.remove(&i).unwrap_or_default();
        push_lane(LaneKind::Client(i), label, rows, Vec::new());
    }
    for (first, members, label) in node_groups(&names.nodes) {
        let rows = group_rows(&members, &node);
        let members = if members.len() > 1 { members } else { Vec::new() };
        push_lane(LaneKind::Node(first), label, rows, members);
    }
    if resource {
        push_lane(
            LaneKind::Resource,
            Text::Resource.get(lang).to_owned(),
            Vec::new(),
            Vec::new(),
        );
    }
    (lanes, lane_rows, y)
}

/// Most node lanes a timeline draws one per node: a world with more
/// (lesson 45: a Redis, three Redlock masters, three etcd members, three
/// ZooKeeper servers) gets one lane per group of nodes instead.
const MAX_NODE_LANES: usize = 6;

/// The node lanes: (first node, its nodes, label). One per node, or, past
/// [`MAX_NODE_LANES`], one per run of nodes named alike (`r1`–`r3` →
/// `r1–3`, `etcd1`…`etcd3` → `etcd1–3`).
pub fn node_groups(nodes: &[String]) -> Vec<(u32, Vec<u32>, String)> {
    let alone = || {
        (0..nodes.len() as u32)
            .map(|i| (i, vec![i], nodes[i as usize].clone()))
            .collect()
    };
    if nodes.len() <= MAX_NODE_LANES {
        return alone();
    }
    let stem = |name: &str| name.trim_end_matches(|c: char| c.is_ascii_digit()).to_owned();
    let mut out: Vec<(u32, Vec<u32>, String)> = Vec::new();
    for (i, name) in nodes.iter().enumerate() {
        let i = i as u32;
        match out.last_mut() {
            Some((first, members, _)) if stem(&nodes[*first as usize]) == stem(name) && stem(name) != *name => {
                members.push(i)
            }
            _ => out.push((i, vec![i], name.clone())),
        }
    }
    for (first, members, label) in &mut out {
        if let (true, Some(last)) = (members.len() > 1, members.last()) {
            let tail = &nodes[*last as usize][stem(label).len()..];
            *label = format!("{}–{tail}", nodes[*first as usize]);
        }
    }
    out
}

/// The axis fitted to the events that draw something (bursts share columns
/// across lanes), and every event's x: an event without a mark of its own
/// sits where the last marked event of its instant sits.
fn fit_events(events: &[Event], now_ms: u64, label_w: f64, plot_w: f64, style: Style) -> (Axis, Vec<f64>) {
    let lane_key = |a: Actor| match a {
        Actor::Client(c) => c,
        Actor::Node(n) => 1_000 + n,
        Actor::Resource => 2_000,
        Actor::World => 3_000,
    };
    let mut order: Vec<usize> = (0..events.len()).filter(|&i| has_slot(&events[i].kind)).collect();
    order.sort_by_key(|&i| events[i].at_ms);
    let slotted: Vec<(u64, u32)> = order
        .iter()
        .map(|&i| (events[i].at_ms, lane_key(events[i].actor)))
        .collect();
    let axis = Axis::fit_lanes(&slotted, now_ms, label_w, plot_w, style);
    let mut x_of: HashMap<usize, f64> = order.iter().zip(&axis.event_x).map(|(&i, &x)| (i, x)).collect();
    let mut last_x: HashMap<u64, f64> = HashMap::new();
    let xs: Vec<f64> = (0..events.len())
        .map(|i| {
            let e = &events[i];
            match x_of.remove(&i) {
                Some(x) => {
                    last_x.insert(e.at_ms, x);
                    x
                }
                None => last_x.get(&e.at_ms).copied().unwrap_or_else(|| axis.x(e.at_ms)),
            }
        })
        .collect();
    (axis, xs)
}

/// Lay `trace` out in a view `width` CSS pixels wide, the time axis `zoom`
/// (≥ 1) times that, with `now_ms` as the present (open bars end there).
pub fn layout_in(trace: &Trace, now_ms: u64, lang: Lang, width: f64, zoom: f64, style: Style) -> Layout {
    let (mut builder, xs) = Builder::new(trace, now_ms, lang, width, zoom, style);
    for (i, (e, &x)) in trace.events.iter().zip(&xs).enumerate() {
        builder.event(i, e, x);
    }
    builder.finish()
}

/// Callouts: violation titles first (always shown, moved left rather than
/// cut off at the edge), then the sentences, in time order, each in the
/// first callout row where it fits. Also how many rows were used.
fn place_callouts(
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
fn mark_labels(marks: &[Mark], lanes: &[Lane], style: Style, plot_end: f64) -> (Vec<Label>, Vec<[f64; 2]>) {
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
fn bar_labels(bars: &[Bar], style: Style, plot_end: f64) -> Vec<Label> {
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
fn legend_kinds(
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
fn place_legend(
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

/// How many bar rows a lane has (from its height).
fn bar_rows_of(lane: &Lane, style: Style) -> f64 {
    ((lane.height - 8.0 - 2.0 * style.label_row()) / style.bar_row())
        .round()
        .max(1.0)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::{Client, SimLab};

    #[test]
    fn violation_bands_explain_themselves_in_the_pages_language() {
        let l = crate::catalog::find("05").unwrap();
        let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
        let (en, zh) = (
            layout(&s.trace(), s.now_ms(), Lang::En),
            layout(&s.trace(), s.now_ms(), Lang::Zh),
        );
        assert!(!en.bands.is_empty());
        for (e, z) in en.bands.iter().zip(&zh.bands) {
            assert!(e.explain.is_ascii() && !e.explain.is_empty(), "{}", e.explain);
            assert!(!z.explain.is_ascii(), "{}", z.explain);
            assert!(
                z.title.contains(&e.explain),
                "the tooltip keeps core's sentence: {}",
                z.title
            );
        }
    }

    /// Lesson `id` laid out at its end.
    fn at_end(id: &str, lang: Lang) -> Layout {
        let l = crate::catalog::find(id).unwrap();
        let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
        layout(&s.trace(), s.now_ms(), lang)
    }

    #[test]
    fn four_lock_services_fit_one_lane_per_group() {
        let l = at_end("45", Lang::En);
        let lanes: Vec<(&str, Option<&str>)> = (l.lanes.iter())
            .map(|l| (l.label.as_str(), l.role.as_deref()))
            .collect();
        assert_eq!(
            lanes,
            [
                ("client A", None),
                ("client B", None),
                ("redis", None),
                ("r1–3", None),
                ("etcd1–3", Some("etcd1 leads · term 1")),
                ("zk1–3", Some("zk1 leads · epoch 1")),
                ("resource", None),
            ]
        );
        let redlock: Vec<&str> = (l.bars.iter())
            .filter(|b| !b.belief && b.key == "redlock:order:1001")
            .map(|b| b.owner_name.as_str())
            .collect();
        assert_eq!(redlock, ["A", "B"], "one bar per owner for the three masters' copies");
        let headings: Vec<&str> = l.bands.iter().map(|b| b.heading.as_str()).collect();
        assert_eq!(
            headings,
            ["two holders of 4 locks (A, B)", "stale write accepted (A, B)"],
            "the four services' overlaps share one band"
        );
        let zh = at_end("45", Lang::Zh);
        assert_eq!(zh.bands[0].heading, "4 把锁各有两个持有者（A、B）");
        assert_eq!(zh.lanes[4].role.as_deref(), Some("etcd1 领导 · 任期 1"));
    }

    #[test]
    fn an_election_moves_the_leader_marker() {
        let l = at_end("43", Lang::En);
        let roles: Vec<(&str, Option<&str>)> = (l.lanes.iter())
            .filter(|l| matches!(l.kind, LaneKind::Node(_)))
            .map(|l| (l.label.as_str(), l.role.as_deref()))
            .collect();
        assert_eq!(
            roles,
            [
                ("etcd1", Some("down")),
                ("etcd2", Some("leader · term 2")),
                ("etcd3", None)
            ]
        );
        assert!(
            l.marks
                .iter()
                .any(|m| m.label.as_deref() == Some("etcd2 elected · term 2")),
            "the election is marked where it happened"
        );
        let zk = at_end("44", Lang::Zh);
        let roles: Vec<Option<&str>> = zk.lanes[2..5].iter().map(|l| l.role.as_deref()).collect();
        assert_eq!(
            roles,
            [None, Some("领导者 · 纪元 2"), None],
            "zk1, cut off, leads no more; zk2 leads epoch 2"
        );
    }

    #[test]
    fn node_lanes_group_only_past_six_nodes() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let five = node_groups(&names(&["r1", "r2", "r3", "r4", "r5"]));
        assert_eq!(five.len(), 5);
        let ten = node_groups(&names(&[
            "redis", "r1", "r2", "r3", "etcd1", "etcd2", "etcd3", "zk1", "zk2", "zk3",
        ]));
        let labels: Vec<&str> = ten.iter().map(|g| g.2.as_str()).collect();
        assert_eq!(labels, ["redis", "r1–3", "etcd1–3", "zk1–3"]);
        assert_eq!(ten[2].0, 4);
        assert_eq!(ten[2].1, [4, 5, 6]);
    }

    #[test]
    fn ten_thousand_events_stay_within_a_bounded_dom() {
        let mut lab = SimLab::new();
        for i in 0..3_400 {
            lab.run(Client::from_index(i % 3), &format!("SET k{i} v"));
        }
        let trace = lab.trace();
        assert!(trace.events.len() >= 3_400);
        let mut big = trace.clone();
        while big.events.len() < 10_000 {
            let mut more = trace.events.clone();
            let n = big.events.len() as u64;
            for e in &mut more {
                e.step += n;
            }
            big.events.extend(more);
        }
        let l = layout(&big, 0, Lang::En);
        assert!(
            l.marks.len() <= 3 * 900,
            "{} marks for {} events",
            l.marks.len(),
            big.events.len()
        );
        assert!(l.merged > 5_000);
        let z = layout_zoomed(&big, 0, Lang::En, 4.0);
        assert!(
            z.width > l.width * 3.0 && z.marks.len() > l.marks.len(),
            "{} {}",
            z.marks.len(),
            l.marks.len()
        );
    }

    #[test]
    fn seconds_read_naturally() {
        assert_eq!(seconds(0), "0 s");
        assert_eq!(seconds(30_000), "30 s");
        assert_eq!(seconds(1_500), "1.5 s");
        assert_eq!(seconds(250), "0.25 s");
    }

    #[test]
    fn the_axis_is_linear_between_breaks_and_spreads_bursts() {
        let st = Style::NORMAL;
        let axis = Axis::fit(&[0, 0, 0, 10_000, 31_000], 31_000, 150.0, 800.0, st);
        let ticks = axis.ticks();
        assert!(ticks.len() >= 4, "{ticks:?}");
        let gaps: Vec<f64> = ticks
            .windows(2)
            .map(|w| (axis.x(w[1]) - axis.x(w[0])) / (w[1] - w[0]) as f64)
            .collect();
        // The burst at 0 sits before the first tick after it; every pair
        // of ticks after that is equally far apart per millisecond.
        for g in &gaps[1..] {
            assert!((g - axis.k).abs() < 1e-9, "{gaps:?} k = {}", axis.k);
        }
        let e = &axis.event_x;
        assert!(e[0] < e[1] && e[1] < e[2] && e[2] < axis.x_after(0), "{e:?}");
        assert!(
            e[1] - e[0] >= 20.0,
            "a burst's events get a slot each on one lane: {e:?}"
        );
        assert!(axis.x_after(0) < axis.x(5_000) && axis.x(5_000) < e[3]);
        // On different lanes, a burst's events share columns.
        let lanes = Axis::fit_lanes(&[(0, 0), (1, 1000), (2, 0)], 10_000, 150.0, 800.0, st);
        assert_eq!(lanes.event_x[0], lanes.event_x[1]);
        assert!(lanes.event_x[2] > lanes.event_x[1]);
        assert!((axis.x_end() - 950.0).abs() < 1e-6);
        assert!(
            axis.x(31_000) <= axis.x_end() && axis.x(31_000) > axis.x_end() - 40.0,
            "fitted, not padded"
        );
        assert_eq!(axis.breaks(Lang::En).len(), 1);
        // Fitted to the events: 2 s of events fill the plot, no padding to 30 s.
        let short = Axis::fit(&[0, 500, 2_000], 2_000, 150.0, 800.0, st);
        assert!(short.end_ms <= 2_200, "{}", short.end_ms);
        // 20 ms of events: a millisecond axis, no burst needed.
        let ms = Axis::fit(&[0, 2, 5, 9, 20], 20, 150.0, 800.0, st);
        assert!(
            ms.breaks(Lang::En).is_empty() && ms.end_ms < 30,
            "{:?}",
            ms.breaks(Lang::En)
        );
    }

    #[test]
    fn long_idle_gaps_are_squeezed_with_their_length_written() {
        let axis = Axis::fit(&[100_000, 101_000, 700_000], 700_000, 150.0, 800.0, Style::NORMAL);
        assert_eq!(
            axis.start_ms, 100_000,
            "the idle time before the first event is not on the axis"
        );
        let b = axis.breaks(Lang::En);
        let gap = b.iter().find(|b| b.kind == "gap").expect("a squeezed gap");
        assert_eq!(gap.label.as_deref(), Some("599 s"));
        assert!(gap.x1 - gap.x0 < 100.0);
        assert!(
            axis.x(101_000) - axis.x(100_000) > 100.0,
            "the busy second keeps its width"
        );
    }

    /// Every pair of labels (mark, bar, callout) on one line is apart.
    fn assert_no_overlap(l: &Layout, what: &str) {
        let mut all: Vec<&Label> = l.labels.iter().collect();
        all.extend(l.callouts.iter().map(|c| &c.label));
        for (i, a) in all.iter().enumerate() {
            assert!(
                a.x >= 0.0 && a.x + a.w <= l.width + 0.5,
                "{what}: {a:?} outside 0..{}",
                l.width
            );
            for b in &all[i + 1..] {
                let same_line = (a.y - b.y).abs() < l.style.font;
                let apart = a.x + a.w <= b.x || b.x + b.w <= a.x;
                assert!(!same_line || apart, "{what}: {a:?} overlaps {b:?}");
            }
        }
    }

    /// Lesson 18's five clients each send every request to five masters:
    /// a burst is labelled once with its count, and a release by its key.
    #[test]
    fn a_request_to_every_master_is_labelled_once_with_its_count() {
        let l = crate::catalog::find("18").unwrap();
        let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
        for (w, st) in [
            (990.0, Style::NORMAL),
            (1150.0, Style::NORMAL),
            (1240.0, Style::PRESENT),
        ] {
            let lay = layout_in(&s.trace(), s.now_ms(), Lang::En, w, 1.0, st);
            let marks: Vec<&Label> = lay.labels.iter().filter(|l| l.class == "mark-label").collect();
            let texts: Vec<&str> = marks.iter().map(|l| l.text.as_str()).collect();
            assert!(texts.contains(&"SET lock:order:1001 ×5"), "at {w} px: {texts:?}");
            assert!(texts.contains(&"EVAL lock:order:1002 ×5"), "at {w} px: {texts:?}");
            for (i, a) in marks.iter().enumerate() {
                for b in &marks[i + 1..] {
                    // A lane's two label rows are one row apart.
                    let one_lane = (a.y - b.y).abs() <= st.label_row() + 0.5;
                    assert!(
                        !one_lane || a.text != b.text || (a.x - b.x).abs() >= st.font,
                        "at {w} px, the same words twice, one above the other: {a:?} {b:?}"
                    );
                }
            }
        }
    }

    /// Keys share a bar row only when they are never held there at once:
    /// in no lesson do two keys' bars on one row overlap (an open bar to
    /// its deadline), on a node or a client. Lesson 18's masters take three
    /// keys one after the other, and its clients believe in two, on one
    /// row each.
    #[test]
    fn keys_share_a_bar_row_only_one_after_the_other() {
        for l in crate::catalog::all() {
            let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
            let lay = layout_in(&s.trace(), s.now_ms(), Lang::En, 1150.0, 1.0, Style::NORMAL);
            let mut rows: HashMap<(usize, i64), Vec<&Bar>> = HashMap::new();
            for b in &lay.bars {
                rows.entry((b.lane, b.y.round() as i64)).or_default().push(b);
            }
            for bars in rows.values() {
                for (i, a) in bars.iter().enumerate() {
                    for b in bars[i + 1..].iter().filter(|b| b.key != a.key) {
                        let end = |b: &Bar| b.deadline_x.map_or(b.x1, |d| d.max(b.x1));
                        assert!(
                            end(a) <= b.x0 + 0.5 || end(b) <= a.x0 + 0.5,
                            "lesson {}: {a:?} and {b:?} share a row and overlap",
                            l.id
                        );
                    }
                }
            }
            if l.id == "18" {
                // Each master holds 1001, 1002, 1003 in turn; A believes it
                // holds 1001, then 1003.
                for (i, lane) in lay.lanes.iter().enumerate() {
                    let n = rows.keys().filter(|(l, _)| *l == i).count();
                    assert!(n <= 1, "lesson 18, {}: {n} bar rows for keys held in turn", lane.label);
                }
            }
        }
    }

    /// A race's arrows are a texture drawn faint; a story's stay lines, and
    /// zooming into a race thins its arrows back into lines.
    #[test]
    fn only_races_are_dense() {
        let dense = |id: &str, zoom: f64| {
            let l = crate::catalog::find(id).unwrap();
            let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
            layout_in(&s.trace(), s.now_ms(), Lang::En, 1150.0, zoom, Style::NORMAL).dense
        };
        for id in ["18", "25", "26", "27"] {
            assert!(dense(id, 1.0), "lesson {id}");
        }
        for id in ["01", "05", "15", "17", "19", "37", "45"] {
            assert!(!dense(id, 1.0), "lesson {id}");
        }
        assert!(!dense("18", 8.0), "zoomed in, a race's arrows are lines again");
    }

    #[test]
    fn lessons_lay_out_without_overlapping_labels_and_with_titled_bands() {
        let compact = Style {
            compact: true,
            ..Style::sized(13.0)
        };
        for id in ["02", "05", "13", "15", "16", "17", "18", "22", "25", "33", "36", "45"] {
            let l = crate::catalog::find(id).unwrap();
            let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
            for (w, st) in [
                (990.0, Style::NORMAL),
                (1150.0, Style::NORMAL),
                (1240.0, Style::PRESENT),
                (1240.0, compact),
            ] {
                for lang in [Lang::En, Lang::Zh] {
                    let lay = layout_in(&s.trace(), s.now_ms(), lang, w, 1.0, st);
                    assert_no_overlap(&lay, &format!("lesson {id} at {w} px, {lang:?}"));
                    // No tick's label runs past the SVG, where the panel
                    // would cut it ("0.02 s" at the end of lesson 15's).
                    for t in &lay.ticks {
                        assert!(
                            t.x + text_w(&t.label, st.font) / 2.0 <= lay.width,
                            "lesson {id} at {w} px: tick {} at {} of {}",
                            t.label,
                            t.x,
                            lay.width
                        );
                    }
                    for b in &lay.bands {
                        assert!(
                            lay.callouts
                                .iter()
                                .any(|c| c.kind == "violation" && c.label.text.contains(&b.heading)),
                            "lesson {id}: band {} has its title drawn",
                            b.heading
                        );
                    }
                    // A legend for what was drawn (lesson 36 only narrates).
                    assert_eq!(lay.legend.is_empty(), lay.marks.is_empty(), "lesson {id}");
                }
            }
        }
    }

    /// Presenter mode's last resort gives lesson 45 (two clients holding
    /// four locks each) the room a 720 px projector lacks: at 13 px its
    /// lanes take a fifth less height, and its two bands keep their titles.
    #[test]
    fn compact_rows_take_back_a_fifth_of_lesson_45s_height() {
        let l = crate::catalog::find("45").unwrap();
        let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
        let at = |st| layout_in(&s.trace(), s.now_ms(), Lang::En, 1240.0, 1.0, st);
        let (roomy, tight) = (
            at(Style::sized(13.0)),
            at(Style {
                compact: true,
                ..Style::sized(13.0)
            }),
        );
        let h = |l: &Layout| l.lanes_bottom;
        assert!(
            h(&tight) <= h(&roomy) * 0.8,
            "compact {} vs {} px",
            h(&tight),
            h(&roomy)
        );
        let titles = tight.callouts.iter().filter(|c| c.kind == "violation").count();
        assert_eq!(titles, tight.bands.len());
    }

    #[test]
    fn callouts_say_what_happened_in_the_pages_language() {
        let l = crate::catalog::find("05").unwrap();
        let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
        let en = layout_in(&s.trace(), s.now_ms(), Lang::En, 1150.0, 1.0, Style::NORMAL);
        let texts: Vec<&str> = en.callouts.iter().map(|c| c.label.text.as_str()).collect();
        assert!(
            texts.iter().any(|t| t.contains("removed") && t.contains("'s lock")),
            "{texts:?}"
        );
        // B and C holding together: a titled band now (lesson 05 records the
        // overlap as a violation), or the callout where there is room.
        assert!(
            texts
                .iter()
                .any(|t| t.contains("B and C both hold") || t.contains("two holders (B, C)")),
            "{texts:?}"
        );
        let zh = layout_in(&s.trace(), s.now_ms(), Lang::Zh, 1150.0, 1.0, Style::NORMAL);
        assert!(
            zh.callouts.iter().all(|c| !c.label.text.contains("expired")),
            "{:?}",
            zh.callouts
        );
        assert!(
            zh.legend.iter().all(|i| i.text.chars().any(|c| c >= '\u{4e00}')),
            "{:?}",
            zh.legend
        );
    }

    #[test]
    fn a_lab_trace_becomes_lanes_bars_and_marks() {
        let mut lab = SimLab::new();
        lab.run(Client::A, "SET lock:order:1 token-A-111 NX PX 30000");
        lab.run(Client::B, "SET lock:order:1 token-B-222 NX PX 30000");
        lab.advance(31_000);
        lab.run(Client::B, "SET lock:order:1 token-B-222 NX PX 30000");
        let l = layout(lab.trace(), lab.now_ms(), Lang::En);
        let labels: Vec<&str> = l.lanes.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["client A", "client B", "client C", "redis"]);
        assert_eq!(l.bars.len(), 2);
        let (a, b) = (&l.bars[0], &l.bars[1]);
        assert_eq!(
            (a.owner, a.end, b.owner, b.end),
            (Some(0), Some(BarEnd::Expired), Some(1), None)
        );
        assert!(a.x1 <= b.x0 && b.x1 >= b.x0 && a.lane == 3 && b.lane == 3);
        assert!(b.deadline_x.unwrap() > b.x1);
        let tones: Vec<_> = l
            .marks
            .iter()
            .filter_map(|m| match m.kind {
                MarkKind::Command(t) => Some((m.lane, t)),
                _ => None,
            })
            .collect();
        assert_eq!(tones, [(0, Tone::Ok), (1, Tone::Nil), (1, Tone::Ok)]);
        assert!(l.marks.iter().any(|m| m.kind
            == MarkKind::Expired {
                key: "lock:order:1".into()
            }
            && m.lane == 3));
        assert!(l.bands.is_empty());
        let short = |line: &str| {
            let argv: Vec<String> = locklab_core::cli::parse(line)
                .unwrap()
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            super::short(&[argv])
        };
        assert_eq!(short("set lock:order:1 token-A-111 NX PX 30000"), "SET lock:order:1");
        assert_eq!(short("get a-very-long-key-name-indeed"), "GET a-very-long-key-n…");
        let release = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end";
        assert_eq!(
            short(&format!("EVAL \"{release}\" 1 lock:order:1 tok")),
            "EVAL lock:order:1"
        );
        assert_eq!(short("evalsha 0123abcd 1 lock tok"), "EVALSHA lock");
        assert_eq!(short("FCALL release 1 lock tok"), "FCALL lock");
        assert_eq!(short("EVAL \"return 1\" 0"), "EVAL", "no key: the name alone");
        assert_eq!(short("EVAL \"return 1\" x"), "EVAL", "a bad key count: the name alone");
        // What a free-play console may type: a key count past usize, or
        // past the arguments, and a key too long for a label.
        assert_eq!(short("EVAL \"return 1\" 99999999999999999999999"), "EVAL");
        assert_eq!(short("EVAL \"return 1\" 3"), "EVAL");
        assert_eq!(
            short(&format!("EVAL s 1 {}", "k".repeat(100_000))),
            format!("EVAL {}…", "k".repeat(16))
        );
        assert_eq!(short("PING"), "PING");
    }
}
