//! The timeline: core's trace drawn as swimlanes, in SVG.
//!
//! Geometry comes from [`crate::timeline::layout_in`] (memoised on the
//! state's revision, the language, the zoom, the width the page gives the
//! timeline and presenter mode); this only draws, one SVG unit per CSS
//! pixel (the SVG is as wide as its layout, never scaled to fit). Shapes
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

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use web_sys::Element;
use yew::prelude::*;

use locklab_core::explore::checks::broken_by_step;
use locklab_core::invariants::Invariant;

use crate::i18n::Text;
use crate::state::AppContext;
use crate::timeline::{layout_in, ArrowKind, BarEnd, Layout, Mark, MarkKind, Style};

mod layers;

use layers::{axis_layer, labels_layer, lanes_layer, legend_layer, locks_layer, steps_layer, LaneMarks};

fn f(v: f64) -> String {
    format!("{v:.1}")
}

fn owner_class(owner: Option<u32>) -> String {
    owner.map_or_else(|| "owner-none".to_owned(), |o| format!("owner-{}", o % 6))
}

const ZOOMS: [f64; 6] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

/// Shift+←/→ pans by this share of the visible width.
const KEY_PAN: f64 = 0.25;

/// The owners' colours, as the page's stylesheet has them (`--a`, `--b`…).
const OWNER_COLOURS: [&str; 6] = ["#2f6fd1", "#c4631b", "#2e8b57", "#8b5cf6", "#0e7490", "#a16207"];

/// A drag in progress: the pointer, where it went down, and the scroll
/// position then.
#[derive(Clone, Copy)]
struct Drag {
    pointer: i32,
    x: i32,
    scroll: i32,
}

/// Where to keep the view after a zoom: this share of the plot's width at
/// this many pixels from the view's left edge.
#[derive(Clone, Copy)]
struct Anchor {
    share: f64,
    offset: f64,
}

/// The styles an exported SVG carries with it (the page's stylesheet does
/// not travel with the file): the same colours, owners included, and the
/// same type sizes (≥ 12 px at the file's natural size).
fn export_css() -> String {
    let mut css = String::from(
        "text{font:14px ui-monospace,'DejaVu Sans Mono',monospace;fill:#1f2933}\
.tick line{stroke:#e3e6ea}.tick text{fill:#4b5563}.axis-line{stroke:#9aa5b1}\
.lane-line{stroke:#d5d9df;stroke-dasharray:2 4}.lane.node .lane-bg{fill:#f4f5f7}.lane.resource .lane-bg{fill:#fbf8f1}.lane-bg{fill:none}\
.lane-label{font:600 15px sans-serif;fill:#374151}.lane-role{font:13px sans-serif;fill:#6b7280}\
.band rect{fill:#c53030;fill-opacity:.12;stroke:#c53030;stroke-opacity:.5}.band-title{fill:#c53030;font-weight:700}\
.callout{fill:#1f2933}.leader{stroke:#9aa5b1;stroke-dasharray:3 3}.mark-label{fill:#4b5563;paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}\
.mark.error circle,.mark.rejected rect{fill:#c53030}.mark.accepted rect{fill:#2e8b57}.mark.fault path{fill:#d97706}\
.mark.expired path{fill:#6b7280}.mark.lost path{stroke:#c53030;stroke-width:2.5;fill:none}.mark.info circle{fill:#9aa5b1}\
.span rect{fill:#9ca3af;fill-opacity:.25}.span.down rect,.span.crashed rect{fill:#c53030;fill-opacity:.1}\
.arrow{stroke:#6b7280;stroke-width:1.2}.dense .arrow{opacity:.3}.arrow.replication{stroke:#7c3aed;stroke-width:2}.arrow.lost{stroke:#c53030;stroke-dasharray:4 3}\
.now{stroke:#3a5ccc;stroke-width:2}.break rect{fill:#3a5ccc;fill-opacity:.12}.break-mark{stroke:#4b5563;stroke-width:1.6;fill:none}.break text{fill:#4b5563}\
.export-title{font:700 18px sans-serif}.legend text{fill:#374151}.step-mark{stroke:#fff}.step-mark.ok{fill:#2e8b57}.step-mark.bad{fill:#c53030}",
    );
    for (i, c) in OWNER_COLOURS.iter().enumerate() {
        css.push_str(&format!(
            ".owner-{i} .held{{fill:{c};fill-opacity:.3;stroke:{c}}}.owner-{i} .ttl{{fill:none;stroke:{c};stroke-dasharray:5 3}}\
.owner-{i}.mark circle{{fill:{c};stroke:#fff}}.owner-{i}.mark.nil circle{{fill:#fff;stroke:{c};stroke-width:2}}\
.lane.client-{i} .lane-label{{fill:{c}}}"
        ));
    }
    css
}

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

/// The timeline as a standalone SVG file: a title line with the lesson id,
/// then the plot and its legend, with the styles inlined.
fn export_markup(svg: &Element, title: &str) -> String {
    let w: f64 = svg.get_attribute("width").and_then(|w| w.parse().ok()).unwrap_or(960.0);
    let h: f64 = svg
        .get_attribute("height")
        .and_then(|h| h.parse().ok())
        .unwrap_or(400.0);
    let top = 34.0;
    // `dense` and the like travel with the plot, as its styles do.
    let class = svg.get_attribute("class").unwrap_or_default();
    let esc = title.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{:.0}\" viewBox=\"0 0 {w:.0} {:.0}\">\
<style>{}</style><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\
<text class=\"export-title\" x=\"12\" y=\"24\">{esc}</text><g class=\"{class}\" transform=\"translate(0 {top})\">{}</g></svg>",
        h + top,
        h + top,
        export_css(),
        svg.inner_html()
    )
}

/// The PNG export: the timeline's SVG drawn on a canvas at twice its size;
/// the link gets the PNG once the image has loaded, and is clicked again
/// then.
fn png_export(svg_ref: NodeRef, png_ref: NodeRef, title: String) -> Callback<MouseEvent> {
    Callback::from(move |e: MouseEvent| {
        let (Some(svg), Some(a)) = (svg_ref.cast::<Element>(), png_ref.cast::<web_sys::HtmlElement>()) else {
            return;
        };
        if a.get_attribute("data-ready").as_deref() == Some("1") {
            let _ = a.remove_attribute("data-ready");
            return;
        }
        e.prevent_default();
        let markup = export_markup(&svg, &title);
        let Ok(img) = web_sys::HtmlImageElement::new() else {
            return;
        };
        let img2 = img.clone();
        let onload = wasm_bindgen::closure::Closure::once_into_js(move || {
            let doc = web_sys::window().and_then(|w| w.document());
            let canvas = doc
                .and_then(|d| d.create_element("canvas").ok())
                .and_then(|c| c.dyn_into::<web_sys::HtmlCanvasElement>().ok());
            let Some(canvas) = canvas else { return };
            let (w, h) = (img2.natural_width(), img2.natural_height());
            canvas.set_width(w * 2);
            canvas.set_height(h * 2);
            let ctx = canvas
                .get_context("2d")
                .ok()
                .flatten()
                .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok());
            if let Some(ctx) = ctx {
                let _ = ctx.scale(2.0, 2.0);
                let _ = ctx.draw_image_with_html_image_element(&img2, 0.0, 0.0);
                if let Ok(url) = canvas.to_data_url_with_type("image/png") {
                    let _ = a.set_attribute("href", &url);
                    let _ = a.set_attribute("data-ready", "1");
                    a.click();
                }
            }
        });
        img.set_onload(Some(onload.unchecked_ref()));
        img.set_src(&svg_data_url(&markup));
    })
}

#[function_component(Timeline)]
pub fn timeline() -> Html {
    let state = use_context::<AppContext>().expect("AppContext is provided by App");
    let lang = state.lang;
    let zoom = use_state(|| 0usize);
    let svg_ref = use_node_ref();
    // Yew delegates events, so `current_target` is not the link: keep a ref.
    let link_ref = use_node_ref();
    let png_ref = use_node_ref();
    let z = ZOOMS[*zoom];
    let scroll_ref = use_node_ref();
    let drag = use_mut_ref(|| None::<Drag>);
    let anchor = use_mut_ref(|| None::<Anchor>);
    let (width, room) = use_measure(&state, &scroll_ref);
    let style = if state.present { Style::PRESENT } else { Style::NORMAL };
    let view_w = if *width > 0.0 { *width } else { 960.0 };
    // At 1× the plot fits: nothing to pan, and no grab cursor to promise it.
    let pannable = *zoom > 0;
    let Pan {
        onpointerdown,
        onpointermove,
        onpointerup,
        onkeydown,
    } = pan(&scroll_ref, &drag, pannable);
    let (l, per_lane, events, checks) = use_timeline_layout(&state, *zoom, view_w, *room, style);
    use_keep_anchor(*zoom, &anchor, &scroll_ref, l.width);
    let style = l.style;
    let s = style.font / 14.0;
    let bottom = l.lanes_bottom;
    let onzoom = zoom_by(&zoom, &anchor, &scroll_ref, (l.now_x, l.width));
    let onwheel = wheel_zoom(&zoom, &anchor, &scroll_ref, l.width);
    let axis_y = style.axis_h() - 4.0;
    let height = if state.legend { l.height } else { l.lanes_bottom + 8.0 };
    let marks = per_lane
        .iter()
        .map(|m| html! { <LaneMarks marks={ m.clone() } r={ 6.0 * s } /> });
    let empty = events == 0;
    let first_mid = l.lanes.first().map_or(l.lanes_top + 20.0, |lane| lane.mid());

    html! {
        <section class="timeline-panel">
            { timeline_head(&state, z, onzoom, [&svg_ref, &link_ref, &png_ref]) }
            <div class={ classes!("timeline-scroll", pannable.then_some("pannable")) } ref={ scroll_ref }
                data-testid="timeline-scroll" tabindex="0" aria-label={ Text::TimelinePan.get(lang) }
                {onpointerdown} {onpointermove} onpointerup={ onpointerup.clone() } onpointercancel={ onpointerup }
                {onkeydown} {onwheel}>
            <svg class={ classes!("timeline", l.dense.then_some("dense")) } data-testid="timeline" ref={ svg_ref } xmlns="http://www.w3.org/2000/svg"
                width={ f(l.width) } height={ f(height) }
                viewBox={ format!("0 0 {} {}", f(l.width), f(height)) }
                role="img" aria-label={ Text::Timeline.get(lang) } data-span-ms={ l.span_ms.to_string() }
                data-events={ events.to_string() } data-marks={ l.marks.len().to_string() }
                style={ format!("font-size: {}px", style.font) }>
                <defs>
                    <marker id="arrowhead" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" markerHeight="6" orient="auto">
                        <path d="M0 0 L8 4 L0 8 z" />
                    </marker>
                </defs>
                { lanes_layer(&l) }
                { axis_layer(&l) }
                { locks_layer(&l) }
                { for marks }
                { labels_layer(&l) }
                { steps_layer(&l, &checks, lang) }
                <line class="now" x1={ f(l.now_x) } x2={ f(l.now_x) } y1={ f(axis_y) } y2={ f(bottom) } />
                // The hint names the console, which presenter mode hides.
                if empty && !state.present {
                    <text class="empty" x={ f(style.label_w() + 12.0) } y={ f(first_mid - 10.0) }>{ Text::TimelineEmpty.get(lang) }</text>
                }
                if state.legend {
                    { legend_layer(&l) }
                }
            </svg>
            </div>
            { steps_key(!checks.is_empty(), lang) }
        </section>
    }
}

/// What the counterexample's step marks mean, under the timeline (the SVG
/// legend is core's layout, shared with the exported picture).
fn steps_key(shown: bool, lang: crate::i18n::Lang) -> Html {
    if !shown {
        return Html::default();
    }
    html! {
        <p class="step-marks-key" data-testid="timeline-steps-key">
            <span class="step-dot ok"></span>{ Text::TimelineStepsOk.get(lang) }
            <span class="step-dot bad"></span>{ Text::TimelineStepsBad.get(lang) }
        </p>
    }
}

/// The width the page gives the timeline, in CSS pixels (the layout is
/// made for it, so nothing is scaled), and in presenter mode the height
/// left for the plot, so it fits the screen; measured again on resize.
#[hook]
fn use_measure(state: &AppContext, scroll_ref: &NodeRef) -> (UseStateHandle<f64>, UseStateHandle<f64>) {
    let width = use_state(|| 0.0f64);
    let room = use_state(|| 0.0f64);
    {
        let (scroll_ref, width, room) = (scroll_ref.clone(), width.clone(), room.clone());
        // Again after every change: the caption above it changes height.
        use_effect_with((state.present, state.rev, state.legend), move |_| {
            let measure = {
                let (scroll_ref, width, room) = (scroll_ref.clone(), width.clone(), room.clone());
                move || {
                    if let Some(el) = scroll_ref.cast::<Element>() {
                        let w = f64::from(el.client_width()).floor();
                        if w > 0.0 && (w - *width).abs() >= 1.0 {
                            width.set(w);
                        }
                        let top = el.get_bounding_client_rect().top();
                        let inner = web_sys::window()
                            .and_then(|w| w.inner_height().ok())
                            .and_then(|h| h.as_f64())
                            .unwrap_or(0.0);
                        let h = (inner - top - 16.0).max(200.0).floor();
                        if (h - *room).abs() >= 1.0 {
                            room.set(h);
                        }
                    }
                }
            };
            measure();
            let listener = web_sys::window().map(|w| gloo_events::EventListener::new(&w, "resize", move |_| measure()));
            move || drop(listener)
        });
    }
    (width, room)
}

/// Panning the zoomed plot: drag it, or Shift+arrow keys.
struct Pan {
    onpointerdown: Callback<PointerEvent>,
    onpointermove: Callback<PointerEvent>,
    onpointerup: Callback<PointerEvent>,
    onkeydown: Callback<KeyboardEvent>,
}

fn pan(scroll_ref: &NodeRef, drag: &Rc<RefCell<Option<Drag>>>, pannable: bool) -> Pan {
    let onpointerdown = {
        let (scroll_ref, drag) = (scroll_ref.clone(), drag.clone());
        Callback::from(move |e: PointerEvent| {
            let Some(el) = scroll_ref.cast::<Element>().filter(|_| pannable && e.button() == 0) else {
                return;
            };
            // Capture: the drag goes on when the pointer leaves the plot.
            let _ = el.set_pointer_capture(e.pointer_id());
            let _ = el.class_list().add_1("dragging");
            *drag.borrow_mut() = Some(Drag {
                pointer: e.pointer_id(),
                x: e.client_x(),
                scroll: el.scroll_left(),
            });
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
    Pan {
        onpointerdown,
        onpointermove,
        onpointerup,
        onkeydown,
    }
}

type PerLane = Rc<Vec<Rc<Vec<Mark>>>>;

/// A step of an explorer's counterexample on the timeline: its number, its
/// time, and the invariants broken by its end.
type StepMark = (u64, u64, Vec<Invariant>);

fn step_marks(trace: &locklab_core::trace::Trace) -> Vec<StepMark> {
    let broken = broken_by_step(trace);
    trace
        .events
        .iter()
        .zip(broken)
        .map(|(e, b)| (e.step, e.at_ms, b))
        .collect()
}

/// The trace on screen (the lesson's, the real session's or the lab's)
/// laid out for the width and zoom, in presenter mode at the biggest type
/// that fits the screen; also its marks per lane, how many events it has,
/// and for an explorer's counterexample which invariants hold after each
/// step (core's `explore::checks::broken_by_step`, read from the trace the timeline draws:
/// the monitor's verdicts as the world recorded them, not a second
/// monitor). Made again only when one of those changes.
#[hook]
fn use_timeline_layout(
    state: &AppContext,
    zoom: usize,
    view_w: f64,
    room: f64,
    style: Style,
) -> (Rc<Layout>, PerLane, usize, Rc<Vec<StepMark>>) {
    let state = state.clone();
    let (lang, z) = (state.lang, ZOOMS[zoom]);
    let memo = use_memo(
        (
            state.rev,
            lang,
            zoom,
            state.lesson_id(),
            view_w as u32,
            state.present,
            room as u32,
            state.legend,
        ),
        move |_| {
            let (trace, now) = match (&state.lesson, &state.real) {
                // An opened history or capture (issue 40), whole.
                (None, _) if state.opened.is_some() => {
                    let trace = state.opened.as_ref().map(|o| o.trace.clone()).unwrap_or_default();
                    let now = trace.events.iter().map(|e| e.at_ms).max().unwrap_or(0);
                    (trace, now)
                }
                (Some(s), _) => {
                    let s = s.borrow();
                    let mut trace = s.trace();
                    // A follower of a presenter on real servers draws the
                    // relayed run (its own replay names the lanes).
                    match state.class.as_ref().map(|c| c.borrow()).filter(|c| c.shows_live()) {
                        Some(c) => {
                            trace.events = c.live.clone();
                            let now = trace.events.last().map_or(0, |e| e.at_ms);
                            (trace, now)
                        }
                        None => (trace, s.now_ms()),
                    }
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
            // Presenter mode: the first style of the ladder at which the
            // whole timeline fits the screen's height.
            let mut l = layout_in(&trace, now, lang, view_w, z, style);
            if style == Style::PRESENT && room > 0.0 {
                for next in present_ladder().skip(1) {
                    let fits = if state.legend { l.height } else { l.lanes_bottom + 8.0 } <= room;
                    if fits {
                        break;
                    }
                    l = layout_in(&trace, now, lang, view_w, z, next);
                }
            }
            let mut per_lane = vec![Vec::new(); l.lanes.len()];
            for m in &l.marks {
                per_lane[m.lane].push(m.clone());
            }
            let per_lane: Vec<Rc<Vec<Mark>>> = per_lane.into_iter().map(Rc::new).collect();
            let counterexample = state.lesson.is_some() && state.explore_link.is_some();
            let checks = if counterexample { step_marks(&trace) } else { Vec::new() };
            (Rc::new(l), Rc::new(per_lane), trace.events.len(), Rc::new(checks))
        },
    );
    (memo.0.clone(), memo.1.clone(), memo.2, memo.3.clone())
}

/// Presenter mode's styles, biggest type first: at each size (19 px down
/// to 13 px) regular rows, then compact ones, so a race's ten lanes on a
/// 900 px screen get 15.5 px in compact rows rather than 13 px in regular
/// ones. The first is [`Style::PRESENT`].
fn present_ladder() -> impl Iterator<Item = Style> {
    [19.0, 17.0, 15.5, 14.0, 13.0].into_iter().flat_map(|font| {
        [
            Style::sized(font),
            Style {
                compact: true,
                ..Style::sized(font)
            },
        ]
    })
}

/// Ctrl+wheel zooms around the pointer.
fn wheel_zoom(
    zoom: &UseStateHandle<usize>,
    anchor: &Rc<RefCell<Option<Anchor>>>,
    scroll_ref: &NodeRef,
    width: f64,
) -> Callback<WheelEvent> {
    let (zoom, anchor, scroll_ref) = (zoom.clone(), anchor.clone(), scroll_ref.clone());
    Callback::from(move |e: WheelEvent| {
        if !e.ctrl_key() {
            return;
        }
        e.prevent_default();
        let Some(el) = scroll_ref.cast::<Element>() else { return };
        let offset = f64::from(e.client_x()) - el.get_bounding_client_rect().left();
        let share = (f64::from(el.scroll_left()) + offset) / width;
        let d = if e.delta_y() < 0.0 { 1 } else { -1 };
        let i = (*zoom as isize + d).clamp(0, ZOOMS.len() as isize - 1) as usize;
        if i != *zoom {
            *anchor.borrow_mut() = Some(Anchor { share, offset });
            zoom.set(i);
        }
    })
}

/// The timeline's heading row: zoom out, in and reset, the legend switch,
/// SVG and PNG export, presenter mode.
fn timeline_head(
    state: &AppContext,
    z: f64,
    onzoom: impl Fn(isize) -> Callback<MouseEvent>,
    refs: [&NodeRef; 3],
) -> Html {
    let lang = state.lang;
    let [svg_ref, link_ref, png_ref] = refs;
    let lesson = state.lesson_id().unwrap_or_else(|| "lab".into());
    let title = {
        let t = state
            .lesson
            .as_ref()
            .map(|s| crate::catalog::text(&s.borrow().lesson().title, lang).to_owned())
            .unwrap_or_else(|| Text::Timeline.get(lang).to_owned());
        format!("locklab {lesson} · {t}")
    };
    let file = format!("locklab-{lesson}.svg");
    let onexport = {
        let (svg_ref, link_ref, title) = (svg_ref.clone(), link_ref.clone(), title.clone());
        Callback::from(move |_: MouseEvent| {
            let (Some(svg), Some(a)) = (svg_ref.cast::<Element>(), link_ref.cast::<Element>()) else {
                return;
            };
            let _ = a.set_attribute("href", &svg_data_url(&export_markup(&svg, &title)));
        })
    };
    // PNG: the same SVG drawn on a canvas at twice its size; the link gets
    // the PNG once the image has loaded, and is clicked again then.
    let onpng = png_export(svg_ref.clone(), png_ref.clone(), title.clone());
    let onpresent = {
        let state = state.clone();
        Callback::from(move |_: MouseEvent| state.dispatch(crate::state::Action::TogglePresent))
    };
    let onlegend = {
        let state = state.clone();
        Callback::from(move |_: MouseEvent| state.dispatch(crate::state::Action::ToggleLegend))
    };
    html! {
        <div class="timeline-head">
            <h2>{ Text::Timeline.get(lang) }</h2>
            <span class="axis-note" data-testid="axis-unit">{ Text::AxisUnit.get(lang) }</span>
            <div class="spacer" />
            <button class="quiet" data-testid="zoom-out" title={ Text::ZoomOut.get(lang) } aria-label={ Text::ZoomOut.get(lang) } onclick={ onzoom(-1) }>{ "−" }</button>
            <span class="zoom" data-testid="zoom">{ format!("{z}×") }</span>
            <button class="quiet" data-testid="zoom-in" title={ Text::ZoomIn.get(lang) } aria-label={ Text::ZoomIn.get(lang) } onclick={ onzoom(1) }>{ "+" }</button>
            <button class="quiet" data-testid="zoom-reset" onclick={ onzoom(0) }>{ Text::ZoomReset.get(lang) }</button>
            <button class={ classes!("quiet", state.legend.then_some("on")) } data-testid="legend-toggle"
                aria-pressed={ state.legend.to_string() } onclick={ onlegend }>{ Text::Legend.get(lang) }</button>
            <a class="button quiet" ref={ link_ref } data-testid="export-svg" download={ file } href="#" onclick={ onexport }>{ Text::ExportSvg.get(lang) }</a>
            if !state.present {
                <button class="quiet present-toggle" data-testid="present" onclick={ onpresent }>{ Text::Present.get(lang) }</button>
            }
            <a class="button quiet" ref={ png_ref } data-testid="export-png" download={ format!("locklab-{lesson}.png") } href="#" onclick={ onpng }>{ Text::ExportPng.get(lang) }</a>
        </div>
    }
}

/// After a zoom: keep the anchor (the pointer, or the present) in place.
#[hook]
fn use_keep_anchor(zoom: usize, anchor: &Rc<RefCell<Option<Anchor>>>, scroll_ref: &NodeRef, w: f64) {
    let (scroll_ref, anchor) = (scroll_ref.clone(), anchor.clone());
    use_effect_with((zoom, w as u32), move |_| {
        if let (Some(a), Some(el)) = (anchor.borrow_mut().take(), scroll_ref.cast::<Element>()) {
            el.set_scroll_left((a.share * w - a.offset).max(0.0) as i32);
        }
    });
}

/// The zoom buttons: `d` steps in or out (0 resets), around the present
/// (`now_x` of a plot `width` wide), centred.
fn zoom_by<'r>(
    zoom: &'r UseStateHandle<usize>,
    anchor: &'r Rc<RefCell<Option<Anchor>>>,
    scroll_ref: &'r NodeRef,
    (now_x, width): (f64, f64),
) -> impl Fn(isize) -> Callback<MouseEvent> + 'r {
    move |d: isize| {
        let (zoom, anchor, scroll_ref) = (zoom.clone(), anchor.clone(), scroll_ref.clone());
        Callback::from(move |_: MouseEvent| {
            let i = (*zoom as isize + d).clamp(0, ZOOMS.len() as isize - 1) as usize;
            // Zoom around the present (the current step), centred.
            if let Some(el) = scroll_ref.cast::<Element>() {
                let view = f64::from(el.client_width());
                *anchor.borrow_mut() = Some(Anchor {
                    share: now_x / width,
                    offset: view / 2.0,
                });
            }
            zoom.set(if d == 0 { 0 } else { i });
        })
    }
}
