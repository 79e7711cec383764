//! Judging a history as the simulator judges its own runs.
//!
//! The simulator's world numbers each grant as it happens on the server and
//! asks the [`Monitor`] about every write the resource accepts. A history
//! has no server to watch, so grants are numbered in the order the
//! successful acquires *completed* (the effect happened before the reply:
//! two successful acquires of one live lease can only be ordered this way,
//! and the register check reports the pair if they overlapped), and each
//! accepted write is put to the same [`Monitor`] at its completion. The
//! stale-write sentence is the Monitor's own.
//!
//! A wrong release is a successful release by one client while another
//! client's lock was certainly on the server: that client's acquire
//! completed before the release was sent, nothing removed it since, and its
//! lease (from its acquire's or last extension's invocation) outlasts the
//! release's completion. Overlap, which the simulator reports only when a
//! lesson asks for strict mutual exclusion, is reported here when the
//! resource *witnessed* it: both clients had a write accepted inside the
//! span both believed they held the lock (from their acquire's completion
//! to their release's invocation, a failed extension, or their next
//! acquire).

use std::collections::BTreeMap;

use super::linear::{witness, Outcome, Search};
use super::zh;
use super::{Check, Finding, History, KeyVerdict, Linearity, Op, OpKind, Report};
use crate::actor::Actor;
use crate::invariants::{Invariant, InvariantConfig, Monitor, Violation};
use crate::observe::Held;

/// At most this many findings of one kind are kept with their witnesses;
/// a 10,000-call history with a gap in every renewal reads no better with
/// all of them.
const KEEP_PER_CHECK: usize = 50;

/// Check a whole history: the register verdict per lock key, then every
/// lock invariant.
pub fn check(history: &History, search: &Search) -> Report {
    let mut clients: Vec<String> = Vec::new();
    for op in &history.ops {
        if !clients.contains(&op.client) {
            clients.push(op.client.clone());
        }
    }
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for op in &history.ops {
        by_key.entry(op.key.as_str()).or_default().push(op);
    }
    let mut report = Report {
        ops: history.ops.len(),
        clients,
        ..Report::default()
    };
    let mut findings = Vec::new();
    for (key, ops) in &mut by_key {
        ops.sort_by_key(|o| (o.invoke_ms, o.line));
        let register: Vec<&Op> = ops.iter().copied().filter(|o| o.op != OpKind::Write).collect();
        let linearity = register_verdict(search, key, &register, &mut findings);
        report.keys.push(KeyVerdict {
            key: (*key).to_owned(),
            ops: register.len(),
            linearity,
        });
        let names = &report.clients;
        stale_writes(names, key, ops, &mut findings);
        wrong_releases(names, key, ops, &mut findings);
        witnessed_overlaps(key, ops, &mut findings);
        leases(key, ops, &mut findings);
    }
    findings.sort_by_key(|f| (f.from_ms, f.check));
    let mut kept: BTreeMap<Check, usize> = BTreeMap::new();
    findings.retain(|f| {
        let n = kept.entry(f.check).or_default();
        *n += 1;
        *n <= KEEP_PER_CHECK
    });
    report.findings = findings;
    report
}

fn register_verdict(search: &Search, key: &str, ops: &[&Op], findings: &mut Vec<Finding>) -> Linearity {
    match search.run(ops) {
        Outcome::Linearizable(_) => Linearity::Linearizable,
        Outcome::Unknown { steps } => Linearity::Unknown { steps },
        Outcome::NotLinearizable => {
            if let Some(idx) = witness(search, ops) {
                let w: Vec<Op> = idx.iter().map(|&i| ops[i].clone()).collect();
                let mut clients: Vec<String> = w.iter().map(|o| o.client.clone()).collect();
                clients.dedup();
                findings.push(Finding {
                    check: Check::NotLinearizable,
                    key: key.to_owned(),
                    from_ms: w.iter().map(|o| o.invoke_ms).min().unwrap_or(0),
                    to_ms: w.iter().map(|o| o.complete_ms.unwrap_or(o.invoke_ms)).max().unwrap_or(0),
                    clients,
                    detail: format!(
                        "no order of these {} calls, each at a moment between its invocation and completion, is what one lock key answers",
                        w.len()
                    ),
                    detail_zh: format!(
                        "这 {} 次调用无论各自在调用与完成之间的哪一刻生效，都排不出一个单一锁键会给出的回答顺序",
                        w.len()
                    ),
                    witness: w,
                });
            }
            Linearity::NotLinearizable
        }
    }
}

fn finding(check: Check, key: &str, v: &Violation, names: &[String], witness: Vec<Op>) -> Finding {
    let clients = v
        .actors
        .iter()
        .filter_map(|a| match a {
            Actor::Client(i) => names.get(*i as usize).cloned(),
            _ => None,
        })
        .collect();
    Finding {
        check,
        key: key.to_owned(),
        from_ms: v.from_ms,
        to_ms: v.to_ms,
        clients,
        detail: v.detail.clone(),
        detail_zh: zh::violation(v),
        witness,
    }
}

fn index(names: &[String], client: &str) -> u32 {
    names.iter().position(|n| n == client).unwrap_or(0) as u32
}

/// Grants in completion order and accepted writes, put to the [`Monitor`].
fn stale_writes(names: &[String], key: &str, ops: &[&Op], findings: &mut Vec<Finding>) {
    let mut moments: Vec<(u64, bool, usize)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match (op.op, op.ok, op.complete_ms) {
            (OpKind::Acquire, Some(true), Some(t)) => moments.push((t, false, i)),
            (OpKind::Write, Some(true), Some(t)) => moments.push((t, true, i)),
            _ => {}
        }
    }
    moments.sort();
    let mut monitor = Monitor::new(InvariantConfig {
        lock_keys: vec![key.to_owned()],
        ..InvariantConfig::default()
    });
    let name = |i: u32| names.get(i as usize).cloned().unwrap_or_default();
    // What the Monitor remembers, kept alongside for the witness: each
    // client's latest grant (its acquire) and the latest holder's write.
    let mut acquire_of: BTreeMap<u32, (u32, usize)> = BTreeMap::new();
    let mut latest: Option<(u32, usize)> = None;
    for (t, is_write, i) in moments {
        let c = index(names, &ops[i].client);
        if !is_write {
            let g = monitor.grant(c, key);
            acquire_of.insert(c, (g, i));
            continue;
        }
        let (grant, acq) = acquire_of.get(&c).copied().map_or((0, None), |(g, a)| (g, Some(a)));
        if let Some(v) = monitor.accepted_write_under(c, Some(key), t, ops[i].fence, &name) {
            let mut w: Vec<usize> = acq.into_iter().collect();
            if let Some((lg, lw)) = latest {
                w.extend(acquire_of.values().filter(|(g, _)| *g == lg).map(|&(_, a)| a));
                w.push(lw);
            }
            w.push(i);
            w.sort();
            w.dedup();
            let witness = w.iter().map(|&k| ops[k].clone()).collect();
            findings.push(finding(
                Check::Invariant(Invariant::StaleWrite),
                key,
                &v,
                names,
                witness,
            ));
        }
        if latest.is_none_or(|(g, _)| grant >= g) {
            latest = Some((grant, i));
        }
    }
}

/// Successful releases while another client's lock was certainly there.
fn wrong_releases(names: &[String], key: &str, ops: &[&Op], findings: &mut Vec<Finding>) {
    // (time, order, op): acquires and extensions take effect by their
    // completion, releases from their invocation; at one moment a release
    // goes first (the lenient reading).
    let mut moments: Vec<(u64, u8, usize)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match (op.op, op.ok, op.complete_ms) {
            (OpKind::Acquire | OpKind::Extend, Some(true), Some(t)) => moments.push((t, 1, i)),
            (OpKind::Release, Some(true), Some(_)) => moments.push((op.invoke_ms, 0, i)),
            _ => {}
        }
    }
    moments.sort();
    // The lock last granted and not removed since: its acquire, and until
    // when it certainly lives.
    let mut current: Option<(usize, u64)> = None;
    let client = |n: u32| names.get(n as usize).cloned().unwrap_or_default();
    for (_, _, i) in moments {
        let op = ops[i];
        let lives = op.invoke_ms.saturating_add(op.ttl_ms.unwrap_or(u64::MAX));
        match op.op {
            OpKind::Acquire => current = Some((i, lives)),
            OpKind::Extend => {
                if let Some((a, until)) = current.as_mut() {
                    if ops[*a].client == op.client {
                        *until = (*until).max(lives);
                    }
                }
            }
            _ => {
                if let Some((a, until)) = current.filter(|&(a, _)| ops[a].client != op.client) {
                    if op.end_ms() < until {
                        let acq = ops[a];
                        let held = Held {
                            owner: Some(index(names, &acq.client)),
                            value: acq.token.clone().unwrap_or_default().into_bytes(),
                            deadline: Some(until),
                            since: acq.complete_ms.unwrap_or(acq.invoke_ms),
                        };
                        let by = index(names, &op.client);
                        let now = op.end_ms();
                        let mut monitor = Monitor::default();
                        let server = |_: u32| "the server".to_owned();
                        if let Some(v) = monitor.wrong_release(0, key, by, &held, now, &client, &server) {
                            let witness = vec![acq.clone(), op.clone()];
                            findings.push(finding(
                                Check::Invariant(Invariant::WrongRelease),
                                key,
                                &v,
                                names,
                                witness,
                            ));
                        }
                    }
                }
                current = None;
            }
        }
    }
}

/// One client's belief that it holds the lock: from its acquire's
/// completion until it let go (or the history ended).
struct Belief {
    acquire: usize,
    from: u64,
    to: u64,
}

fn beliefs(ops: &[&Op]) -> Vec<Belief> {
    let mut out = Vec::new();
    let mut open: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        let ends = match (op.op, op.ok) {
            (OpKind::Release, _) | (OpKind::Acquire, _) => Some(op.invoke_ms),
            (OpKind::Extend, Some(false)) => op.complete_ms,
            _ => None,
        };
        if let Some(t) = ends {
            if let Some(b) = open.remove(op.client.as_str()) {
                let b: &mut Belief = &mut out[b];
                b.to = t.max(b.from);
            }
        }
        if let (OpKind::Acquire, Some(true), Some(t)) = (op.op, op.ok, op.complete_ms) {
            open.insert(op.client.as_str(), out.len());
            out.push(Belief {
                acquire: i,
                from: t,
                to: u64::MAX,
            });
        }
    }
    out
}

/// Two clients' accepted writes inside the span both believed they held
/// the lock: mutual exclusion broken, as the resource saw it.
fn witnessed_overlaps(key: &str, ops: &[&Op], findings: &mut Vec<Finding>) {
    let mut writes: BTreeMap<&str, Vec<(u64, usize)>> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        if let (OpKind::Write, Some(true), Some(t)) = (op.op, op.ok, op.complete_ms) {
            writes.entry(op.client.as_str()).or_default().push((t, i));
        }
    }
    for w in writes.values_mut() {
        w.sort();
    }
    // Up to the end of the span included: a client's write that completed
    // in the millisecond its release was sent came before the release.
    let first_write = |client: &str, from: u64, to: u64| {
        let w = writes.get(client)?;
        let k = w.partition_point(|&(t, _)| t < from);
        w.get(k).filter(|&&(t, _)| t <= to).map(|&(_, i)| i)
    };
    let mut bs = beliefs(ops);
    bs.sort_by_key(|b| b.from);
    let mut active: Vec<&Belief> = Vec::new();
    for b in &bs {
        active.retain(|a| a.to > b.from);
        let mine = ops[b.acquire].client.as_str();
        for a in active.iter().filter(|a| ops[a.acquire].client != mine) {
            let (from, to) = (b.from, a.to.min(b.to));
            let theirs = ops[a.acquire].client.as_str();
            let (Some(wa), Some(wb)) = (first_write(theirs, from, to), first_write(mine, from, to)) else {
                continue;
            };
            let mut idx = [a.acquire, b.acquire, wa, wb];
            idx.sort();
            findings.push(Finding {
                check: Check::Invariant(Invariant::Overlap),
                key: key.to_owned(),
                from_ms: from,
                to_ms: ops[wa].end_ms().max(ops[wb].end_ms()),
                clients: vec![theirs.to_owned(), mine.to_owned()],
                detail: format!(
                    "{theirs} and {mine} both believed they held {key}, and the resource accepted a write from each meanwhile"
                ),
                detail_zh: format!("{theirs} 和 {mine} 都认为自己持有 {key}，其间资源接受了两者各自的写入"),
                witness: idx.iter().map(|&i| ops[i].clone()).collect(),
            });
        }
        active.push(b);
    }
}

/// Per client, its lease from the last successful acquire or extension:
/// an extension sent after that lease certainly ran out yet reported
/// success, or one sent after it may have run out (a renewal gap).
fn leases(key: &str, ops: &[&Op], findings: &mut Vec<Finding>) {
    let mut lease: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        let who = op.client.as_str();
        match (op.op, op.ok) {
            (OpKind::Acquire, Some(true)) => {
                lease.insert(who, i);
            }
            (OpKind::Acquire | OpKind::Release, _) => {
                lease.remove(who);
            }
            (OpKind::Extend, ok) => {
                if let Some(&l) = lease.get(who) {
                    let prev = ops[l];
                    let ttl = prev.ttl_ms.unwrap_or(u64::MAX);
                    let may = prev.invoke_ms.saturating_add(ttl);
                    let must = prev.end_ms().saturating_add(ttl);
                    let sent = op.invoke_ms;
                    let (check, from, detail, detail_zh) = if ok == Some(true) && sent >= must {
                        let d = format!("{who}'s lease on {key} had certainly run out at {must} ms, yet the extension sent at {sent} ms reported success");
                        let z =
                            format!("{who} 在 {key} 上的租约在 {must} ms 时必定已到期，{sent} ms 发出的续期却报告成功");
                        (Check::ExtensionAfterExpiry, must, d, z)
                    } else {
                        let d =
                            format!("{who}'s lease on {key} may have run out at {may} ms; its next extension was sent at {sent} ms");
                        let z =
                            format!("{who} 在 {key} 上的租约可能已在 {may} ms 到期；它的下一次续期在 {sent} ms 才发出");
                        (Check::RenewalGap, may, d, z)
                    };
                    if check == Check::ExtensionAfterExpiry || op.invoke_ms > may {
                        findings.push(Finding {
                            check,
                            key: key.to_owned(),
                            from_ms: from,
                            to_ms: op.invoke_ms,
                            clients: vec![who.to_owned()],
                            detail,
                            detail_zh,
                            witness: vec![prev.clone(), (*op).clone()],
                        });
                    }
                }
                match ok {
                    Some(true) => lease.insert(who, i),
                    _ => lease.remove(who),
                };
            }
            _ => {}
        }
    }
}
