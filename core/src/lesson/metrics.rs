//! Lock-health figures read off a trace: what the practice article (B 4.3)
//! says to watch — acquire success rate (> 99.9 %), mean wait (< 50 ms),
//! retries per acquisition (< 3) — plus the load on Redis (commands sent).
//!
//! Everything is derived from the trace, so the same numbers come out of a
//! replay and nothing in the clients has to count for us.

use std::collections::BTreeMap;
use std::fmt;

use super::MetricsSpec;
use crate::actor::Actor;
use crate::trace::{Event, EventKind};
use crate::world::World;

/// The figures for a set of clients.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Metrics {
    /// Acquire attempts (`SET … NX`, `SETNX`) sent.
    pub attempts: u64,
    /// Times a client came to believe it held a lock.
    pub acquisitions: u64,
    /// Acquire cycles that ended without the lock (gave up).
    pub failures: u64,
    /// Sum of waits from the first attempt of a cycle to holding the lock.
    pub wait_ms_total: u64,
    /// Every command the clients sent: the load on Redis.
    pub commands: u64,
}

fn is_acquire(cmd: &[String]) -> bool {
    let Some(name) = cmd.first() else { return false };
    name.eq_ignore_ascii_case("setnx")
        || (name.eq_ignore_ascii_case("set") && cmd.iter().skip(3).any(|a| a.eq_ignore_ascii_case("nx")))
}

/// Measure `clients` over the world's trace from event `from` on.
pub fn measure(world: &World, clients: &[u32], from: usize) -> Metrics {
    measure_events(world.trace(), clients, from)
}

/// Measure `clients` over `events` from index `from` on: the simulator's
/// trace, or the events a real run recorded (the real runner keeps its
/// clients' `Sent`, `Belief` and `Done` events, in lesson time, for this),
/// so both drivers' figures are computed here, once.
pub fn measure_events(events: &[Event], clients: &[u32], from: usize) -> Metrics {
    let mut m = Metrics::default();
    // client → (first attempt of the current cycle, attempts in it)
    let mut cycle: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    // client → the nodes its current attempt has asked, one bit each: a
    // Redlock round asks every master once, and that is one attempt, not
    // five; asking a node again starts the next. (Not "at the same
    // instant": a real run's requests of one round are stamped a
    // millisecond or two apart.)
    let mut asked: BTreeMap<u32, u64> = BTreeMap::new();
    for e in events.iter().skip(from) {
        let Actor::Client(c) = e.actor else { continue };
        if !clients.contains(&c) {
            continue;
        }
        match &e.kind {
            EventKind::Sent { commands, node, .. } => {
                m.commands += commands.len() as u64;
                if commands.iter().any(|c| is_acquire(c)) && new_attempt(asked.entry(c).or_default(), *node) {
                    m.attempts += 1;
                    let entry = cycle.entry(c).or_insert((e.at_ms, 0));
                    entry.1 += 1;
                }
            }
            EventKind::Belief { holds: true, .. } => {
                m.acquisitions += 1;
                if let Some((start, _)) = cycle.remove(&c) {
                    m.wait_ms_total += e.at_ms.saturating_sub(start);
                }
            }
            EventKind::Done if cycle.remove(&c).is_some() => m.failures += 1,
            _ => {}
        }
    }
    m
}

// A node is one bit of a u64 in [`new_attempt`].
const _: () = assert!(crate::world::MAX_NODES < 64);

/// An acquire request to `node`: does it start a new attempt? It does
/// when it is the first, or when the current attempt (`asked`, a bit per
/// node) asked `node` already.
fn new_attempt(asked: &mut u64, node: u32) -> bool {
    let bit = 1u64 << (node % 64);
    let new = *asked == 0 || *asked & bit != 0;
    if new {
        *asked = 0;
    }
    *asked |= bit;
    new
}

impl Metrics {
    /// Acquisitions over acquire cycles, in percent (100 with no cycles).
    pub fn success_pct(&self) -> f64 {
        let cycles = self.acquisitions + self.failures;
        if cycles == 0 {
            100.0
        } else {
            self.acquisitions as f64 * 100.0 / cycles as f64
        }
    }

    pub fn mean_wait_ms(&self) -> f64 {
        if self.acquisitions == 0 {
            0.0
        } else {
            self.wait_ms_total as f64 / self.acquisitions as f64
        }
    }

    /// Attempts beyond the first, per acquisition.
    pub fn mean_retries(&self) -> f64 {
        if self.acquisitions == 0 {
            0.0
        } else {
            self.attempts.saturating_sub(self.acquisitions) as f64 / self.acquisitions as f64
        }
    }

    /// Does every bound the spec gives hold?
    pub fn within(&self, spec: &MetricsSpec) -> bool {
        spec.min_success_pct.is_none_or(|b| self.success_pct() >= b)
            && spec.max_success_pct.is_none_or(|b| self.success_pct() <= b)
            && spec.max_mean_wait_ms.is_none_or(|b| self.mean_wait_ms() <= b)
            && spec.min_mean_wait_ms.is_none_or(|b| self.mean_wait_ms() >= b)
            && spec.max_mean_retries.is_none_or(|b| self.mean_retries() <= b)
            && spec.min_mean_retries.is_none_or(|b| self.mean_retries() >= b)
            && spec.min_acquisitions.is_none_or(|b| self.acquisitions >= b)
            && spec.max_commands.is_none_or(|b| self.commands <= b)
            && spec.min_commands.is_none_or(|b| self.commands >= b)
    }
}

impl MetricsSpec {
    /// The bounds as a reader checks them against the figures
    /// ([`Metrics`]' `Display`): `mean wait 250–500 ms, 100–200 commands`;
    /// `None` when it sets none.
    pub fn describe(&self) -> Option<String> {
        fn range<T: fmt::Display>(what: &str, min: Option<T>, max: Option<T>, unit: &str) -> Option<String> {
            Some(match (min, max) {
                (Some(a), Some(b)) => format!("{what} {a}–{b}{unit}"),
                (Some(a), None) => format!("{what} ≥ {a}{unit}"),
                (None, Some(b)) => format!("{what} ≤ {b}{unit}"),
                (None, None) => return None,
            })
        }
        let parts: Vec<String> = [
            range("acquired", self.min_success_pct, self.max_success_pct, " %"),
            range("acquisitions", self.min_acquisitions, None, ""),
            range("mean wait", self.min_mean_wait_ms, self.max_mean_wait_ms, " ms"),
            range("mean retries", self.min_mean_retries, self.max_mean_retries, ""),
            range("commands sent", self.min_commands, self.max_commands, ""),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

impl Metrics {
    /// The figures in `lang` (the English is the `Display` form).
    pub fn text(&self, lang: super::Lang) -> String {
        let (got, of) = (self.acquisitions, self.acquisitions + self.failures);
        let (pct, wait, retries) = (self.success_pct(), self.mean_wait_ms(), self.mean_retries());
        let (attempts, commands) = (self.attempts, self.commands);
        match lang {
            super::Lang::En => format!(
                "acquired {got} of {of} ({pct:.1} %), mean wait {wait:.1} ms, mean retries {retries:.2}, {attempts} attempts, {commands} commands sent"
            ),
            super::Lang::Zh => format!(
                "获得锁 {got} / {of} 次（{pct:.1} %），平均等待 {wait:.1} ms，平均重试 {retries:.2} 次，加锁尝试 {attempts} 次，发出命令 {commands} 条"
            ),
        }
    }
}

impl fmt::Display for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text(super::Lang::En))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(at_ms: u64, node: u32, cmd: &str) -> Event {
        Event {
            step: 0,
            at_ms,
            actor: Actor::Client(0),
            kind: EventKind::Sent {
                req: 0,
                node,
                commands: vec![cmd.split(' ').map(str::to_owned).collect()],
            },
        }
    }

    /// A missed `metrics` step says which bounds it was held to (the
    /// transcript printed `expected: ?`).
    #[test]
    fn bounds_are_described_as_the_figures_read() {
        let spec = MetricsSpec {
            min_success_pct: Some(100.0),
            min_mean_wait_ms: Some(250.0),
            max_mean_wait_ms: Some(500.0),
            max_mean_retries: Some(1.8),
            min_commands: Some(100),
            ..MetricsSpec::default()
        };
        assert_eq!(
            spec.describe().as_deref(),
            Some("acquired ≥ 100 %, mean wait 250–500 ms, mean retries ≤ 1.8, commands sent ≥ 100")
        );
        assert_eq!(MetricsSpec::default().describe(), None);
    }

    /// A Redlock round asks five masters once each, one attempt however
    /// its requests are stamped (a real run's are a millisecond or two
    /// apart); the next round asks them again: the next attempt.
    #[test]
    fn a_round_is_one_attempt_whenever_its_requests_go_out() {
        let acquire = "SET k v NX PX 10000";
        let mut events: Vec<Event> = (0..5).map(|n| sent(100 + u64::from(n), n, acquire)).collect();
        events.extend((0..5).map(|n| sent(100 + u64::from(n), n, "EVAL release 1 k v")));
        events.extend((0..5).map(|n| sent(300, n, acquire)));
        let m = measure_events(&events, &[0], 0);
        assert_eq!((m.attempts, m.commands), (2, 15));
        // One node asked again and again: each request is an attempt.
        let single: Vec<Event> = (0..3).map(|i| sent(10 * i, 0, acquire)).collect();
        assert_eq!(measure_events(&single, &[0], 0).attempts, 3);
    }
}
