//! Is the lock key one register? Wing–Gong–Lowe, as Porcupine does it.
//!
//! A history is linearizable when every call can be given a point inside
//! its own invocation–completion window such that, taken in the order of
//! those points, the calls are what one lock key on one server would answer.
//! Wing and Gong search that order depth-first: repeatedly pick a *minimal*
//! call (one invoked before every pending call returned), apply it to the
//! model, backtrack when the model refuses. Lowe's improvement — the one
//! that makes it usable — caches every (set of calls linearized, model
//! state) already explored, so the search never explores it twice. The
//! bookkeeping below is Porcupine's `checkSingle`: call and return entries
//! in one doubly linked list ordered by time, a call and its return *lifted*
//! out when the call is linearized and put back on backtracking.
//!
//! **The model** ([`LeaseState`]) is a lock key with a lease: who holds it (a
//! token), and when the lease may and must have run out. An acquire's lease
//! starts at its own linearization point, which lies somewhere in its
//! window; rather than tracking that correlation (a zone of clock
//! constraints), expiry is a step of its own allowed anywhere between
//! `invoke + ttl` and `complete + ttl`. That relaxes the model: it can
//! accept a history a stricter one would refuse, never refuse one that is
//! linearizable — a checker must not cry wolf. Release and extend are
//! compare-and-act on the caller's token (the contract of every lock
//! library); a library whose release deletes whatever is there shows up as
//! not linearizable, and as a wrong release in [`super::check`].
//!
//! **Unknown outcomes** (a call that timed out or never returned) may have
//! taken effect at any time after they were sent, or never: each is tried
//! as succeeding, then as never having happened. Their window never closes.
//!
//! **The limit**: the search counts model steps; past [`Search::limit`] it
//! answers "unknown" instead of running for hours.

use std::collections::{BTreeMap, HashSet};

use super::{Op, OpKind};

/// The lock key's state, as the model sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LeaseState {
    /// The holder's token, numbered; `None`: no lock.
    owner: Option<u32>,
    /// The lease may have run out from here on.
    may_expire: u64,
    /// The lease has certainly run out from here on.
    must_expire: u64,
}

/// One register call, as the model needs it.
#[derive(Clone, Copy, Debug)]
struct Call {
    kind: OpKind,
    token: Option<u32>,
    ttl: u64,
    invoke: u64,
    end: u64,
    ok: Option<bool>,
}

impl LeaseState {
    /// Some point of `[inv, end]` finds no live lock.
    fn free_within(self, end: u64) -> bool {
        self.owner.is_none() || end >= self.may_expire
    }

    /// Some point of `[inv, end]` finds `token`'s lock live.
    fn held_within(self, token: Option<u32>, inv: u64) -> bool {
        self.owner.is_some() && self.owner == token && inv < self.must_expire
    }

    fn lease(token: Option<u32>, from: u64, c: &Call) -> LeaseState {
        LeaseState {
            owner: token,
            may_expire: from.saturating_add(c.ttl),
            must_expire: c.end.saturating_add(c.ttl),
        }
    }

    /// The state after `c` took effect (`Some`), or `None`: no point of its
    /// window allows what it answered.
    fn step(self, c: &Call) -> Option<LeaseState> {
        let ok = c.ok.unwrap_or(true);
        let free = LeaseState::default();
        match (c.kind, ok) {
            (OpKind::Acquire, true) => self.free_within(c.end).then(|| {
                let from = if self.owner.is_some() {
                    c.invoke.max(self.may_expire)
                } else {
                    c.invoke
                };
                LeaseState::lease(c.token, from, c)
            }),
            (OpKind::Acquire, false) => (self.owner.is_some() && c.invoke < self.must_expire).then_some(self),
            (OpKind::Release, true) => self.held_within(c.token, c.invoke).then_some(free),
            (OpKind::Release, false) | (OpKind::Extend, false) => {
                (self.owner != c.token || self.free_within(c.end)).then_some(self)
            }
            (OpKind::Extend, true) => self
                .held_within(c.token, c.invoke)
                .then(|| LeaseState::lease(c.token, c.invoke, c)),
            (OpKind::Read, _) => match c.token {
                None => self.free_within(c.end).then_some(self),
                t => self.held_within(t, c.invoke).then_some(self),
            },
            (OpKind::Write, _) => Some(self),
        }
    }
}

/// What the search found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// One order that works: indexes into the calls given, in order
    /// (unknown-outcome calls taken as never having happened are left out).
    Linearizable(Vec<usize>),
    NotLinearizable,
    Unknown {
        steps: u64,
    },
}

/// A search with a step limit.
#[derive(Clone, Copy, Debug)]
pub struct Search {
    pub limit: u64,
}

impl Default for Search {
    fn default() -> Self {
        Search { limit: 20_000_000 }
    }
}

/// Number the tokens seen in `ops` (a read's value is a token too). An
/// acquire with no token (its outcome unknown, its token never seen) gets
/// one of its own, numbered down from the top: if it took effect, the key
/// holds a value no other call knows.
fn calls<'a>(ops: &[&'a Op]) -> Vec<Call> {
    let mut tokens: BTreeMap<&'a str, u32> = BTreeMap::new();
    let mut unseen = u32::MAX;
    let mut id = |op: &'a Op| {
        let t = if op.op == OpKind::Read {
            op.value.as_ref()
        } else {
            op.token.as_ref()
        };
        match t {
            Some(t) => {
                let n = tokens.len() as u32;
                Some(*tokens.entry(t.as_str()).or_insert(n))
            }
            None if op.op == OpKind::Acquire => {
                unseen -= 1;
                Some(unseen)
            }
            None => None,
        }
    };
    ops.iter()
        .map(|op| Call {
            kind: op.op,
            token: id(op),
            ttl: op.ttl_ms.unwrap_or(u64::MAX),
            invoke: op.invoke_ms,
            end: op.end_ms(),
            ok: if op.op == OpKind::Read && op.ok.is_none() && op.complete_ms.is_some() {
                Some(true)
            } else {
                op.ok
            },
        })
        .collect()
}

/// A list entry: the call (`ret: false`) or return of call `op`.
#[derive(Clone, Copy, Debug)]
struct Entry {
    op: usize,
    ret: bool,
    prev: usize,
    next: usize,
}

/// The doubly linked list of Porcupine's `checkSingle`, in a vector: entry
/// 0 is the head, `NIL` ends it.
struct List {
    e: Vec<Entry>,
    /// Per call: its call entry and its return entry.
    at: Vec<(usize, usize)>,
}

const NIL: usize = usize::MAX;

impl List {
    fn new(calls: &[Call]) -> List {
        let mut order: Vec<(u64, bool, usize)> = Vec::with_capacity(calls.len() * 2);
        for (i, c) in calls.iter().enumerate() {
            order.push((c.invoke, false, i));
            order.push((c.end, true, i));
        }
        // Calls before returns at the same time: touching windows count as
        // concurrent, the lenient reading.
        order.sort();
        let mut e = vec![Entry {
            op: NIL,
            ret: false,
            prev: NIL,
            next: NIL,
        }];
        let mut at = vec![(0, 0); calls.len()];
        for (k, &(_, ret, op)) in order.iter().enumerate() {
            let idx = k + 1;
            e.push(Entry {
                op,
                ret,
                prev: idx - 1,
                next: if k + 1 < order.len() { idx + 1 } else { NIL },
            });
            if ret {
                at[op].1 = idx;
            } else {
                at[op].0 = idx;
            }
        }
        e[0].next = if order.is_empty() { NIL } else { 1 };
        List { e, at }
    }

    fn unlink(&mut self, i: usize) {
        let Entry { prev, next, .. } = self.e[i];
        self.e[prev].next = next;
        if next != NIL {
            self.e[next].prev = prev;
        }
    }

    fn relink(&mut self, i: usize) {
        let Entry { prev, next, .. } = self.e[i];
        self.e[prev].next = i;
        if next != NIL {
            self.e[next].prev = i;
        }
    }

    /// Take call `op` out: its return first, then its call.
    fn lift(&mut self, op: usize) {
        let (c, r) = self.at[op];
        self.unlink(r);
        self.unlink(c);
    }

    /// Put call `op` back, in the reverse order.
    fn unlift(&mut self, op: usize) {
        let (c, r) = self.at[op];
        self.relink(c);
        self.relink(r);
    }
}

/// A frame of the search: call `op` linearized as `skipped` or not, from
/// `state`.
struct Frame {
    op: usize,
    skipped: bool,
    state: LeaseState,
}

impl Search {
    /// Search one key's calls (all of the same key; writes are ignored).
    // long: Porcupine's checkSingle loop, kept whole so it reads as the original
    pub fn run(&self, ops: &[&Op]) -> Outcome {
        let calls = calls(ops);
        let mut list = List::new(&calls);
        let words = calls.len().div_ceil(64);
        let mut done = vec![0u64; words];
        let mut cache: HashSet<(Vec<u64>, LeaseState)> = HashSet::new();
        let mut stack: Vec<Frame> = Vec::new();
        let mut state = LeaseState::default();
        let mut steps = 0u64;
        let mut cursor = (list.e[0].next, false);
        while list.e[0].next != NIL {
            if steps >= self.limit {
                return Outcome::Unknown { steps };
            }
            let (i, skip) = cursor;
            let entry = list.e[i];
            if entry.ret {
                // A call returned before any order could place it: undo.
                let Some(f) = stack.pop() else {
                    return Outcome::NotLinearizable;
                };
                list.unlift(f.op);
                done[f.op / 64] &= !(1 << (f.op % 64));
                state = f.state;
                let unknown = calls[f.op].ok.is_none();
                let call = list.at[f.op].0;
                cursor = if unknown && !f.skipped {
                    (call, true)
                } else {
                    (list.e[call].next, false)
                };
                continue;
            }
            steps += 1;
            let c = &calls[entry.op];
            let next = if skip { Some(state) } else { state.step(c) };
            let mut moved = false;
            if let Some(next) = next {
                let mut key = done.clone();
                key[entry.op / 64] |= 1 << (entry.op % 64);
                if cache.insert((key, next)) {
                    stack.push(Frame {
                        op: entry.op,
                        skipped: skip,
                        state,
                    });
                    state = next;
                    done[entry.op / 64] |= 1 << (entry.op % 64);
                    list.lift(entry.op);
                    cursor = (list.e[0].next, false);
                    moved = true;
                }
            }
            if !moved {
                cursor = if c.ok.is_none() && !skip {
                    (i, true)
                } else {
                    (entry.next, false)
                };
            }
        }
        Outcome::Linearizable(stack.iter().filter(|f| !f.skipped).map(|f| f.op).collect())
    }
}

/// The part of `ops` (one key's calls, in invocation order) that shows it
/// is not a register: the shortest failing prefix, whose last call is the
/// one no order can place, cut to start at the latest successful acquire
/// from which the calls still fail — and without that last call, do not.
/// Dropping calls one by one would not do: a release whose acquire was
/// dropped fails on its own, for a reason the history does not have.
/// Then the window is shrunk ([`shrink`]) by the calls that change nothing
/// and are not needed for it to fail.
/// `None` when `ops` is linearizable or undecided.
pub fn witness(search: &Search, ops: &[&Op]) -> Option<Vec<usize>> {
    let verdict = |r: std::ops::Range<usize>| search.run(&ops[r]);
    let fails = |r: std::ops::Range<usize>| verdict(r) == Outcome::NotLinearizable;
    if !fails(0..ops.len()) {
        return None;
    }
    // Shortest failing prefix, by bisection (failure only grows with the
    // prefix in practice; the final check keeps the answer honest).
    let (mut lo, mut hi) = (1, ops.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fails(0..mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    if !fails(0..hi) {
        return Some((0..ops.len()).collect());
    }
    let start = (0..hi.saturating_sub(1))
        .rev()
        .filter(|&s| ops[s].op == OpKind::Acquire && ops[s].ok == Some(true))
        .find(|&s| fails(s..hi) && matches!(verdict(s..hi - 1), Outcome::Linearizable(_)))
        .unwrap_or(0);
    Some(shrink(search, ops, (start..hi).collect()))
}

/// Most calls [`shrink`] tries to drop: each try is a search.
const SHRINK_TRIES: usize = 200;

/// Drop from a failing window, one at a time, every call that changes
/// nothing — a read, or an acquire, release or extension that answered
/// failure — if the rest still fails. Only those: a linearization of the
/// whole history minus such calls is still one (none of them moved the
/// register), so if the rest admits none, the whole did not either, and
/// the smaller witness is as honest as the window (delta debugging,
/// restricted to the calls whose removal is sound).
fn shrink(search: &Search, ops: &[&Op], mut keep: Vec<usize>) -> Vec<usize> {
    let inert = |o: &Op| o.op == OpKind::Read || o.ok == Some(false);
    let candidates: Vec<usize> = keep.iter().copied().filter(|&i| inert(ops[i])).collect();
    for i in candidates.into_iter().take(SHRINK_TRIES) {
        let rest: Vec<&Op> = keep.iter().filter(|&&k| k != i).map(|&k| ops[k]).collect();
        if search.run(&rest) == Outcome::NotLinearizable {
            keep.retain(|&k| k != i);
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn op(client: &str, kind: OpKind, token: &str, ttl: u64, w: (u64, u64), ok: Option<bool>) -> Op {
        Op {
            line: 0,
            client: client.into(),
            op: kind,
            key: "lock".into(),
            token: (kind != OpKind::Read).then(|| token.to_owned()),
            ttl_ms: Some(ttl),
            fence: None,
            value: (kind == OpKind::Read && !token.is_empty()).then(|| token.to_owned()),
            invoke_ms: w.0,
            complete_ms: ok.map(|_| w.1),
            ok,
        }
    }

    fn judge(ops: &[Op]) -> Outcome {
        let refs: Vec<&Op> = ops.iter().collect();
        Search::default().run(&refs)
    }

    use OpKind::{Acquire, Extend, Read, Release};

    #[test]
    fn one_lock_handed_over_is_linearizable() {
        let h = [
            op("a", Acquire, "ta", 1000, (0, 10), Some(true)),
            op("b", Acquire, "tb", 1000, (5, 15), Some(false)),
            op("a", Release, "ta", 1000, (20, 30), Some(true)),
            op("b", Acquire, "tb", 1000, (25, 40), Some(true)),
            op("c", Read, "tb", 0, (41, 42), Some(true)),
        ];
        assert!(matches!(judge(&h), Outcome::Linearizable(o) if o.len() == 5));
    }

    #[test]
    fn two_grants_of_a_live_lease_are_not_linearizable() {
        let h = [
            op("a", Acquire, "ta", 1000, (0, 10), Some(true)),
            op("b", Acquire, "tb", 1000, (20, 30), Some(true)),
        ];
        assert_eq!(judge(&h), Outcome::NotLinearizable);
        let refs: Vec<&Op> = h.iter().collect();
        assert_eq!(witness(&Search::default(), &refs), Some(vec![0, 1]));
    }

    #[test]
    fn the_witness_drops_the_calls_that_changed_nothing() {
        let h = [
            op("a", Acquire, "ta", 1000, (0, 10), Some(true)),
            op("b", Acquire, "tb", 1000, (20, 30), Some(false)),
            op("c", Release, "tc", 1000, (40, 50), Some(false)),
            op("c", Read, "ta", 0, (55, 56), Some(true)),
            op("b", Acquire, "tb", 1000, (60, 70), Some(true)),
        ];
        let refs: Vec<&Op> = h.iter().collect();
        assert_eq!(witness(&Search::default(), &refs), Some(vec![0, 4]));
        // A release whose acquire is gone would fail for another reason:
        // successful calls stay.
        let h = [
            op("a", Acquire, "ta", 1000, (0, 10), Some(true)),
            op("a", Release, "ta", 1000, (20, 30), Some(true)),
            op("a", Acquire, "ta", 1000, (40, 50), Some(true)),
            op("b", Acquire, "tb", 1000, (60, 70), Some(true)),
        ];
        let refs: Vec<&Op> = h.iter().collect();
        assert_eq!(witness(&Search::default(), &refs), Some(vec![2, 3]));
    }

    #[test]
    fn a_lease_that_ran_out_may_be_granted_again() {
        let h = [
            op("a", Acquire, "ta", 100, (0, 10), Some(true)),
            op("b", Acquire, "tb", 100, (50, 60), Some(false)),
            op("b", Acquire, "tb", 100, (200, 210), Some(true)),
            op("a", Release, "ta", 100, (220, 230), Some(false)),
            op("a", Extend, "ta", 100, (240, 250), Some(false)),
        ];
        assert!(matches!(judge(&h), Outcome::Linearizable(_)));
        // …but a failed acquire after the lease certainly ran out is not.
        let h = [
            op("a", Acquire, "ta", 100, (0, 10), Some(true)),
            op("b", Acquire, "tb", 100, (150, 160), Some(false)),
        ];
        assert_eq!(judge(&h), Outcome::NotLinearizable);
    }

    #[test]
    fn a_read_must_see_a_value_the_register_held() {
        let h = [
            op("a", Acquire, "ta", 1000, (0, 10), Some(true)),
            op("c", Read, "tz", 0, (11, 12), Some(true)),
        ];
        assert_eq!(judge(&h), Outcome::NotLinearizable);
        let h = [
            op("a", Acquire, "ta", 1000, (0, 10), Some(true)),
            op("c", Read, "", 0, (5, 12), Some(true)),
        ];
        assert!(
            matches!(judge(&h), Outcome::Linearizable(_)),
            "read before the acquire took effect"
        );
    }

    #[test]
    fn an_unknown_outcome_may_have_happened_or_not() {
        // a's acquire timed out; b later finds the lock taken, then free.
        let h = [
            op("a", Acquire, "ta", 100, (0, 0), None),
            op("b", Acquire, "tb", 100, (20, 30), Some(false)),
            op("b", Acquire, "tb", 100, (140, 150), Some(true)),
        ];
        assert!(matches!(judge(&h), Outcome::Linearizable(_)));
        let h = [
            op("a", Acquire, "ta", 100, (0, 0), None),
            op("b", Acquire, "tb", 1000, (20, 30), Some(true)),
        ];
        assert!(
            matches!(judge(&h), Outcome::Linearizable(o) if o == [1]),
            "a's never happened"
        );
    }

    #[test]
    fn the_limit_answers_unknown() {
        let mut h = Vec::new();
        for i in 0..40u64 {
            h.push(op(
                &format!("c{i}"),
                Acquire,
                &format!("t{i}"),
                1000,
                (0, 100),
                Some(false),
            ));
        }
        h.push(op("x", Acquire, "tx", 1000, (200, 210), Some(false)));
        let refs: Vec<&Op> = h.iter().collect();
        assert!(matches!(Search { limit: 10 }.run(&refs), Outcome::Unknown { .. }));
        assert_eq!(Search::default().run(&refs), Outcome::NotLinearizable);
    }
}
