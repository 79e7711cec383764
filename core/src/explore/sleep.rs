//! Sleep sets over independent faults ([`super::bfs::Reductions::sleep_sets`]).
//!
//! Godefroid's sleep sets ("Partial-Order Methods for the Verification of
//! Concurrent Systems", 1996, ch. 5), as Stateright and loom's DPOR use
//! them: after a state has taken transition `a`, a later sibling `b` that
//! is independent of `a` carries `a` in its *sleep set*, and `a` is not
//! taken from `s·b`, because `s·b·a` is `s·a·b`, reached through the
//! sibling already. Every reachable state is still reached, by a path of
//! the same length (the two orders of one pair), so verdicts and the
//! shortest counterexample's length are kept; what is saved is the
//! transitions — a world copied, a fault applied, a fingerprint taken, and
//! without fingerprints the whole subtree behind each one.
//!
//! **Which transitions are independent here.** The issue names deliveries
//! to different nodes and timers of different clients; in this model those
//! never compete: the world has one next queue item (its order is fixed by
//! the seed's network delays), so "next" is one transition, and a fault
//! injected before it and after it lands at different times (time moves
//! with "next"), which is not a commuting pair. The choices that do meet
//! again are faults injected at one instant: two faults on different
//! actors — a client's pause or crash, a node's restart or clock jump —
//! change disjoint parts of the world, and unless both queue their end
//! for one moment (two pauses of one length, two nodes' restarts) each
//! queues its own item at its own time (two clock jumps are kept apart
//! too), so `s·f·g` and `s·g·f` are one world (the test
//! `independent_faults_commute` checks the fingerprints of every such pair
//! met in searches of several designs). A failover acts on more than one
//! node and is independent of nothing; so is a pause while pauses land
//! only at inputs ([`masks`]). "Next" is independent of nothing,
//! so a sleep set only ever lives along a chain of faults at one instant
//! and is empty again after the next item.
//!
//! **With fingerprints** a state can be reached again with a different
//! sleep set, and expanding it only once with the first one would lose the
//! transitions the first path had asleep and the second did not
//! (Godefroid's state-caching fix): [`Asleep`] keeps each stored state's
//! sleep set until it is expanded, a revisit narrows it to the
//! intersection, and a revisit of a state already expanded queues it again
//! for the transitions it missed.

use std::collections::HashMap;

use crate::fault::{ClockOf, Fault};

/// What one fault acts on: faults on different actors commute.
#[derive(PartialEq, Eq)]
enum Actor<'a> {
    Client(&'a str),
    Node(u32),
}

fn actor(f: &Fault) -> Option<Actor<'_>> {
    match f {
        Fault::PauseClient { client, .. } | Fault::ResumeClient { client } | Fault::CrashClient { client } => {
            Some(Actor::Client(client))
        }
        Fault::CrashNode { node } | Fault::RestartNode { node, .. } => Some(Actor::Node(*node)),
        Fault::JumpClock {
            of: ClockOf::Node(node),
            ..
        } => Some(Actor::Node(*node)),
        Fault::JumpClock {
            of: ClockOf::Client(client),
            ..
        } => Some(Actor::Client(client)),
        _ => None,
    }
}

/// After how long a fault queues its own end (a pause's resume, a
/// restarted node's coming back up).
fn wakes_after(f: &Fault) -> Option<u64> {
    match f {
        Fault::PauseClient { ms, .. } => *ms,
        Fault::RestartNode { down_ms, .. } => Some(*down_ms),
        _ => None,
    }
}

/// Do `a` and `b`, injected at one instant, commute? On different actors,
/// and not both ending at the same moment: two ends queued for one time
/// are processed in the order they were queued, so A's and B's pauses of
/// one length, or two nodes' restarts, are two worlds in either order; so
/// are two nodes' clock jumps (each queues the expiries it brings forward).
pub fn independent(a: &Fault, b: &Fault) -> bool {
    let same_end = wakes_after(a).is_some() && wakes_after(a) == wakes_after(b);
    let jump = |f: &Fault| matches!(f, Fault::JumpClock { .. });
    matches!((actor(a), actor(b)), (Some(x), Some(y)) if x != y) && !same_end && !(jump(a) && jump(b))
}

/// For each fault option `i`, the options independent of it as a bit mask
/// (`None` past 64 options: the reduction is then off). With
/// `pause_at_input` a pause is independent of nothing: whether it may land
/// depends on which input is next ([`crate::world::World::next_is_for`]),
/// and another fault can change that (a node's restart loses what was in
/// flight to it), so `s·f·pause` need not be taken where `s·pause·f` was.
pub(crate) fn masks(options: &[Fault], pause_at_input: bool) -> Option<Vec<u64>> {
    if options.len() > 64 {
        return None;
    }
    let gated = |f: &Fault| pause_at_input && matches!(f, Fault::PauseClient { .. });
    Some(
        options
            .iter()
            .map(|a| {
                options
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| independent(a, b) && !gated(a) && !gated(b))
                    .fold(0u64, |m, (j, _)| m | 1 << j)
            })
            .collect(),
    )
}

/// A stored state's sleep set and whether it was expanded.
#[derive(Clone, Copy)]
struct Slept {
    mask: u64,
    expanded: bool,
    /// The world's plain fingerprint: under symmetry a revisit may be the
    /// stored world with clients renamed, and then its sleep set names
    /// other options.
    plain: u64,
}

/// The sleep sets of stored states, by key (fingerprint and faults used);
/// only states stored with a non-empty one are here.
#[derive(Default)]
pub(crate) struct Asleep(HashMap<u64, Slept>);

/// What a revisit of a stored state asks of the search.
pub(crate) enum Revisit {
    Nothing,
    /// The state was expanded with these transitions asleep that this path
    /// has awake: take them from it now.
    Expand {
        missed: u64,
        sleep: u64,
    },
}

impl Asleep {
    /// A new state stored with sleep set `mask`.
    pub(crate) fn stored(&mut self, key: u64, mask: u64, plain: impl FnOnce() -> u64) {
        if mask != 0 {
            self.0.insert(
                key,
                Slept {
                    mask,
                    expanded: false,
                    plain: plain(),
                },
            );
        }
    }

    /// The state `key` is being expanded: its sleep set, narrowed by every
    /// revisit so far (`entry`: the one it was stored with).
    pub(crate) fn expanding(&mut self, key: u64, entry: u64) -> u64 {
        match self.0.get_mut(&key) {
            Some(s) => {
                s.expanded = true;
                s.mask
            }
            None => entry,
        }
    }

    /// The state `key` was reached again with sleep set `mask`, as a world
    /// whose plain fingerprint is `plain`.
    pub(crate) fn revisit(&mut self, key: u64, mask: u64, plain: impl FnOnce() -> u64) -> Revisit {
        let Some(s) = self.0.get_mut(&key) else {
            return Revisit::Nothing;
        };
        if plain() != s.plain {
            // A renaming of the stored world (symmetry): which of its
            // options correspond to which of ours is not kept, so every
            // option this path has awake is taken from this world again.
            return Revisit::Expand {
                missed: !mask,
                sleep: mask,
            };
        }
        let missed = s.mask & !mask;
        s.mask &= mask;
        if s.expanded && missed != 0 {
            Revisit::Expand { missed, sleep: s.mask }
        } else {
            Revisit::Nothing
        }
    }
}
