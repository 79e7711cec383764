//! A world's fingerprint: 64 bits that are equal for two worlds whose
//! futures are equal.
//!
//! The explorer's breadth-first search (`explore::bfs`) reaches the
//! same world along many schedules (a client crashed before or after a
//! delivery that did not concern it) and must expand it once. Two worlds
//! behave alike from now on when everything that decides what happens next
//! is alike: each node's keyspace with its deadlines, role, clock and
//! connections; each client's program state, clock, generator, timers and
//! requests in flight; the queue (what is in flight and when it arrives,
//! in order); the resource; the invariant monitor; the lock shadows; the
//! replication links. The walk hashes exactly that, in a fixed order, from
//! the `Debug` encoding of core's types (no `HashMap` anywhere in core, so
//! the encoding is canonical). Left out, because they only record the past
//! and never change the future: the trace itself (its length is kept: the
//! event limit counts it), the queue's insertion
//! counter (only the order it gives matters, and the walk keeps the order),
//! and the trace-only texts of blocked commands. Equal fingerprints of
//! different worlds are possible (64 bits), as in every model checker that
//! stores fingerprints instead of states (TLC, Stateright): the chance is
//! about n²/2⁶⁵ for n states, under 10⁻⁷ for a million.

use std::fmt::Write;

use super::World;

/// FNV-1a over what is written to it (64-bit, stable on every target).
struct Fnv(u64);

impl Write for Fnv {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for b in s.bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Ok(())
    }
}

/// A sink that also keeps the text, one line per part of the world (for
/// [`World::fingerprint_text`]).
struct Text(String);

impl Write for Text {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.push_str(s);
        Ok(())
    }
}

impl World {
    /// The fingerprint of everything that decides this world's future (see
    /// the module comment for what is left out and why).
    pub fn fingerprint(&self) -> u64 {
        let mut h = Fnv(0xcbf2_9ce4_8422_2325);
        self.fingerprint_into(&mut h, true);
        h.0
    }

    /// What [`World::fingerprint`] hashes, as text, one part per line
    /// (nodes written out, not as their cached hashes): to see what tells
    /// two near-duplicate states apart when a search finds too many.
    pub fn fingerprint_text(&self) -> String {
        let mut t = Text(String::new());
        self.fingerprint_into(&mut t, false);
        t.0
    }

    fn fingerprint_into(&self, h: &mut impl Write, cached: bool) {
        // Writing to `Fnv` or `Text` cannot fail.
        let _ = writeln!(
            h,
            "{}|{}|{}|{}|{}|{}|{}|{}|",
            self.now,
            self.steps(),
            self.master,
            self.halted,
            self.next_req,
            self.next_wait,
            self.deadlock_dirty,
            self.seed
        );
        for ((t, _), item) in &self.queue {
            let _ = writeln!(h, "{t}:{item:?};");
        }
        for n in &self.nodes {
            // A node's own hash is cached until it changes (most steps
            // change one node of several); the slot's small fields are
            // hashed each time.
            if cached {
                let node = *n.node.fp.get_or_init(|| {
                    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
                    let _ = write!(h, "{:?}", *n.node.node);
                    h.0
                });
                let _ = write!(h, "{node}");
            } else {
                let _ = write!(h, "{:?}", *n.node.node);
            }
            let _ = writeln!(
                h,
                "|{:?}|{}|{}|{}|{:?}|{}|{}|{:?}|{:?};",
                n.clock, n.down, n.inc, n.up_gen, n.master_of, n.offset, n.applied, n.tick_at, n.internal
            );
        }
        for c in &self.clients {
            let _ = writeln!(h, "{c:?};");
        }
        let _ = writeln!(
            h,
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
            self.resource,
            self.net,
            self.step_faults,
            self.monitor,
            self.locks,
            self.waiters,
            self.repl,
            self.ongoing,
            self.services,
            self.service_tick_at,
            self.write_locks
        );
    }
}
