//! A checked history, drawn: the [`Trace`] the page's timeline renders.
//!
//! The timeline knows only traces (events stamped with time and actor), so a
//! history is turned into one, the way the simulator would have recorded the
//! same run: each call a request from its client's lane to the one node
//! lane (`Sent` at its invocation, `Received` at its completion, `TimedOut`
//! when its outcome is unknown), each write to the resource a `WriteSent`
//! and the resource's `Write`; the lock bar on the node from a granted
//! acquire's completion until a successful release, another grant, or its
//! lease's end (the last acquire's or extension's invocation plus its TTL:
//! the earliest it may have expired, when a key expired is drawn); each
//! client's "believes it holds" bar as the judge reads it
//! ([`super::judge`]: from its acquire's completion to its release's
//! invocation, a failed extension or its next acquire); the nemesis's
//! faults as the simulator's own fault events where one means the same
//! (a paused client, a clock jump or drift, a failover, a cut link, a
//! restart without data) and as a note on the target's lane otherwise;
//! and every finding that is one of the simulator's invariants as its
//! violation, the timeline's red band. The other findings (extension
//! after expiry, not linearizable, renewal gaps) are notes on their
//! clients' lanes; the verdict card lists all of them with their witnesses.

use std::collections::{BTreeMap, BTreeSet};

use super::{Check, FaultMark, History, Op, OpKind, Report};
use crate::actor::{Actor, Names};
use crate::fault::{ClockOf, Endpoint, Fault};
use crate::invariants::Violation;
use crate::observe::{LockChange, Via};
use crate::reply::Reply;
use crate::trace::{Event, EventKind, Trace};

/// The node every history is drawn on: a history names no servers.
const NODE: u32 = 0;

/// Events being collected: `(at_ms, order within the instant, event)`.
struct Draw {
    events: Vec<(u64, u8, Actor, EventKind)>,
    clients: Vec<String>,
}

impl Draw {
    fn push(&mut self, at: u64, order: u8, actor: Actor, kind: EventKind) {
        self.events.push((at, order, actor, kind));
    }

    fn client(&self, name: &str) -> Option<u32> {
        self.clients.iter().position(|c| c == name).map(|i| i as u32)
    }
}

/// The call as the timeline labels it: `acquire lock tok-1 PX 200`.
fn call_line(op: &Op) -> Vec<String> {
    let mut argv = vec![op.op.name().to_owned(), op.key.clone()];
    argv.extend(op.token.iter().cloned());
    if let Some(ttl) = op.ttl_ms {
        argv.extend(["PX".to_owned(), ttl.to_string()]);
    }
    if let Some(v) = op.value.as_ref().filter(|_| op.op == OpKind::Read) {
        argv.extend(["=".to_owned(), v.clone()]);
    }
    argv
}

/// What the call's reply would read as in redis-cli.
fn reply(op: &Op) -> Reply {
    match (op.op, op.ok) {
        (OpKind::Read, _) => op
            .value
            .as_ref()
            .map_or(Reply::Nil, |v| Reply::Bulk(v.clone().into_bytes())),
        (_, Some(true)) => Reply::ok(),
        (OpKind::Acquire, _) => Reply::Nil,
        _ => Reply::Integer(0),
    }
}

/// The history (already checked into `report`) as a trace.
pub fn trace(history: &History, report: &Report) -> Trace {
    let mut d = Draw {
        events: Vec::new(),
        clients: report.clients.clone(),
    };
    let mut ops: Vec<&Op> = history.ops.iter().collect();
    ops.sort_by_key(|o| (o.invoke_ms, o.line));
    requests(&mut d, &ops);
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for &op in &ops {
        by_key.entry(op.key.as_str()).or_default().push(op);
    }
    for (key, ops) in &by_key {
        lock_bars(&mut d, key, ops);
        beliefs(&mut d, key, ops);
    }
    for f in &history.faults {
        fault(&mut d, f);
    }
    findings(&mut d, report);
    d.events.sort_by_key(|(at, order, _, _)| (*at, *order));
    Trace {
        names: Names {
            clients: d.clients,
            nodes: vec!["redis".to_owned()],
        },
        events: (d.events.into_iter().enumerate())
            .map(|(step, (at_ms, _, actor, kind))| Event {
                step: step as u64,
                at_ms,
                actor,
                kind,
            })
            .collect(),
    }
}

/// Each call a request (a write: to the resource), answered or not.
fn requests(d: &mut Draw, ops: &[&Op]) {
    for (req, op) in ops.iter().enumerate() {
        let Some(c) = d.client(&op.client) else { continue };
        let req = req as u64 + 1;
        if op.op == OpKind::Write {
            let value = op.value.clone().unwrap_or_default();
            d.push(
                op.invoke_ms,
                1,
                Actor::Client(c),
                EventKind::WriteSent {
                    token: op.fence,
                    value: value.clone(),
                },
            );
            if let (Some(accepted), Some(t)) = (op.ok, op.complete_ms) {
                let kind = EventKind::Write {
                    client: c,
                    token: op.fence,
                    value,
                    accepted,
                };
                d.push(t, 2, Actor::Resource, kind);
            }
            continue;
        }
        let commands = vec![call_line(op)];
        d.push(
            op.invoke_ms,
            1,
            Actor::Client(c),
            EventKind::Sent {
                req,
                node: NODE,
                commands,
            },
        );
        match (op.ok, op.complete_ms) {
            (Some(_), Some(t)) => {
                let replies = vec![reply(op)];
                d.push(
                    t,
                    2,
                    Actor::Client(c),
                    EventKind::Received {
                        req,
                        node: NODE,
                        replies,
                    },
                );
            }
            (None, Some(t)) => d.push(t, 2, Actor::Client(c), EventKind::TimedOut { req, node: NODE }),
            _ => {}
        }
    }
}

/// The lock key on the node: who holds it, and until when it may.
fn lock_bars(d: &mut Draw, key: &str, ops: &[&Op]) {
    // (time, order, op): grants and extensions take effect by their
    // completion, releases by theirs.
    let mut moments: Vec<(u64, &Op)> = ops
        .iter()
        .filter(|o| o.ok == Some(true) && matches!(o.op, OpKind::Acquire | OpKind::Extend | OpKind::Release))
        .filter_map(|o| o.complete_ms.map(|t| (t, *o)))
        .collect();
    moments.sort_by_key(|(t, o)| (*t, o.line));
    // The holder, and the moment its lease may run out.
    let mut held: Option<(u32, u64)> = None;
    let node = Actor::Node(NODE);
    let lock = |change: LockChange, via: Via| EventKind::Lock {
        key: key.to_owned(),
        change,
        via,
    };
    for (t, op) in moments {
        let Some(c) = d.client(&op.client) else { continue };
        if let Some((_, until)) = held.filter(|&(_, until)| until <= t) {
            d.push(until, 0, node, EventKind::Expired { key: key.to_owned() });
            d.push(until, 0, node, lock(LockChange::Removed { by: None }, Via::Expiry));
            held = None;
        }
        let lease = |o: &Op| o.invoke_ms.saturating_add(o.ttl_ms.unwrap_or(u64::MAX / 2));
        match op.op {
            OpKind::Acquire => {
                let change = LockChange::Acquired {
                    owner: Some(c),
                    value: op.token.clone().unwrap_or_default(),
                    ttl_ms: op.ttl_ms,
                };
                d.push(t, 3, node, lock(change, Via::Command));
                held = Some((c, lease(op)));
            }
            OpKind::Extend if held.is_some_and(|(h, _)| h == c) => {
                d.push(
                    t,
                    3,
                    node,
                    lock(LockChange::Renewed { ttl_ms: op.ttl_ms }, Via::Command),
                );
                held = Some((c, lease(op)));
            }
            OpKind::Release if held.is_some() => {
                d.push(t, 3, node, lock(LockChange::Removed { by: Some(c) }, Via::Command));
                held = None;
            }
            _ => {}
        }
    }
    if let Some((_, until)) = held.filter(|&(_, until)| until < u64::MAX / 4) {
        d.push(until, 0, node, EventKind::Expired { key: key.to_owned() });
        d.push(until, 0, node, lock(LockChange::Removed { by: None }, Via::Expiry));
    }
}

/// Each client's belief that it holds the lock, as the judge reads it.
fn beliefs(d: &mut Draw, key: &str, ops: &[&Op]) {
    let mut open: BTreeSet<u32> = BTreeSet::new();
    let belief = |holds| EventKind::Belief {
        key: key.to_owned(),
        holds,
    };
    for op in ops {
        let Some(c) = d.client(&op.client) else { continue };
        let ends = match (op.op, op.ok) {
            (OpKind::Release, _) | (OpKind::Acquire, _) => Some(op.invoke_ms),
            (OpKind::Extend, Some(false)) => op.complete_ms,
            _ => None,
        };
        if let Some(t) = ends {
            if open.remove(&c) {
                d.push(t, 1, Actor::Client(c), belief(false));
            }
        }
        if let (OpKind::Acquire, Some(true), Some(t)) = (op.op, op.ok, op.complete_ms) {
            open.insert(c);
            d.push(t, 4, Actor::Client(c), belief(true));
        }
    }
}

/// A nemesis's fault on the lane of whom it hit.
fn fault(d: &mut Draw, f: &FaultMark) {
    let target = f.target.clone().unwrap_or_default();
    let client = d.client(&target);
    let actor = client.map_or(Actor::Node(NODE), Actor::Client);
    let delta = f.note.as_deref().and_then(number).unwrap_or(0);
    let lasted = f.to_ms.map(|t| t.saturating_sub(f.from_ms));
    let of = || match client {
        Some(_) => ClockOf::Client(target.clone()),
        None => ClockOf::Node(NODE),
    };
    let (fault, end) = match (f.fault.as_str(), client) {
        ("pause", Some(_)) => (
            Fault::PauseClient {
                client: target.clone(),
                ms: lasted,
            },
            Some(EventKind::Resumed),
        ),
        ("clock-jump", _) => (
            Fault::JumpClock {
                of: of(),
                delta_ms: delta,
            },
            None,
        ),
        ("clock-drift", _) => (Fault::SetDrift { of: of(), ppm: delta }, None),
        ("failover", _) => (Fault::Failover { node: None }, None),
        ("link-cut", Some(_)) => {
            let (a, b) = (Endpoint::Client(target.clone()), Endpoint::Node(NODE));
            let heal = EventKind::Fault {
                fault: Fault::HealLink {
                    a: a.clone(),
                    b: b.clone(),
                },
            };
            (Fault::CutLink { a, b }, Some(heal))
        }
        ("restart", None) => (
            Fault::RestartNode {
                node: NODE,
                down_ms: lasted.unwrap_or(0),
                keep_data: Some(false),
            },
            Some(EventKind::Restarted { kept_data: false }),
        ),
        _ => {
            let mut text = format!("{} {target}", f.fault);
            if let Some(n) = &f.note {
                text.push_str(&format!(" ({n})"));
            }
            if let Some(to) = f.to_ms {
                text.push_str(&format!(" until {to} ms"));
            }
            d.push(f.from_ms, 0, actor, EventKind::Note { text });
            return;
        }
    };
    d.push(f.from_ms, 0, actor, EventKind::Fault { fault });
    if let (Some(kind), Some(to)) = (end, f.to_ms) {
        d.push(to, 0, actor, kind);
    }
}

/// The first whole number in a fault's note (`+5000 ms`, `ppm=200`).
fn number(note: &str) -> Option<i64> {
    let start = note.find(|c: char| c.is_ascii_digit() || c == '-' || c == '+')?;
    let tail = &note[start..];
    let end = tail
        .char_indices()
        .skip(1)
        .find(|(_, c)| !c.is_ascii_digit())
        .map_or(tail.len(), |(i, _)| i);
    tail[..end].parse().ok()
}

/// Invariant findings as violations (red bands); the rest as notes.
fn findings(d: &mut Draw, report: &Report) {
    for f in &report.findings {
        let actors: Vec<Actor> = f
            .clients
            .iter()
            .filter_map(|c| d.client(c))
            .map(Actor::Client)
            .collect();
        match f.check {
            Check::Invariant(invariant) => {
                let violation = Violation {
                    invariant,
                    from_ms: f.from_ms,
                    to_ms: f.to_ms,
                    actors,
                    detail: f.detail.clone(),
                };
                d.push(f.to_ms, 5, Actor::World, EventKind::Violation { violation });
            }
            check => {
                let actor = actors.first().copied().unwrap_or(Actor::Node(NODE));
                let text = format!("{}: {}", check.title(), f.detail);
                d.push(f.from_ms, 5, actor, EventKind::Note { text });
            }
        }
    }
}
