//! The timeline's SVG layers: lanes, the time axis, lock bars, labels, the
//! legend, and each lane's marks ([`LaneMarks`]). Split from
//! `view/timeline.rs`, which keeps the component, its measuring, panning and
//! zoom (issue 36: one seam a file).

use super::*;

#[derive(Properties, PartialEq)]
pub(super) struct LaneMarksProps {
    pub(super) marks: Rc<Vec<Mark>>,
    pub(super) r: f64,
}

/// One lane's marks. Its props compare by value, so a render that leaves a
/// lane's marks as they were does not touch that lane's DOM.
#[function_component(LaneMarks)]
pub(super) fn lane_marks(props: &LaneMarksProps) -> Html {
    let r = props.r;
    let marks = props.marks.iter().map(|m| {
        let (class, testid, shape) = match &m.kind {
            MarkKind::Command(t) | MarkKind::Reply(t) | MarkKind::Executed(t) => {
                let rr = if matches!(m.kind, MarkKind::Command(_)) { r } else { r * 0.7 };
                (t.class(), "timeline-command", html! { <circle cx={ f(m.x) } cy={ f(m.y) } r={ f(rr) } /> })
            }
            MarkKind::Expired { .. } => (
                "expired",
                "expiry",
                html! { <path d={ format!("M{} {} l{r} {r} l-{r} {r} l-{r} -{r} z", f(m.x), f(m.y - r)) } /> },
            ),
            MarkKind::Lost | MarkKind::TimedOut => (
                "lost",
                "timeline-lost",
                html! { <path d={ format!("M{} {} l{d} {d} m0 -{d} l-{d} {d}", f(m.x - r), f(m.y - r), d = f(2.0 * r)) } /> },
            ),
            MarkKind::Fault => (
                "fault",
                "timeline-fault",
                html! { <path d={ format!("M{} {} l{r} 0 l-{r} {} l-{r} -{} z", f(m.x), f(m.y - r), f(2.0 * r), f(2.0 * r)) } /> },
            ),
            MarkKind::Write { accepted } => (
                if *accepted { "accepted" } else { "rejected" },
                "timeline-write",
                html! { <rect x={ f(m.x - r) } y={ f(m.y - r) } width={ f(2.0 * r) } height={ f(2.0 * r) } rx="2" /> },
            ),
            MarkKind::Info => ("info", "timeline-info", html! { <circle cx={ f(m.x) } cy={ f(m.y) } r={ f(r * 0.45) } /> }),
        };
        let key = match &m.kind {
            MarkKind::Expired { key } => Some(key.clone()),
            _ => None,
        };
        html! {
            <g class={ classes!("mark", class, owner_class(m.client)) } data-testid={ testid } data-key={ key } tabindex="0">
                <title>{ &m.title }</title>
                { shape }
            </g>
        }
    });
    html! { <g class="lane-marks">{ for marks }</g> }
}

/// The axis break mark `⫽`, drawn (fonts may lack the glyph).
pub(super) fn break_mark(x: f64, y: f64, s: f64) -> String {
    let (dx, dy) = (3.0 * s, 6.0 * s);
    format!(
        "M{} {} l{} -{} M{} {} l{} -{}",
        f(x - dx - 1.5 * s),
        f(y + dy),
        f(2.0 * dx),
        f(2.0 * dy),
        f(x - dx + 2.5 * s),
        f(y + dy),
        f(2.0 * dx),
        f(2.0 * dy)
    )
}

/// The swatch for a legend entry, at (x, y) = its left middle.
pub(super) fn swatch(kind: &str, x: f64, y: f64, s: f64) -> Html {
    let (w, h) = (22.0 * s, 12.0 * s);
    let top = y - h / 2.0;
    match kind {
        "held" => {
            html! { <g class="bar owner-0"><rect class="held" x={ f(x) } y={ f(top) } width={ f(w) } height={ f(h) } rx="2" /></g> }
        }
        "ttl" => {
            html! { <g class="bar owner-0"><rect class="ttl" x={ f(x) } y={ f(top) } width={ f(w) } height={ f(h) } rx="2" /></g> }
        }
        "belief" => {
            html! { <g class="bar belief owner-0"><rect class="held" x={ f(x) } y={ f(top) } width={ f(w) } height={ f(h) } rx="2" /></g> }
        }
        "command" => {
            html! { <g class="mark ok owner-0"><circle cx={ f(x + w / 2.0) } cy={ f(y) } r={ f(6.0 * s) } /></g> }
        }
        "nil" => {
            html! { <g class="mark nil owner-0"><circle cx={ f(x + w / 2.0) } cy={ f(y) } r={ f(6.0 * s) } /></g> }
        }
        "error" => html! { <g class="mark error"><circle cx={ f(x + w / 2.0) } cy={ f(y) } r={ f(6.0 * s) } /></g> },
        "expired" => {
            let r = 6.0 * s;
            html! { <g class="mark expired"><path d={ format!("M{} {} l{r} {r} l-{r} {r} l-{r} -{r} z", f(x + w / 2.0), f(y - r)) } /></g> }
        }
        "lost" => {
            let r = 5.0 * s;
            html! { <g class="mark lost"><path d={ format!("M{} {} l{d} {d} m0 -{d} l-{d} {d}", f(x + w / 2.0 - r), f(y - r), d = f(2.0 * r)) } /></g> }
        }
        "fault" => {
            let r = 6.0 * s;
            html! { <g class="mark fault"><path d={ format!("M{} {} l{r} 0 l-{r} {} l-{r} -{} z", f(x + w / 2.0), f(y - r), f(2.0 * r), f(2.0 * r)) } /></g> }
        }
        "accepted" | "rejected" => {
            html! { <g class={ classes!("mark", kind.to_owned()) }><rect x={ f(x + w / 2.0 - 6.0 * s) } y={ f(y - 6.0 * s) } width={ f(12.0 * s) } height={ f(12.0 * s) } rx="2" /></g> }
        }
        "info" => html! { <g class="mark info"><circle cx={ f(x + w / 2.0) } cy={ f(y) } r={ f(3.0 * s) } /></g> },
        "arrow" | "lost-arrow" | "replication" => {
            let class = match kind {
                "arrow" => "request",
                "lost-arrow" => "lost",
                _ => "replication",
            };
            html! { <line class={ classes!("arrow", class) } x1={ f(x) } y1={ f(y) } x2={ f(x + w) } y2={ f(y) } marker-end="url(#arrowhead)" /> }
        }
        "paused" | "down" | "cut" => {
            html! { <g class={ classes!("span", kind.to_owned()) }><rect x={ f(x) } y={ f(top) } width={ f(w) } height={ f(h) } /></g> }
        }
        "violation" => html! { <g class="band"><rect x={ f(x) } y={ f(top) } width={ f(w) } height={ f(h) } /></g> },
        "break" => {
            html! { <g class="break burst"><rect x={ f(x) } y={ f(top) } width={ f(w) } height={ f(h) } /><path class="break-mark" d={ break_mark(x + w / 2.0, y, s * 0.8) } /></g> }
        }
        _ => html! {},
    }
}

/// The lanes (name, role, centre line) and the spans shaded on them
/// (pauses, crashes, cut links).
pub(super) fn lanes_layer(l: &Layout) -> Html {
    let style = l.style;
    let s = style.font / 14.0;
    let plot_end = l.plot_end;
    let lanes = l.lanes.iter().map(|lane| {
        html! {
            <g class={ classes!("lane", lane.class()) }>
                <rect class="lane-bg" x="0" y={ f(lane.y) } width={ f(l.width) } height={ f(lane.height) } />
                <line class="lane-line" x1={ f(style.label_w()) } x2={ f(plot_end) } y1={ f(lane.mid()) } y2={ f(lane.mid()) } />
                <text class="lane-label" x="10" y={ f(lane.mid() + 5.0 * s) }>{ &lane.label }</text>
                if let Some(role) = &lane.role {
                    <text class="lane-role" x="10" y={ f(lane.mid() + 5.0 * s + style.font * 1.3) }>{ role }</text>
                }
            </g>
        }
    });
    let spans = l.spans.iter().map(|sp| {
        let lane = &l.lanes[sp.lane];
        html! {
            <g class={ classes!("span", sp.kind) } data-testid="timeline-span" data-kind={ sp.kind } data-open={ sp.open.to_string() }>
                <title>{ &sp.title }</title>
                <rect x={ f(sp.x0) } y={ f(lane.y + 3.0) } width={ f(sp.x1 - sp.x0) } height={ f(lane.height - 6.0) } />
            </g>
        }
    });
    html! {
        <>
            { for lanes }
            { for spans }
        </>
    }
}

/// The time axis: its line, ticks and breaks.
pub(super) fn axis_layer(l: &Layout) -> Html {
    let style = l.style;
    let s = style.font / 14.0;
    let plot_end = l.plot_end;
    let bottom = l.lanes_bottom;
    let axis_y = style.axis_h() - 4.0;
    let ticks = l.ticks.iter().map(|t| {
        html! {
            <g class="tick" data-ms={ t.ms.to_string() }>
                <line x1={ f(t.x) } x2={ f(t.x) } y1={ f(axis_y) } y2={ f(bottom) } />
                <text class="tick-label" x={ f(t.x) } y={ f(axis_y - 8.0 * s) } text-anchor="middle">{ &t.label }</text>
            </g>
        }
    });
    let breaks = l.breaks.iter().map(|b| {
        html! {
            <g class={ classes!("break", b.kind) } data-testid="axis-break" data-from={ b.from_ms.to_string() } data-to={ b.to_ms.to_string() }>
                <title>{ &b.title }</title>
                <rect x={ f(b.x0) } y={ f(axis_y - 5.0 * s) } width={ f(b.x1 - b.x0) } height={ f(10.0 * s) } />
                <path class="break-mark" d={ break_mark(b.x0, axis_y, s) } />
                <path class="break-mark" d={ break_mark(b.x1, axis_y, s) } />
                if let Some(label) = &b.label {
                    <text class="break-label" x={ f((b.x0 + b.x1) / 2.0) } y={ f(axis_y - 8.0 * s) } text-anchor="middle">{ label }</text>
                }
            </g>
        }
    });
    html! {
        <g class="axis">
            <line class="axis-line" x1={ f(style.label_w()) } x2={ f(plot_end) } y1={ f(axis_y) } y2={ f(axis_y) } />
            { for ticks }
            { for breaks }
        </g>
    }
}

/// Violation bands, lock and belief bars, and the arrows between lanes.
pub(super) fn locks_layer(l: &Layout) -> Html {
    let style = l.style;
    let plot_end = l.plot_end;
    let bottom = l.lanes_bottom;
    let bands = l.bands.iter().map(|b| {
        html! {
            <g class="band" data-testid="violation" data-invariant={ b.name } data-title={ b.heading.clone() }>
                <title>{ &b.title }</title>
                <rect x={ f(b.x0) } y={ f(l.lanes_top) } width={ f(b.x1 - b.x0) } height={ f(bottom - l.lanes_top) } />
            </g>
        }
    });
    let bh = style.bar_h();
    let bars = l.bars.iter().map(|b| {
        let end = match b.end {
            None => "open",
            Some(BarEnd::Expired) => "expired",
            Some(BarEnd::Gone) => "gone",
        };
        html! {
            <g class={ classes!("bar", owner_class(b.owner), b.belief.then_some("belief")) }
                data-testid={ if b.belief { "belief-bar" } else { "lock-bar" } }
                data-key={ b.key.clone() } data-owner={ b.owner_name.clone() }
                data-open={ b.end.is_none().to_string() } data-end={ end }>
                <title>{ &b.title }</title>
                <rect class="held" x={ f(b.x0) } y={ f(b.y) } width={ f(b.x1 - b.x0) } height={ f(bh) } rx="3" />
                if let Some(dx) = b.deadline_x {
                    <rect class="ttl" x={ f(b.x1) } y={ f(b.y) } width={ f((dx.min(plot_end) - b.x1).max(0.0)) } height={ f(bh) } rx="3" />
                }
            </g>
        }
    });
    let arrows = l.arrows.iter().map(|a| {
        let class = match a.kind {
            ArrowKind::Request => "request",
            ArrowKind::Reply => "reply",
            ArrowKind::Lost => "lost",
            ArrowKind::Replication => "replication",
            ArrowKind::Write => "write",
        };
        html! {
            <line class={ classes!("arrow", class) } x1={ f(a.x1) } y1={ f(a.y1) } x2={ f(a.x2) } y2={ f(a.y2) }
                marker-end="url(#arrowhead)" />
        }
    });
    html! {
        <>
            { for bands }
            { for bars }
            { for arrows }
        </>
    }
}

/// Labels under the marks and inside the bars, and the callouts above.
pub(super) fn labels_layer(l: &Layout) -> Html {
    let labels = l.labels.iter().map(|t| {
        html! {
            <text class={ classes!("tl-label", t.class) } data-testid="timeline-label" x={ f(t.x) } y={ f(t.y) }
                data-w={ f(t.w) }>
                <title>{ &t.title }</title>
                { &t.text }
            </text>
        }
    });
    let callouts = l.callouts.iter().map(|c| {
        let t = &c.label;
        html! {
            <g class={ classes!("callout-g", c.kind) } data-testid="callout" data-kind={ c.kind }>
                <line class="leader" x1={ f(c.at_x) } x2={ f(c.at_x) } y1={ f(t.y + 4.0) } y2={ f(c.y_to) } />
                <text class={ classes!("tl-label", t.class) } data-testid={ if c.kind == "violation" { "band-title" } else { "timeline-label" } }
                    x={ f(t.x) } y={ f(t.y) }>
                    <title>{ &t.title }</title>
                    { &t.text }
                </text>
            </g>
        }
    });
    html! {
        <>
            { for labels }
            { for callouts }
        </>
    }
}

/// The legend: one entry per kind of mark the timeline draws.
pub(super) fn legend_layer(l: &Layout) -> Html {
    let style = l.style;
    let s = style.font / 14.0;
    let items = l.legend.iter().map(|it| {
        html! {
            <g class="legend-item" data-kind={ it.kind }>
                { swatch(it.kind, it.x, it.y - style.font * 0.35, s) }
                <text class="tl-label legend-text" x={ f(it.x + 28.0 * s) } y={ f(it.y) }>{ &it.text }</text>
            </g>
        }
    });
    html! { <g class="legend" data-testid="legend">{ for items }</g> }
}

/// An explorer's counterexample: one dot per step on the time axis, at the
/// step's x — green while every invariant holds, red from the step that
/// broke one — its tooltip the step and each invariant's ✓ or ✗ (the rows
/// of the explore screen's step table, from core's `explore::checks`).
pub(super) fn steps_layer(l: &Layout, checks: &[StepMark], lang: crate::i18n::Lang) -> Html {
    if checks.is_empty() {
        return Html::default();
    }
    let s = l.style.font / 14.0;
    let y = l.style.axis_h() - 4.0;
    let dots = checks.iter().zip(&l.xs).map(|((step, at_ms, broken), &x)| {
        let ok = broken.is_empty();
        let mut title = format!("#{step} · {at_ms} ms");
        for i in Invariant::ALL {
            let (mark, word) = if !broken.contains(&i) {
                ("✓", Text::ExploreHolds.get(lang))
            } else {
                ("✗", Text::ExploreBroken.get(lang))
            };
            title.push_str(&format!(
                "\n{mark} {}: {word}",
                crate::explore::view::inv_short(lang, i)
            ));
        }
        let names: Vec<&str> = broken.iter().map(|i| i.name()).collect();
        html! {
            <circle class={ classes!("step-mark", if ok { "ok" } else { "bad" }) } data-testid="timeline-step"
                data-step={ step.to_string() } data-broken={ names.join(",") }
                cx={ f(x) } cy={ f(y) } r={ f(3.5 * s) }>
                <title>{ title }</title>
            </circle>
        }
    });
    html! { <g class="step-marks" data-testid="timeline-steps">{ for dots }</g> }
}
