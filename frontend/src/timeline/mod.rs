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
//!
//! ## Files
//!
//! Split by what the pieces lay out: [`axis`] (time to x), [`lanes`]
//! (which lanes, how tall), [`shapes`] (marks, arrows, bars, spans, bands),
//! [`labels`] (the texts, callouts and legend), and `events`, which walks
//! the trace and draws each event with them (`events/faults.rs`: faults,
//! failovers, elections). This file holds the [`Layout`] they fill and the
//! entry points.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use locklab_core::actor::{Actor, Names};
use locklab_core::observe::{LockChange, Via};
use locklab_core::trace::{command_line, Event, EventKind, Trace};
use locklab_core::Reply;

use crate::i18n::{seconds, Lang, Text};

mod axis;
mod events;
mod labels;
mod lanes;
mod shapes;
#[cfg(test)]
mod tests;

pub use axis::*;
use events::{Builder, Note};
pub use labels::*;
pub use lanes::*;
pub use shapes::*;

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

/// Arrows per 100 px of plot past which a timeline is [`Layout::dense`].
/// The lessons split cleanly: a story has at most 9, a race or a load
/// test (18, 25–27: five clients, five masters) 44 and more.
const DENSE_ARROWS: f64 = 20.0;

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
    /// Each event's x, in trace order (the explorer's per-step invariant
    /// marks sit there on the axis).
    pub xs: Vec<f64>,
}

/// Lay `trace` out, with `now_ms` as the present (open bars end there).
pub fn layout(trace: &Trace, now_ms: u64, lang: Lang) -> Layout {
    layout_zoomed(trace, now_ms, lang, 1.0)
}

/// [`layout`] with the time axis `zoom` (≥ 1) times as wide as the view.
pub fn layout_zoomed(trace: &Trace, now_ms: u64, lang: Lang, zoom: f64) -> Layout {
    layout_in(trace, now_ms, lang, 960.0, zoom, Style::NORMAL)
}

/// Lay `trace` out in a view `width` CSS pixels wide, the time axis `zoom`
/// (≥ 1) times that, with `now_ms` as the present (open bars end there).
pub fn layout_in(trace: &Trace, now_ms: u64, lang: Lang, width: f64, zoom: f64, style: Style) -> Layout {
    let (mut builder, xs) = Builder::new(trace, now_ms, lang, width, zoom, style);
    for (i, (e, &x)) in trace.events.iter().zip(&xs).enumerate() {
        builder.event(i, e, x);
    }
    Layout { xs, ..builder.finish() }
}
