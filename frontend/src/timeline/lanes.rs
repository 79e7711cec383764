//! The lanes: one per client, one per node (or per group of nodes past
//! [`MAX_NODE_LANES`]), one for the protected resource when the trace writes
//! to it, each as tall as the rows of lock bars it needs.

use super::*;

/// Lock bar rows per lane before keys share the last one.
pub(super) const MAX_ROWS: usize = 4;

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

/// A lane's rows of bars, each the keys drawn on it.
pub(super) type Rows<'a> = Vec<Vec<&'a str>>;

/// The row of `key` in `rows` (0 when it has none).
pub(super) fn row_of(rows: &Rows, key: &str) -> usize {
    rows.iter().position(|row| row.contains(&key)).unwrap_or(0)
}

/// The rows the lanes need: lock keys per node, believed keys per client,
/// in order of appearance (keys never held there at the same time share a
/// row, see [`share_rows`]); and whether the resource has a lane.
pub(super) struct LaneKeys<'a> {
    node: BTreeMap<u32, Rows<'a>>,
    client: BTreeMap<u32, Rows<'a>>,
    resource: bool,
}

/// A key's life on one lane: its name, its first and last lock (or belief)
/// event, and whether it was still held after the last.
pub(super) type KeySpan<'a> = (&'a str, u64, u64, bool);

pub(super) fn lane_keys(events: &[Event]) -> LaneKeys<'_> {
    // A key's life on a node (a lock) or a client (a belief).
    pub(super) fn lived<'a>(spans: &mut Vec<KeySpan<'a>>, key: &'a str, at: u64, held: bool) {
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
    pub(super) fn rows<'a>(spans: BTreeMap<u32, Vec<KeySpan<'a>>>) -> BTreeMap<u32, Rows<'a>> {
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
pub(super) fn group_rows<'a>(members: &[u32], node_keys: &BTreeMap<u32, Rows<'a>>) -> Rows<'a> {
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
pub(super) fn share_rows<'a>(keys: &[KeySpan<'a>]) -> Rows<'a> {
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
pub(super) fn build_lanes<'a>(
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
pub(super) const MAX_NODE_LANES: usize = 6;

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

/// How many bar rows a lane has (from its height).
pub(super) fn bar_rows_of(lane: &Lane, style: Style) -> f64 {
    ((lane.height - 8.0 - 2.0 * style.label_row()) / style.bar_row())
        .round()
        .max(1.0)
}
