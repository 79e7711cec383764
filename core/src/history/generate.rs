//! A seeded lock workload's history, for the checker's benchmark.
//!
//! `locklab check --bench` (and the page's worker, to compare) needs a
//! large history that is realistic for a lock: clients contending on one
//! key, most attempts failing while one holds it, holders writing with
//! their fencing token, extending and releasing, calls overlapping in time.
//! Each client's next call is invoked when its previous one completed plus
//! a think time; every call takes effect a fixed delay after its invocation
//! (so taking calls in invocation order is taking them in effect order, and
//! the one register below answers them), and completes a random time after
//! that. The history is therefore linearizable by construction — the
//! search has to find that order among thousands of overlapping calls.

use super::{History, Op, OpKind};
use crate::rng::Rng;

/// Milliseconds from a call's invocation to its effect on the register.
const EFFECT_MS: u64 = 2;

/// What one client does next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    Acquire,
    Write,
    Extend,
    Release,
}

/// `ops` calls of `clients` clients on the key `lock`, from `seed`.
pub fn generate(seed: u64, clients: u32, ops: usize) -> History {
    let mut rng = Rng::new(seed);
    let ttl = 200u64;
    let clients = clients.max(1) as usize;
    let mut next_at: Vec<u64> = (0..clients as u64).map(|c| c * 3).collect();
    let mut next = vec![Next::Acquire; clients];
    let mut cycle = vec![0u64; clients];
    // The register: holder (client, token) and its deadline; the fence.
    let mut holder: Option<(usize, String, u64)> = None;
    let mut fence = 0i64;
    let mut history = History::default();
    while history.ops.len() < ops {
        let c = (0..clients).min_by_key(|&c| (next_at[c], c)).unwrap_or(0);
        let invoke = next_at[c];
        let at = invoke + EFFECT_MS;
        if holder.as_ref().is_some_and(|h| h.2 <= at) {
            holder = None;
        }
        let token = format!("c{c}-{}", cycle[c]);
        let mine = holder.as_ref().is_some_and(|h| h.0 == c && h.1 == token);
        let (kind, ok, then) = match next[c] {
            Next::Acquire if holder.is_none() => {
                holder = Some((c, token.clone(), at + ttl));
                fence += 1;
                (OpKind::Acquire, true, Next::Write)
            }
            Next::Acquire => (OpKind::Acquire, false, Next::Acquire),
            Next::Write => (OpKind::Write, true, Next::Extend),
            Next::Extend if mine => {
                if let Some(h) = holder.as_mut() {
                    h.2 = at + ttl;
                }
                (OpKind::Extend, true, Next::Release)
            }
            Next::Release if mine => {
                holder = None;
                (OpKind::Release, true, Next::Acquire)
            }
            Next::Extend | Next::Release => (next_op(next[c]), false, Next::Acquire),
        };
        let complete = at + rng.between(0, 6);
        history.ops.push(Op {
            line: history.ops.len() as u64 + 1,
            client: format!("c{c}"),
            op: kind,
            key: "lock".to_owned(),
            token: (kind != OpKind::Write).then(|| token.clone()),
            ttl_ms: matches!(kind, OpKind::Acquire | OpKind::Extend).then_some(ttl),
            fence: (kind == OpKind::Write).then_some(fence),
            value: (kind == OpKind::Write).then(|| format!("{c}:{invoke}")),
            invoke_ms: invoke,
            complete_ms: Some(complete),
            ok: Some(ok),
        });
        if then == Next::Acquire && kind != OpKind::Acquire {
            cycle[c] += 1;
        }
        next[c] = then;
        next_at[c] = complete + rng.between(1, 12);
    }
    history
}

fn next_op(n: Next) -> OpKind {
    match n {
        Next::Extend => OpKind::Extend,
        _ => OpKind::Release,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::linear::Search;
    use crate::history::{check, Linearity};

    #[test]
    fn a_generated_history_is_linearizable_contended_and_clean() {
        let h = generate(7, 8, 2_000);
        assert_eq!(h.ops.len(), 2_000);
        let failed = h
            .ops
            .iter()
            .filter(|o| o.op == OpKind::Acquire && o.ok == Some(false))
            .count();
        let granted = h
            .ops
            .iter()
            .filter(|o| o.op == OpKind::Acquire && o.ok == Some(true))
            .count();
        assert!(
            failed > granted && granted > 50,
            "contended: {granted} grants, {failed} refusals"
        );
        let r = check(&h, &Search::default());
        assert_eq!(r.keys[0].linearity, Linearity::Linearizable, "{}", r.text());
        assert!(r.findings.is_empty(), "{}", r.text());
    }
}
