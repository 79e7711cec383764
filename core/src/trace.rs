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

fn ttl_text(ttl: Option<u64>) -> String {
    match ttl {
        Some(ms) => format!("PTTL {ms}"),
        None => "no TTL".to_owned(),
    }
}

fn token_text(t: Option<i64>) -> String {
    match t {
        Some(t) => format!("token {t}"),
        None => "no token".to_owned(),
    }
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
    // long: one line of text per EventKind
    pub fn describe(&self, names: &Names) -> String {
        let c = |i: u32| names.client(i).to_owned();
        let n = |i: u32| names.node(i).to_owned();
        match &self.kind {
            EventKind::Sent { node, commands, .. } => format!("→ {}: {}", n(*node), commands_line(commands)),
            EventKind::Executed {
                client,
                commands,
                replies,
                ..
            } => {
                format!(
                    "runs {}'s {} ⇒ {}",
                    c(*client),
                    commands_line(commands),
                    replies_line(replies)
                )
            }
            EventKind::Lost {
                client, node, reason, ..
            } => {
                let why = match reason {
                    LossReason::LinkCut => "link cut",
                    LossReason::NodeDown => "node down",
                    LossReason::Dropped => "reply dropped",
                };
                format!("lost: {} ↔ {} ({why})", c(*client), n(*node))
            }
            EventKind::Received { node, replies, .. } => format!("← {}: {}", n(*node), replies_line(replies)),
            EventKind::TimedOut { node, .. } => format!("timed out waiting for {}", n(*node)),
            EventKind::Expired { key } => format!("key {key} expired"),
            EventKind::Lock { key, change, via } => {
                let via = match via {
                    Via::Command => "",
                    Via::Expiry => " (expiry)",
                    Via::Replication => " (replication)",
                    Via::Restart => " (restart without data)",
                    Via::FullSync => " (full resync)",
                    Via::Promotion => " (promotion)",
                };
                match change {
                    LockChange::Acquired { owner, value, ttl_ms } => format!(
                        "{key} = {value:?}, {}'s lock, {}{via}",
                        owner.map_or("nobody".to_owned(), c),
                        ttl_text(*ttl_ms)
                    ),
                    LockChange::Renewed { ttl_ms } => format!("{key} renewed, {}{via}", ttl_text(*ttl_ms)),
                    LockChange::Removed { by } => match by {
                        Some(b) => format!("{key} deleted by {}{via}", c(*b)),
                        None => format!("{key} gone{via}"),
                    },
                }
            }
            EventKind::Replicated { from, offset, commands } => {
                format!("applies {}'s batch #{offset}: {}", n(*from), commands_line(commands))
            }
            EventKind::ReplicationLost { from, offset } => {
                format!("never receives {}'s batch #{offset}", n(*from))
            }
            EventKind::Granted { key, seq } => format!("holder #{seq} of {key} (world's view)"),
            EventKind::Belief { key, holds } => {
                if *holds {
                    format!("believes it holds {key}")
                } else {
                    format!("stops believing it holds {key}")
                }
            }
            EventKind::Overlap {
                key,
                clients,
                begin,
                since_ms,
            } => {
                let who = clients.iter().map(|&i| c(i)).collect::<Vec<_>>().join(" and ");
                let all = if clients.len() == 2 { "both" } else { "all" };
                if *begin {
                    format!("overlap: {who} {all} believe they hold {key}")
                } else {
                    format!("overlap on {key} since {since_ms} ms ends")
                }
            }
            EventKind::WriteSent { token, value } => {
                format!("writes {value:?} to the resource ({})", token_text(*token))
            }
            EventKind::Write {
                client,
                token,
                value,
                accepted,
            } => format!(
                "{} {}'s write {value:?} ({})",
                if *accepted { "accepts" } else { "REJECTS" },
                c(*client),
                token_text(*token)
            ),
            EventKind::Fault { fault } => format!("FAULT {}", fault.describe(names)),
            EventKind::Resumed => "resumes".to_owned(),
            EventKind::Restarted { kept_data } => {
                if *kept_data {
                    "restarted with its data (AOF)".to_owned()
                } else {
                    "restarted EMPTY (no persistence)".to_owned()
                }
            }
            EventKind::Note { text } => text.clone(),
            EventKind::Elected { term } => format!("elected leader (term {term})"),
            EventKind::Done => "program finished".to_owned(),
            EventKind::Violation { violation } => format!(
                "VIOLATION {}: {} [{}–{} ms]",
                violation.invariant.name(),
                violation.detail,
                violation.from_ms,
                violation.to_ms
            ),
        }
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
