//! The timeline: core's trace drawn as swimlanes, in SVG.
//!
//! Geometry comes from [`crate::timeline::layout`]; this only draws. Shapes
//! carry stable `data-testid`s (`timeline`, `lock-bar`, `violation`,
//! `expiry`, `timeline-command`) and `<title>` tooltips with the event as the
//! explorer would print it.

use yew::prelude::*;

use crate::i18n::Text;
use crate::state::AppContext;
use crate::timeline::{layout, ArrowKind, BarEnd, MarkKind, AXIS_H, LABEL_W, VIEW_W};

fn f(v: f64) -> String {
    format!("{v:.1}")
}

fn owner_class(owner: Option<u32>) -> String {
    owner.map_or_else(|| "owner-none".to_owned(), |o| format!("owner-{}", o % 6))
}

#[function_component(Timeline)]
pub fn timeline() -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let lab = state.lab.borrow();
    let trace = lab.trace();
    let l = layout(trace, lab.now_ms(), lang);
    let plot_end = VIEW_W - 28.0;
    let bottom = l.height - 4.0;

    let ticks = l.ticks.iter().map(|t| {
        html! {
            <g class="tick">
                <line x1={ f(t.x) } x2={ f(t.x) } y1={ f(AXIS_H - 4.0) } y2={ f(bottom) } />
                <text x={ f(t.x) } y="14" text-anchor="middle">{ &t.label }</text>
            </g>
        }
    });
    let lanes = l.lanes.iter().map(|lane| {
        html! {
            <g class={ classes!("lane", lane.class()) }>
                <rect class="lane-bg" x="0" y={ f(lane.y) } width={ f(VIEW_W) } height={ f(lane.height) } />
                <line class="lane-line" x1={ f(LABEL_W) } x2={ f(plot_end) } y1={ f(lane.mid()) } y2={ f(lane.mid()) } />
                <text class="lane-label" x="10" y={ f(lane.mid() + 4.0) }>{ &lane.label }</text>
            </g>
        }
    });
    let bands = l.bands.iter().map(|b| {
        html! {
            <g class="band" data-testid="violation" data-invariant={ b.name }>
                <title>{ &b.title }</title>
                <rect x={ f(b.x0) } y={ f(AXIS_H) } width={ f(b.x1 - b.x0) } height={ f(l.height - AXIS_H - 6.0) } />
                <text x={ f(b.x0 + 3.0) } y={ f(AXIS_H + 11.0) }>{ format!("{} {}", Text::Violation.get(lang), b.name) }</text>
            </g>
        }
    });
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
                <rect class="held" x={ f(b.x0) } y={ f(b.y) } width={ f(b.x1 - b.x0) } height="16" rx="3" />
                if let Some(dx) = b.deadline_x {
                    <rect class="ttl" x={ f(b.x1) } y={ f(b.y) } width={ f((dx - b.x1).max(0.0)) } height="16" rx="3" />
                }
                if b.x1 - b.x0 > 70.0 {
                    <text class="bar-label" x={ f(b.x0 + 5.0) } y={ f(b.y + 12.0) }>
                        { format!("{} · {}", b.key, b.owner_name) }
                    </text>
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
    // Labels under command dots only where the previous one on the lane is
    // far enough away to stay readable.
    let mut last_label = vec![f64::NEG_INFINITY; l.lanes.len()];
    let marks = l.marks.iter().map(|m| {
        let show_label = m.label.is_some() && m.x - last_label[m.lane] >= 96.0;
        if show_label {
            last_label[m.lane] = m.x;
        }
        let label = show_label.then(|| m.label.clone()).flatten();
        let (class, testid, shape) = match &m.kind {
            MarkKind::Command(t) | MarkKind::Reply(t) | MarkKind::Executed(t) => {
                let r = if matches!(m.kind, MarkKind::Command(_)) { "5" } else { "3.5" };
                (t.class(), "timeline-command", html! { <circle cx={ f(m.x) } cy={ f(m.y) } r={ r } /> })
            }
            MarkKind::Expired { .. } => (
                "expired",
                "expiry",
                html! { <path d={ format!("M{} {} l5 5 l-5 5 l-5 -5 z", f(m.x), f(m.y - 5.0)) } /> },
            ),
            MarkKind::Lost | MarkKind::TimedOut => (
                "lost",
                "timeline-lost",
                html! { <path d={ format!("M{} {} l8 8 m0 -8 l-8 8", f(m.x - 4.0), f(m.y - 4.0)) } /> },
            ),
            MarkKind::Fault => (
                "fault",
                "timeline-fault",
                html! { <path d={ format!("M{} {} l6 0 l-6 12 l-6 -12 z", f(m.x), f(m.y - 6.0)) } /> },
            ),
            MarkKind::Write { accepted } => (
                if *accepted { "accepted" } else { "rejected" },
                "timeline-write",
                html! { <rect x={ f(m.x - 5.0) } y={ f(m.y - 5.0) } width="10" height="10" rx="2" /> },
            ),
            MarkKind::Info => ("info", "timeline-info", html! { <circle cx={ f(m.x) } cy={ f(m.y) } r="2.5" /> }),
        };
        let key = match &m.kind {
            MarkKind::Expired { key } => Some(key.clone()),
            _ => None,
        };
        html! {
            <g class={ classes!("mark", class, owner_class(m.client)) } data-testid={ testid } data-key={ key }>
                <title>{ &m.title }</title>
                { shape }
                if let Some(label) = label {
                    <text class="mark-label" x={ f(m.x - 4.0) } y={ f(m.y + 19.0) }>{ label }</text>
                }
            </g>
        }
    });
    let empty = trace.events.is_empty();
    let first_mid = l.lanes.first().map_or(AXIS_H + 20.0, |lane| lane.mid());

    html! {
        <section class="timeline-panel">
            <h2>{ Text::Timeline.get(lang) }</h2>
            <svg class="timeline" data-testid="timeline" viewBox={ format!("0 0 {VIEW_W} {}", f(l.height)) }
                role="img" aria-label={ Text::Timeline.get(lang) } data-span-ms={ l.span_ms.to_string() }
                data-events={ trace.events.len().to_string() }>
                <defs>
                    <marker id="arrowhead" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" markerHeight="6" orient="auto">
                        <path d="M0 0 L8 4 L0 8 z" />
                    </marker>
                </defs>
                { for lanes }
                <g class="axis">{ for ticks }</g>
                { for bands }
                { for bars }
                { for arrows }
                { for marks }
                <line class="now" x1={ f(l.now_x) } x2={ f(l.now_x) } y1={ f(AXIS_H - 6.0) } y2={ f(l.height - 2.0) } />
                if empty {
                    <text class="empty" x={ f(LABEL_W + 12.0) } y={ f(first_mid - 10.0) }>{ Text::TimelineEmpty.get(lang) }</text>
                }
            </svg>
        </section>
    }
}
