//! The trace: everything that happened in a world, in order.
//!
//! A trace is the one thing every locklab view renders. The timeline draws
//! it as swimlanes (one per client, one per node, one for the resource), the
//! console prints the commands and replies in it, the explorer prints it as
//! a transcript. Because the world is deterministic, a trace is also a
//! *proof*: replaying the same scenario from the same seed gives the same
//! events, so "step back" is "replay to step n − 1", and a counterexample
//! the explorer found can be handed to anyone and watched again.
//!
//! Each [`Event`] carries its step number, the world time in milliseconds,
//! the actor whose lane it belongs to, and a typed payload ([`EventKind`]).
//! Actors are indexes into the world's name tables ([`Names`]) rather than
//! strings, so the explorer can produce hundreds of thousands of traces a
//! minute without cloning names.

use serde::{Deserialize, Serialize};

use crate::actor::{Actor, Names};
use crate::fault::Fault;
use crate::invariants::Violation;
use crate::lang::Lang;
use crate::observe::{LockChange, Via};
use crate::reply::Reply;

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the trace, from 0.
    pub step: u64,
    /// World time, in milliseconds since the run started. Node and client
    /// clocks may disagree with it; that disagreement is what the clock
    /// lessons are about.
    pub at_ms: u64,
    pub actor: Actor,
    pub kind: EventKind,
}

/// Why a request never got an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReason {
    /// The link between client and node was cut.
    LinkCut,
    /// The node was down (crashed, or restarting) when the request arrived.
    NodeDown,
    /// The network dropped the reply (`drop_reply_permille`).
    Dropped,
}

/// The payload of an [`Event`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A client put a request on the wire: one command, or a pipeline
    /// (`MULTI … EXEC` goes as one).
    Sent {
        req: u64,
        node: u32,
        commands: Vec<Vec<String>>,
    },
    /// The node ran the request. This is the moment its effect happened,
    /// which is what lock bars and holder order are measured from.
    Executed {
        req: u64,
        client: u32,
        commands: Vec<Vec<String>>,
        replies: Vec<Reply>,
    },
    /// The request or its reply vanished.
    Lost {
        req: u64,
        client: u32,
        node: u32,
        reason: LossReason,
    },
    /// The client's program saw the reply (after any pause it was in).
    Received { req: u64, node: u32, replies: Vec<Reply> },
    /// The client stopped waiting for a reply.
    TimedOut { req: u64, node: u32 },
    /// A key reached its deadline on this node's clock and was deleted.
    Expired { key: String },
    /// A lock key changed on this node.
    Lock { key: String, change: LockChange, via: Via },
    /// A replica applied a batch from its master (the replication arrow).
    Replicated {
        from: u32,
        offset: u64,
        commands: Vec<Vec<String>>,
    },
    /// A batch that never arrived, because its master crashed first or the
    /// replica stopped following it.
    ReplicationLost { from: u32, offset: u64 },
    /// The world's view of holders: this client became the `seq`-th holder
    /// of `key` (on the current master, or on a majority for Redlock).
    Granted { key: String, seq: u32 },
    /// The client now believes it holds (or no longer holds) `key`.
    Belief { key: String, holds: bool },
    /// Two or more clients believe they hold `key` at once (`begin`), or
    /// that stopped being true.
    Overlap {
        key: String,
        clients: Vec<u32>,
        begin: bool,
        since_ms: u64,
    },
    /// A client sent a write to the protected resource.
    WriteSent { token: Option<i64>, value: String },
    /// The resource accepted or rejected a write.
    Write {
        client: u32,
        token: Option<i64>,
        value: String,
        accepted: bool,
    },
    /// A fault was injected.
    Fault { fault: Fault },
    /// A paused client runs again.
    Resumed,
    /// A crashed node is back, with or without its data.
    Restarted { kept_data: bool },
    /// A client program narrates a decision ("3/5 nodes, validity 978 ms").
    Note { text: String },
    /// This etcd member or ZooKeeper server leads its group from now on,
    /// in `term` (Raft's term, Zab's epoch): the timeline's leader marker.
    Elected { term: u64 },
    /// A client program finished.
    Done,
    /// An invariant broke.
    Violation { violation: Violation },
}

/// Add a streamed event to `events`. A violation still going on is sent
/// again each time its span grew (an event once sent over a socket cannot
/// be stretched in place as the simulator does): the later copy replaces
/// the one it [amends](Violation::amends), so the band grows during play
/// and is drawn once.
pub fn append_streamed(events: &mut Vec<Event>, event: Event) {
    if let EventKind::Violation { violation: newer } = &event.kind {
        let earlier = events.iter_mut().rev().find_map(|e| match &mut e.kind {
            EventKind::Violation { violation } if newer.amends(violation) => Some(violation),
            _ => None,
        });
        if let Some(earlier) = earlier {
            earlier.to_ms = newer.to_ms;
            return;
        }
    }
    events.push(event);
}

/// A whole trace with its name tables: what a driver hands to a view.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    pub names: Names,
    pub events: Vec<Event>,
}

/// Arguments longer than this are shortened in one-line descriptions (a
/// Lua script is data, not something to read on every line).
const SHORT_ARG: usize = 44;

/// `["SET", "lock", "x"]` → `SET lock x`, quoting like redis-cli would need;
/// long arguments (scripts) are cut to their first characters and `…`.
pub fn command_line(argv: &[String]) -> String {
    let mut out = String::new();
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let cut;
        let a = if a.chars().count() > SHORT_ARG {
            cut = format!("{}…", a.chars().take(SHORT_ARG - 4).collect::<String>());
            &cut
        } else {
            a
        };
        let plain = !a.is_empty() && a.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\'');
        if plain {
            out.push_str(a);
        } else {
            out.push('"');
            for c in a.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
    }
    out
}

pub(crate) fn commands_line(cmds: &[Vec<String>]) -> String {
    cmds.iter().map(|c| command_line(c)).collect::<Vec<_>>().join(" | ")
}

pub(crate) fn replies_line(replies: &[Reply]) -> String {
    replies
        .iter()
        .map(|r| r.to_cli().replace('\n', " "))
        .collect::<Vec<_>>()
        .join(" | ")
}

impl Event {
    /// The same event in a larger world: every node it names moved by
    /// `nodes`, every request number by `reqs`. A driver that plays one
    /// lesson on several services, each numbering its own members from 0
    /// and its own requests from 1 (lesson 45 on real processes), merges
    /// their traces this way. A `Fault`'s payload is the lesson's own and
    /// keeps its numbers.
    pub fn shift(&mut self, nodes: u32, reqs: u64) {
        let node = |n: &mut u32| *n += nodes;
        if let Actor::Node(n) = &mut self.actor {
            node(n);
        }
        match &mut self.kind {
            EventKind::Sent { req, node: n, .. }
            | EventKind::Lost { req, node: n, .. }
            | EventKind::Received { req, node: n, .. }
            | EventKind::TimedOut { req, node: n } => {
                *req += reqs;
                node(n);
            }
            EventKind::Executed { req, .. } => *req += reqs,
            EventKind::Replicated { from, .. } | EventKind::ReplicationLost { from, .. } => node(from),
            EventKind::Violation { violation } => {
                for a in &mut violation.actors {
                    if let Actor::Node(n) = a {
                        node(n);
                    }
                }
            }
            _ => {}
        }
    }

    /// One line of plain text, as the explorer's transcript prints it.
    pub fn describe(&self, names: &Names) -> String {
        self.describe_in(names, Lang::En)
    }

    /// [`Event::describe`] in `lang`: one arm per event kind, both languages
    /// side by side so neither can fall behind the other. Names (clients,
    /// nodes, keys, commands and replies) stay as they are in Chinese too:
    /// they are what a reader types into redis-cli.
    // long: one line of text per EventKind, in each language
    pub fn describe_in(&self, names: &Names, lang: Lang) -> String {
        let zh = lang == Lang::Zh;
        let c = |i: u32| names.client(i).to_owned();
        let n = |i: u32| names.node(i).to_owned();
        let ttl = |t: &Option<u64>| match (t, zh) {
            (Some(ms), _) => format!("PTTL {ms}"),
            (None, false) => "no TTL".to_owned(),
            (None, true) => "无 TTL".to_owned(),
        };
        let token = |t: &Option<i64>| match (t, zh) {
            (Some(t), false) => format!("token {t}"),
            (Some(t), true) => format!("令牌 {t}"),
            (None, false) => "no token".to_owned(),
            (None, true) => "无令牌".to_owned(),
        };
        // A message on the wire: its direction, the node, what it carried.
        let wire =
            |arrow: &str, node: u32, line: String| format!("{arrow} {}{}{line}", n(node), if zh { "：" } else { ": " });
        match &self.kind {
            EventKind::Sent { node, commands, .. } => wire("→", *node, commands_line(commands)),
            EventKind::Executed {
                client,
                commands,
                replies,
                ..
            } => {
                let (who, sent, got) = (c(*client), commands_line(commands), replies_line(replies));
                if zh {
                    format!("执行 {who} 的 {sent} ⇒ {got}")
                } else {
                    format!("runs {who}'s {sent} ⇒ {got}")
                }
            }
            EventKind::Lost {
                client, node, reason, ..
            } => {
                let (who, at, why) = (c(*client), n(*node), reason.text(lang));
                if zh {
                    format!("丢失：{who} ↔ {at}（{why}）")
                } else {
                    format!("lost: {who} ↔ {at} ({why})")
                }
            }
            EventKind::Received { node, replies, .. } => wire("←", *node, replies_line(replies)),
            EventKind::TimedOut { node, .. } if zh => format!("等待 {} 超时", n(*node)),
            EventKind::TimedOut { node, .. } => format!("timed out waiting for {}", n(*node)),
            EventKind::Expired { key } if zh => format!("key {key} 过期"),
            EventKind::Expired { key } => format!("key {key} expired"),
            EventKind::Lock { key, change, via } => {
                let via = via.text(lang);
                match (change, zh) {
                    (LockChange::Acquired { owner, value, ttl_ms }, false) => format!(
                        "{key} = {value:?}, {}'s lock, {}{via}",
                        owner.map_or("nobody".to_owned(), c),
                        ttl(ttl_ms)
                    ),
                    (LockChange::Acquired { owner, value, ttl_ms }, true) => format!(
                        "{key} = {value:?}，{} 的锁，{}{via}",
                        owner.map_or("无人".to_owned(), c),
                        ttl(ttl_ms)
                    ),
                    (LockChange::Renewed { ttl_ms }, false) => format!("{key} renewed, {}{via}", ttl(ttl_ms)),
                    (LockChange::Renewed { ttl_ms }, true) => format!("{key} 续期，{}{via}", ttl(ttl_ms)),
                    (LockChange::Removed { by: Some(b) }, false) => format!("{key} deleted by {}{via}", c(*b)),
                    (LockChange::Removed { by: Some(b) }, true) => format!("{key} 被 {} 删除{via}", c(*b)),
                    (LockChange::Removed { by: None }, false) => format!("{key} gone{via}"),
                    (LockChange::Removed { by: None }, true) => format!("{key} 消失{via}"),
                }
            }
            EventKind::Replicated { from, offset, commands } => {
                let (from, batch) = (n(*from), commands_line(commands));
                if zh {
                    format!("应用 {from} 的第 {offset} 批：{batch}")
                } else {
                    format!("applies {from}'s batch #{offset}: {batch}")
                }
            }
            EventKind::ReplicationLost { from, offset } if zh => format!("没有收到 {} 的第 {offset} 批", n(*from)),
            EventKind::ReplicationLost { from, offset } => format!("never receives {}'s batch #{offset}", n(*from)),
            EventKind::Granted { key, seq } if zh => format!("{key} 的第 {seq} 个持有者（世界视角）"),
            EventKind::Granted { key, seq } => format!("holder #{seq} of {key} (world's view)"),
            EventKind::Belief { key, holds } => match (holds, zh) {
                (true, false) => format!("believes it holds {key}"),
                (true, true) => format!("认为自己持有 {key}"),
                (false, false) => format!("stops believing it holds {key}"),
                (false, true) => format!("不再认为自己持有 {key}"),
            },
            EventKind::Overlap {
                key,
                clients,
                begin,
                since_ms,
            } => {
                let who = clients
                    .iter()
                    .map(|&i| c(i))
                    .collect::<Vec<_>>()
                    .join(if zh { " 和 " } else { " and " });
                let all = if clients.len() == 2 { "both" } else { "all" };
                match (begin, zh) {
                    (true, false) => format!("overlap: {who} {all} believe they hold {key}"),
                    (true, true) => format!("重叠：{who} 都认为自己持有 {key}"),
                    (false, false) => format!("overlap on {key} since {since_ms} ms ends"),
                    (false, true) => format!("{key} 上自 {since_ms} ms 起的重叠结束"),
                }
            }
            EventKind::WriteSent { token: t, value } if zh => format!("向资源写入 {value:?}（{}）", token(t)),
            EventKind::WriteSent { token: t, value } => format!("writes {value:?} to the resource ({})", token(t)),
            EventKind::Write {
                client,
                token: t,
                value,
                accepted,
            } => {
                let (who, t) = (c(*client), token(t));
                match (accepted, zh) {
                    (true, false) => format!("accepts {who}'s write {value:?} ({t})"),
                    (false, false) => format!("REJECTS {who}'s write {value:?} ({t})"),
                    (true, true) => format!("接受 {who} 的写入 {value:?}（{t}）"),
                    (false, true) => format!("拒绝 {who} 的写入 {value:?}（{t}）"),
                }
            }
            EventKind::Fault { fault } if zh => format!("故障：{}", fault.describe_in(names, lang)),
            EventKind::Fault { fault } => format!("FAULT {}", fault.describe_in(names, lang)),
            EventKind::Resumed => if zh { "恢复运行" } else { "resumes" }.to_owned(),
            EventKind::Restarted { kept_data } => match (kept_data, zh) {
                (true, false) => "restarted with its data (AOF)",
                (false, false) => "restarted EMPTY (no persistence)",
                (true, true) => "重启，数据保留（AOF）",
                (false, true) => "重启，数据为空（无持久化）",
            }
            .to_owned(),
            EventKind::Note { text } => text.clone(),
            EventKind::Elected { term } if zh => format!("当选为 leader（任期 {term}）"),
            EventKind::Elected { term } => format!("elected leader (term {term})"),
            EventKind::Done => if zh { "程序结束" } else { "program finished" }.to_owned(),
            EventKind::Violation { violation: v } if zh => {
                let (title, name) = (v.invariant.title_zh(), v.invariant.name());
                format!("违反 {title}（{name}）[{}–{} ms]", v.from_ms, v.to_ms)
            }
            EventKind::Violation { violation: v } => format!(
                "VIOLATION {}: {} [{}–{} ms]",
                v.invariant.name(),
                v.detail,
                v.from_ms,
                v.to_ms
            ),
        }
    }
}

impl LossReason {
    fn text(self, lang: Lang) -> &'static str {
        match (self, lang) {
            (LossReason::LinkCut, Lang::En) => "link cut",
            (LossReason::NodeDown, Lang::En) => "node down",
            (LossReason::Dropped, Lang::En) => "reply dropped",
            (LossReason::LinkCut, Lang::Zh) => "链路断开",
            (LossReason::NodeDown, Lang::Zh) => "节点宕机",
            (LossReason::Dropped, Lang::Zh) => "回复丢失",
        }
    }
}

impl Via {
    /// How a lock change came about, as a suffix ("" for a command).
    fn text(self, lang: Lang) -> &'static str {
        match (self, lang) {
            (Via::Command, _) => "",
            (Via::Expiry, Lang::En) => " (expiry)",
            (Via::Replication, Lang::En) => " (replication)",
            (Via::Restart, Lang::En) => " (restart without data)",
            (Via::FullSync, Lang::En) => " (full resync)",
            (Via::Promotion, Lang::En) => " (promotion)",
            (Via::Expiry, Lang::Zh) => "（过期）",
            (Via::Replication, Lang::Zh) => "（复制）",
            (Via::Restart, Lang::Zh) => "（重启后无数据）",
            (Via::FullSync, Lang::Zh) => "（全量同步）",
            (Via::Promotion, Lang::Zh) => "（提升为主）",
        }
    }
}

/// Kept here, not beside [`crate::invariants::BeliefChange`]: the trace reads the invariants,
/// never the reverse.
impl crate::invariants::BeliefChange {
    /// What a driver puts in its trace for this change of `client`'s
    /// belief in `key`, in order: the belief, then the overlap that began
    /// or ended. The violation is the driver's to place: each tracks how
    /// long it lasts its own way.
    pub fn events(&self, key: &str, client: u32, holds: bool) -> Vec<(Actor, EventKind)> {
        let belief = EventKind::Belief {
            key: key.to_owned(),
            holds,
        };
        let overlap = self.overlap.as_ref().map(|ch| EventKind::Overlap {
            key: key.to_owned(),
            clients: ch.clients.clone(),
            begin: ch.begin,
            since_ms: ch.since_ms,
        });
        std::iter::once((Actor::Client(client), belief))
            .chain(overlap.map(|o| (Actor::World, o)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariants::Invariant;

    fn band(to_ms: u64) -> Event {
        Event {
            step: 0,
            at_ms: to_ms,
            actor: Actor::World,
            kind: EventKind::Violation {
                violation: Violation {
                    invariant: Invariant::Overlap,
                    from_ms: 100,
                    to_ms,
                    actors: vec![Actor::Client(0), Actor::Client(1)],
                    detail: "A and B all believe they hold lock".into(),
                },
            },
        }
    }

    fn spans(events: &[Event]) -> Vec<(u64, u64)> {
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Violation { violation: v } => Some((v.from_ms, v.to_ms)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_streamed_violation_grows_in_place_and_another_is_kept() {
        let mut events = Vec::new();
        append_streamed(&mut events, band(100));
        append_streamed(
            &mut events,
            Event {
                step: 1,
                at_ms: 150,
                actor: Actor::Client(0),
                kind: EventKind::Done,
            },
        );
        append_streamed(&mut events, band(400));
        append_streamed(&mut events, band(900));
        assert_eq!(events.len(), 2);
        assert_eq!(spans(&events), vec![(100, 900)]);
        // Another moment, or other people: another band.
        let mut other = band(1000);
        if let EventKind::Violation { violation } = &mut other.kind {
            violation.from_ms = 950;
        }
        append_streamed(&mut events, other);
        assert_eq!(spans(&events), vec![(100, 900), (950, 1000)]);
    }

    #[test]
    fn a_shifted_event_names_the_same_nodes_and_requests_further_on() {
        let sent = |node, req| Event {
            step: 3,
            at_ms: 10,
            actor: Actor::Client(1),
            kind: EventKind::Sent {
                req,
                node,
                commands: vec![],
            },
        };
        let mut e = sent(2, 7);
        e.shift(4, 1 << 40);
        assert_eq!(e, sent(6, 7 + (1 << 40)), "the client stays, node and request move");
        let mut v = band(5);
        if let EventKind::Violation { violation } = &mut v.kind {
            violation.actors = vec![Actor::Client(0), Actor::Node(1), Actor::Resource];
        }
        v.shift(7, 0);
        let EventKind::Violation { violation } = &v.kind else {
            unreachable!()
        };
        assert_eq!(violation.actors, [Actor::Client(0), Actor::Node(8), Actor::Resource]);
        let mut fault = Event {
            step: 0,
            at_ms: 0,
            actor: Actor::Node(0),
            kind: EventKind::Fault {
                fault: Fault::CrashNode { node: 2 },
            },
        };
        fault.shift(4, 0);
        assert_eq!(fault.actor, Actor::Node(4));
        assert_eq!(
            fault.kind,
            EventKind::Fault {
                fault: Fault::CrashNode { node: 2 }
            },
            "a fault is the lesson's, in its numbers"
        );
    }
}
