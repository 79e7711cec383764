//! The timeline: core's trace drawn as swimlanes, in SVG.
//!
//! Geometry comes from [`crate::timeline::layout_zoomed`] (memoised on the
//! state's revision, the language and the zoom); this only draws. Shapes
//! carry stable `data-testid`s (`timeline`, `lock-bar`, `violation`,
//! `expiry`, `timeline-command`, `timeline-span`) and `<title>` tooltips
//! with the event as the explorer would print it. Marks are drawn per lane
//! by [`LaneMarks`], which Yew skips when a lane's marks did not change.
//! Zoom widens the axis (a fresh layout, so labels stay their size); the
//! panel scrolls to pan, by scroll bar, by dragging the plot, or with
//! Shift+←/→ while the timeline has focus (plain ←/→ stay the step keys).
//!
//! Panning never re-renders: the drag lives in a `use_mut_ref`, and each
//! pointer move only sets the scroll container's `scrollLeft` — the
//! browser moves the already-drawn SVG, so a 10 000-event trace pans as
//! smoothly as an empty one. The grab/grabbing cursor is a class set on the
//! element directly, for the same reason.

use std::rc::Rc;

use web_sys::Element;
use yew::prelude::*;

use crate::i18n::Text;
use crate::state::AppContext;
use crate::timeline::{layout_zoomed, ArrowKind, BarEnd, Layout, Mark, MarkKind, AXIS_H, LABEL_W};

fn f(v: f64) -> String {
    format!("{v:.1}")
}

fn owner_class(owner: Option<u32>) -> String {
    owner.map_or_else(|| "owner-none".to_owned(), |o| format!("owner-{}", o % 6))
}

const ZOOMS: [f64; 6] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

/// Shift+←/→ pans by this share of the visible width.
const KEY_PAN: f64 = 0.25;

/// A drag in progress: the pointer, where it went down, and the scroll
/// position then.
#[derive(Clone, Copy)]
struct Drag {
    pointer: i32,
    x: i32,
    scroll: i32,
}

/// The styles an exported SVG carries with it (the page's stylesheet
/// does not travel with the file).
const EXPORT_CSS: &str = "text{font:11px sans-serif}.tick line{stroke:#e3e6ea}.tick text{fill:#6b7280}\
.lane-bg{fill:none}.lane.node .lane-bg{fill:#f7f8fa}.lane-line{stroke:#d5d9df;stroke-dasharray:2 4}\
.lane-label{font-weight:600;font-size:12px}.held{fill:#2563eb;fill-opacity:.26;stroke:#2563eb}\
.ttl{fill:none;stroke:#2563eb;stroke-dasharray:4 3}.band rect{fill:#dc2626;fill-opacity:.12;stroke:#dc2626}\
.band text{fill:#dc2626;font-weight:600;font-size:10px}.mark circle{fill:#2563eb;stroke:#fff}\
.mark.error circle,.mark.rejected rect{fill:#dc2626}.mark.accepted rect{fill:#059669}.mark.fault path{fill:#d97706}\
.span rect{fill:#9ca3af;fill-opacity:.25}.arrow{stroke:#8a94a3}.now{stroke:#2563eb}.mark-label,.bar-label{font:10px monospace}";

/// `data:` URL of an SVG document, percent-encoded.
pub fn svg_data_url(markup: &str) -> String {
    let mut out = String::from("data:image/svg+xml;charset=utf-8,");
    for b in markup.bytes() {
        if b.is_ascii_alphanumeric() || b" -_.~/:=;,()!*'".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[derive(Properties, PartialEq)]
struct LaneMarksProps {
    marks: Rc<Vec<Mark>>,
}

/// One lane's marks. Its props compare by value, so a render that leaves a
/// lane's marks as they were does not touch that lane's DOM.
#[function_component(LaneMarks)]
fn lane_marks(props: &LaneMarksProps) -> Html {
    // Labels under command dots only where the previous one on the lane is
    // far enough away to stay readable.
    let mut last_label = f64::NEG_INFINITY;
    let marks = props.marks.iter().map(|m| {
        let show_label = m.label.is_some() && m.x - last_label >= 96.0;
        if show_label {
            last_label = m.x;
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
            <g class={ classes!("mark", class, owner_class(m.client)) } data-testid={ testid } data-key={ key } tabindex="0">
                <title>{ &m.title }</title>
                { shape }
                if let Some(label) = label {
                    <text class="mark-label" x={ f(m.x - 4.0) } y={ f(m.y + 19.0) }>{ label }</text>
                }
            </g>
        }
    });
    html! { <g class="lane-marks">{ for marks }</g> }
}

#[function_component(Timeline)]
pub fn timeline() -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let zoom = use_state(|| 0usize);
    let svg_ref = use_node_ref();
    // Yew delegates events, so `current_target` is not the link: keep a ref.
    let link_ref = use_node_ref();
    let z = ZOOMS[*zoom];
    let scroll_ref = use_node_ref();
    let drag = use_mut_ref(|| None::<Drag>);
    // At 1× the plot fits: nothing to pan, and no grab cursor to promise it.
    let pannable = *zoom > 0;
    let onpointerdown = {
        let (scroll_ref, drag) = (scroll_ref.clone(), drag.clone());
        Callback::from(move |e: PointerEvent| {
            let Some(el) = scroll_ref.cast::<Element>().filter(|_| pannable && e.button() == 0) else { return };
            // Capture: the drag goes on when the pointer leaves the plot.
            let _ = el.set_pointer_capture(e.pointer_id());
            let _ = el.class_list().add_1("dragging");
            *drag.borrow_mut() = Some(Drag { pointer: e.pointer_id(), x: e.client_x(), scroll: el.scroll_left() });
        })
    };
    let onpointermove = {
        let (scroll_ref, drag) = (scroll_ref.clone(), drag.clone());
        Callback::from(move |e: PointerEvent| {
            let Some(d) = *drag.borrow() else { return };
            if let (true, Some(el)) = (d.pointer == e.pointer_id(), scroll_ref.cast::<Element>()) {
                el.set_scroll_left(d.scroll - (e.client_x() - d.x));
            }
        })
    };
    let onpointerup = {
        let (scroll_ref, drag) = (scroll_ref.clone(), drag.clone());
        Callback::from(move |e: PointerEvent| {
            if drag.borrow_mut().take().is_some() {
                if let Some(el) = scroll_ref.cast::<Element>() {
                    let _ = el.release_pointer_capture(e.pointer_id());
                    let _ = el.class_list().remove_1("dragging");
                }
            }
        })
    };
    let onkeydown = {
        let scroll_ref = scroll_ref.clone();
        Callback::from(move |e: KeyboardEvent| {
            let dir = match e.key().as_str() {
                "ArrowLeft" => -1.0,
                "ArrowRight" => 1.0,
                _ => return,
            };
            if !e.shift_key() || e.ctrl_key() || e.meta_key() || e.alt_key() {
                return;
            }
            // Ours, not the page's step shortcut (a listener on the document).
            e.prevent_default();
            e.stop_propagation();
            if let Some(el) = scroll_ref.cast::<Element>() {
                let by = (f64::from(el.client_width()) * KEY_PAN).round() as i32;
                el.set_scroll_left(el.scroll_left() + dir as i32 * by);
            }
        })
    };
    type PerLane = Rc<Vec<Rc<Vec<Mark>>>>;
    let (l, per_lane, events): (Rc<Layout>, PerLane, usize) = {
        let state = state.clone();
        let memo = use_memo((state.rev, lang, *zoom, state.lesson_id()), move |_| {
            let (trace, now) = match (&state.session, &state.real) {
                (Some(s), _) => {
                    let s = s.borrow();
                    (s.trace(), s.now_ms())
                }
                (None, Some(r)) => {
                    let r = r.borrow();
                    (r.session_trace(), r.last_ms())
                }
                (None, None) => {
                    let lab = state.lab.borrow();
                    (lab.trace().clone(), lab.now_ms())
                }
            };
            let l = layout_zoomed(&trace, now, lang, z);
            let mut per_lane = vec![Vec::new(); l.lanes.len()];
            for m in &l.marks {
                per_lane[m.lane].push(m.clone());
            }
            let per_lane: Vec<Rc<Vec<Mark>>> = per_lane.into_iter().map(Rc::new).collect();
            (Rc::new(l), Rc::new(per_lane), trace.events.len())
        });
        (memo.0.clone(), memo.1.clone(), memo.2)
    };
    let plot_end = l.width - 28.0;
    let bottom = l.height - 4.0;
    let onzoom = |d: isize| {
        let zoom = zoom.clone();
        Callback::from(move |_: MouseEvent| {
            let i = (*zoom as isize + d).clamp(0, ZOOMS.len() as isize - 1) as usize;
            zoom.set(if d == 0 { 0 } else { i });
        })
    };
    let file = format!("locklab-{}.svg", state.lesson_id().unwrap_or_else(|| "lab".into()));
    let onexport = {
        let svg_ref = svg_ref.clone();
        let link_ref = link_ref.clone();
        Callback::from(move |_: MouseEvent| {
            let (Some(svg), Some(a)) = (svg_ref.cast::<web_sys::Element>(), link_ref.cast::<web_sys::Element>()) else {
                return;
            };
            let markup = svg.outer_html();
            let markup = match markup.find('>') {
                Some(i) => format!("{}><style>{EXPORT_CSS}</style>{}", &markup[..i], &markup[i + 1..]),
                None => markup,
            };
            let _ = a.set_attribute("href", &svg_data_url(&markup));
        })
    };

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
                <rect class="lane-bg" x="0" y={ f(lane.y) } width={ f(l.width) } height={ f(lane.height) } />
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
                <text class="band-explain" x={ f(b.x0 + 3.0) } y={ f(l.height - 10.0) }>
                    { &b.explain }
                </text>
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
    let spans = l.spans.iter().map(|sp| {
        let lane = &l.lanes[sp.lane];
        html! {
            <g class={ classes!("span", sp.kind) } data-testid="timeline-span" data-kind={ sp.kind } data-open={ sp.open.to_string() }>
                <title>{ &sp.title }</title>
                <rect x={ f(sp.x0) } y={ f(lane.y + 3.0) } width={ f(sp.x1 - sp.x0) } height={ f(lane.height - 6.0) } />
            </g>
        }
    });
    let marks = per_lane.iter().map(|m| html! { <LaneMarks marks={ m.clone() } /> });
    let empty = events == 0;
    let first_mid = l.lanes.first().map_or(AXIS_H + 20.0, |lane| lane.mid());

    html! {
        <section class="timeline-panel">
            <div class="timeline-head">
                <h2>{ Text::Timeline.get(lang) }</h2>
                <span class="axis-note">{ "ms" }</span>
                <div class="spacer" />
                <button class="quiet" data-testid="zoom-out" title={ Text::ZoomOut.get(lang) } onclick={ onzoom(-1) }>{ "−" }</button>
                <span class="zoom" data-testid="zoom">{ format!("{z}×") }</span>
                <button class="quiet" data-testid="zoom-in" title={ Text::ZoomIn.get(lang) } onclick={ onzoom(1) }>{ "+" }</button>
                <button class="quiet" data-testid="zoom-reset" onclick={ onzoom(0) }>{ Text::ZoomReset.get(lang) }</button>
                <a class="button quiet" ref={ link_ref } data-testid="export-svg" download={ file } href="#" onclick={ onexport }>{ Text::ExportSvg.get(lang) }</a>
            </div>
            <div class={ classes!("timeline-scroll", pannable.then_some("pannable")) } ref={ scroll_ref }
                data-testid="timeline-scroll" tabindex="0" aria-label={ Text::TimelinePan.get(lang) }
                {onpointerdown} {onpointermove} onpointerup={ onpointerup.clone() } onpointercancel={ onpointerup }
                {onkeydown}>
            <svg class="timeline" data-testid="timeline" ref={ svg_ref } xmlns="http://www.w3.org/2000/svg"
                viewBox={ format!("0 0 {} {}", f(l.width), f(l.height)) }
                style={ format!("width: {:.0}%", z * 100.0) }
                role="img" aria-label={ Text::Timeline.get(lang) } data-span-ms={ l.span_ms.to_string() }
                data-events={ events.to_string() } data-marks={ l.marks.len().to_string() }>
                <defs>
                    <marker id="arrowhead" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" markerHeight="6" orient="auto">
                        <path d="M0 0 L8 4 L0 8 z" />
                    </marker>
                </defs>
                { for lanes }
                { for spans }
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
            </div>
        </section>
    }
}
