//! What each event of a trace draws: a [`Builder`] walks the events in
//! order with one method per kind of event, each adding its marks, arrows,
//! bars, spans, bands and callout sentences, and [`Builder::finish`] lays
//! the labels, callouts and legend out around them.
//!
//! The shapes are pushed in event order: the later passes (merging marks,
//! placing labels) depend on that order, so a method never reorders them.

use locklab_core::fault::{Endpoint, Fault};
use locklab_core::invariants::Violation;

use super::*;

mod faults;

/// A callout candidate: (x, lane y, text, kind, title).
pub(super) type Note = (f64, f64, String, &'static str, String);

/// One event being drawn: its index, the event, its x, its tooltip and its
/// actor's lane.
struct EventAt<'e> {
    i: usize,
    e: &'e Event,
    x: f64,
    title: String,
    lane: Option<usize>,
}

/// The lanes and axis a trace is laid out on, and everything its events
/// have drawn so far, with what later events need to know (open bars and
/// spans, requests in flight, what each node holds).
pub(super) struct Builder<'a> {
    names: &'a Names,
    events: &'a [Event],
    lang: Lang,
    zh: bool,
    style: Style,
    /// Each lane's bar rows, by lane index.
    lane_rows: Vec<Rows<'a>>,
    lanes: Vec<Lane>,
    axis: Axis,
    now_x: f64,
    label_w: f64,
    view_w: f64,
    svg_w: f64,
    callouts_top: f64,
    lanes_top: f64,
    lanes_bottom: f64,
    marks: Vec<Mark>,
    arrows: Vec<Arrow>,
    bars: Vec<Bar>,
    bands: Vec<Band>,
    /// Per band: its title and who (what merges a band), and how many
    /// violations it stands for.
    band_base: Vec<((String, Vec<String>), usize)>,
    spans: Vec<Span>,
    notes: Vec<Note>,
    /// Open spans by (lane, what ends them).
    open_spans: HashMap<(usize, String), usize>,
    /// Open bars by (lane, key); sent requests by req; last write sent by
    /// client.
    open: HashMap<(usize, String), usize>,
    sent: HashMap<u64, (f64, usize, String)>,
    executed: HashMap<u64, (f64, usize)>,
    write_sent: HashMap<u32, (f64, usize)>,
    /// On a lane that is a group of nodes: the nodes that hold each key's
    /// open bar (it ends when the last copy goes).
    copies: HashMap<(usize, String), Vec<u32>>,
    /// What each node holds (key → owner), the last TTL set per key, the
    /// last command each client ran, the tokens the resource took.
    held: HashMap<(u32, String), Option<u32>>,
    ttl_of: HashMap<(usize, String), u64>,
    last_cmd: HashMap<u32, String>,
    taken_tokens: Vec<i64>,
    roles: HashMap<usize, String>,
    /// The lane leading each group of members (by the name's letters:
    /// `etcd`, `zk`) and the role it was given for it.
    leaders: HashMap<String, (usize, String)>,
}

impl<'a> Builder<'a> {
    /// The lanes (one row per lock key on a node, per believed key on a
    /// client) and the axis fitted to the events that draw something and
    /// the present; also every event's x.
    pub(super) fn new(
        trace: &'a Trace,
        now_ms: u64,
        lang: Lang,
        width: f64,
        zoom: f64,
        style: Style,
    ) -> (Self, Vec<f64>) {
        let label_w = style.label_w();
        let view_w = width.max(label_w + 200.0);
        let plot_w = (view_w - label_w - style.right_pad()) * zoom.max(1.0);
        let callouts_top = style.axis_h();
        let lanes_top = callouts_top + CALLOUT_ROWS as f64 * style.callout_row() + 4.0;
        let (lanes, lane_rows, lanes_bottom) =
            build_lanes(&trace.names, lane_keys(&trace.events), lang, style, lanes_top);
        let (axis, xs) = fit_events(&trace.events, now_ms, label_w, plot_w, style);
        let now_x = axis.x_after(now_ms).min(axis.x_end());
        let builder = Builder {
            names: &trace.names,
            events: &trace.events,
            lang,
            zh: lang == Lang::Zh,
            style,
            lane_rows,
            lanes,
            axis,
            now_x,
            label_w,
            view_w,
            svg_w: label_w + plot_w + style.right_pad(),
            callouts_top,
            lanes_top,
            lanes_bottom,
            marks: Vec::new(),
            arrows: Vec::new(),
            bars: Vec::new(),
            bands: Vec::new(),
            band_base: Vec::new(),
            spans: Vec::new(),
            notes: Vec::new(),
            open_spans: HashMap::new(),
            open: HashMap::new(),
            sent: HashMap::new(),
            executed: HashMap::new(),
            write_sent: HashMap::new(),
            copies: HashMap::new(),
            held: HashMap::new(),
            ttl_of: HashMap::new(),
            last_cmd: HashMap::new(),
            taken_tokens: Vec::new(),
            roles: HashMap::new(),
            leaders: HashMap::new(),
        };
        (builder, xs)
    }

    /// Draws event `i`, `e`, at `x`: one arm per kind of event.
    pub(super) fn event(&mut self, i: usize, e: &'a Event, x: f64) {
        let title = format!(
            "t = {} · {}: {}",
            seconds(e.at_ms),
            self.names.actor(e.actor),
            e.describe(self.names)
        );
        let at = EventAt {
            i,
            e,
            x,
            title,
            lane: self.actor_lane(e.actor),
        };
        match &e.kind {
            EventKind::Sent { req, commands, .. } => self.on_sent(&at, *req, commands),
            EventKind::Executed {
                req,
                client,
                commands,
                replies,
            } => self.on_executed(&at, *req, *client, commands, replies),
            EventKind::Received { req, replies, .. } => self.on_received(&at, *req, replies),
            EventKind::Lost { req, client, .. } => self.on_lost(&at, *req, *client),
            EventKind::TimedOut { .. } => self.on_timed_out(&at),
            EventKind::Expired { key } => self.on_expired(&at, key),
            EventKind::Lock { key, change, via } => self.on_lock(&at, key, change, *via),
            EventKind::Belief { key, holds } => self.on_belief(&at, key, *holds),
            EventKind::Overlap {
                key,
                clients,
                begin: true,
                ..
            } => self.on_overlap(&at, key, clients),
            EventKind::WriteSent { .. } => self.on_write_sent(&at),
            EventKind::Write {
                client,
                accepted,
                token,
                ..
            } => self.on_write(&at, *client, *accepted, *token),
            EventKind::Replicated { from, .. } => self.on_replicated(&at, *from),
            EventKind::ReplicationLost { .. } => self.on_replication_lost(&at),
            EventKind::Fault { fault } => self.on_fault(&at, fault),
            EventKind::Resumed | EventKind::Restarted { .. } | EventKind::Note { .. } => self.on_info(&at),
            EventKind::Violation { violation } => self.on_violation(&at, violation),
            EventKind::Elected { term } => self.on_elected(&at, *term),
            EventKind::Overlap { .. } | EventKind::Granted { .. } | EventKind::Done => {}
        }
    }

    fn lane_of(&self, kind: LaneKind) -> Option<usize> {
        (self.lanes.iter()).position(|l| l.kind == kind || matches!(kind, LaneKind::Node(n) if l.members.contains(&n)))
    }

    /// Is lane `l` a group of nodes?
    fn grouped(&self, l: usize) -> bool {
        !self.lanes[l].members.is_empty()
    }

    fn actor_lane(&self, a: Actor) -> Option<usize> {
        match a {
            Actor::Client(c) => self.lane_of(LaneKind::Client(c)),
            Actor::Node(n) => self.lane_of(LaneKind::Node(n)),
            Actor::Resource => self.lane_of(LaneKind::Resource),
            Actor::World => None,
        }
    }

    fn endpoint_lane(&self, e: &Endpoint) -> Option<usize> {
        match e {
            Endpoint::Client(name) => self
                .names
                .clients
                .iter()
                .position(|n| n == name)
                .and_then(|c| self.lane_of(LaneKind::Client(c as u32))),
            Endpoint::Node(n) => self.lane_of(LaneKind::Node(*n)),
            Endpoint::Resource => self.lane_of(LaneKind::Resource),
        }
    }

    /// The y of bar row `row` on lane `l` (rows past [`MAX_ROWS`] share the last).
    fn row_y(&self, l: usize, row: usize) -> f64 {
        let row = row.min(MAX_ROWS - 1);
        let (lane, style) = (&self.lanes[l], self.style);
        lane.y + 4.0 + row as f64 * style.bar_row() + (style.bar_row() - style.bar_h()) / 2.0
    }

    /// `en` or `zh`, in the page's language.
    fn word(&self, en: &str, zh: &str) -> String {
        if self.zh { zh } else { en }.to_owned()
    }

    fn mark(&mut self, at: &EventAt, lane: usize, kind: MarkKind, label: Option<String>, client: Option<u32>) {
        let y = self.lanes[lane].mid();
        self.marks.push(Mark {
            lane,
            x: at.x,
            y,
            kind,
            label,
            title: at.title.clone(),
            client,
            count: 1,
        });
    }

    fn arrow(&mut self, (x1, l1): (f64, usize), (x2, l2): (f64, usize), kind: ArrowKind) {
        self.arrows.push(Arrow {
            x1,
            y1: self.lanes[l1].mid(),
            x2,
            y2: self.lanes[l2].mid(),
            kind,
        });
    }

    fn note(&mut self, at: &EventAt, y: f64, text: String, kind: &'static str) {
        self.notes.push((at.x, y, text, kind, at.title.clone()));
    }

    fn on_sent(&mut self, at: &EventAt, req: u64, commands: &[Vec<String>]) {
        if let (Some(l), Actor::Client(c)) = (at.lane, at.e.actor) {
            let line = commands_text(commands);
            self.mark(at, l, MarkKind::Command(Tone::Neutral), Some(short(commands)), Some(c));
            self.sent.insert(req, (at.x, l, line));
        }
    }

    /// An arrow from the request when it was seen leaving, else a command
    /// mark on the client's lane with the whole exchange as its tooltip.
    fn on_executed(&mut self, at: &EventAt, req: u64, client: u32, commands: &[Vec<String>], replies: &[Reply]) {
        let tone = Tone::of(replies);
        if let Some(name) = commands.first().and_then(|c| c.first()) {
            self.last_cmd.insert(client, name.to_uppercase());
        }
        let sent = self.sent.get(&req).map(|&(sx, sl, _)| (sx, sl));
        match (sent, at.lane) {
            (Some(from), Some(nl)) => {
                self.arrow(from, (at.x, nl), ArrowKind::Request);
                self.mark(at, nl, MarkKind::Executed(tone), None, Some(client));
                self.executed.insert(req, (at.x, nl));
            }
            _ => {
                if let Some(cl) = self.lane_of(LaneKind::Client(client)) {
                    let line = format!("{} ⇒ {}", commands_text(commands), replies_text(replies));
                    let label = short(commands);
                    self.marks.push(Mark {
                        lane: cl,
                        x: at.x,
                        y: self.lanes[cl].mid(),
                        kind: MarkKind::Command(tone),
                        label: Some(label),
                        title: format!("t = {} · {}: {line}", seconds(at.e.at_ms), self.names.client(client)),
                        client: Some(client),
                        count: 1,
                    });
                }
            }
        }
    }

    fn on_received(&mut self, at: &EventAt, req: u64, replies: &[Reply]) {
        if let (Some(l), Actor::Client(c)) = (at.lane, at.e.actor) {
            if let Some(&from) = self.executed.get(&req) {
                self.arrow(from, (at.x, l), ArrowKind::Reply);
            }
            self.mark(at, l, MarkKind::Reply(Tone::of(replies)), None, Some(c));
        }
    }

    fn on_lost(&mut self, at: &EventAt, req: u64, client: u32) {
        if let Some(l) = at.lane {
            if let Some(&(sx, sl, _)) = self.sent.get(&req) {
                self.arrow((sx, sl), (at.x, l), ArrowKind::Lost);
            }
            let label = self.word("lost", "丢失");
            self.mark(at, l, MarkKind::Lost, Some(label), Some(client));
        }
    }

    fn on_timed_out(&mut self, at: &EventAt) {
        if let (Some(l), Actor::Client(c)) = (at.lane, at.e.actor) {
            let label = self.word("timeout", "超时");
            self.mark(at, l, MarkKind::TimedOut, Some(label), Some(c));
        }
    }

    fn on_expired(&mut self, at: &EventAt, key: &str) {
        if let Some(l) = at.lane {
            let ttl = self.ttl_of.get(&(l, key.to_owned())).map(|&t| seconds(t));
            let text = match (self.lang, ttl) {
                (Lang::En, Some(t)) => format!("{key} expired (TTL {t})"),
                (Lang::En, None) => format!("{key} expired"),
                (Lang::Zh, Some(t)) => format!("{key} 过期（TTL {t}）"),
                (Lang::Zh, None) => format!("{key} 过期"),
            };
            // A group's lane says it once for all its members' copies.
            let said = |n: &Note| n.2 == text && (n.0 - at.x).abs() < 80.0;
            if !(self.grouped(l) && self.notes.iter().any(said)) {
                self.note(at, self.lanes[l].mid(), text, "expired");
            }
            self.mark(at, l, MarkKind::Expired { key: key.to_owned() }, None, None);
        }
    }

    fn on_lock(&mut self, at: &EventAt, key: &str, change: &LockChange, via: Via) {
        let Some(l) = at.lane else { return };
        let node = match at.e.actor {
            Actor::Node(n) => Some(n),
            _ => None,
        };
        match change {
            LockChange::Acquired { owner, value, ttl_ms } => {
                self.on_acquired(at, (l, node), key, *owner, value, *ttl_ms)
            }
            LockChange::Renewed { ttl_ms } => {
                if let Some(t) = ttl_ms {
                    self.ttl_of.insert((l, key.to_owned()), *t);
                }
                if let Some(&i) = self.open.get(&(l, key.to_owned())) {
                    let deadline_x = ttl_ms.map(|t| self.axis.x(at.e.at_ms + t));
                    self.bars[i].deadline_x = deadline_x;
                }
            }
            LockChange::Removed { by } => self.on_removed(at, (l, node), key, *by, via),
        }
    }

    /// Ends the open bar of `key` on lane `l` at `x`.
    fn end_bar(&mut self, l: usize, key: &str, x: f64, end: BarEnd) {
        if let Some(i) = self.open.remove(&(l, key.to_owned())) {
            let bar = &mut self.bars[i];
            bar.x1 = x.max(bar.x0 + 2.0);
            bar.end = Some(end);
            bar.deadline_x = None;
        }
    }

    /// A lock bar opens on the node's lane (ending the one it replaces).
    fn on_acquired(
        &mut self,
        at: &EventAt,
        (l, node): (usize, Option<u32>),
        key: &str,
        owner: Option<u32>,
        value: &str,
        ttl_ms: Option<u64>,
    ) {
        if let Some(n) = node {
            self.held.insert((n, key.to_owned()), owner);
        }
        if self.another_copy(l, node, key, owner) {
            return;
        }
        self.end_bar(l, key, at.x, BarEnd::Gone);
        match ttl_ms {
            Some(t) => self.ttl_of.insert((l, key.to_owned()), t),
            None => self.ttl_of.remove(&(l, key.to_owned())),
        };
        let names = self.names;
        let who = owner.map_or("?".to_owned(), |o| names.client(o).to_owned());
        let y = self.row_y(l, row_of(&self.lane_rows[l], key));
        self.open.insert((l, key.to_owned()), self.bars.len());
        self.bars.push(Bar {
            lane: l,
            x0: at.x,
            x1: self.now_x.max(at.x + 2.0),
            y,
            deadline_x: ttl_ms.map(|t| self.axis.x(at.e.at_ms + t)),
            key: key.to_owned(),
            owner,
            owner_name: owner.map_or(String::new(), |o| names.client(o).to_owned()),
            end: None,
            belief: false,
            title: format!("{key} = {value:?} ({who}) · {}", names.actor(at.e.actor)),
        });
    }

    /// On a lane that is a group of nodes, one bar stands for every
    /// member's copy of the same owner's lock: a copy on one more member
    /// joins the open bar (true: nothing more to draw); a new owner's
    /// starts the group's copies again.
    fn another_copy(&mut self, l: usize, node: Option<u32>, key: &str, owner: Option<u32>) -> bool {
        let (true, Some(n)) = (self.grouped(l), node) else {
            return false;
        };
        let slot = (l, key.to_owned());
        let open_owner = self.open.get(&slot).map(|&i| self.bars[i].owner);
        let copies = self.copies.entry(slot).or_default();
        if open_owner == Some(owner) && !copies.is_empty() {
            if !copies.contains(&n) {
                copies.push(n);
            }
            return true;
        }
        *copies = vec![n];
        false
    }

    /// The bar ends; a command that removed another client's lock says so.
    /// On a group's lane it ends with the last member's copy.
    fn on_removed(&mut self, at: &EventAt, (l, node): (usize, Option<u32>), key: &str, by: Option<u32>, via: Via) {
        if let (true, Some(n)) = (self.grouped(l), node) {
            let copies = self.copies.entry((l, key.to_owned())).or_default();
            copies.retain(|&c| c != n);
            if !copies.is_empty() {
                self.held.remove(&(n, key.to_owned()));
                return;
            }
        }
        let owner = node.and_then(|n| self.held.remove(&(n, key.to_owned()))).flatten();
        if let (Via::Command, Some(by), Some(owner)) = (via, by, owner) {
            if by != owner {
                let cmd = self.last_cmd.get(&by).cloned().unwrap_or_else(|| "DEL".to_owned());
                let (b, o) = (self.names.client(by), self.names.client(owner));
                let text = match self.lang {
                    Lang::En => format!("{b}'s {cmd} removed {o}'s lock"),
                    Lang::Zh => format!("{b} 的 {cmd} 删除了 {o} 的锁"),
                };
                self.note(at, self.lanes[l].mid(), text, "removed");
            }
        }
        let end = if via == Via::Expiry {
            BarEnd::Expired
        } else {
            BarEnd::Gone
        };
        self.end_bar(l, key, at.x, end);
    }

    /// A client's "believes it holds" bar opens or ends on its lane.
    fn on_belief(&mut self, at: &EventAt, key: &str, holds: bool) {
        let (Some(l), Actor::Client(c)) = (at.lane, at.e.actor) else {
            return;
        };
        let slot = (l, format!("belief:{key}"));
        if holds {
            if !self.open.contains_key(&slot) {
                self.open.insert(slot, self.bars.len());
                let y = self.row_y(l, row_of(&self.lane_rows[l], key));
                self.bars.push(Bar {
                    lane: l,
                    x0: at.x,
                    x1: self.now_x.max(at.x + 2.0),
                    y,
                    deadline_x: None,
                    key: key.to_owned(),
                    owner: Some(c),
                    owner_name: self.names.client(c).to_owned(),
                    end: None,
                    belief: true,
                    title: format!("{} {} {key}", self.names.client(c), Text::Believes.get(self.lang)),
                });
            }
        } else if let Some(i) = self.open.remove(&slot) {
            let bar = &mut self.bars[i];
            bar.x1 = at.x.max(bar.x0 + 2.0);
            bar.end = Some(BarEnd::Gone);
        }
    }

    fn on_overlap(&mut self, at: &EventAt, key: &str, clients: &[u32]) {
        let who: Vec<String> = clients.iter().map(|&c| self.names.client(c).to_owned()).collect();
        let text = match self.lang {
            Lang::En => format!(
                "{} {} hold {key}",
                who_list(&who, self.lang),
                if who.len() > 2 { "all" } else { "both" }
            ),
            Lang::Zh => format!("{} 同时持有 {key}", who_list(&who, self.lang)),
        };
        let y = clients
            .first()
            .and_then(|&c| self.lane_of(LaneKind::Client(c)))
            .map_or(self.lanes_top, |l| self.lanes[l].mid());
        self.note(at, y, text, "overlap");
    }

    fn on_write_sent(&mut self, at: &EventAt) {
        if let (Some(l), Actor::Client(c)) = (at.lane, at.e.actor) {
            self.write_sent.insert(c, (at.x, l));
            self.mark(at, l, MarkKind::Info, None, Some(c));
        }
    }

    /// The resource took or refused a write; a refused token lower than
    /// one it took says so, naming the smallest such: with one store that
    /// is a token the store took, and where each lock has its own store
    /// (lesson 45: a counter, a revision, a zxid) the next token up is the
    /// one that fenced it.
    fn on_write(&mut self, at: &EventAt, client: u32, accepted: bool, token: Option<i64>) {
        let Some(l) = at.lane else { return };
        if let Some(from) = self.write_sent.remove(&client) {
            self.arrow(from, (at.x, l), ArrowKind::Write);
        }
        let who = self.names.client(client);
        let label = match token {
            Some(t) => format!("{who} #{t} {}", if accepted { "✓" } else { "✗" }),
            None => format!("{who} {}", if accepted { "✓" } else { "✗" }),
        };
        let above = token.and_then(|t| self.taken_tokens.iter().copied().filter(|&b| b > t).min());
        if let (false, Some(t), Some(best)) = (accepted, token, above) {
            let text = match self.lang {
                Lang::En => format!("token {t} rejected (< {best})"),
                Lang::Zh => format!("令牌 {t} 被拒绝（< {best}）"),
            };
            self.note(at, self.lanes[l].mid(), text, "rejected");
        }
        if let (true, Some(t)) = (accepted, token) {
            self.taken_tokens.push(t);
        }
        self.mark(at, l, MarkKind::Write { accepted }, Some(label), Some(client));
    }

    fn on_replicated(&mut self, at: &EventAt, from: u32) {
        if let (Some(l), Some(fl)) = (at.lane, self.lane_of(LaneKind::Node(from))) {
            self.arrow((at.x, fl), (at.x, l), ArrowKind::Replication);
            self.mark(at, l, MarkKind::Info, None, None);
        }
    }

    fn on_replication_lost(&mut self, at: &EventAt) {
        if let Some(l) = at.lane {
            let label = self.word("repl. lost", "复制丢失");
            self.mark(at, l, MarkKind::Lost, Some(label), None);
        }
    }

    /// Resumed, restarted, a note: a small mark; the first two end their
    /// span, and a node restarted without its data says so.
    fn on_info(&mut self, at: &EventAt) {
        let Some(l) = at.lane else { return };
        let key = if matches!(at.e.kind, EventKind::Resumed) {
            "resume"
        } else {
            "restart"
        };
        if !matches!(at.e.kind, EventKind::Note { .. }) {
            self.end_span(l, key, at.x);
        }
        if let (EventKind::Restarted { kept_data }, Actor::Node(n)) = (&at.e.kind, at.e.actor) {
            self.roles.remove(&l);
            if !kept_data {
                self.held.retain(|(node, _), _| *node != n);
                let who = self.names.node(n);
                let text = match self.lang {
                    Lang::En => format!("{who} restarted empty"),
                    Lang::Zh => format!("{who} 重启后数据为空"),
                };
                self.note(at, self.lanes[l].mid(), text, "restart");
            }
        }
        self.mark(at, l, MarkKind::Info, None, None);
    }

    /// A red band across every lane, titled with the invariant and who
    /// broke it. The same violation of several locks over the same span
    /// (lesson 45: two holders of each service's lock) is one band that
    /// says how many.
    fn on_violation(&mut self, at: &EventAt, violation: &Violation) {
        let (names, lang, zh) = (self.names, self.lang, self.zh);
        let x0 = self.axis.x(violation.from_ms);
        let who: Vec<String> = violation
            .actors
            .iter()
            .filter(|a| matches!(a, Actor::Client(_)))
            .map(|&a| names.actor(a))
            .collect();
        let t = if zh {
            violation.invariant.title_zh()
        } else {
            violation.invariant.title()
        };
        let x1 = self.axis.x_after(violation.to_ms).max(x0 + 4.0).min(self.axis.x_end());
        let name = violation.invariant.name();
        let same = |b: &Band| b.name == name && (b.x0 - x0).abs() < 0.5 && (b.x1 - x1).abs() < 0.5;
        let base = (t.to_owned(), who.clone());
        if let Some(i) = (0..self.bands.len()).find(|&i| same(&self.bands[i]) && self.band_base[i].0 == base) {
            let n = self.band_base[i].1 + 1;
            self.band_base[i].1 = n;
            self.bands[i].heading = band_heading(&base.0, &base.1, n, violation.invariant, zh);
            self.bands[i].title = format!("{}\n{}", self.bands[i].title, at.title);
            return;
        }
        let heading = band_heading(t, &who, 1, violation.invariant, zh);
        self.band_base.push((base, 1));
        self.bands.push(Band {
            x0,
            x1,
            name,
            explain: violation_line(violation, names, lang),
            heading,
            title: if lang == Lang::En {
                at.title.clone()
            } else {
                format!("{}\n{}", violation_line(violation, names, lang), at.title)
            },
        });
    }

    /// The roles, ticks, labels, callouts and legend around what the
    /// events drew.
    pub(super) fn finish(mut self) -> Layout {
        for (l, role) in std::mem::take(&mut self.roles) {
            self.lanes[l].role = Some(role);
        }
        let (style, font) = (self.style, self.style.font);
        let plot_end = self.axis.x_end();
        let ticks: Vec<Tick> = (self.axis.ticks().into_iter())
            .map(|t| Tick {
                x: self.axis.x(t),
                label: seconds(t),
                ms: t,
            })
            .collect();
        let breaks = self.axis.breaks(self.lang);
        let merged = merge_marks(&mut self.marks, &mut self.arrows);
        let dense = self.arrows.len() as f64 * 100.0 / (plot_end - self.label_w).max(1.0) > DENSE_ARROWS;

        // Labels under the marks (two rows per lane), then inside the bars.
        let (mut labels, rows) = mark_labels(&self.marks, &self.lanes, style, plot_end);
        labels.extend(bar_labels(&self.bars, style, plot_end));

        // Callouts: violation titles first, then the sentences.
        let notes = std::mem::take(&mut self.notes);
        let (mut callouts, used) =
            place_callouts(&self.bands, notes, style, plot_end, self.callouts_top, self.lanes_top);
        let (lanes_top, lanes_bottom) = self.reclaim(&rows, used, &mut labels, &mut callouts);

        // The legend: what this timeline draws, one entry per kind of mark.
        let kinds = legend_kinds(
            &self.bars,
            &self.marks,
            &self.arrows,
            &self.spans,
            !self.bands.is_empty(),
            !breaks.is_empty(),
        );
        let label_w = self.label_w;
        let legend_end = label_w + (self.view_w - label_w - style.right_pad());
        let (legend, ly) = place_legend(kinds, self.lang, font, label_w, legend_end, lanes_bottom + font * 1.9);
        let height = if legend.is_empty() {
            lanes_bottom + 8.0
        } else {
            ly + font * 0.9
        };
        Layout {
            height,
            span_ms: self.axis.end_ms - self.axis.start_ms,
            lanes: self.lanes,
            ticks,
            breaks,
            bars: self.bars,
            arrows: self.arrows,
            marks: self.marks,
            bands: self.bands,
            spans: self.spans,
            labels,
            callouts,
            legend,
            now_x: self.now_x,
            width: self.svg_w,
            plot_end,
            lanes_top,
            lanes_bottom,
            style,
            merged,
            dense,
            xs: Vec::new(),
        }
    }

    /// Takes back the room nobody used: callout rows with no callout, and
    /// label rows a lane did not need (node lanes rarely label their
    /// marks); each lane keeps room for its name and role. Moves every
    /// shape with its lane; the new top and bottom of the lanes.
    fn reclaim(
        &mut self,
        rows: &[[f64; 2]],
        used: usize,
        labels: &mut [Label],
        callouts: &mut [Callout],
    ) -> (f64, f64) {
        let style = self.style;
        let dy = (CALLOUT_ROWS - used) as f64 * style.callout_row();
        let old: Vec<(f64, f64)> = self.lanes.iter().map(|l| (l.y, l.height)).collect();
        let mut y = self.lanes_top - dy;
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            let label_rows = rows[i].iter().filter(|&&end| end > f64::NEG_INFINITY).count() as f64;
            let bars_h = bar_rows_of(lane, style) * style.bar_row();
            // Room for the lane's name, and its role under it; compact, a
            // lane with no role keeps only its name's line (a Redlock
            // race's five masters fit a projected screen).
            let name_rows = if style.compact && lane.role.is_none() { 1.6 } else { 2.9 };
            let need = (8.0 + bars_h + label_rows * style.label_row()).max(style.font * name_rows + 8.0);
            lane.mark_y += y - lane.y;
            lane.y = y;
            lane.height = need.min(lane.height);
            y += lane.height;
        }
        let (lanes, lanes_bottom) = (&self.lanes, self.lanes_bottom);
        let remap = |v: f64| match old.iter().position(|&(y0, h)| v >= y0 && v < y0 + h) {
            Some(i) => v - old[i].0 + lanes[i].y,
            None if v >= lanes_bottom => v - lanes_bottom + y,
            None => v,
        };
        self.bars.iter_mut().for_each(|b| b.y = remap(b.y));
        self.marks.iter_mut().for_each(|m| m.y = remap(m.y));
        for a in &mut self.arrows {
            a.y1 = remap(a.y1);
            a.y2 = remap(a.y2);
        }
        labels.iter_mut().for_each(|l| l.y = remap(l.y));
        callouts.iter_mut().for_each(|c| c.y_to = remap(c.y_to));
        (self.lanes_top - dy, y)
    }
}

/// A band's heading: the invariant's title, how many locks when it stands
/// for several (`two holders of 4 locks`), and who (`(A, B)`).
fn band_heading(t: &str, who: &[String], n: usize, inv: locklab_core::invariants::Invariant, zh: bool) -> String {
    use locklab_core::invariants::Invariant;
    let t = match (n, inv, zh) {
        (1, _, _) => t.to_owned(),
        (_, Invariant::Overlap, false) => format!("two holders of {n} locks"),
        (_, Invariant::Overlap, true) => format!("{n} 把锁各有两个持有者"),
        (_, _, _) => format!("{t} ×{n}"),
    };
    match (who.is_empty(), zh) {
        (true, _) => t,
        (false, true) => format!("{t}（{}）", who.join("、")),
        (false, false) => format!("{t} ({})", who.join(", ")),
    }
}
