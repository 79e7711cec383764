//! What faults draw, and what they lead to: the stretch a fault lasts
//! (paused, crashed, cut off) shaded and named on its lane, a failover's
//! promotion, an election's new leader.

use super::*;

impl Builder<'_> {
    /// A fault shades the stretch it lasts and is named on its lane.
    pub(super) fn on_fault(&mut self, at: &EventAt, fault: &Fault) {
        self.fault_span(at, fault);
        let (l, label) = self.fault_label(at, fault);
        if let Some(l) = l.or(at.lane).or((!self.lanes.is_empty()).then_some(0)) {
            self.mark(at, l, MarkKind::Fault, label, None);
        }
    }

    /// Opens the span a fault starts (paused, crashed, down, cut), or ends
    /// the one it ends.
    pub(super) fn fault_span(&mut self, at: &EventAt, fault: &Fault) {
        use Fault as F;
        let link_key = |a: &Endpoint, b: &Endpoint| format!("cut:{a:?}-{b:?}");
        type Open = Option<(usize, &'static str, String)>;
        let (start, end): (Open, Option<(usize, String)>) = match (fault, at.lane) {
            (F::PauseClient { .. }, Some(l)) => (Some((l, "paused", "resume".into())), None),
            (F::ResumeClient { .. }, Some(l)) => (None, Some((l, "resume".into()))),
            (F::CrashClient { .. }, Some(l)) => (Some((l, "crashed", "never".into())), None),
            (F::CrashNode { .. } | F::RestartNode { .. }, Some(l)) => (Some((l, "down", "restart".into())), None),
            (F::CutLink { a, b }, _) => (self.endpoint_lane(a).map(|l| (l, "cut", link_key(a, b))), None),
            (F::HealLink { a, b }, _) => (None, self.endpoint_lane(a).map(|l| (l, link_key(a, b)))),
            _ => (None, None),
        };
        if let Some((l, key)) = end {
            self.end_span(l, &key, at.x);
        }
        if let Some((l, kind, key)) = start {
            if let Entry::Vacant(vacant) = self.open_spans.entry((l, key)) {
                vacant.insert(self.spans.len());
                self.spans.push(Span {
                    lane: l,
                    x0: at.x,
                    x1: self.now_x.max(at.x + 2.0),
                    kind,
                    open: true,
                    title: at.title.clone(),
                });
            }
        }
    }

    /// Ends the open span on lane `l` that `key` ends, at `x`.
    pub(super) fn end_span(&mut self, l: usize, key: &str, x: f64) {
        if let Some(i) = self.open_spans.remove(&(l, key.to_owned())) {
            let span = &mut self.spans[i];
            span.x1 = x.max(span.x0 + 2.0);
            span.open = false;
        }
    }

    /// Which lane a fault is named on, and its name; a node that went down
    /// or was promoted gets that role.
    pub(super) fn fault_label(&mut self, at: &EventAt, fault: &Fault) -> (Option<usize>, Option<String>) {
        use Fault as F;
        let word = |en: &str, zh: &str| Some(self.word(en, zh));
        match fault {
            F::PauseClient { .. } => (at.lane, word("pause", "暂停")),
            F::ResumeClient { .. } => (at.lane, word("resume", "恢复")),
            F::CrashClient { .. } => (at.lane, word("crash", "崩溃")),
            F::CrashNode { node } => {
                let label = word("crash", "崩溃");
                let l = self.lane_of(LaneKind::Node(*node));
                if let Some(l) = l {
                    let mut role = self.word("down", "宕机");
                    if self.grouped(l) {
                        // One member of the group's lane is down.
                        role = format!("{} {role}", self.names.node(*node));
                    }
                    self.roles.insert(l, role);
                }
                (l, label)
            }
            F::RestartNode { node, .. } => (self.lane_of(LaneKind::Node(*node)), word("restart", "重启")),
            F::PromoteReplica { node } | F::Failover { node: Some(node) } => {
                let label = word("promote", "提升");
                let l = self.lane_of(LaneKind::Node(*node));
                if let Some(l) = l {
                    self.promoted(at, *node, l);
                }
                (l, label)
            }
            F::Failover { node: None } => {
                let label = word("failover", "故障转移");
                (self.failover(at), label)
            }
            F::CutLink { a, .. } => (self.endpoint_lane(a), word("cut", "断开")),
            F::HealLink { a, .. } => (self.endpoint_lane(a), word("heal", "恢复连接")),
            _ => (at.lane, None),
        }
    }

    /// Sentinel's choice: the master (node 0) goes down; the promoted
    /// replica is the next node to run a client's command. The master's
    /// lane.
    pub(super) fn failover(&mut self, at: &EventAt) -> Option<usize> {
        let master = self.lane_of(LaneKind::Node(0));
        if let Some(m) = master {
            let role = self.word("down", "宕机");
            self.roles.insert(m, role);
        }
        let promoted = self.events[at.i + 1..]
            .iter()
            .find_map(|later| match (&later.kind, later.actor) {
                (EventKind::Executed { .. }, Actor::Node(n)) if n != 0 => Some(n),
                _ => None,
            });
        if let Some((n, l)) = promoted.and_then(|n| self.lane_of(LaneKind::Node(n)).map(|l| (n, l))) {
            self.promoted(at, n, l);
        }
        master
    }

    /// `node` (on lane `l`) is master now; the callout names a lock the old
    /// master held that this one never saw.
    pub(super) fn promoted(&mut self, at: &EventAt, node: u32, l: usize) {
        let role = self.word("now master", "已提升为主");
        self.roles.insert(l, role);
        let names = self.names;
        let missing: Vec<String> = self
            .held
            .iter()
            .filter(|((n, k), _)| *n != node && !self.held.contains_key(&(node, k.clone())))
            .filter_map(|(_, o)| o.map(|o| names.client(o).to_owned()))
            .collect();
        let who = names.node(node);
        let text = match (self.lang, missing.first()) {
            (Lang::En, Some(o)) => format!("{who} promoted — it never saw {o}'s lock"),
            (Lang::En, None) => format!("{who} promoted to master"),
            (Lang::Zh, Some(o)) => format!("{who} 被提升为主——它从未收到 {o} 的锁"),
            (Lang::Zh, None) => format!("{who} 被提升为主节点"),
        };
        self.note(at, self.lanes[l].mid(), text, "promoted");
    }

    /// A member leads its group from now on: its role says so (with the
    /// term, ZooKeeper's epoch), the old leader's no longer does, and an
    /// election after the start is marked where it happened.
    pub(super) fn on_elected(&mut self, at: &EventAt, term: u64) {
        let (Some(l), Actor::Node(n)) = (at.lane, at.e.actor) else {
            return;
        };
        let name = self.names.node(n);
        let group: String = name.chars().filter(|c| c.is_ascii_alphabetic()).collect();
        let term = match (group.as_str(), self.zh) {
            ("zk", false) => format!("epoch {term}"),
            ("zk", true) => format!("纪元 {term}"),
            (_, false) => format!("term {term}"),
            (_, true) => format!("任期 {term}"),
        };
        // A lane of its own says `leader`; a group's names its leader.
        let role = match (self.grouped(l), self.zh) {
            (false, false) => format!("leader · {term}"),
            (false, true) => format!("领导者 · {term}"),
            (true, false) => format!("{name} leads · {term}"),
            (true, true) => format!("{name} 领导 · {term}"),
        };
        if let Some((old, was)) = self.leaders.insert(group, (l, role.clone())) {
            if self.roles.get(&old) == Some(&was) {
                self.roles.remove(&old);
            }
        }
        self.roles.insert(l, role);
        if at.e.at_ms > 0 {
            let label = match self.zh {
                false => format!("{name} elected · {term}"),
                true => format!("{name} 当选 · {term}"),
            };
            self.mark(at, l, MarkKind::Info, Some(label), None);
        }
    }
}
