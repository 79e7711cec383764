//! Which invariants hold at each step of a counterexample (issue 44, item
//! 3), as Stateright's explorer shows each property at each state.
//!
//! The invariant monitor ([`crate::invariants::Monitor`]) is evaluated by
//! the world after every step it takes: whenever it records a violation the
//! world appends a [`EventKind::Violation`] event at that step
//! (`World::violate`), and a client's belief that it holds a lock is
//! a [`EventKind::Belief`] event. So the counterexample's trace already is
//! the monitor's verdict step by step; this module reads it back as one row
//! per step — what happened, which invariants still hold, who believes it
//! holds the lock — for the explore screen's step list (en and zh), instead
//! of running a second monitor beside the world's.

use serde::{Deserialize, Serialize};

use crate::invariants::Invariant;
use crate::lang::Lang;
use crate::trace::{EventKind, Trace};

/// At most this many rows: a sampled counterexample can be long, and the
/// page draws one row per step.
pub const MAX_ROWS: usize = 2_000;

/// One step of a counterexample and the invariants after it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepCheck {
    /// The step's number in the trace (from 0, as the transcript's table).
    pub step: u64,
    pub at_ms: u64,
    /// What happened ([`crate::trace::Event::describe_in`]).
    pub what: String,
    pub what_zh: String,
    /// The invariants the monitor has found broken by the end of this step
    /// (in [`Invariant::ALL`] order); every other one holds here.
    pub broken: Vec<Invariant>,
    /// The clients that believe they hold a lock after this step.
    pub holders: Vec<String>,
}

impl StepCheck {
    /// Does `i` hold after this step?
    pub fn holds(&self, i: Invariant) -> bool {
        !self.broken.contains(&i)
    }
}

/// The invariants broken by the end of each step of `trace` (at most
/// [`MAX_ROWS`], the first ones), in [`Invariant::ALL`] order: the
/// monitor's verdicts as the world recorded them. [`step_checks`]' column,
/// and alone what the timeline's per-step marks need (without the events'
/// descriptions, which the page's main module does not carry).
pub fn broken_by_step(trace: &Trace) -> Vec<Vec<Invariant>> {
    let mut broken: Vec<Invariant> = Vec::new();
    trace
        .events
        .iter()
        .take(MAX_ROWS)
        .map(|e| {
            if let EventKind::Violation { violation } = &e.kind {
                if !broken.contains(&violation.invariant) {
                    broken.push(violation.invariant);
                    broken.sort();
                }
            }
            broken.clone()
        })
        .collect()
}

/// Each step of `trace` with the invariants that hold after it (at most
/// [`MAX_ROWS`] rows, the first ones).
pub fn step_checks(trace: &Trace) -> Vec<StepCheck> {
    // (client, key) pairs believed held.
    let mut beliefs: Vec<(u32, String)> = Vec::new();
    let mut rows = Vec::new();
    for (e, broken) in trace.events.iter().zip(broken_by_step(trace)) {
        if let (EventKind::Belief { key, holds }, crate::actor::Actor::Client(c)) = (&e.kind, e.actor) {
            beliefs.retain(|(bc, bk)| !(*bc == c && bk == key));
            if *holds {
                beliefs.push((c, key.clone()));
            }
        }
        let mut holders: Vec<String> = beliefs.iter().map(|(c, _)| trace.names.client(*c).to_owned()).collect();
        holders.sort();
        holders.dedup();
        rows.push(StepCheck {
            step: e.step,
            at_ms: e.at_ms,
            what: e.describe_in(&trace.names, Lang::En),
            what_zh: e.describe_in(&trace.names, Lang::Zh),
            broken,
            holders,
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::{Explorer, Outcome, Spec};

    /// A broken design's counterexample: every invariant holds until the
    /// step where the monitor records the violation, and from there on the
    /// broken one does not; the clients' beliefs are followed.
    #[test]
    fn the_monitor_step_by_step() {
        let spec: Spec =
            serde_json::from_str(r#"{ "release": "del", "random_walks": 50, "exhaustive_seeds": 1 }"#).expect("spec");
        let ex = Explorer::new(&spec).expect("explorer");
        let report = ex.report(&ex.search(0, 1));
        let Outcome::Violated { trace, invariant, .. } = &report.outcome else {
            panic!("bare DEL breaks")
        };
        let rows = step_checks(trace);
        assert_eq!(rows.len(), trace.events.len());
        let first = trace
            .events
            .iter()
            .position(|e| matches!(e.kind, EventKind::Violation { .. }))
            .expect("a violation event");
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r.holds(*invariant), i < first, "step {i}: {r:?}");
        }
        assert!(rows[..first].iter().all(|r| r.broken.is_empty()));
        assert!(rows.iter().any(|r| !r.holders.is_empty()), "someone held the lock");
        assert!(rows.iter().all(|r| !r.what.is_empty() && !r.what_zh.is_empty()));
    }
}
