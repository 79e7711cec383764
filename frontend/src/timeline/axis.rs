//! The time axis: fitted to the events, linear between the breaks where a
//! burst is spread out or a long idle gap squeezed (see the module docs of
//! [`timeline`](super)), and its ticks.

use super::*;

/// Tick spacings to choose from, in ms.
pub(super) const TICK_STEPS: [u64; 20] = [
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
    1_800_000,
];

#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    pub x: f64,
    pub label: String,
    pub ms: u64,
}

/// Whether an event draws a mark, and so needs room of its own on the axis.
pub(super) fn has_slot(kind: &EventKind) -> bool {
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
pub(super) enum SegKind {
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
pub(super) struct Seg {
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
pub(super) fn time_span(events: &[(u64, u32)], now_ms: u64) -> (u64, u64) {
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
pub(super) fn clusters(events: &[(u64, u32)], k: f64, slot: f64) -> Vec<(u64, u64, Vec<usize>)> {
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
pub(super) fn burst_columns(events: &[(u64, u32)], clusters: &[(u64, u64, Vec<usize>)]) -> (Vec<usize>, Vec<Vec<u64>>) {
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
pub(super) fn idle_gaps(clusters: &[(u64, u64, Vec<usize>)], start_ms: u64, end_ms: u64) -> Vec<(u64, u64)> {
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
pub(super) type Break = (u64, u64, Option<(usize, usize)>);

/// The axis's segments as they are laid left to right.
pub(super) struct Segments {
    segs: Vec<Seg>,
    /// Where the next segment starts.
    x: f64,
    /// Linear scale, px per ms.
    k: f64,
    slot: f64,
    gap_w: f64,
}

impl Segments {
    pub(super) fn push(&mut self, t0: u64, t1: u64, w: f64, kind: SegKind) {
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
    pub(super) fn lay(
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

    pub(super) fn within(s: &Seg, t: u64, after: bool) -> f64 {
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

/// The axis fitted to the events that draw something (bursts share columns
/// across lanes), and every event's x: an event without a mark of its own
/// sits where the last marked event of its instant sits.
pub(super) fn fit_events(events: &[Event], now_ms: u64, label_w: f64, plot_w: f64, style: Style) -> (Axis, Vec<f64>) {
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
