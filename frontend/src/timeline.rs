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
//! ## The time axis
//!
//! Virtual time is mostly idle and then very busy: a whole lesson's commands
//! can share one millisecond until somebody moves the clock. A linear axis
//! would pile them up, so every instant that has events gets a slot of
//! fixed width per event on top of the linear part: x grows with time *and*
//! with the number of events so far. The axis stays monotonic — order and
//! duration both read left to right — and ticks are placed through the same
//! mapping.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use locklab_core::trace::{command_line, Actor, EventKind, LockChange, Trace, Via};
use locklab_core::Reply;

use crate::i18n::{Lang, Text};

pub const VIEW_W: f64 = 960.0;
pub const LABEL_W: f64 = 118.0;
const RIGHT_PAD: f64 = 28.0;
pub const AXIS_H: f64 = 26.0;
const LANE_H: f64 = 42.0;
const ROW_H: f64 = 18.0;
/// Rows of lock bars per lane before keys start sharing the last one.
const MAX_ROWS: usize = 4;
/// The widest slot an event gets on the axis.
const NUDGE: f64 = 11.0;
/// Tick spacings to choose from, in ms.
const TICK_STEPS: [u64; 11] =
    [500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000];

/// `12 s`, `1.5 s`, `0.25 s`: virtual time for people.
pub fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        let s = format!("{:.3}", ms as f64 / 1000.0);
        format!("{} s", s.trim_end_matches('0'))
    }
}

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
    pub y: f64,
    pub height: f64,
}

impl Lane {
    pub fn mid(&self) -> f64 {
        self.y + self.height / 2.0
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
        } else if replies.iter().all(|r| matches!(r, Reply::Nil | Reply::NilArray | Reply::Integer(0))) {
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
    Expired { key: String },
    Lost,
    TimedOut,
    Fault,
    Write { accepted: bool },
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
}

/// A violation in one line. English is core's own sentence (it names
/// tokens and times); Chinese says what broke and who was involved, from
/// the violation's kind and actors, and keeps core's sentence for the
/// tooltip.
fn violation_line(v: &locklab_core::invariants::Violation, names: &locklab_core::trace::Names, lang: Lang) -> String {
    use locklab_core::invariants::Invariant;
    if lang == Lang::En {
        return v.detail.clone();
    }
    let who: Vec<String> = v
        .actors
        .iter()
        .map(|&a| match a {
            locklab_core::trace::Actor::Resource => "受保护资源".to_owned(),
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
}

/// Everything the SVG needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub height: f64,
    pub span_ms: u64,
    pub lanes: Vec<Lane>,
    pub ticks: Vec<Tick>,
    pub bars: Vec<Bar>,
    pub arrows: Vec<Arrow>,
    pub marks: Vec<Mark>,
    pub bands: Vec<Band>,
    pub spans: Vec<Span>,
    pub now_x: f64,
    /// The SVG's width in its own units: [`VIEW_W`] times the zoom.
    pub width: f64,
    /// Marks folded into a neighbour closer than a pixel (see [`merge_marks`]).
    pub merged: usize,
}

/// The time axis: linear in time plus a slot per event (see the module docs).
#[derive(Clone, Debug)]
pub struct Axis {
    /// The plot's width in SVG units (wider when zoomed in).
    plot_w: f64,
    span_ms: u64,
    k: f64,
    nudge: f64,
    /// at_ms → (slots before this instant, events at it).
    instants: BTreeMap<u64, (usize, usize)>,
}

impl Axis {
    pub fn new(times: &[u64], latest_ms: u64) -> Axis {
        Axis::zoomed(times, latest_ms, 1.0)
    }

    /// The axis `zoom` times as wide as the view.
    pub fn zoomed(times: &[u64], latest_ms: u64, zoom: f64) -> Axis {
        let span = (latest_ms + 5_000).div_ceil(10_000) * 10_000;
        let span_ms = span.max(30_000);
        let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
        for &t in times {
            *counts.entry(t.min(span_ms)).or_default() += 1;
        }
        let plot = (VIEW_W - LABEL_W - RIGHT_PAD) * zoom.max(1.0);
        let nudge = if times.is_empty() { 0.0 } else { NUDGE.min(plot * 0.5 / times.len() as f64) };
        let k = (plot - times.len() as f64 * nudge) / span_ms as f64;
        let mut before = 0;
        let instants = counts
            .into_iter()
            .map(|(t, n)| {
                let entry = (t, (before, n));
                before += n;
                entry
            })
            .collect();
        Axis { plot_w: plot, span_ms, k, nudge, instants }
    }

    fn slots_before(&self, t: u64) -> usize {
        self.instants.range(..t).map(|(_, &(_, n))| n).sum()
    }

    /// x at the start of instant `t` (before its events).
    pub fn x(&self, t: u64) -> f64 {
        let t = t.min(self.span_ms);
        LABEL_W + t as f64 * self.k + self.slots_before(t) as f64 * self.nudge
    }

    /// x just after the events of instant `t`.
    pub fn x_after(&self, t: u64) -> f64 {
        let t = t.min(self.span_ms);
        let at = self.instants.get(&t).map_or(0, |&(_, n)| n);
        self.x(t) + at as f64 * self.nudge
    }

    /// x of the `nth` event of instant `t`, centred in its slot.
    pub fn x_event(&self, t: u64, nth: usize) -> f64 {
        self.x(t) + (nth as f64 + 0.5) * self.nudge
    }

    /// At most 8 ticks on round values, 0 included.
    pub fn ticks(&self) -> Vec<u64> {
        let max = (8.0 * self.plot_w / (VIEW_W - LABEL_W - RIGHT_PAD)).round().max(8.0) as u64;
        let step = TICK_STEPS.into_iter().find(|s| self.span_ms / s <= max).unwrap_or(self.span_ms);
        (0..=self.span_ms / step).map(|i| i * step).collect()
    }
}

/// The command's name and first key: `SET lock:order:1`.
pub fn short(line: &str) -> String {
    let mut words = line.split_whitespace();
    let label = match (words.next(), words.next()) {
        (Some(cmd), Some(key)) => format!("{} {key}", cmd.to_uppercase()),
        (Some(cmd), None) => cmd.to_uppercase(),
        _ => String::new(),
    };
    if label.chars().count() > 22 {
        format!("{}…", label.chars().take(21).collect::<String>())
    } else {
        label
    }
}

fn replies_text(replies: &[Reply]) -> String {
    replies.iter().map(|r| r.to_cli().replace('\n', " ")).collect::<Vec<_>>().join(" | ")
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
    let mut last: HashMap<(usize, std::mem::Discriminant<MarkKind>), (usize, usize)> = HashMap::new();
    for m in marks.drain(..) {
        let slot = (m.lane, std::mem::discriminant(&m.kind));
        match last.get_mut(&slot) {
            Some((i, n)) if (m.x - kept[*i].x).abs() < 1.0 => *n += 1,
            _ => {
                if let Some((i, n)) = last.get(&slot) {
                    if *n > 0 {
                        kept[*i].title.push_str(&format!(" (+{n})"));
                    }
                }
                last.insert(slot, (kept.len(), 0));
                kept.push(m);
            }
        }
    }
    for (i, n) in last.values() {
        if *n > 0 {
            kept[*i].title.push_str(&format!(" (+{n})"));
        }
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
    let names = &trace.names;
    let events = &trace.events;

    // Lanes and their rows: one row per lock key on a node, per believed key
    // on a client.
    let mut node_keys: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    let mut client_keys: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    let mut resource = false;
    for e in events {
        match (&e.kind, e.actor) {
            (EventKind::Lock { key, .. }, Actor::Node(n)) => {
                let keys = node_keys.entry(n).or_default();
                if !keys.contains(&key.as_str()) {
                    keys.push(key);
                }
            }
            (EventKind::Belief { key, .. }, Actor::Client(c)) => {
                let keys = client_keys.entry(c).or_default();
                if !keys.contains(&key.as_str()) {
                    keys.push(key);
                }
            }
            (EventKind::Write { .. } | EventKind::WriteSent { .. }, _) => resource = true,
            _ => {}
        }
    }
    let row_of = |keys: Option<&Vec<&str>>, key: &str| {
        keys.and_then(|k| k.iter().position(|&x| x == key)).unwrap_or(0).min(MAX_ROWS - 1)
    };
    let mut lanes = Vec::new();
    let mut y = AXIS_H;
    let mut push_lane = |kind, label: String, rows: usize| {
        let height = LANE_H.max(rows.min(MAX_ROWS) as f64 * ROW_H + 14.0);
        lanes.push(Lane { kind, label, y, height });
        y += height;
    };
    for (i, name) in names.clients.iter().enumerate() {
        let i = i as u32;
        let label = if name.chars().count() <= 2 { format!("{} {name}", Text::Client.get(lang)) } else { name.clone() };
        push_lane(LaneKind::Client(i), label, client_keys.get(&i).map_or(1, Vec::len));
    }
    for (i, name) in names.nodes.iter().enumerate() {
        let i = i as u32;
        push_lane(LaneKind::Node(i), name.clone(), node_keys.get(&i).map_or(1, Vec::len));
    }
    if resource {
        push_lane(LaneKind::Resource, Text::Resource.get(lang).to_owned(), 1);
    }
    let height = y + 6.0;
    let lane_of = |kind: LaneKind| lanes.iter().position(|l| l.kind == kind);
    let actor_lane = |a: Actor| match a {
        Actor::Client(c) => lane_of(LaneKind::Client(c)),
        Actor::Node(n) => lane_of(LaneKind::Node(n)),
        Actor::Resource => lane_of(LaneKind::Resource),
        Actor::World => None,
    };
    let row_y = |lane: &Lane, row: usize, rows: usize| {
        let rows = rows.clamp(1, MAX_ROWS) as f64;
        lane.mid() - rows * ROW_H / 2.0 + row as f64 * ROW_H + 1.0
    };

    // The axis covers the present, every event, deadlines and violations.
    let mut latest = now_ms;
    for e in events {
        latest = latest.max(e.at_ms);
        match &e.kind {
            EventKind::Lock { change: LockChange::Acquired { ttl_ms: Some(t), .. } | LockChange::Renewed { ttl_ms: Some(t) }, .. } => {
                latest = latest.max(e.at_ms + t);
            }
            EventKind::Violation { violation } => latest = latest.max(violation.to_ms),
            _ => {}
        }
    }
    let times: Vec<u64> = events.iter().map(|e| e.at_ms).collect();
    let axis = Axis::zoomed(&times, latest, zoom);
    let mut nth: HashMap<u64, usize> = HashMap::new();
    let xs: Vec<f64> = events
        .iter()
        .map(|e| {
            let n = nth.entry(e.at_ms).or_default();
            *n += 1;
            axis.x_event(e.at_ms, *n - 1)
        })
        .collect();
    let now_x = axis.x_after(now_ms);

    let mut marks = Vec::new();
    let mut arrows = Vec::new();
    let mut bars: Vec<Bar> = Vec::new();
    let mut bands = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    // Open spans by (lane, what ends them).
    let mut open_spans: HashMap<(usize, String), usize> = HashMap::new();
    // Open bars by (lane, key); sent requests by req; last write sent by client.
    let mut open: HashMap<(usize, String), usize> = HashMap::new();
    let mut sent: HashMap<u64, (f64, usize, String)> = HashMap::new();
    let mut executed: HashMap<u64, (f64, usize)> = HashMap::new();
    let mut write_sent: HashMap<u32, (f64, usize)> = HashMap::new();

    for (e, &x) in events.iter().zip(&xs) {
        let title = format!("t = {} · {}: {}", seconds(e.at_ms), names.actor(e.actor), e.describe(names));
        let lane = actor_lane(e.actor);
        let mut mark = |lane: usize, kind: MarkKind, label: Option<String>, client: Option<u32>| {
            let y = lanes[lane].mid();
            marks.push(Mark { lane, x, y, kind, label, title: title.clone(), client });
        };
        match &e.kind {
            EventKind::Sent { req, commands, .. } => {
                if let (Some(l), Actor::Client(c)) = (lane, e.actor) {
                    let line = commands_text(commands);
                    mark(l, MarkKind::Command(Tone::Neutral), Some(short(&line)), Some(c));
                    sent.insert(*req, (x, l, line));
                }
            }
            EventKind::Executed { req, client, commands, replies } => {
                let tone = Tone::of(replies);
                match (sent.get(req), lane) {
                    (Some(&(sx, sl, _)), Some(nl)) => {
                        arrows.push(Arrow { x1: sx, y1: lanes[sl].mid(), x2: x, y2: lanes[nl].mid(), kind: ArrowKind::Request });
                        mark(nl, MarkKind::Executed(tone), None, Some(*client));
                        executed.insert(*req, (x, nl));
                    }
                    _ => {
                        if let Some(cl) = lane_of(LaneKind::Client(*client)) {
                            let line = format!("{} ⇒ {}", commands_text(commands), replies_text(replies));
                            let label = short(&commands_text(commands));
                            marks.push(Mark {
                                lane: cl,
                                x,
                                y: lanes[cl].mid(),
                                kind: MarkKind::Command(tone),
                                label: Some(label),
                                title: format!("t = {} · {}: {line}", seconds(e.at_ms), names.client(*client)),
                                client: Some(*client),
                            });
                        }
                    }
                }
            }
            EventKind::Received { req, replies, .. } => {
                if let (Some(l), Actor::Client(c)) = (lane, e.actor) {
                    if let Some(&(ex, el)) = executed.get(req) {
                        arrows.push(Arrow { x1: ex, y1: lanes[el].mid(), x2: x, y2: lanes[l].mid(), kind: ArrowKind::Reply });
                    }
                    mark(l, MarkKind::Reply(Tone::of(replies)), None, Some(c));
                }
            }
            EventKind::Lost { req, client, .. } => {
                if let Some(l) = lane {
                    if let Some(&(sx, sl, _)) = sent.get(req) {
                        arrows.push(Arrow { x1: sx, y1: lanes[sl].mid(), x2: x, y2: lanes[l].mid(), kind: ArrowKind::Lost });
                    }
                    mark(l, MarkKind::Lost, None, Some(*client));
                }
            }
            EventKind::TimedOut { .. } => {
                if let (Some(l), Actor::Client(c)) = (lane, e.actor) {
                    mark(l, MarkKind::TimedOut, None, Some(c));
                }
            }
            EventKind::Expired { key } => {
                if let Some(l) = lane {
                    mark(l, MarkKind::Expired { key: key.clone() }, Some(format!("{key} {}", Text::LockExpired.get(lang))), None);
                }
            }
            EventKind::Lock { key, change, via } => {
                let Some(l) = lane else { continue };
                let rows = match e.actor {
                    Actor::Node(n) => node_keys.get(&n),
                    _ => None,
                };
                let end_open = |bars: &mut Vec<Bar>, open: &mut HashMap<(usize, String), usize>, end: BarEnd| {
                    if let Some(i) = open.remove(&(l, key.clone())) {
                        bars[i].x1 = x.max(bars[i].x0 + 2.0);
                        bars[i].end = Some(end);
                        bars[i].deadline_x = None;
                    }
                };
                match change {
                    LockChange::Acquired { owner, value, ttl_ms } => {
                        end_open(&mut bars, &mut open, BarEnd::Gone);
                        let who = owner.map_or("?".to_owned(), |o| names.client(o).to_owned());
                        open.insert((l, key.clone()), bars.len());
                        bars.push(Bar {
                            lane: l,
                            x0: x,
                            x1: now_x.max(x + 2.0),
                            y: row_y(&lanes[l], row_of(rows, key), rows.map_or(1, Vec::len)),
                            deadline_x: ttl_ms.map(|t| axis.x(e.at_ms + t)),
                            key: key.clone(),
                            owner: *owner,
                            owner_name: owner.map_or(String::new(), |o| names.client(o).to_owned()),
                            end: None,
                            belief: false,
                            title: format!("{key} = {value:?} ({who}) · {}", names.actor(e.actor)),
                        });
                    }
                    LockChange::Renewed { ttl_ms } => {
                        if let Some(&i) = open.get(&(l, key.clone())) {
                            bars[i].deadline_x = ttl_ms.map(|t| axis.x(e.at_ms + t));
                        }
                    }
                    LockChange::Removed { .. } => {
                        end_open(&mut bars, &mut open, if *via == Via::Expiry { BarEnd::Expired } else { BarEnd::Gone });
                    }
                }
            }
            EventKind::Belief { key, holds } => {
                let (Some(l), Actor::Client(c)) = (lane, e.actor) else { continue };
                let slot = (l, format!("belief:{key}"));
                if *holds {
                    if let Entry::Vacant(vacant) = open.entry(slot) {
                        vacant.insert(bars.len());
                        let keys = client_keys.get(&c);
                        bars.push(Bar {
                            lane: l,
                            x0: x,
                            x1: now_x.max(x + 2.0),
                            y: row_y(&lanes[l], row_of(keys, key), keys.map_or(1, Vec::len)),
                            deadline_x: None,
                            key: key.clone(),
                            owner: Some(c),
                            owner_name: names.client(c).to_owned(),
                            end: None,
                            belief: true,
                            title: format!("{} {} {key}", names.client(c), Text::Believes.get(lang)),
                        });
                    }
                } else if let Some(i) = open.remove(&slot) {
                    bars[i].x1 = x.max(bars[i].x0 + 2.0);
                    bars[i].end = Some(BarEnd::Gone);
                }
            }
            EventKind::WriteSent { .. } => {
                if let (Some(l), Actor::Client(c)) = (lane, e.actor) {
                    write_sent.insert(c, (x, l));
                    mark(l, MarkKind::Info, None, Some(c));
                }
            }
            EventKind::Write { client, accepted, .. } => {
                if let Some(l) = lane {
                    if let Some((sx, sl)) = write_sent.remove(client) {
                        arrows.push(Arrow { x1: sx, y1: lanes[sl].mid(), x2: x, y2: lanes[l].mid(), kind: ArrowKind::Write });
                    }
                    mark(l, MarkKind::Write { accepted: *accepted }, None, Some(*client));
                }
            }
            EventKind::Replicated { from, .. } => {
                if let (Some(l), Some(fl)) = (lane, lane_of(LaneKind::Node(*from))) {
                    arrows.push(Arrow { x1: x, y1: lanes[fl].mid(), x2: x, y2: lanes[l].mid(), kind: ArrowKind::Replication });
                    mark(l, MarkKind::Info, None, None);
                }
            }
            EventKind::ReplicationLost { .. } => {
                if let Some(l) = lane {
                    mark(l, MarkKind::Lost, None, None);
                }
            }
            EventKind::Fault { fault } => {
                use locklab_core::world::fault::Endpoint;
                use locklab_core::world::Fault as F;
                let endpoint_lane = |e: &Endpoint| match e {
                    Endpoint::Client(name) => {
                        names.clients.iter().position(|n| n == name).and_then(|c| lane_of(LaneKind::Client(c as u32)))
                    }
                    Endpoint::Node(n) => lane_of(LaneKind::Node(*n)),
                    Endpoint::Resource => lane_of(LaneKind::Resource),
                };
                let link_key = |a: &Endpoint, b: &Endpoint| format!("cut:{a:?}-{b:?}");
                type Open = Option<(usize, &'static str, String)>;
                let (start, end): (Open, Option<(usize, String)>) = match (fault, lane) {
                    (F::PauseClient { .. }, Some(l)) => (Some((l, "paused", "resume".into())), None),
                    (F::ResumeClient { .. }, Some(l)) => (None, Some((l, "resume".into()))),
                    (F::CrashClient { .. }, Some(l)) => (Some((l, "crashed", "never".into())), None),
                    (F::CrashNode { .. } | F::RestartNode { .. }, Some(l)) => (Some((l, "down", "restart".into())), None),
                    (F::CutLink { a, b }, _) => (endpoint_lane(a).map(|l| (l, "cut", link_key(a, b))), None),
                    (F::HealLink { a, b }, _) => (None, endpoint_lane(a).map(|l| (l, link_key(a, b)))),
                    _ => (None, None),
                };
                if let Some((l, key)) = end {
                    if let Some(i) = open_spans.remove(&(l, key)) {
                        spans[i].x1 = x.max(spans[i].x0 + 2.0);
                        spans[i].open = false;
                    }
                }
                if let Some((l, kind, key)) = start {
                    open_spans.entry((l, key)).or_insert_with(|| {
                        spans.push(Span { lane: l, x0: x, x1: now_x.max(x + 2.0), kind, open: true, title: title.clone() });
                        spans.len() - 1
                    });
                }
                let l = lane.unwrap_or(0);
                if !lanes.is_empty() {
                    mark(l, MarkKind::Fault, Some("⚡".to_owned()), None);
                }
            }
            EventKind::Resumed | EventKind::Restarted { .. } | EventKind::Note { .. } => {
                if let Some(l) = lane {
                    let key = if matches!(e.kind, EventKind::Resumed) { "resume" } else { "restart" };
                    if !matches!(e.kind, EventKind::Note { .. }) {
                        if let Some(i) = open_spans.remove(&(l, key.to_owned())) {
                            spans[i].x1 = x.max(spans[i].x0 + 2.0);
                            spans[i].open = false;
                        }
                    }
                    mark(l, MarkKind::Info, None, None);
                }
            }
            EventKind::Violation { violation } => {
                let x0 = axis.x(violation.from_ms);
                bands.push(Band {
                    x0,
                    x1: axis.x_after(violation.to_ms).max(x0 + 4.0),
                    name: violation.invariant.name(),
                    explain: violation_line(violation, names, lang),
                    title: if lang == Lang::En { title.clone() } else { format!("{}\n{title}", violation_line(violation, names, lang)) },
                });
            }
            EventKind::Granted { .. } | EventKind::Overlap { .. } | EventKind::Done => {}
        }
    }

    let ticks = axis.ticks().into_iter().map(|t| Tick { x: axis.x(t), label: seconds(t) }).collect();
    let merged = merge_marks(&mut marks, &mut arrows);
    let width = LABEL_W + axis.plot_w + RIGHT_PAD;
    Layout { height, span_ms: axis.span_ms, lanes, ticks, bars, arrows, marks, bands, spans, now_x, width, merged }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::{Client, Lab};

    #[test]
    fn violation_bands_explain_themselves_in_the_pages_language() {
        let l = crate::catalog::find("05").unwrap();
        let s = crate::session::Session::new(l, 7, l.steps.len());
        let (en, zh) = (layout(&s.trace(), s.now_ms(), Lang::En), layout(&s.trace(), s.now_ms(), Lang::Zh));
        assert!(!en.bands.is_empty());
        for (e, z) in en.bands.iter().zip(&zh.bands) {
            assert!(e.explain.is_ascii() && !e.explain.is_empty(), "{}", e.explain);
            assert!(!z.explain.is_ascii(), "{}", z.explain);
            assert!(z.title.contains(&e.explain), "the tooltip keeps core's sentence: {}", z.title);
        }
    }

    #[test]
    fn ten_thousand_events_stay_within_a_bounded_dom() {
        let mut lab = Lab::new();
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
        assert!(l.marks.len() <= 3 * 900, "{} marks for {} events", l.marks.len(), big.events.len());
        assert!(l.merged > 5_000);
        let z = layout_zoomed(&big, 0, Lang::En, 4.0);
        assert!(z.width > l.width * 3.0 && z.marks.len() > l.marks.len(), "{} {}", z.marks.len(), l.marks.len());
    }

    #[test]
    fn seconds_read_naturally() {
        assert_eq!(seconds(0), "0 s");
        assert_eq!(seconds(30_000), "30 s");
        assert_eq!(seconds(1_500), "1.5 s");
        assert_eq!(seconds(250), "0.25 s");
    }

    #[test]
    fn the_axis_is_monotonic_and_makes_room_for_busy_instants() {
        let axis = Axis::new(&[0, 0, 0, 10_000], 10_000);
        assert_eq!(axis.span_ms, 30_000);
        assert_eq!(axis.ticks(), vec![0, 5_000, 10_000, 15_000, 20_000, 25_000, 30_000]);
        assert_eq!(axis.x(0), LABEL_W);
        let e: Vec<f64> = (0..3).map(|n| axis.x_event(0, n)).collect();
        assert!(e[0] < e[1] && e[1] < e[2] && e[2] < axis.x_after(0));
        assert!(axis.x_after(0) < axis.x(5_000) && axis.x(5_000) < axis.x_event(10_000, 0));
        // Everything fits: the linear part and all the slots.
        assert!((axis.x_after(30_000) - (VIEW_W - RIGHT_PAD)).abs() < 1e-6);
        assert!(Axis::new(&[], 41_000).ticks().len() <= 9);
    }

    #[test]
    fn a_lab_trace_becomes_lanes_bars_and_marks() {
        let mut lab = Lab::new();
        lab.run(Client::A, "SET lock:order:1 token-A-111 NX PX 30000");
        lab.run(Client::B, "SET lock:order:1 token-B-222 NX PX 30000");
        lab.advance(31_000);
        lab.run(Client::B, "SET lock:order:1 token-B-222 NX PX 30000");
        let l = layout(lab.trace(), lab.now_ms(), Lang::En);
        let labels: Vec<&str> = l.lanes.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["client A", "client B", "client C", "redis"]);
        assert_eq!(l.bars.len(), 2);
        let (a, b) = (&l.bars[0], &l.bars[1]);
        assert_eq!((a.owner, a.end, b.owner, b.end), (Some(0), Some(BarEnd::Expired), Some(1), None));
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
        assert!(l.marks.iter().any(|m| m.kind == MarkKind::Expired { key: "lock:order:1".into() } && m.lane == 3));
        assert!(l.bands.is_empty());
        assert_eq!(short("set lock:order:1 token-A-111 NX PX 30000"), "SET lock:order:1");
        assert_eq!(short("get a-very-long-key-name-indeed"), "GET a-very-long-key-n…");
    }
}
