//! Bounded-exhaustive search: every schedule within stated bounds, breadth
//! first, each distinct world expanded once.
//!
//! This is the explorer as a model checker, after Stateright's and TLC's
//! breadth-first checkers. A *state* is a whole [`World`] — the nodes'
//! keyspaces and deadlines, the clients' program states, timers and
//! requests, the messages in flight, the resource, the invariant monitor —
//! plus how many faults the schedule has used. From a state there are two
//! kinds of transition:
//!
//! * **next**: the world processes its next queue item (a delivery, a
//!   timer, a deadline, a replication batch), and time jumps to it. The
//!   world's network delays and backoff jitter are drawn from its seed, so
//!   the bound names the seeds: a schedule here is a seed plus where and
//!   which faults land.
//! * **fault**: one of the design's fault options ([`super::fault_options`]:
//!   pauses of six lengths derived from the TTL, crashes, restarts,
//!   failover, clock jumps, filtered by the design's `fault_kinds`), now,
//!   while the budget lasts.
//!
//! Visited states are kept as 64-bit fingerprints ([`World::fingerprint`]),
//! so a world reached along two schedules is expanded once; a search that
//! keeps them is what makes "every schedule" finite in practice. Breadth
//! first, so the first violation found is at the fewest transitions — a
//! shortest counterexample within the bounds. When the state limit or the
//! frontier limit is reached the search ends *not exhausted*, which is not a
//! verdict; "held" is only ever said of a search that ran out of states.
//!
//! Core has no clock, so a time limit is the caller's: [`Bfs::step`] does a
//! bounded amount of work and returns, and the CLI (or the page's worker)
//! stops calling it when its time is up ([`Bfs::stop`]).
//!
//! Reductions ([`Reductions`]), each sound for safety properties and each
//! switchable so `locklab explore --bench` can show what it saves:
//! * **fingerprints**: a state already visited is not expanded again
//!   (without it the search is the full tree of schedules);
//! * **no-op faults**: a fault that leaves the world exactly as it was
//!   (crashing a client that already crashed, pausing one that is paused
//!   for longer), or a pause of a client that nothing can reach before it
//!   ends (no request in flight, no timer: its program is done), is not
//!   taken, since the same world with fewer faults used can do everything
//!   the other can;
//! * **pauses at inputs** ([`Reductions::pause_at_input`]): a pause lands
//!   only in a state whose next queue item is the paused client's own
//!   input. Until an input reaches it a paused client is no different from
//!   a running one, so an earlier pause is this one, longer; with the six
//!   lengths fixed this is a time abstraction, not an identity, and the
//!   bounds sentence says so. Design 07's shortest counterexample: 96,681
//!   states without it, 40,450 with it, the same length.
//!
//! * **deterministic tails** ([`Reductions::tails`]): once a schedule has
//!   used the whole fault budget, its world has one transition left at
//!   every state (the next queue item), so the rest of the run is one
//!   path: the search steps the world to its end, checking the invariants
//!   after each step exactly as at a stored state, and stores, fingerprints
//!   and queues none of it (SPIN's statement merging). Most of a bounded
//!   search's states are on such tails — a fault placement followed by the
//!   rest of its run — and they are where the cost was: design 06 with 3
//!   clients and at most 2 faults, held, 160,772 states stored and
//!   3,401,341 more checked on tails in 7.2 s of CPU; without tails the
//!   same bound reached the 2,000,000-state limit at depth 95 of ~130 in
//!   57 s of CPU, not ended: at least 12.4x (on 2 clients and 1 fault: 324 states stored against 4,111,
//!   12.7x; every reduction together against the tree of schedules,
//!   39.1x). A tail's violation is
//!   kept until every layer that could hold a shorter schedule has been
//!   searched, so the counterexample is still a shortest one.
//!
//! Where the states go (`cargo run -p locklab-core --example states`):
//! neighbouring states of one breadth-first layer mostly differ in absolute
//! times — the world's `now` and the queue's times — as after pauses of
//! two lengths. A canonical form with times relative to `now` (every
//! absolute time relative: queue times, nodes' key deadlines, clocks as
//! offsets, the clients' timers and programs, the monitor's and the
//! resource's times; `now` and the event count kept as dominance) was
//! measured on design 06 before tails (issue 44): 4,401 → 4,110 states
//! with 2 clients and 1 fault, 16,570 → 14,985 with 3; forgetting the
//! resource's write history, the node's statistics and finished programs
//! on top, 3,982 and 14,893. Two stories differ in what happened, not only
//! in when, so it is not in the search: tails were the reduction that
//! mattered.
//!
//! * **symmetry** ([`Reductions::symmetry`], opt-in): clients running
//!   the same program are interchangeable, so a world and the same world
//!   with two clients' roles swapped are one state
//!   ([`World::symmetric_fingerprint`] renames clients consistently: their
//!   slots, indexes, and the names inside tokens and written values). The
//!   shorthand's clients start 3 ms apart with their own random streams,
//!   so the search's model ([`Bfs::with_model`]) starts same-program
//!   clients together on one stream shape, and the bounds sentence says
//!   "alike". It saves little here (design 06, 2 clients, 1 fault: 4,240 →
//!   4,111 states): the world's order is deterministic — A's start is
//!   queued before B's, the network draws delays in send order — so only a
//!   fault swaps two clients' roles, and the renamings cost each state
//!   about three plain fingerprints. A model that explored delivery orders
//!   would gain far more from it.
//!
//! * **sleep sets** ([`Reductions::sleep_sets`], [`super::sleep`]): two
//!   faults on different actors injected at one instant commute, so of
//!   their two orders only one is taken (Godefroid's sleep sets, with his
//!   fix for stored states). Every state is still reached at the same
//!   depth, so with fingerprints they save transitions, not states; on
//!   the tree of schedules they cut states. The deliveries and timers the
//!   issue names as independent never compete here: the world's next item
//!   is one transition (see the module doc of [`super::sleep`]).

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};

use super::{allowed_faults, sleep, ExploreError, Outcome, Report, Spec};
use crate::fault::{At, Fault, ScheduledFault};
use crate::invariants::Invariant;
use crate::world::{Scenario, World};

mod words;

/// Fingerprints are already hashes: a set of them needs no second one.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Seen = HashSet<u64, BuildHasherDefault<PassThrough>>;

/// Which reductions a search applies (all but symmetry by default: that one
/// needs the symmetric model, a bound of its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reductions {
    pub fingerprints: bool,
    pub no_op_faults: bool,
    /// Pauses land only where the paused client's next input is the next
    /// thing to happen ([`World::next_is_for`]). A pause changes nothing
    /// until an input reaches the paused client (its replies, timers and
    /// timeouts wait in its inbox; nothing else reads "paused"), so a pause
    /// begun earlier is this one with a longer length: the time abstraction
    /// "time jumps to the next event" applied to where a pause starts. The
    /// lengths stay the six from the TTL, so the bound says so.
    #[serde(default)]
    pub pause_at_input: bool,
    /// Clients are interchangeable: a world and the same world with two
    /// clients' roles swapped are one state ([`World::symmetric_fingerprint`]).
    /// The search's model makes same-program clients really alike for it
    /// (one start time, one random stream shape: [`Bfs::with_model`]), and
    /// the bounds sentence says so.
    #[serde(default)]
    pub symmetry: bool,
    /// Deterministic tails are run, not stored: a state whose schedule has
    /// used the whole fault budget has one transition left (the world's
    /// next item), and so has every state after it, so the search runs the
    /// world from there to its end, checking the invariants after every
    /// step as it would at each stored state, and stores none of them.
    /// SPIN's statement merging and the "collapse deterministic paths" of
    /// explicit-state checkers: the states are still visited (counted as
    /// [`Stats::tail_states`]), only not fingerprinted, kept, or queued.
    /// A violation found along a tail is kept until no shorter one can
    /// still be found, so the counterexample stays a shortest one.
    #[serde(default = "yes")]
    pub tails: bool,
    /// Sleep sets over faults injected at one instant on different actors
    /// ([`super::sleep`]): of the two orders of a commuting pair only one
    /// is taken. Every state is still reached, at the same depth, so only
    /// transitions are saved while fingerprints are on (and whole subtrees
    /// without them).
    #[serde(default = "yes")]
    pub sleep_sets: bool,
}

fn yes() -> bool {
    true
}

impl Default for Reductions {
    fn default() -> Self {
        Reductions {
            fingerprints: true,
            no_op_faults: true,
            pause_at_input: true,
            // Opt-in: it changes the model (clients alike), and a lesson
            // cannot replay a shared-stream world yet.
            symmetry: false,
            tails: true,
            sleep_sets: true,
        }
    }
}

/// How far a search may go before it ends "not exhausted".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Distinct states (each costs 16 bytes of memory for the rest of the search).
    pub max_states: u64,
    /// Worlds waiting in the next breadth-first layer (each a whole world in memory).
    pub max_frontier: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_states: 2_000_000,
            max_frontier: 20_000,
        }
    }
}

/// Where a search is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum SearchStatus {
    Running,
    /// Every state within the bounds was expanded and none broke an invariant.
    Exhausted,
    /// A state broke `invariant`; `state` is its number in the search tree.
    Violated {
        state: u32,
        invariant: Invariant,
    },
    /// A limit was reached (or the caller stopped the search) first.
    NotExhausted,
}

/// Counts for the progress bar and the benchmark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Distinct states found (the roots included).
    pub states: u64,
    /// Transitions taken (a state reached again counts here, not in `states`).
    pub transitions: u64,
    /// States waiting to be expanded.
    pub frontier: u64,
    /// Breadth-first layers completed.
    pub depth: u64,
    /// States visited along deterministic tails ([`Reductions::tails`]):
    /// checked, not stored.
    #[serde(default)]
    pub tail_states: u64,
}

/// A state waiting to be expanded.
struct Entry {
    world: World,
    /// Its fingerprint (computed once, when it was reached).
    fp: u64,
    id: u32,
    faults: u32,
    /// Its sleep set ([`Reductions::sleep_sets`]), as a mask of fault options.
    sleep: u64,
    /// The fault options to take from it (all but for a state expanded
    /// again for the transitions an earlier path had asleep); "next" only
    /// when all.
    only: u64,
}

/// One node of the search tree: how it was reached (for the counterexample).
#[derive(Clone, Copy)]
struct Link {
    parent: u32,
    /// 0: next; i + 1: fault option i. For a root: the seed's position.
    choice: u32,
}

const ROOT: u32 = u32::MAX;

/// A breadth-first search under way.
pub struct Bfs {
    spec: Spec,
    base: Scenario,
    options: Vec<Fault>,
    seeds: Vec<u64>,
    budget: u32,
    reductions: Reductions,
    /// Same-program clients start together and share a stream shape.
    symmetric_model: bool,
    limits: Limits,
    seen: Seen,
    tree: Vec<Link>,
    layer: VecDeque<Entry>,
    next: VecDeque<Entry>,
    stats: Stats,
    status: SearchStatus,
    /// The shortest violation found along a tail so far: (its length in
    /// transitions, the tail's first state, steps into the tail, the
    /// invariant). Kept until every shorter schedule has been searched.
    tail_violation: Option<(u64, u32, u32, Invariant)>,
    /// A layer is being expanded (the roots have been offered).
    expanding: bool,
    /// Each fault option's independent options ([`sleep::masks`]); `None`
    /// with the sleep-set reduction off.
    independent: Option<Vec<u64>>,
    asleep: sleep::Asleep,
    /// A script the simulator had to stop on some schedule (a loop only a
    /// fault reaches, say): the search ends there, not exhausted, saying
    /// which (its role and the stopped `EVAL`'s reply), rather than spend
    /// an instruction budget on every schedule that reaches it.
    stopped: Option<(&'static str, String)>,
}

/// Mix the faults used into a world's fingerprint.
fn key(world: u64, faults: u32) -> u64 {
    let mut z = world ^ (u64::from(faults).wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 31)
}

/// Make a scenario's clients interchangeable when they can be: every client
/// runs the same program on the same clock with no link of its own, so
/// each starts at the earliest start time and draws from one stream shape.
/// `false` (and the scenario unchanged) otherwise.
fn symmetric(sc: &mut Scenario) -> bool {
    let Some(first) = sc.clients.first().cloned() else {
        return false;
    };
    let alike = sc.clients.len() >= 2
        && sc
            .clients
            .iter()
            .all(|c| c.program == first.program && c.clock == first.clock)
        && sc.world.links.is_empty();
    if !alike {
        return false;
    }
    let start = sc.clients.iter().map(|c| c.start_ms).min().unwrap_or(0);
    for c in &mut sc.clients {
        c.start_ms = start;
    }
    sc.world.shared_client_stream = true;
    true
}

/// A pause of a client nothing can reach until it ends: a no-op fault
/// ([`World::pause_is_idle`]) that fingerprints cannot see as one (the
/// paused world differs until the pause ends).
fn idle_pause(w: &World, f: &Fault) -> bool {
    matches!(f, Fault::PauseClient { client, .. } if w.pause_is_idle(client))
}

/// A pause whose client's input is not the next thing to happen: with
/// [`Reductions::pause_at_input`] it waits for the state where it is.
fn early_pause(w: &World, f: &Fault) -> bool {
    matches!(f, Fault::PauseClient { client, .. } if !w.next_is_for(client))
}

impl Bfs {
    /// A search of `spec` from world seeds `spec.seed .. spec.seed + seeds`,
    /// in the symmetric model when the symmetry reduction is on.
    pub fn new(spec: &Spec, seeds: u32, reductions: Reductions, limits: Limits) -> Result<Bfs, ExploreError> {
        Bfs::with_model(spec, seeds, reductions, limits, reductions.symmetry)
    }

    /// [`Bfs::new`], choosing the model: with `symmetric_model`, clients
    /// that run the same program on the same clock start at the same time
    /// (the earliest of theirs) and draw from one random stream shape
    /// ([`crate::world::WorldConfig::shared_client_stream`]) — the bound the
    /// symmetry reduction needs, stated in [`Bfs::bounds`]. `--bench` runs
    /// the symmetric model with and without the reduction, on one bound.
    pub fn with_model(
        spec: &Spec,
        seeds: u32,
        reductions: Reductions,
        limits: Limits,
        symmetric_model: bool,
    ) -> Result<Bfs, ExploreError> {
        spec.validate()?;
        let mut base = spec.base_scenario();
        let symmetric_model = symmetric_model && symmetric(&mut base);
        let options = allowed_faults(spec, &base);
        let mut bfs = Bfs {
            spec: spec.clone(),
            base,
            options,
            seeds: (0..u64::from(seeds.max(1)))
                .map(|s| spec.seed.wrapping_add(s))
                .collect(),
            budget: spec.faults,
            reductions,
            symmetric_model,
            limits,
            seen: Seen::default(),
            tree: Vec::new(),
            layer: VecDeque::new(),
            next: VecDeque::new(),
            stats: Stats::default(),
            status: SearchStatus::Running,
            tail_violation: None,
            expanding: false,
            independent: None,
            asleep: sleep::Asleep::default(),
            stopped: None,
        };
        if reductions.sleep_sets {
            bfs.independent = sleep::masks(&bfs.options, reductions.pause_at_input);
        }
        for (i, seed) in bfs.seeds.clone().into_iter().enumerate() {
            let mut sc = bfs.base.clone();
            sc.seed = seed;
            let world = World::from_scenario(&sc)?;
            let fp = bfs.fingerprint(&world);
            bfs.offer(world, fp, ROOT, i as u32, 0, 0);
        }
        std::mem::swap(&mut bfs.layer, &mut bfs.next);
        Ok(bfs)
    }

    pub fn status(&self) -> SearchStatus {
        self.status
    }

    pub fn stats(&self) -> Stats {
        Stats {
            frontier: (self.layer.len() + self.next.len()) as u64,
            ..self.stats
        }
    }

    pub fn options(&self) -> &[Fault] {
        &self.options
    }

    /// The caller's time is up: the search ends not exhausted (unless it
    /// had already ended).
    pub fn stop(&mut self) {
        if self.status == SearchStatus::Running {
            self.status = SearchStatus::NotExhausted;
        }
    }

    /// Run to the end (or a limit) on this thread.
    pub fn run(&mut self) -> SearchStatus {
        while !self.step(u64::MAX) {}
        self.status
    }

    /// Expand up to `n` states (a tail's 32 steps counting as one); `true` once the search has ended.
    pub fn step(&mut self, n: u64) -> bool {
        let mut done = 0;
        while self.status == SearchStatus::Running && done < n {
            let Some(e) = self.layer.pop_front() else {
                // The next layer's states are at depth + 1 and everything
                // found from them at depth + 2 or later.
                if self.next.is_empty() || self.tail_violation.is_some_and(|v| v.0 <= self.stats.depth + 2) {
                    self.end_of_layers();
                    break;
                }
                std::mem::swap(&mut self.layer, &mut self.next);
                self.stats.depth += 1;
                continue;
            };
            self.expanding = true;
            let tails = self.stats.tail_states;
            self.expand(e);
            // A tail is up to a whole run of steps: count them as work too,
            // so a call stays about as long with tails as without.
            done += 1 + (self.stats.tail_states - tails) / 32;
        }
        self.status != SearchStatus::Running
    }

    /// No layer is left that could hold a shorter counterexample than the
    /// tail's (or no layer at all): the search ends with it, or exhausted.
    fn end_of_layers(&mut self) {
        let Some((_, head, k, invariant)) = self.tail_violation.take() else {
            self.status = SearchStatus::Exhausted;
            return;
        };
        // The tail's states become nodes of the search tree, so the
        // counterexample replays like any other.
        let mut at = head;
        for _ in 0..k {
            self.tree.push(Link { parent: at, choice: 0 });
            at = self.tree.len() as u32 - 1;
        }
        self.status = SearchStatus::Violated { state: at, invariant };
    }

    /// Run a state's deterministic tail (its schedule used the whole
    /// budget): step the world to its end, checking as it goes
    /// ([`Reductions::tails`]). `depth`: the state's own depth.
    fn run_tail(&mut self, mut w: World, id: u32, depth: u64) {
        let mut k: u32 = 0;
        while w.step_item() {
            k += 1;
            self.stats.transitions += 1;
            self.stats.tail_states += 1;
            if self.script_stopped(&w) {
                return;
            }
            w.forget_trace();
            if w.first_violation_step().is_some() {
                let invariant = w.violations().first().map_or(Invariant::Overlap, |v| v.invariant);
                let len = depth + u64::from(k);
                if self.tail_violation.is_none_or(|v| len < v.0) {
                    self.tail_violation = Some((len, id, k, invariant));
                }
                return;
            }
        }
    }

    /// Did the step that made `w` (its trace since the last
    /// `forget_trace`) have a script stopped? Then the search ends, not
    /// exhausted, with the reason kept for the verdict.
    fn script_stopped(&mut self, w: &World) -> bool {
        let Err(ExploreError::ScriptStopped { role, reply }) = super::stopped_script(&self.spec, w.trace()) else {
            return false;
        };
        self.stopped = Some((role, reply));
        self.status = SearchStatus::NotExhausted;
        true
    }

    /// The script the simulator had to stop, if one ended the search: its
    /// role in the design and the stopped `EVAL`'s reply.
    pub fn stopped_script(&self) -> Option<(&'static str, &str)> {
        self.stopped.as_ref().map(|(role, reply)| (*role, reply.as_str()))
    }

    /// A world's fingerprint, up to renaming clients with the symmetry
    /// reduction.
    fn fingerprint(&self, w: &World) -> u64 {
        if self.reductions.symmetry && self.symmetric_model {
            w.symmetric_fingerprint()
        } else {
            w.fingerprint()
        }
    }

    /// Take every transition out of one state.
    fn expand(&mut self, e: Entry) {
        let all = e.only == u64::MAX;
        if e.faults < self.budget {
            let here = self.reductions.no_op_faults.then_some(e.fp);
            let asleep = match (&self.independent, self.reductions.fingerprints) {
                (None, _) => 0,
                (Some(_), true) => self.asleep.expanding(key(e.fp, e.faults), e.sleep),
                (Some(_), false) => e.sleep,
            };
            // The options taken so far from this state (a later
            // independent one puts them to sleep in its child).
            let mut taken = 0u64;
            for i in 0..self.options.len() {
                if self.status != SearchStatus::Running {
                    return;
                }
                let bit = 1u64.checked_shl(i as u32).unwrap_or(0);
                if (asleep | !e.only) & bit != 0 {
                    continue;
                }
                if self.reductions.no_op_faults && idle_pause(&e.world, &self.options[i]) {
                    continue;
                }
                if self.reductions.pause_at_input && early_pause(&e.world, &self.options[i]) {
                    continue;
                }
                let mut w = e.world.clone();
                if w.inject(self.options[i].clone()).is_err() {
                    continue;
                }
                self.stats.transitions += 1;
                let fp = self.fingerprint(&w);
                if here == Some(fp) {
                    continue;
                }
                let child = match &self.independent {
                    Some(m) => (asleep | taken) & m[i],
                    None => 0,
                };
                taken |= bit;
                self.offer(w, fp, e.id, i as u32 + 1, e.faults + 1, child);
            }
        }
        if self.status != SearchStatus::Running || !all {
            return;
        }
        let mut w = e.world;
        if w.step_item() {
            self.stats.transitions += 1;
            let fp = self.fingerprint(&w);
            // "Next" moves time: it commutes with no fault, so its child
            // wakes every sleeper.
            self.offer(w, fp, e.id, 0, e.faults, 0);
        }
    }

    /// A new state reached from `parent` by `choice` (its fingerprint `fp`,
    /// computed once by the caller): check it, and queue it unless it was
    /// seen before.
    fn offer(&mut self, w: World, fp: u64, parent: u32, choice: u32, faults: u32, sleep: u64) {
        let k = key(fp, faults);
        if self.reductions.fingerprints && !self.seen.insert(k) {
            let symmetric = self.reductions.symmetry && self.symmetric_model;
            let revisit = self
                .asleep
                .revisit(k, sleep, || if symmetric { w.fingerprint() } else { fp });
            if let sleep::Revisit::Expand { missed, sleep } = revisit {
                self.expand_again(w, fp, parent, choice, faults, (missed, sleep));
            }
            return;
        }
        if self.script_stopped(&w) {
            return;
        }
        let mut w = w;
        w.forget_trace();
        let id = self.tree.len() as u32;
        self.tree.push(Link { parent, choice });
        self.stats.states += 1;
        if w.first_violation_step().is_some() {
            let invariant = w.violations().first().map_or(Invariant::Overlap, |v| v.invariant);
            // A tail's violation found earlier may be as short as this one.
            let depth = self.child_depth();
            match self.tail_violation {
                Some(v) if v.0 <= depth => self.end_of_layers(),
                _ => {
                    self.tail_violation = None;
                    self.status = SearchStatus::Violated { state: id, invariant };
                }
            }
            return;
        }
        if self.stats.states >= self.limits.max_states
            || self.next.len() >= self.limits.max_frontier
            || self.tree.len() >= ROOT as usize
        {
            self.status = SearchStatus::NotExhausted;
            return;
        }
        if self.reductions.tails && faults >= self.budget {
            let depth = self.child_depth();
            self.run_tail(w, id, depth);
            return;
        }
        if self.reductions.fingerprints && self.independent.is_some() {
            let symmetric = self.reductions.symmetry && self.symmetric_model;
            self.asleep
                .stored(k, sleep, || if symmetric { w.fingerprint() } else { fp });
        }
        self.next.push_back(Entry {
            world: w,
            fp,
            id,
            faults,
            sleep,
            only: u64::MAX,
        });
    }

    /// A state expanded earlier with options asleep that the path reaching
    /// it now has awake (Godefroid's fix for sleep sets with stored
    /// states): queue it again for those (`missed`) alone, its sleep set
    /// now `sleep`, as a node of the tree of its own (the counterexample
    /// replays along the path that took them) but not a new state.
    fn expand_again(&mut self, w: World, fp: u64, parent: u32, choice: u32, faults: u32, (missed, sleep): (u64, u64)) {
        let mut w = w;
        w.forget_trace();
        let id = self.tree.len() as u32;
        self.tree.push(Link { parent, choice });
        self.next.push_back(Entry {
            world: w,
            fp,
            id,
            faults,
            sleep,
            only: missed,
        });
    }

    /// The depth of the states being offered: the roots before the first
    /// layer is taken, the layer's children after.
    fn child_depth(&self) -> u64 {
        if self.expanding {
            self.stats.depth + 1
        } else {
            0
        }
    }

    /// How many transitions the counterexample takes (the violating
    /// state's depth in the search tree), once the search found one.
    pub fn counterexample_len(&self) -> Option<u64> {
        match self.status {
            SearchStatus::Violated { state, .. } => Some(self.scenario_of(state).1),
            _ => None,
        }
    }

    /// The schedule that leads to state `id`, as a scenario with its
    /// faults at the steps they were injected, and how many transitions it
    /// took.
    pub fn scenario_of(&self, id: u32) -> (Scenario, u64) {
        let mut path = Vec::new();
        let mut at = id;
        while let Some(l) = self.tree.get(at as usize) {
            if l.parent == ROOT {
                path.push(l.choice);
                break;
            }
            path.push(l.choice);
            at = l.parent;
        }
        path.reverse();
        let mut sc = self.base.clone();
        let Some((&root, moves)) = path.split_first() else {
            return (sc, 0);
        };
        sc.seed = self.seeds.get(root as usize).copied().unwrap_or(self.spec.seed);
        let mut faults = Vec::new();
        if let Ok(mut w) = World::from_scenario(&sc) {
            for &m in moves {
                if m == 0 {
                    w.step_item();
                } else if let Some(f) = self.options.get(m as usize - 1) {
                    faults.push(ScheduledFault {
                        at: At::Step(w.trace().len() as u64),
                        fault: f.clone(),
                    });
                    let _ = w.inject(f.clone());
                }
            }
        }
        sc.faults = faults;
        (sc, moves.len() as u64)
    }

    /// The search as the explorer's report: the counterexample replayed as
    /// an ordinary scenario (so the page and the CLI show it as they show
    /// any other), or held, with the verdict line as its plan.
    pub fn report(&self) -> Report {
        let outcome = match self.status {
            SearchStatus::Violated { state, invariant } => {
                let (scenario, _) = self.scenario_of(state);
                let mut trace = crate::trace::Trace::default();
                let mut steps = 0;
                let mut broke = invariant;
                if let Ok(mut w) = World::from_scenario(&scenario) {
                    w.run();
                    steps = w.first_violation_step().map_or(0, |s| s + 1);
                    broke = w.violations().first().map_or(invariant, |v| v.invariant);
                    trace = w.to_trace();
                    trace.events.truncate(steps as usize);
                }
                Outcome::Violated {
                    invariant: broke,
                    seed: scenario.seed,
                    steps,
                    index: u64::from(state),
                    scenario: Box::new(scenario),
                    trace,
                }
            }
            _ => Outcome::Held,
        };
        Report {
            summary: self.spec.summary(),
            plan: format!("breadth-first, {}", self.bounds()),
            explored: self.stats.states,
            outcome,
            bounded: Some(self.verdict()),
            plan_zh: Some(format!("广度优先，{}", self.bounds_zh())),
            bounded_zh: Some(self.verdict_zh()),
        }
    }
}
