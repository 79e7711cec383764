//! A simulator run, seen as a history.
//!
//! What a lock library's workload records — each call's invocation and
//! completion on the client, the resource's verdict on each write — can be
//! read off a simulator trace: a request's `Sent` and `Received` (or
//! `TimedOut`/`Lost`, an unknown outcome), a `WriteSent` and the resource's
//! `Write`. Converting the simulator's own runs this way is how the checker
//! is held to the simulator's judgment: the same run must be found guilty
//! of the same invariants by both.
//!
//! Requests are recognised by their commands, as a workload would name its
//! calls: `SET … NX` (also inside `MULTI`) acquires; `DEL`, `UNLINK`, `GETDEL`,
//! `DELEX` and a script that deletes release; a script that sets a TTL,
//! `PEXPIRE` and `SET … IFEQ` extend; `GET` reads. Anything else (`INCR`
//! of a fencing counter, `WAIT`) is not a lock call and is left out.

use std::collections::BTreeMap;

use super::{History, Op, OpKind};
use crate::actor::Actor;
use crate::reply::Reply;
use crate::trace::{Event, EventKind, Trace};

fn upper(s: &str) -> String {
    s.to_ascii_uppercase()
}

/// The lock call a request makes, before its outcome is known.
pub(super) struct Call {
    pub(super) op: OpKind,
    pub(super) key: String,
    /// When the command shows it.
    token: Option<String>,
    ttl_ms: Option<u64>,
    /// Which command of the request it is (`MULTI` comes first).
    pos: usize,
}

pub(super) fn classify(commands: &[Vec<String>]) -> Option<Call> {
    let (pos, argv) = commands.iter().enumerate().find(|(_, c)| {
        c.first()
            .is_some_and(|n| !matches!(upper(n).as_str(), "MULTI" | "WATCH"))
    })?;
    let name = upper(argv.first()?);
    let arg = |i: usize| argv.get(i).cloned();
    let flag = |f: &str| argv.iter().skip(3).position(|a| upper(a) == f).map(|p| p + 3);
    let ttl_after = |p: Option<usize>, scale: u64| p.and_then(|p| arg(p + 1)?.parse::<u64>().ok().map(|v| v * scale));
    let ttl = ttl_after(flag("PX"), 1).or(ttl_after(flag("EX"), 1000));
    let op = match name.as_str() {
        "SET" if flag("NX").is_some() => (OpKind::Acquire, arg(1)?, arg(2), ttl),
        "SET" if flag("IFEQ").is_some() => (OpKind::Extend, arg(1)?, arg(2), ttl),
        "SETNX" => (OpKind::Acquire, arg(1)?, arg(2), None),
        "DEL" | "UNLINK" | "GETDEL" => (OpKind::Release, arg(1)?, None, None),
        "DELEX" => (OpKind::Release, arg(1)?, arg(3), None),
        "PEXPIRE" => (OpKind::Extend, arg(1)?, None, arg(2)?.parse().ok()),
        "GET" => (OpKind::Read, arg(1)?, None, None),
        "EVAL" => {
            let body = arg(1)?.to_ascii_lowercase();
            let key = arg(3)?;
            if body.contains("\"del\"") || body.contains("'del'") {
                (OpKind::Release, key, arg(4), None)
            } else if body.contains("pexpire") {
                (OpKind::Extend, key, arg(4), arg(5)?.parse().ok())
            } else {
                return None;
            }
        }
        _ => return None,
    };
    Some(Call {
        op: op.0,
        key: op.1,
        token: op.2,
        ttl_ms: op.3,
        pos,
    })
}

/// Did the call do what it was for, judging by its reply?
pub(super) fn succeeded(kind: OpKind, reply: &Reply) -> bool {
    match (kind, reply) {
        (_, Reply::Status(s)) => s == "OK",
        (OpKind::Release, Reply::Bulk(_)) => true,
        (_, Reply::Integer(n)) => *n == 1,
        _ => false,
    }
}

/// The reply to command `pos` of a request (unwrapping `EXEC`'s array).
fn reply_at(commands: &[Vec<String>], replies: &[Reply], pos: usize) -> Option<Reply> {
    let multi = commands
        .first()
        .is_some_and(|c| c.first().is_some_and(|n| upper(n) == "MULTI"));
    if multi {
        match replies.last()? {
            Reply::Array(r) => r.get(pos - 1).cloned(),
            _ => None,
        }
    } else {
        replies.get(pos).cloned()
    }
}

/// A request in flight: its op so far.
struct Pending {
    op: Op,
    pos: usize,
    commands: Vec<Vec<String>>,
}

/// The history a workload on these clients would have recorded.
// long: one arm per kind of trace event a workload would have seen
pub fn from_trace(trace: &Trace) -> History {
    let mut history = History::default();
    let mut pending: BTreeMap<u64, Pending> = BTreeMap::new();
    let mut writes: BTreeMap<u32, (u64, Option<i64>)> = BTreeMap::new();
    // Per client: its latest lock key and token (a bare DEL releases it).
    let mut lock: BTreeMap<u32, (String, Option<String>)> = BTreeMap::new();
    let name = |c: u32| trace.names.client(c).to_owned();
    for Event { at_ms, actor, kind, .. } in &trace.events {
        match (kind, *actor) {
            (EventKind::Sent { req, commands, .. }, Actor::Client(c)) => {
                let Some(Call {
                    op,
                    key,
                    token,
                    ttl_ms,
                    pos,
                }) = classify(commands)
                else {
                    continue;
                };
                let token = token.or_else(|| lock.get(&c).filter(|(k, _)| *k == key).and_then(|(_, t)| t.clone()));
                if op == OpKind::Acquire {
                    lock.insert(c, (key.clone(), token.clone()));
                }
                let op = Op {
                    line: 0,
                    client: name(c),
                    op,
                    key,
                    token: token.or_else(|| (op != OpKind::Read).then(String::new)),
                    ttl_ms,
                    fence: None,
                    value: None,
                    invoke_ms: *at_ms,
                    complete_ms: None,
                    ok: None,
                };
                pending.insert(
                    *req,
                    Pending {
                        op,
                        pos,
                        commands: commands.clone(),
                    },
                );
            }
            (EventKind::Received { req, replies, .. }, _) => {
                let Some(mut p) = pending.remove(req) else {
                    continue;
                };
                let reply = reply_at(&p.commands, replies, p.pos);
                p.op.complete_ms = Some(*at_ms);
                if p.op.op == OpKind::Read {
                    p.op.value = match &reply {
                        Some(Reply::Bulk(v)) => Some(String::from_utf8_lossy(v).into_owned()),
                        _ => None,
                    };
                    p.op.ok = Some(matches!(reply, Some(Reply::Bulk(_) | Reply::Nil)));
                } else {
                    p.op.ok = Some(reply.is_some_and(|r| succeeded(p.op.op, &r)));
                }
                history.ops.push(p.op);
            }
            (EventKind::TimedOut { req, .. } | EventKind::Lost { req, .. }, _) => {
                if let Some(p) = pending.remove(req) {
                    history.ops.push(p.op);
                }
            }
            (EventKind::WriteSent { token, .. }, Actor::Client(c)) => {
                writes.insert(c, (*at_ms, *token));
            }
            (
                EventKind::Write {
                    client,
                    token,
                    value,
                    accepted,
                },
                _,
            ) => {
                let (invoke, _) = writes.remove(client).unwrap_or((*at_ms, *token));
                history.ops.push(Op {
                    line: 0,
                    client: name(*client),
                    op: OpKind::Write,
                    key: lock.get(client).map_or_else(|| "lock".to_owned(), |(k, _)| k.clone()),
                    token: None,
                    ttl_ms: None,
                    fence: *token,
                    value: Some(value.clone()),
                    invoke_ms: invoke,
                    complete_ms: Some(*at_ms),
                    ok: Some(*accepted),
                });
            }
            _ => {}
        }
    }
    // Calls still in flight when the run ended: outcome unknown.
    history.ops.extend(pending.into_values().map(|p| p.op));
    history
}
